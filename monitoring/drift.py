"""Drift monitoring of every reward component, in memory: windows in, alerts out.

A stream is one (rubric, component, grader version), plus one rubric-level stream
(:data:`~arbiter.monitoring.drift_alerts.REWARD_STREAM`) for the composed reward with the
rollout's tests, runtime and response length. Each stream is cut into windows of
``window`` scores; the first ``warmup_windows`` are ignored, the next
``reference_windows`` are frozen as the reference, and every later window is
tested against it (and, for the pass-rate step, against a trailing baseline).

No I/O and no clock: time, if wanted on alerts, is passed in, and the whole state
is a pydantic model a service can persist and restore (:meth:`DriftMonitor.state`,
:meth:`DriftMonitor.from_state`).

One module, one concept: the drift monitor's state machine — streams, their windows,
references and detectors share one persisted state and are tested as one; the statistics
live in :mod:`arbiter.monitoring.drift_statistics`, the config, inputs, alerts and incidents in
their own modules.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt
from pydantic import BaseModel, ConfigDict, Field

from arbiter.monitoring.drift_alerts import (
    REWARD_STREAM,
    Alert,
    Detector,
    DriftUpdate,
    ReferenceSummary,
    StreamKey,
    Verdict,
)
from arbiter.monitoring.drift_config import DriftConfig, warmup_progress
from arbiter.monitoring.drift_input import RewardBatch, RewardLike, batch_from_rewards
from arbiter.monitoring.drift_statistics import (
    benjamini_hochberg,
    bootstrap_reference,
    effective_sd,
    fisher_z_rise,
    holm,
    ks_two_sample,
    normalized_wasserstein,
    spearman_rho,
    two_proportion_z,
    two_sided_cusum,
    windows_needed,
)
from arbiter.monitoring.hack_rates import RateStream, RateStreamState, RateWindow

__all__ = ["DriftMonitor", "DriftState", "StreamState"]

Floats = npt.NDArray[np.float64]

# Columns of a stream's rows. Component streams fill only VALUE; the rubric-level
# stream also carries what the reward-hacking detectors read.
VALUE, PASSED, TESTS, RUNTIME, LENGTH = range(5)
COLUMNS = 5
#: Window means kept per stream for display (the drift page's series); not used to detect.
SERIES_WINDOWS = 120
# Fewer non-missing pairs than this in a window and a correlation is not computed.
_MIN_PAIRS = 10


def _encode(rows: Floats) -> list[list[float | None]]:
    """Return rows as JSON-safe lists (NaN becomes ``None``)."""
    return [[None if math.isnan(v) else v for v in row] for row in rows.tolist()]


def _decode(rows: Sequence[Sequence[float | None]]) -> Floats:
    if not rows:
        return np.empty((0, COLUMNS))
    return np.array([[math.nan if v is None else v for v in row] for row in rows], dtype=float)


class StreamState(BaseModel):
    """One stream's persisted state."""

    model_config = ConfigDict(extra="forbid")

    key: StreamKey
    config: DriftConfig
    windows: int
    pending: list[list[float | None]]
    reference_rows: list[list[float | None]]
    reference_values: list[float]
    reference: ReferenceSummary | None
    cusum_upper: float
    cusum_lower: float
    pass_history: list[tuple[int, int]]
    wasserstein_streak: int
    collapse_streak: int
    open_alerts: list[Alert]
    quiet: dict[Detector, int]
    # Added after the first saved states: an old state loads with an empty series.
    means: list[tuple[int, float]] = Field(default_factory=list)


class DriftState(BaseModel):
    """Everything a :class:`DriftMonitor` holds, for a service to persist."""

    model_config = ConfigDict(extra="forbid")

    format: int = 1
    streams: list[StreamState]
    # Added after the first saved states: an old state starts its rate streams afresh.
    rates: list[RateStreamState] = Field(default_factory=list)


