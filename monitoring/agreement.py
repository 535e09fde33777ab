"""Agreement between graders and human reviewers, weighted by inverse inclusion probability.

Review items are not a simple random sample: disagreement and violation sampling
over-represent exactly the cases where graders fail. Weighting each labelled item by
``1 / inclusion_probability`` (Horvitz-Thompson) makes every statistic here estimate
its value over *all* graded samples; with equal probabilities the weights cancel and
the statistics are the textbook ones.

Statistics: Cohen's kappa and Gwet's AC1 for pass/fail, quadratic weighted kappa for
ordinal scores, Spearman's rho and the mean absolute error for continuous ones, each
with a percentile bootstrap confidence interval. Below ``MIN_LABELS`` labels the
answer is "insufficient data", not a number that looks meaningful and is not.

Scales: a reviewer scores in [0, 1], a rubric's reward lives in its clip range
(often [-1, 1]); the reward is mapped onto [0, 1] through that range before any
comparison, so an MAE of 0.5 means half the scale, not "one is negative".

Pass thresholds: a component's score counts as a pass by its grader's kind
(``PASS_THRESHOLDS``), the same rule the review page states beside each component:
tests and hack detectors pass only at 1.0 (every test passes, nothing found),
radon only at 1.0 (every metric within its "fine up to"), bandit at 0.8 (no finding
of MEDIUM severity at MEDIUM confidence or worse under the default weights), the rest
at 0.5. One threshold for all (0.5) made bandit pass ``eval`` and put security
agreement low by construction.

Counts: every statistic comes with the counts behind it. Kappa and AC1 disagree
most when one label dominates: with the grader passing 97 of 100 items and the
reviewer 95, kappa can be 0.0 while AC1 is 0.9, and only the table says why.

One module, one concept: grader-versus-human agreement — the statistics share one
weighting and one bootstrap. The bootstrap is written here, not taken from
``scipy.stats.bootstrap``: it resamples weighted pairs and drops the resamples where a
statistic is undefined (a rater constant in the resample), where scipy's would turn the
whole interval into NaN.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

__all__ = [
    "DEFAULT_PASS_THRESHOLD",
    "MIN_LABELS",
    "PASS_THRESHOLDS",
    "Agreement",
    "LabelledPair",
    "agreement",
    "agreement_report",
    "binary_counts",
    "cohen_kappa",
    "gwet_ac1",
    "labelled_pair",
    "mean_absolute_error",
    "pass_threshold",
    "quadratic_weighted_kappa",
    "spearman",
]

MIN_LABELS = 50

#: A grader score at or above this is a pass, by grader kind (see the module docstring).
PASS_THRESHOLDS: Mapping[str, float] = {
    "unit_tests": 1.0,
    "violations": 1.0,
    "radon": 1.0,
    "bandit": 0.8,
    "efficiency": 0.5,
    "process": 0.5,
    "reward_model": 0.5,
    "llm_judge": 0.5,
}
#: For a grader kind not listed (a plugin's).
DEFAULT_PASS_THRESHOLD = 0.5


def pass_threshold(grader: str | None) -> float:
    """Return the score at or above which a grader kind's component counts as a pass."""
    return PASS_THRESHOLDS.get(grader or "", DEFAULT_PASS_THRESHOLD)


Floats = NDArray[np.float64]
Statistic = Callable[[Floats, Floats, Floats], float]


def _arrays(a: ArrayLike, b: ArrayLike, weights: ArrayLike | None) -> tuple[Floats, Floats, Floats]:
    x = np.asarray(a, dtype=np.float64)
    y = np.asarray(b, dtype=np.float64)
    if x.ndim != 1 or x.shape != y.shape:
        raise ValueError(f"need two 1-D sequences of one length, got {x.shape} and {y.shape}")
    w = np.ones_like(x) if weights is None else np.asarray(weights, dtype=np.float64)
    if w.shape != x.shape:
        raise ValueError(f"weights have shape {w.shape}, labels {x.shape}")
    if not (np.all(np.isfinite(w)) and np.all(w >= 0)):
        raise ValueError("weights must be finite and non-negative")
    return x, y, w


def _table(x: Floats, y: Floats, w: Floats, categories: Floats) -> Floats:
    """Return the weighted joint proportions of (x, y) over ``categories``."""
    i = np.searchsorted(categories, x)
    j = np.searchsorted(categories, y)
    k = len(categories)
    table = np.zeros((k, k))
    np.add.at(table, (i, j), w)
    total = table.sum()
    if total <= 0:
        return np.full((k, k), np.nan)
    out: Floats = table / total
    return out


