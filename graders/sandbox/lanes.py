"""How a pool schedules its runs: a fast lane and a long lane, and moving a run between them.

A run enters the fast lane (one place per core); once it has run for its
``long_after_s`` it moves to the long lane, its processes drop to the lowest
CPU priority (and, where the host allows, into a ``cpu.idle`` cgroup), and its
fast place goes to the next run. :class:`Lanes` admits runs, :func:`demote`
lowers one, :class:`LeastAttained` gives the long lane's CPU first to the long
runs that have had the least, :class:`Timers` is the one thread that demotes
and ranks on time, and :class:`IdleGroup` is the cgroup. The zygote and the
confined runs never see any of this: it all happens on the trusted side.
"""

from __future__ import annotations

import collections
import contextlib
import heapq
import itertools
import logging
import math
import os
import threading
import time
from collections.abc import Callable

from graders.sandbox.errors import SandboxError

__all__ = ["IdleGroup", "Lanes", "LeastAttained", "Timers", "demote"]

logger = logging.getLogger(__name__)


def _children(pid: int) -> list[int]:
    """Return the children of ``pid`` (every thread's), read from /proc."""
    found: list[int] = []
    try:
        threads = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return found
    for tid in threads:
        try:
            with open(f"/proc/{pid}/task/{tid}/children") as f:
                found += [int(c) for c in f.read().split()]
        except (OSError, ValueError):
            continue
    return found


#: The nice value of a run in the long lane (and of its scheduling group).
_LONG_NICE = 19


class IdleGroup:
    """A CPU cgroup with ``cpu.idle`` set, under this process's own, for long-lane runs.

    Nice 19 only weighs a run down; a core it holds still makes a waking short
    run wait for the end of its slice, and short runs wake many times each.
    The kernel preempts an idle-policy group for any other task at once, so
    short runs keep their latency while long ones soak up the idle CPU. Needs
    write access to a cgroup hierarchy with the ``cpu`` controller (v1 or v2,
    as root); where there is none, :meth:`create` returns ``None`` and nice 19
    (and the autogroup's nice) is all the long lane gets.
    """

    def __init__(self, path: str) -> None:
        self.path = path

    @classmethod
    def create(cls, name: str) -> IdleGroup | None:
        """Make the group, or return ``None`` where this host does not allow it.

        Its name carries this process's pid, so that groups left by a process
        that died without closing its pool (``kill -9``, ``os._exit``) are
        removed here, by the next pool on the host, once they are empty.
        """
        name = f"{_GROUP_PREFIX}{os.getpid()}-{name}"
        for parent in _cpu_cgroup_dirs():
            _sweep_orphans(parent)
            path = os.path.join(parent, name)
            try:
                os.mkdir(path, 0o700)
            except FileExistsError:
                pass
            except OSError:
                continue
            try:
                with open(os.path.join(path, "cpu.idle"), "w") as f:
                    f.write("1")
            except OSError:
                with contextlib.suppress(OSError):
                    os.rmdir(path)
                continue
            return cls(path)
        return None

    def add(self, pid: int) -> bool:
        """Move one process into the group; ``False`` if it is gone (or refused)."""
        try:
            with open(os.path.join(self.path, "cgroup.procs"), "w") as f:
                f.write(str(pid))
        except OSError:
            return False
        return True

    def remove(self) -> None:
        """Remove the group once its processes are gone (they are killed before this)."""
        for _ in range(50):
            try:
                os.rmdir(self.path)
                return
            except FileNotFoundError:
                return
            except OSError:
                time.sleep(0.01)
        logger.warning("could not remove the long lane's cgroup %s", self.path)


#: Every idle group's name starts so, then the owning process's pid and a dash.
_GROUP_PREFIX = "arbiter-long-"


def _sweep_orphans(parent: str) -> None:
    """Remove the empty idle groups under ``parent`` whose owning process is gone."""
    try:
        names = os.listdir(parent)
    except OSError:
        return
    for entry in names:
        owner = entry.removeprefix(_GROUP_PREFIX).split("-", 1)[0]
        if not entry.startswith(_GROUP_PREFIX) or not owner.isdigit():
            continue
        try:
            os.kill(int(owner), 0)
        except ProcessLookupError:
            with contextlib.suppress(OSError):  # not empty yet, or raced: left for later
                os.rmdir(os.path.join(parent, entry))
        except OSError:
            continue  # alive (another user's process, say)


