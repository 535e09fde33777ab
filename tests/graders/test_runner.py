"""The runner: every job ends in one result; a broken grader never sinks the batch."""

from __future__ import annotations

import asyncio
import contextvars
import time
from typing import ClassVar

import pytest

from arbiter.graders.base import Grader, GraderConfig
from arbiter.graders.credit import ours
from arbiter.graders.runner import GraderJob, run_job, run_jobs
from arbiter.graders.types import FailureKind, GradeResult, Sample


class Behaviour(GraderConfig):
    mode: str = "ok"
    delay_s: float = 0.0


class Scripted(Grader[Behaviour]):
    """Does what its config says: score, raise, hang, or return garbage."""

    name: ClassVar[str] = "scripted"
    version: ClassVar[str] = "7"
    config_model = Behaviour

    async def grade(self, sample: Sample, config: Behaviour) -> GradeResult:
        if config.mode != "queued":
            await asyncio.sleep(config.delay_s)
        if config.mode == "raise":
            raise RuntimeError("boom")
        if config.mode == "hang":
            await asyncio.sleep(3600)
        if config.mode == "garbage":
            return GradeResult(grader="x", score=1.5)  # invalid: raises ValidationError here
        if config.mode == "wrong_type":
            return 0.5  # type: ignore[return-value]
        if config.mode == "queued":
            # Our own work (a queue, a compile) in a thread, longer than the job's timeout.
            def queued() -> None:
                with ours():
                    time.sleep(config.delay_s)

            context = contextvars.copy_context()
            await asyncio.get_running_loop().run_in_executor(None, context.run, queued)
        return self.scored(float(sample.id) / 10)


def job(
    sample_id: str = "5", mode: str = "ok", timeout_s: float = 5.0, delay_s: float = 0.0
) -> GraderJob:
    return GraderJob(
        sample=Sample(id=sample_id, response="r"),
        component="c",
        grader=Scripted(),
        config=Behaviour(mode=mode, delay_s=delay_s),
        timeout_s=timeout_s,
    )


@pytest.mark.parametrize(
    ("mode", "kind", "message"),
    [
        ("raise", FailureKind.GRADER_ERROR, "RuntimeError: boom"),
        # The grader's own deadline is ours: an infrastructure failure, tried twice.
        ("hang", FailureKind.INFRA_TIMEOUT, "no result within the grader's"),
        ("garbage", FailureKind.INVALID_SCORE, "invalid result"),
        ("wrong_type", FailureKind.INVALID_SCORE, "returned float"),
    ],
)
def test_failures_become_typed_results(mode, kind, message):
    result = asyncio.run(run_job(job(mode=mode, timeout_s=0.2)))
    assert result.score is None
    assert result.failure is not None and result.failure.kind is kind
    assert message in result.failure.message
    assert (result.grader, result.grader_version) == ("scripted", "7")


def test_results_keep_job_order_and_failures_stay_local():
    jobs = [job("1"), job("2", mode="raise"), job("3", mode="hang", timeout_s=0.2), job("4")]
    results = asyncio.run(run_jobs(jobs))
    assert [r.score for r in results] == [0.1, None, None, 0.4]
    assert [r.failure.kind if r.failure else None for r in results] == [
        None,
        FailureKind.GRADER_ERROR,
        FailureKind.INFRA_TIMEOUT,
        None,
    ]


def test_an_infrastructure_timeout_is_tried_again_and_a_second_try_can_score():
    calls = 0

    class SlowOnce(Scripted):
        async def grade(self, sample: Sample, config: Behaviour) -> GradeResult:
            nonlocal calls
            calls += 1
            if calls == 1:
                await asyncio.sleep(10)  # a worker that was still starting
            return self.scored(0.7)

    result = asyncio.run(
        run_job(GraderJob(Sample(id="s", response="r"), "c", SlowOnce(), Behaviour(), 0.2))
    )
    assert (result.score, calls) == (0.7, 2)


