"""Prometheus metrics of the service, on a registry of its own (one per app)."""

from __future__ import annotations

import bisect
import collections
import math
import threading
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
)
from prometheus_client.registry import Collector
from prometheus_client.samples import Sample as PromSample
from prometheus_client.utils import floatToGoString

from arbiter.graders.types import Sample, TaskSpec

if TYPE_CHECKING:
    from arbiter.api.admission import Admission
    from arbiter.reward_models.usage import ModelUsage
    from arbiter.rubrics.reward import Reward
    from arbiter.rubrics.rubric import Rubric

__all__ = ["BatchHistogram", "Metrics", "ModelUsageCollector"]

LATENCY_BUCKETS_S = (
    0.001,
    0.0025,
    0.005,
    0.01,
    0.025,
    0.05,
    0.1,
    0.25,
    0.5,
    1,
    2.5,
    5,
    10,
    30,
    60,
    180,
)
# Rewards are usually in [-1, 1] or [0, 1]; finer steps there, coarse tails for z-scores.
REWARD_BUCKETS = (
    -3,
    -2,
    -1,
    -0.75,
    -0.5,
    -0.25,
    0,
    0.1,
    0.2,
    0.3,
    0.4,
    0.5,
    0.6,
    0.7,
    0.8,
    0.9,
    1,
    2,
    3,
)
SCORE_BUCKETS = (0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.99, 1)
#: Refusal reasons exported from the start (others appear when first counted).
REJECTION_REASONS = (
    "key_quota",
    "server_busy",
    "cluster_busy",
    "body_too_large",
    "invalid_request",
    "unauthorized",
)


class BatchHistogram(Collector):
    """A labelled Prometheus histogram that takes a batch of observations at once.

    prometheus_client's ``Histogram.observe`` takes one value under a lock, and
    every reward of a batch observes each of its components. Here one call bins
    a whole batch (a bisect per
    value, one lock per call), and the exposition is the same as a histogram's:
    cumulative ``_bucket`` series with ``le``, then ``_sum`` and ``_count``.
    """

    def __init__(
        self,
        name: str,
        documentation: str,
        labelnames: Sequence[str],
        buckets: Sequence[float],
        registry: CollectorRegistry,
    ) -> None:
        bounds = [float(b) for b in buckets]
        if bounds != sorted(set(bounds)):
            raise ValueError(f"{name}: buckets must be strictly increasing")
        if bounds[-1] != math.inf:
            bounds.append(math.inf)
        self.name = name
        self.documentation = documentation
        self.labelnames = tuple(labelnames)
        self.bounds = tuple(bounds)
        self._series: dict[tuple[str, ...], tuple[list[int], list[float]]] = {}
        self._lock = threading.Lock()
        registry.register(self)

    def observe(self, labels: Sequence[str], values: Iterable[float]) -> None:
        """Add every value (NaN is skipped: it has no bucket) to the series of ``labels``."""
        if len(labels) != len(self.labelnames):
            raise ValueError(f"{self.name} takes labels {self.labelnames}, got {tuple(labels)}")
        bounds = self.bounds
        counts = [0] * len(bounds)
        total = 0.0
        for value in values:
            if value != value:  # NaN
                continue
            # le is inclusive: a value equal to a bound falls in that bound's bucket.
            counts[bisect.bisect_left(bounds, value)] += 1
            total += value
        key = tuple(labels)
        with self._lock:
            series = self._series.get(key)
            if series is None:
                series = self._series[key] = ([0] * len(bounds), [0.0])
            kept, summed = series
            for i, c in enumerate(counts):
                kept[i] += c
            summed[0] += total

    def collect(self) -> Iterator[HistogramMetricFamily]:
        """Yield the histogram family with one series per label set observed so far."""
        family = HistogramMetricFamily(self.name, self.documentation, labels=self.labelnames)
        with self._lock:
            snapshot = [(k, list(c), s[0]) for k, (c, s) in self._series.items()]
        for labels, counts, total in sorted(snapshot):
            names = dict(zip(self.labelnames, labels, strict=True))
            running = 0
            for bound, count in zip(self.bounds, counts, strict=True):
                running += count
                le = floatToGoString(bound)  # type: ignore[no-untyped-call]
                family.samples.append(
                    PromSample(f"{self.name}_bucket", {**names, "le": le}, running)
                )
            # Written out here: HistogramMetricFamily leaves _count and _sum out when
            # a bucket is negative (rewards can be), and they are what rates are made of.
            family.samples.append(PromSample(f"{self.name}_count", names, running))
            family.samples.append(PromSample(f"{self.name}_sum", names, total))
        yield family

    def describe(self) -> Iterator[HistogramMetricFamily]:
        """Describe the family without samples (so registering does not collect)."""
        yield HistogramMetricFamily(self.name, self.documentation, labels=self.labelnames)


