"""The drift statistics on hand-computed tables, against scipy, and as properties."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats  # type: ignore[import-untyped]

from arbiter.monitoring.drift_statistics import (
    benjamini_hochberg,
    bootstrap_reference,
    effective_sd,
    fisher_z_rise,
    holm,
    ks_two_sample,
    normalized_wasserstein,
    two_proportion_z,
    two_sided_cusum,
    wasserstein_from_counts,
    windows_needed,
)

finite_z = st.floats(min_value=-50, max_value=50, allow_nan=False)
pvalue = st.floats(min_value=0.0, max_value=1.0, allow_nan=False)


@pytest.mark.parametrize(
    ("z", "k", "h", "upper", "lower", "alarm"),
    [
        ([0.0, 0.0, 0.0], 0.5, 4.0, [0, 0, 0], [0, 0, 0], [False, False, False]),
        ([2.0, 2.0, 2.0], 0.5, 4.0, [1.5, 3.0, 4.5], [0, 0, 0], [False, False, True]),
        ([-2.0, -2.0, -2.0], 0.5, 4.0, [0, 0, 0], [1.5, 3.0, 4.5], [False, False, True]),
        # Below the allowance nothing accumulates, however long it lasts.
        ([0.4] * 50, 0.5, 4.0, [0] * 50, [0] * 50, [False] * 50),
        # After an alarm both sums restart, so a lasting shift alarms again.
        ([5.0, 5.0, 5.0], 1.0, 6.0, [4.0, 8.0, 4.0], [0, 0, 0], [False, True, False]),
    ],
)
def test_cusum_table(z, k, h, upper, lower, alarm):
    up, down, fired = two_sided_cusum(z, k, h)
    assert up.tolist() == pytest.approx(upper)
    assert down.tolist() == pytest.approx(lower)
    assert fired.tolist() == alarm


def test_cusum_continues_from_a_carried_start():
    _, _, fired = two_sided_cusum([1.0], 0.5, 4.0, start=(3.8, 0.0))
    assert fired.tolist() == [True]


@given(st.lists(finite_z, max_size=40), st.floats(0.0, 3.0), st.floats(0.5, 20.0))
def test_cusum_sums_are_never_negative(z, k, h):
    up, down, _ = two_sided_cusum(z, k, h)
    assert (up >= 0).all() and (down >= 0).all()


@given(st.lists(finite_z, min_size=1, max_size=40), st.floats(0.0, 3.0), st.floats(0.5, 20.0))
def test_cusum_is_symmetric(z, k, h):
    up, down, fired = two_sided_cusum(z, k, h)
    up_neg, down_neg, fired_neg = two_sided_cusum([-v for v in z], k, h)
    assert np.allclose(up, down_neg) and np.allclose(down, up_neg)
    assert (fired == fired_neg).all()


@pytest.mark.parametrize(
    ("p", "alpha", "holm_rejects", "bh_rejects"),
    [
        # Holm: 0.005 <= 0.05/4, 0.01 <= 0.05/3, 0.03 > 0.05/2 stops.
        # BH: 0.04 <= 4 * 0.05 / 4, so every p at or below it is rejected.
        ([0.01, 0.04, 0.03, 0.005], 0.05, [True, False, False, True], [True, True, True, True]),
        ([0.5, 0.6], 0.05, [False, False], [False, False]),
        ([0.001], 0.01, [True], [True]),
        ([], 0.05, [], []),
        # BH's step-up rejects p=0.03 at rank 2 (0.03 <= 2 * 0.05 / 3) although the
        # step-down Holm stops at it (0.03 > 0.05 / 2).
        ([0.03, 0.9, 0.001], 0.05, [False, False, True], [True, False, True]),
    ],
)
def test_corrections_table(p, alpha, holm_rejects, bh_rejects):
    assert holm(p, alpha).tolist() == holm_rejects
    assert benjamini_hochberg(p, alpha).tolist() == bh_rejects


@given(st.lists(pvalue, max_size=30), st.floats(1e-6, 0.2))
def test_bh_matches_scipy(p, alpha):
    expected = stats.false_discovery_control(np.array(p)) <= alpha if p else np.zeros(0, dtype=bool)
    # scipy adjusts and compares; ties at the boundary differ by one ulp at most.
    near = np.isclose(np.array(p) * len(p) / (np.argsort(np.argsort(p, kind="stable")) + 1), alpha)
    agree = (benjamini_hochberg(p, alpha) == expected) | near
    assert agree.all()


@given(st.lists(pvalue, max_size=30), st.floats(1e-6, 0.2))
def test_correction_never_makes_a_test_more_liberal(p, alpha):
    raw = np.array(p) <= alpha
    by_holm = holm(p, alpha)
    by_bh = benjamini_hochberg(p, alpha)
    assert not (by_holm & ~raw).any(), "Holm rejected a test the uncorrected level keeps"
    assert not (by_bh & ~raw).any(), "BH rejected a test the uncorrected level keeps"
    assert not (by_holm & ~by_bh).any(), "Holm is stricter than BH"


def test_a_p_value_equal_to_alpha_is_decided_exactly():
    # In floats alpha * 3 / 3 rounds below this alpha, so BH's last line fell under
    # its own p while Holm's (alpha / 1) did not: Holm rejected what BH kept.
    alpha = 0.051518904707976085
    assert alpha * 3 / 3 < alpha
    p = [0.0, 0.0, alpha]
    assert holm(p, alpha).tolist() == [True, True, True]
    assert benjamini_hochberg(p, alpha).tolist() == [True, True, True]
    above = math.nextafter(alpha, 1.0)
    assert holm([0.0, 0.0, above], alpha).tolist() == [True, True, False]
    assert benjamini_hochberg([0.0, 0.0, above], alpha).tolist() == [True, True, False]


@given(st.lists(pvalue, min_size=1, max_size=30), st.floats(1e-6, 0.2))
def test_holm_controls_with_one_test_like_the_raw_level(p, alpha):
    assert holm(p[:1], alpha).tolist() == [p[0] <= alpha]


def test_wasserstein_from_counts_matches_scipy():
    rng = np.random.default_rng(3)
    values = np.sort(rng.random(12))
    counts_a = rng.integers(0, 5, (6, 12)).astype(float)
    counts_b = rng.integers(0, 5, (6, 12)).astype(float)
    counts_a[:, 0] += 1  # no empty rows
    counts_b[:, -1] += 1
    ours = wasserstein_from_counts(values, counts_a, counts_b)
    for row in range(6):
        expected = stats.wasserstein_distance(values, values, counts_a[row], counts_b[row])
        assert ours[row] == pytest.approx(expected, rel=1e-12, abs=1e-12)


def test_bootstrap_distance_is_that_of_two_fresh_samples():
    # Both sides are resampled, so the bootstrap distance should look like the
    # distance between a fresh window and a fresh reference, not smaller.
    rng = np.random.default_rng(4)
    reference = rng.beta(2, 5, 2000)
    sd = reference.std(ddof=1)
    boot = bootstrap_reference(reference, 100, sd, 2000, np.random.default_rng(5))
    fresh = [
        normalized_wasserstein(rng.beta(2, 5, 100), rng.beta(2, 5, 2000), sd) for _ in range(2000)
    ]
    assert boot.wasserstein.mean() == pytest.approx(np.mean(fresh), rel=0.08)
    assert np.quantile(boot.wasserstein, 0.99) == pytest.approx(np.quantile(fresh, 0.99), rel=0.15)


def test_bootstrap_variance_is_the_resampled_windows_variance():
    reference = np.array([0.0, 1.0] * 500)
    boot = bootstrap_reference(reference, 50, 0.5, 3000, np.random.default_rng(6))
    # A fair 0/1 window of 50 has variance p(1-p) * 50/49 with p ~ Binomial/50.
    assert boot.variance.mean() == pytest.approx(0.25, rel=0.03)
    assert (boot.variance >= 0).all()


def test_a_fixed_threshold_fires_on_small_drift_free_windows_and_the_bootstrap_does_not():
    rng = np.random.default_rng(7)
    reference = rng.beta(2, 5, 1000)
    sd = reference.std(ddof=1)
    threshold = np.quantile(
        bootstrap_reference(reference, 60, sd, 1000, np.random.default_rng(8)).wasserstein, 0.995
    )
    distances = np.array(
        [normalized_wasserstein(rng.beta(2, 5, 60), reference, sd) for _ in range(1000)]
    )
    assert (distances > 0.1).mean() > 0.5
    assert (distances > threshold).mean() < 0.02


@settings(max_examples=15, deadline=None)
@given(st.integers(0, 10_000), st.sampled_from([(20, 80), (50, 200), (30, 300)]))
def test_bootstrap_threshold_falls_as_the_window_grows(seed, sizes):
    small, large = sizes
    reference = np.random.default_rng(seed).beta(0.7, 0.7, 1500)
    sd = reference.std(ddof=1)

    def threshold(n):
        boot = bootstrap_reference(reference, n, sd, 400, np.random.default_rng(seed + 1))
        return np.quantile(boot.wasserstein, 0.99)

    assert threshold(large) < threshold(small)


@pytest.mark.parametrize(
    ("probability", "alpha", "needed"),
    [(0.5, 1e-6, 20), (1e-3, 1e-6, 2), (1 / 1001, 1e-6, 2), (0.2, 1e-6, 9), (0.0, 1e-6, 1)],
)
def test_windows_needed_table(probability, alpha, needed):
    assert windows_needed(probability, alpha) == needed
    if probability > 0:
        assert probability**needed <= alpha


def test_windows_needed_refuses_a_certainty():
    with pytest.raises(ValueError, match="always holds"):
        windows_needed(1.0, 1e-6)


@pytest.mark.parametrize(
    ("a", "na", "b", "nb", "z"),
    [
        # pooled 0.575, se sqrt(0.575 * 0.425 * 0.02) = 0.069911
        (50, 100, 65, 100, 2.14560),
        (65, 100, 50, 100, -2.14560),
        (0, 100, 0, 100, 0.0),
        (100, 100, 100, 100, 0.0),
        (5, 0, 5, 10, 0.0),
    ],
)
def test_two_proportion_z_table(a, na, b, nb, z):
    assert two_proportion_z(a, na, b, nb) == pytest.approx(z, abs=1e-4)


def test_fisher_z_rise():
    assert fisher_z_rise(0.3, 200, 0.3, 1000) == 0.0
    # atanh(0.5) - atanh(0.1) = 0.448971; se = sqrt(1.06 * (1/97 + 1/997)) = 0.109504
    assert fisher_z_rise(0.5, 100, 0.1, 1000) == pytest.approx(4.10006, abs=1e-4)
    assert fisher_z_rise(0.1, 100, 0.5, 1000) < 0
    assert math.isnan(fisher_z_rise(0.5, 3, 0.1, 1000))
    assert math.isnan(fisher_z_rise(math.nan, 100, 0.1, 1000))
    assert math.isfinite(fisher_z_rise(1.0, 100, -1.0, 100))


@pytest.mark.parametrize(
    ("sd", "n", "expected"),
    [
        (0.2, 1000, 0.2),
        (0.0, 1000, math.sqrt(0.003 * 0.997)),
        (0.0, 2, 0.5),
        (0.01, 100, math.sqrt(0.03 * 0.97)),
    ],
)
def test_effective_sd_floors_a_constant_reference(sd, n, expected):
    assert effective_sd(sd, n) == pytest.approx(expected)


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.floats(0, 1), min_size=1, max_size=300),
    st.lists(st.sampled_from([0.0, 0.25, 0.5, 1.0]) | st.floats(0, 1), min_size=1, max_size=900),
)
def test_ks_two_sample_is_scipys_ks_2samp(window: list[float], reference: list[float]) -> None:
    expected = stats.ks_2samp(window, sorted(reference))
    answer = (float(expected.statistic), float(expected.pvalue))
    assert ks_two_sample(np.array(window), np.sort(reference)) == answer
    # Asked again (now from what scipy said before), and with the data reversed.
    assert ks_two_sample(np.array(window[::-1]), np.array(reference[::-1])) == answer


def test_ks_two_sample_reuses_scipys_answers_exactly() -> None:
    rng = np.random.default_rng(7)
    reference = np.sort(rng.choice([0.0, 0.25, 0.5, 1.0], 2000) + rng.random(2000) / 10)
    windows = [rng.choice(reference, 200) for _ in range(150)]
    windows += [np.round(rng.random(200), 1) for _ in range(50)]
    answers = [ks_two_sample(w, reference) for w in windows]
    # Windows of one stream land on few lattice points: most answers were reused,
    # and every one is what scipy says for that window.
    assert len(set(answers)) < len(windows) / 2
    for window, answer in zip(windows, answers, strict=True):
        expected = stats.ks_2samp(window, reference)
        assert answer == (float(expected.statistic), float(expected.pvalue))
