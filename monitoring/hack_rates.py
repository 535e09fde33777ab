"""Rate streams: how often a rubric's rewards show a sign of reward hacking, window by window.

Three kinds of stream, each per rubric version and fed with 0/1 observations:

* ``hack:<type>``, one per violation type: 1 where any component of a reward
  reported that type. Every type is fed from a rubric's first reward, so a type
  that was never seen has a reference of zero and its first burst stands out.
* :data:`GROUP_STREAM`: one observation per GRPO group of two or more rewards in a
  batch, 1 where the group's rewards all agree (its variance collapsed: no
  learning signal, and the mark of a policy that found one answer every grader
  takes).
* :data:`CANARY_STREAM`: 1 where a reward's tests passed a canary task, whose
  tests an honest program cannot pass.

A rate stream ignores its warm-up windows, freezes the next reference windows'
rate, and tests each later window, pooled with the windows just before it
(``hack_rate_windows``), with Fisher's exact test, one-sided
(:class:`~arbiter.monitoring.drift_alerts.Detector` ``HACK_RATE``): exact, because
the events are rare and a normal approximation is liberal there. The canary
stream has no warm-up and no reference: one pass is proof, and it fires on the
batch that brings it (``CANARY_PASS``), before its window completes.

The state is counts, not rows: a rubric keeps some twenty of these streams.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt
from pydantic import BaseModel, ConfigDict, Field

from arbiter.monitoring.drift_alerts import (
    Alert,
    Detector,
    ReferenceSummary,
    StreamKey,
    Verdict,
)
from arbiter.monitoring.drift_config import DriftConfig, warmup_progress
from arbiter.monitoring.drift_statistics import fisher_rise_p

__all__ = [
    "CANARY_STREAM",
    "GROUP_STREAM",
    "HACK_PREFIX",
    "RateStream",
    "RateStreamState",
    "RateWindow",
]

Floats = npt.NDArray[np.float64]

#: A violation type's stream is ``hack:<type>``.
HACK_PREFIX = "hack:"
#: The share of a batch's GRPO groups whose rewards all agree.
GROUP_STREAM = "groups:zero_variance"
#: Canary passes (the ``canary`` violation).
CANARY_STREAM = "canary"
#: A batch holds fewer groups than rewards (four rewards per group at the least): the
#: groups' windows hold this many times fewer observations, to keep a like cadence.
GROUP_WINDOW_DIVISOR = 4
#: Window rates kept per stream for display, as the score streams keep their means.
SERIES_WINDOWS = 120


class RateStreamState(BaseModel):
    """One rate stream's persisted state."""

    model_config = ConfigDict(extra="forbid")

    key: StreamKey
    config: DriftConfig
    windows: int
    pending_hits: int
    pending_n: int
    reference_hits: int
    reference_n: int
    reference_windows: int
    reference: ReferenceSummary | None
    hits_ever: int
    open_alerts: list[Alert]
    quiet: dict[Detector, int]
    means: list[tuple[int, float]] = Field(default_factory=list)
    recent: list[tuple[int, int]] = Field(default_factory=list)


@dataclass
class RateWindow:
    """A rate window that was tested, with its verdicts (no KS: a rate is not a distribution)."""

    stream: RateStream
    index: int
    verdicts: list[Verdict]


def _summary(first_window: int, windows: int, hits: int, n: int, window: int) -> ReferenceSummary:
    rate = hits / n if n else 0.0
    sd = math.sqrt(rate * (1.0 - rate))
    return ReferenceSummary(
        first_window=first_window,
        windows=windows,
        samples=n,
        mean=rate,
        sd=sd,
        effective_sd=sd,
        window_mean_sd=max(sd / math.sqrt(window), 1e-12),
        wasserstein_threshold=0.0,
        collapse_probability=1.0,
        collapse_windows=0,
    )


