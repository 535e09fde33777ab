"""A run's deadline, which moves later by the time the run spent waiting for a CPU.

A run's wall-clock backstop measures the candidate's own work: when a busy
host (or this service's own trusted side and fast lane) keeps its processes
off the CPU, the time they wait runnable is credited to it (see
:class:`arbiter.graders.sandbox.lanes.LeastAttained`), and so is the time the run
waits for the trusted side between two calls (the tests' own work, in a
checks worker or in the pytest host). Every wait on the run moves with it: the
template's kill, the proxy's calls, the sandbox's report and the pytest
host's suite. A :class:`RunDeadline` is that moving point in time
(``time.monotonic()``); :class:`DeadlineView` reads one from another process
(a checks worker, the pytest host), through a shared memory file.
"""

from __future__ import annotations

import math
import mmap
import os
import struct
import threading
import time
from collections.abc import Callable
from typing import Protocol

from arbiter.graders.credit import credit_listener

__all__ = ["DeadlineView", "Moving", "RunDeadline"]

_SLOT = struct.Struct("d")
#: The trusted process's part: its closed stretches of work, and when its open one
#: began (0: none is open).
_VIEW = struct.Struct("dd")
#: The shared memory: the owner's deadline (without the trusted process's part), then that part.
_OWNER, _VIEW_AT = 0, _SLOT.size
_SIZE = _SLOT.size + _VIEW.size


class Moving(Protocol):
    """A deadline that may move later while something waits for it."""

    def at(self) -> float:
        """Return the deadline now (``time.monotonic()``)."""
        ...


class _Later:
    """A fixed time after a moving deadline."""

    def __init__(self, base: Moving, after_s: float) -> None:
        self.base = base
        self.after_s = after_s

    def at(self) -> float:
        return self.base.at() + self.after_s