@dataclass
class _Window:
    """A window that was tested: its verdicts, and its KS p-value awaiting correction."""

    stream: _Stream
    index: int
    verdicts: list[Verdict]
    ks_p: float
    ks_d: float


def _stream_rng(seed: int, key: StreamKey) -> np.random.Generator:
    """Seed a stream's bootstrap from the config seed and its key, stable across processes."""
    digest = hashlib.sha256(str(key).encode()).digest()
    return np.random.default_rng([seed, int.from_bytes(digest[:8], "little")])


def _window_mean_sd(columns: Floats, window: int) -> tuple[float, float, float]:
    """Return the mean, sd and window-mean sd of one column over reference windows.

    ``columns`` is (windows, window) with NaN for missing values. The window-mean
    sd is the larger of the between-window sd and ``sd / sqrt(n)``: the first
    sees batch effects that independent sampling would not, the second keeps a
    lucky, tight set of ten reference windows from making every later window
    look like drift.
    """
    present = ~np.isnan(columns)
    values = columns[present]
    counts = present.sum(axis=1)
    # Means of the windows that hold any value (nanmean warns on the others).
    means = np.where(present, columns, 0.0).sum(axis=1)[counts > 0] / counts[counts > 0]
    mean = float(values.mean())
    sd = float(values.std(ddof=1)) if values.size > 1 else 0.0
    between = float(means.std(ddof=1)) if means.size > 1 else 0.0
    per_window = values.size / max(means.size, 1)
    return mean, sd, max(between, sd / math.sqrt(max(per_window, 1.0)), 1e-12)