def _cpu_cgroup_dirs() -> list[str]:
    """Return where this process's CPU cgroup lives, one path per hierarchy that has one."""
    try:
        with open("/proc/self/cgroup") as f:
            lines = f.read().splitlines()
    except OSError:
        return []
    found = []
    for line in lines:
        _, controllers, path = line.split(":", 2)
        if "cpu" in controllers.split(","):  # v1: the cpu controller's own hierarchy
            for mount in ("/sys/fs/cgroup/cpu", "/sys/fs/cgroup/cpu,cpuacct"):
                if os.path.isfile(os.path.join(mount, "cpu.shares")):
                    found.append(os.path.normpath(mount + path))
                    break
        elif controllers == "":  # v2: only if cpu is enabled for children here
            for mount in ("/sys/fs/cgroup", "/sys/fs/cgroup/unified"):
                base = os.path.normpath(mount + path)
                try:
                    with open(os.path.join(base, "cgroup.subtree_control")) as f:
                        enabled = f.read().split()
                except OSError:
                    continue
                if "cpu" in enabled:
                    found.append(base)
                    break
    return found


def _run_pids(zygote_pid: int) -> list[int]:
    """Return the run under a slot's zygote and its descendants, found from /proc.

    Outer zygote, then PID 1 of its namespace, then the run and what it started.
    """
    pending = [run for inner in _children(zygote_pid) for run in _children(inner)]
    found: list[int] = []
    seen: set[int] = set()
    while pending:
        pid = pending.pop()
        if pid in seen:
            continue
        seen.add(pid)
        found.append(pid)
        pending += _children(pid)
    return found


def _renice(pid: int, nice: int) -> None:
    """Set a process's nice value and its autogroup's (see :func:`demote`)."""
    with contextlib.suppress(OSError), open(f"/proc/{pid}/autogroup", "w") as f:
        f.write(str(nice))
    with contextlib.suppress(OSError):
        os.setpriority(os.PRIO_PROCESS, pid, nice)


def demote(zygote_pid: int, idle: IdleGroup | None) -> None:
    """Drop the run under a slot's zygote (and what it started) to the lowest CPU priority.

    Into ``idle`` where the host has one (see :class:`IdleGroup`); nice 19
    either way. The zygote renices the run's process group itself, but that
    is not enough where the kernel groups sessions (``sched_autogroup``):
    every run starts a session, hence a scheduling group of its own, and only
    the group's nice value counts against other groups. The group's nice is
    set through ``/proc/PID/autogroup``, which the confined zygote cannot
    reach: this side does it.
    """
    for pid in _run_pids(zygote_pid):
        if idle is not None:
            idle.add(pid)
        _renice(pid, _LONG_NICE)


