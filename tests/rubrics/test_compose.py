"""compose() and group normalization: tables for the rules, hypothesis for the properties."""

from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from arbiter.graders.types import FailureKind, GradeResult, Violation, ViolationType
from arbiter.rubrics import build_rubric, compose, normalize_rewards, normalize_values
from arbiter.rubrics.reward import Reward

BUDGET = {"max_turns": 8}
NAMES = ["a", "b", "c", "d", "e"]


def rubric_of(
    weights: dict[str, float],
    *,
    required: frozenset[str] = frozenset(),
    **extra: Any,
):
    components = {
        name: {"grader": "efficiency", "weight": w, "required": name in required, "config": BUDGET}
        for name, w in weights.items()
    }
    return build_rubric({"name": "t", "version": 1, "components": components, **extra})


def result(score: float | None, *violations: Violation) -> GradeResult:
    if score is None:
        return GradeResult.failed("efficiency", FailureKind.TIMEOUT, "slow", violations=violations)
    return GradeResult(grader="efficiency", score=score, violations=violations)


def results_of(scores: dict[str, float | None]) -> dict[str, GradeResult]:
    return {name: result(score) for name, score in scores.items()}


def value(rubric, scores: dict[str, float | None]) -> float | None:
    return compose(rubric, results_of(scores), sample_id="s").reward


# -- tables ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("extra", "scores", "expected"),
    [
        ({}, {"a": 1.0, "b": 0.0}, 0.5),
        ({"combine": "a * b"}, {"a": 0.5, "b": 0.5}, 0.25),
        ({"combine": "min(a, b) + max(a, b) / 2"}, {"a": 0.2, "b": 0.6}, 0.5),
        ({"combine": "a if b >= 0.5 else 0"}, {"a": 0.8, "b": 0.4}, 0.0),
        ({"gates": [{"when": "a < 1.0", "cap": 0.3}]}, {"a": 0.9, "b": 1.0}, 0.3),
        ({"gates": [{"when": "a < 1.0", "cap": 0.3}]}, {"a": 1.0, "b": 0.5}, 0.75),
        ({"gates": [{"when": "a >= 1", "floor": 0.9}]}, {"a": 1.0, "b": 0.0}, 0.9),
        ({"clip": [0.2, 0.4]}, {"a": 1.0, "b": 1.0}, 0.4),
        ({"on_missing": "renormalize"}, {"a": 0.8, "b": None}, 0.8),
        ({"on_missing": "zero"}, {"a": 0.8, "b": None}, 0.4),
        ({"on_missing": "abstain"}, {"a": 0.8, "b": None}, None),
        ({"combine": "a / b"}, {"a": 0.8, "b": 0.0}, None),
    ],
)
def test_compose_table(extra, scores, expected):
    rubric = rubric_of({"a": 0.5, "b": 0.5}, **extra)
    got = value(rubric, scores)
    if expected is None:
        assert got is None
    else:
        assert got == pytest.approx(expected)


def test_abstention_says_which_component_and_why():
    rubric = rubric_of({"a": 0.5, "b": 0.5}, required=frozenset({"a"}), on_missing="zero")
    reward = compose(rubric, results_of({"a": None, "b": 1.0}), sample_id="s")
    assert reward.reward is None
    assert reward.abstain_reason == "required component without a score: a (timeout)"
    assert reward.components["a"].failure is not None


def test_zero_reading_of_a_failure_is_flagged():
    rubric = rubric_of({"a": 0.5, "b": 0.5}, on_missing="zero")
    reward = compose(rubric, results_of({"a": None, "b": 1.0}), sample_id="s")
    assert reward.reward == pytest.approx(0.5)
    assert "missing_read_as_zero" in reward.flags


def test_gate_reading_a_missing_component_applies():
    # Without evidence that tests passed, the reward must not climb above the cap.
    rubric = rubric_of(
        {"a": 0.5, "b": 0.5},
        on_missing="renormalize",
        gates=[{"when": "a < 1.0", "cap": 0.5}],
    )
    reward = compose(rubric, results_of({"a": None, "b": 1.0}), sample_id="s")
    assert reward.reward == pytest.approx(0.5)
    assert reward.gates[0].reason == "its condition reads a component without a score"