def _one_label(p: Floats) -> bool:
    """Return whether both raters used one and the same label throughout (or no weight).

    Chance agreement is then total and kappa 0/0. Decided on the table's support,
    not on ``p_e`` near 1, which rounding puts on either side of any tolerance.
    """
    if not np.all(np.isfinite(p)):
        return True
    return int(np.count_nonzero(p.sum(axis=1) + p.sum(axis=0))) <= 1


def _categories(x: Floats, y: Floats, given: Sequence[float] | None) -> Floats:
    if given is None:
        return np.unique(np.concatenate([x, y]))
    cats = np.asarray(sorted(given), dtype=np.float64)
    if not np.all(np.isin(x, cats)) or not np.all(np.isin(y, cats)):
        raise ValueError("a label is not one of the given categories")
    return cats


def cohen_kappa(
    a: ArrayLike,
    b: ArrayLike,
    weights: ArrayLike | None = None,
    categories: Sequence[float] | None = None,
) -> float:
    """Return Cohen's kappa of two raters' nominal labels (e.g. 1 = pass, 0 = fail).

    ``nan`` when chance agreement is total (both raters always give one label):
    kappa is undefined there, and 1.0 would claim skill that was never tested.
    """
    x, y, w = _arrays(a, b, weights)
    p = _table(x, y, w, _categories(x, y, categories))
    if _one_label(p):
        return math.nan
    p_o = float(np.trace(p))
    p_e = float(p.sum(axis=1) @ p.sum(axis=0))
    return (p_o - p_e) / (1.0 - p_e)


def gwet_ac1(
    a: ArrayLike,
    b: ArrayLike,
    weights: ArrayLike | None = None,
    categories: Sequence[float] | None = None,
) -> float:
    """Return Gwet's AC1 of two raters' nominal labels.

    Unlike kappa, AC1 stays meaningful when one label dominates (most rollouts fail
    their tests), which is the usual case for pass/fail grading. With two categories
    its chance agreement is ``2 pi (1 - pi)`` where ``pi`` is the mean pass rate.
    """
    x, y, w = _arrays(a, b, weights)
    cats = _categories(x, y, categories)
    q = len(cats)
    if q < 2:
        # Both raters used one label throughout: agreement is total, chance is zero.
        return 1.0 if w.sum() > 0 else math.nan
    p = _table(x, y, w, cats)
    p_o = float(np.trace(p))
    pi = (p.sum(axis=1) + p.sum(axis=0)) / 2.0
    p_e = float(np.sum(pi * (1.0 - pi)) / (q - 1))
    return (p_o - p_e) / (1.0 - p_e)


def quadratic_weighted_kappa(
    a: ArrayLike,
    b: ArrayLike,
    weights: ArrayLike | None = None,
    categories: Sequence[float] | None = None,
) -> float:
    """Return the quadratic weighted kappa of two raters' ordinal labels.

    Disagreements cost the squared distance between category indices, so 1 vs 2 on
    a five-point scale costs a sixteenth of 1 vs 5.
    """
    x, y, w = _arrays(a, b, weights)
    cats = _categories(x, y, categories)
    k = len(cats)
    if k < 2:
        return math.nan
    p = _table(x, y, w, cats)
    if _one_label(p):
        return math.nan
    idx = np.arange(k, dtype=np.float64)
    cost = (idx[:, None] - idx[None, :]) ** 2 / (k - 1) ** 2
    expected = np.outer(p.sum(axis=1), p.sum(axis=0))
    denominator = float(np.sum(cost * expected))
    return 1.0 - float(np.sum(cost * p)) / denominator


def _weighted_midranks(x: Floats, w: Floats) -> Floats:
    """Return each value's weighted mid-rank: the weight below it plus half its tie group's.

    With equal weights this is the ordinary average rank shifted and scaled, so the
    correlation of these ranks is exactly Spearman's rho.
    """
    order = np.argsort(x, kind="stable")
    xs, ws = x[order], w[order]
    starts = np.flatnonzero(np.r_[True, xs[1:] != xs[:-1]])
    group_w = np.add.reduceat(ws, starts)
    below = np.cumsum(group_w) - group_w
    mid = below + group_w / 2.0
    ranks = np.empty_like(x)
    ranks[order] = np.repeat(mid, np.diff(np.r_[starts, len(xs)]))
    return ranks


