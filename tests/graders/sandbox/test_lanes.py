"""Scheduling under slow candidates: CPU-time limits, the long lane, reference-derived limits."""

from __future__ import annotations

import os
import subprocess
import threading
import time
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from arbiter.graders.sandbox import PoolConfig, SandboxPool
from arbiter.graders.sandbox.errors import SandboxError
from arbiter.graders.sandbox.lanes import IdleGroup, Lanes, Timers
from arbiter.graders.types import FailureKind, TaskSpec
from arbiter.graders.unit_tests import UnitTestsConfig, UnitTestsGrader
from tests.graders.sandbox.conftest import function_task, grade
from tests.strictness import unavailable

#: CPU shares between runs: another test's load would be measured too.
pytestmark = pytest.mark.exclusive

LOOPER = "def f():\n    while True:\n        pass\n"
RETURNS_TRUE = function_task("assert f() is True\n")
SLEEPS = "def f():\n    import time\n    time.sleep(2.5)\n    return True\n"
# About a second of CPU in pure Python on these machines.
BUSY = "def f():\n    n = 0\n    for i in range(12_000_000):\n        n += i\n    return n > 0\n"


@pytest.fixture
def small_pool() -> Iterator[SandboxPool]:
    # One fast place, three long ones: four runs in flight on however many cores.
    pool = SandboxPool(PoolConfig(slots=1, long_slots=3, pytest=False))
    pool.start()
    yield pool
    pool.close()


def test_runs_beyond_the_cores_are_charged_cpu_time_not_waiting_time() -> None:
    # Six fast places, whatever the cores: six runs of ~1 CPU-second at once,
    # under a 2 s CPU limit. Each waits for a core much of the time (a 2 s wall
    # limit would fail them) and is not charged for waiting. No long lane, so
    # the runs keep their normal priority against whatever else the host runs.
    pool = SandboxPool(PoolConfig(slots=6, long_slots=0, pytest=False))
    grader = UnitTestsGrader(pool)
    config = {"timeout_s": 2.0, "wall_factor": 20.0, "long_after_s": 600.0}
    try:
        with ThreadPoolExecutor(6) as threads:
            results = list(
                threads.map(lambda _: grade(grader, BUSY, RETURNS_TRUE, **config), range(6))
            )
    finally:
        pool.close()
    assert [r.score for r in results] == [1.0] * 6, [r.failure for r in results]
    cpu = [r.details["sandbox"]["cpu_s"] for r in results]
    wall = [r.details["sandbox"]["wall_s"] for r in results]
    # Charged for CPU, not for waiting: together they took longer than their CPU.
    assert sum(wall) > sum(cpu)


def test_a_looper_ends_at_its_cpu_limit_as_a_timeout(small_pool: SandboxPool) -> None:
    # Kept in the fast lane (normal priority): on a busy host a long-lane run may
    # not get its second of CPU before the backstop, and this test is about the CPU limit.
    result = grade(
        UnitTestsGrader(small_pool),
        LOOPER,
        RETURNS_TRUE,
        timeout_s=1.0,
        wall_factor=20,
        long_after_s=600,
    )
    assert result.failure is not None and result.failure.kind == FailureKind.TIMEOUT
    sandbox = result.details["sandbox"]
    # SIGXCPU (24), well before the 20 s backstop: the CPU limit ended it.
    assert sandbox["signal"] == 24 and sandbox["ended_by"] != "deadline"
    assert [t["outcome"] for t in result.details["tests"]] == ["timeout"]


def test_long_runners_do_not_hold_up_short_ones(small_pool: SandboxPool) -> None:
    grader = UnitTestsGrader(small_pool)
    # Three loopers fill the one fast place first, then move to the long lane one
    # by one; the short run behind them gets the fast place while they still run.
    slow = {"timeout_s": 4.0, "wall_factor": 2.0, "long_after_s": 0.3}
    with ThreadPoolExecutor(4) as threads:
        loopers = [threads.submit(grade, grader, LOOPER, RETURNS_TRUE, **slow) for _ in range(3)]
        short = threads.submit(
            grade, grader, "def f():\n    return True\n", RETURNS_TRUE, timeout_s=4.0
        )
        assert short.result().score == 1.0
        # Each looper lives for at least its 4 s of CPU or 8 s of wall clock;
        # the short run needed only a fast place.
        assert not any(f.done() for f in loopers)
        # Once all three are long, their sessions' scheduling groups run at the
        # lowest priority, but for those the long lane favours (as root: the one
        # that has had the least CPU, see test_least_attained_*).
        ranking = small_pool.least_attained
        favoured = 0 if ranking is None else ranking.favoured
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            if small_pool.lanes()[1] == 3 and _run_nices(small_pool).count(19) >= 3 - favoured:
                break
            time.sleep(0.05)
        assert small_pool.lanes()[1] == 3
        assert _run_nices(small_pool).count(19) >= 3 - favoured, _run_nices(small_pool)
        for looper in loopers:
            result = looper.result()
            assert result.failure is not None and result.failure.kind == FailureKind.TIMEOUT
            assert result.details["sandbox"]["long"]


