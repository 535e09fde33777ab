"""Replay names the rule behind every moved reward: each kind of rule, one row each."""

from __future__ import annotations

from typing import Any

import pytest

from arbiter.replay import explain_move


def record(reward: float | None = 0.5, raw: float | None = None, **parts: Any) -> dict[str, Any]:
    return {
        "reward": reward,
        "raw_reward": reward if raw is None else raw,
        "abstain_reason": parts.pop("abstain_reason", None),
        "components": parts.pop("components", {"tests": {"score": 1.0, "weight": 1.0}}),
        "gates": parts.pop("gates", []),
        "penalties": parts.pop("penalties", []),
    }


GATE = {"when": "tests < 1", "cap": 0.5, "floor": None, "reason": "r"}
PENALTY = {"violation": "early_exit", "count": 1, "penalty": 1.0}


@pytest.mark.parametrize(
    ("old", "new", "rules"),
    [
        (
            record(),
            record(components={"tests": {"score": 0.5, "weight": 1.0}}),
            ["component tests score 1 -> 0.5"],
        ),
        (
            record(),
            record(0.3, components={"tests": {"score": 1.0, "weight": 0.3}}),
            ["component tests weight 1 -> 0.3"],
        ),
        (record(), record(0.4, gates=[GATE]), ["gate 'tests < 1' (cap 0.5) now applies"]),
        (record(0.4, gates=[GATE]), record(), ["gate 'tests < 1' (cap 0.5) no longer applies"]),
        (record(), record(-0.5, penalties=[PENALTY]), ["penalty early_exit (1) now applies"]),
        (
            record(penalties=[PENALTY]),
            record(penalties=[{**PENALTY, "penalty": 0.5}]),
            ["penalty early_exit 1 -> 0.5"],
        ),
        (record(), record(None, abstain_reason="tests failed"), ["abstains now: tests failed"]),
        (record(), record(0.7, raw=0.5), ["group normalization (the raw reward is unchanged)"]),
        (
            record(),
            record(0.6),
            ["combine formula or clip (no component, weight, gate or penalty differs)"],
        ),
        (record(), record(), []),
    ],
)
def test_each_kind_of_rule_is_named(
    old: dict[str, Any], new: dict[str, Any], rules: list[str]
) -> None:
    assert explain_move(old, new) == rules
