"""A run's deadline measures its own work: the wait for a CPU a busy host imposes is credited.

Each test makes the host busy with the service's own load generator
(:func:`arbiter.load.cpu_load`: ordinary processes at normal priority, as a
trainer's data loaders would be), then grades a run whose wall time under that
load is well past its backstop although its own work is well inside it.
"""

from __future__ import annotations

import asyncio
import statistics
import time
from collections.abc import Iterator

import pytest

from arbiter.graders.runner import GraderJob, run_job
from arbiter.graders.sandbox import PoolConfig, SandboxPool
from arbiter.graders.sandbox import lanes as lanes_module
from arbiter.graders.sandbox import pool as pool_module
from arbiter.graders.sandbox.errors import SandboxError
from arbiter.graders.sandbox.lanes import HostShare
from arbiter.graders.sandbox.pool import Limits
from arbiter.graders.types import FailureKind, Sample, TaskSpec
from arbiter.graders.unit_tests import UnitTestsConfig, UnitTestsGrader
from arbiter.load import cpu_load
from tests.graders.sandbox.conftest import function_task, grade

#: CPU shares between runs: another test's load would be measured too.
pytestmark = pytest.mark.exclusive

RETURNS_TRUE = function_task("assert f() is True\n")
# Half a second of CPU, however fast the machine (the run's own CPU clock).
HALF_A_CPU_SECOND = (
    "import time\n"
    "def f():\n"
    "    started = time.process_time()\n"
    "    while time.process_time() - started < 0.5:\n"
    "        pass\n"
    "    return True\n"
)
LOOPER = "def f():\n    while True:\n        pass\n"
#: Busy processes per core: a run at normal priority gets about a fifth of a core.
LOAD = 4


@pytest.fixture
def one_slot() -> Iterator[SandboxPool]:
    pool = SandboxPool(PoolConfig(slots=1, long_slots=2, pytest=True))
    pool.start()
    yield pool
    pool.close()


def test_a_correct_run_kept_off_the_cpu_passes_past_its_backstop(one_slot: SandboxPool) -> None:
    grader = UnitTestsGrader(one_slot)
    # 1 s of CPU allowed, a 1.25 s backstop: at a fifth of a core its half
    # second of work takes some 2.5 s of wall clock.
    with cpu_load(LOAD):
        result = grade(grader, HALF_A_CPU_SECOND, RETURNS_TRUE, timeout_s=1.0)
    assert result.score == 1.0, result.failure
    sandbox = result.details["sandbox"]
    assert sandbox["wall_s"] > 1.25, sandbox
    assert sandbox["credit_s"] > 0.0, sandbox
    # Its own work stayed inside the CPU limit.
    assert sandbox["cpu_s"] < 1.0, sandbox


def test_a_looper_under_load_still_ends_within_its_cpu_limit_plus_the_credited_wait(
    one_slot: SandboxPool,
) -> None:
    grader = UnitTestsGrader(one_slot)
    with cpu_load(LOAD):
        result = grade(grader, LOOPER, RETURNS_TRUE, timeout_s=1.0)
    assert result.failure is not None and result.failure.kind == FailureKind.TIMEOUT
    sandbox = result.details["sandbox"]
    # Ended by its CPU limit or by the backstop moved by its credit, nothing later.
    assert sandbox["cpu_s"] <= 1.0 + 0.1, sandbox
    assert sandbox["wall_s"] <= 1.25 + sandbox["credit_s"] + 0.5, sandbox


def test_a_pytest_suite_waits_for_a_run_kept_off_the_cpu(one_slot: SandboxPool) -> None:
    # The suite runs in the trusted pytest host, which reads the run's deadline as it moves.
    grader = UnitTestsGrader(one_slot)
    task = TaskSpec(
        kind="pytest",
        entry_point="solution",
        tests="from solution import f\n\ndef test_f():\n    assert f() is True\n",
    )
    with cpu_load(LOAD):
        result = grade(grader, HALF_A_CPU_SECOND, task, timeout_s=1.0)
    assert result.score == 1.0, repr(result.details)
    assert result.details["sandbox"]["credit_s"] > 0.0


def test_a_short_run_the_host_slows_keeps_its_fast_place(one_slot: SandboxPool) -> None:
    # About 40 ms of CPU under twice the usual load (a ninth of a core or so): some
    # 0.4 s of wall time, well past long_after_s, and about 50 ms of its own time
    # (the wall clock less its wait), well inside it. The margin is wide on purpose:
    # what the host does besides keeping the run off a CPU (page faults, I/O, a
    # hypervisor's steal) is not credited and may add a tenth of a second.
    long_after_s = 0.25
    short = (
        "import time\n"
        "def f():\n"
        "    started = time.process_time()\n"
        "    while time.process_time() - started < 0.04:\n"
        "        pass\n"
        "    return True\n"
    )
    grader = UnitTestsGrader(one_slot)
    with cpu_load(2 * LOAD):
        results = [
            grade(grader, short, RETURNS_TRUE, timeout_s=1.0, long_after_s=long_after_s)
            for _ in range(5)
        ]
    assert all(r.score == 1.0 for r in results), [r.failure for r in results]
    sandboxes = [r.details["sandbox"] for r in results[1:]]
    # The load did slow the runs past long_after_s: otherwise this shows nothing.
    assert statistics.median(s["wall_s"] for s in sandboxes) > long_after_s, sandboxes
    # The first may have waited for the pool's own start; the rest stay fast.
    assert not any(s["long"] for s in sandboxes), sandboxes


