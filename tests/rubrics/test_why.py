"""A reward says why it is what it is: flags, raw_reward before the clip, the table's why.

Each step that moved a reward (a gate's cap or floor, a renormalization, a fill,
the clip) is named in its flags and in the "why" column of `arbiter score`'s table;
``raw_reward`` keeps the value the clip cut. Validation warns of weights that do not
sum to 1, with the range the rubric's rewards then span.
"""

from __future__ import annotations

from typing import Any

import pytest

from arbiter.graders.types import FailureKind, GradeResult
from arbiter.rubrics import build_rubric, compose, normalize_rewards, parse_rubric
from arbiter.summary import failed_everywhere, left_out_everywhere, rewards_table, why

BUDGET = {"max_turns": 8}


def rubric_of(weights: dict[str, float], **extra: Any):
    components = {
        name: {"grader": "efficiency", "weight": w, "config": BUDGET} for name, w in weights.items()
    }
    return build_rubric({"name": "t", "version": 1, "components": components, **extra})


def scored(score: float) -> GradeResult:
    return GradeResult(grader="efficiency", score=score)


def failed(kind: FailureKind, message: str = "no") -> GradeResult:
    return GradeResult.failed("efficiency", kind, message)


def test_weights_over_one_are_clipped_visibly_and_raw_reward_keeps_the_sum() -> None:
    rubric = rubric_of({"a": 0.55, "b": 0.5}, clip=[-1.0, 1.0])
    reward = compose(rubric, {"a": scored(1.0), "b": scored(1.0)}, sample_id="s")
    assert reward.reward == 1.0
    assert reward.raw_reward == pytest.approx(1.05)
    assert "clipped" in reward.flags
    assert "clipped from 1.0500" in why(reward)


def test_a_clip_that_cuts_nothing_is_not_flagged() -> None:
    rubric = rubric_of({"a": 0.5, "b": 0.5}, clip=[-1.0, 1.0])
    reward = compose(rubric, {"a": scored(1.0), "b": scored(0.5)}, sample_id="s")
    assert reward.reward == reward.raw_reward == 0.75
    assert reward.flags == ()
    assert why(reward) == ""


def test_a_gate_that_caps_is_flagged_and_named_in_the_why() -> None:
    rubric = rubric_of({"a": 0.5, "b": 0.5}, gates=[{"when": "a < 1", "cap": 0.5}])
    reward = compose(rubric, {"a": scored(0.75), "b": scored(1.0)}, sample_id="s")
    assert reward.reward == 0.5
    assert "capped" in reward.flags
    assert why(reward) == "cap 0.5 by 'a < 1'"


def test_a_gate_that_holds_without_moving_the_value_is_listed_but_not_flagged() -> None:
    rubric = rubric_of({"a": 0.5, "b": 0.5}, gates=[{"when": "a < 1", "cap": 0.9}])
    reward = compose(rubric, {"a": scored(0.5), "b": scored(0.5)}, sample_id="s")
    assert reward.reward == 0.5
    assert "capped" not in reward.flags
    assert [g.when for g in reward.gates] == ["a < 1"]


def test_a_floor_is_flagged() -> None:
    rubric = rubric_of({"a": 0.5, "b": 0.5}, gates=[{"when": "a >= 1", "floor": 0.9}])
    reward = compose(rubric, {"a": scored(1.0), "b": scored(0.0)}, sample_id="s")
    assert reward.reward == 0.9
    assert "floored" in reward.flags
    assert why(reward) == "floor 0.9 by 'a >= 1'"


def test_renormalization_and_fills_name_the_components_they_left_out_or_read_as_zero() -> None:
    renormalized = compose(
        rubric_of({"a": 0.5, "b": 0.5}, on_missing="renormalize"),
        {"a": scored(0.8), "b": failed(FailureKind.MISSING_INPUT)},
        sample_id="s",
    )
    assert renormalized.reward == pytest.approx(0.8)
    assert why(renormalized) == "renormalized without b (missing_input)"
    filled = compose(
        rubric_of({"a": 0.5, "b": 0.5}, on_missing="zero"),
        {"a": scored(0.8), "b": failed(FailureKind.TIMEOUT)},
        sample_id="s",
    )
    assert filled.reward == pytest.approx(0.4)
    assert "missing_read_as_zero" in filled.flags
    assert why(filled) == "read as 0: b"


def test_the_table_shows_the_why_of_a_capped_reward() -> None:
    from rich.console import Console

    rubric = rubric_of({"a": 0.5, "b": 0.5}, gates=[{"when": "a < 1", "cap": 0.5}])
    reward = compose(rubric, {"a": scored(0.75), "b": scored(1.0)}, sample_id="s")
    console = Console(width=200, record=True)
    console.print(rewards_table([reward], "t v1"))
    assert "cap 0.5 by 'a < 1'" in console.export_text()