def spearman(a: ArrayLike, b: ArrayLike, weights: ArrayLike | None = None) -> float:
    """Return Spearman's rho (weighted mid-ranks, weighted Pearson correlation)."""
    x, y, w = _arrays(a, b, weights)
    if w.sum() <= 0:
        return math.nan
    used = w > 0
    if np.ptp(x[used]) == 0 or np.ptp(y[used]) == 0:
        # A constant rater has no ranking to agree with. Decided on the values: the
        # centred ranks of a constant are rounding noise, not zero, once weighted.
        return math.nan
    rx, ry = _weighted_midranks(x, w), _weighted_midranks(y, w)
    wn = w / w.sum()
    dx, dy = rx - wn @ rx, ry - wn @ ry
    var = float((wn @ dx**2) * (wn @ dy**2))
    return float(wn @ (dx * dy)) / math.sqrt(var)


def mean_absolute_error(a: ArrayLike, b: ArrayLike, weights: ArrayLike | None = None) -> float:
    """Return the weighted mean absolute difference of two raters' scores."""
    x, y, w = _arrays(a, b, weights)
    total = w.sum()
    return float(w @ np.abs(x - y) / total) if total > 0 else math.nan


@dataclass(frozen=True, slots=True)
class Agreement:
    """One agreement statistic over ``n`` labelled items.

    ``value`` and the interval are ``None`` when ``status`` is ``insufficient_data``
    (fewer than ``MIN_LABELS`` labels) or ``undefined`` (e.g. kappa when both raters
    gave one label throughout).
    """

    statistic: str
    n: int
    status: Literal["ok", "insufficient_data", "undefined"]
    value: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    confidence: float = 0.95

    def as_dict(self) -> dict[str, Any]:
        """Return the JSON-ready form."""
        return {
            "statistic": self.statistic,
            "n": self.n,
            "status": self.status,
            "value": self.value,
            "ci_low": self.ci_low,
            "ci_high": self.ci_high,
            "confidence": self.confidence,
        }


STATISTICS: dict[str, Statistic] = {
    "cohen_kappa": lambda x, y, w: cohen_kappa(x, y, w),
    "gwet_ac1": lambda x, y, w: gwet_ac1(x, y, w),
    "spearman": spearman,
    "mae": mean_absolute_error,
}


def agreement(
    statistic: str,
    a: ArrayLike,
    b: ArrayLike,
    inclusion_probability: ArrayLike | None = None,
    *,
    categories: Sequence[float] | None = None,
    min_labels: int = MIN_LABELS,
    n_resamples: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
) -> Agreement:
    """Compute one statistic with its bootstrap interval, weighted by inverse inclusion.

    Args:
        statistic: ``cohen_kappa``, ``gwet_ac1``, ``quadratic_weighted_kappa``,
            ``spearman`` or ``mae``.
        a: the grader's labels.
        b: the reviewers' labels, paired with ``a``.
        inclusion_probability: each item's probability of having been sampled
            (``None``: all equal).
        categories: the label set, for the kappas (default: the labels seen). Fixing
            it keeps bootstrap resamples that lack a category comparable.
        min_labels: below this many pairs the answer is "insufficient data".
        n_resamples: bootstrap resamples (pairs resampled with replacement).
        confidence: the interval's coverage.
        seed: the bootstrap's seed; the same inputs give the same interval.
    """
    x, y, _ = _arrays(a, b, None)
    if inclusion_probability is None:
        w = np.ones_like(x)
    else:
        pi = np.asarray(inclusion_probability, dtype=np.float64)
        if pi.shape != x.shape or not np.all((pi > 0) & (pi <= 1)):
            raise ValueError("inclusion probabilities must be in (0, 1], one per pair")
        w = 1.0 / pi
    fn: Statistic
    if statistic == "quadratic_weighted_kappa":
        cats = categories if categories is not None else list(_categories(x, y, None))

        def qwk(x: Floats, y: Floats, w: Floats) -> float:
            return quadratic_weighted_kappa(x, y, w, cats)

        fn = qwk
    elif statistic in ("cohen_kappa", "gwet_ac1"):
        cats = categories if categories is not None else list(_categories(x, y, None))
        base = cohen_kappa if statistic == "cohen_kappa" else gwet_ac1

        def nominal(x: Floats, y: Floats, w: Floats) -> float:
            return base(x, y, w, cats)

        fn = nominal
    elif statistic in STATISTICS:
        fn = STATISTICS[statistic]
    else:
        raise ValueError(f"unknown statistic {statistic!r}")
    n = len(x)
    if n < min_labels:
        return Agreement(statistic, n, "insufficient_data", confidence=confidence)
    value = fn(x, y, w)
    if not math.isfinite(value):
        return Agreement(statistic, n, "undefined", confidence=confidence)
    rng = np.random.default_rng(seed)
    draws = np.empty(n_resamples)
    for r in range(n_resamples):
        idx = rng.integers(0, n, size=n)
        draws[r] = fn(x[idx], y[idx], w[idx])
    # Resamples where the statistic is undefined (a rater constant in the resample)
    # are dropped rather than counted as any value.
    finite = draws[np.isfinite(draws)]
    alpha = (1.0 - confidence) / 2.0
    low, high = (
        (float(np.quantile(finite, alpha)), float(np.quantile(finite, 1.0 - alpha)))
        if len(finite)
        else (None, None)
    )
    return Agreement(statistic, n, "ok", value, low, high, confidence)


