"""Gather requests from concurrent callers into token-budgeted, length-bucketed batches.

The batcher knows nothing about models: each request is an opaque item with a
length in tokens, and a *batch function* turns a list of items into a list of
results, one per item, in order. It runs on a dedicated thread, so a forward
pass never blocks the event loop that accepts the next requests.

How a batch is made:

* A request waits at most ``max_wait_ms`` for company. The scheduler dispatches
  as soon as the queue holds a full batch's worth of tokens, or the oldest
  request has waited that long.
* The queued requests are sorted by length and cut, in that order, into batches
  whose *padded* size (rows x longest row) stays within ``max_batch_tokens``
  and whose row count stays within ``max_batch_size``. The batch holding the
  oldest request goes first, so a long request cannot be starved by a stream of
  short ones. Sorting is what keeps padding low: peers that cut fixed batches in
  arrival order pad every short response to the longest one beside it.
* The queue is bounded (``max_queue`` requests not yet dispatched). A request
  that finds it full is refused at once with :class:`QueueFullError` — typed
  back-pressure instead of an unbounded backlog and a memory spike.
* Each request may carry a deadline (``time.monotonic()``). One that expires
  while queued is dropped without being computed; its caller gets
  :class:`DeadlineExceededError` at the deadline even if its batch is running.
* A batch function that raises fails exactly the requests of that batch.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from arbiter.reward_models.errors import (
    BatcherClosedError,
    BatcherError,
    ConfigurationError,
    DeadlineExceededError,
    QueueFullError,
)

__all__ = ["BatchStats", "BatcherConfig", "DynamicBatcher", "plan_batches"]

T = TypeVar("T")
R = TypeVar("R")


@dataclass(frozen=True, slots=True)
class BatcherConfig:
    """How requests are gathered into batches.

    Attributes:
        max_batch_tokens: bound on a batch's padded size, rows x longest row.
            A single request longer than this still runs, alone.
        max_batch_size: bound on the rows of a batch.
        max_wait_ms: how long the oldest request may wait for company.
        max_queue: requests waiting for dispatch beyond which new ones are refused.
    """

    max_batch_tokens: int = 4096
    max_batch_size: int = 64
    max_wait_ms: float = 5.0
    max_queue: int = 4096

    def __post_init__(self) -> None:
        if self.max_batch_tokens < 1 or self.max_batch_size < 1 or self.max_queue < 1:
            raise ConfigurationError(
                "max_batch_tokens, max_batch_size and max_queue must be at least 1"
            )
        if self.max_wait_ms < 0:
            raise ConfigurationError("max_wait_ms must not be negative")


@dataclass(slots=True)
class BatchStats:
    """Counters over every batch run so far."""

    batches: int = 0
    requests: int = 0
    tokens: int = 0
    padded_tokens: int = 0
    expired: int = 0
    refused: int = 0
    failed_batches: int = 0

    @property
    def padding_efficiency(self) -> float:
        """Return real tokens / padded tokens (1.0 when nothing ran)."""
        return self.tokens / self.padded_tokens if self.padded_tokens else 1.0


def plan_batches(
    lengths: Sequence[int], max_batch_tokens: int, max_batch_size: int
) -> list[list[int]]:
    """Cut items into length-sorted batches within the token and row budgets (pure).

    Args:
        lengths: each item's length in tokens.
        max_batch_tokens: bound on rows x longest row of a batch.
        max_batch_size: bound on the rows of a batch.

    Returns:
        Lists of indices into ``lengths``, each sorted by ascending length; every
        index appears exactly once.
    """
    order = sorted(range(len(lengths)), key=lambda i: lengths[i])
    batches: list[list[int]] = []
    current: list[int] = []
    for i in order:
        # Ascending order: the newcomer is the longest row, so it sets the padding.
        rows = len(current) + 1
        if current and (rows > max_batch_size or rows * lengths[i] > max_batch_tokens):
            batches.append(current)
            current = []
        current.append(i)
    if current:
        batches.append(current)
    return batches


@dataclass(eq=False, slots=True)
class _Request(Generic[T, R]):
    item: T
    length: int
    deadline: float | None
    enqueued: float
    future: asyncio.Future[R] = field(repr=False)


class DynamicBatcher(Generic[T, R]):
    """Score items from many concurrent callers in token-budgeted batches.

    The batcher binds to the event loop of its first caller. It starts its
    scheduler lazily, so it can be built before any loop exists.
    """

    def __init__(
        self,
        run_batch: Callable[[Sequence[T]], Sequence[R]],
        config: BatcherConfig | None = None,
        *,
        name: str = "batcher",
        concurrency: int = 1,
    ) -> None:
        """Build a batcher around a synchronous batch function.

        Args:
            run_batch: items in, one result per item out, in order. It runs on
                the batcher's own thread, one batch at a time.
            config: batching limits.
            name: names the worker thread (visible in stack dumps and profilers).
            concurrency: batches in flight at once (one per model replica: a
                batch function that spreads batches over replicas keeps each
                busy). With 1, the next batch forms while one runs.

        Raises:
            ConfigurationError: ``concurrency`` is below 1.
        """
        if concurrency < 1:
            raise ConfigurationError("concurrency must be at least 1")
        self.config = config or BatcherConfig()
        self.stats = BatchStats()
        self._run_batch = run_batch
        self._name = name
        self._concurrency = concurrency
        self._executor = ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix=name)
        self._running: set[asyncio.Task[None]] = set()
        self._pending: list[_Request[T, R]] = []
        self._pending_tokens = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._wakeup: asyncio.Event | None = None
        self._scheduler: asyncio.Task[None] | None = None
        self._closed = False

    @property
    def queued(self) -> int:
        """Return how many requests wait for dispatch."""
        return len(self._pending)

    async def submit(self, item: T, length: int, *, deadline: float | None = None) -> R:
        """Queue one item and wait for its result.

        Args:
            item: what the batch function receives.
            length: the item's size in tokens (what the budget counts).
            deadline: absolute ``time.monotonic()`` after which the caller stops
                waiting and the item, if not yet dispatched, is never computed.

        Raises:
            QueueFullError: the queue is full (back-pressure; retry later).
            DeadlineExceededError: the deadline passed first.
            BatcherClosedError: the batcher is, or was meanwhile, closed.
        """
        if self._closed:
            raise BatcherClosedError(f"{self._name} is closed")
        loop = self._bind()
        now = time.monotonic()
        if deadline is not None and deadline <= now:
            self.stats.expired += 1
            raise DeadlineExceededError("the deadline passed before the request was queued")
        if len(self._pending) >= self.config.max_queue:
            self.stats.refused += 1
            raise QueueFullError(
                f"{self._name}: {len(self._pending)} requests queued "
                f"(max_queue={self.config.max_queue}); retry later"
            )
        future: asyncio.Future[R] = loop.create_future()
        self._pending.append(_Request(item, max(1, length), deadline, now, future))
        self._pending_tokens += max(1, length)
        assert self._wakeup is not None
        self._wakeup.set()
        if deadline is None:
            return await future
        try:
            async with asyncio.timeout(deadline - time.monotonic()):
                # Cancelling the future on timeout tells the scheduler to skip it.
                return await future
        except TimeoutError:
            self.stats.expired += 1
            raise DeadlineExceededError(
                "the deadline passed before the request was scored"
            ) from None

    async def close(self) -> None:
        """Stop the scheduler and fail every queued request with BatcherClosedError."""
        self._closed = True
        if self._scheduler is not None and not self._scheduler.done():
            self._scheduler.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._scheduler
        self._fail_pending(BatcherClosedError(f"{self._name} closed"))
        # A batch may still be on the thread; it finishes and its results are dropped.
        self._executor.shutdown(wait=False, cancel_futures=True)

    # -- internals ----------------------------------------------------------------

    def _bind(self) -> asyncio.AbstractEventLoop:
        loop = asyncio.get_running_loop()
        if self._loop is loop and self._scheduler is not None and not self._scheduler.done():
            return loop
        if self._loop is not None and self._loop is not loop and not self._loop.is_closed():
            raise RuntimeError(f"{self._name} is bound to another event loop that is still open")
        # A new loop (say, a fresh asyncio.run): anything queued on the old one died with it.
        self._loop = loop
        self._pending = []
        self._pending_tokens = 0
        self._wakeup = asyncio.Event()
        self._scheduler = loop.create_task(self._schedule(), name=f"{self._name}-scheduler")
        return loop

    def _fail_pending(self, error: BatcherError) -> None:
        for request in self._pending:
            if not request.future.done():
                request.future.set_exception(error)
        self._pending = []
        self._pending_tokens = 0

    def _batch_ready(self) -> bool:
        return (
            self._pending_tokens >= self.config.max_batch_tokens
            or len(self._pending) >= self.config.max_batch_size
        )

    async def _schedule(self) -> None:
        assert self._wakeup is not None
        wakeup = self._wakeup
        max_wait_s = self.config.max_wait_ms / 1000
        # A batch is formed only once a place to run it is free: until then
        # requests keep gathering, and the batch that forms is fuller.
        places = asyncio.Semaphore(self._concurrency)
        try:
            while True:
                if not self._pending:
                    wakeup.clear()
                    await wakeup.wait()
                    continue
                await places.acquire()
                if not self._pending:
                    places.release()
                    continue
                oldest = self._pending[0].enqueued
                while not self._batch_ready():
                    remaining = oldest + max_wait_s - time.monotonic()
                    if remaining <= 0:
                        break
                    wakeup.clear()
                    with contextlib.suppress(TimeoutError):
                        async with asyncio.timeout(remaining):
                            await wakeup.wait()
                batch = self._take_batch()
                if not batch:
                    places.release()
                    continue
                task = asyncio.get_running_loop().create_task(self._run(batch))
                self._running.add(task)
                task.add_done_callback(self._running.discard)
                task.add_done_callback(lambda _: places.release())
        except asyncio.CancelledError:
            raise
        except BaseException as e:
            # A scheduler bug must not leave callers waiting forever.
            self._fail_pending(BatcherClosedError(f"{self._name} scheduler died: {e!r}"))
            self._closed = True
            raise

    def _take_batch(self) -> list[_Request[T, R]]:
        now = time.monotonic()
        live: list[_Request[T, R]] = []
        for request in self._pending:
            if request.future.done():  # the caller gave up (cancelled or timed out)
                continue
            if request.deadline is not None and request.deadline <= now:
                self.stats.expired += 1
                request.future.set_exception(
                    DeadlineExceededError("the deadline passed while the request was queued")
                )
                continue
            live.append(request)
        if not live:
            self._pending = []
            self._pending_tokens = 0
            return []
        plan = plan_batches(
            [r.length for r in live], self.config.max_batch_tokens, self.config.max_batch_size
        )
        # live is in arrival order, so index 0 is the oldest request.
        chosen = next(b for b in plan if 0 in b)
        taken = set(chosen)
        batch = [live[i] for i in chosen]
        self._pending = [r for i, r in enumerate(live) if i not in taken]
        self._pending_tokens = sum(r.length for r in self._pending)
        return batch

    async def _run(self, batch: list[_Request[T, R]]) -> None:
        assert self._loop is not None
        items = [r.item for r in batch]
        self.stats.batches += 1
        self.stats.requests += len(batch)
        self.stats.tokens += sum(r.length for r in batch)
        self.stats.padded_tokens += len(batch) * max(r.length for r in batch)
        try:
            results = await self._loop.run_in_executor(self._executor, self._run_batch, items)
            if len(results) != len(batch):
                raise BatcherError(
                    f"the batch function returned {len(results)} results for {len(batch)} items"
                )
        except asyncio.CancelledError:
            raise
        except Exception as e:
            # Exactly this batch's callers see its error; the next batch runs normally.
            self.stats.failed_batches += 1
            for request in batch:
                if not request.future.done():
                    request.future.set_exception(e)
            return
        for request, result in zip(batch, results, strict=True):
            if not request.future.done():
                request.future.set_result(result)
