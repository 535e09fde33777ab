"""False alerts and detection delay of the drift monitor on synthetic reward streams.

Run: ``.venv/bin/python -m bench.drift [--rubrics N] [--windows T] [--reps R] [--seed S]``.

Each synthetic rubric has four components of different shapes and the composed
reward, so five streams: ``skewed`` (beta(2, 5)), ``judge`` (beta(5, 2)),
``bimodal`` (two narrow modes at 0.25 and 0.75) and ``tests`` (mostly 0/1: 70 %
pass, 25 % score 0, 5 % partial credit), plus the rubric-level stream carrying
pass/fail, tests executed, runtime and response length. One call to the
monitor is one window of rewards for the whole rubric, as a service would feed it.

* Stationary: every window after the reference is drift-free, so every alert
  is a false alert. Reported per 10,000 stream-windows, by detector.
* Shifts: after the reference and 5 clean windows, one change is injected into
  one component and the delay to the first alert on that component or on the
  rubric-level stream is counted in windows (1 = the first window holding
  shifted data). A run that sees nothing within the horizon counts as missed.

The baseline the style asks for is a fixed threshold, measured in the same run:
the false alerts per 10,000 windows of a fixed normalized-Wasserstein threshold
of 0.1 on the same stationary windows, which is what the bootstrap calibration
replaces. Targets: at most 1 false alert per 10,000 windows; 1-sd shifts caught
within 20 windows.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from scipy import stats  # type: ignore[import-untyped]

from arbiter.monitoring.drift import DriftMonitor
from arbiter.monitoring.drift_alerts import REWARD_STREAM
from arbiter.monitoring.drift_config import DriftConfig
from arbiter.monitoring.drift_input import ComponentScores, RewardBatch

WINDOW = 100
COMPONENTS = ("skewed", "judge", "bimodal", "tests")
WEIGHTS = np.array([0.2, 0.2, 0.2, 0.4])
SHIFT_AT = 5
HORIZON = 40
FALSE_ALERT_TARGET = 1.0
ONE_SIGMA_TARGET = 20

Draw = Callable[[np.random.Generator, int], np.ndarray]


def skewed(rng: np.random.Generator, n: int) -> np.ndarray:
    return rng.beta(2.0, 5.0, n)


def judge(rng: np.random.Generator, n: int) -> np.ndarray:
    return rng.beta(5.0, 2.0, n)


def bimodal(rng: np.random.Generator, n: int) -> np.ndarray:
    centre = np.where(rng.random(n) < 0.5, 0.25, 0.75)
    return np.clip(centre + rng.normal(0.0, 0.07, n), 0.0, 1.0)


def tests(rng: np.random.Generator, n: int, pass_rate: float = 0.7) -> np.ndarray:
    u = rng.random(n)
    partial = rng.uniform(0.2, 0.8, n)
    return np.where(u < pass_rate, 1.0, np.where(u < pass_rate + 0.05, partial, 0.0))


SHAPES: dict[str, Draw] = {"skewed": skewed, "judge": judge, "bimodal": bimodal, "tests": tests}
#: Rate streams, each 0/1 per reward (the groups', per group of four): a common violation
#: type, a rare one, one never seen, and groups whose rewards all agree.
RATES = {
    "hack:always_equal": 0.01,
    "hack:hardcoded_output": 0.002,
    "hack:test_skipping": 0.0,
    "groups:zero_variance": 0.2,
}


def shape_sd(draw: Draw) -> float:
    """Return a shape's sd, estimated once on a large seeded sample."""
    return float(draw(np.random.default_rng(12345), 1_000_000).std())


@dataclass
class Change:
    """A change injected into one rubric: which component, and how."""

    name: str
    component: str
    apply: Callable[[np.random.Generator, np.ndarray], np.ndarray] | None
    relevant: str
    pass_rate: float | None = None
    rates: dict[str, float] | None = None


