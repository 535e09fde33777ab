"""The process pool the static-analysis graders (bandit, radon) share.

It knows nothing of either analyser: each grader hands it a warm-up function
(module-level, so it can be sent to a worker) that a fresh worker runs before
its first task, and each user holds a share of the pool. The pool stops when
its last user gives its share back, so closing one grader never stops the
workers another still uses.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import select
import signal
import threading
import time
from collections.abc import Callable
from concurrent.futures import Executor, ProcessPoolExecutor

__all__ = ["WarmUp", "WorkerPool", "shared_pool"]

logger = logging.getLogger("arbiter.graders.analysis_pool")

WarmUp = Callable[[], None]


def _warm_worker(server_pid: int, warm_ups: tuple[WarmUp, ...]) -> None:
    """Tie a fresh pool worker's life to the server's, then run every warm-up.

    The worker's parent is the forkserver, and the forkserver exits only once
    every holder of its "alive" pipe is gone, workers included: so the worker
    watches the server itself (a pidfd, readable once the server has exited,
    even by SIGKILL) and leaves with it. The forkserver then sees EOF and
    exits, and PDEATHSIG covers a forkserver that dies first.
    """
    from arbiter.graders.sandbox._linux import set_pdeathsig

    set_pdeathsig(signal.SIGKILL)
    try:
        server = os.pidfd_open(server_pid)
    except ProcessLookupError:
        os._exit(0)
    threading.Thread(
        target=_exit_with, args=(server,), name="arbiter-server-watch", daemon=True
    ).start()
    for warm_up in warm_ups:
        warm_up()


def _hold(seconds: float) -> int:
    """Keep a worker busy a moment, so that the next warm-up task goes to another one."""
    time.sleep(seconds)
    return os.getpid()


def _exit_with(pidfd: int) -> None:
    """Block until the process behind ``pidfd`` exits, then leave at once."""
    select.select([pidfd], [], [])
    os._exit(0)


class WorkerPool:
    """A lazily started process pool for CPU-bound analyses, shared by reference count.

    Workers come from a ``forkserver`` so that a server process with threads
    (uvicorn, torch) is never forked. If no pool can be started the callers run
    inline instead; results are the same, only slower under load.
    """

    WARM_S = 30.0  # how long warm() keeps asking for a worker that has not answered

    def __init__(self, workers: int | None = None) -> None:
        self.workers = workers if workers is not None else len(os.sched_getaffinity(0))
        self._executor: ProcessPoolExecutor | None = None
        self._unavailable = self.workers < 1
        self._warm_ups: list[WarmUp] = []
        self.users = 0

    def acquire(self, warm_up: WarmUp | None = None) -> None:
        """Take a share of the pool; ``warm_up`` runs in each worker started from now on."""
        self.users += 1
        if warm_up is not None and warm_up not in self._warm_ups:
            self._warm_ups.append(warm_up)

    def release(self) -> None:
        """Give a share back; the last one stops the workers (a later use starts new ones)."""
        self.users = max(0, self.users - 1)
        if self.users == 0:
            self.close()

    def executor(self) -> Executor | None:
        """Return the running pool, starting it on first use; ``None`` if there is none."""
        if self._unavailable:
            return None
        if self._executor is None:
            try:
                self._executor = ProcessPoolExecutor(
                    max_workers=self.workers,
                    mp_context=multiprocessing.get_context("forkserver"),
                    initializer=_warm_worker,
                    initargs=(os.getpid(), tuple(self._warm_ups)),
                )
            except (OSError, ValueError) as e:
                logger.warning("no analysis process pool (%s); analysing inline", e)
                self._unavailable = True
                return None
        return self._executor

    def warm(self) -> set[int]:
        """Start every worker and run its warm-ups now, blocking; return the workers' pids.

        One short task per worker, each holding its worker a moment, so that every
        worker (not the first one over and over) has started and imported its
        analysers. A busy host can leave a worker unscheduled for longer than the
        hold, and its sibling takes two tasks: then another round, holding twice
        as long, until every worker has answered or ``WARM_S`` has passed (a
        worker still starting then runs its warm-ups before its first task all
        the same). Without a pool there is nothing to start.
        """
        executor = self.executor()
        if executor is None:
            return set()
        answered: set[int] = set()
        hold = 0.05
        deadline = time.monotonic() + self.WARM_S
        try:
            while True:
                futures = [executor.submit(_hold, hold) for _ in range(self.workers)]
                answered |= {future.result() for future in futures}
                if len(answered) >= self.workers or time.monotonic() > deadline:
                    return answered
                hold *= 2
        except Exception as e:  # BrokenProcessPool, or workers that cannot start at all
            # Not fatal: the next use starts a fresh pool, or analyses inline.
            logger.warning("analysis workers did not start (%s): %s", type(e).__name__, e)
            self.discard(executor)
            return set()

    @property
    def running(self) -> bool:
        """Whether worker processes have been started and not stopped since."""
        return self._executor is not None

    def discard(self, executor: Executor) -> None:
        """Forget a broken pool so that the next call starts a fresh one."""
        if self._executor is executor:
            self._executor = None
            executor.shutdown(wait=False, cancel_futures=True)

    def close(self) -> None:
        """Stop the workers now, whoever still holds a share (a later call starts new ones)."""
        if self._executor is not None:
            self._executor.shutdown(wait=True, cancel_futures=True)
            self._executor = None


_SHARED_POOL: WorkerPool | None = None


def shared_pool() -> WorkerPool:
    """Return the process-wide pool both static-analysis graders use by default."""
    global _SHARED_POOL
    if _SHARED_POOL is None:
        cores = len(os.sched_getaffinity(0))
        # With one core a worker only competes with the event loop for it.
        _SHARED_POOL = WorkerPool(cores if cores > 1 else 0)
    return _SHARED_POOL
