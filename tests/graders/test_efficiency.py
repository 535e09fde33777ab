"""The efficiency grader: shapes, combination, and what it does without metrics."""

from __future__ import annotations

import asyncio
import math

import pytest
from pydantic import ValidationError

from arbiter.graders.efficiency import (
    Budget,
    EfficiencyConfig,
    EfficiencyGrader,
    measure,
    score_efficiency,
    shape_score,
)
from arbiter.graders.types import FailureKind, Sample

B = Budget(limit=10, target=2)


@pytest.mark.parametrize(
    ("shape", "usage", "expected"),
    [
        ("linear", 0, 1.0),
        ("linear", 2, 1.0),
        ("linear", 6, 0.5),
        ("linear", 10, 0.0),
        ("linear", 50, 0.0),
        ("exponential", 2, 1.0),
        ("exponential", 6, math.exp(-1.5)),
        ("exponential", 10, math.exp(-3.0)),
        ("exponential", 18, math.exp(-6.0)),
        ("step", 10, 1.0),
        ("step", 10.5, 0.0),
    ],
)
def test_shapes(shape, usage, expected):
    assert shape_score(usage, B, shape, rate=3.0) == pytest.approx(expected)


@pytest.mark.parametrize(
    ("combine", "expected"),
    # turns 2 of 8 -> 0.75 (weight 1); tokens 500 of 1000 -> 0.5 (weight 3)
    [("mean", (0.75 * 1 + 0.5 * 3) / 4), ("min", 0.5), ("product", 0.375)],
)
def test_combination(combine, expected):
    config = EfficiencyConfig(
        combine=combine,
        max_turns={"limit": 8, "weight": 1},
        max_completion_tokens={"limit": 1000, "weight": 3},
    )
    result = score_efficiency({"turns": 2, "completion_tokens": 500}, config)
    assert result.score == pytest.approx(expected)
    assert set(result.terms) == {"turns", "completion_tokens"}


def test_bare_number_is_a_limit():
    assert EfficiencyConfig(max_turns=8).budgets() == {"turns": Budget(limit=8)}


def test_per_budget_shape_overrides_the_default():
    config = EfficiencyConfig(shape="linear", max_wall_s={"limit": 10, "shape": "step"})
    assert score_efficiency({"wall_s": 9.0}, config).score == 1.0


def test_missing_metric_is_skipped_or_fails():
    skip = EfficiencyConfig(max_turns=8, max_tool_calls=4)
    result = score_efficiency({"turns": 4, "tool_calls": None}, skip)
    assert result.score == pytest.approx(0.5) and result.missing == ("tool_calls",)
    strict = EfficiencyConfig(max_turns=8, max_tool_calls=4, missing_metric="fail")
    assert score_efficiency({"turns": 4, "tool_calls": None}, strict).score is None


@pytest.mark.parametrize(
    "bad",
    [
        {},
        {"max_turns": 0},
        {"max_turns": -3},
        {"max_turns": {"limit": 4, "target": 4}},
        {"max_turns": {"limit": float("inf")}},
        {"max_turns": 4, "unknown": 1},
        {"max_turns": {"limit": 4, "weight": 0}},
    ],
)
def test_bad_configs_are_rejected(bad):
    with pytest.raises(ValidationError):
        EfficiencyConfig.model_validate(bad)


def test_usage_falls_back_to_the_trajectory():
    sample = Sample.model_validate(
        {
            "id": "t",
            "response": "done",
            "metrics": {"prompt_tokens": 10, "completion_tokens": 5},
            "trajectory": [
                {"role": "user", "content": "go"},
                {
                    "role": "assistant",
                    "tool_calls": [{"id": "1", "function": {"name": "ls"}}, {"id": "2"}],
                },
                {"role": "tool", "tool_call_id": "1", "content": "a"},
                {"role": "assistant", "content": "done"},
            ],
        }
    )
    usage = measure(sample)
    assert usage["turns"] == 2 and usage["tool_calls"] == 2 and usage["total_tokens"] == 15


def test_grader_without_any_metric_fails_with_missing_input():
    grader = EfficiencyGrader()
    result = asyncio.run(grader.grade(Sample(id="x", response="r"), EfficiencyConfig(max_turns=8)))
    assert result.score is None
    assert result.failure is not None and result.failure.kind is FailureKind.MISSING_INPUT


def test_grader_scores_and_explains():
    grader = EfficiencyGrader()
    sample = Sample.model_validate({"id": "x", "response": "r", "metrics": {"turns": 6}})
    result = asyncio.run(
        grader.grade(sample, EfficiencyConfig(max_turns={"limit": 10, "target": 2}))
    )
    assert result.score == pytest.approx(0.5)
    assert result.details["terms"]["turns"]["usage"] == 6
    assert result.grader == "efficiency" and result.grader_version == grader.version
