"""Prometheus metrics of the service, on a registry of its own (one per app)."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

__all__ = ["Metrics"]

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
        self.grader_latency = Histogram(
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
        self.rewards = Histogram(
            "arbiter_reward",
            "Reward values by rubric.",
            ["rubric"],
            buckets=REWARD_BUCKETS,
            registry=r,
        )
        self.abstentions = Counter(
            "arbiter_abstentions_total", "Rewards the rubric abstained on.", ["rubric"], registry=r
        )
        self.components = Histogram(
            "arbiter_component_score",
            "Component scores by rubric and component.",
            ["rubric", "component"],
            buckets=SCORE_BUCKETS,
            registry=r,
        )
        self.rejections = Counter(
            "arbiter_rejections_total",
            "Requests refused before grading, by reason.",
            ["reason"],
            registry=r,
        )
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