def test_penalties_once_or_per_occurrence_with_a_cap():
    rubric = rubric_of(
        {"a": 1.0},
        penalties=[
            {"violation": "early_exit", "penalty": 0.5},
            {
                "violation": "network_access",
                "penalty": 0.2,
                "per_occurrence": True,
                "max_penalty": 0.3,
            },
        ],
    )
    exits = [Violation(type=ViolationType.EARLY_EXIT, line=n) for n in (1, 2)]
    net = [Violation(type=ViolationType.NETWORK_ACCESS, line=n) for n in (3, 4, 5)]
    reward = compose(rubric, {"a": result(1.0, *exits, *net)}, sample_id="s")
    applied = {p.violation: (p.count, p.penalty) for p in reward.penalties}
    assert applied[ViolationType.EARLY_EXIT] == (2, 0.5)
    assert applied[ViolationType.NETWORK_ACCESS] == (3, pytest.approx(0.3))
    assert reward.reward == pytest.approx(1.0 - 0.5 - 0.3)


def test_the_same_evidence_from_two_graders_counts_once():
    rubric = rubric_of(
        {"a": 0.5, "b": 0.5},
        penalties=[{"violation": "early_exit", "penalty": 0.1, "per_occurrence": True}],
    )
    seen = Violation(type=ViolationType.EARLY_EXIT, line=3, snippet="sys.exit(0)")
    reward = compose(rubric, {"a": result(1.0, seen), "b": result(1.0, seen)}, sample_id="s")
    assert reward.penalties[0].count == 1


def test_missing_result_is_a_caller_bug_not_a_zero():
    rubric = rubric_of({"a": 0.5, "b": 0.5})
    with pytest.raises(ValueError, match="no result for components"):
        compose(rubric, results_of({"a": 1.0}), sample_id="s")


def test_reward_records_rubric_identity_and_grader_versions():
    rubric = rubric_of({"a": 1.0})
    reward = compose(
        rubric,
        {"a": GradeResult(grader="efficiency", grader_version="1", score=0.5)},
        sample_id="s",
    )
    assert reward.rubric.sha256 == rubric.sha256
    assert reward.graders == {"efficiency": "1"}


# -- properties -----------------------------------------------------------------------

unit = st.floats(min_value=0.0, max_value=1.0, allow_nan=False)
weight = st.floats(min_value=0.0, max_value=5.0, allow_nan=False)


@st.composite
def weights_strategy(draw: Any, min_size: int = 1) -> dict[str, float]:
    n = draw(st.integers(min_value=min_size, max_value=len(NAMES)))
    ws = {name: draw(weight) for name in NAMES[:n]}
    assume(sum(ws.values()) > 0.01)
    return ws


@st.composite
def setup(draw: Any) -> tuple[Any, dict[str, float | None]]:
    ws = draw(weights_strategy())
    scores = {n: draw(st.one_of(st.none(), unit)) for n in ws}
    required = frozenset(n for n in ws if draw(st.booleans()))
    lo = draw(st.floats(min_value=-2, max_value=1, allow_nan=False))
    hi = draw(st.floats(min_value=lo + 0.01, max_value=3, allow_nan=False))
    gates = [
        {"when": f"{n} < {draw(unit)!r}", "cap": draw(st.floats(-1, 2, allow_nan=False))}
        for n in ws
        if draw(st.booleans())
    ]
    penalties = [
        {"violation": v.value, "penalty": draw(st.floats(0, 2, allow_nan=False))}
        for v in draw(st.sets(st.sampled_from(list(ViolationType)), max_size=3))
    ]
    rubric = rubric_of(
        ws,
        required=required,
        clip=[lo, hi],
        gates=gates,
        penalties=penalties,
        on_missing=draw(st.sampled_from(["abstain", "renormalize", "zero"])),
    )
    return rubric, scores


