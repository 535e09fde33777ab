"""Human-review sampling: which graded samples go to reviewers, and with what probability.

Each policy names a rate for the samples it applies to: every sample (uniform), the
samples in one reward decile (stratified), those whose graders disagree, those with a
high reward *and* a violation. A sample's inclusion probability is the largest rate
among the policies that apply, boosted for a while after a drift alert. One uniform
number per sample, drawn from a hash of (seed, rubric, sample id), decides: the same
sample is always sampled the same way, and the recorded probability is exactly the
probability with which it was sampled, so agreement statistics weighted by its
inverse are unbiased.
"""

from __future__ import annotations

import hashlib
import math
from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from arbiter.graders.types import ViolationType

__all__ = [
    "ReviewCandidate",
    "RewardDeciles",
    "SamplingDecision",
    "SamplingPolicy",
    "decide",
    "unit_hash",
]

UNIFORM = "uniform"
DECILE = "reward_decile"
DISAGREEMENT = "disagreement"
VIOLATION = "high_reward_violation"
BOOST = "drift_boost"


def unit_hash(seed: str, rubric: str, sample_id: str) -> float:
    """Return a number in [0, 1) fixed by (seed, rubric, sample id), uniform over ids."""
    digest = hashlib.blake2b(f"{seed}\x00{rubric}\x00{sample_id}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") / 2.0**64


def _rate(value: float, name: str) -> float:
    if not (math.isfinite(value) and 0.0 <= value <= 1.0):
        raise ValueError(f"{name} must be a probability in [0, 1], got {value!r}")
    return value


@dataclass(frozen=True, slots=True)
class SamplingPolicy:
    """One rubric's review sampling.

    Attributes:
        uniform_rate: probability for every sample.
        decile_rates: ten probabilities, one per reward decile (lowest first), or
            empty for no stratification.
        disagreement_rate: probability for a sample whose component scores spread by
            at least ``disagreement_gap`` (tests pass but the judge is low, or the reverse).
        disagreement_gap: the spread (max - min of the scored components) that counts.
        violation_rate: probability for a sample with a violation whose reward is at
            or above ``high_reward``.
        high_reward: the reward from which a violation is suspicious; ``None`` means
            the top decile's lower edge (when deciles are known).
        boost_factor: multiplies the probability while a drift alert is open.
        required_reviews: labels each sampled item needs (2 for double review).
        seed: makes one deployment's draws independent of another's.
    """

    uniform_rate: float = 0.0
    decile_rates: tuple[float, ...] = ()
    disagreement_rate: float = 0.0
    disagreement_gap: float = 0.5
    violation_rate: float = 0.0
    high_reward: float | None = None
    boost_factor: float = 1.0
    required_reviews: int = 1
    seed: str = "arbiter-review"

    def __post_init__(self) -> None:
        _rate(self.uniform_rate, "uniform_rate")
        if self.decile_rates and len(self.decile_rates) != 10:
            raise ValueError(f"decile_rates needs 10 rates, got {len(self.decile_rates)}")
        for i, r in enumerate(self.decile_rates):
            _rate(r, f"decile_rates[{i}]")
        _rate(self.disagreement_rate, "disagreement_rate")
        _rate(self.violation_rate, "violation_rate")
        if not (math.isfinite(self.disagreement_gap) and 0.0 < self.disagreement_gap <= 1.0):
            raise ValueError(f"disagreement_gap must be in (0, 1], got {self.disagreement_gap!r}")
        if not (math.isfinite(self.boost_factor) and self.boost_factor >= 1.0):
            raise ValueError(f"boost_factor must be >= 1, got {self.boost_factor!r}")
        if self.required_reviews < 1:
            raise ValueError(f"required_reviews must be >= 1, got {self.required_reviews}")

    @property
    def active(self) -> bool:
        """Whether any sample can ever be sampled (a cheap early exit on the reward path)."""
        return (
            self.uniform_rate > 0
            or any(r > 0 for r in self.decile_rates)
            or self.disagreement_rate > 0
            or self.violation_rate > 0
        )

    @property
    def needs_deciles(self) -> bool:
        """Whether decisions read the reward deciles (decile rates, or the default high reward)."""
        return bool(self.decile_rates) or (self.violation_rate > 0 and self.high_reward is None)

    @classmethod
    def from_review_spec(
        cls,
        sample_rate: float,
        stratify_by: Iterable[str] = (),
        *,
        boost_factor: float = 1.0,
        required_reviews: int = 1,
    ) -> SamplingPolicy:
        """Build a policy from a rubric's ``review`` section.

        ``sample_rate`` is the uniform rate. Each name in ``stratify_by`` turns on one
        targeted policy: ``reward_decile`` samples every decile at ``sample_rate``
        (so scarce deciles are not starved when combined with a boost), while
        ``disagreement`` and ``high_reward_violation`` sample what they select at ten
        times ``sample_rate`` (at most 1): those are where graders are most often wrong.
        """
        names = set(stratify_by)
        unknown = names - {DECILE, DISAGREEMENT, VIOLATION}
        if unknown:
            raise ValueError(f"unknown review strata: {sorted(unknown)}")
        targeted = min(1.0, 10 * sample_rate)
        return cls(
            uniform_rate=sample_rate,
            decile_rates=(sample_rate,) * 10 if DECILE in names else (),
            disagreement_rate=targeted if DISAGREEMENT in names else 0.0,
            violation_rate=targeted if VIOLATION in names else 0.0,
            boost_factor=boost_factor,
            required_reviews=required_reviews,
        )