@dataclass
class RateStream:
    """A stream of 0/1 observations tested for a rising rate (or, for canaries, any pass)."""

    key: StreamKey
    config: DriftConfig
    windows: int = 0
    pending_hits: int = 0
    pending_n: int = 0
    reference_hits: int = 0
    reference_n: int = 0
    reference_windows: int = 0
    reference: ReferenceSummary | None = None
    hits_ever: int = 0
    open_alerts: dict[Detector, Alert] = field(default_factory=dict)
    quiet: dict[Detector, int] = field(default_factory=dict)
    means: list[tuple[int, float]] = field(default_factory=list)
    #: The latest tested windows' (hits, observations), pooled against the reference.
    recent: list[tuple[int, int]] = field(default_factory=list)

    def __post_init__(self) -> None:
        if self.is_canary and self.reference is None:
            # What a canary is compared with: no pass at all.
            self.reference = _summary(0, 0, 0, 0, self.size)

    @property
    def size(self) -> int:
        """Observations per window: a group is one, so the groups' window is a quarter."""
        window = self.config.window
        return (
            max(10, window // GROUP_WINDOW_DIVISOR)
            if self.key.component == GROUP_STREAM
            else window
        )

    @property
    def is_canary(self) -> bool:
        """Whether this is the canary stream (no warm-up, no reference, one pass fires)."""
        return self.key.component == CANARY_STREAM

    @property
    def shown(self) -> bool:
        """Whether the stream has anything to show: an event seen, or an alert open."""
        return self.hits_ever > 0 or bool(self.open_alerts)

    def ingest(self, values: Floats) -> list[RateWindow]:
        """Add 0/1 observations; test each window they complete (a canary pass at once)."""
        flags = values > 0.5
        self.hits_ever += int(np.count_nonzero(flags))
        size = self.size
        tested = []
        start = 0
        while start < flags.size:
            take = min(size - self.pending_n, flags.size - start)
            self.pending_hits += int(np.count_nonzero(flags[start : start + take]))
            self.pending_n += take
            start += take
            if self.pending_n == size:
                index, hits = self.windows, self.pending_hits
                self.windows += 1
                self.pending_hits = self.pending_n = 0
                self.means.append((index, hits / size))
                del self.means[:-SERIES_WINDOWS]
                window = self._complete(index, hits, size)
                if window is not None:
                    tested.append(window)
        if (
            self.is_canary
            and Detector.CANARY_PASS not in self.open_alerts
            and self.pending_hits >= self.config.canary_passes
        ):
            # Proof needs no full window: the batch that brings it opens the alert.
            tested.append(RateWindow(self, self.windows, [self._canary(self.pending_hits)]))
        return tested

    def _complete(self, index: int, hits: int, n: int) -> RateWindow | None:
        cfg = self.config
        if self.is_canary:
            # A window with no pass is news only to an open alert (it may close it).
            if hits or self.open_alerts:
                return RateWindow(self, index, [self._canary(hits)])
            return None
        if index < cfg.warmup_windows:
            return None
        if self.reference is None:
            self.reference_hits += hits
            self.reference_n += n
            self.reference_windows += 1
            if self.reference_windows >= cfg.reference_windows:
                self.reference = _summary(
                    index - cfg.reference_windows + 1,
                    self.reference_windows,
                    self.reference_hits,
                    self.reference_n,
                    self.size,
                )
            return None
        self.recent.append((hits, n))
        del self.recent[: -cfg.hack_rate_windows]
        hits, n = sum(h for h, _ in self.recent), sum(m for _, m in self.recent)
        p = fisher_rise_p(self.reference_hits, self.reference_n, hits, n)
        rate, before = hits / n, self.reference_hits / self.reference_n
        rise = 100.0 * (rate - before)
        big_enough = rise >= cfg.hack_rate_min_rise_pp
        what = (
            "groups whose rewards all agree"
            if self.key.component == GROUP_STREAM
            else f"rewards with {self.key.component.removeprefix(HACK_PREFIX)}"
        )
        verdict = Verdict(
            Detector.HACK_RATE,
            p <= cfg.hack_rate_alpha and big_enough,
            p,
            cfg.hack_rate_alpha,
            {
                "rate": rate,
                "reference_rate": before,
                "rise_pp": rise,
                "hits": hits,
                "n": n,
                "windows": len(self.recent),
            },
            f"{what}: {rate:.1%} of the latest {len(self.recent)} window(s) against "
            f"{before:.1%} in the reference "
            f"({rise:+.1f} points, exact p={p:.3g})",
            holding=big_enough,
        )
        return RateWindow(self, index, [verdict])

    def _canary(self, hits: int) -> Verdict:
        need = self.config.canary_passes
        return Verdict(
            Detector.CANARY_PASS,
            hits >= need,
            float(hits),
            float(need),
            {"passes": hits},
            f"{hits} canary task(s) passed: their tests cannot pass honestly",
        )

    def progress(self) -> dict[str, object]:
        """Say how far the stream is from being watched (a canary is watched at once)."""
        return warmup_progress(
            self.config,
            self.size,
            watching=self.reference is not None,
            windows=self.windows,
            pending=self.pending_n,
            collected=self.reference_n,
            reference_needed=not self.is_canary,
        )

    def restarted(self) -> RateStream:
        """Return the stream with its reference forgotten (no warm-up) and no alerts open."""
        fresh = RateStream(key=self.key, config=self.config, windows=self.windows)
        fresh.pending_hits, fresh.pending_n = self.pending_hits, self.pending_n
        fresh.hits_ever, fresh.means = self.hits_ever, self.means
        return fresh

    def to_state(self) -> RateStreamState:
        """Return the stream's persisted state."""
        return RateStreamState(
            key=self.key,
            config=self.config,
            windows=self.windows,
            pending_hits=self.pending_hits,
            pending_n=self.pending_n,
            reference_hits=self.reference_hits,
            reference_n=self.reference_n,
            reference_windows=self.reference_windows,
            reference=self.reference,
            hits_ever=self.hits_ever,
            open_alerts=list(self.open_alerts.values()),
            quiet=dict(self.quiet),
            means=list(self.means),
            recent=list(self.recent),
        )

    @classmethod
    def from_state(cls, state: RateStreamState) -> RateStream:
        """Rebuild a stream from its persisted state."""
        return cls(
            key=state.key,
            config=state.config,
            windows=state.windows,
            pending_hits=state.pending_hits,
            pending_n=state.pending_n,
            reference_hits=state.reference_hits,
            reference_n=state.reference_n,
            reference_windows=state.reference_windows,
            reference=state.reference,
            hits_ever=state.hits_ever,
            open_alerts={a.detector: a for a in state.open_alerts},
            quiet=dict(state.quiet),
            means=list(state.means),
            recent=list(state.recent),
        )