@settings(max_examples=150, deadline=None)
@given(setup(), st.lists(st.sampled_from(list(ViolationType)), max_size=4))
def test_reward_is_within_clip(case, violations):
    rubric, scores = case
    results = results_of(scores)
    first = next(iter(results))
    results[first] = results[first].model_copy(
        update={"violations": tuple(Violation(type=v, line=i) for i, v in enumerate(violations))}
    )
    reward = compose(rubric, results, sample_id="s").reward
    if reward is not None:
        lo, hi = rubric.spec.clip
        assert lo <= reward <= hi


@settings(max_examples=150, deadline=None)
@given(weights_strategy(), st.data())
def test_weighted_sum_is_non_decreasing_in_each_component(ws, data):
    gates = [{"when": f"{n} < 0.5", "cap": 0.2} for n in ws if data.draw(st.booleans())]
    rubric = rubric_of(ws, gates=gates, clip=[-1.0, 1.0])
    scores: dict[str, float | None] = {n: data.draw(unit) for n in ws}
    target = data.draw(st.sampled_from(sorted(n for n, w in ws.items() if w > 0)))
    before = value(rubric, scores)
    raised = dict(scores, **{target: data.draw(st.floats(scores[target], 1.0))})
    after = value(rubric, raised)
    assert before is not None and after is not None
    assert after >= before - 1e-12


@settings(max_examples=100, deadline=None)
@given(weights_strategy(), st.data())
def test_missing_required_component_abstains(ws, data):
    required = data.draw(st.sampled_from(sorted(ws)))
    rubric = rubric_of(ws, required=frozenset({required}), on_missing="abstain")
    scores: dict[str, float | None] = {n: data.draw(unit) for n in ws}
    scores[required] = None
    reward = compose(rubric, results_of(scores), sample_id="s")
    assert reward.reward is None
    assert required in (reward.abstain_reason or "")


@settings(max_examples=150, deadline=None)
@given(weights_strategy(min_size=2), st.data())
def test_renormalize_is_the_weighted_mean_of_present_components(ws, data):
    total = sum(ws.values())
    ws = {n: w / total for n, w in ws.items()}  # weights summing to 1, as rubrics write them
    scores: dict[str, float | None] = {n: data.draw(st.one_of(st.none(), unit)) for n in ws}
    present = {n: s for n, s in scores.items() if s is not None}
    assume(sum(ws[n] for n in present) > 1e-6)
    rubric = rubric_of(ws, on_missing="renormalize")
    expected = sum(ws[n] * s for n, s in present.items()) / sum(ws[n] for n in present)
    assert value(rubric, scores) == pytest.approx(expected, rel=1e-9, abs=1e-12)


@settings(max_examples=150, deadline=None)
@given(weights_strategy(), st.data())
def test_formula_written_as_the_weighted_sum_agrees(ws, data):
    scores: dict[str, float | None] = {n: data.draw(unit) for n in ws}
    formula = " + ".join(f"{w!r} * {n}" for n, w in ws.items())
    weighted = value(rubric_of(ws), scores)
    by_formula = value(rubric_of(ws, combine=formula), scores)
    assert by_formula == pytest.approx(weighted, rel=1e-9, abs=1e-12)


@settings(max_examples=150, deadline=None)
@given(weights_strategy(), st.data())
def test_gates_cap(ws, data):
    name = data.draw(st.sampled_from(sorted(ws)))
    threshold = data.draw(unit)
    cap = data.draw(st.floats(-1, 2, allow_nan=False))
    lo = data.draw(st.floats(-3, -1, allow_nan=False))
    rubric = rubric_of(ws, gates=[{"when": f"{name} < {threshold!r}", "cap": cap}], clip=[lo, 10.0])
    scores: dict[str, float | None] = {n: data.draw(unit) for n in ws}
    got = value(rubric, scores)
    assert got is not None
    if scores[name] < threshold:  # type: ignore[operator]
        assert got <= max(cap, lo) + 1e-12


