"""A logged rollout replays turn by turn: each test run's feedback, made again beside the logged."""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest

from arbiter.graders.registry import GraderRegistry, default_registry
from arbiter.graders.types import Sample
from arbiter.replay import replay_turns, summarize_replay
from arbiter.rubrics import build_rubric
from arbiter.summary import replay_tables

TASK = {
    "kind": "python_function",
    "entry_point": "add",
    "tests": ["assert add(1, 2) == 3", "assert add(-1, 1) == 0"],
}
BUGGY = "def add(a, b):\n    return a - b\n"
FIXED = "def add(a, b):\n    return a + b\n"
RUBRIC = build_rubric(
    {
        "name": "revise",
        "version": 1,
        "components": {"tests": {"grader": "unit_tests", "config": {"timeout_s": 10}}},
    }
)


@pytest.fixture(scope="module")
def registry() -> Iterator[GraderRegistry]:
    made = default_registry()
    yield made
    made.close()


def _feedback(registry: GraderRegistry, code: str) -> str:
    sample = Sample(id="t", response=f"```python\n{code}```", task=TASK)  # type: ignore[arg-type]
    result = asyncio.run(
        registry.instance("unit_tests").grade(sample, RUBRIC.components["tests"].config)
    )
    summary: str = result.details["feedback"]["summary"]
    return summary


def _rollout(attempts: list[tuple[str, str]]) -> Sample:
    messages: list[dict[str, Any]] = [{"role": "user", "content": "Write add(a, b)."}]
    for n, (code, feedback) in enumerate(attempts):
        call = {
            "id": f"c{n}",
            "type": "function",
            "function": {"name": "run_tests", "arguments": json.dumps({"code": code})},
        }
        messages.append({"role": "assistant", "content": "", "tool_calls": [call]})
        messages.append({"role": "tool", "tool_call_id": f"c{n}", "content": feedback})
    messages.append({"role": "assistant", "content": "Fixed."})
    return Sample.model_validate(
        {
            "id": "rollout",
            "response": f"```python\n{attempts[-1][0]}```",
            "task": TASK,
            "trajectory": messages,
        }
    )


def test_each_turns_feedback_is_made_again_as_the_policy_read_it(
    registry: GraderRegistry,
) -> None:
    then = [(BUGGY, _feedback(registry, BUGGY)), (FIXED, _feedback(registry, FIXED))]
    assert then[0][1].startswith("2 of 2 tests failed:") and then[1][1] == "All 2 tests passed."
    turns = asyncio.run(replay_turns(_rollout(then), RUBRIC, registry))
    assert [(t["turn"], t["call"], t["score"], t["same"]) for t in turns] == [
        (1, "c0", 0.0, True),
        (2, "c1", 1.0, True),
    ]


def test_a_turn_whose_feedback_would_differ_now_is_named(registry: GraderRegistry) -> None:
    # The policy read a pass for its buggy first attempt: the replay says it would not now.
    forged = [(BUGGY, "All 2 tests passed."), (FIXED, _feedback(registry, FIXED))]
    rollout = _rollout(forged)
    turns = asyncio.run(replay_turns(rollout, RUBRIC, registry))
    assert [t["same"] for t in turns] == [False, True]
    assert turns[0]["replayed"].startswith("2 of 2 tests failed:")
    record = {"id": "rollout", "reward": 1.0, "components": {}}
    pairs = [{"reward_id": 1, "old": record, "new": record, "turns": turns}]
    summary = summarize_replay(pairs, Counter())
    assert summary["turns"]["rollouts"] == 1
    assert (summary["turns"]["runs"], summary["turns"]["same"]) == (2, 1)
    (differ,) = summary["turns"]["differ"]
    assert (differ["sample_id"], differ["turn"], differ["logged"]) == (
        "rollout",
        1,
        "All 2 tests passed.",
    )
    summary["agreement"] = {
        "labelled": 0,
        "verdict_matches": {},
        "before": {"components": {}, "overall": _no_stats()},
        "after": {"components": {}, "overall": _no_stats()},
    }
    titles = [t.title for t in replay_tables(summary, "replay")]
    assert "turn by turn: 1 rollout(s), 2 test run(s), 1 with the feedback they read then" in titles


def _no_stats() -> dict[str, Any]:
    none = {"status": "too_few", "n": 0, "value": None}
    return {"mae": none, "spearman": none, "quadratic_weighted_kappa": none}


def test_a_sample_without_test_runs_has_no_turns(registry: GraderRegistry) -> None:
    plain = Sample.model_validate({"id": "p", "response": f"```python\n{FIXED}```", "task": TASK})
    assert asyncio.run(replay_turns(plain, RUBRIC, registry)) == []