def test_a_freed_fast_place_goes_to_the_run_that_waited_longest() -> None:
    lanes = Lanes(fast=1, long=0)
    held = lanes.enter(timeout_s=5)
    got: list[int] = []
    waiter = threading.Thread(target=lambda: got.append(lanes.enter(5)))
    waiter.start()
    deadline = time.monotonic() + 5
    while not lanes._waiting and time.monotonic() < deadline:
        time.sleep(0.01)
    assert lanes._waiting
    # The thread that gives the place back asks again at once, holding the lock
    # first: it still queues behind the run that was waiting.
    lanes.leave(held)
    with pytest.raises(SandboxError):
        lanes.enter(timeout_s=0.3)
    waiter.join(timeout=5)
    assert len(got) == 1 and lanes.counts() == (1, 0)


class _CountingLock:
    """A lock that counts its acquisitions: how often a waiting run woke up."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.acquired = 0

    def acquire(self, blocking: bool = True, timeout: float = -1) -> bool:
        got = self._lock.acquire(blocking, timeout)
        self.acquired += got
        return got

    def release(self) -> None:
        self._lock.release()

    def _is_owned(self) -> bool:
        return self._lock.locked()

    def __enter__(self) -> bool:
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()


def test_a_place_given_back_wakes_the_next_run_alone() -> None:
    lanes = Lanes(fast=1, long=0)
    lock = _CountingLock()
    lanes._lock = lock  # type: ignore[assignment]
    held = lanes.enter(timeout_s=5)
    waiting, order = 24, []

    def run(i: int) -> None:
        token = lanes.enter(timeout_s=60)
        order.append(i)
        lanes.leave(token)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(waiting)]
    for i, thread in enumerate(threads):
        thread.start()
        deadline = time.monotonic() + 5
        while len(lanes._waiting) <= i and time.monotonic() < deadline:
            time.sleep(0.005)
    assert len(lanes._waiting) == waiting
    before = lock.acquired
    lanes.leave(held)
    for thread in threads:
        thread.join(timeout=30)
    assert order == list(range(waiting))
    # Each run takes the lock two or three times: woken as the head of the line (once
    # more if the place was still held), and to leave. Waking every waiting run on
    # each change took it 157 to 183 times here.
    assert lock.acquired - before <= 3 * waiting + 1, lock.acquired - before


def test_a_run_that_turned_long_frees_its_fast_place_once_a_long_place_is_free() -> None:
    lanes = Lanes(fast=1, long=1)
    first = lanes.enter(timeout_s=5)
    lanes.to_long(first)
    assert lanes.counts() == (0, 1)
    second = lanes.enter(timeout_s=5)
    # The long lane is full: the second keeps its fast place until the first leaves.
    lanes.to_long(second)
    assert lanes.counts() == (1, 1)
    with pytest.raises(SandboxError):
        lanes.enter(timeout_s=0.2)
    lanes.leave(first)
    assert lanes.counts() == (0, 1)
    third = lanes.enter(timeout_s=5)
    assert lanes.counts() == (1, 1)
    lanes.leave(second)
    lanes.leave(third)
    assert lanes.counts() == (0, 0)


def test_builds_have_places_of_their_own_and_never_take_a_fast_one() -> None:
    lanes = Lanes(fast=1, long=0, builds=1)
    build = lanes.enter(timeout_s=5, build=True)
    # A compile in progress leaves the fast place to a run...
    run = lanes.enter(timeout_s=1)
    assert lanes.counts() == (1, 0) and lanes.building() == (1, 0)
    # ...and a second compile waits for the compile place, not for a run's.
    got: list[int] = []
    waiter = threading.Thread(target=lambda: got.append(lanes.enter(None, build=True)))
    waiter.start()
    deadline = time.monotonic() + 5
    while lanes.building()[1] == 0 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert lanes.building() == (1, 1)
    lanes.leave(run)
    time.sleep(0.1)
    assert not got  # a freed fast place is no compile place
    lanes.leave(build)
    waiter.join(timeout=5)
    assert len(got) == 1 and lanes.building() == (1, 0)
    lanes.leave(got[0])
    assert lanes.counts() == (0, 0) and lanes.building() == (0, 0)


# Exactly a second of CPU, however fast the machine (the run's own CPU clock).
NEEDS_A_CPU_SECOND = (
    "import time\n"
    "def f():\n"
    "    started = time.process_time()\n"
    "    while time.process_time() - started < 1.0:\n"
    "        pass\n"
    "    return True\n"
)


def _attained_s(pool: SandboxPool) -> list[float]:
    """Return the CPU seconds each run now in progress in ``pool`` has had."""
    from arbiter.graders.sandbox.lanes import _cpu_ticks, _run_pids

    ticks = os.sysconf("SC_CLK_TCK")
    return [
        sum(_cpu_ticks(pid) for pid in pids) / ticks
        for slot in pool._slots
        if slot.proc is not None and (pids := _run_pids(slot.proc.pid))
    ]


def test_least_attained_a_long_run_that_has_had_less_cpu_goes_first() -> None:
    if os.geteuid() != 0:
        unavailable("only root can raise a long run's priority back (CAP_SYS_NICE)")
    # One fast place: everything else in flight is in the long lane.
    pool = SandboxPool(PoolConfig(slots=1, long_slots=7, pytest=False))
    grader = UnitTestsGrader(pool)
    looping = {"timeout_s": 8.0, "wall_factor": 1.5, "long_after_s": 0.2}
    try:
        with ThreadPoolExecutor(7) as threads:
            loopers = [
                threads.submit(grade, grader, LOOPER, RETURNS_TRUE, **looping) for _ in range(6)
            ]
            # Each looper has had more CPU than the candidate below needs in all.
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                attained = _attained_s(pool)
                if len(attained) == 6 and min(attained) > 1.2:
                    break
                time.sleep(0.1)
            assert len(attained) == 6 and min(attained) > 1.2, attained
            # A correct candidate that needs a CPU second, with 2.5 s of wall clock.
            # With fair shares, seven long runs on this machine's cores would give
            # it 1/7 of a core each per core: on two cores, 3.5 s for its second.
            result = grade(
                grader,
                NEEDS_A_CPU_SECOND,
                RETURNS_TRUE,
                timeout_s=2.0,
                wall_factor=1.25,
                long_after_s=0.2,
            )
            assert not any(f.done() for f in loopers)
    finally:
        pool.close()  # ends the loopers
    assert result.score == 1.0, result.failure
    sandbox = result.details["sandbox"]
    assert sandbox["long"]
    # It had most of a core from the moment it turned long.
    assert sandbox["cpu_s"] > 0.6 * sandbox["wall_s"], sandbox
    assert pool.least_attained is not None and pool.least_attained.rounds > 0


def _idle_group(pool: SandboxPool) -> IdleGroup:
    """The pool's idle group; unavailable where this host cannot make one."""
    from arbiter.graders.sandbox.lanes import _cpu_cgroup_dirs

    if os.geteuid() != 0:
        unavailable("only root can make a cpu cgroup for the long lane")
    if not _cpu_cgroup_dirs():
        unavailable("this host has no cpu cgroup hierarchy")
    group = pool.idle_group
    assert group is not None, "root with a cpu cgroup hierarchy, and no idle group"
    return group