@settings(max_examples=150, deadline=None)
@given(weights_strategy(), st.data())
def test_penalties_subtract(ws, data):
    chosen = data.draw(st.sets(st.sampled_from(list(ViolationType)), min_size=1, max_size=4))
    amounts = {v: data.draw(st.floats(0, 2, allow_nan=False)) for v in chosen}
    penalties = [{"violation": v.value, "penalty": a} for v, a in amounts.items()]
    plain = rubric_of(ws, clip=[-50.0, 50.0])
    penalised = rubric_of(ws, clip=[-50.0, 50.0], penalties=penalties)
    scores: dict[str, float | None] = {n: data.draw(unit) for n in ws}
    observed = data.draw(st.sets(st.sampled_from(sorted(chosen)), min_size=0))
    results = results_of(scores)
    first = next(iter(results))
    results[first] = results[first].model_copy(
        update={"violations": tuple(Violation(type=v) for v in observed)}
    )
    base = compose(plain, results, sample_id="s").reward
    got = compose(penalised, results, sample_id="s").reward
    assert base is not None and got is not None
    expected = max(-50.0, base - sum(amounts[v] for v in observed))
    assert got == pytest.approx(expected, abs=1e-9)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from("abcdef"), st.one_of(st.none(), st.floats(-1e6, 1e6))),
        max_size=40,
    ),
    st.sampled_from(["group_z", "group_rank"]),
)
def test_group_normalization_has_mean_zero_and_no_nan(rows, method):
    groups = [g for g, _ in rows]
    values = [v for _, v in rows]
    out = normalize_values(values, groups, method)
    for (_group, raw), norm in zip(rows, out, strict=True):
        assert (raw is None) == (norm is None)
        if norm is not None:
            assert math.isfinite(norm)
    for group in set(groups):
        members = [o for (g, _), o in zip(rows, out, strict=True) if g == group and o is not None]
        if len(members) == 1:
            assert members == [0.0]
        elif members:
            assert abs(sum(members) / len(members)) < 1e-9


@pytest.mark.parametrize(
    ("method", "values", "expected"),
    [
        ("group_z", [1.0, 1.0, 1.0], [0.0, 0.0, 0.0]),  # zero variance: 0, not NaN
        ("group_z", [0.0, 1.0], [-1.0, 1.0]),
        ("group_rank", [0.1, 0.5, 0.9], [-1.0, 0.0, 1.0]),
        ("group_rank", [0.5, 0.5, 0.9], [-0.5, -0.5, 1.0]),  # ties share the average rank
        ("group_z", [0.7], [0.0]),  # singleton
    ],
)
def test_normalization_table(method, values, expected):
    assert normalize_values(values, ["g"] * len(values), method) == pytest.approx(expected)


def test_normalize_rewards_groups_by_group_id_then_prompt():
    rubric = rubric_of({"a": 1.0})

    def reward(sample_id: str, score: float, group: str | None) -> Reward:
        return compose(rubric, results_of({"a": score}), sample_id=sample_id, group_id=group)

    rewards = [
        reward("1", 0.2, "g"),
        reward("2", 0.8, "g"),
        reward("3", 0.4, None),
        reward("4", 0.6, None),
    ]
    out = normalize_rewards(rewards, "group_z", prompt_keys=["p", "p", "q", "q"])
    assert [r.reward for r in out] == pytest.approx([-1.0, 1.0, -1.0, 1.0])
    assert [r.raw_reward for r in out] == pytest.approx([0.2, 0.8, 0.4, 0.6])
    alone = normalize_rewards([reward("5", 0.9, "solo")], "group_z")
    assert alone[0].reward == 0.0 and "singleton_group" in alone[0].flags


def not_applicable() -> GradeResult:
    return GradeResult.failed("efficiency", FailureKind.NOT_APPLICABLE, "a Python analyser")


@pytest.mark.parametrize("on_missing", ["abstain", "zero", "renormalize"])
def test_a_grader_that_does_not_apply_is_left_out_whatever_on_missing_says(on_missing):
    rubric = rubric_of({"a": 0.5, "b": 0.25, "c": 0.25}, on_missing=on_missing)
    results = {"a": result(0.8), "b": not_applicable(), "c": result(0.4)}
    reward = compose(rubric, results, sample_id="s")
    # The present weights (a, c) scaled to the whole: (0.5 * 0.8 + 0.25 * 0.4) / 0.75.
    assert reward.reward == pytest.approx((0.4 + 0.1) / 0.75)
    assert "not_applicable_left_out" in reward.flags


