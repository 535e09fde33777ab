"""The analysis cache of the static-analysis graders (bandit, radon), and their shared failures.

Results are cached in a bounded LRU keyed by the code's sha256 and the options
that change the analysis; identical code in flight is analysed once. Analyses
run on the event loop's thread, or in chunks on a process pool when enough are
queued (or the code is long) for the pool (:mod:`arbiter.graders.analysis_pool`) to
pay for its round trips.
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
from collections.abc import Callable, Hashable
from concurrent.futures import Executor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, Literal, Protocol, TypeVar

from cachetools import LRUCache

from arbiter.graders.analysis_pool import WarmUp, WorkerPool
from arbiter.graders.code import ExtractedCode
from arbiter.graders.program import assemble_program
from arbiter.graders.types import FailureKind, GradeResult

if TYPE_CHECKING:
    from arbiter.graders.base import Grader

__all__ = [
    "Analysis",
    "AnalysisUnavailableError",
    "AnalyzerStats",
    "StaticAnalyzer",
    "analyse_response",
    "candidate_fault",
]

OptionsT = TypeVar("OptionsT", bound=Hashable)
ResultT = TypeVar("ResultT")


class AnalysisUnavailableError(RuntimeError):
    """The analysis could not run (a pool worker died); the code is not to blame."""


def _analyze_many(
    analyze: Callable[[str, OptionsT], ResultT], items: list[tuple[str, OptionsT]]
) -> list[ResultT]:
    """Analyse a chunk in a pool worker (``analyze`` must be a module-level function)."""
    return [analyze(code, options) for code, options in items]


@dataclass
class AnalyzerStats:
    """Counters, for tests and for the service's metrics."""

    hits: int = 0
    misses: int = 0
    offloaded: int = 0
    deduplicated: int = 0