@dataclass(frozen=True, slots=True)
class LabelledPair:
    """One reviewed item: what the graders said beside what the reviewer said.

    Attributes:
        inclusion_probability: the probability with which the item was sampled.
        grader_components: component name -> score in [0, 1] (``None``: not scored).
        grader_reward: the reward before group normalization (``None``: abstained).
        grader_flagged: whether any violation detector fired.
        human_verdicts: component name -> pass (``True``) or fail; absent: no verdict.
        human_score: the reviewer's overall score in [0, 1], or ``None``.
        human_flagged: whether the reviewer named any hack type.
        reward_range: the grader reward's range (the rubric's clip; [0, 1] without
            one), so it can be put on the reviewer's [0, 1] scale.
        grader_kinds: component name -> the grader that scored it, which picks its
            pass threshold (absent: ``DEFAULT_PASS_THRESHOLD``).
    """

    inclusion_probability: float
    grader_components: Mapping[str, float | None] = field(default_factory=dict)
    grader_reward: float | None = None
    grader_flagged: bool = False
    human_verdicts: Mapping[str, bool] = field(default_factory=dict)
    human_score: float | None = None
    human_flagged: bool = False

    reward_range: tuple[float, float] = (0.0, 1.0)
    grader_kinds: Mapping[str, str] = field(default_factory=dict)

    @property
    def grader_score(self) -> float | None:
        """Return the grader's reward on the reviewer's [0, 1] scale (clamped to it)."""
        if self.grader_reward is None:
            return None
        low, high = self.reward_range
        return min(1.0, max(0.0, (self.grader_reward - low) / (high - low)))


def labelled_pair(
    record: Mapping[str, Any],
    *,
    inclusion_probability: float,
    verdicts: Mapping[str, str],
    overall_score: float | None,
    hack_types: Sequence[str],
    reward_range: tuple[float, float] | None = None,
) -> LabelledPair:
    """Pair a logged reward record with a reviewer's label.

    Args:
        record: the reward as logged (``components``, ``raw_reward``).
        inclusion_probability: the item's sampling probability.
        verdicts: component name -> ``"pass"`` or ``"fail"``.
        overall_score: the reviewer's overall score in [0, 1], or ``None``.
        hack_types: the hack types the reviewer named.
        reward_range: the rubric's clip range (``None``: [0, 1]).
    """
    components = record.get("components", {})
    low, high = reward_range if reward_range is not None else (0.0, 1.0)
    if not high > low:
        raise ValueError(f"reward_range needs low < high; found [{low}, {high}]")
    return LabelledPair(
        inclusion_probability=inclusion_probability,
        grader_components={n: c.get("score") for n, c in components.items()},
        grader_reward=record.get("raw_reward"),
        grader_flagged=any(c.get("violations") for c in components.values()),
        human_verdicts={n: v == "pass" for n, v in verdicts.items()},
        human_score=overall_score,
        human_flagged=bool(hack_types),
        reward_range=(float(low), float(high)),
        grader_kinds={n: str(c["grader"]) for n, c in components.items() if c.get("grader")},
    )


def binary_counts(rows: Sequence[tuple[float, float, float]]) -> dict[str, Any]:
    """Count the 2x2 table behind a kappa or AC1: (grader, human, inclusion probability) rows.

    The counts are of labels as given; the rates are weighted by inverse inclusion
    probability, like the statistics beside them.
    """
    table = {"both_yes": 0, "both_no": 0, "grader_only": 0, "human_only": 0}
    weight = grader_yes = human_yes = agree = 0.0
    for grader, human, probability in rows:
        g, h = grader >= 0.5, human >= 0.5
        key = ("both_yes" if h else "grader_only") if g else ("human_only" if h else "both_no")
        table[key] += 1
        w = 1.0 / probability
        weight += w
        grader_yes += w * g
        human_yes += w * h
        agree += w * (g == h)
    rate = (lambda x: x / weight) if weight > 0 else (lambda _x: None)
    return {
        "n": len(rows),
        **table,
        "grader_rate": rate(grader_yes),
        "human_rate": rate(human_yes),
        "observed_agreement": rate(agree),
    }