@dataclass
class _Stream:
    key: StreamKey
    config: DriftConfig
    windows: int = 0
    pending: Floats = field(default_factory=lambda: np.empty((0, COLUMNS)))
    reference_rows: Floats = field(default_factory=lambda: np.empty((0, COLUMNS)))
    reference_values: Floats = field(default_factory=lambda: np.empty(0))
    reference: ReferenceSummary | None = None
    cusum_upper: float = 0.0
    cusum_lower: float = 0.0
    pass_history: list[tuple[int, int]] = field(default_factory=list)
    wasserstein_streak: int = 0
    collapse_streak: int = 0
    open_alerts: dict[Detector, Alert] = field(default_factory=dict)
    quiet: dict[Detector, int] = field(default_factory=dict)
    means: list[tuple[int, float]] = field(default_factory=list)

    @property
    def is_reward(self) -> bool:
        return self.key.component == REWARD_STREAM

    def take_windows(self, rows: Floats) -> list[tuple[int, Floats]]:
        """Append rows and return the windows they complete, with their indices."""
        n = self.config.window
        pending = np.concatenate([self.pending, rows]) if self.pending.size else rows
        complete = pending.shape[0] // n
        self.pending = pending[complete * n :].copy()
        out = []
        for i in range(complete):
            out.append((self.windows, pending[i * n : (i + 1) * n]))
            self.windows += 1
        return out

    def freeze(self, last_window: int) -> None:
        """Freeze the collected reference windows and calibrate at the window size."""
        cfg = self.config
        n = cfg.window
        rows = self.reference_rows
        values = rows[:, VALUE]
        mean, sd, window_mean_sd = _window_mean_sd(values.reshape(-1, n), n)
        scale = effective_sd(sd, values.size)
        boot = bootstrap_reference(
            values, n, scale, cfg.bootstrap_resamples, _stream_rng(cfg.seed, self.key)
        )
        threshold = float(np.quantile(boot.wasserstein, cfg.wasserstein_quantile))
        variance = sd * sd
        if variance > 0.0:
            collapsed = int(np.count_nonzero(boot.variance < cfg.collapse_ratio * variance))
            # (count + 1) / (B + 1): a bootstrap that never saw a collapse bounds the
            # chance by its resolution, not by zero.
            probability = (collapsed + 1) / (cfg.bootstrap_resamples + 1)
            needed = windows_needed(probability, cfg.collapse_alpha) if probability < 1 else 0
        else:
            probability, needed = 1.0, 0
        summary: dict[str, float | int | None] = {}
        if self.is_reward:
            summary.update(self._reference_aux(rows, n))
        self.reference = ReferenceSummary(
            first_window=last_window - cfg.reference_windows + 1,
            windows=cfg.reference_windows,
            samples=int(values.size),
            mean=mean,
            sd=sd,
            effective_sd=scale,
            window_mean_sd=window_mean_sd,
            wasserstein_threshold=threshold,
            collapse_probability=probability,
            collapse_windows=needed,
            **summary,
        )
        self.reference_values = np.sort(values)
        self.reference_rows = np.empty((0, COLUMNS))

    @staticmethod
    def _reference_aux(rows: Floats, n: int) -> dict[str, float | int | None]:
        out: dict[str, float | int | None] = {}
        passed = rows[:, PASSED]
        if np.any(~np.isnan(passed)):
            out["pass_rate"] = float(np.nanmean(passed))
            out["pass_known"] = int(np.count_nonzero(~np.isnan(passed)))
        for column, name in ((TESTS, "tests_executed"), (RUNTIME, "runtime_s")):
            if np.count_nonzero(~np.isnan(rows[:, column])) >= n:
                mean, _, window_sd = _window_mean_sd(rows[:, column].reshape(-1, n), n)
                out[f"{name}_mean"] = mean
                out[f"{name}_window_sd"] = window_sd
        pairs = ~np.isnan(rows[:, LENGTH])
        lengths, values = rows[pairs, LENGTH], rows[pairs, VALUE]
        # A constant column has no rank correlation (scipy warns and returns NaN).
        if np.count_nonzero(pairs) >= _MIN_PAIRS and np.ptp(lengths) > 0 and np.ptp(values) > 0:
            rho = spearman_rho(lengths, values)
            if not math.isnan(rho):
                out["length_correlation"] = rho
                out["length_pairs"] = int(np.count_nonzero(pairs))
        return out

    def test(self, index: int, rows: Floats) -> _Window:
        """Run every detector on one window after the reference is frozen."""
        ref = self.reference
        assert ref is not None  # only called once frozen
        cfg = self.config
        values = rows[:, VALUE]
        mean = float(values.mean())
        variance = float(values.var(ddof=1))
        verdicts = []

        z = (mean - ref.mean) / ref.window_mean_sd
        upper, lower, alarm = two_sided_cusum(
            [z], cfg.cusum_k, cfg.cusum_h, (self.cusum_upper, self.cusum_lower)
        )
        self.cusum_upper, self.cusum_lower = (0.0, 0.0) if alarm[0] else (upper[0], lower[0])
        statistic = float(max(upper[0], lower[0]))
        verdicts.append(
            Verdict(
                Detector.CUSUM,
                bool(alarm[0]),
                statistic,
                cfg.cusum_h,
                {"z": z, "upper": float(upper[0]), "lower": float(lower[0]), "mean": mean},
                f"window mean {mean:.4g} vs reference {ref.mean:.4g} "
                f"({'up' if upper[0] >= lower[0] else 'down'}, CUSUM {statistic:.3g})",
                holding=statistic > 0.0,
            )
        )

        distance = normalized_wasserstein(values, self.reference_values, ref.effective_sd)
        self.wasserstein_streak = (
            self.wasserstein_streak + 1 if distance > ref.wasserstein_threshold else 0
        )
        verdicts.append(
            Verdict(
                Detector.WASSERSTEIN,
                self.wasserstein_streak >= cfg.wasserstein_windows,
                distance,
                ref.wasserstein_threshold,
                {"windows_above": self.wasserstein_streak, "window_size": cfg.window},
                f"normalized Wasserstein {distance:.3g} above the bootstrap threshold "
                f"{ref.wasserstein_threshold:.3g} for {self.wasserstein_streak} windows",
                holding=self.wasserstein_streak > 0,
            )
        )

        if ref.collapse_windows > 0:
            ratio = variance / (ref.sd * ref.sd)
            self.collapse_streak = self.collapse_streak + 1 if ratio < cfg.collapse_ratio else 0
            verdicts.append(
                Verdict(
                    Detector.VARIANCE_COLLAPSE,
                    self.collapse_streak >= ref.collapse_windows,
                    ratio,
                    cfg.collapse_ratio,
                    {"windows_below": self.collapse_streak, "variance": variance},
                    f"variance {ratio:.3g}x the reference for {self.collapse_streak} windows",
                    holding=self.collapse_streak > 0,
                )
            )

        if self.is_reward:
            verdicts.extend(self._hacking(rows, ref, mean, z))

        ks_d, ks_p = ks_two_sample(values, self.reference_values)
        return _Window(self, index, verdicts, ks_p, ks_d)

    def _hacking(self, rows: Floats, ref: ReferenceSummary, mean: float, z: float) -> list[Verdict]:
        cfg = self.config
        out = []
        history = self.pass_history
        need = cfg.baseline_windows + cfg.pass_rate_current_windows
        if len(history) >= need:
            current = history[-cfg.pass_rate_current_windows :]
            base = history[-need : -cfg.pass_rate_current_windows]
            x_b, n_b = sum(h[0] for h in base), sum(h[1] for h in base)
            x_c, n_c = sum(h[0] for h in current), sum(h[1] for h in current)
            if n_b and n_c:
                pz = two_proportion_z(x_b, n_b, x_c, n_c)
                jump = 100.0 * (x_c / n_c - x_b / n_b)
                out.append(
                    Verdict(
                        Detector.PASS_RATE_STEP,
                        abs(pz) >= cfg.pass_rate_z and abs(jump) >= cfg.pass_rate_min_jump_pp,
                        abs(pz),
                        cfg.pass_rate_z,
                        {"jump_pp": jump, "baseline_rate": x_b / n_b, "rate": x_c / n_c},
                        f"pass rate {x_c / n_c:.1%} vs {x_b / n_b:.1%} over the trailing "
                        f"baseline ({jump:+.1f} points)",
                    )
                )

        falls = []
        for column, name in ((TESTS, "tests_executed"), (RUNTIME, "runtime_s")):
            ref_mean = getattr(ref, f"{name}_mean")
            ref_sd = getattr(ref, f"{name}_window_sd")
            present = rows[~np.isnan(rows[:, column]), column]
            if ref_mean is None or ref_sd is None or present.size < _MIN_PAIRS:
                continue
            now = float(present.mean())
            drop = 1.0 - now / ref_mean if ref_mean > 0 else 0.0
            falls.append((-(now - ref_mean) / ref_sd, drop, name, now))
        if falls:
            fall_z, drop, name, now = max(
                falls, key=lambda f: f[0] if f[1] >= cfg.hacking_min_drop else -math.inf
            )
            statistic = min(z, fall_z)
            out.append(
                Verdict(
                    Detector.REWARD_UP_TESTS_DOWN,
                    statistic >= cfg.hacking_z and drop >= cfg.hacking_min_drop,
                    statistic,
                    cfg.hacking_z,
                    {"reward_z": z, "fall_z": fall_z, "relative_drop": drop, "series": name},
                    f"reward up (z {z:.3g}) while {name} fell {drop:.0%} (z {fall_z:.3g})",
                )
            )
            passed = rows[:, PASSED]
            known = passed[~np.isnan(passed)]
            if ref.pass_rate is not None and ref.pass_known and known.size >= _MIN_PAIRS:
                hits = int(np.count_nonzero(known == 1.0))
                before = round(ref.pass_rate * ref.pass_known)
                pass_z = two_proportion_z(before, ref.pass_known, hits, int(known.size))
                statistic = min(pass_z, fall_z)
                out.append(
                    Verdict(
                        Detector.PASS_UP_TESTS_DOWN,
                        statistic >= cfg.hacking_z and drop >= cfg.hacking_min_drop,
                        statistic,
                        cfg.hacking_z,
                        {"pass_z": pass_z, "fall_z": fall_z, "relative_drop": drop, "series": name},
                        f"pass rate {hits / known.size:.1%} against {ref.pass_rate:.1%} "
                        f"(z {pass_z:.3g}) while {name} fell {drop:.0%} (z {fall_z:.3g})",
                    )
                )

        pairs = ~np.isnan(rows[:, LENGTH])
        count = int(np.count_nonzero(pairs))
        if ref.length_correlation is not None and count >= _MIN_PAIRS:
            lengths, rewards = rows[pairs, LENGTH], rows[pairs, VALUE]
            if np.ptp(lengths) > 0 and np.ptp(rewards) > 0:
                rho = spearman_rho(lengths, rewards)
                rise_z = fisher_z_rise(rho, count, ref.length_correlation, ref.length_pairs)
                rise = rho - ref.length_correlation
                out.append(
                    Verdict(
                        Detector.LENGTH_CORRELATION,
                        rise_z >= cfg.length_correlation_z
                        and rise >= cfg.length_correlation_min_rise,
                        rise_z,
                        cfg.length_correlation_z,
                        {"rho": rho, "rise": rise, "pairs": count},
                        f"Spearman(length, reward) {rho:.2f} vs {ref.length_correlation:.2f} "
                        "in the reference",
                    )
                )
        return out

    def ingest(self, rows: Floats) -> list[_Window]:
        """Add rows; freeze the reference or test each window they complete."""
        cfg = self.config
        tested = []
        for index, window in self.take_windows(rows):
            values = window[:, VALUE]
            if np.any(~np.isnan(values)):
                self.means.append((index, float(np.nanmean(values))))
                del self.means[:-SERIES_WINDOWS]
            if index < cfg.warmup_windows:
                continue
            passed = window[:, PASSED]
            known = ~np.isnan(passed)
            self.pass_history.append(
                (int(np.count_nonzero(passed[known] == 1.0)), int(np.count_nonzero(known)))
            )
            del self.pass_history[: -(cfg.baseline_windows + cfg.pass_rate_current_windows)]
            if self.reference is None:
                self.reference_rows = np.concatenate([self.reference_rows, window])
                if self.reference_rows.shape[0] >= cfg.reference_windows * cfg.window:
                    self.freeze(index)
                continue
            tested.append(self.test(index, window))
        return tested

    def to_state(self) -> StreamState:
        return StreamState(
            key=self.key,
            config=self.config,
            windows=self.windows,
            pending=_encode(self.pending),
            reference_rows=_encode(self.reference_rows),
            reference_values=self.reference_values.tolist(),
            reference=self.reference,
            cusum_upper=self.cusum_upper,
            cusum_lower=self.cusum_lower,
            pass_history=list(self.pass_history),
            wasserstein_streak=self.wasserstein_streak,
            collapse_streak=self.collapse_streak,
            open_alerts=list(self.open_alerts.values()),
            quiet=dict(self.quiet),
            means=list(self.means),
        )

    @classmethod
    def from_state(cls, state: StreamState) -> _Stream:
        return cls(
            key=state.key,
            config=state.config,
            windows=state.windows,
            pending=_decode(state.pending),
            reference_rows=_decode(state.reference_rows),
            reference_values=np.array(state.reference_values, dtype=float),
            reference=state.reference,
            cusum_upper=state.cusum_upper,
            cusum_lower=state.cusum_lower,
            pass_history=list(state.pass_history),
            wasserstein_streak=state.wasserstein_streak,
            collapse_streak=state.collapse_streak,
            open_alerts={a.detector: a for a in state.open_alerts},
            quiet=dict(state.quiet),
            means=list(state.means),
        )


