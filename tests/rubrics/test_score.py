"""score_samples: rubric → jobs → results → rewards, end to end with real graders."""

from __future__ import annotations

import asyncio
from typing import ClassVar

import pytest

from arbiter.graders.base import Grader, GraderConfig
from arbiter.graders.efficiency import EfficiencyGrader
from arbiter.graders.registry import GraderRegistry, UnknownGraderError
from arbiter.graders.types import FailureKind, GradeResult, Sample
from arbiter.rubrics import build_rubric, score_samples


class Flaky(Grader[GraderConfig]):
    name: ClassVar[str] = "flaky"
    version: ClassVar[str] = "1"
    config_model = GraderConfig

    async def grade(self, sample: Sample, config: GraderConfig) -> GradeResult:
        if sample.id.startswith("crash"):
            raise ConnectionError("judge unreachable")
        return self.scored(1.0)


@pytest.fixture
def registry() -> GraderRegistry:
    registry = GraderRegistry()
    registry.register(EfficiencyGrader)
    registry.register(Flaky)
    return registry


def sample(sample_id: str, turns: int, group: str | None = None) -> Sample:
    return Sample.model_validate(
        {
            "id": sample_id,
            "group_id": group,
            "prompt": "p",
            "response": "r",
            "metrics": {"turns": turns},
        }
    )


def test_a_crashing_grader_is_a_failure_on_its_component_only(registry):
    rubric = build_rubric(
        {
            "name": "mix",
            "version": 1,
            "components": {
                "eff": {"grader": "efficiency", "weight": 0.5, "config": {"max_turns": 10}},
                "judge": {"grader": "flaky", "weight": 0.5},
            },
            "on_missing": "renormalize",
        },
        registry=registry,
    )
    ok, crashed = asyncio.run(
        score_samples(rubric, [sample("ok", 5), sample("crash-1", 5)], registry=registry)
    )
    assert ok.reward == pytest.approx(0.75)
    # A grader's crash is ours: the reward abstains, never renormalized over eff alone.
    assert crashed.reward is None
    assert crashed.abstain_reason is not None and "infrastructure" in crashed.abstain_reason
    failure = crashed.components["judge"].failure
    assert failure is not None and failure.kind is FailureKind.GRADER_ERROR
    assert "renormalized" not in crashed.flags


def test_group_normalization_across_the_batch(registry):
    rubric = build_rubric(
        {
            "name": "grpo",
            "version": 1,
            "components": {"eff": {"grader": "efficiency", "config": {"max_turns": 10}}},
            "normalize": "group_z",
        },
        registry=registry,
    )
    batch = [sample("a1", 2, "a"), sample("a2", 8, "a"), sample("b1", 5, "b"), sample("b2", 5, "b")]
    rewards = asyncio.run(score_samples(rubric, batch, registry=registry))
    assert [r.reward for r in rewards] == pytest.approx([1.0, -1.0, 0.0, 0.0])
    assert [r.raw_reward for r in rewards] == pytest.approx([0.8, 0.2, 0.5, 0.5])
    assert [r.id for r in rewards] == ["a1", "a2", "b1", "b2"]


def test_unknown_grader_is_a_load_error_with_a_suggestion(registry):
    with pytest.raises(Exception, match="did you mean 'flaky'"):
        build_rubric(
            {"name": "x", "version": 1, "components": {"j": {"grader": "flakey"}}},
            registry=registry,
        )
    with pytest.raises(UnknownGraderError):
        registry.get("flakey")
