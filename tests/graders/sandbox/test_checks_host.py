"""The checks workers' host: which idle worker a grading takes, and when it is handed its task."""

from __future__ import annotations

import os
import socket
import time

import pytest

from arbiter.graders.sandbox._frames import send_frame
from arbiter.graders.sandbox.checks_host import ChecksHost, TrustedLimits
from arbiter.graders.sandbox.clock import RunDeadline
from tests.strictness import unavailable


@pytest.fixture
def host():
    checks = ChecksHost(2)
    try:
        checks.start()
    except Exception as e:  # a host that cannot start a worker cannot show this
        unavailable(f"no checks worker starts here: {e}")
    yield checks
    checks.close()


def test_a_task_goes_to_the_idle_worker_that_planned_it(host: ChecksHost) -> None:
    first = host._take(5.0)
    second = host._take(5.0)
    first.remember("task-a")
    host._idle.put(first)
    host._idle.put(second)  # the last given back: taken first by any other task
    assert host._take(5.0, "task-a") is first
    assert host._take(5.0, "task-b") is second


def test_a_worker_forgets_plans_as_its_own_cache_does(host: ChecksHost) -> None:
    from arbiter.graders.sandbox.checks_server import MAX_PLANS

    worker = host._take(5.0)
    for i in range(MAX_PLANS + 3):
        worker.remember(f"task-{i}")
    assert len(worker.planned) == MAX_PLANS
    assert "task-0" not in worker.planned and f"task-{MAX_PLANS + 2}" in worker.planned
    host._idle.put(worker)


def _task(key: str) -> dict[str, object]:
    return {
        "op": "grade",
        "task": {"key": key, "tests": "assert f(1) == 1\n", "entry_point": "f"},
        "max_bytes": 1 << 20,
    }


def test_a_grading_handed_over_and_never_collected_retires_its_worker(host: ChecksHost) -> None:
    # The run's child never came (its slot failed after the worker had the task):
    # the worker is mid-grading, and must not take the next run's task.
    ours, theirs = socket.socketpair()
    deadline = RunDeadline(time.monotonic(), 5.0)
    with host.worker(5.0) as checks:
        taken = checks._worker
        checks.start(_task("abandoned"), ours, deadline, TrustedLimits())
    theirs.close()
    ours.close()
    deadline.close()
    assert taken not in host._all and not taken.alive


def test_a_grading_handed_over_before_the_child_answers_is_collected_whole(
    host: ChecksHost,
) -> None:
    # The worker has the task before the child has loaded; it waits for the load
    # report on the channel, then runs the tests against what the child answers.
    ours, theirs = socket.socketpair()
    deadline = RunDeadline(time.monotonic(), 5.0)
    with host.worker(5.0) as checks:
        checks.start(_task("early"), ours, deadline, TrustedLimits())
        send_frame(theirs, {"ready": False, "type": "NameError", "message": "no f"})
        report = checks.result()
        taken = checks._worker
    theirs.close()
    ours.close()
    deadline.close()
    assert report.load_error == ("load_error", "NameError: no f")
    assert report.units == 1
    assert taken in host._all and "early" in taken.planned


_LARGE_STARTER = """
import socket, sys, time
from arbiter.graders.sandbox._frames import send_frame
from arbiter.graders.sandbox.checks_host import ChecksHost, TrustedLimits
from arbiter.graders.sandbox.clock import RunDeadline

held = bytearray(1200 << 20)
for i in range(0, len(held), 4096):
    held[i] = 1
host = ChecksHost(1)
host.start()
ours, theirs = socket.socketpair()
deadline = RunDeadline(time.monotonic(), 30.0)
task = {"op": "grade", "max_bytes": 1 << 20,
        "task": {"key": "k", "tests": "assert f(1) == 1\\n", "entry_point": "f"}}
with host.worker(30.0) as checks:
    checks.start(task, ours, deadline, TrustedLimits())
    send_frame(theirs, {"ready": False, "type": "NameError", "message": "no f"})
    report = checks.result()
    taken = checks._worker
print(report.load_error is not None, taken in host._all)
host.close()
"""


