"""The statistics behind the drift detectors: pure functions of arrays, no state.

Each is small enough to test on a table and against scipy; the monitor in
:mod:`arbiter.monitoring.drift` only strings them together per window. scipy computes
what it offers (the KS test, Wasserstein distances); what is written here either
scipy lacks (Holm, CUSUM) or runs on the request path, where scipy's general
call does more than the monitor needs, and the docstring says why.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import numpy as np
import numpy.typing as npt

__all__ = [
    "BootstrapReference",
    "benjamini_hochberg",
    "bootstrap_reference",
    "effective_sd",
    "fisher_rise_p",
    "fisher_z_rise",
    "holm",
    "ks_two_sample",
    "load_scipy",
    "normalized_wasserstein",
    "spearman_rho",
    "two_proportion_z",
    "two_sided_cusum",
    "wasserstein_from_counts",
    "windows_needed",
]

Floats = npt.NDArray[np.float64]
Bools = npt.NDArray[np.bool_]

# Spearman's rho has a slightly larger sampling variance than Pearson's r under the
# Fisher transform (Fieller, Hartley & Pearson 1957): var ≈ 1.06 / (n - 3).
_SPEARMAN_VARIANCE_FACTOR = 1.06


def two_sided_cusum(
    z: npt.ArrayLike, k: float, h: float, start: tuple[float, float] = (0.0, 0.0)
) -> tuple[Floats, Floats, Bools]:
    """Run a two-sided CUSUM over standardized window means.

    ``S+ = max(0, S+ + z - k)`` and ``S- = max(0, S- - z - k)``; a window whose
    statistic passes ``h`` alarms, and both sums restart from zero after it, so a
    shift that persists alarms again and keeps its alert open.

    Args:
        z: Standardized window means, in order.
        k: Allowance per window: drift smaller than ``k`` never accumulates.
        h: Decision threshold.
        start: ``(S+, S-)`` carried over from earlier windows.

    Returns:
        The upper and lower sums after each window (before any restart) and
        whether each window alarmed.
    """
    values = np.asarray(z, dtype=np.float64)
    upper = np.empty_like(values)
    lower = np.empty_like(values)
    alarm = np.zeros(values.shape, dtype=np.bool_)
    s_pos, s_neg = start
    # A loop, not a vectorised scan: the restart after an alarm makes each step
    # depend on the previous decision, and windows arrive a few at a time anyway.
    for i, zi in enumerate(values.tolist()):
        s_pos = max(0.0, s_pos + zi - k)
        s_neg = max(0.0, s_neg - zi - k)
        upper[i], lower[i] = s_pos, s_neg
        if s_pos > h or s_neg > h:
            alarm[i] = True
            s_pos = s_neg = 0.0
    return upper, lower, alarm


def holm(pvalues: npt.ArrayLike, alpha: float) -> Bools:
    """Reject with Holm's step-down procedure (family-wise error at most ``alpha``).

    Written here because scipy has no Holm correction
    (``scipy.stats.false_discovery_control`` offers only BH and BY).

    Returns:
        Which hypotheses are rejected, in the order given.
    """
    p = np.asarray(pvalues, dtype=np.float64)
    m = p.size
    reject = np.zeros(m, dtype=np.bool_)
    order = np.argsort(p, kind="stable")
    # The k-th smallest p is rejected while p * (m - k + 1) <= alpha, decided exactly.
    below = _scaled_at_most(p[order], np.arange(m, 0, -1), alpha, np.ones(m, dtype=np.int64))
    stop = int(np.argmin(below)) if not below.all() else m
    reject[order[:stop]] = True
    return reject


def benjamini_hochberg(pvalues: npt.ArrayLike, alpha: float) -> Bools:
    """Reject with the Benjamini-Hochberg step-up procedure (false discovery rate ``alpha``).

    The same decisions as ``scipy.stats.false_discovery_control(p) <= alpha``
    (the tests check it) but at exact ties, which scipy's float adjustment can
    round either way and this decides exactly; kept here for speed: the monitor corrects once per
    window per rubric on the request path, where scipy's general call
    (argument checks, any axis, any method) does more than this sort and
    compare.

    Returns:
        Which hypotheses are rejected, in the order given.
    """
    p = np.asarray(pvalues, dtype=np.float64)
    m = p.size
    reject = np.zeros(m, dtype=np.bool_)
    if m == 0:
        return reject
    order = np.argsort(p, kind="stable")
    # The k-th smallest p is below its line when p * m <= alpha * k, decided exactly.
    below = _scaled_at_most(p[order], np.full(m, m), alpha, np.arange(1, m + 1))
    if below.any():
        last = int(np.flatnonzero(below)[-1])
        reject[order[: last + 1]] = True
    return reject


def _scaled_at_most(
    p: Floats, scale: npt.NDArray[Any], alpha: float, times: npt.NDArray[Any]
) -> Bools:
    """``p * scale <= alpha * times``, elementwise and exact (``scale``, ``times``: integers).

    Floating point decides all but the near-ties; those are decided in rationals
    (a float is an exact rational), so the corrections keep their textbook order
    to the last bit: Holm never rejects what BH keeps, neither rejects what the
    uncorrected level keeps, and ``alpha * m / m`` rounding below ``alpha`` moves
    no decision.
    """
    lhs = p * scale
    rhs = alpha * times
    decided: Bools = np.asarray(lhs <= rhs, dtype=np.bool_)
    near = np.abs(lhs - rhs) <= 1e-9 * np.maximum(np.abs(lhs), np.abs(rhs)) + 1e-300
    exact_alpha = Fraction(alpha)
    for i in np.flatnonzero(near).tolist():
        decided[i] = Fraction(float(p[i])) * int(scale[i]) <= exact_alpha * int(times[i])
    return decided


def effective_sd(sd: float, n_reference: int) -> float:
    """Return the reference sd, floored where the reference was (nearly) constant.

    A reference of all-passes has sd 0, and the first failure would then be an
    infinite number of sds away. The floor is the sd of a 0/1 score whose rate is
    the rule-of-three bound ``3 / n``: the largest rate a reference of ``n``
    identical scores cannot rule out.
    """
    rate = min(0.5, 3.0 / max(n_reference, 1))
    return max(sd, math.sqrt(rate * (1.0 - rate)))


#: Up to this sample size scipy's ``ks_2samp`` (method "auto") is exact: the
#: statistic is snapped to the lattice ``h / lcm(n1, n2)`` and the p-value is a
#: function of ``(n1, n2, h)`` alone.
_KS_EXACT_MAX_N = 10_000


def load_scipy() -> Any:
    """Return ``scipy.stats``, importing it on first use.

    It is a large share of what a replica imports before it can serve, and
    only a full window needs it: the service imports it beside its graders'
    warm-up instead (``arbiter.api.service``), so no batch waits for it.
    """
    from scipy import stats  # type: ignore[import-untyped]

    return stats


def spearman_rho(x: npt.ArrayLike, y: npt.ArrayLike) -> float:
    """Return Spearman's rank correlation of ``x`` and ``y`` (NaN for a constant column)."""
    return float(load_scipy().spearmanr(x, y).statistic)