class DriftMonitor:
    """Watch every component of every rubric for drift and reward hacking.

    Per batch of rewards, call :meth:`observe` (columns) or
    :meth:`observe_rewards` (reward objects); each returns the alerts opened
    and closed. While an alert is open, :meth:`flags` gives the flags to put
    on that rubric's rewards. Persist :meth:`state` and restore with
    :meth:`from_state`.

    The KS tests of one rubric's windows completed in one call form one family
    for the multiple-testing correction (a round), so a service that feeds whole
    batches gets a correction across the rubric's streams. Whatever the family,
    each window is rejected at most at ``ks_alpha``: a small family is never more
    liberal than a large one per window, only less corrected across streams.
    Not thread-safe: a service serialises calls (one lock, or one task).

    Args:
        config: The thresholds for rubrics without their own.
        rubric_configs: Rubric name → thresholds (the rubric's ``drift`` section).
    """

    def __init__(
        self,
        config: DriftConfig | None = None,
        rubric_configs: Mapping[str, DriftConfig] | None = None,
    ) -> None:
        self.config = config or DriftConfig()
        self.rubric_configs = dict(rubric_configs or {})
        self._streams: dict[StreamKey, _Stream] = {}
        self._rates: dict[StreamKey, RateStream] = {}

    def config_for(self, rubric: str) -> DriftConfig:
        """Return the thresholds that apply to ``rubric``."""
        return self.rubric_configs.get(rubric, self.config)

    def _stream(self, key: StreamKey, config: DriftConfig) -> _Stream:
        stream = self._streams.get(key)
        if stream is None:
            # A stream keeps the config it started with: changing the window size
            # halfway would make its reference meaningless.
            stream = self._streams[key] = _Stream(key=key, config=config)
        return stream

    def observe(self, batch: RewardBatch, at: float | None = None) -> DriftUpdate:
        """Add a batch of one rubric's rewards and return the alerts it opened and closed.

        Args:
            batch: The rewards as columns.
            at: The time to stamp on opened alerts (seconds since the epoch), if any.
        """
        return self.observe_many([batch], at)

    def observe_rewards(
        self,
        rewards: Sequence[RewardLike],
        response_lengths: Sequence[int | None] | None = None,
        at: float | None = None,
    ) -> DriftUpdate:
        """Add reward objects (:class:`~arbiter.rubrics.reward.Reward`); return changed alerts."""
        return self.observe_many(batch_from_rewards(rewards, response_lengths), at)

    def observe_many(self, batches: Iterable[RewardBatch], at: float | None = None) -> DriftUpdate:
        """Add several batches as one round: each rubric's KS tests are corrected together."""
        tested: list[_Window | RateWindow] = []
        for batch in batches:
            config = self.config_for(batch.rubric)
            if not config.enabled:
                continue
            reward_rows = np.column_stack(
                [
                    batch.rewards,
                    batch.passed,
                    batch.tests_executed,
                    batch.runtime_s,
                    batch.response_length,
                ]
            )
            streams = [
                (
                    StreamKey(
                        rubric=batch.rubric, component=REWARD_STREAM, version=batch.rubric_version
                    ),
                    reward_rows,
                )
            ]
            for name, component in batch.components.items():
                rows = np.full((batch.size, COLUMNS), math.nan)
                rows[:, VALUE] = component.scores
                streams.append(
                    (
                        StreamKey(
                            rubric=batch.rubric, component=name, version=component.grader_version
                        ),
                        rows,
                    )
                )
            for key, rows in streams:
                scored = rows[~np.isnan(rows[:, VALUE])]
                if scored.shape[0]:
                    tested.extend(self._stream(key, config).ingest(scored))
            for name, column in batch.rates.items():
                observed = column[~np.isnan(column)]
                if observed.size:
                    key = StreamKey(
                        rubric=batch.rubric, component=name, version=batch.rubric_version
                    )
                    rate = self._rates.get(key)
                    if rate is None:
                        rate = self._rates[key] = RateStream(key=key, config=config)
                    tested.extend(rate.ingest(observed))
        return self._decide(tested, at)

    def _decide(self, windows: list[_Window | RateWindow], at: float | None) -> DriftUpdate:
        """Correct the round's KS tests, then open and close alerts window by window."""
        # A rate window has no KS test: the family is the score streams' windows.
        tested = [w for w in windows if isinstance(w, _Window)]
        by_rubric: dict[str, list[int]] = {}
        for i, window in enumerate(tested):
            by_rubric.setdefault(window.stream.key.rubric, []).append(i)
        critical = np.zeros(len(tested))
        rejected = np.zeros(len(tested), dtype=bool)
        # One family per rubric: rubrics can carry different levels and corrections.
        for indices in by_rubric.values():
            cfg = tested[indices[0]].stream.config
            p = np.array([tested[i].ks_p for i in indices])
            correct = holm if cfg.ks_correction == "holm" else benjamini_hochberg
            rejected[indices] = correct(p, cfg.ks_alpha)
            m = len(indices)
            ranks = np.argsort(np.argsort(p, kind="stable"), kind="stable")
            critical[indices] = (
                cfg.ks_alpha / (m - ranks)
                if cfg.ks_correction == "holm"
                else cfg.ks_alpha * (ranks + 1) / m
            )
            for j, i in enumerate(indices):
                window = tested[i]
                window.verdicts.append(
                    Verdict(
                        Detector.KS,
                        bool(rejected[i]),
                        window.ks_p,
                        float(critical[i]),
                        {
                            "ks_statistic": window.ks_d,
                            "family_size": m,
                            "rank": int(ranks[j]) + 1,
                            "correction": cfg.ks_correction,
                        },
                        f"KS D={window.ks_d:.3g}, p={window.ks_p:.3g} against the reference "
                        f"({cfg.ks_correction} over {m} tests)",
                    )
                )
        opened: list[Alert] = []
        closed: list[Alert] = []
        for each in windows:
            stream = each.stream
            assert stream.reference is not None
            for verdict in each.verdicts:
                current = stream.open_alerts.get(verdict.detector)
                if verdict.fired or (current is not None and verdict.holding):
                    stream.quiet[verdict.detector] = 0
                    if current is None and verdict.fired:
                        alert = Alert(
                            id=f"{stream.key}#{verdict.detector.value}#{each.index}",
                            detector=verdict.detector,
                            stream=stream.key,
                            window=each.index,
                            statistic=verdict.statistic,
                            threshold=verdict.threshold,
                            reference=stream.reference,
                            evidence=verdict.evidence,
                            message=verdict.message,
                            opened_at=at,
                        )
                        stream.open_alerts[verdict.detector] = alert
                        opened.append(alert)
                elif current is not None:
                    quiet = stream.quiet.get(verdict.detector, 0) + 1
                    stream.quiet[verdict.detector] = quiet
                    if quiet >= stream.config.clear_after_windows:
                        del stream.open_alerts[verdict.detector]
                        del stream.quiet[verdict.detector]
                        closed.append(current)
        return DriftUpdate(opened=tuple(opened), closed=tuple(closed), windows=len(windows))

    @property
    def open_alerts(self) -> tuple[Alert, ...]:
        """Return the alerts open now, in a stable order."""
        alerts = [a for s in self._streams.values() for a in s.open_alerts.values()]
        alerts += [a for r in self._rates.values() for a in r.open_alerts.values()]
        return tuple(sorted(alerts, key=lambda a: a.id))

    def flags(self, rubric: str) -> tuple[str, ...]:
        """Return the flags for a reward of ``rubric`` made while its alerts are open."""
        return tuple(sorted({a.flag for a in self.open_alerts if a.stream.rubric == rubric}))

    @property
    def streams(self) -> tuple[StreamKey, ...]:
        """Return the streams seen so far.

        A rate stream (:mod:`arbiter.monitoring.hack_rates`) is among them once it has seen
        an event or holds an alert: a rubric feeds one per violation type from its first
        reward, and the types it never saw are not worth a row on a page.
        """
        return (*self._streams, *(k for k, r in self._rates.items() if r.shown))

    def reference(self, key: StreamKey) -> ReferenceSummary | None:
        """Return a stream's frozen reference, or ``None`` while it is still collecting."""
        if key in self._rates:
            return self._rates[key].reference
        stream = self._streams.get(key)
        return None if stream is None else stream.reference

    def progress(self, key: StreamKey) -> dict[str, object]:
        """Say how far a stream is from being watched: its phase and samples against need.

        ``phase`` is ``warmup`` (its first windows, ignored), ``reference`` (collecting
        the windows it will be compared with) or ``watching``; ``samples`` and
        ``needed`` count toward the end of the current phase's collection (warm-up and
        reference together while in warm-up), so ``samples / needed`` is the progress
        a page can draw. Nothing is detected on a stream before it is watching.
        """
        if key in self._rates:
            return self._rates[key].progress()
        stream = self._streams[key]
        return warmup_progress(
            stream.config,
            stream.config.window,
            watching=stream.reference is not None,
            windows=stream.windows,
            pending=int(stream.pending.shape[0]),
            collected=int(stream.reference_rows.shape[0]),
        )

    def series(self, key: StreamKey) -> list[tuple[int, float]]:
        """Return a stream's latest window means, (window index, mean), oldest first."""
        if key in self._rates:
            return list(self._rates[key].means)
        return list(self._streams[key].means)

    def forget(self, key: StreamKey) -> tuple[Alert, ...]:
        """Drop a stream (a retired grader version or rubric) and return its open alerts."""
        if key in self._rates:
            return tuple(self._rates.pop(key).open_alerts.values())
        stream = self._streams.pop(key)
        return tuple(stream.open_alerts.values())

    def reset_reference(self, key: StreamKey) -> tuple[Alert, ...]:
        """Forget a stream's reference (after a reviewed, accepted change) and close its alerts.

        The stream collects a new reference from its next windows, with no warm-up.

        Returns:
            The alerts this closed.
        """
        if key in self._rates:
            rate = self._rates[key]
            self._rates[key] = rate.restarted()
            return tuple(rate.open_alerts.values())
        stream = self._streams[key]
        closed = tuple(stream.open_alerts.values())
        fresh = _Stream(key=key, config=stream.config, windows=stream.windows)
        fresh.pending = stream.pending
        fresh.means = stream.means  # the series goes on across the reset
        # Past the warm-up already: the next windows go straight into the reference.
        fresh.pass_history = []
        self._streams[key] = fresh
        return closed

    def state(self) -> DriftState:
        """Return the monitor's whole state, ready for ``model_dump_json``."""
        return DriftState(
            streams=[s.to_state() for s in self._streams.values()],
            rates=[r.to_state() for r in self._rates.values()],
        )

    @classmethod
    def from_state(
        cls,
        state: DriftState,
        config: DriftConfig | None = None,
        rubric_configs: Mapping[str, DriftConfig] | None = None,
    ) -> DriftMonitor:
        """Rebuild a monitor from :meth:`state`; streams keep the configs they were saved with."""
        monitor = cls(config, rubric_configs)
        for stream_state in state.streams:
            stream = _Stream.from_state(stream_state)
            monitor._streams[stream.key] = stream
        for rate_state in state.rates:
            rate = RateStream.from_state(rate_state)
            monitor._rates[rate.key] = rate
        return monitor