def test_a_worker_started_by_a_large_service_is_not_taken_for_large() -> None:
    # A service holding a model is large; the workers it starts are not, and
    # must not be replaced after every grading as if they had grown.
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-c", _LARGE_STARTER], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["True", "True"]


def _grade_once(host: ChecksHost, key: str) -> object:
    ours, theirs = socket.socketpair()
    deadline = RunDeadline(time.monotonic(), 10.0)
    try:
        with host.worker(10.0) as checks:
            checks.start(_task(key), ours, deadline, TrustedLimits())
            send_frame(theirs, {"ready": False, "type": "NameError", "message": "no f"})
            report = checks.result()
            return report.load_error, checks._worker
    finally:
        theirs.close()
        ours.close()
        deadline.close()


def _parent(pid: int) -> int:
    with open(f"/proc/{pid}/stat") as f:
        return int(f.read().rsplit(")", 1)[1].split()[1])


def _environ(pid: int) -> dict[str, str]:
    with open(f"/proc/{pid}/environ", "rb") as f:
        pairs = [item.split(b"=", 1) for item in f.read().split(b"\0") if b"=" in item]
    return {k.decode(): v.decode() for k, v in pairs}


def test_workers_are_forks_of_the_template_each_at_home_in_its_own_scratch(
    host: ChecksHost,
) -> None:
    from arbiter.graders.sandbox.checks_host import _Forked

    assert host._template is not None
    workers = [host._take(5.0), host._take(5.0)]
    for worker in workers:
        assert isinstance(worker.proc, _Forked)
        assert _parent(worker.proc.pid) == host._template.proc.pid
        assert os.readlink(f"/proc/{worker.proc.pid}/cwd") == worker.scratch
        # Its stderr goes to a log of its own (its HOME and TMPDIR are set in os.environ,
        # which /proc/PID/environ, the environment it was forked with, does not show).
        assert os.path.exists(os.path.join(worker.scratch, "worker.log"))
        host._idle.put(worker)
    assert workers[0].scratch != workers[1].scratch
    assert _environ(host._template.proc.pid)["HOME"] == host._template.scratch
    load_error, _ = _grade_once(host, "forked")
    assert load_error == ("load_error", "NameError: no f")


def test_a_killed_worker_is_seen_dead_and_replaced_by_a_fresh_fork(host: ChecksHost) -> None:
    worker = host._take(5.0)
    worker.proc.kill()
    deadline = time.monotonic() + 10
    while worker.proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not worker.alive
    host._idle.put(worker)
    load_error, fresh = _grade_once(host, "after-a-kill")
    assert load_error == ("load_error", "NameError: no f")
    assert fresh is not worker and worker not in host._all


def test_a_dead_template_is_started_again_on_the_next_fork() -> None:
    host = ChecksHost(2)
    try:
        try:
            host.start(1)
        except Exception as e:
            unavailable(f"no checks worker starts here: {e}")
        assert host._template is not None
        first = host._template
        first.proc.kill()
        first.proc.wait()
        # Its workers die with it (their parent-death signal); a new one is forked anew.
        (worker,) = list(host._all)
        deadline = time.monotonic() + 10
        while worker.alive and time.monotonic() < deadline:
            time.sleep(0.01)
        assert not worker.alive
        load_error, fresh = _grade_once(host, "after-the-template")
        assert load_error == ("load_error", "NameError: no f")
        assert host._template is not None and host._template is not first
        assert _parent(fresh.proc.pid) == host._template.proc.pid
    finally:
        host.close()
    assert host._template is None


def test_where_no_pidfd_can_hold_a_fork_workers_are_interpreters_of_their_own() -> None:
    # A kernel before 5.3 has no pidfd_open (the template says "unable"); this
    # one has, so the flag the template's answer sets is set here instead.
    import subprocess

    host = ChecksHost(1)
    host.forks = False
    try:
        load_error, worker = _grade_once(host, "interpreter")
        assert load_error == ("load_error", "NameError: no f")
        assert isinstance(worker.proc, subprocess.Popen) and host._template is None
    finally:
        host.close()
