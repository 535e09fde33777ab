"""Drift monitoring in the service: feed each graded batch to the monitor, keep its alerts.

The monitor (``monitoring.drift``) is pure and not thread-safe; here it gets
one lock, runs on the event loop (a few milliseconds a batch; in a worker
thread the GIL hand-offs cost more than the work: bench/api.py), stores the
alerts it opens and closes, and exports the open ones to Prometheus. While an
alert is open, the rewards of that rubric carry its flag
(``drift:<component>:<detector>``), so a trainer can see that the signal it
trains on is under suspicion.

One process owns the monitor: with several replicas each watches the traffic it
serves (its state is saved under its own name), which is still drift per
replica, and the alerts all land in the shared store.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Sequence

from prometheus_client import Gauge

from api.metrics import Metrics
from graders.types import Sample
from monitoring.drift import DriftMonitor, DriftState
from monitoring.drift_alerts import Alert
from monitoring.drift_config import DriftConfig
from rubrics.reward import Reward
from rubrics.rubric import Rubric
from store.db import Store

__all__ = ["DriftWatch"]

logger = logging.getLogger("arbiter.drift")


def _row(alert: Alert, at: float) -> dict[str, object]:
    return {
        "id": alert.id,
        "rubric_name": alert.stream.rubric,
        "component": alert.stream.component,
        "grader_version": alert.stream.version,
        "detector": alert.detector.value,
        "window": alert.window,
        "statistic": alert.statistic,
        "threshold": alert.threshold,
        "message": alert.message,
        "evidence": json.dumps(
            {"evidence": alert.evidence, "reference": alert.reference.model_dump(mode="json")},
            default=str,
        ),
        "opened_at": alert.opened_at if alert.opened_at is not None else at,
    }


class DriftWatch:
    """The service's drift monitor, its alerts and its saved state."""

    def __init__(self, store: Store, metrics: Metrics, name: str = "default") -> None:
        self.store = store
        self.name = name
        self.monitor = DriftMonitor()
        self._lock = threading.Lock()
        self._configured: dict[str, str] = {}  # rubric name -> sha256 its config came from
        self._published: set[tuple[str, str]] = set()  # gauge labels exported so far
        self.open_alerts = Gauge(
            "arbiter_drift_open_alerts",
            "Open drift alerts by rubric and detector.",
            ["rubric", "detector"],
            registry=metrics.registry,
        )

    def load(self) -> None:
        """Resume from the saved state (a fresh monitor when there is none or it is unreadable)."""
        raw = self.store.load_drift_state(self.name)
        if raw is None:
            return
        try:
            self.monitor = DriftMonitor.from_state(DriftState.model_validate_json(raw))
        except ValueError:
            logger.exception("saved drift state is unreadable; monitoring starts afresh")

    def save(self) -> None:
        """Save the monitor's state."""
        with self._lock:
            state = self.monitor.state().model_dump_json()
        self.store.save_drift_state(self.name, state)

    def _configure(self, rubric: Rubric) -> None:
        if self._configured.get(rubric.name) == rubric.sha256:
            return
        # The rubric's drift section names a subset of the monitor's thresholds;
        # the ones it leaves out keep the monitor's defaults.
        overrides = {k: v for k, v in rubric.spec.drift.model_dump().items() if v is not None}
        try:
            config = DriftConfig(**overrides)
        except ValueError:
            logger.exception("drift section of %s rejected; defaults apply", rubric.name)
            config = DriftConfig()
        self.monitor.rubric_configs[rubric.name] = config
        self._configured[rubric.name] = rubric.sha256

    def _observe(
        self, rubric: Rubric, rewards: Sequence[Reward], samples: Sequence[Sample]
    ) -> tuple[tuple[str, ...], list[dict[str, object]], list[str]]:
        now = time.time()
        with self._lock:
            self._configure(rubric)
            update = self.monitor.observe_rewards(
                rewards, [len(s.response) for s in samples], at=now
            )
            flags = self.monitor.flags(rubric.name)
            open_now = list(self.monitor.open_alerts)
        opened = [_row(a, now) for a in update.opened]
        closed = [a.id for a in update.closed]
        if opened or closed:
            self.store.record_alerts(opened, closed, now)
            for alert in update.opened:
                logger.warning("drift alert opened: %s", alert.message, extra={"alert": alert.id})
        self._publish(open_now)
        return flags, opened, closed

    def _publish(self, open_now: Sequence[Alert]) -> None:
        # A series that was ever exported drops to 0, not out of the exposition: a
        # dashboard reading "no series" cannot tell "resolved" from "never scraped".
        counts = dict.fromkeys(self._published, 0)
        for alert in open_now:
            label = (alert.stream.rubric, alert.detector.value)
            counts[label] = counts.get(label, 0) + 1
        for (rubric, detector), count in counts.items():
            self.open_alerts.labels(rubric=rubric, detector=detector).set(count)
        self._published = set(counts)

    async def observe(
        self, rubric: Rubric, rewards: Sequence[Reward], samples: Sequence[Sample]
    ) -> list[Reward]:
        """Feed a graded batch; return the rewards with the flags of open alerts added.

        A monitoring failure is logged and never costs the trainer its rewards.
        Freezing a stream's reference bootstraps its threshold once (a fraction
        of a second, once per stream); every other batch costs milliseconds.
        """
        try:
            flags, _, _ = self._observe(rubric, rewards, samples)
        except Exception:
            logger.exception("drift monitoring failed on a batch of %s", rubric.name)
            return list(rewards)
        if not flags:
            return list(rewards)
        return [r.model_copy(update={"flags": (*r.flags, *flags)}) for r in rewards]

    def streams(self) -> list[dict[str, object]]:
        """Return every stream with its reference (``None`` while it is still collecting)."""
        with self._lock:
            keys = self.monitor.streams
            references = {key: self.monitor.reference(key) for key in keys}
        return [
            {
                "rubric": key.rubric,
                "component": key.component,
                "grader_version": key.version,
                "reference": None if ref is None else ref.model_dump(mode="json"),
            }
            for key, ref in references.items()
        ]

    def reset(self, rubric: str, component: str | None = None, version: str | None = None) -> int:
        """Accept a change: forget the matching streams' references, close their alerts.

        Args:
            rubric: The rubric's name.
            component: Only this component's streams (every stream of the rubric,
                the rubric-level reward stream included, when ``None``).
            version: Only this grader version (every version when ``None``).

        Returns:
            How many alerts this closed.

        Raises:
            KeyError: If no stream matches.
        """
        now = time.time()
        with self._lock:
            keys = [
                k
                for k in self.monitor.streams
                if k.rubric == rubric
                and component in (None, k.component)
                and version in (None, k.version)
            ]
            if not keys:
                wanted = f"{rubric}/{component or '*'}@{version or '*'}"
                raise KeyError(f"no drift stream {wanted}")
            closed = [a for key in keys for a in self.monitor.reset_reference(key)]
            open_now = list(self.monitor.open_alerts)
        if closed:
            self.store.record_alerts([], [a.id for a in closed], now)
        self._publish(open_now)
        return len(closed)
