"""What each model did: requests, tokens in and out, batch fill, latency, errors by kind.

Plain counters, thread-safe (a reward model's batches finish on the batcher's
threads), with no metrics library behind them: this package imports nothing of
the service. The service exposes every model's :class:`ModelUsage` as
Prometheus series at scrape time; ``arbiter models check`` reads the same
numbers for its one probe.
"""

from __future__ import annotations

import bisect
import collections
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field

from arbiter.reward_models.errors import error_kind

__all__ = ["FILL_BUCKETS", "LATENCY_BUCKETS_S", "Buckets", "ModelUsage"]

LATENCY_BUCKETS_S = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120)
#: Padded batch tokens over the batcher's token budget (1.0: the budget filled).
FILL_BUCKETS = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)


@dataclass
class Buckets:
    """A histogram's counts per upper bound (not cumulative), its sum and count."""

    bounds: Sequence[float]
    counts: list[int] = field(default_factory=list)
    total: float = 0.0
    count: int = 0

    def __post_init__(self) -> None:
        self.counts = [0] * (len(self.bounds) + 1)  # the last one is +Inf

    def observe(self, value: float) -> None:
        """Count one value into the first bucket whose bound is at or above it."""
        self.counts[bisect.bisect_left(self.bounds, value)] += 1
        self.total += value
        self.count += 1

    def cumulative(self) -> list[tuple[float, int]]:
        """Return ``(upper bound, values at or below it)``, ending with +Inf."""
        out, running = [], 0
        for bound, n in zip([*self.bounds, float("inf")], self.counts, strict=True):
            running += n
            out.append((bound, running))
        return out


class ModelUsage:
    """Counters of one declared model (``kind`` is ``reward_model`` or ``judge``)."""

    def __init__(self, name: str, kind: str) -> None:
        """Start every counter at zero."""
        self.name = name
        self.kind = kind
        self.requests = 0
        self.tokens_in = 0
        self.tokens_out = 0
        self.errors: collections.Counter[str] = collections.Counter()
        self.latency = Buckets(LATENCY_BUCKETS_S)
        self.batch_fill = Buckets(FILL_BUCKETS)
        self.last_error: str | None = None
        self._lock = threading.Lock()

    def observe(self, latency_s: float, *, tokens_in: int = 0, tokens_out: int = 0) -> None:
        """Count one answered request."""
        with self._lock:
            self.requests += 1
            self.tokens_in += tokens_in
            self.tokens_out += tokens_out
            self.latency.observe(latency_s)
            self.last_error = None

    def observe_error(self, error: BaseException, *, request: bool = True) -> str:
        """Count one failure by the kind of its error; return the kind.

        ``request=False`` for a failure found after the request was answered
        (a judge's answer without a verdict): the request is counted already.
        """
        kind = error_kind(error)
        with self._lock:
            self.requests += int(request)
            self.errors[kind] += 1
            self.last_error = kind
        return kind

    def observe_batch(self, fill: float) -> None:
        """Count one batch by how much of its token budget it filled."""
        with self._lock:
            self.batch_fill.observe(fill)

    def histograms(self) -> dict[str, tuple[list[tuple[float, int]], float]]:
        """Return ``latency`` and ``batch_fill`` as (cumulative buckets, sum), read together."""
        with self._lock:
            return {
                "latency": (self.latency.cumulative(), self.latency.total),
                "batch_fill": (self.batch_fill.cumulative(), self.batch_fill.total),
            }

    def snapshot(self) -> dict[str, object]:
        """Return the counters as plain data (for reports and tests)."""
        with self._lock:
            return {
                "requests": self.requests,
                "tokens_in": self.tokens_in,
                "tokens_out": self.tokens_out,
                "errors": dict(self.errors),
                "batches": self.batch_fill.count,
                "latency_s_sum": self.latency.total,
                "last_error": self.last_error,
            }