def make_window(
    rng: np.random.Generator, rubric: str, change: Change | None
) -> tuple[RewardBatch, np.ndarray]:
    """Return one window of rewards for a rubric, with ``change`` applied if given."""
    columns = {}
    for name in COMPONENTS:
        if name == "tests" and change is not None and change.pass_rate is not None:
            columns[name] = tests(rng, WINDOW, change.pass_rate)
        else:
            columns[name] = SHAPES[name](rng, WINDOW)
    if change is not None and change.apply is not None:
        columns[change.component] = change.apply(rng, columns[change.component])
    scores = np.column_stack([columns[n] for n in COMPONENTS])
    reward = scores @ WEIGHTS
    rates = {**RATES, **(change.rates if change is not None and change.rates else {})}
    observed = {
        name: (rng.random(WINDOW // 4 if name.startswith("groups:") else WINDOW) < p).astype(float)
        for name, p in rates.items()
    }
    batch = RewardBatch(
        rubric,
        "sha-1",
        reward,
        {n: ComponentScores("1.0", columns[n]) for n in COMPONENTS},
        passed=(columns["tests"] == 1.0).astype(float),
        tests_executed=rng.integers(3, 9, WINDOW).astype(float),
        runtime_s=rng.gamma(2.0, 0.5, WINDOW),
        response_length=rng.lognormal(6.5, 0.5, WINDOW),
        rates=observed,
    )
    return batch, columns["skewed"]


def config() -> DriftConfig:
    return DriftConfig(window=WINDOW)


def stationary(rubrics: int, windows: int, seed: int) -> tuple[int, Counter[str], int]:
    """Run drift-free rubrics.

    Returns:
        Monitored stream-windows, alerts by detector, and the fixed-0.1 baseline's hits.
    """
    monitor = DriftMonitor(config())
    cfg = monitor.config
    lead = cfg.warmup_windows + cfg.reference_windows
    alerts: Counter[str] = Counter()
    monitored = 0
    fixed_hits = 0
    rng = np.random.default_rng(seed)
    for r in range(rubrics):
        rubric = f"stationary-{r}"
        reference: list[np.ndarray] = []
        for w in range(lead + windows):
            batch, skew = make_window(rng, rubric, None)
            update = monitor.observe(batch)
            monitored += update.windows
            alerts.update(a.detector.value for a in update.opened)
            # The fixed-threshold baseline, on one stream's same windows.
            if cfg.warmup_windows <= w < lead:
                reference.append(skew)
            elif w >= lead:
                pool = np.concatenate(reference)
                fixed_hits += stats.wasserstein_distance(skew, pool) / pool.std(ddof=1) > 0.1
    return monitored, alerts, int(fixed_hits)


def delay(
    change: Change, reps: int, seed: int
) -> tuple[list[int | None], Counter[str], list[int | None]]:
    """Run one change ``reps`` times.

    Returns:
        Each run's delay to any alert, which detector fired first, and each run's
        delay to the detector meant for the change.
    """
    delays: list[int | None] = []
    relevant: list[int | None] = []
    first: Counter[str] = Counter()
    rng = np.random.default_rng(seed)
    for rep in range(reps):
        monitor = DriftMonitor(config())
        cfg = monitor.config
        lead = cfg.warmup_windows + cfg.reference_windows
        rubric = f"{change.name}-{rep}"
        start = lead + SHIFT_AT
        found: int | None = None
        found_relevant: int | None = None
        for w in range(start + HORIZON):
            batch, _ = make_window(rng, rubric, change if w >= start else None)
            update = monitor.observe(batch)
            for alert in update.opened:
                if w < start or alert.stream.component not in (change.component, REWARD_STREAM):
                    # A false alert (before the change, or on a stream it does not
                    # touch): counted by the stationary run, not a detection.
                    continue
                if found is None:
                    found = w - start + 1
                    first[f"{alert.detector.value}@{alert.stream.component}"] += 1
                if found_relevant is None and alert.detector.value == change.relevant:
                    found_relevant = w - start + 1
            if found is not None and found_relevant is not None:
                break
        delays.append(found)
        relevant.append(found_relevant)
    return delays, first, relevant


def summary(delays: list[int | None]) -> str:
    caught = [d for d in delays if d is not None]
    if not caught:
        return f"caught 0/{len(delays)}"
    return (
        f"caught {len(caught)}/{len(delays)}, median {statistics.median(caught):g}, "
        f"max {max(caught)}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rubrics", type=int, default=20)
    parser.add_argument("--windows", type=int, default=600)
    parser.add_argument("--reps", type=int, default=20)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()

    sd = {name: shape_sd(draw) for name, draw in SHAPES.items()}
    started = time.perf_counter()
    monitored, alerts, fixed_hits = stationary(args.rubrics, args.windows, args.seed)
    stationary_s = time.perf_counter() - started
    total = sum(alerts.values())
    rate = 1e4 * total / monitored
    fixed_windows = args.rubrics * args.windows
    fixed_rate = 1e4 * fixed_hits / fixed_windows
    print(
        f"window size {WINDOW}; streams per rubric {len(COMPONENTS) + 1 + len(RATES)} "
        f"({', '.join(COMPONENTS)}, {REWARD_STREAM}; rates {', '.join(RATES)})"
    )
    print(
        f"stationary: {monitored} stream-windows over {args.rubrics} rubrics "
        f"in {stationary_s:.0f} s"
    )
    by = ", ".join(f"{k} {v}" for k, v in sorted(alerts.items())) or "none"
    print(f"  false alerts: {total} ({by})")
    print(
        f"  baseline, fixed W1 > 0.1 on the skewed stream: {fixed_rate:,.0f} per 10,000 windows "
        f"({fixed_hits}/{fixed_windows})"
    )
    # One-sided 95 % Poisson upper bound on the rate (3 / m with no alert at all):
    # zero alerts only means something if m is large enough to resolve the target.
    bound = 1e4 * float(stats.chi2.ppf(0.95, 2 * (total + 1))) / 2 / monitored
    met = rate <= FALSE_ALERT_TARGET
    print(
        f"  ours: {rate:.2f} false alerts per 10,000 windows, 95 % upper bound "
        f"{bound:.2f} (target <= {FALSE_ALERT_TARGET:g}: {'met' if met else 'NOT met'})"
    )
    ratio = fixed_rate / rate if rate > 0 else float("inf")
    print(f"  ratio fixed/ours: {ratio:,.0f}x" if rate > 0 else "  ratio fixed/ours: inf (ours 0)")

    def shift(
        component: str, sigmas: float
    ) -> Callable[[np.random.Generator, np.ndarray], np.ndarray]:
        # Unclipped: the monitor does not assume [0, 1], and clipping would shrink the shift.
        return lambda rng, x: x + sigmas * sd[component]

    def collapse(
        component: str, factor: float
    ) -> Callable[[np.random.Generator, np.ndarray], np.ndarray]:
        mean = float(SHAPES[component](np.random.default_rng(1), 1_000_000).mean())
        return lambda rng, x: mean + factor * (x - mean)

    changes = [
        Change("skewed +0.5 sd", "skewed", shift("skewed", 0.5), "cusum"),
        Change("skewed +1 sd", "skewed", shift("skewed", 1.0), "cusum"),
        Change("bimodal +0.5 sd", "bimodal", shift("bimodal", 0.5), "cusum"),
        Change("bimodal +1 sd", "bimodal", shift("bimodal", 1.0), "cusum"),
        Change("judge -0.5 sd", "judge", shift("judge", -0.5), "cusum"),
        Change("judge -1 sd", "judge", shift("judge", -1.0), "cusum"),
        Change("pass rate +15 pp", "tests", None, "pass_rate_step", pass_rate=0.85),
        Change("judge variance x0.1", "judge", collapse("judge", 0.1**0.5), "variance_collapse"),
        Change(
            "always_equal 1% -> 6%",
            "hack:always_equal",
            None,
            "hack_rate",
            rates={"hack:always_equal": 0.06},
        ),
        Change(
            "test_skipping 0 -> 3%",
            "hack:test_skipping",
            None,
            "hack_rate",
            rates={"hack:test_skipping": 0.03},
        ),
        Change(
            "zero-variance groups 20% -> 50%",
            "groups:zero_variance",
            None,
            "hack_rate",
            rates={"groups:zero_variance": 0.5},
        ),
    ]
    print(
        f"shifts: injected {SHIFT_AT} windows after the reference, {args.reps} runs each, "
        f"horizon {HORIZON} windows; delay in windows (1 = first shifted window)"
    )
    one_sigma_ok = True
    started = time.perf_counter()
    for i, change in enumerate(changes):
        delays, first, relevant = delay(change, args.reps, args.seed + 1000 * (i + 1))
        firsts = ", ".join(f"{k} {v}" for k, v in first.most_common(3))
        print(
            f"  {change.name:<22} any detector: {summary(delays)}; "
            f"{change.relevant}: {summary(relevant)}; first: {firsts}"
        )
        if "1 sd" in change.name and "0.5" not in change.name:
            caught = [d for d in delays if d is not None]
            one_sigma_ok &= len(caught) == len(delays) and max(caught) <= ONE_SIGMA_TARGET
    print(f"  shifts took {time.perf_counter() - started:.0f} s")
    print(
        f"1 sd shifts caught within {ONE_SIGMA_TARGET} windows in every run: "
        f"{'met' if one_sigma_ok else 'NOT met'}"
    )
    print(
        f"false alerts per 10,000 windows: {rate:.2f} (target <= {FALSE_ALERT_TARGET:g}: "
        f"{'met' if met else 'NOT met'}); fixed-threshold baseline {fixed_rate:,.0f}; "
        f"ratio {'inf' if rate == 0 else f'{ratio:,.0f}x'}"
    )


if __name__ == "__main__":
    main()
