"""Agreement statistics: hand-computed tables, scipy where it has them, and properties."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from arbiter.monitoring.agreement import (
    LabelledPair,
    agreement,
    agreement_report,
    binary_counts,
    cohen_kappa,
    gwet_ac1,
    labelled_pair,
    mean_absolute_error,
    quadratic_weighted_kappa,
    spearman,
)


def table(yy: int, yn: int, ny: int, nn: int) -> tuple[list[int], list[int]]:
    """Expand a 2x2 table (rater A's label first) into paired labels."""
    a = [1] * (yy + yn) + [0] * (ny + nn)
    b = [1] * yy + [0] * yn + [1] * ny + [0] * nn
    return a, b


# -- hand-computed values --------------------------------------------------------------


def test_cohen_kappa_of_a_textbook_table() -> None:
    # p_o = 35/50 = 0.7; A says yes 25/50, B 30/50; p_e = .5*.6 + .5*.4 = 0.5 -> 0.2/0.5
    a, b = table(20, 5, 10, 15)
    assert cohen_kappa(a, b) == pytest.approx(0.4)


def test_gwet_ac1_of_the_same_table() -> None:
    # pi = (0.5 + 0.6) / 2 = 0.55; p_e = 2 * 0.55 * 0.45 = 0.495 -> 0.205 / 0.505
    a, b = table(20, 5, 10, 15)
    assert gwet_ac1(a, b) == pytest.approx(0.205 / 0.505)


def test_ac1_stays_high_where_kappa_collapses_on_a_skewed_table() -> None:
    # 90 of 100 agree on "fail"; kappa is pulled near zero by the skew, AC1 is not.
    a, b = table(1, 4, 5, 90)
    assert cohen_kappa(a, b) == pytest.approx((0.91 - (0.05 * 0.06 + 0.95 * 0.94)) / (1 - 0.896))
    assert gwet_ac1(a, b) > 0.85 > 0.2 > cohen_kappa(a, b)


def test_quadratic_weighted_kappa_by_hand() -> None:
    # O has 1/3 at (0,0), (1,2), (2,2); sum(cost*O) = 1/12, sum(cost*E) = 5/12 -> 0.8
    assert quadratic_weighted_kappa([0, 1, 2], [0, 2, 2]) == pytest.approx(0.8)
    # A full reversal on three levels is the worst possible: -1.
    assert quadratic_weighted_kappa([0, 1, 2], [2, 1, 0]) == pytest.approx(-1.0)


def test_kappa_is_undefined_when_both_raters_never_vary() -> None:
    assert math.isnan(cohen_kappa([1, 1, 1], [1, 1, 1]))
    assert gwet_ac1([1, 1, 1], [1, 1, 1], categories=[0, 1]) == 1.0


def test_labels_outside_the_given_categories_are_refused() -> None:
    with pytest.raises(ValueError, match="categories"):
        cohen_kappa([0, 2], [0, 1], categories=[0, 1])
    with pytest.raises(ValueError, match="weights"):
        cohen_kappa([0, 1], [0, 1], weights=[1, -1])


# -- scipy -------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(5))
def test_spearman_matches_scipy_with_ties(seed: int) -> None:
    rng = np.random.default_rng(seed)
    x = rng.integers(0, 5, size=40).astype(float)  # many ties
    y = x + rng.normal(0, 2, size=40)
    assert spearman(x, y) == pytest.approx(stats.spearmanr(x, y).statistic, abs=1e-12)


def test_mae_by_hand() -> None:
    assert mean_absolute_error([0.0, 0.5, 1.0], [0.5, 0.5, 0.0]) == pytest.approx(0.5)
    assert mean_absolute_error([0.0, 1.0], [1.0, 1.0], weights=[3, 1]) == pytest.approx(0.75)


# -- properties --------------------------------------------------------------------------

binary = st.lists(st.integers(0, 1), min_size=2, max_size=60)
ordinal = st.lists(st.integers(0, 4), min_size=2, max_size=60)


@given(ordinal)
def test_identical_labels_agree_perfectly(labels: list[int]) -> None:
    if len(set(labels)) < 2:
        labels = [*labels, (labels[0] + 1) % 5]
    assert cohen_kappa(labels, labels) == pytest.approx(1.0)
    assert gwet_ac1(labels, labels) == pytest.approx(1.0)
    assert quadratic_weighted_kappa(labels, labels) == pytest.approx(1.0)
    assert spearman(labels, labels) == pytest.approx(1.0)
    assert mean_absolute_error(labels, labels) == 0.0


@given(
    st.lists(st.tuples(st.integers(0, 4), st.integers(0, 4)), min_size=2, max_size=40),
    st.floats(0.01, 1.0),
)
def test_equal_weights_change_nothing(pairs: list[tuple[int, int]], p: float) -> None:
    a, b = (list(x) for x in zip(*pairs, strict=True))
    w = [1.0 / p] * len(a)
    for fn in (cohen_kappa, gwet_ac1, quadratic_weighted_kappa, spearman, mean_absolute_error):
        plain, weighted = fn(a, b), fn(a, b, w)
        assert (math.isnan(plain) and math.isnan(weighted)) or weighted == pytest.approx(plain)


@settings(max_examples=50)
@given(
    st.lists(
        st.tuples(st.integers(0, 3), st.integers(0, 3), st.integers(1, 4)), min_size=2, max_size=30
    )
)
def test_an_integer_weight_counts_like_that_many_copies(
    rows: list[tuple[int, int, int]],
) -> None:
    a, b, w = (list(x) for x in zip(*rows, strict=True))
    a2 = [x for x, k in zip(a, w, strict=True) for _ in range(k)]
    b2 = [y for y, k in zip(b, w, strict=True) for _ in range(k)]
    for fn in (cohen_kappa, gwet_ac1, quadratic_weighted_kappa, spearman, mean_absolute_error):
        weighted, copied = fn(a, b, w), fn(a2, b2)
        assert (math.isnan(weighted) and math.isnan(copied)) or weighted == pytest.approx(copied)


@given(binary, binary)
def test_kappa_and_ac1_are_at_most_one(a: list[int], b: list[int]) -> None:
    n = min(len(a), len(b))
    for value in (cohen_kappa(a[:n], b[:n]), gwet_ac1(a[:n], b[:n])):
        assert math.isnan(value) or value <= 1.0 + 1e-12


# -- the wrapper: minimum labels, intervals, inverse-probability weighting ----------------


def test_insufficient_data_below_fifty_labels() -> None:
    a, b = table(20, 5, 10, 15)
    short = agreement("cohen_kappa", a[:49], b[:49])
    assert short.status == "insufficient_data" and short.value is None and short.n == 49
    full = agreement("cohen_kappa", a, b)
    assert full.status == "ok" and full.value == pytest.approx(0.4)
    assert full.ci_low is not None and full.ci_high is not None
    assert full.ci_low < 0.4 < full.ci_high
    assert agreement("cohen_kappa", a, b) == full  # seeded: the same interval again


def test_equal_inclusion_probabilities_give_the_unweighted_interval() -> None:
    rng = np.random.default_rng(3)
    x = rng.random(80)
    y = np.clip(x + rng.normal(0, 0.2, 80), 0, 1)
    for statistic in ("spearman", "mae"):
        plain = agreement(statistic, x, y, n_resamples=200)
        weighted = agreement(statistic, x, y, [0.2] * 80, n_resamples=200)
        assert weighted.value == pytest.approx(plain.value)
        assert weighted.ci_low == pytest.approx(plain.ci_low)
        assert weighted.ci_high == pytest.approx(plain.ci_high)


def test_inverse_probability_weighting_removes_the_bias_of_targeted_sampling() -> None:
    # A population where graders are wrong mostly in one stratum, which the sampler
    # over-samples 20x: the unweighted MAE overstates the error, the weighted one does not.
    rng = np.random.default_rng(7)
    n = 200_000
    hard = rng.random(n) < 0.05
    grader = rng.random(n)
    human = np.where(hard, 1 - grader, np.clip(grader + rng.normal(0, 0.05, n), 0, 1))
    truth = float(np.mean(np.abs(grader - human)))
    pi = np.where(hard, 0.2, 0.01)
    picked = rng.random(n) < pi
    weighted = agreement("mae", grader[picked], human[picked], pi[picked], n_resamples=50)
    unweighted = agreement("mae", grader[picked], human[picked], n_resamples=50)
    assert weighted.value == pytest.approx(truth, rel=0.1)
    assert unweighted.value is not None and unweighted.value > 2 * truth


def test_unknown_statistic_and_bad_probabilities_are_refused() -> None:
    with pytest.raises(ValueError, match="unknown statistic"):
        agreement("f1", [0], [0])
    with pytest.raises(ValueError, match="inclusion"):
        agreement("mae", [0.0], [0.0], [0.0])


def test_report_pairs_grader_and_human_per_component_hacks_and_overall() -> None:
    pairs = [
        LabelledPair(
            inclusion_probability=0.5,
            grader_components={"tests": float(i % 2), "judge": None},
            grader_reward=i / 59,
            grader_flagged=i % 3 == 0,
            human_verdicts={"tests": i % 2 == 1, "judge": True},
            human_score=i / 59,
            human_flagged=i % 3 == 0,
        )
        for i in range(60)
    ]
    report = agreement_report(pairs, n_resamples=50)
    assert report["n_labels"] == 60
    assert report["components"]["tests"]["cohen_kappa"]["value"] == pytest.approx(1.0)
    # judge was never scored by the grader: nothing to compare.
    assert report["components"]["judge"]["gwet_ac1"]["status"] == "insufficient_data"
    assert report["hacks"]["gwet_ac1"]["value"] == pytest.approx(1.0)
    assert report["overall"]["spearman"]["value"] == pytest.approx(1.0)
    assert report["overall"]["mae"]["value"] == pytest.approx(0.0)
    assert report["overall"]["quadratic_weighted_kappa"]["value"] == pytest.approx(1.0)
    few = agreement_report(pairs[:10], n_resamples=50)
    assert few["overall"]["mae"]["status"] == "insufficient_data"


def test_a_reward_in_minus_one_to_one_is_compared_on_the_reviewers_scale() -> None:
    # The grader says -1 (worst) and 1 (best); the reviewer says 0 and 1: perfect agreement.
    pairs = [
        labelled_pair(
            {"raw_reward": 1.0 if i % 2 else -1.0, "components": {}},
            inclusion_probability=1.0,
            verdicts={},
            overall_score=1.0 if i % 2 else 0.0,
            hack_types=[],
            reward_range=(-1.0, 1.0),
        )
        for i in range(60)
    ]
    report = agreement_report(pairs, n_resamples=50)
    assert report["overall"]["mae"]["value"] == pytest.approx(0.0)
    assert report["overall"]["quadratic_weighted_kappa"]["value"] == pytest.approx(1.0)
    assert report["overall"]["n"] == 60
    assert report["overall"]["reward_ranges"] == [[-1.0, 1.0]]
    # Read on the raw scales, the same labels would look half the scale apart.
    raw = mean_absolute_error([p.grader_reward for p in pairs], [p.human_score for p in pairs])
    assert raw == pytest.approx(0.5)


def test_counts_explain_kappa_zero_beside_a_high_ac1() -> None:
    # The grader passes everything; the reviewer fails 4 of 100: kappa has nothing to
    # work with (no grader fails), AC1 sees 96% raw agreement.
    pairs = [
        LabelledPair(
            inclusion_probability=1.0,
            grader_components={"tests": 1.0},
            human_verdicts={"tests": i >= 4},
        )
        for i in range(100)
    ]
    tests = agreement_report(pairs, n_resamples=50)["components"]["tests"]
    assert tests["cohen_kappa"]["value"] == pytest.approx(0.0)
    assert tests["gwet_ac1"]["value"] > 0.9
    counts = tests["counts"]
    assert counts == {
        "n": 100,
        "both_yes": 96,
        "both_no": 0,
        "grader_only": 4,
        "human_only": 0,
        "grader_rate": pytest.approx(1.0),
        "human_rate": pytest.approx(0.96),
        "observed_agreement": pytest.approx(0.96),
    }


def test_counts_are_weighted_by_inverse_inclusion_in_the_rates() -> None:
    rows = [(1.0, 1.0, 0.5), (0.0, 1.0, 1.0)]
    counts = binary_counts(rows)
    assert counts["both_yes"] == 1 and counts["human_only"] == 1
    assert counts["grader_rate"] == pytest.approx(2 / 3)


def test_an_empty_range_is_refused() -> None:
    with pytest.raises(ValueError, match="reward_range"):
        labelled_pair(
            {},
            inclusion_probability=1,
            verdicts={},
            overall_score=None,
            hack_types=[],
            reward_range=(1.0, 1.0),
        )


def test_each_grader_kind_passes_at_its_own_threshold_and_says_so():
    # Issue 27: one 0.5 threshold passed bandit on eval (score 0.67) while the page
    # told reviewers to fail it: security agreement was low by construction.
    pairs = [
        labelled_pair(
            {
                "raw_reward": 0.5,
                "components": {
                    "security": {"grader": "bandit", "score": 0.67 if i % 2 else 1.0},
                    "tests": {"grader": "unit_tests", "score": 0.9 if i % 2 else 1.0},
                },
            },
            inclusion_probability=1.0,
            verdicts={
                "security": "fail" if i % 2 else "pass",
                "tests": "fail" if i % 2 else "pass",
            },
            overall_score=0.5,
            hack_types=[],
        )
        for i in range(60)
    ]
    report = agreement_report(pairs, n_resamples=50)
    for name, threshold in (("security", 0.8), ("tests", 1.0)):
        component = report["components"][name]
        assert component["pass_threshold"] == threshold
        assert component["counts"]["grader_only"] == 0 and component["counts"]["human_only"] == 0
        assert component["cohen_kappa"]["value"] == pytest.approx(1.0)
    assert report["components"]["security"]["grader"] == "bandit"
    assert report["pass_thresholds"]["bandit"] == 0.8
    # Read at the old single 0.5, the same labels disagree on every failing item.
    flat = agreement_report(pairs, pass_thresholds={"security": 0.5}, n_resamples=50)
    assert flat["components"]["security"]["counts"]["grader_only"] == 30
