"""What the drift monitor says: stream keys, reference summaries and alerts with evidence."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from enum import StrEnum
from typing import Literal

from pydantic import BaseModel, ConfigDict

__all__ = [
    "REWARD_STREAM",
    "STATISTICS",
    "Alert",
    "Detector",
    "DriftUpdate",
    "ReferenceSummary",
    "StreamKey",
    "Verdict",
    "short_alert_id",
]

# The rubric-level stream (the composed reward and the rollout's tests, runtime and
# length). "@" cannot start a component name, so it never collides with one.
REWARD_STREAM = "@reward"


class Detector(StrEnum):
    """The detectors; each alert names the one that fired."""

    CUSUM = "cusum"
    KS = "ks"
    WASSERSTEIN = "wasserstein"
    VARIANCE_COLLAPSE = "variance_collapse"
    PASS_RATE_STEP = "pass_rate_step"
    REWARD_UP_TESTS_DOWN = "reward_up_tests_down"
    LENGTH_CORRELATION = "length_correlation"
    #: The pass rate up while tests executed or runtime fell, both against the reference.
    PASS_UP_TESTS_DOWN = "pass_up_tests_down"
    #: A rate stream's events (a violation type, zero-variance groups) rising over its
    #: reference: Fisher's exact test, one-sided.
    HACK_RATE = "hack_rate"
    #: A canary task's impossible tests passed: proof, with no reference needed.
    CANARY_PASS = "canary_pass"


#: What each detector's ``statistic`` is, by name, and on which side of its
#: ``threshold`` it fires (KS's is a p-value, and fires at or below its critical level).
STATISTICS: dict[Detector, tuple[str, Literal["above", "below"]]] = {
    Detector.CUSUM: ("cusum", "above"),
    Detector.KS: ("p_value", "below"),
    Detector.WASSERSTEIN: ("wasserstein_distance", "above"),
    Detector.VARIANCE_COLLAPSE: ("variance_ratio", "below"),
    Detector.PASS_RATE_STEP: ("pass_rate_z", "above"),
    Detector.REWARD_UP_TESTS_DOWN: ("z", "above"),
    Detector.LENGTH_CORRELATION: ("rise_z", "above"),
    Detector.PASS_UP_TESTS_DOWN: ("z", "above"),
    Detector.HACK_RATE: ("p_value", "below"),
    Detector.CANARY_PASS: ("passes", "above"),
}


def short_alert_id(alert_id: str) -> str:
    """Return an alert's short id: 12 hex digits of its full id's sha256.

    The full id names the stream, detector and window (with a rubric's 64-digit
    sha256 for the rubric-level stream): stable, but too long to read or paste.
    """
    return hashlib.sha256(alert_id.encode("utf-8")).hexdigest()[:12]


class StreamKey(BaseModel):
    """One monitored stream: a rubric's component as scored by one grader version.

    A new grader version starts a new stream with its own warm-up and reference:
    a deliberate grader change is not drift.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    rubric: str
    component: str
    version: str

    def __str__(self) -> str:
        return f"{self.rubric}/{self.component}@{self.version}"


class ReferenceSummary(BaseModel):
    """The frozen reference a stream is compared with, as evidence on every alert."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    first_window: int
    windows: int
    samples: int
    mean: float
    sd: float
    effective_sd: float
    window_mean_sd: float
    wasserstein_threshold: float
    collapse_probability: float
    collapse_windows: int
    pass_rate: float | None = None
    #: How many reference rewards had a known pass or fail (``pass_rate``'s count).
    pass_known: int = 0
    tests_executed_mean: float | None = None
    tests_executed_window_sd: float | None = None
    runtime_s_mean: float | None = None
    runtime_s_window_sd: float | None = None
    length_correlation: float | None = None
    length_pairs: int = 0


class Alert(BaseModel):
    """One detector firing on one stream, with what it measured.

    ``statistic`` is named, per detector, in ``STATISTICS``, with the side of
    ``threshold`` it fires on: at or above it, except ``ks`` (a p-value, at or
    below the critical level the multiple-testing correction gave it) and
    ``variance_collapse`` (a variance ratio below the threshold).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str
    detector: Detector
    stream: StreamKey
    window: int
    statistic: float
    threshold: float
    reference: ReferenceSummary
    evidence: dict[str, float | int | str | None]
    message: str
    opened_at: float | None = None

    @property
    def flag(self) -> str:
        """Return the flag a reward carries while this alert is open."""
        return f"drift:{self.stream.component}:{self.detector.value}"


@dataclass
class Verdict:
    """One detector's reading of one window: what opens, holds or lets an alert close."""

    detector: Detector
    fired: bool
    statistic: float
    threshold: float
    evidence: dict[str, float | int | str | None]
    message: str
    # Whether the window still supports an open alert without firing on its own:
    # a CUSUM that is accumulating again, a distance above its threshold but not
    # yet for enough windows. Keeps an alert on a persistent shift from flapping.
    holding: bool = False


class DriftUpdate(BaseModel):
    """The alerts one call to the monitor opened and closed."""

    model_config = ConfigDict(frozen=True)

    opened: tuple[Alert, ...] = ()
    closed: tuple[Alert, ...] = ()
    windows: int = 0
