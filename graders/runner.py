"""Run many grader jobs concurrently, each under its own deadline.

Every job ends in exactly one :class:`GradeResult`. A grader that raises, hangs,
or returns something that is not a valid result becomes a typed failure on that
one component; the batch goes on. The failure is recorded once, here.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
from collections.abc import Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from arbiter.graders.base import Grader, GraderConfig
from arbiter.graders.credit import credit_listener
from arbiter.graders.types import FailureKind, GradeResult, Sample

__all__ = ["GraderJob", "current_batch", "run_inline", "run_job", "run_jobs"]

logger = logging.getLogger("arbiter.graders.runner")


@dataclass(frozen=True, slots=True)
class GraderJob:
    """One (sample x component) to grade."""

    sample: Sample
    component: str
    grader: Grader[Any]
    config: GraderConfig
    timeout_s: float


def _failed(
    job: GraderJob, kind: FailureKind, message: str, started: float, *, retryable: bool = False
) -> GradeResult:
    return job.grader.failed(
        kind, message, retryable=retryable, latency_s=time.perf_counter() - started
    )


def _crashed(job: GraderJob, error: Exception, started: float) -> GradeResult:
    """Turn an exception out of a grader into its failure, logged here and only here."""
    if isinstance(error, ValidationError):
        # A grader that tried to build an invalid result (a score outside [0, 1],
        # NaN) has a bug; the sample is not to blame and must not get a number.
        logger.warning(
            "grader %s produced an invalid result for sample %s: %s",
            job.grader.name,
            job.sample.id,
            error,
        )
        return _failed(
            job, FailureKind.INVALID_SCORE, f"grader produced an invalid result: {error}", started
        )
    logger.warning(
        "grader %s raised on sample %s (component %s)",
        job.grader.name,
        job.sample.id,
        job.component,
        exc_info=error,
    )
    return _failed(job, FailureKind.GRADER_ERROR, f"{type(error).__name__}: {error}", started)


def _stamped(job: GraderJob, result: object, started: float) -> GradeResult:
    """Check what a grader returned and stamp its provenance and latency."""
    if not isinstance(result, GradeResult):
        return _failed(
            job,
            FailureKind.INVALID_SCORE,
            f"grader returned {type(result).__name__}, expected GradeResult",
            started,
        )
    # model_copy, not a new validated model: the grader's result was validated
    # when it was built, and stamping provenance cannot make it invalid.
    return result.model_copy(
        update={
            "grader": job.grader.name,
            "grader_version": job.grader.version,
            "latency_s": time.perf_counter() - started,
        }
    )


def _too_late(job: GraderJob, started: float) -> GradeResult:
    return _failed(
        job, FailureKind.TIMEOUT, "the request deadline passed before this grader started", started
    )


class _JobClock:
    """A job's timeout, moved later by the wait for a CPU credited to its sandbox runs.

    The sandbox credits a run that the host kept off the CPU (see
    :mod:`arbiter.graders.sandbox.clock`), and :func:`arbiter.graders.credit.ours`
    our own work; the job that waits moves by as much, never past the request's
    own deadline.

    Credit arrives from any thread, about ten times a grading. It is added up
    here and applied to the timeout once, shortly before the timeout would fire
    (:data:`APPLY_BEFORE_S`), and again each time that moves it; from then on a
    credit moves the timeout at once. A job that ends first never touches its
    timeout, and none wakes the event loop for a credit it does not need yet.
    """

    #: How long before the timeout's moment the credit so far is applied.
    APPLY_BEFORE_S = 0.25

    def __init__(self, timeout: asyncio.Timeout, request_deadline: float | None) -> None:
        self._timeout = timeout
        self._loop = asyncio.get_running_loop()
        self._limit = request_deadline
        self._lock = threading.Lock()
        self._pending = 0.0
        self._direct = False
        self._handle: asyncio.TimerHandle | None = None
        self._arm()

    def extend(self, seconds: float) -> None:
        """Move the timeout ``seconds`` later (from any thread)."""
        with self._lock:
            if not self._direct:
                self._pending += seconds
                return
        with contextlib.suppress(RuntimeError):  # the loop has closed: nothing waits
            self._loop.call_soon_threadsafe(self._move, seconds)

    def close(self) -> None:
        """The job is over: nothing is applied any more (on the loop's thread)."""
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None

    def _arm(self) -> None:
        when = self._timeout.when()
        if when is None or self._timeout.expired():
            return
        self._handle = self._loop.call_at(when - self.APPLY_BEFORE_S, self._apply)

    def _apply(self) -> None:
        self._handle = None
        with self._lock:
            seconds, self._pending = self._pending, 0.0
            # Nothing credited yet: a credit from now on cannot wait for the next apply.
            self._direct = seconds == 0.0
        if seconds:
            self._move(seconds)
            self._arm()

    def _move(self, seconds: float) -> None:
        when = self._timeout.when()
        if when is None or self._timeout.expired():
            return
        later = when + seconds
        if self._limit is not None:
            # The loop's clock is time.monotonic(), as the request's deadline is.
            later = min(later, self._limit)
        with contextlib.suppress(RuntimeError):  # the job ended in the meantime
            self._timeout.reschedule(max(when, later))


#: Tries of a job whose grader's own deadline passed (an infrastructure failure).
INFRA_TRIES = 2


async def run_job(job: GraderJob, *, deadline: float | None = None) -> GradeResult:
    """Grade one job; never raises except on cancellation of the caller.

    The job's own ``timeout_s`` bounds our work on it (queueing, a worker's
    start, the analysis): a grader measures the candidate's work with the
    candidate's own clock (the sandbox's CPU time), so overrunning this bound is
    an ``infra_timeout``, tried once more while the request's deadline allows,
    never the candidate's ``timeout``.

    Args:
        job: what to grade.
        deadline: an absolute ``time.monotonic()`` after which the job is cut
            short with a ``timeout`` failure, whatever its own timeout says.
    """
    if job.grader.inline:
        return run_inline(job, deadline=deadline)
    started = time.perf_counter()
    result: GradeResult | None = None
    for _ in range(INFRA_TRIES):
        timeout_s = job.timeout_s
        cut_by_request = False
        if deadline is not None and deadline - time.monotonic() < timeout_s:
            timeout_s, cut_by_request = deadline - time.monotonic(), True
        if timeout_s <= 0:
            return result if result is not None else _too_late(job, started)
        try:
            async with asyncio.timeout(timeout_s) as cm:
                clock = _JobClock(cm, deadline)
                token = credit_listener.set(clock.extend)
                try:
                    graded = await job.grader.grade(job.sample, job.config)
                finally:
                    credit_listener.reset(token)
                    clock.close()
        except TimeoutError:
            if cut_by_request:
                message = f"the request's deadline passed after {timeout_s:.3g} s"
                return _failed(job, FailureKind.TIMEOUT, message, started, retryable=True)
            message = f"no result within the grader's {timeout_s:.3g} s (ours, not the candidate's)"
            result = _failed(job, FailureKind.INFRA_TIMEOUT, message, started, retryable=True)
            continue
        except Exception as e:
            return _crashed(job, e, started)
        return _stamped(job, graded, started)
    assert result is not None
    return result


def run_inline(job: GraderJob, *, deadline: float | None = None) -> GradeResult:
    """Grade a job of an inline grader now, without a task or a timer (see ``Grader.inline``)."""
    started = time.perf_counter()
    if deadline is not None and deadline <= time.monotonic():
        return _too_late(job, started)
    try:
        result = job.grader.grade_inline(job.sample, job.config)
    except Exception as e:
        return _crashed(job, e, started)
    return _stamped(job, result, started)


async def run_jobs(
    jobs: Sequence[GraderJob],
    *,
    deadline: float | None = None,
    max_concurrency: int | None = None,
) -> list[GradeResult]:
    """Grade every job concurrently; results come back in the order of ``jobs``.

    Args:
        jobs: the (sample x component) jobs.
        deadline: absolute ``time.monotonic()`` bound for the whole batch.
        max_concurrency: at most this many jobs in flight (``None``: no bound).
    """
    token = _BATCH.set(object())  # one batch: what its jobs may share (see current_batch)
    try:
        return await _run_jobs(jobs, deadline, max_concurrency)
    finally:
        _BATCH.reset(token)


#: The batch (one :func:`run_jobs` call) a job belongs to.
_BATCH: ContextVar[object | None] = ContextVar("arbiter_batch", default=None)


def current_batch() -> object | None:
    """The batch the running job belongs to (None outside :func:`run_jobs`).

    Two components of one sample that read the same grading share it within
    their batch only: a sample graded again (an audit's second pass) is graded again.
    """
    return _BATCH.get()


async def _run_jobs(
    jobs: Sequence[GraderJob], deadline: float | None, max_concurrency: int | None
) -> list[GradeResult]:
    results: list[GradeResult | None] = [None] * len(jobs)
    pending: list[tuple[int, GraderJob]] = []
    for i, job in enumerate(jobs):
        if job.grader.inline:
            results[i] = run_inline(job, deadline=deadline)
        else:
            pending.append((i, job))
    if not pending:
        return [r for r in results if r is not None]
    if max_concurrency is None:
        done = await asyncio.gather(*(run_job(job, deadline=deadline) for _, job in pending))
        for (i, _), result in zip(pending, done, strict=True):
            results[i] = result
        return [r for r in results if r is not None]

    gate = asyncio.Semaphore(max_concurrency)

    async def bounded(job: GraderJob) -> GradeResult:
        async with gate:
            return await run_job(job, deadline=deadline)

    done = await asyncio.gather(*(bounded(job) for _, job in pending))
    for (i, _), result in zip(pending, done, strict=True):
        results[i] = result
    return [r for r in results if r is not None]