class StaticAnalyzer(Generic[OptionsT, ResultT]):
    """Run a pure ``analyze(code, options)`` with a bounded LRU cache keyed by code hash.

    Identical code in flight at the same time is analysed once (a GRPO group
    often repeats an answer). Work goes to the process pool only when it pays:
    when at least ``offload_at`` analyses are queued (a large batch) or the code
    has at least ``offload_lines`` lines or ``offload_chars`` characters (one
    long response must not stall the event loop: bandit's and radon's costs grow
    faster than linearly with the length of a statement). Offloaded work
    travels in chunks, one round trip per chunk: a typical answer costs about as
    much to analyse as a round trip to another process, so a few queued
    analyses are cheaper inline and one file per round trip would pay the trip
    for each.
    """

    def __init__(
        self,
        analyze: Callable[[str, OptionsT], ResultT],
        *,
        cache_size: int = 4096,
        pool: WorkerPool | None = None,
        offload_at: int = 8,
        offload_lines: int = 300,
        offload_chars: int = 20_000,
        max_chunk: int = 32,
        warm_up: WarmUp | None = None,
    ) -> None:
        """Wrap ``analyze``; with a pool, take a share of it until :meth:`close`.

        Args:
            analyze: the pure analysis, a module-level function (it is sent to workers).
            cache_size: results kept (LRU); 0 keeps none.
            pool: the process pool to offload to; ``None`` analyses inline.
            offload_at: queued analyses from which work goes to the pool.
            offload_lines: lines from which one response goes to the pool.
            offload_chars: characters from which one response goes to the pool.
            max_chunk: most analyses sent in one round trip.
            warm_up: run in each fresh pool worker before its first task.
        """
        if cache_size < 0:
            raise ValueError("cache_size must be >= 0")
        self._analyze = analyze
        self._cache_size = cache_size
        # maxsize 0 would refuse every entry with an error; keep none instead.
        self._cache: LRUCache[tuple[bytes, OptionsT], ResultT] = LRUCache(max(1, cache_size))
        self._inflight: dict[tuple[bytes, OptionsT], asyncio.Task[ResultT]] = {}
        self._pool = pool
        self._offload_at = offload_at
        self._offload_lines = offload_lines
        self._offload_chars = offload_chars
        self._max_chunk = max_chunk
        self._queued = 0
        self._batch: list[tuple[str, OptionsT, asyncio.Future[ResultT]]] = []
        self.stats = AnalyzerStats()
        self._holds_pool = pool is not None
        self._warm_up = warm_up
        if pool is not None:
            pool.acquire(warm_up)

    async def run(self, code: str, options: OptionsT) -> tuple[ResultT, bool]:
        """Return the analysis of ``code`` and whether it came from the cache.

        Raises:
            AnalysisUnavailableError: a pool worker died while analysing.
        """
        key = (hashlib.sha256(code.encode("utf-8", "surrogatepass")).digest(), options)
        hit = self._cache.get(key)
        if hit is not None:
            self.stats.hits += 1
            return hit, True
        task = self._inflight.get(key)
        if task is None:
            self.stats.misses += 1
            # Counted now, before the task first runs: every job of a batch that
            # asyncio.gather starts registers before any of them picks a path.
            self._queued += 1
            task = asyncio.ensure_future(self._compute(code, options))
            self._inflight[key] = task
            task.add_done_callback(lambda t: self._settle(key, t))
            shared = False
        else:
            self.stats.deduplicated += 1
            shared = True
        # shield: a caller cut short by its deadline must not cancel the work
        # that other callers (or its own retry, through the cache) will use.
        return await asyncio.shield(task), shared

    async def _compute(self, code: str, options: OptionsT) -> ResultT:
        try:
            executor = None
            if self._pool is not None and (
                self._queued >= self._offload_at
                or len(code) >= self._offload_chars
                or code.count("\n") >= self._offload_lines
            ):
                executor = self._pool.executor()
            if executor is None:
                return self._analyze(code, options)
            self.stats.offloaded += 1
            loop = asyncio.get_running_loop()
            done: asyncio.Future[ResultT] = loop.create_future()
            self._batch.append((code, options, done))
            if len(self._batch) == 1:
                # Flush on the next loop turn, once every job of this batch has
                # queued its code: one round trip per chunk, not per file.
                loop.call_soon(self._flush, executor)
            return await done
        finally:
            self._queued -= 1

    def _flush(self, executor: Executor) -> None:
        batch, self._batch = self._batch, []
        workers = self._pool.workers if self._pool is not None else 1
        # Two chunks per worker keeps every worker busy while the slowest chunk
        # finishes; the cap bounds how long one chunk holds its results back.
        size = max(1, min(self._max_chunk, -(-len(batch) // (2 * workers))))
        loop = asyncio.get_running_loop()
        for start in range(0, len(batch), size):
            chunk = batch[start : start + size]
            items = [(code, options) for code, options, _ in chunk]
            futures = [done for _, _, done in chunk]
            try:
                pending = loop.run_in_executor(executor, _analyze_many, self._analyze, items)
            except Exception as e:  # the pool is broken, shut down, or cannot start workers
                self._fail(executor, futures, BrokenProcessPool(f"{type(e).__name__}: {e}"))
                continue
            pending.add_done_callback(functools.partial(self._deliver, executor, futures))

    def _deliver(
        self,
        executor: Executor,
        futures: list[asyncio.Future[ResultT]],
        pending: asyncio.Future[list[ResultT]],
    ) -> None:
        if pending.cancelled():
            self._fail(executor, futures, BrokenProcessPool("the pool was shut down"))
            return
        error = pending.exception()
        if error is not None:
            self._fail(executor, futures, error)
            return
        for done, result in zip(futures, pending.result(), strict=True):
            if not done.done():
                done.set_result(result)

    def _fail(
        self, executor: Executor, futures: list[asyncio.Future[ResultT]], error: BaseException
    ) -> None:
        if isinstance(error, BrokenProcessPool):
            if self._pool is not None:
                self._pool.discard(executor)
            error = AnalysisUnavailableError(f"the analysis pool failed: {error}")
        for done in futures:
            if not done.done():
                done.set_exception(error)

    def _settle(self, key: tuple[bytes, OptionsT], task: asyncio.Task[ResultT]) -> None:
        self._inflight.pop(key, None)
        if task.cancelled() or task.exception() is not None or self._cache_size == 0:
            return
        self._cache[key] = task.result()

    async def warm(self) -> None:
        """Start the pool's workers (with their warm-ups) and warm this process's analyser.

        Both are run in a thread: a first analysis here imports the analyser, and a
        pool's start waits for its workers; neither may stall the event loop.
        """
        if self._pool is not None:
            await asyncio.to_thread(self._pool.warm)
        await asyncio.to_thread(self._warm_here)

    def _warm_here(self) -> None:
        if self._warm_up is not None:
            self._warm_up()

    def clear(self) -> None:
        """Drop every cached analysis."""
        self._cache.clear()

    def close(self) -> None:
        """Give back this analyzer's share of the pool; the last share stops its workers."""
        if self._pool is not None and self._holds_pool:
            self._holds_pool = False
            self._pool.release()


class Analysis(Protocol):
    """What an analysis result says besides its findings: could the code be analysed at all."""

    @property
    def syntax_error(self) -> str | None:
        """Why the code does not parse, if it does not."""

    @property
    def unanalysable(self) -> str | None:
        """Why the analyser gave up on code that parses (too long, too deep for it)."""


AnalysisT = TypeVar("AnalysisT", bound=Analysis)


def candidate_fault(
    grader: Grader[Any],
    kind: FailureKind,
    message: str,
    *,
    fail_as_zero: bool,
    details: dict[str, Any] | None = None,
) -> GradeResult:
    """Report a failure of the candidate's own code: a 0, or unscored with ``fail_as_zero`` off.

    0.0 by default, the kind kept in ``details.failure_kind`` (as ``unit_tests`` does):
    left unscored, the candidate could trade a low score for an abstention, which a
    trainer fills with its group's mean, by writing code the analyser cannot read.
    """
    details = {**(details or {}), "failure_kind": kind.value, "message": message}
    if fail_as_zero:
        return grader.scored(0.0, details=details)
    return grader.failed(kind, message, details=details)


async def analyse_response(
    grader: Grader[Any],
    analyzer: StaticAnalyzer[OptionsT, AnalysisT],
    response: str,
    which: Literal["all", "last"],
    options: OptionsT,
    *,
    prompt: str = "",
    language: str | None = "python",
    fail_as_zero: bool = True,
) -> tuple[AnalysisT, bool, ExtractedCode] | GradeResult:
    """Extract the code and analyse it; return (analysis, cached, code) or the result to report.

    The failures are the same for every static grader. The candidate's: no code,
    code that does not parse (Python's parser refusing its depth included),
    code the analyser cannot read (too deep for its visitor, a statement too
    long), each a 0 or, with ``fail_as_zero`` off, unscored with its kind
    (:func:`candidate_fault`). Ours: a dead pool worker, retried. The prompt
    counts when the completion continues it (:mod:`arbiter.graders.program`). A
    task in another language is ``not_applicable``: the analysers read Python
    only, and a rubric leaves the component out rather than read it as 0; so is
    a task that grades no program (``language`` None: an answer, instructions).
    """
    if language is None:
        return grader.failed(
            FailureKind.NOT_APPLICABLE,
            f"{grader.name} analyses a program; this task grades none",
            details={"language": None},
        )
    if language != "python":
        return grader.failed(
            FailureKind.NOT_APPLICABLE,
            f"{grader.name} analyses Python; this task's language is {language}",
            details={"language": language},
        )
    extracted = assemble_program(prompt, response, which=which)
    if extracted is None:
        return candidate_fault(
            grader,
            FailureKind.NO_CODE,
            "the response holds no Python code",
            fail_as_zero=fail_as_zero,
        )
    try:
        analysis, cached = await analyzer.run(extracted.code, options)
    except AnalysisUnavailableError as e:
        return grader.failed(FailureKind.GRADER_ERROR, str(e), retryable=True)
    where = {"code_source": extracted.source, "truncated": extracted.truncated}
    if analysis.syntax_error is not None:
        return candidate_fault(
            grader,
            FailureKind.SYNTAX_ERROR,
            f"the code does not parse: {analysis.syntax_error}",
            fail_as_zero=fail_as_zero,
            details=where,
        )
    if analysis.unanalysable is not None:
        return candidate_fault(
            grader,
            FailureKind.UNANALYSABLE,
            analysis.unanalysable,
            fail_as_zero=fail_as_zero,
            details=where,
        )
    return analysis, cached, extracted
