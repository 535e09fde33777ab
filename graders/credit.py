"""Who else moves when a sandbox run is credited with time, and with time spent on our own work.

A context variable, so that the grader runner (which owns a grading job's
timeout) and the sandbox (which credits runs) meet without importing each
other: the runner sets a listener around each job, and every run started in
that context calls it with each increment of credited wait (see
:mod:`arbiter.graders.sandbox.clock`).

The same listener hears about our own work, through :func:`ours`: a grading
waiting for a sandbox place, for a compile (its own or another's of the same
program), for a checks worker, or in the grader's thread pool's queue. That
time is never the candidate's, and never the job's either: a burst of
compiles must not end gradings as ``infra_timeout`` (a lost sample) because
they queued behind each other. The job's deadline moves as that time passes,
not after it (a wait longer than the job's whole timeout would end it first).
"""

from __future__ import annotations

import contextlib
import contextvars
import threading
import time
from collections.abc import Callable, Iterator

__all__ = ["credit_listener", "ours"]

#: Called, from the sandbox pool's timer thread, with each increment (seconds) of
#: wait credited to a run started in this context.
credit_listener: contextvars.ContextVar[Callable[[float], None] | None] = contextvars.ContextVar(
    "credit_listener", default=None
)

#: Whether this context is inside :func:`ours` already (time is credited once).
_inside: contextvars.ContextVar[bool] = contextvars.ContextVar("credit_inside", default=False)
#: How often time spent in :func:`ours` is handed to the listeners (a job's own
#: timeout is tens of seconds; every open stretch costs its job a reschedule a tick).
TICK_S = 1.0


class _Ticker:
    """One thread that hands each open stretch of our work its time as it passes."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        #: Open stretch -> (its listener, when it was last credited).
        self._open: dict[int, tuple[Callable[[float], None], float]] = {}
        self._ids = 0
        self._thread: threading.Thread | None = None

    def open(self, listener: Callable[[float], None]) -> int:
        # A tick's worth ahead, at once: the job's deadline must never pass between ticks.
        listener(TICK_S)
        with self._cond:
            self._ids += 1
            self._open[self._ids] = (listener, time.monotonic())
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="credit-ours", daemon=True)
                self._thread.start()
            return self._ids

    def close(self, stretch: int) -> None:
        with self._cond:
            listener, last = self._open.pop(stretch)
        listener(time.monotonic() - last)

    def _run(self) -> None:
        while True:
            with self._cond:
                if not self._open:
                    self._thread = None
                    return
                now = time.monotonic()
                due = [(k, fn, now - last) for k, (fn, last) in self._open.items()]
                for key, fn, _ in due:
                    self._open[key] = (fn, now)
            for _, fn, seconds in due:
                fn(seconds)
            time.sleep(TICK_S)


_TICKER = _Ticker()


@contextlib.contextmanager
def ours() -> Iterator[None]:
    """Credit the grading job's deadline with the time spent inside, as it passes.

    For our own work only (a queue, a compile, a worker's start): a candidate's
    run is credited by its own deadline. Nested, it credits once.
    """
    listener = credit_listener.get()
    if listener is None or _inside.get():
        yield
        return
    token = _inside.set(True)
    stretch = _TICKER.open(listener)
    try:
        yield
    finally:
        _TICKER.close(stretch)
        _inside.reset(token)