#: (n1, n2, h) -> (statistic, p-value), as scipy computed them.
_KS_SEEN: dict[tuple[int, int, int], tuple[float, float]] = {}
_KS_SEEN_MAX = 1 << 16


def ks_two_sample(window: npt.ArrayLike, reference: npt.ArrayLike) -> tuple[float, float]:
    """Return the two-sided two-sample KS statistic and p-value, as ``scipy.stats.ks_2samp``.

    The monitor runs this per window per stream on the service's request path.
    Its exact p-value costs O(n1 * n2) (a window of 200 against a reference of
    2,000: most of the test), yet it depends only on the sample sizes and on
    which lattice point ``h / lcm(n1, n2)`` the statistic falls on, and windows
    of one stream keep landing on the same few points. The statistic's lattice
    point is computed here as scipy computes it, and scipy is asked only for a
    point not seen before; its answer is kept. The numbers are scipy's.
    """
    a = np.sort(np.asarray(window, dtype=np.float64))
    b = np.sort(np.asarray(reference, dtype=np.float64))
    n1, n2 = a.size, b.size
    key = None
    if a.ndim == b.ndim == 1 and min(n1, n2) > 0 and max(n1, n2) <= _KS_EXACT_MAX_N:
        both = np.concatenate([a, b])
        gap = np.searchsorted(a, both, side="right") / n1
        gap -= np.searchsorted(b, both, side="right") / n2
        d = max(float(gap.max()), min(1.0, max(0.0, float(-gap.min()))))
        lcm = (n1 // math.gcd(n1, n2)) * n2
        key = (n1, n2, int(np.round(d * lcm)))
        seen = _KS_SEEN.get(key)
        if seen is not None:
            return seen
    result = load_scipy().ks_2samp(a, b)
    answer = (float(result.statistic), float(result.pvalue))
    if key is not None:
        if len(_KS_SEEN) >= _KS_SEEN_MAX:
            _KS_SEEN.clear()
        _KS_SEEN[key] = answer
    return answer


def normalized_wasserstein(window: npt.ArrayLike, reference: npt.ArrayLike, scale: float) -> float:
    """Return the 1-Wasserstein distance between two samples, in units of ``scale``."""
    return float(load_scipy().wasserstein_distance(window, reference)) / scale


def wasserstein_from_counts(
    values: Floats, counts_a: npt.NDArray[Any], counts_b: npt.NDArray[Any]
) -> Floats:
    """Return the 1-Wasserstein distances between rows of counts over the same sorted values.

    ``W1 = sum_i |F_a(v_i) - F_b(v_i)| (v_{i+1} - v_i)``, the area between the two
    empirical CDFs, for every row at once.

    Args:
        values: Distinct values, ascending.
        counts_a: (rows, values) counts of the first samples.
        counts_b: (rows, values) counts of the second samples.
    """
    gap = counts_a / counts_a.sum(axis=1, keepdims=True)
    gap -= counts_b / counts_b.sum(axis=1, keepdims=True)
    np.cumsum(gap, axis=1, out=gap)
    np.abs(gap, out=gap)
    # A zero-width step after the last value keeps the rows contiguous for BLAS.
    distances: Floats = gap @ np.append(np.diff(values), 0.0)
    return distances


class BootstrapReference:
    """What a bootstrap at the live window size says about a frozen reference.

    Attributes:
        wasserstein: Normalized Wasserstein distances between a resampled window
            of the live size and a resampled reference of the reference's size.
        variance: The resampled windows' variances (``ddof=1``).
    """

    __slots__ = ("variance", "wasserstein")

    def __init__(self, wasserstein: Floats, variance: Floats) -> None:
        self.wasserstein = wasserstein
        self.variance = variance


def bootstrap_reference(
    reference: npt.ArrayLike,
    window: int,
    scale: float,
    resamples: int,
    rng: np.random.Generator,
) -> BootstrapReference:
    """Bootstrap window statistics at the live window size from the reference.

    Both sides are resampled: a live window is compared with a finite reference,
    not with the true distribution, so resampling only the window would make the
    null distances too small and the threshold too liberal. Vectorised: every
    resample is a row of counts over the reference's distinct values, so the
    CDFs, distances and variances of all resamples come out of a few array ops.

    Args:
        reference: The frozen reference scores.
        window: The live window size.
        scale: What distances are divided by (the reference's effective sd).
        resamples: How many bootstrap windows.
        rng: The source of randomness.

    Returns:
        The distances and variances of the resampled windows.
    """
    ref = np.asarray(reference, dtype=np.float64)
    values, inverse = np.unique(ref, return_inverse=True)
    distinct = values.size
    n_ref = ref.size

    def counts(size: int) -> npt.NDArray[np.int64]:
        picks = inverse[rng.integers(0, n_ref, size=(resamples, size))]
        picks += distinct * np.arange(resamples)[:, None]
        tally = np.bincount(picks.ravel(), minlength=resamples * distinct)
        return tally.reshape(resamples, distinct)

    window_counts = counts(window).astype(np.float64)
    wasserstein = wasserstein_from_counts(values, window_counts, counts(n_ref)) / scale
    # Centre first: the variance of scores near 1.0 loses digits otherwise.
    centred = values - ref.mean()
    mean = window_counts @ centred / window
    second = window_counts @ (centred * centred) / window
    variance = np.maximum(second - mean * mean, 0.0) * window / (window - 1)
    return BootstrapReference(wasserstein=wasserstein, variance=variance)


def windows_needed(probability: float, alpha: float) -> int:
    """Return how many windows in a row must fire for a joint chance below ``alpha``.

    Treats windows as independent under no drift, which they are for a stream of
    independent rollouts cut into disjoint windows.
    """
    if probability <= 0.0:
        return 1
    if probability >= 1.0:
        raise ValueError("a condition that always holds cannot be made rare by persistence")
    return max(1, math.ceil(math.log(alpha) / math.log(probability)))


def two_proportion_z(successes_a: int, n_a: int, successes_b: int, n_b: int) -> float:
    """Return the pooled two-proportion z of ``b`` against ``a`` (positive when ``b`` is higher).

    Zero when either side is empty or the pooled rate is 0 or 1: no variation is
    no evidence of a step.
    """
    if n_a == 0 or n_b == 0:
        return 0.0
    pooled = (successes_a + successes_b) / (n_a + n_b)
    variance = pooled * (1.0 - pooled) * (1.0 / n_a + 1.0 / n_b)
    if variance <= 0.0:
        return 0.0
    return (successes_b / n_b - successes_a / n_a) / math.sqrt(variance)


def fisher_rise_p(hits_before: int, n_before: int, hits_now: int, n_now: int) -> float:
    """Return the one-sided exact p-value of a rate rising from ``before`` to ``now``.

    Fisher's exact test on the 2 x 2 table, conditioned on the total count of
    hits: the chance that ``now`` holds ``hits_now`` or more of them if both sides
    share one rate. Exact, so rare events (a violation type seen a handful of times
    in thousands of rewards) are not judged by a normal approximation, which is
    liberal there. 1.0 when either side is empty.
    """
    if n_before <= 0 or n_now <= 0 or hits_now <= 0:
        return 1.0
    total, hits = n_before + n_now, hits_before + hits_now

    def log_choose(n: int, k: int) -> float:
        return math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1)

    denominator = log_choose(total, n_now)
    p = 0.0
    for x in range(hits_now, min(hits, n_now) + 1):
        if hits - x > n_before:
            continue
        p += math.exp(log_choose(hits, x) + log_choose(total - hits, n_now - x) - denominator)
    return min(1.0, p)


def fisher_z_rise(rho_now: float, n_now: int, rho_reference: float, n_reference: int) -> float:
    """Return the Fisher z of a rise in Spearman's rho from the reference to now.

    Returns:
        A standard-normal statistic under no change; NaN when either side has
        fewer than 4 pairs or a rho is NaN.
    """
    if n_now < 4 or n_reference < 4 or math.isnan(rho_now) or math.isnan(rho_reference):
        return math.nan
    bound = 1.0 - 1e-9
    now = math.atanh(min(max(rho_now, -bound), bound))
    ref = math.atanh(min(max(rho_reference, -bound), bound))
    se = math.sqrt(_SPEARMAN_VARIANCE_FACTOR * (1.0 / (n_now - 3) + 1.0 / (n_reference - 3)))
    return (now - ref) / se