def test_jobs_run_concurrently():
    # Each job waits until all ten have started: run one after another, they
    # would all time out instead.
    started = 0
    everyone_in: asyncio.Event | None = None

    class Barrier(Scripted):
        async def grade(self, sample: Sample, config: Behaviour) -> GradeResult:
            nonlocal started
            assert everyone_in is not None
            started += 1
            if started == 10:
                everyone_in.set()
            await everyone_in.wait()
            return self.scored(0.5)

    async def go() -> list[GradeResult]:
        nonlocal everyone_in
        everyone_in = asyncio.Event()
        jobs = [
            GraderJob(Sample(id=str(i), response="r"), "c", Barrier(), Behaviour(), 2.0)
            for i in range(10)
        ]
        return await run_jobs(jobs)

    results = asyncio.run(go())
    assert [r.score for r in results] == [0.5] * 10


def test_batch_deadline_cuts_slow_graders_but_keeps_fast_ones():
    async def go() -> list[GradeResult]:
        deadline = time.monotonic() + 0.3
        return await run_jobs([job("1"), job("2", mode="hang")], deadline=deadline)

    fast, slow = asyncio.run(go())
    assert fast.score == 0.1
    assert slow.failure is not None and slow.failure.kind is FailureKind.TIMEOUT


def test_deadline_already_past():
    result = asyncio.run(run_job(job(), deadline=time.monotonic() - 1))
    assert result.failure is not None and result.failure.kind is FailureKind.TIMEOUT


def test_max_concurrency_bounds_jobs_in_flight():
    in_flight = 0
    peak = 0

    class Counting(Scripted):
        async def grade(self, sample: Sample, config: Behaviour) -> GradeResult:
            nonlocal in_flight, peak
            in_flight += 1
            peak = max(peak, in_flight)
            await asyncio.sleep(0.01)
            in_flight -= 1
            return self.scored(0.5)

    jobs = [
        GraderJob(Sample(id=str(i), response="r"), "c", Counting(), Behaviour(), 5.0)
        for i in range(20)
    ]
    results = asyncio.run(run_jobs(jobs, max_concurrency=3))
    assert len(results) == 20 and peak == 3


class InlineScripted(Scripted):
    """A pure grader taking the inline path: no task, no timer."""

    inline: ClassVar[bool] = True

    def grade_inline(self, sample: Sample, config: Behaviour) -> GradeResult:
        if config.mode == "raise":
            raise ValueError("bad metric")
        if config.mode == "garbage":
            return GradeResult(grader="x", score=-1.0)
        return self.scored(float(sample.id) / 10)


@pytest.mark.parametrize(
    ("mode", "score", "kind"),
    [
        ("ok", 0.5, None),
        ("raise", None, FailureKind.GRADER_ERROR),
        ("garbage", None, FailureKind.INVALID_SCORE),
    ],
)
def test_inline_graders_fail_the_same_way(mode, score, kind):
    job = GraderJob(Sample(id="5", response="r"), "c", InlineScripted(), Behaviour(mode=mode), 5.0)
    (result,) = asyncio.run(run_jobs([job]))
    assert result.score == score
    assert (result.failure.kind if result.failure else None) == kind
    assert result.grader_version == "7"


def test_inline_and_async_jobs_keep_their_order():
    jobs = [
        GraderJob(Sample(id="1", response="r"), "c", InlineScripted(), Behaviour(), 5.0),
        job("2", delay_s=0.01),
        GraderJob(Sample(id="3", response="r"), "c", InlineScripted(), Behaviour(), 5.0),
    ]
    assert [r.score for r in asyncio.run(run_jobs(jobs, max_concurrency=2))] == [0.1, 0.2, 0.3]


@pytest.mark.parametrize(("timeout_s", "delay_s"), [(0.6, 1.5), (1.5, 3.6)])
def test_our_own_work_moves_the_jobs_deadline_as_it_passes(timeout_s, delay_s) -> None:
    # A grading that waits on our work (a compile queue, say) longer than its job's
    # timeout: the wait is ours, so the job is not ended as an infra_timeout. The
    # second waits past a deadline the credit so far has already moved once.
    result = asyncio.run(run_job(job(mode="queued", timeout_s=timeout_s, delay_s=delay_s)))
    assert result.score == 0.5, result.failure
    # Outside ``ours`` the same wait is the job's, and its deadline holds.
    result = asyncio.run(run_job(job(mode="ok", timeout_s=0.6, delay_s=1.5)))
    assert result.failure is not None and result.failure.kind == FailureKind.INFRA_TIMEOUT
