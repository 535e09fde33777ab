"""Coalesce concurrent per-sample reward calls into micro-batches.

verl awaits one ``compute_score_async`` per sample (and runs its synchronous
``compute_score`` in executor threads), and OpenRLHF calls a ``.py`` reward
function once per sample from worker threads: a thousand concurrent calls,
one HTTP request each, would cost a thousand gradings' overhead and trip the
service's per-key quota (429). A call here joins the open micro-batch; the
batch is sent when ``max_samples`` have joined or ``window_s`` after its first
call, whichever comes first, so 1,024 concurrent calls cost a few batch
requests. Each caller gets its own sample's result, or its own error.

Async callers are served on their own event loop (an httpx client is bound to
the loop it was made on, so each loop gets its own); sync callers share one
background loop in a daemon thread.
"""

from __future__ import annotations

import asyncio
import threading
import weakref
from collections.abc import Awaitable, Callable
from typing import Any, Generic, TypeVar

__all__ = ["Coalescer", "SendBatch"]

ResultT = TypeVar("ResultT")
#: Sends one micro-batch; returns, per sample, its result or the error to raise for it.
SendBatch = Callable[[list[dict[str, Any]]], Awaitable[list["ResultT | BaseException"]]]


class _Batcher(Generic[ResultT]):
    """The open micro-batch of one event loop."""

    def __init__(
        self,
        send: Callable[[list[dict[str, Any]]], Awaitable[list[ResultT | BaseException]]],
        window_s: float,
        max_samples: int,
    ) -> None:
        self._send = send
        self._window_s = window_s
        self._max_samples = max_samples
        self._pending: list[tuple[dict[str, Any], asyncio.Future[ResultT]]] = []
        self._timer: asyncio.TimerHandle | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    async def submit(self, sample: dict[str, Any]) -> ResultT:
        loop = asyncio.get_running_loop()
        future: asyncio.Future[ResultT] = loop.create_future()
        self._pending.append((sample, future))
        if len(self._pending) >= self._max_samples:
            self._flush()
        elif self._timer is None:
            self._timer = loop.call_later(self._window_s, self._flush)
        return await future

    def _flush(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        batch, self._pending = self._pending, []
        if batch:
            task = asyncio.get_running_loop().create_task(self._deliver(batch))
            self._tasks.add(task)  # a task nobody references may be collected mid-flight
            task.add_done_callback(self._tasks.discard)

    async def _deliver(self, batch: list[tuple[dict[str, Any], asyncio.Future[ResultT]]]) -> None:
        try:
            results = await self._send([sample for sample, _ in batch])
            if len(results) != len(batch):
                raise RuntimeError(
                    f"the batch sender answered {len(results)} results for {len(batch)} samples"
                )
        except BaseException as e:
            # Every caller of the batch gets the error: none may wait forever.
            for _, future in batch:
                if not future.done():
                    future.set_exception(e)
            if not isinstance(e, Exception):
                raise
            return
        for (_, future), result in zip(batch, results, strict=True):
            if future.done():
                continue  # the caller was cancelled
            if isinstance(result, BaseException):
                future.set_exception(result)
            else:
                future.set_result(result)


class Coalescer(Generic[ResultT]):
    """Per-sample calls in, micro-batches out (see the module docstring).

    Args:
        make_send: Builds the batch sender for the running event loop (called
            once per loop, inside it, so it can make loop-bound clients).
        window_s: How long the first call of a batch waits for others to join.
        max_samples: A batch is sent at once when this many have joined.
    """

    def __init__(
        self,
        make_send: Callable[[], Callable[[list[dict[str, Any]]], Awaitable[list[Any]]]],
        *,
        window_s: float = 0.02,
        max_samples: int = 256,
    ) -> None:
        if window_s < 0 or max_samples < 1:
            raise ValueError(
                f"window_s must be >= 0 and max_samples >= 1; got {window_s}, {max_samples}"
            )
        self._make_send = make_send
        self._window_s = window_s
        self._max_samples = max_samples
        self._batchers: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Batcher[ResultT]] = (
            weakref.WeakKeyDictionary()
        )
        self._lock = threading.Lock()
        self._background: asyncio.AbstractEventLoop | None = None

    async def submit(self, sample: dict[str, Any]) -> ResultT:
        """Grade one sample as part of the current micro-batch; return its result."""
        loop = asyncio.get_running_loop()
        batcher = self._batchers.get(loop)
        if batcher is None:
            batcher = _Batcher(self._make_send(), self._window_s, self._max_samples)
            self._batchers[loop] = batcher
        return await batcher.submit(sample)

    def submit_sync(self, sample: dict[str, Any]) -> ResultT:
        """Grade one sample from a thread, blocking until its micro-batch is answered."""
        return asyncio.run_coroutine_threadsafe(self.submit(sample), self._loop()).result()

    def submit_all_sync(self, samples: list[dict[str, Any]]) -> list[ResultT | BaseException]:
        """Grade several samples from a thread, together; return each result or its error."""

        async def every() -> list[ResultT | BaseException]:
            return await asyncio.gather(*(self.submit(s) for s in samples), return_exceptions=True)

        return asyncio.run_coroutine_threadsafe(every(), self._loop()).result()

    def _loop(self) -> asyncio.AbstractEventLoop:
        """Return the background loop that serves sync callers (started on first use)."""
        with self._lock:
            if self._background is None:
                loop = asyncio.new_event_loop()
                threading.Thread(
                    target=loop.run_forever, name="arbiter-coalescer", daemon=True
                ).start()
                self._background = loop
            return self._background
