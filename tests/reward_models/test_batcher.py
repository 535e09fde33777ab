"""The dynamic batcher, with plain functions as the batch function (no model needed)."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from arbiter.reward_models.batcher import BatcherConfig, DynamicBatcher, plan_batches
from arbiter.reward_models.errors import (
    BatcherClosedError,
    ConfigurationError,
    DeadlineExceededError,
    QueueFullError,
)


class Recorder:
    """A batch function that records what it was given and where it ran."""

    def __init__(self, delay_s: float = 0.0, fail_on: str | None = None) -> None:
        self.batches: list[list[str]] = []
        self.threads: set[str] = set()
        self.delay_s = delay_s
        self.fail_on = fail_on

    def __call__(self, items: Sequence[str]) -> list[str]:
        self.threads.add(threading.current_thread().name)
        self.batches.append(list(items))
        if self.delay_s:
            time.sleep(self.delay_s)
        if self.fail_on is not None and self.fail_on in items:
            raise RuntimeError(f"poisoned by {self.fail_on}")
        return [item.upper() for item in items]


@given(
    lengths=st.lists(st.integers(1, 300), max_size=60),
    budget=st.integers(1, 2000),
    rows=st.integers(1, 16),
)
@settings(max_examples=200, deadline=None)
def test_plan_covers_every_item_once_within_budgets(lengths, budget, rows):
    plan = plan_batches(lengths, budget, rows)
    flat = sorted(i for batch in plan for i in batch)
    assert flat == list(range(len(lengths)))
    for batch in plan:
        assert 1 <= len(batch) <= rows
        longest = max(lengths[i] for i in batch)
        # Only a lone over-long item may break the token budget.
        assert len(batch) * longest <= budget or len(batch) == 1


def test_plan_sorts_by_length_to_cut_padding():
    lengths = [1000, 10, 1000, 10, 1000, 10]
    plan = plan_batches(lengths, 3000, 64)
    assert [sorted(lengths[i] for i in b) for b in plan] == [[10, 10, 10], [1000, 1000, 1000]]


def test_concurrent_callers_share_batches_on_a_worker_thread():
    recorder = Recorder()
    batcher = DynamicBatcher(recorder, BatcherConfig(max_batch_tokens=1000, max_wait_ms=20))

    async def go():
        return await asyncio.gather(*(batcher.submit(f"r{i}", 10) for i in range(20)))

    results = asyncio.run(go())
    assert results == [f"R{i}" for i in range(20)]
    assert len(recorder.batches) == 1  # 20 x 10 tokens fit one budget
    assert recorder.threads and threading.main_thread().name not in recorder.threads
    assert batcher.stats.requests == 20


def test_token_budget_splits_batches_and_buckets_lengths():
    recorder = Recorder()
    batcher = DynamicBatcher(recorder, BatcherConfig(max_batch_tokens=400, max_wait_ms=50))
    lengths = {f"s{i}": 10 for i in range(8)} | {f"l{i}": 200 for i in range(2)}

    async def go():
        return await asyncio.gather(*(batcher.submit(k, n) for k, n in lengths.items()))

    asyncio.run(go())
    for batch in recorder.batches:
        kinds = {item[0] for item in batch}
        assert len(kinds) == 1, f"short and long mixed in one batch: {batch}"
        assert len(batch) * max(lengths[i] for i in batch) <= 400
    assert batcher.stats.padding_efficiency == 1.0


async def until(condition: Callable[[], bool]) -> None:
    """Yield to the loop until ``condition`` holds (bounded: a hang fails the test)."""
    async with asyncio.timeout(30):
        while not condition():
            await asyncio.sleep(0)


def test_a_request_waits_for_company_then_goes_alone():
    # Waiting: with a long max_wait, a request submitted after the first one
    # still joins its batch. Not forever: a lone request with a short max_wait
    # is dispatched without company (the timeout only guards against a hang).
    recorder = Recorder()
    patient = DynamicBatcher(
        recorder, BatcherConfig(max_batch_tokens=10_000, max_batch_size=2, max_wait_ms=60_000)
    )

    async def pair():
        first = asyncio.ensure_future(patient.submit("a", 5))
        await until(lambda: patient.queued == 1)
        return await asyncio.gather(first, patient.submit("b", 5))

    assert asyncio.run(pair()) == ["A", "B"]
    assert recorder.batches == [["a", "b"]]

    lone = DynamicBatcher(Recorder(), BatcherConfig(max_batch_tokens=10_000, max_wait_ms=30))

    async def alone():
        async with asyncio.timeout(30):
            return await lone.submit("x", 5)

    assert asyncio.run(alone()) == "X"


def test_a_failing_batch_fails_exactly_its_requests():
    recorder = Recorder(fail_on="bad")
    batcher = DynamicBatcher(recorder, BatcherConfig(max_batch_tokens=20, max_wait_ms=20))

    async def go():
        # Lengths put "bad" and its partner in one budget, the others in another.
        return await asyncio.gather(
            batcher.submit("bad", 10),
            batcher.submit("partner", 10),
            batcher.submit("ok1", 15),
            batcher.submit("ok2", 15),
            return_exceptions=True,
        )

    bad, partner, ok1, ok2 = asyncio.run(go())
    assert isinstance(bad, RuntimeError) and isinstance(partner, RuntimeError)
    assert (ok1, ok2) == ("OK1", "OK2")
    assert batcher.stats.failed_batches == 1


def test_full_queue_refuses_with_a_typed_error():
    release = threading.Event()
    running = threading.Event()

    def slow(items: Sequence[str]) -> list[str]:
        running.set()
        release.wait(30)
        return list(items)

    batcher = DynamicBatcher(
        slow, BatcherConfig(max_batch_tokens=10, max_batch_size=1, max_wait_ms=0, max_queue=2)
    )

    async def go():
        first = asyncio.ensure_future(batcher.submit("a", 1))
        assert await asyncio.to_thread(running.wait, 30)  # "a" is on the worker thread
        queued = [asyncio.ensure_future(batcher.submit(x, 1)) for x in "bc"]
        await until(lambda: batcher.queued == 2)
        with pytest.raises(QueueFullError):
            await batcher.submit("d", 1)
        release.set()
        return await asyncio.gather(first, *queued)

    assert asyncio.run(go()) == ["a", "b", "c"]
    assert batcher.stats.refused == 1


def test_expired_requests_are_not_computed_and_callers_are_told():
    release = threading.Event()
    running = threading.Event()
    seen: list[str] = []

    def slow(items: Sequence[str]) -> list[str]:
        seen.extend(items)
        running.set()
        release.wait(60)
        return list(items)

    batcher = DynamicBatcher(slow, BatcherConfig(max_batch_size=1, max_wait_ms=0))

    async def go():
        first = asyncio.ensure_future(batcher.submit("first", 1))
        assert await asyncio.to_thread(running.wait, 30)
        # The worker stays busy until release is set, which happens only after
        # "late" was refused: the caller is told at its deadline, not when the
        # thread frees up (else this waits out the guard and fails).
        async with asyncio.timeout(30):
            with pytest.raises(DeadlineExceededError):
                await batcher.submit("late", 1, deadline=time.monotonic() + 0.05)
        release.set()
        await first
        # FIFO: once a request queued after "late" is done, "late" was passed over.
        return await batcher.submit("after", 1)

    assert asyncio.run(go()) == "after"
    assert seen == ["first", "after"]  # "late" expired in the queue and never ran


def test_a_deadline_already_past_is_refused():
    batcher = DynamicBatcher(Recorder())

    async def go():
        await batcher.submit("x", 1, deadline=time.monotonic() - 1)

    with pytest.raises(DeadlineExceededError):
        asyncio.run(go())


def test_close_fails_queued_requests_and_refuses_new_ones():
    batcher = DynamicBatcher(Recorder(), BatcherConfig(max_batch_tokens=10_000, max_wait_ms=5000))

    async def go():
        pending = asyncio.ensure_future(batcher.submit("x", 1))
        await until(lambda: batcher.queued == 1)
        await batcher.close()
        with pytest.raises(BatcherClosedError):
            await pending
        with pytest.raises(BatcherClosedError):
            await batcher.submit("y", 1)

    asyncio.run(go())


def test_a_batcher_survives_a_new_event_loop():
    batcher = DynamicBatcher(Recorder(), BatcherConfig(max_wait_ms=1))
    assert asyncio.run(batcher.submit("a", 1)) == "A"
    assert asyncio.run(batcher.submit("b", 1)) == "B"


def test_the_oldest_request_is_not_starved_by_short_ones():
    recorder = Recorder(delay_s=0.01)
    batcher = DynamicBatcher(
        recorder, BatcherConfig(max_batch_tokens=100, max_batch_size=4, max_wait_ms=0)
    )

    async def go():
        long = asyncio.ensure_future(batcher.submit("long", 90))
        shorts = [asyncio.ensure_future(batcher.submit(f"s{i}", 5)) for i in range(40)]
        await long
        done_shorts = sum(s.done() for s in shorts)
        await asyncio.gather(*shorts)
        return done_shorts

    assert asyncio.run(go()) < 40
    assert recorder.batches[0] == ["long"]


@pytest.mark.parametrize("kwargs", [{"max_batch_tokens": 0}, {"max_queue": 0}, {"max_wait_ms": -1}])
def test_bad_config_is_refused(kwargs):
    with pytest.raises(ConfigurationError):
        BatcherConfig(**kwargs)
