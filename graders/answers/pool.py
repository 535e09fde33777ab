"""Killable worker processes for checks whose time the candidate's text decides.

A power tower (``2^{2^{2^{2^{2^2}}}}``) or a 10^6-character answer can keep a
symbolic check busy for ever, inside C code that no ``signal.alarm`` reaches
from a thread (math-verify#11, #42, #65; verl PR #5635 turned the timeouts off
and training hung). So each check runs in a worker process of its own, and a
check past its limit ends with the worker: ``SIGKILL``, and a fresh worker takes
its place in the background.

The clock of a check starts when a worker takes it, never while it waits for
one (verifiers#831: a timeout that counted the queue gave false zeros at 960
parallel rollouts): a check is sent only to an idle worker, and its limit is
counted from that send, in the worker's own CPU time: a busy host that keeps
the worker off the CPU slows the check without charging it (a wall-clock
backstop, ``wall_factor`` times the limit, ends a starved check as ours,
:class:`CheckStarved`). A worker reports each phase of a check as it enters
it, so a timeout names the phase it cut (reading the gold is the task's,
reading the prediction the candidate's). Each worker's address space is
bounded, so a check that would allocate without end fails with MemoryError in
its worker, never in the service.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import multiprocessing
import os
import resource
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from typing import Any

from arbiter.graders.sandbox.lanes import cpu_time_s

__all__ = [
    "CheckCrashed",
    "CheckFailed",
    "CheckOutcome",
    "CheckPool",
    "CheckStarved",
    "CheckTimeout",
    "report_phase",
]

logger = logging.getLogger("arbiter.graders.answers.pool")

#: The connection a worker reports phases on (set in the worker only).
_PHASES: Connection | None = None


def report_phase(phase: str) -> None:
    """Tell the pool which phase the running check has entered (a no-op outside a worker)."""
    if _PHASES is not None:
        _PHASES.send(("phase", phase))


class CheckFailed(Exception):
    """A check ended without a value."""

    def __init__(self, message: str, phase: str) -> None:
        super().__init__(message)
        self.phase = phase


class CheckTimeout(CheckFailed):
    """A check ran past its limit and its worker was killed."""


class CheckCrashed(CheckFailed):
    """A check raised, or its worker died under it."""


class CheckStarved(CheckFailed):
    """A check's wall-clock backstop passed before it had used its CPU limit.

    The host kept its worker off the CPU: ours, never the candidate's. The
    worker was killed as for a timeout.
    """


@dataclass(frozen=True, slots=True)
class CheckOutcome:
    """A check's value and how long it ran in its worker (the queue not counted)."""

    value: Any
    run_s: float


def _serve(conn: Connection, warm_up: Callable[[], None] | None, memory_mb: int) -> None:
    """A worker's loop: run each check sent, answer its value or its error."""
    global _PHASES
    _PHASES = conn
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if memory_mb > 0:
        limit = memory_mb * 1024 * 1024
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    if warm_up is not None:
        warm_up()
    try:
        conn.send(("ready", os.getpid()))
    except (BrokenPipeError, OSError):
        return  # the pool closed while this worker started: nothing to serve
    while True:
        try:
            fn, kwargs = conn.recv()
        except (EOFError, OSError):
            return
        try:
            value = fn(**kwargs)
        except MemoryError:
            conn.send(("error", "MemoryError", "the check ran out of memory"))
        except RecursionError:
            conn.send(("error", "RecursionError", "the check nested too deep"))
        except Exception as e:
            conn.send(("error", type(e).__name__, str(e)[:500]))
        else:
            conn.send(("ok", value))


class _Worker:
    def __init__(self, process: BaseProcess, conn: Connection) -> None:
        self.process = process
        self.conn = conn

    def kill(self) -> None:
        with contextlib.suppress(ProcessLookupError, AttributeError, TypeError):
            if self.process.pid is not None:
                os.kill(self.process.pid, signal.SIGKILL)
        self.process.join(timeout=5)
        self.conn.close()