def test_long_runs_go_into_an_idle_cpu_cgroup_where_the_host_has_one(
    small_pool: SandboxPool,
) -> None:
    group = _idle_group(small_pool)
    assert Path(group.path, "cpu.idle").read_text().strip() == "1"
    grader = UnitTestsGrader(small_pool)
    slow = {"timeout_s": 3.0, "wall_factor": 1.5, "long_after_s": 0.2}
    # Two loopers: the one the long lane favours (one per fast place) leaves the
    # idle group, where the host's busy processes would starve it; the other stays.
    with ThreadPoolExecutor(2) as threads:
        loopers = [threads.submit(grade, grader, LOOPER, RETURNS_TRUE, **slow) for _ in range(2)]
        deadline = time.monotonic() + 30
        seen: set[tuple[int, int]] = set()
        while (1, 1) not in seen:
            assert time.monotonic() < deadline and not any(f.done() for f in loopers), seen
            members = Path(group.path, "cgroup.procs").read_text().split()
            runs = _run_pids(small_pool)
            inside = sum(str(pid) in members for pid in runs)
            if len(runs) == 2:
                seen.add((inside, len(runs) - inside))
            time.sleep(0.05)
        for looper in loopers:
            assert looper.result().details["sandbox"]["long"]
    assert (1, 1) in seen, seen
    small_pool.close()
    assert not Path(group.path).exists(), "the pool left its cgroup behind"