class ModelUsageCollector(Collector):
    """Every declared model's counters (:class:`~arbiter.reward_models.usage.ModelUsage`).

    Read at scrape.

    The models count on their own (a reward model's batches finish on the
    batcher's threads); this turns their counters into series labelled by
    ``kind`` (``reward_model`` or ``judge``) and ``model`` (its declared name),
    one per declared model from the start, loaded or not.
    """

    def __init__(self, usages: Iterable[ModelUsage]) -> None:
        """Expose ``usages``."""
        self.usages = list(usages)

    def collect(self) -> Iterator[CounterMetricFamily | GaugeMetricFamily | HistogramMetricFamily]:
        """Yield requests, tokens, errors by kind, latency and batch fill per model."""
        labels = ["kind", "model"]
        requests = CounterMetricFamily(
            "arbiter_model_requests", "Requests to each declared model.", labels=labels
        )
        tokens = CounterMetricFamily(
            "arbiter_model_tokens",
            "Tokens each declared model read (in) and wrote (out).",
            labels=[*labels, "direction"],
        )
        errors = CounterMetricFamily(
            "arbiter_model_errors",
            "Failed requests to each declared model, by kind (unreachable, unauthorized, "
            "model_missing, timeout, no_verdict, ...).",
            labels=[*labels, "error"],
        )
        latency = HistogramMetricFamily(
            "arbiter_model_request_duration_seconds",
            "Latency of each declared model's answered requests.",
            labels=labels,
        )
        fill = HistogramMetricFamily(
            "arbiter_model_batch_fill_ratio",
            "Reward-model batches by padded tokens over the batcher's token budget.",
            labels=labels,
        )
        for usage in self.usages:
            names = [usage.kind, usage.name]
            snapshot = usage.snapshot()
            requests.add_metric(names, snapshot["requests"])  # type: ignore[arg-type]
            tokens.add_metric([*names, "in"], snapshot["tokens_in"])  # type: ignore[arg-type]
            tokens.add_metric([*names, "out"], snapshot["tokens_out"])  # type: ignore[arg-type]
            for kind, count in sorted(snapshot["errors"].items()):  # type: ignore[attr-defined]
                errors.add_metric([*names, kind], count)
            histograms = usage.histograms()
            latency.add_metric(names, *_histogram(*histograms["latency"]))
            if usage.kind == "reward_model":
                fill.add_metric(names, *_histogram(*histograms["batch_fill"]))
        yield from (requests, tokens, errors, latency, fill)

    def describe(self) -> Iterator[CounterMetricFamily]:
        """Describe nothing: collected on every scrape (the registry need not pre-check)."""
        return iter(())


def _histogram(
    cumulative: list[tuple[float, int]], total: float
) -> tuple[list[tuple[str, float]], float]:
    pairs = [
        ("+Inf" if bound == math.inf else _le(bound), float(count)) for bound, count in cumulative
    ]
    return pairs, total


def _le(bound: float) -> str:
    return str(floatToGoString(bound))  # type: ignore[no-untyped-call]