@dataclass(frozen=True, slots=True)
class ReviewCandidate:
    """What the sampler needs to know about one graded sample."""

    sample_id: str
    reward: float | None
    component_scores: Mapping[str, float | None] = field(default_factory=dict)
    violations: Sequence[ViolationType] = ()
    drift_alert: bool = False


@dataclass(frozen=True, slots=True)
class SamplingDecision:
    """Whether a sample goes to review, with the probability it had and why."""

    sample_id: str
    sampled: bool
    inclusion_probability: float
    reason: str
    required_reviews: int


class RewardDeciles:
    """Decile edges of a rubric's recent rewards (a bounded window, in memory).

    Rewards are not all in [0, 1] (penalties, group normalization), so deciles come
    from what the rubric has actually produced rather than from fixed bins.
    """

    def __init__(self, window: int = 5000, min_count: int = 100) -> None:
        self._values: deque[float] = deque(maxlen=window)
        self.window = window
        self.min_count = min_count

    def add(self, rewards: Iterable[float | None]) -> None:
        """Remember these rewards (abstentions are skipped)."""
        self._values.extend(r for r in rewards if r is not None and math.isfinite(r))

    def edges(self) -> tuple[float, ...] | None:
        """Return the nine inner decile edges, or ``None`` while too few rewards are known."""
        n = len(self._values)
        if n < self.min_count:
            return None
        ordered = sorted(self._values)
        # The k-th edge is the value below which k/10 of the rewards lie (lower quantile).
        return tuple(ordered[min(n - 1, (k * n) // 10)] for k in range(1, 10))


def decile_of(reward: float, edges: Sequence[float]) -> int:
    """Return the decile (0-9) of ``reward`` given the nine inner edges."""
    lo, hi = 0, len(edges)
    while lo < hi:  # the number of edges <= reward
        mid = (lo + hi) // 2
        if edges[mid] <= reward:
            lo = mid + 1
        else:
            hi = mid
    return lo


def decide(
    policy: SamplingPolicy,
    rubric: str,
    candidate: ReviewCandidate,
    edges: Sequence[float] | None = None,
) -> SamplingDecision:
    """Decide whether one sample goes to review.

    Args:
        policy: the rubric's sampling policy.
        rubric: the rubric's name (part of the hash, so rubrics draw independently).
        candidate: the graded sample.
        edges: the nine inner reward-decile edges, or ``None`` when unknown; the
            decile and the default high-reward policies then do not apply.

    Returns:
        The decision; ``inclusion_probability`` is the probability with which this
        sample was (or would have been) sampled, whether or not it was.
    """
    rates: list[tuple[float, str]] = [(policy.uniform_rate, UNIFORM)]
    reward = candidate.reward
    decile = decile_of(reward, edges) if reward is not None and edges is not None else None
    if policy.decile_rates and decile is not None:
        rates.append((policy.decile_rates[decile], DECILE))
    scored = [s for s in candidate.component_scores.values() if s is not None]
    # Small epsilon: 0.9 - 0.4 is 0.49999999999999994 in floating point.
    if (
        policy.disagreement_rate > 0
        and len(scored) >= 2
        and max(scored) - min(scored) >= policy.disagreement_gap - 1e-12
    ):
        rates.append((policy.disagreement_rate, DISAGREEMENT))
    if policy.violation_rate > 0 and candidate.violations and reward is not None:
        threshold = policy.high_reward
        if threshold is None and edges is not None:
            threshold = edges[-1]
        if threshold is not None and reward >= threshold:
            rates.append((policy.violation_rate, VIOLATION))
    # The largest applicable rate wins; ties go to the most specific policy (listed last).
    probability, reason = max(reversed(rates), key=lambda pair: pair[0])
    if candidate.drift_alert and policy.boost_factor > 1.0 and probability > 0:
        probability = min(1.0, probability * policy.boost_factor)
        reason = f"{reason}+{BOOST}"
    draw = unit_hash(policy.seed, rubric, candidate.sample_id)
    return SamplingDecision(
        sample_id=candidate.sample_id,
        sampled=draw < probability,
        inclusion_probability=probability,
        reason=reason,
        required_reviews=policy.required_reviews,
    )