ORDINAL_LEVELS = 5


def _ordinal(score: float) -> float:
    """Map a score in [0, 1] to one of five levels (0-4), the review form's scale."""
    return float(round(min(1.0, max(0.0, score)) * (ORDINAL_LEVELS - 1)))


def agreement_report(
    pairs: Sequence[LabelledPair],
    *,
    pass_thresholds: Mapping[str, float] | None = None,
    min_labels: int = MIN_LABELS,
    n_resamples: int = 1000,
    seed: int = 0,
) -> dict[str, Any]:
    """Compute every grader-vs-human statistic the labelled items allow.

    Pass/fail per component (a grader score at or above the component's threshold is
    a pass: ``pass_thresholds[name]`` when given, else its grader kind's, stated in
    the report as ``pass_threshold`` and ``grader``) and for
    hack detection (any violation vs any hack type): kappa and AC1, beside the 2x2
    counts (``counts``: ``both_yes`` = both pass or both flag, ``grader_only``,
    ``human_only``, ``both_no``, and the weighted rates). The overall score, with the
    grader's reward mapped onto [0, 1] by its rubric's range: quadratic weighted
    kappa on five levels, Spearman and MAE.
    """

    def run(statistic: str, rows: list[tuple[float, float, float]], cats: Any = None) -> Any:
        if rows:
            x, y, p = (list(col) for col in zip(*rows, strict=True))
        else:
            x, y, p = [], [], []
        return agreement(
            statistic,
            x,
            y,
            p,
            categories=cats,
            min_labels=min_labels,
            n_resamples=n_resamples,
            seed=seed,
        ).as_dict()

    components: dict[str, Any] = {}
    names = sorted({name for pair in pairs for name in pair.human_verdicts})
    for name in names:
        given = (pass_thresholds or {}).get(name)
        kinds: set[str | None] = {p.grader_kinds.get(name) for p in pairs}
        rows = []
        for pair in pairs:
            score = pair.grader_components.get(name)
            verdict = pair.human_verdicts.get(name)
            if score is not None and verdict is not None:
                # Each label is read by the grader that scored its item: a component
                # may name another grader in another version of its rubric.
                kind = pair.grader_kinds.get(name)
                threshold = given if given is not None else pass_threshold(kind)
                rows.append((float(score >= threshold), float(verdict), pair.inclusion_probability))
        thresholds = sorted({given} if given is not None else {pass_threshold(k) for k in kinds})
        named = sorted(k for k in kinds if k)
        components[name] = {
            "grader": named[0] if len(named) == 1 else named or None,
            "pass_threshold": thresholds[0] if len(thresholds) == 1 else thresholds,
            "pass_rule": "a grader score at or above pass_threshold is a pass",
            "counts": binary_counts(rows),
            **{s: run(s, rows, [0.0, 1.0]) for s in ("cohen_kappa", "gwet_ac1")},
        }
    hack_rows = [
        (float(p.grader_flagged), float(p.human_flagged), p.inclusion_probability) for p in pairs
    ]
    scored = [
        (g, p.human_score, p.inclusion_probability)
        for p in pairs
        if (g := p.grader_score) is not None and p.human_score is not None
    ]
    ranges = sorted({p.reward_range for p in pairs})
    ordinal = [(_ordinal(g), _ordinal(h), pi) for g, h, pi in scored]
    levels = [float(level) for level in range(ORDINAL_LEVELS)]
    return {
        "n_labels": len(pairs),
        "min_labels": min_labels,
        "pass_thresholds": {**PASS_THRESHOLDS, "default": DEFAULT_PASS_THRESHOLD},
        "components": components,
        "hacks": {
            "counts": binary_counts(hack_rows),
            **{s: run(s, hack_rows, [0.0, 1.0]) for s in ("cohen_kappa", "gwet_ac1")},
        },
        "overall": {
            "n": len(scored),
            "reward_ranges": [list(r) for r in ranges],
            "scale": "grader reward mapped from its rubric's clip range onto the reviewer's [0, 1]",
            "quadratic_weighted_kappa": run("quadratic_weighted_kappa", ordinal, levels),
            "spearman": run("spearman", [(g, h, pi) for g, h, pi in scored]),
            "mae": run("mae", [(g, h, pi) for g, h, pi in scored]),
        },
    }