def test_under_host_load_an_empty_fast_lane_lets_the_long_runs_out_of_the_idle_group(
    small_pool: SandboxPool,
) -> None:
    from arbiter.load import cpu_load

    group = _idle_group(small_pool)
    grader = UnitTestsGrader(small_pool)
    slow = {"timeout_s": 6.0, "wall_factor": 1.5, "long_after_s": 0.2}

    def placed(runs: int) -> tuple[int, int] | None:
        """(inside the idle group, outside), once ``runs`` runs are in progress."""
        members = Path(group.path, "cgroup.procs").read_text().split()
        pids = _run_pids(small_pool)
        inside = sum(str(pid) in members for pid in pids)
        return (inside, len(pids) - inside) if len(pids) == runs else None

    def wait_for(runs: int, wanted: tuple[int, int], pending: list[Future[Any]]) -> None:
        deadline = time.monotonic() + 60
        while placed(runs) != wanted:
            assert time.monotonic() < deadline, placed(runs)
            assert not any(f.done() for f in pending), [f.result() for f in pending if f.done()]
            time.sleep(0.02)

    # The host's busy processes take most of the CPU: in the idle group a long run
    # gets none of it. With the fast lane empty there is no run of ours to hold up.
    with cpu_load(2) as burners, ThreadPoolExecutor(3) as threads:
        assert burners > 0
        loopers = [threads.submit(grade, grader, LOOPER, RETURNS_TRUE, **slow) for _ in range(2)]
        wait_for(2, (0, 2), loopers)
        # A run in the fast lane (it sleeps; it would turn long only after 30 s):
        # the looper not favoured (one per fast place) goes back into the group.
        sleeper = threads.submit(
            grade, grader, SLEEPS, RETURNS_TRUE, timeout_s=5.0, long_after_s=30.0
        )
        wait_for(3, (1, 2), [*loopers, sleeper])
        assert sleeper.result().score == 1.0, sleeper.result().failure
        for looper in loopers:
            assert looper.result().details["sandbox"]["long"]


def _run_pids(pool: SandboxPool) -> list[int]:
    """Return the process of every run now in progress in ``pool``."""
    from arbiter.graders.sandbox.lanes import _children

    return [
        run
        for slot in pool._slots
        if slot.proc is not None
        for inner in _children(slot.proc.pid)
        for run in _children(inner)
    ]


def _run_nices(pool: SandboxPool) -> list[int]:
    """Return the autogroup nice value of every run now in progress in ``pool``."""
    from arbiter.graders.sandbox.lanes import _children

    nices = []
    for slot in pool._slots:
        if slot.proc is None:
            continue
        for inner in _children(slot.proc.pid):
            for run in _children(inner):
                try:
                    text = Path(f"/proc/{run}/autogroup").read_text()  # "/autogroup-N nice K"
                except OSError:
                    continue
                nices.append(int(text.split()[-1]))
    return nices


def _with_reference(reference: str) -> TaskSpec:
    return TaskSpec(
        kind="python_function",
        tests="assert f() is True\n",
        entry_point="f",
        reference=reference,
    )


def test_a_reference_solution_sets_the_tasks_limit(grader: UnitTestsGrader) -> None:
    task = _with_reference("def f():\n    return True\n")
    config = UnitTestsConfig(timeout_s=20.0, reference_factor=10.0, reference_floor_s=0.5)
    looped = grader.grade_sync(
        _sample(LOOPER, task), config.model_copy(update={"wall_factor": 1.0})
    )
    # The reference runs in milliseconds: the floor, not the configured 20 s, applies.
    assert looped.score == 0.0 and looped.details["failure_kind"] == FailureKind.TIMEOUT
    assert looped.details["timeout_s"] == 0.5 and looped.details["timeout_from"] == "reference"
    passed = grader.grade_sync(_sample("def f():\n    return True\n", task), config)
    assert passed.score == 1.0 and passed.details["timeout_from"] == "reference"


def test_a_reference_that_fails_its_tests_leaves_the_configured_limit(
    grader: UnitTestsGrader,
) -> None:
    task = _with_reference("def f():\n    return False\n")
    config = UnitTestsConfig(timeout_s=3.0, reference_factor=10.0)
    result = grader.grade_sync(_sample("def f():\n    return True\n", task), config)
    assert result.score == 1.0
    assert result.details["timeout_s"] == 3.0 and result.details["timeout_from"] == "config"