def test_a_required_grader_that_does_not_apply_abstains():
    rubric = rubric_of({"a": 0.5, "b": 0.5}, required=frozenset({"b"}), on_missing="renormalize")
    reward = compose(rubric, {"a": result(1.0), "b": not_applicable()}, sample_id="s")
    assert reward.reward is None
    assert "not_applicable" in (reward.abstain_reason or "")


def test_a_missing_score_beside_one_that_does_not_apply_still_follows_on_missing():
    rubric = rubric_of({"a": 0.5, "b": 0.25, "c": 0.25}, on_missing="zero")
    results = {"a": result(0.8), "b": not_applicable(), "c": result(None)}
    reward = compose(rubric, results, sample_id="s")
    # c reads as 0 (on_missing: zero); b is left out: (0.5 * 0.8 + 0.25 * 0) / 0.75.
    assert reward.reward == pytest.approx(0.4 / 0.75)
    assert "missing_read_as_zero" in reward.flags


# -- whose doing an abstention is ---------------------------------------------------------


def _failed(kind: FailureKind) -> GradeResult:
    return GradeResult.failed("efficiency", kind, str(kind))


@pytest.mark.parametrize(
    ("kinds", "owner"),
    [
        ({"a": FailureKind.TIMEOUT}, "candidate"),
        ({"a": FailureKind.COMPILE_ERROR}, "candidate"),
        ({"a": FailureKind.MEMORY_LIMIT}, "candidate"),
        ({"a": FailureKind.COLLECTION_ERROR}, "task"),
        ({"a": FailureKind.MISSING_INPUT}, "request"),
        # A candidate's own failure beside the task's is still its own: it must not
        # launder a timeout into a mean by failing another component for the task.
        ({"a": FailureKind.TIMEOUT, "b": FailureKind.COLLECTION_ERROR}, "candidate"),
        # Ours and the task's decide before on_missing, whatever else failed.
        ({"a": FailureKind.TIMEOUT, "b": FailureKind.SANDBOX_ERROR}, "ours"),
        ({"a": FailureKind.TIMEOUT, "b": FailureKind.INVALID_TASK}, "task"),
    ],
)
def test_an_abstention_says_whose_doing_it_is(kinds: dict[str, FailureKind], owner: str) -> None:
    rubric = rubric_of({"a": 0.5, "b": 0.3, "c": 0.2})
    results = {"a": result(1.0), "b": result(1.0), "c": result(1.0)}
    results.update({name: _failed(kind) for name, kind in kinds.items()})
    reward = compose(rubric, results, sample_id="s")
    assert reward.reward is None
    assert reward.abstained_by == owner


def test_a_formula_without_a_value_is_the_rubrics_abstention() -> None:
    reward = compose(
        rubric_of({"a": 0.5, "b": 0.5}, combine="a / b"),
        results_of({"a": 0.8, "b": 0.0}),
        sample_id="s",
    )
    assert reward.reward is None and reward.abstained_by == "rubric"


def test_a_scored_reward_has_no_owner_of_an_abstention() -> None:
    reward = compose(rubric_of({"a": 1.0}), results_of({"a": 0.5}), sample_id="s")
    assert reward.abstained_by is None


def test_every_failure_kind_has_exactly_one_owner() -> None:
    from arbiter.graders.types import (
        CANDIDATE_FAILURES,
        INFRASTRUCTURE_FAILURES,
        REQUEST_FAILURES,
        TASK_FAILURES,
        failure_owner,
    )

    task = TASK_FAILURES | {FailureKind.COLLECTION_ERROR}
    sets = [INFRASTRUCTURE_FAILURES, CANDIDATE_FAILURES, REQUEST_FAILURES, task]
    # A kind added later must be placed on purpose: an unplaced one would be the task's.
    assert set(FailureKind) == set().union(*sets)
    assert sum(len(s) for s in sets) == len(FailureKind)
    assert {failure_owner(k) for k in CANDIDATE_FAILURES} == {"candidate"}
    assert {failure_owner(k) for k in task} == {"task"}