def test_normalization_reads_the_clipped_value_and_says_what_it_normalized() -> None:
    rubric = rubric_of({"a": 0.6, "b": 0.6}, clip=[0.0, 1.0], normalize="group_z")
    rewards = [
        compose(rubric, {"a": scored(s), "b": scored(s)}, sample_id=f"s{i}", group_id="g")
        for i, s in enumerate([1.0, 0.9, 0.0])
    ]
    assert [r.reward for r in rewards] == pytest.approx([1.0, 1.0, 0.0])
    assert [r.raw_reward for r in rewards] == pytest.approx([1.2, 1.08, 0.0])
    normalized = normalize_rewards(rewards, "group_z")
    # The two clipped to 1.0 are equal after the clip, as the trainer sees them.
    assert normalized[0].reward == pytest.approx(normalized[1].reward)
    assert "group_z of 1.2000" in why(normalized[0])


WEIGHTS_OVER = """\
name: over
version: 1
components:
  a: {grader: efficiency, weight: 0.55, config: {max_turns: 8}}
  b: {grader: efficiency, weight: 0.5, config: {max_turns: 8}}
penalties:
  - {violation: early_exit, penalty: 1.0}
clip: [-1.0, 1.0]
"""


def test_weights_that_do_not_sum_to_one_warn_with_the_effective_range() -> None:
    rubric = parse_rubric(WEIGHTS_OVER, source="over.yaml")
    (warning,) = rubric.warnings
    assert (warning.line, warning.path) == (3, "components")
    assert "weights sum to 1.05, not 1" in warning.message
    assert "penalties take up to 1 off it" in warning.message
    assert "rewards span [-1, 1]" in warning.message
    assert "flagged 'clipped'" in warning.message


def test_weights_summing_to_one_warn_of_nothing() -> None:
    rubric = parse_rubric(WEIGHTS_OVER.replace("0.55", "0.5"), source="ok.yaml")
    assert rubric.warnings == ()


def test_a_gate_over_a_component_some_samples_leave_out_warns_at_its_line() -> None:
    text = """\
name: hacks-gated
version: 1
components:
  tests: {grader: unit_tests, weight: 0.9, required: true}
  hacks: {grader: violations, weight: 0.1}
gates:
  - {when: "hacks < 1", cap: 0.0}
"""
    (warning,) = parse_rubric(text, source="g.yaml").warnings
    assert (warning.line, warning.path) == (7, "gates[0].when")
    assert "gate 'hacks < 1' reads 'hacks' (violations)" in warning.message
    assert "test_program tasks in cpp, java, go, rust, javascript" in warning.message
    # Declared for Python alone, the gate guards every sample the rubric takes.
    python_only = parse_rubric(text + "accepts: {language: [python]}\n", source="g.yaml")
    assert python_only.warnings == ()


def test_a_required_component_in_a_gate_is_no_caution() -> None:
    text = """\
name: required-gated
version: 1
components:
  tests: {grader: unit_tests, weight: 1.0, required: true}
gates:
  - {when: "tests < 1", cap: 0.5}
"""
    assert parse_rubric(text, source="r.yaml").warnings == ()


def test_accepts_does_not_move_the_identity_of_a_rubric_without_it() -> None:
    before = parse_rubric(WEIGHTS_OVER, source="a.yaml")
    spelled = parse_rubric(WEIGHTS_OVER + "accepts: null\n", source="b.yaml")
    declared = parse_rubric(WEIGHTS_OVER + "accepts: {kind: [none]}\n", source="c.yaml")
    assert before.sha256 == spelled.sha256 != declared.sha256


def _dumped(kinds: list[FailureKind | None]) -> list[dict[str, Any]]:
    return [
        {
            "components": {
                "x": {
                    "failure": None
                    if kind is None
                    else {"kind": kind.value, "message": f"{kind.value} here"}
                }
            }
        }
        for kind in kinds
    ]


def test_a_component_that_applies_to_no_sample_did_not_fail() -> None:
    rewards = _dumped([FailureKind.NOT_APPLICABLE] * 3)
    assert failed_everywhere(rewards) == []
    (line,) = left_out_everywhere(rewards)
    assert line.startswith("component 'x' applies to none of the 3 sample(s)")


def test_a_component_that_failed_wherever_it_applied_still_fails_everywhere() -> None:
    rewards = _dumped([FailureKind.NOT_APPLICABLE, FailureKind.MISSING_INPUT])
    (line,) = failed_everywhere(rewards)
    assert line.startswith("component 'x' failed for every sample it applies to (1 of 2)")
    assert "missing_input" in line
    assert left_out_everywhere(rewards) == []
    assert failed_everywhere(_dumped([None, FailureKind.TIMEOUT])) == []


def test_a_config_key_by_its_former_name_is_a_caution_at_its_line() -> None:
    text = """\
name: old-key
version: 1
components:
  security:
    grader: bandit
    config: {code_block: last}
"""
    (warning,) = parse_rubric(text, source="o.yaml").warnings
    assert (warning.line, warning.path) == (6, "components.security.config.code_block")
    assert "'code_block' is the former name of 'code_blocks'" in warning.message