class Metrics:
    """The service's metrics. Labels stay low-cardinality: never a sample or key id."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        self.requests = Counter(
            "arbiter_http_requests_total",
            "HTTP requests by route and status.",
            ["route", "status"],
            registry=r,
        )
        self.request_latency = Histogram(
            "arbiter_http_request_duration_seconds",
            "HTTP request latency by route.",
            ["route"],
            buckets=LATENCY_BUCKETS_S,
            registry=r,
        )
        self.samples = Counter(
            "arbiter_samples_total", "Samples graded, by rubric.", ["rubric"], registry=r
        )
        self.grader_latency = BatchHistogram(
            "arbiter_grader_duration_seconds",
            "Per-sample grader latency.",
            ["grader"],
            buckets=LATENCY_BUCKETS_S,
            registry=r,
        )
        self.grader_failures = Counter(
            "arbiter_grader_failures_total",
            "Grader failures by type.",
            ["grader", "kind"],
            registry=r,
        )
        self.rewards = BatchHistogram(
            "arbiter_reward",
            "Reward values by rubric.",
            ["rubric"],
            buckets=REWARD_BUCKETS,
            registry=r,
        )
        self.abstentions = Counter(
            "arbiter_abstentions_total", "Rewards the rubric abstained on.", ["rubric"], registry=r
        )
        self.canaries = Counter(
            "arbiter_canaries_graded_total",
            "Canary samples graded (a task with a canary marker: one test made impossible), "
            "by rubric.",
            ["rubric"],
            registry=r,
        )
        self.canary_passes = Counter(
            "arbiter_canary_passes_total",
            "Canary samples whose impossible tests passed (rewards flagged hack:canary), "
            "by rubric.",
            ["rubric"],
            registry=r,
        )
        self.components = BatchHistogram(
            "arbiter_component_score",
            "Component scores by rubric and component.",
            ["rubric", "component"],
            buckets=SCORE_BUCKETS,
            registry=r,
        )
        self.rejections = Counter(
            "arbiter_rejections_total",
            "Grading requests refused, by reason (the error code: key_quota, server_busy, "
            "body_too_large, invalid_request, unauthorized, ...).",
            ["reason"],
            registry=r,
        )
        # Exported at 0 from the start: "no refusals" reads differently from "not exported".
        for reason in REJECTION_REASONS:
            self.rejections.labels(reason=reason)
        self.inflight_samples = Gauge(
            "arbiter_inflight_samples", "Samples being graded now.", registry=r
        )
        self.inflight_requests = Gauge(
            "arbiter_inflight_requests", "Requests being graded now.", registry=r
        )
        self.admission_utilization = Gauge(
            "arbiter_admission_utilization",
            "Fraction of the in-flight sample bound in use.",
            registry=r,
        )

        # Set at scrape time (api/routes/health.py): what on-call pages on.
        self.ready = Gauge(
            "arbiter_ready",
            "1 while the service is started, its store takes writes and rubrics are loaded.",
            registry=r,
        )
        self.store_writes_failing = Gauge(
            "arbiter_store_writes_failing",
            "1 while the store refuses or loses writes (the last write or probe failed).",
            registry=r,
        )
        self.review_queue = Gauge(
            "arbiter_review_queue_items",
            "Human-review items by rubric and state (open: waiting, leased, done).",
            ["rubric", "state"],
            registry=r,
        )

    def gauge_admission(self, admission: Admission) -> None:
        """Set the in-flight gauges from the admission's counts."""
        self.inflight_samples.set(admission.samples_in_flight)
        self.inflight_requests.set(admission.requests_in_flight)
        self.admission_utilization.set(admission.utilization())

    def gauge_review_queue(self, stats: Mapping[str, Any]) -> None:
        """Set the review-queue gauges from :meth:`arbiter.store.review.ReviewQueue.stats`."""
        for rubric, counts in stats.get("rubrics", {}).items():
            for state in ("open", "leased", "done"):
                self.review_queue.labels(rubric=rubric, state=state).set(counts[state])

    def observe_batch(
        self, rubric: Rubric, rewards: Sequence[Reward], samples: Sequence[Sample] = ()
    ) -> None:
        """Count a graded batch: rewards, abstentions, component scores, grader latencies.

        With the batch's ``samples``, also its canaries and the canaries that passed.
        """
        self.samples.labels(rubric=rubric.name).inc(len(rewards))
        canaries = sum(isinstance(s.task, TaskSpec) and s.task.canary is not None for s in samples)
        if canaries:
            self.canaries.labels(rubric=rubric.name).inc(canaries)
            # Exported at 0 with the first canary: "none passed" is a reading too.
            self.canary_passes.labels(rubric=rubric.name)
        passes = sum("hack:canary" in r.flags for r in rewards)
        if passes:
            self.canary_passes.labels(rubric=rubric.name).inc(passes)
        values = [r.reward for r in rewards if r.reward is not None]
        self.rewards.observe((rubric.name,), values)
        if len(values) < len(rewards):
            self.abstentions.labels(rubric=rubric.name).inc(len(rewards) - len(values))
        latencies: dict[str, list[float]] = {}
        failures: collections.Counter[tuple[str, str]] = collections.Counter()
        # Each reward's own components, under its own rubric's name: a rubric with
        # routes grades each sample by its route's rubric (``<name>.<route>``).
        scores: dict[tuple[str, str], list[float]] = {}
        for reward in rewards:
            for name, outcome in reward.components.items():
                latencies.setdefault(outcome.grader, []).append(outcome.latency_s)
                observed = scores.setdefault((reward.rubric.name, name), [])
                if outcome.score is not None:
                    observed.append(outcome.score)
                elif outcome.failure is not None:
                    failures[outcome.grader, outcome.failure.kind.value] += 1
        for key, values_of in scores.items():
            self.components.observe(key, values_of)
        for grader, seconds in latencies.items():
            self.grader_latency.observe((grader,), seconds)
        for (grader, kind), count in failures.items():
            self.grader_failures.labels(grader=grader, kind=kind).inc(count)
