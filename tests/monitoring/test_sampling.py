"""Review sampling: each policy's rate, the recorded probability, determinism."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy import stats

from arbiter.graders.types import ViolationType
from arbiter.monitoring.sampling import (
    ReviewCandidate,
    RewardDeciles,
    SamplingPolicy,
    decide,
    decile_of,
    unit_hash,
)

EDGES = tuple(k / 10 for k in range(1, 10))  # deciles of rewards uniform on [0, 1]


def candidate(i: int, reward: float | None = 0.5, **kwargs: object) -> ReviewCandidate:
    return ReviewCandidate(sample_id=f"s{i}", reward=reward, **kwargs)  # type: ignore[arg-type]


def test_the_hash_is_fixed_by_its_inputs_and_uniform() -> None:
    assert unit_hash("seed", "r", "s1") == unit_hash("seed", "r", "s1")
    assert unit_hash("seed", "r", "s1") != unit_hash("other", "r", "s1")
    draws = [unit_hash("seed", "r", f"s{i}") for i in range(5000)]
    assert all(0.0 <= d < 1.0 for d in draws)
    assert stats.kstest(draws, "uniform").pvalue > 1e-3


def test_uniform_rate_samples_that_fraction_and_records_it() -> None:
    policy = SamplingPolicy(uniform_rate=0.1)
    decisions = [decide(policy, "r", candidate(i)) for i in range(20_000)]
    assert {d.inclusion_probability for d in decisions} == {0.1}
    assert {d.reason for d in decisions} == {"uniform"}
    hits = sum(d.sampled for d in decisions)
    # 20,000 draws at 0.1: sd = 42; five sd either side.
    assert abs(hits - 2000) < 5 * 42
    again = [decide(policy, "r", candidate(i)).sampled for i in range(200)]
    assert again == [d.sampled for d in decisions[:200]]  # deterministic per sample id


def test_rate_zero_never_samples_and_rate_one_always_does() -> None:
    assert not any(decide(SamplingPolicy(), "r", candidate(i)).sampled for i in range(500))
    assert not SamplingPolicy().active
    full = SamplingPolicy(uniform_rate=1.0)
    assert all(decide(full, "r", candidate(i)).sampled for i in range(500))


@pytest.mark.parametrize(
    ("reward", "decile"), [(-5.0, 0), (0.05, 0), (0.1, 1), (0.55, 5), (0.9, 9), (3.0, 9)]
)
def test_decile_of(reward: float, decile: int) -> None:
    assert decile_of(reward, EDGES) == decile


def test_stratified_rates_by_reward_decile() -> None:
    rates = (0.0,) * 9 + (0.5,)
    policy = SamplingPolicy(decile_rates=rates)
    top = decide(policy, "r", candidate(1, reward=0.95), EDGES)
    low = decide(policy, "r", candidate(1, reward=0.15), EDGES)
    assert (top.inclusion_probability, top.reason) == (0.5, "reward_decile")
    assert low.inclusion_probability == 0.0 and not low.sampled
    # Without edges (too few rewards seen) the decile policy cannot apply.
    assert decide(policy, "r", candidate(1, reward=0.95)).inclusion_probability == 0.0
    # An abstained reward has no decile.
    assert decide(policy, "r", candidate(1, reward=None), EDGES).inclusion_probability == 0.0


def test_reward_deciles_from_a_window() -> None:
    tracker = RewardDeciles(window=1000, min_count=100)
    tracker.add([i / 99 for i in range(99)])
    assert tracker.edges() is None  # 99 < 100
    tracker.add([None, 1.0, float("nan")])
    edges = tracker.edges()
    assert edges is not None and len(edges) == 9
    assert list(edges) == sorted(edges)
    assert edges[4] == pytest.approx(0.5, abs=0.02)


@pytest.mark.parametrize(
    ("scores", "applies"),
    [
        ({"tests": 1.0, "judge": 0.2}, True),  # tests pass, judge low
        ({"tests": 0.0, "judge": 0.9}, True),  # the reverse
        ({"tests": 0.9, "judge": 0.4}, True),  # exactly the gap
        ({"tests": 1.0, "judge": 0.7}, False),
        ({"tests": 1.0, "judge": None}, False),  # one score is no disagreement
    ],
)
def test_disagreement_between_graders(scores: dict[str, float | None], applies: bool) -> None:
    policy = SamplingPolicy(uniform_rate=0.01, disagreement_rate=0.3, disagreement_gap=0.5)
    d = decide(policy, "r", candidate(1, component_scores=scores))
    assert (d.inclusion_probability, d.reason) == (
        (0.3, "disagreement") if applies else (0.01, "uniform")
    )


def test_high_reward_with_a_violation() -> None:
    policy = SamplingPolicy(violation_rate=1.0, high_reward=0.8)
    hack = [ViolationType.EARLY_EXIT]
    assert decide(policy, "r", candidate(1, 0.9, violations=hack)).reason == "high_reward_violation"
    assert decide(policy, "r", candidate(1, 0.9, violations=hack)).sampled
    assert decide(policy, "r", candidate(1, 0.5, violations=hack)).inclusion_probability == 0
    assert decide(policy, "r", candidate(1, 0.9)).inclusion_probability == 0
    # Without a fixed threshold, "high" means the top decile.
    by_decile = SamplingPolicy(violation_rate=1.0)
    assert decide(by_decile, "r", candidate(1, 0.95, violations=hack), EDGES).sampled
    assert not decide(by_decile, "r", candidate(1, 0.85, violations=hack), EDGES).sampled


def test_the_largest_applicable_rate_wins_and_a_drift_alert_boosts_it() -> None:
    policy = SamplingPolicy(
        uniform_rate=0.05,
        disagreement_rate=0.2,
        violation_rate=0.1,
        high_reward=0.5,
        boost_factor=4.0,
    )
    both = candidate(
        1, 0.9, component_scores={"a": 1.0, "b": 0.0}, violations=[ViolationType.SUBPROCESS]
    )
    d = decide(policy, "r", both)
    assert (d.inclusion_probability, d.reason) == (0.2, "disagreement")
    boosted = decide(
        policy, "r", candidate(1, 0.9, component_scores={"a": 1.0, "b": 0.0}, drift_alert=True)
    )
    assert boosted.inclusion_probability == pytest.approx(0.8)
    assert boosted.reason == "disagreement+drift_boost"
    capped = decide(
        SamplingPolicy(uniform_rate=0.5, boost_factor=10), "r", candidate(1, drift_alert=True)
    )
    assert capped.inclusion_probability == 1.0


@given(st.floats(0.0, 1.0), st.booleans(), st.floats(-2.0, 2.0))
def test_the_recorded_probability_is_the_sampling_probability(
    rate: float, alert: bool, reward: float
) -> None:
    policy = SamplingPolicy(uniform_rate=rate, boost_factor=2.0)
    d = decide(policy, "r", candidate(7, reward, drift_alert=alert), EDGES)
    assert 0.0 <= d.inclusion_probability <= 1.0
    # Sampled exactly when the sample's fixed draw falls under its probability.
    assert d.sampled == (unit_hash(policy.seed, "r", "s7") < d.inclusion_probability)


def test_empirical_inclusion_matches_the_recorded_probability_per_stratum() -> None:
    policy = SamplingPolicy(uniform_rate=0.02, disagreement_rate=0.4)
    rng = np.random.default_rng(0)
    counts = {"uniform": [0, 0.0], "disagreement": [0, 0.0]}
    for i in range(20_000):
        gap = bool(rng.random() < 0.3)
        d = decide(policy, "r", candidate(i, component_scores={"a": 1.0, "b": 0.0 if gap else 1.0}))
        counts[d.reason][0] += d.sampled
        counts[d.reason][1] += d.inclusion_probability
    for hits, expected in counts.values():
        assert abs(hits - expected) < 5 * np.sqrt(expected) + 5


@pytest.mark.parametrize(
    "kwargs",
    [
        {"uniform_rate": 1.5},
        {"decile_rates": (0.1,) * 9},
        {"decile_rates": (0.1,) * 9 + (2.0,)},
        {"disagreement_gap": 0.0},
        {"boost_factor": 0.5},
        {"required_reviews": 0},
        {"violation_rate": float("nan")},
    ],
)
def test_bad_policies_are_refused(kwargs: dict[str, object]) -> None:
    with pytest.raises(ValueError):
        SamplingPolicy(**kwargs)  # type: ignore[arg-type]


def test_policy_from_a_rubric_review_section() -> None:
    plain = SamplingPolicy.from_review_spec(0.01)
    assert plain.active and plain.uniform_rate == 0.01 and plain.disagreement_rate == 0
    full = SamplingPolicy.from_review_spec(
        0.05, ["reward_decile", "disagreement", "high_reward_violation"], required_reviews=2
    )
    assert full.decile_rates == (0.05,) * 10
    assert full.disagreement_rate == full.violation_rate == pytest.approx(0.5)
    assert full.required_reviews == 2
    with pytest.raises(ValueError, match="unknown review strata"):
        SamplingPolicy.from_review_spec(0.1, ["length"])