class RunDeadline:
    """The deadline of one run: its start plus its backstop, plus the time credited to it.

    Two kinds of time are credited, neither the candidate's work: its wait
    for a CPU (:meth:`credit`, from the pool's timer thread) and the time it
    waits for the trusted side, that is every stretch while the tests work
    between two calls (:meth:`working`, :meth:`waiting`, from the thread that
    talks to the run, or from a trusted process through :meth:`fd`). The
    deadline moves on while the trusted side works; :meth:`refresh` (the
    pool's timer thread, the suite's reader) tells ``pusher`` (the slot tells
    the template the run's new backstop) and the context's
    :data:`~arbiter.graders.credit.credit_listener` (the grading job's own timeout).
    """

    #: A push made while the trusted side works reaches this far ahead: the
    #: template must not end the run before the next refresh moves it again.
    LEAD_S = 0.5
    #: Otherwise a push is made once the deadline has moved this much.
    PUSH_STEP_S = 0.05
    #: The template is told nothing while its backstop is further away than this: a
    #: push wakes it (and costs a frame), and most runs end long before. Refreshes
    #: come every tenth of a second (the pool's timers, the checks worker's reader),
    #: so a backstop this near is pushed many times over before it passes.
    PUSH_WITHIN_S = 2.0

    def __init__(self, started: float, backstop_s: float, max_credit_s: float = math.inf) -> None:
        self.started = started
        self.backstop_s = backstop_s
        #: Each kind of credit stops here: a run kept off the CPU longer was
        #: starved by the host (:attr:`starved`); tests still working after as
        #: long are stuck (the run's deadline passes, and the suite is killed).
        self.max_credit_s = max_credit_s
        #: Seconds of waiting for a CPU credited so far.
        self.credit_s = 0.0
        self._lock = threading.Lock()
        #: Time the run waited for this process's trusted side, closed stretches.
        self._trusted = 0.0
        #: When this process's trusted side began working (``None``: it is waiting).
        self._working: float | None = None
        self._shared: mmap.mmap | None = None
        self._fd = -1
        self._pushed = started + backstop_s
        self._told = 0.0
        self._listener = credit_listener.get()
        #: Told the run's new backstop (seconds from its start) as it moves.
        self.pusher: Callable[[float], None] | None = None

    def trusted_s(self, now: float | None = None) -> float:
        """Return the time the run has waited for the trusted side (here and in another process)."""
        now = time.monotonic() if now is None else now
        total = self._trusted
        working = self._working
        if working is not None:
            total += max(0.0, now - working)
        if self._shared is not None:
            closed, since = _VIEW.unpack_from(self._shared, _VIEW_AT)
            total += closed + (max(0.0, now - since) if since > 0 else 0.0)
        return float(min(total, self.max_credit_s))

    @property
    def starved(self) -> bool:
        """Whether the run's credited wait for a CPU reached its cap."""
        return self.credit_s >= self.max_credit_s

    def _own_base(self) -> float:
        return self.started + self.backstop_s + self.credit_s

    def at(self) -> float:
        """Return the deadline now (``time.monotonic()``)."""
        return self._own_base() + self.trusted_s()

    def later(self, after_s: float) -> Moving:
        """Return the deadline that stays ``after_s`` after this one as it moves."""
        return _Later(self, after_s)

    def credit(self, credit_s: float) -> None:
        """Credit ``credit_s`` in all of waiting for a CPU (never less than before), and refresh."""
        credit_s = min(credit_s, self.max_credit_s)
        with self._lock:
            if credit_s > self.credit_s:
                added, self.credit_s = credit_s - self.credit_s, credit_s
                if self._shared is not None:
                    _SLOT.pack_into(self._shared, _OWNER, self._own_base())
                if self._listener is not None:
                    self._listener(added)
            self._refresh()

    def working(self) -> None:
        """The trusted side works from now until :meth:`waiting`."""
        with self._lock:
            if self._working is None:
                self._working = time.monotonic()

    def waiting(self) -> None:
        """The trusted side waits for the run again: close the stretch :meth:`working` opened."""
        with self._lock:
            if self._working is not None:
                self._trusted += max(0.0, time.monotonic() - self._working)
                self._working = None

    def refresh(self) -> None:
        """Pass the deadline's moves on to the template and to the grading job."""
        with self._lock:
            self._refresh()

    def _refresh(self) -> None:
        now = time.monotonic()
        trusted = self.trusted_s(now)
        if trusted > self._told and self._listener is not None:
            self._listener(trusted - self._told)
        self._told = max(self._told, trusted)
        at = self._own_base() + trusted
        working = self._working is not None or (
            self._shared is not None and _VIEW.unpack_from(self._shared, _VIEW_AT)[1] > 0
        )
        target = at + self.LEAD_S if working else at
        step = 0.0 if working else self.PUSH_STEP_S
        if (
            self.pusher is not None
            and target > self._pushed
            and target - self._pushed >= step
            and self._pushed - now <= self.PUSH_WITHIN_S
        ):
            self._pushed = target
            self.pusher(target - self.started)

    def fd(self) -> int:
        """Return a memory file for a trusted process, which works from now on (made once)."""
        with self._lock:
            if self._shared is None:
                self._fd = os.memfd_create("arbiter-run-deadline", os.MFD_CLOEXEC)
                os.ftruncate(self._fd, _SIZE)
                self._shared = mmap.mmap(self._fd, _SIZE)
                _SLOT.pack_into(self._shared, _OWNER, self._own_base())
                # Its start-up is ours: the run waits for it from the moment it is asked.
                _VIEW.pack_into(self._shared, _VIEW_AT, 0.0, time.monotonic())
            return self._fd

    def close(self) -> None:
        """Release the shared copy, if one was made (what it credited stays credited)."""
        with self._lock:
            if self._shared is not None:
                closed, _ = _VIEW.unpack_from(self._shared, _VIEW_AT)
                self._trusted += closed
                self._shared.close()
                self._shared = None
                os.close(self._fd)
                self._fd = -1


class DeadlineView:
    """A :class:`RunDeadline` in a trusted process, through its :meth:`~RunDeadline.fd`.

    It reads the deadline as the owner moves it, and says through the same
    memory when this process works and when it waits for the run.
    """

    def __init__(self, fd: int) -> None:
        self._shared = mmap.mmap(fd, _SIZE)
        os.close(fd)
        closed, since = _VIEW.unpack_from(self._shared, _VIEW_AT)
        self._closed, self._since = float(closed), float(since)

    def at(self) -> float:
        """Return the deadline now: the owner's, plus the time the run waited for this process."""
        now = time.monotonic()
        own = float(_SLOT.unpack_from(self._shared, _OWNER)[0])
        return own + self._closed + (now - self._since if self._since > 0 else 0.0)

    def working(self) -> None:
        """This process works from now until :meth:`waiting`."""
        if self._since <= 0:
            self._since = time.monotonic()
            _VIEW.pack_into(self._shared, _VIEW_AT, self._closed, self._since)

    def waiting(self) -> None:
        """This process waits for the run again."""
        if self._since > 0:
            self._closed += max(0.0, time.monotonic() - self._since)
            self._since = 0.0
            _VIEW.pack_into(self._shared, _VIEW_AT, self._closed, 0.0)

    def close(self) -> None:
        """Stop working for the run and let the memory go (a worker grades run after run)."""
        self.waiting()
        self._shared.close()
