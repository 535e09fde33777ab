"""How a pool schedules its runs: a fast lane and a long lane, and moving a run between them.

One module, one job: scheduling runs on the pool's CPUs. Admission, demotion,
least-attained ranking and the idle cgroup act on the same runs under one lock and one
timer thread.

A run enters the fast lane (one place per core); once it has run for its
``long_after_s`` of its own time (the wall clock less its wait for a CPU) it
moves to the long lane, its processes drop to the lowest
CPU priority (and, where the host allows, into a ``cpu.idle`` cgroup), and its
fast place goes to the next run. :class:`Lanes` admits runs, :func:`demote`
lowers one, :class:`LeastAttained` gives the long lane's CPU first to the long
runs that have had the least, :class:`Timers` is the one thread that demotes
and ranks on time, and :class:`IdleGroup` is the cgroup. :class:`LeastAttained` also credits each
long run with the time it waited for a CPU (see :mod:`arbiter.graders.sandbox.clock`). The
zygote and the confined runs never see any of this: it all happens on the trusted side.
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
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from arbiter.graders.sandbox.errors import SandboxError

__all__ = [
    "IdleGroup",
    "Lanes",
    "LeastAttained",
    "Timers",
    "busy_ticks",
    "can_raise_priority",
    "cpu_time_s",
    "demote",
    "outside_share",
    "outside_wait_s",
    "trusted_process",
]

logger = logging.getLogger("arbiter.graders.sandbox.lanes")


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
        #: The group this one was made under (this process's own): favoured long runs go back there.
        self.parent = os.path.dirname(path)

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
        return _move(pid, self.path)

    def release(self, pid: int) -> bool:
        """Move one process back out, into the parent group; ``False`` if it is gone."""
        return _move(pid, self.parent)

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


def _move(pid: int, group: str) -> bool:
    try:
        with open(os.path.join(group, "cgroup.procs"), "w") as f:
            f.write(str(pid))
    except OSError:
        return False
    return True


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
    """Set a process's nice value, and its autogroup's where it leads a session of its own.

    An autogroup is a whole session's: a process that has not (yet) left the
    session it was forked in (a run between its fork and its ``setsid``, a
    template's child) shares this service's, and nice 19 written there would
    weigh the whole service (every grader thread, checks worker, harness
    compile and run) down against the host's other sessions. So the group's
    nice is written only for a session leader whose session is not ours (see
    :func:`demote`).
    """
    try:
        own_session = os.getsid(pid) == pid != os.getsid(0)
    except OSError:
        own_session = False
    if own_session:
        with contextlib.suppress(OSError), open(f"/proc/{pid}/autogroup", "w") as f:
            f.write(str(nice))
    with contextlib.suppress(OSError):
        os.setpriority(os.PRIO_PROCESS, pid, nice)


def demote(zygote_pid: int, idle: IdleGroup | None) -> None:
    """Drop the run under a slot's zygote (and what it started) to the lowest CPU priority.

    Into ``idle`` where the host has one (see :class:`IdleGroup`); nice 19
    either way, for each process and for its session's scheduling group where
    the kernel groups sessions (``sched_autogroup``): every run starts a
    session, hence a scheduling group of its own, and only the group's nice
    value counts against other groups. The group's nice is set through
    ``/proc/PID/autogroup``, which nothing inside the sandbox can reach.
    """
    for pid in _run_pids(zygote_pid):
        if idle is not None:
            idle.add(pid)
        _renice(pid, _LONG_NICE)


def _schedstat_s(pid: int, field: int, thread: str = "") -> float:
    path = f"/proc/{pid}/task/{thread}/schedstat" if thread else f"/proc/{pid}/schedstat"
    try:
        with open(path) as f:
            return int(f.read().split()[field]) / 1e9
    except (OSError, IndexError, ValueError):
        return 0.0


def _run_delay_s(pid: int) -> float:
    """Return how long a process's most delayed thread has waited runnable for a CPU.

    Per thread (``/proc/PID/task/TID/schedstat``): a JVM's or a compiler's main
    thread sleeps while its other threads do the work, and waits for nothing.
    """
    try:
        threads = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return 0.0
    if len(threads) <= 1:
        return _schedstat_s(pid, 1)
    return max((_schedstat_s(pid, 1, t) for t in threads if t.isdigit()), default=0.0)


def cpu_time_s(pid: int) -> float:
    """Return how long a process (its main thread) has run on a CPU; 0.0 if it is gone."""
    return _schedstat_s(pid, 0)


def outside_share(elsewhere: int, others: int, siblings: int) -> float:
    """Return the share of a run's wait for a CPU that is credited to it.

    A run's longest waiting process waited while the CPUs went to three kinds
    of work: ``elsewhere`` (the host, this service's trusted side, the fast
    lane), ``others`` (the long lane's other runs) and ``siblings`` (the run's
    own other processes), each in CPU ticks over the same time. Only the first
    is credited: a run that forks busy children waits for them, and that wait
    is its own work, never a reason to move its deadline.
    """
    total = elsewhere + others + siblings
    return elsewhere / total if total else 1.0


def outside_wait_s(zygote_pid: int, busy_at_start: int) -> float | None:
    """Return the run's wait for a CPU since it started, less what its own processes caused.

    ``busy_at_start`` is :func:`busy_ticks` when the run started. None when the run
    has no process left (it has ended, and the trusted side has not heard yet): its
    wait can no longer be read, and is not 0.
    """
    pids = _run_pids(zygote_pid)
    if not pids:
        return None
    ticks, waiter, delay_s = _processes(pids)
    return delay_s * _share_since_start(ticks, waiter, busy_ticks() - busy_at_start)


def _processes(pids: list[int]) -> tuple[dict[int, int], int | None, float]:
    """Return each process's CPU ticks, the one that waited longest for a CPU, and its wait."""
    ticks = {pid: _cpu_ticks(pid) for pid in pids}
    delays = {pid: _run_delay_s(pid) for pid in pids}
    waiter = max(delays, key=delays.__getitem__) if delays else None
    return ticks, waiter, delays[waiter] if waiter is not None else 0.0


def _share_since_start(ticks: dict[int, int], waiter: int | None, busy: int) -> float:
    """Return :func:`outside_share` of a run's wait since it started (``busy``: host ticks since).

    Everything busy since then that was not the run itself is ``elsewhere``.
    """
    run = sum(ticks.values())
    siblings = run - (ticks[waiter] if waiter is not None else 0)
    return outside_share(max(0, busy - run), 0, siblings)


def busy_ticks() -> int:
    """Return the CPU time every core has spent busy since boot, in clock ticks (/proc/stat)."""
    try:
        with open("/proc/stat") as f:
            fields = [int(v) for v in f.readline().split()[1:9]]
    except (OSError, ValueError):
        return 0
    # user nice system idle iowait irq softirq steal: all but idle and iowait.
    return sum(fields) - fields[3] - fields[4]


def _tree_ticks(pid: int) -> int:
    """Return the CPU time of ``pid`` and every process under it, dead or alive, in clock ticks.

    A live process counts its own and its reaped children's; a live child is
    counted the same way, down the tree.
    """
    return _cpu_ticks(pid) + sum(_tree_ticks(child) for child in _children(pid))


class _Process(Protocol):
    """What :func:`trusted_process` needs of a started process (a ``subprocess.Popen``)."""

    pid: int

    def poll(self) -> int | None: ...


#: This service's own processes (the sandbox's zygotes, the pytest host): their
#: CPU, with this process's own threads', is the service's; the rest of the
#: host's busy CPU is other work's.
_TRUSTED: weakref.WeakSet[_Process] = weakref.WeakSet()
_TRUSTED_LOCK = threading.Lock()


def trusted_process(process: _Process) -> None:
    """Count a process this service started (and everything under it) as the service's own CPU.

    Held weakly: a process forgotten (or dead) stops counting. Nothing else
    this process starts is counted as the service's (a trainer that grades
    in-process has data loaders of its own; the load generator is other work).
    """
    with _TRUSTED_LOCK:
        _TRUSTED.add(process)


def _service_ticks() -> int:
    """Return the CPU time of this process's own threads and of its trusted processes' trees."""
    with _TRUSTED_LOCK:
        live = [p.pid for p in _TRUSTED if p.poll() is None]
    return _own_ticks() + sum(_tree_ticks(pid) for pid in live)


def _own_ticks() -> int:
    """Return the CPU time of this process's threads (not of its reaped children), in ticks."""
    try:
        with open("/proc/self/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return 0
    return int(fields[11]) + int(fields[12])


#: CAP_SYS_NICE's bit in /proc/PID/status's capability sets.
_CAP_SYS_NICE = 23


def can_raise_priority() -> bool:
    """Return whether this process may raise a process's priority back (CAP_SYS_NICE).

    Root in a container often lacks it: there a demoted run cannot be favoured again.
    """
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("CapEff:"):
                    return bool(int(line.split()[1], 16) >> _CAP_SYS_NICE & 1)
    except (OSError, ValueError):
        pass
    return False


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

    A ``threading.Timer`` per run costs a thread start on every run; one thread
    with a heap costs a push. Nor is the thread woken once a run, which would
    spend the pool's CPU on every run: deadlines are rounded up to a
    ``TIMER_GRID_S`` grid, a push wakes it only when it is due before every
    other, and a cancelled callback stays in the heap until its time.
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


#: How often the long lane's runs are ranked, and credited with their waits.
RANK_EVERY_S = 0.1
#: The nice value of the long lane's favoured runs, taken out of the idle group
#: (where the host's busy processes would starve them): below the fast lane's 0
#: while this service's own work is most of what keeps the CPUs busy, level with
#: it (and with the host's processes) once other work on the host is.
_FAVOURED_NICE = 10
_FAVOURED_NICE_CONTENDED = 0
#: The nice value of the long lane's other runs while the host is contended and the
#: fast lane empty: out of the idle group, below the favoured runs and the host's.
_UNFAVOURED_NICE_CONTENDED = 5
#: The long lane's favoured runs go up to nice 0 once other processes than ours
#: take more than this share of the host's busy CPU time, and stay there until
#: they take less than HOST_SHARE_RELEASED: the runs let out of the idle group
#: raise our share, and at one threshold the state flapped at every sample.
HOST_SHARE_CONTENDED = 0.5
HOST_SHARE_RELEASED = 0.25


class HostShare:
    """Whether other work than this service's takes most of the host's busy CPU.

    Sampled at most every ``RANK_EVERY_S`` (from ``/proc/stat`` against
    :func:`trusted_process`'s trees and this process's threads); between two
    samples the last answer stands.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._at = time.monotonic()
        self._busy = busy_ticks()
        self._ours = _service_ticks()
        self._contended = False

    def contended(self) -> bool:
        """Whether the host's other work took most of the busy CPU since the last sample.

        Once it has, the answer stays yes until that work takes under
        ``HOST_SHARE_RELEASED`` of it.
        """
        with self._lock:
            now = time.monotonic()
            if now - self._at >= RANK_EVERY_S:
                busy, ours = busy_ticks(), _service_ticks()
                spent = busy - self._busy
                if spent > 0:
                    share = HOST_SHARE_RELEASED if self._contended else HOST_SHARE_CONTENDED
                    self._contended = spent - (ours - self._ours) > share * spent
                self._at, self._busy, self._ours = now, busy, ours
            return self._contended


@dataclass
class _LongRun:
    """What the long lane knows of one run between two ticks."""

    zygote: int
    #: Whether the run is still the one this entry was made for.
    current: Callable[[], bool]
    #: Called with the run's credited wait (seconds) when it grows.
    credit: Callable[[float], None]
    #: In the order the runs turned long (ties in the ranking go to the older).
    order: int
    #: :func:`busy_ticks` when the run started (its wait in the fast lane is weighed from there).
    busy_at_start: int = 0
    ticks: int = -1
    #: Each process's CPU ticks at the last tick.
    pid_ticks: dict[int, int] = field(default_factory=dict)
    delay_s: float = 0.0
    credited_s: float = 0.0
    favoured: bool = False
    pids: frozenset[int] = frozenset()


class LeastAttained:
    """Credits each long run with the time it waited for a CPU; ranks them by the CPU they had.

    **Credit.** A run's wall-clock backstop measures its own work: time its
    processes spent runnable but waiting for a CPU (``run_delay`` in
    ``/proc/PID/schedstat``) is added to it, so a busy host cannot end a
    correct run that a quiet one would have let finish. The wait is credited
    in the proportion of the busy CPU that went to anything but the run's own
    other processes and, in the long lane, the lane's other runs (see
    :func:`outside_share`): a run that forks busy children waits for them,
    and a batch of loopers would each be credited with the others' CPU and
    every one would run to its full CPU limit. Its wait in the fast lane is
    weighed over the whole time since it started, at its first tick. The
    credit goes to ``credit`` (the pool moves every deadline of the run with it).

    **Ranking** (``rank``: where this process may raise a priority back,
    CAP_SYS_NICE). Under fair shares, k long runs on n cores get n/k of a
    core each: a correct candidate that needs three seconds of CPU, long
    beside a dozen loopers, would reach its wall-clock backstop before its
    CPU limit. So every ``RANK_EVERY_S`` the long runs are ranked by the CPU
    time they have had (processes and reaped children, from /proc), and the
    ``favoured`` with the least leave the idle group (where the host's own
    busy processes would starve them) for nice 10, or nice 0 while other
    work than this service's takes most of the busy CPU (:class:`HostShare`:
    then the long lane's runs must hold their own against the host's, as the
    fast lane's do), while the rest stay idle at 19: loopers, which have had
    the most, wait; a run that has just turned long, or needs only a little
    more, goes first (least attained service). Without ranking, long runs
    share fairly at nice 19, and a run that turns long while the host's
    other work dominates is not demoted at all (nothing could raise it again).
    """

    def __init__(self, timers: Timers, favoured: int, *, rank: bool = True) -> None:
        self.timers = timers
        self.favoured = favoured
        self.rank = rank
        self._lock = threading.Lock()
        self._runs: dict[object, _LongRun] = {}
        self._order = itertools.count()
        #: Which chain of ticks is the live one (``None``: none is).
        self._chain: int | None = None
        self._chains = itertools.count()
        self._busy = 0
        #: Whether the host's other processes take most of the busy CPU (sampled each tick).
        self.host = HostShare()
        self._idle: IdleGroup | None = None
        #: Whether the fast lane is empty (no run, no build, none waiting): the pool's.
        self.fast_idle: Callable[[], bool] = lambda: False
        #: Held while runs are placed: by a tick, and by :meth:`restrain`.
        self._placing = threading.Lock()
        #: The last tick's ranking, and whether it let every run out of the idle group.
        self._ranked: list[tuple[_LongRun, list[int]]] = []
        self._everyone = False
        #: Ticks done (for tests and operators).
        self.rounds = 0

    def add(
        self,
        key: object,
        zygote_pid: int,
        current: Callable[[], bool],
        idle: IdleGroup | None,
        credit: Callable[[float], None] | None = None,
        busy_at_start: int | None = None,
    ) -> None:
        """Track a run that has just turned long (``current`` says whether it still runs).

        ``busy_at_start`` is :func:`busy_ticks` when the run started (default: now).
        """
        with self._lock:
            self._idle = idle
            self._runs[key] = _LongRun(
                zygote_pid,
                current,
                credit or (lambda _: None),
                next(self._order),
                busy_ticks() if busy_at_start is None else busy_at_start,
            )
            if self._chain is not None:
                return
            chain = self._chain = next(self._chains)
            self._busy = busy_ticks()
        self.timers.call_later(0.0, lambda: self._tick(chain))

    def discard(self, key: object) -> None:
        """Stop tracking a run (it ended)."""
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
            for key in [k for k, run in self._runs.items() if not run.current()]:
                del self._runs[key]
            if not self._runs:
                self._chain = None
                return
            runs = list(self._runs.values())
            idle = self._idle
            busy, self._busy = self._busy, busy_ticks()
        busy = self._busy - busy
        now_busy = self._busy
        seen = []
        for run in runs:
            pids = _run_pids(run.zygote)
            seen.append((run, pids, *_processes(pids)))
        # The long lane's CPU this tick, from the runs seen before (new ones: next tick).
        lane = sum(
            max(0, sum(t.values()) - run.ticks) for run, _, t, _, _ in seen if run.ticks >= 0
        )
        for run, _, pid_ticks, waiter, delay_s in seen:
            ticks = sum(pid_ticks.values())
            waited = max(0.0, delay_s - run.delay_s)
            if run.ticks < 0:
                # Its wait so far, in the fast lane, weighed over the time since it started.
                share = _share_since_start(pid_ticks, waiter, now_busy - run.busy_at_start)
            else:
                own = max(0, ticks - run.ticks)
                mine = 0
                if waiter is not None:
                    mine = max(0, pid_ticks[waiter] - run.pid_ticks.get(waiter, 0))
                share = outside_share(max(0, busy - lane), max(0, lane - own), max(0, own - mine))
            run.ticks, run.delay_s = ticks, max(run.delay_s, delay_s)
            run.pid_ticks = pid_ticks
            run.credited_s += waited * share
            # Every tick: the run's deadline also moves while the trusted side works.
            run.credit(run.credited_s)
        if self.rank:
            nice = _FAVOURED_NICE_CONTENDED if self.host.contended() else _FAVOURED_NICE
            # Fewest ticks first; among equals, the run that turned long first.
            seen.sort(key=lambda entry: (sum(entry[2].values()), entry[0].order))
            with self._placing:
                # While the host's other work is most of the busy CPU and the fast
                # lane is empty (no run of ours to hold up), the other long runs leave
                # the idle group too, at a nice between the favoured runs' and 19:
                # there the host's busy processes starved them, and a batch whose
                # last runs were loopers had 0.4 of a core at 4x load. A run that
                # enters the fast lane sends them back at once (:meth:`restrain`).
                self._everyone = nice == _FAVOURED_NICE_CONTENDED and self.fast_idle()
                rest = _UNFAVOURED_NICE_CONTENDED if self._everyone else None
                self._ranked = [(run, pids) for run, pids, _, _, _ in seen]
                for place, (run, pids, _, _, _) in enumerate(seen):
                    self._place(run, pids, nice if place < self.favoured else rest, idle)
        self.rounds += 1
        self.timers.call_later(RANK_EVERY_S, lambda: self._tick(chain))

    def restrain(self) -> None:
        """A run entered the fast lane: the long runs let out only while it was empty go back.

        Called by the pool at each entry, before the run starts; nothing to do
        unless the last tick let every long run out of the idle group.
        """
        if not self._everyone:
            return
        with self._placing:
            if not self._everyone:
                return
            self._everyone = False
            for place, (run, pids) in enumerate(self._ranked):
                if place >= self.favoured and run.favoured:
                    self._place(run, pids, None, self._idle)

    @staticmethod
    def _place(run: _LongRun, pids: list[int], nice: int | None, idle: IdleGroup | None) -> None:
        """Renice a run's processes (``None``: not favoured), in or out of the idle group."""
        favoured = nice is not None
        moved = favoured != run.favoured
        for pid in pids:
            if idle is not None and (moved or pid not in run.pids):
                if favoured:
                    idle.release(pid)
                else:
                    idle.add(pid)
            _renice(pid, _LONG_NICE if nice is None else nice)
        run.favoured, run.pids = favoured, frozenset(pids)


class Lanes:
    """Admission of runs: a fast lane of ``fast`` places, a long lane of ``long``, builds apart.

    A run enters the fast lane; once it has run for its ``long_after_s`` of its
    own time (the pool's demotion timer says so: :meth:`to_long`) it moves to
    the long lane (when that has room) and its fast place goes to the next
    run. So a handful of candidates that loop until their deadline hold
    long-lane places (at the lowest CPU priority, set by :func:`demote` at
    the same moment), while the rest of the batch keeps flowing through the
    fast lane: a batch takes about max(slowest deadline, CPU work / cores),
    not the sum of the deadlines over the slots.

    A compile (``build=True``) is work of ours, not the candidate's: it waits
    for one of the ``builds`` places of its own, in order, is never moved to
    the long lane (its priority is never lowered), and never takes a fast
    place, so a burst of compiles (a GRPO group of completions, each its own
    program) neither starves the runs nor holds more compilers at once than
    the machine has cores and memory for.
    """

    def __init__(self, fast: int, long: int, builds: int = 0) -> None:
        self.fast_places = fast
        self.long_places = long
        self.build_places = builds
        self._lock = threading.Lock()
        self._fast: set[int] = set()
        #: Runs in the fast lane that have turned long, waiting for a long place, in order.
        self._turned: dict[int, None] = {}
        self._long: set[int] = set()
        self._builds: set[int] = set()
        self._tokens = itertools.count()
        #: Runs waiting for a fast place (and builds for a build place), in the order they
        #: came: each one's own condition on ``_lock``, so that only the head is woken.
        self._waiting: collections.deque[threading.Condition] = collections.deque()
        self._waiting_builds: collections.deque[threading.Condition] = collections.deque()

    def _move_long(self) -> None:
        while self._turned and len(self._long) < self.long_places:
            token = next(iter(self._turned))
            del self._turned[token]
            self._fast.discard(token)
            self._long.add(token)

    def enter(self, timeout_s: float | None, *, build: bool = False) -> int:
        """Wait for a fast place (a build place), in the order of arrival; return the token.

        First come, first served: a place that frees goes to the run that has
        waited longest, not to whichever thread takes the lock first (the one
        that just gave a place back would, and under steady load a waiting
        run could wait until its timeout). ``timeout_s`` None waits as long as
        it takes (a build: the queue is ours, and the grading's deadline is
        credited with the wait).

        Raises:
            SandboxError: no place became free within ``timeout_s``.
        """
        give_up = None if timeout_s is None else time.monotonic() + timeout_s
        queue, taken = (
            (self._waiting_builds, self._builds) if build else (self._waiting, self._fast)
        )
        places = self.build_places if build else self.fast_places
        with self._lock:
            waker = threading.Condition(self._lock)
            queue.append(waker)
            try:
                while True:
                    now = time.monotonic()
                    if queue[0] is waker and len(taken) < places:
                        token = next(self._tokens)
                        taken.add(token)
                        return token
                    if give_up is not None and now >= give_up:
                        raise SandboxError("no sandbox slot became free in time")
                    waker.wait(None if give_up is None else give_up - now)
            finally:
                queue.remove(waker)
                # The next in line may be able to go now (a place, or the head, freed).
                self._wake()

    def _wake(self) -> None:
        """Wake the head of each queue (the lock held): no other waiter could go.

        Waking every waiter on each change (one condition for all) cost each
        place given back a wake-up, a lock and the GIL per waiting run, and the
        run that could go waited behind them.
        """
        for queue in (self._waiting, self._waiting_builds):
            if queue:
                queue[0].notify()

    def to_long(self, token: int) -> None:
        """Move a run that has turned long to the long lane, now or when a long place frees."""
        with self._lock:
            if token in self._fast:
                self._turned[token] = None
                self._move_long()
                self._wake()

    def leave(self, token: int) -> None:
        """Give back a run's place, whichever lane it is in."""
        with self._lock:
            self._fast.discard(token)
            self._turned.pop(token, None)
            self._long.discard(token)
            self._builds.discard(token)
            self._move_long()
            self._wake()

    def fast_idle(self) -> bool:
        """Whether no run or build holds or waits for a place outside the long lane."""
        with self._lock:
            return not (self._fast or self._waiting or self._builds or self._waiting_builds)

    def counts(self) -> tuple[int, int]:
        """Return how many runs are in the fast lane and in the long lane now."""
        with self._lock:
            return len(self._fast), len(self._long)

    def building(self) -> tuple[int, int]:
        """Return how many builds hold a place now, and how many wait for one."""
        with self._lock:
            return len(self._builds), len(self._waiting_builds)
