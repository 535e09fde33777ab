"""The checks workers' host: which idle worker a grading takes, and when it is handed its task."""

from __future__ import annotations

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