def test_the_grading_jobs_deadline_moves_with_the_credit(one_slot: SandboxPool) -> None:
    # The job's own timeout (ours) is shorter than the run's wall time under load:
    # without moving, it would end in an infra_timeout the candidate did not cause.
    grader = UnitTestsGrader(one_slot)
    sample = Sample(id="slow", response=f"```python\n{HALF_A_CPU_SECOND}\n```", task=RETURNS_TRUE)
    config = UnitTestsConfig(timeout_s=1.0)
    job = GraderJob(sample, "tests", grader, config, timeout_s=1.5)
    with cpu_load(LOAD):
        result = asyncio.run(run_job(job))
    assert result.score == 1.0, result.failure
    assert result.latency_s is not None and result.latency_s > 1.5


def test_a_run_starved_past_its_credit_cap_is_our_failure(
    one_slot: SandboxPool, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The cap is 8 times the backstop; no host here starves a run that long in a
    # test's time, so the cap is lowered to a quarter of it instead.
    monkeypatch.setattr(pool_module, "MAX_CREDIT_FACTOR", 0.25)
    limits = Limits(timeout_s=1.0)
    with cpu_load(LOAD), pytest.raises(SandboxError, match="starved"):
        one_slot.run_script(
            "import time\n"
            "started = time.process_time()\n"
            "while time.process_time() - started < 0.5:\n"
            "    pass\n",
            b"",
            limits,
        )


def test_the_load_generators_processes_are_the_hosts_work_not_ours() -> None:
    # They are this process's children, as a trainer's data loaders are when it
    # grades in-process: only the processes the service marks are its own.
    share = HostShare()
    with cpu_load(2):
        time.sleep(0.3)
        assert share.contended()


def test_without_cap_sys_nice_a_run_that_turns_long_under_host_load_is_not_starved(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # No ranking: a demoted run could never be raised again, so it is not demoted
    # while the host's other work dominates (at nice 19 it would get ~1% of a core).
    monkeypatch.setattr(pool_module, "can_raise_priority", lambda: False)
    pool = SandboxPool(PoolConfig(slots=1, long_slots=2))
    pool.start()
    try:
        assert not pool.least_attained.rank and pool.idle_group is None
        with cpu_load(LOAD):
            result = grade(UnitTestsGrader(pool), HALF_A_CPU_SECOND, RETURNS_TRUE, timeout_s=1.0)
    finally:
        pool.close()
    assert result.score == 1.0, result.failure
    assert result.details["sandbox"]["long"], result.details["sandbox"]


#: A candidate that forks busy children (as many as its process limit lets it) and
#: keeps busy itself: each process waits for a CPU because of the others, so the
#: run's longest wait grows with the wall clock without any other work on the host.
FORKS_BUSY_CHILDREN = (
    "import os\n"
    "def f():\n"
    "    for _ in range(6):\n"
    "        try:\n"
    "            if os.fork() == 0:\n"
    "                break\n"
    "        except OSError:\n"
    "            break\n"
    "    while True:\n"
    "        pass\n"
)


def test_the_wait_a_run_causes_itself_is_not_credited(
    one_slot: SandboxPool, monkeypatch: pytest.MonkeyPatch
) -> None:
    grader = UnitTestsGrader(one_slot)
    with monkeypatch.context() as naive:  # the control: every wait credited, whoever caused it
        naive.setattr(lanes_module, "outside_share", lambda *_: 1.0)
        control = grade(grader, FORKS_BUSY_CHILDREN, RETURNS_TRUE, timeout_s=1.0)
    result = grade(grader, FORKS_BUSY_CHILDREN, RETURNS_TRUE, timeout_s=1.0)
    for graded in (control, result):
        assert graded.failure is not None and graded.failure.kind == FailureKind.TIMEOUT, graded
    naive_s, credit = control.details["sandbox"], result.details["sandbox"]
    # Credited with its own processes' wait, the run moved its deadline by most of
    # its wall clock: with more processes it would reach the cap (8 backstops), and
    # its timeout would become our failure (an abstention), holding its place meanwhile.
    assert naive_s["credit_s"] > 1.0, naive_s
    # Credited only with what the rest of the host took, it ends near its own backstop.
    assert credit["credit_s"] < naive_s["credit_s"] / 3, (credit, naive_s)
    assert credit["wall_s"] < naive_s["wall_s"], (credit, naive_s)