class CheckPool:
    """Up to ``workers`` worker processes, each running one check at a time.

    The pool starts ``initial`` workers and grows by one whenever a check finds
    none idle, up to ``workers``: a service whose rubrics name a grader it is
    never sent a sample for holds one warm process for it, not ``workers``, and a
    burst (or checks held to their limit) brings the rest up while it queues.
    A worker's start never counts against a check: the clock starts at the take.

    Args:
        workers: how many checks run at once, at most.
        warm_up: a module-level function each fresh worker runs before its first
            check (imports, a first parse), so no check pays for a start.
        memory_mb: each worker's address-space bound (0: none).
        initial: how many workers :meth:`start` brings up.
        wall_factor: a check's wall-clock backstop, as a multiple of its limit.
    """

    def __init__(
        self,
        workers: int,
        *,
        warm_up: Callable[[], None] | None = None,
        memory_mb: int = 2048,
        initial: int = 1,
        wall_factor: float = 10.0,
    ) -> None:
        if workers < 1:
            raise ValueError("a check pool needs at least one worker")
        if initial < 1:
            raise ValueError("a check pool starts at least one worker")
        self.workers = workers
        self.initial = min(initial, workers)
        self._warm_up = warm_up
        self._memory_mb = memory_mb
        self.wall_factor = max(1.0, wall_factor)
        self._context = multiprocessing.get_context("forkserver")
        self._idle: asyncio.Queue[_Worker] | None = None
        self._all: set[_Worker] = set()
        self._starting: set[asyncio.Task[None]] = set()
        self._closed = False
        self._loop: asyncio.AbstractEventLoop | None = None
        #: Counters for the grader's details and the benches.
        self.killed = 0
        self.started = 0

    def _spawn(self) -> _Worker:
        parent, child = self._context.Pipe()
        process = self._context.Process(
            target=_serve,
            args=(child, self._warm_up, self._memory_mb),
            name="arbiter-answer-check",
            daemon=True,
        )
        process.start()
        child.close()
        self.started += 1
        return _Worker(process, parent)

    async def _start_one(self) -> None:
        loop = asyncio.get_running_loop()
        worker = await loop.run_in_executor(None, self._spawn)
        try:
            message = await self._receive(worker, None)
        except CheckFailed:
            worker.kill()
            raise
        if message[0] != "ready" or self._closed:
            worker.kill()
            return
        self._all.add(worker)
        assert self._idle is not None
        self._idle.put_nowait(worker)

    async def start(self) -> None:
        """Start the first ``initial`` workers and wait until each has warmed up."""
        if self._idle is None:
            self._loop = asyncio.get_running_loop()
            self._idle = asyncio.Queue()
            await asyncio.gather(*(self._start_one() for _ in range(self.initial)))

    def _grow(self) -> None:
        """Start one more worker when a check finds none idle and the pool has room."""
        assert self._idle is not None
        if self._idle.empty() and len(self._all) + len(self._starting) < self.workers:
            self._replace()

    def _replace(self) -> None:
        if self._closed:
            return
        task = asyncio.get_running_loop().create_task(self._start_one())
        self._starting.add(task)
        task.add_done_callback(self._started)

    def _started(self, task: asyncio.Task[None]) -> None:
        self._starting.discard(task)
        if not task.cancelled() and task.exception() is not None:
            logger.warning("an answer worker failed to start: %s", task.exception())
            # Try again, or the pool shrinks for good.
            with contextlib.suppress(RuntimeError):
                self._replace()

    async def _receive(self, worker: _Worker, on_phase: Callable[[str], None] | None) -> Any:
        """Wait for the worker's next message that is not a phase report."""
        loop = asyncio.get_running_loop()
        while True:
            ready: asyncio.Future[None] = loop.create_future()
            fd = worker.conn.fileno()

            def wake(ready: asyncio.Future[None] = ready) -> None:
                if not ready.done():
                    ready.set_result(None)

            loop.add_reader(fd, wake)
            try:
                await ready
            finally:
                loop.remove_reader(fd)
            try:
                message = worker.conn.recv()
            except (EOFError, OSError) as e:
                raise CheckCrashed(f"the worker died ({e or 'no answer'})", "") from e
            if message[0] == "phase":
                if on_phase is not None:
                    on_phase(message[1])
                continue
            return message

    async def run(self, fn: Callable[..., Any], limit_s: float, **kwargs: Any) -> CheckOutcome:
        """Run ``fn(**kwargs)`` in an idle worker, killing it at ``limit_s`` of its CPU time.

        ``fn`` is a module-level function (sent by reference) whose value pickles.
        The limit counts the worker's own CPU time from the take: on a busy host
        a check waits for a core without being charged for it (a wall-clock limit
        failed an honest answer there, the candidate's 0). A wall-clock backstop,
        ``wall_factor`` times the limit, ends a check the host starved.

        Raises:
            CheckTimeout: the check used ``limit_s`` of CPU and its worker was killed.
            CheckStarved: the backstop passed first (ours); its worker was killed.
            CheckCrashed: ``fn`` raised (its type and message), or the worker died.
        """
        if self._loop is not asyncio.get_running_loop():
            # Workers wait on one loop's readers: a new loop (a new command, a test) starts anew.
            self.close()
            self._closed = False
            self._loop = asyncio.get_running_loop()
        if self._idle is None:
            await self.start()
        assert self._idle is not None
        self._grow()
        worker = await self._idle.get()
        phase = ""

        def entered(name: str) -> None:
            nonlocal phase
            phase = name

        healthy = False
        started = time.perf_counter()
        try:
            pid = worker.process.pid or 0
            # The worker's CPU time so far (0.0 where unreadable: the wall clock counts then).
            cpu = cpu_time_s(pid)
            worker.conn.send((fn, kwargs))
            started = time.perf_counter()  # the clock starts with the check, not the queue
            backstop = started + limit_s * self.wall_factor
            spent = 0.0
            while True:
                wait = min(limit_s - spent, backstop - time.perf_counter())
                try:
                    async with asyncio.timeout(max(wait, 0.01)):
                        message = await self._receive(worker, entered)
                    break
                except TimeoutError:
                    now = time.perf_counter()
                    spent = cpu_time_s(pid) - cpu if cpu else now - started
                    if spent < limit_s and now < backstop:
                        continue
                self.killed += 1
                where = f"phase: {phase or 'start'}"
                if spent >= limit_s:
                    raise CheckTimeout(
                        f"the check ran past its {limit_s:g} s limit ({where})", phase
                    )
                raise CheckStarved(
                    f"the check was kept off the CPU: {spent:.2f} s of its {limit_s:g} s "
                    f"limit used in {now - started:.1f} s ({where})",
                    phase,
                )
            run_s = time.perf_counter() - started
            healthy = True
            if message[0] == "ok":
                return CheckOutcome(message[1], run_s)
            raise CheckCrashed(f"{message[1]}: {message[2]}", phase)
        finally:
            if healthy and not self._closed:
                self._idle.put_nowait(worker)
            else:
                self._all.discard(worker)
                worker.kill()
                self._replace()

    def close(self) -> None:
        """Stop every worker now."""
        self._closed = True
        for task in list(self._starting):
            task.cancel()
        for worker in list(self._all):
            worker.kill()
        self._all.clear()
        self._idle = None