def _sample(code: str, task: TaskSpec):  # type: ignore[no-untyped-def]
    from arbiter.graders.types import Sample

    return Sample(id="s", response=f"```python\n{code}\n```", task=task)


def test_the_pools_timer_thread_runs_due_callbacks_and_skips_cancelled_ones() -> None:
    timers = Timers()
    ran: list[str] = []
    done = threading.Event()
    timers.call_later(0.05, lambda: ran.append("first"))
    dropped = timers.call_later(0.01, lambda: ran.append("cancelled"))
    timers.cancel(dropped)
    timers.call_later(0.1, done.set)
    assert done.wait(10)
    assert ran == ["first"]
    thread = timers._thread
    timers.stop()
    assert thread is not None and not thread.is_alive()
    # After a stop, a new callback starts a new thread.
    again = threading.Event()
    timers.call_later(0.0, again.set)
    assert again.wait(10)
    timers.stop()


def test_idle_cgroups_left_by_dead_processes_are_swept_by_the_next_pool() -> None:
    from arbiter.graders.sandbox.lanes import _GROUP_PREFIX, _cpu_cgroup_dirs

    if os.geteuid() != 0:
        unavailable("only root can make a cpu cgroup for the long lane")
    dirs = _cpu_cgroup_dirs()
    if not dirs:
        unavailable("this host has no cpu cgroup hierarchy")
    gone = subprocess.Popen(["true"])
    gone.wait()  # its pid now belongs to no process
    orphan = Path(dirs[0], f"{_GROUP_PREFIX}{gone.pid}-left-by-a-kill-9")
    orphan.mkdir()
    pool = SandboxPool(PoolConfig(slots=1, long_slots=1, pytest=False))
    try:
        pool.start()
        assert not orphan.exists(), "the dead process's empty group is still there"
        assert pool.idle_group is not None
        assert Path(pool.idle_group.path).name.startswith(f"{_GROUP_PREFIX}{os.getpid()}-")
    finally:
        pool.close()
        if orphan.exists():
            orphan.rmdir()


def test_the_host_stays_contended_until_its_other_work_falls_well_below_half(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The long lane's runs leave the idle group while the host is contended, so
    # ours rise: at one threshold the state flapped every tick around half.
    from arbiter.graders.sandbox import lanes

    counters = {"busy": 0, "ours": 0}
    monkeypatch.setattr(lanes, "busy_ticks", lambda: counters["busy"])
    monkeypatch.setattr(lanes, "_service_ticks", lambda: counters["ours"])
    share = lanes.HostShare()

    def tick(others: int, ours: int) -> bool:
        counters["busy"] += others + ours
        counters["ours"] += ours
        share._at -= lanes.RANK_EVERY_S  # a sample is due
        return share.contended()

    assert not tick(others=40, ours=60)
    assert tick(others=60, ours=40)  # the host's work took most: contended
    assert tick(others=40, ours=60)  # ours rose once let out: still contended
    assert tick(others=30, ours=70)
    assert not tick(others=20, ours=80)  # well below half: released
    assert not tick(others=40, ours=60)


def _autogroup_nice(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/autogroup") as f:
            return int(f.read().split()[-1])
    except (OSError, ValueError, IndexError):
        return None  # the kernel does not group sessions


def test_a_demoted_process_in_our_session_leaves_our_autogroup_alone():
    """Nice 19 on a process that has not left our session never reaches our session's group.

    A run is forked in the template's session (this service's) and calls setsid
    only then: written to its autogroup in that window, nice 19 would weigh the
    whole service down against the host's other sessions. A session leader of
    its own is still demoted with its group.
    """
    from arbiter.graders.sandbox.lanes import _renice

    ours_before = _autogroup_nice(os.getpid())
    same = subprocess.Popen(["sleep", "30"])
    leader = subprocess.Popen(["sleep", "30"], start_new_session=True)
    try:
        _renice(same.pid, 19)
        _renice(leader.pid, 19)
        assert os.getpriority(os.PRIO_PROCESS, same.pid) == 19
        assert os.getpriority(os.PRIO_PROCESS, leader.pid) == 19
        assert _autogroup_nice(os.getpid()) == ours_before
        if ours_before is not None:
            assert _autogroup_nice(leader.pid) == 19
    finally:
        for proc in (same, leader):
            proc.kill()
            proc.wait()