def _cpu_ticks(pid: int) -> int:
    """Return the CPU time a process and its reaped children have had, in clock ticks."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return 0
    # utime, stime, cutime, cstime: fields 14 to 17 of proc(5), 12 to 15 after the name.
    return sum(int(v) for v in fields[11:15])


#: Timers fire on this grid (seconds): the thread wakes at most this often, however
#: many runs start, where a deadline per run woke it once a run.
TIMER_GRID_S = 0.02


class Timers:
    """One thread that runs callbacks after a delay, for the whole pool.

    A ``threading.Timer`` per run costs a thread start on every run, about a
    tenth of the floor's throughput; one thread with a heap costs a push. Nor
    is the thread woken once a run: deadlines are rounded up to a
    ``TIMER_GRID_S`` grid, a push wakes it only when it is due before every
    other, and a cancelled callback stays in the heap until its time (measured:
    waking it for each run cost 60-75 us of the pool's CPU a run, about 4% of
    the floor's throughput).
    """

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._heap: list[tuple[float, int, Callable[[], None]]] = []
        #: Handles pushed and neither run nor cancelled.
        self._pending: set[int] = set()
        self._ids = itertools.count()
        self._thread: threading.Thread | None = None

    def call_later(self, delay_s: float, callback: Callable[[], None]) -> int:
        """Run ``callback`` on the timer thread after ``delay_s`` (up to one grid step more).

        Returns a handle to cancel it with.
        """
        due = math.ceil((time.monotonic() + delay_s) / TIMER_GRID_S) * TIMER_GRID_S
        with self._cond:
            handle = next(self._ids)
            earliest = not self._heap or due < self._heap[0][0]
            heapq.heappush(self._heap, (due, handle, callback))
            self._pending.add(handle)
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, name="sandbox-timers", daemon=True
                )
                self._thread.start()
            elif earliest:
                self._cond.notify()
            return handle

    def cancel(self, handle: int) -> None:
        """Drop a callback that has not run yet (a no-op once it has)."""
        with self._cond:
            self._pending.discard(handle)

    def stop(self) -> None:
        """Drop every pending callback and end the thread (a later call starts a new one)."""
        with self._cond:
            self._heap.clear()
            self._pending.clear()
            thread, self._thread = self._thread, None
            self._cond.notify_all()
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=5)

    def _run(self) -> None:
        me = threading.current_thread()
        while True:
            with self._cond:
                while True:
                    if self._thread is not me:
                        return
                    now = time.monotonic()
                    if self._heap and self._heap[0][0] <= now:
                        _, handle, callback = heapq.heappop(self._heap)
                        if handle not in self._pending:
                            continue  # cancelled
                        self._pending.discard(handle)
                        break
                    self._cond.wait(self._heap[0][0] - now if self._heap else None)
            try:
                callback()
            except Exception:  # one failed callback must not stop the others
                logger.exception("sandbox timer callback failed")


#: How often the long lane's runs are ranked by the CPU time they have had.
RANK_EVERY_S = 0.1
#: The nice value of the long lane's favoured runs: inside the idle group (which
#: yields to every fast-lane run whatever its members' nice) and without one,
#: where it must stay below the fast lane's nice 0.
_FAVOURED_NICE_IDLE = 0
_FAVOURED_NICE = 10


class LeastAttained:
    """The long lane's CPU goes first to the runs that have had the least of it.

    Under fair shares, k long runs on n cores get n/k of a core each: a correct
    candidate that needs three seconds of CPU, long beside a dozen loopers,
    would reach its wall-clock backstop before its CPU limit. So every
    ``RANK_EVERY_S`` the long runs are ranked by the CPU time they have had
    (processes and reaped children, from /proc), and the ``favoured`` with
    the least are raised to a middle nice value while the rest stay at 19:
    loopers, which have had the most, wait; a run that has just turned long,
    or needs only a little more, goes first (least attained service). Raising
    a priority needs CAP_SYS_NICE, so the pool ranks only as root; elsewhere
    long runs share fairly at nice 19.
    """

    def __init__(self, timers: Timers, favoured: int) -> None:
        self.timers = timers
        self.favoured = favoured
        self._lock = threading.Lock()
        #: key -> (zygote pid, still this run?, idle group or None), in the order
        #: the runs turned long.
        self._runs: dict[object, tuple[int, Callable[[], bool], IdleGroup | None]] = {}
        #: Which chain of ticks is the live one (``None``: none is).
        self._chain: int | None = None
        self._chains = itertools.count()
        #: Rankings done (for tests and operators).
        self.rounds = 0

    def add(
        self, key: object, zygote_pid: int, current: Callable[[], bool], idle: IdleGroup | None
    ) -> None:
        """Rank a run that has just turned long (``current`` says whether it still runs)."""
        with self._lock:
            self._runs[key] = (zygote_pid, current, idle)
            if self._chain is not None:
                return
            chain = self._chain = next(self._chains)
        self.timers.call_later(0.0, lambda: self._tick(chain))

    def discard(self, key: object) -> None:
        """Stop ranking a run (it ended)."""
        with self._lock:
            self._runs.pop(key, None)

    def clear(self) -> None:
        """Forget every run (the pool is closing, and its timers with it)."""
        with self._lock:
            self._runs.clear()
            self._chain = None

    def _tick(self, chain: int) -> None:
        with self._lock:
            if chain != self._chain:
                return
            for key in [k for k, (_, current, _) in self._runs.items() if not current()]:
                del self._runs[key]
            if not self._runs:
                self._chain = None
                return
            runs = [(key, zygote, idle) for key, (zygote, _, idle) in self._runs.items()]
        ranked = []
        for turned_long, (_, zygote, idle) in enumerate(runs):
            pids = _run_pids(zygote)
            ranked.append((sum(_cpu_ticks(pid) for pid in pids), turned_long, pids, idle))
        # Fewest ticks first; among equals, the run that turned long first.
        ranked.sort(key=lambda entry: entry[:2])
        for rank, (_, _, pids, idle) in enumerate(ranked):
            if rank >= self.favoured:
                nice = _LONG_NICE
            else:
                nice = _FAVOURED_NICE_IDLE if idle is not None else _FAVOURED_NICE
            for pid in pids:
                _renice(pid, nice)
        self.rounds += 1
        self.timers.call_later(RANK_EVERY_S, lambda: self._tick(chain))


class Lanes:
    """Admission of runs: a fast lane of ``fast`` places and a long lane of ``long``.

    A run enters the fast lane; once it has run for its ``long_after_s`` it
    moves to the long lane (when that has room) and its fast place goes to the
    next run. So a handful of candidates that loop until their deadline hold
    long-lane places (at the lowest CPU priority, set by the zygote at the
    same moment), while the rest of the batch keeps flowing through the fast
    lane: a batch takes about max(slowest deadline, CPU work / cores), not the
    sum of the deadlines over the slots.
    """

    def __init__(self, fast: int, long: int) -> None:
        self.fast_places = fast
        self.long_places = long
        self._cond = threading.Condition()
        #: Runs in the fast lane: token -> when they move to the long lane.
        self._fast: dict[int, float] = {}
        self._long: set[int] = set()
        self._tokens = itertools.count()
        #: Runs waiting for a fast place, in the order they came.
        self._waiting: collections.deque[int] = collections.deque()
        self._tickets = itertools.count()

    def _move_long(self, now: float) -> None:
        for token, due in sorted(self._fast.items(), key=lambda item: item[1]):
            if due > now or len(self._long) >= self.long_places:
                return
            del self._fast[token]
            self._long.add(token)

    def enter(self, long_after_s: float, timeout_s: float) -> int:
        """Wait for a fast place, in the order of arrival; return the run's token.

        First come, first served: a place that frees goes to the run that has
        waited longest, not to whichever thread takes the lock first (the one
        that just gave a place back would, and under steady load a waiting
        run could wait until its timeout).

        Raises:
            SandboxError: no place became free within ``timeout_s``.
        """
        give_up = time.monotonic() + timeout_s
        with self._cond:
            ticket = next(self._tickets)
            self._waiting.append(ticket)
            try:
                while True:
                    now = time.monotonic()
                    self._move_long(now)
                    if self._waiting[0] == ticket and len(self._fast) < self.fast_places:
                        token = next(self._tokens)
                        self._fast[token] = now + long_after_s
                        return token
                    if now >= give_up:
                        raise SandboxError("no sandbox slot became free in time")
                    wake = give_up
                    if self._fast and len(self._long) < self.long_places:
                        # The next place to free is the oldest fast run turning long.
                        wake = min(wake, min(self._fast.values()))
                    self._cond.wait(max(0.0, wake - now))
            finally:
                self._waiting.remove(ticket)
                # The next in line may be able to go now (a place, or the head, freed).
                self._cond.notify_all()

    def leave(self, token: int) -> None:
        """Give back a run's place, whichever lane it is in."""
        with self._cond:
            self._fast.pop(token, None)
            self._long.discard(token)
            self._cond.notify_all()

    def counts(self) -> tuple[int, int]:
        """Return how many runs are in the fast lane and in the long lane now."""
        with self._cond:
            self._move_long(time.monotonic())
            return len(self._fast), len(self._long)
