"""What a grader actor streams back (graders.ray_executor.StreamingActor), without a cluster."""

from __future__ import annotations

import asyncio
import pickle
from typing import Any

from arbiter.graders.base import GraderConfig
from arbiter.graders.ray_executor import StreamingActor
from arbiter.graders.registry import default_registry
from arbiter.graders.types import GradeResult, Sample


class Unrebuildable(Exception):
    """An exception that pickles but cannot be unpickled (its args lack ``why``)."""

    def __init__(self, what: str, why: str) -> None:
        super().__init__(what)
        self.why = why


class Sleeper(StreamingActor):
    """Sleeps for the sample's ``wall_s``; raises what the sample's label names."""

    def __init__(self) -> None:
        self.cancelled = 0

    async def grade(self, grader: str, sample: Sample, config: Any) -> tuple[GradeResult, str]:
        raise_ = (sample.labels or {}).get("raise_")
        if raise_ == "unrebuildable":
            raise Unrebuildable("no", "because")
        if raise_ == "unknown_grader":
            default_registry().get("no_such_grader")
        try:
            await asyncio.sleep(sample.metrics.wall_s if sample.metrics else 0.0)
        except asyncio.CancelledError:
            self.cancelled += 1
            raise
        return GradeResult(grader=grader, score=1.0), "node"


def call(i: int, wall_s: float = 0.0, **labels: str) -> tuple[str, Sample, GraderConfig]:
    sample = Sample.model_validate(
        {"id": f"s{i}", "response": "", "metrics": {"wall_s": wall_s}, "labels": labels}
    )
    return "sim", sample, GraderConfig()


async def items(actor: StreamingActor, calls: list[Any]) -> list[list[Any]]:
    return [item async for item in actor.grade_many(calls)]


def test_jobs_that_finish_together_share_an_item_and_a_slow_one_does_not_wait_for_them() -> None:
    actor = Sleeper()
    streamed = asyncio.run(items(actor, [call(0), call(1), call(2), call(3, wall_s=0.3)]))
    assert [sorted(a[0] for a in item) for item in streamed] == [[0, 1, 2], [3]]
    assert all(a[1] == "ok" and a[2].score == 1.0 and a[3] == "node" for i in streamed for a in i)


def test_a_raised_error_comes_back_as_itself_when_it_can_be_rebuilt() -> None:
    actor = Sleeper()
    streamed = asyncio.run(items(actor, [call(0, raise_="unknown_grader"), call(1)]))
    answers = {a[0]: a for item in streamed for a in item}
    _, kind, error, _ = answers[0]
    assert kind == "raised"
    again = pickle.loads(pickle.dumps(error))  # what the driver gets
    assert type(again).__name__ == "UnknownGraderError" and "no_such_grader" in str(again)
    assert answers[1][1] == "ok"


def test_an_error_that_cannot_be_rebuilt_is_sent_as_a_runtime_error_saying_what_it_was() -> None:
    actor = Sleeper()
    [[(_, kind, error, _)]] = asyncio.run(items(actor, [call(0, raise_="unrebuildable")]))
    assert kind == "raised"
    again = pickle.loads(pickle.dumps(error))
    assert type(again) is RuntimeError and "Unrebuildable on the grader actor: no" in str(again)


def test_a_job_sent_alone_answers_as_one_item_would() -> None:
    actor = Sleeper()
    [(index, kind, result, node)] = asyncio.run(actor.grade_one(*call(0)))
    assert (index, kind, result.score, node) == (0, "ok", 1.0, "node")


def test_a_stream_closed_early_cancels_the_jobs_still_running() -> None:
    actor = Sleeper()

    async def first_only() -> None:
        stream = actor.grade_many([call(0), call(1, wall_s=5), call(2, wall_s=5)])
        await anext(stream)
        await stream.aclose()  # what ray.cancel does to the actor's generator
        await asyncio.sleep(0)

    asyncio.run(first_only())
    assert actor.cancelled == 2
