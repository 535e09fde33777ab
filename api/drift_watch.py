"""Drift monitoring in the service: feed each graded batch to the monitor, keep its alerts.

The monitor (``arbiter.monitoring.drift``) is pure and not thread-safe; here it gets
one lock, runs on the event loop (its work per batch is small, and in a worker
thread the GIL hand-offs would cost more than the work), stores the
alerts it opens and closes, and exports the open ones to Prometheus. While an
alert is open, the rewards of that rubric carry its flag
(``drift:<component>:<detector>``), so a trainer can see that the signal it
trains on is under suspicion.

Two ways to run it. :class:`DriftWatch` feeds the monitor in-process, batch by
batch: the embedded SQLite store's single process. :class:`SharedDriftWatch` is
for several replicas on one PostgreSQL: one monitor over all traffic, run by
whichever replica holds an advisory lock, which follows the reward log; every
replica reads the open alerts back from the store every poll, so the flags
reach the rewards of all of them.

A silence (``arbiter.store.drift_log.DriftLog.silence``) mutes a rubric's (or one
component's) open alerts until it expires or is lifted: their flags leave the
rewards and ``arbiter_drift_incident_open`` stops paging, while the detectors go
on against the same reference and the alerts still open and close (a reset, by
contrast, forgets the reference). Every watch reads the active silences from the
store at most once a second, so all replicas follow the same ones.

Both in one module: the shared watch is the in-process one plus a leader, a log
cursor and saved state, and the two must flag rewards, log alerts and export
gauges identically (the replica tests compare them on the same traffic).
"""

from __future__ import annotations

import asyncio
import json
import logging
import threading
import time
from collections.abc import Callable, Sequence

from prometheus_client import Gauge

from arbiter.api.metrics import Metrics
from arbiter.graders.types import Sample
from arbiter.monitoring.drift import DriftMonitor, DriftState
from arbiter.monitoring.drift_alerts import Alert, StreamKey
from arbiter.monitoring.drift_config import DriftConfig
from arbiter.rubrics.catalog import RubricCatalog
from arbiter.rubrics.errors import RubricNotFoundError
from arbiter.rubrics.reward import Reward
from arbiter.rubrics.rubric import Rubric
from arbiter.store.db import Store
from arbiter.store.drift_log import DriftLog, LeaderLock, LogCursor, LoggedReward

__all__ = ["DriftWatch", "SharedDriftWatch"]

logger = logging.getLogger("arbiter.drift")

#: How often a watch reads the active silences back from the store.
SILENCE_REFRESH_S = 1.0


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


def _label(alert: Alert) -> tuple[str, str, str]:
    """Return an alert's gauge labels: rubric, component, detector."""
    return (alert.stream.rubric, alert.stream.component, alert.detector.value)


def _stream_keys(
    monitor: DriftMonitor, rubric: str, component: str | None, version: str | None
) -> list[StreamKey]:
    """Return the rubric's streams (one component's, one version's), or raise ``KeyError``."""
    keys = [
        k
        for k in monitor.streams
        if k.rubric == rubric and component in (None, k.component) and version in (None, k.version)
    ]
    if not keys:
        raise KeyError(f"no drift stream {rubric}/{component or '*'}@{version or '*'}")
    return keys


def _streams(monitor: DriftMonitor) -> list[dict[str, object]]:
    references = {key: monitor.reference(key) for key in monitor.streams}
    return [
        {
            "rubric": key.rubric,
            "component": key.component,
            "grader_version": key.version,
            "reference": None if ref is None else ref.model_dump(mode="json"),
            # Says that nothing is watched yet, and for how long still: after a reset,
            # or for the first window x (warmup + reference) samples.
            "warmup": monitor.progress(key),
            # What the drift page draws against the reference band (its mean, and
            # the sd of a window's mean).
            "series": [{"window": i, "mean": m} for i, m in monitor.series(key)],
        }
        for key, ref in references.items()
    ]


class DriftWatch:
    """The service's drift monitor, its alerts and its saved state."""

    def __init__(self, store: Store, metrics: Metrics, name: str = "default") -> None:
        self.store = store
        self.log = DriftLog(store)
        self.name = name
        self.monitor = DriftMonitor()
        self._lock = threading.Lock()
        self._configured: dict[str, str] = {}  # rubric name -> sha256 its config came from
        self._published: set[tuple[str, str, str]] = set()  # gauge labels exported so far
        self._published_rubrics: set[str] = set()
        # Active silences as last read: (rubric, component or None for all, until).
        self._silences: list[tuple[str, str | None, float]] = []
        self._silences_read = float("-inf")
        self.open_alerts = Gauge(
            "arbiter_drift_open_alerts",
            "Open drift alerts by rubric, component (@reward: the rubric-level reward) "
            "and detector.",
            ["rubric", "component", "detector"],
            registry=metrics.registry,
        )
        # Page on this one: one shift opens several alerts, which form one incident
        # (monitoring.drift_incidents); a rubric's alerts open at once are one incident.
        self.open_incidents = Gauge(
            "arbiter_drift_incident_open",
            "1 while a drift incident of the rubric is open (any of its alerts open), else 0.",
            ["rubric"],
            registry=metrics.registry,
        )

    def refresh_silences(self, *, force: bool = False) -> None:
        """Read the active silences from the store (at most once a second unless forced)."""
        if not force and time.monotonic() - self._silences_read < SILENCE_REFRESH_S:
            return
        try:
            rows = self.log.silences(active_at=time.time(), limit=1000)
        except Exception:  # the silences as last read stand: flags never cost a batch
            logger.warning("could not read drift silences; the last ones read apply", exc_info=True)
            return
        self._silences = [(r["rubric_name"], r["component"], r["until"]) for r in rows]
        self._silences_read = time.monotonic()

    def silenced(self, rubric: str, component: str) -> bool:
        """Return whether a stream's alerts are silenced now (an expired silence is not)."""
        now = time.time()
        return any(
            r == rubric and c in (None, component) and until > now for r, c, until in self._silences
        )

    def silences_changed(self) -> None:
        """Apply an added or lifted silence now: flags and the incident gauge follow at once."""
        self.refresh_silences(force=True)
        with self._lock:
            open_now = [_label(a) for a in self.monitor.open_alerts]
        self._publish(open_now)

    def _unsilenced_flags(self, rubric: str) -> tuple[str, ...]:
        return tuple(
            sorted(
                {
                    a.flag
                    for a in self.monitor.open_alerts
                    if a.stream.rubric == rubric and not self.silenced(rubric, a.stream.component)
                }
            )
        )

    def load(self) -> None:
        """Resume from the saved state (a fresh monitor when there is none or it is unreadable)."""
        saved = self.log.load_state(self.name)
        if saved is None:
            return
        raw = saved[0]
        try:
            self.monitor = DriftMonitor.from_state(DriftState.model_validate_json(raw))
        except ValueError:
            logger.exception("saved drift state is unreadable; monitoring starts afresh")
            return
        # Alerts still open from before the restart count from the first scrape on.
        self._publish([_label(a) for a in self.monitor.open_alerts])

    def save(self) -> None:
        """Save the monitor's state."""
        with self._lock:
            state = self.monitor.state().model_dump_json()
        self.log.save_state(self.name, state)

    def close(self) -> None:
        """Save the state at shutdown."""
        self.save()

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
            # A mixed batch's routes are rubrics of their own (``<name>.<route>``): each
            # reward feeds its route's streams, under the rubric's drift settings.
            for each in rubric.route_rubrics():
                self._configure(each)
            update = self.monitor.observe_rewards(
                rewards, [len(s.response) for s in samples], at=now
            )
            flags = self._unsilenced_flags(rubric.name)
            open_now = list(self.monitor.open_alerts)
        opened = [_row(a, now) for a in update.opened]
        closed = [a.id for a in update.closed]
        if opened or closed:
            self.log.record_alerts(opened, closed, now)
            self._log_opened(update.opened, open_now)
        self._publish([_label(a) for a in open_now])
        return flags, opened, closed

    @staticmethod
    def _log_opened(opened: Sequence[Alert], open_now: Sequence[Alert]) -> None:
        # One warning per incident, not per alert: one shift opens several alerts
        # at once (streams x detectors), and an alert opening beside others still
        # open for its rubric joins their incident (see /v1/drift/incidents).
        new_ids = {a.id for a in opened}
        for rubric in sorted({a.stream.rubric for a in opened}):
            mine = [a for a in opened if a.stream.rubric == rubric]
            ongoing = any(a.stream.rubric == rubric and a.id not in new_ids for a in open_now)
            messages = "; ".join(a.message for a in mine)
            extra = {"alerts": [a.id for a in mine], "rubric": rubric}
            if ongoing:
                logger.info("drift incident of %s grows: %s", rubric, messages, extra=extra)
            else:
                logger.warning(
                    "drift incident opened on %s (%d alert(s)): %s",
                    rubric,
                    len(mine),
                    messages,
                    extra=extra,
                )

    def _publish(self, open_now: Sequence[tuple[str, str, str]]) -> None:
        """Export the open alerts' (rubric, component, detector) counts and open incidents."""
        # A series that was ever exported drops to 0, not out of the exposition: a
        # dashboard reading "no series" cannot tell "resolved" from "never scraped".
        counts = dict.fromkeys(self._published, 0)
        for label in open_now:
            counts[label] = counts.get(label, 0) + 1
        for (rubric, component, detector), count in counts.items():
            self.open_alerts.labels(rubric=rubric, component=component, detector=detector).set(
                count
            )
        self._published = set(counts)
        rubrics = self._published_rubrics | {rubric for rubric, _, _ in counts}
        # A silenced alert pages no one: it counts above, not here.
        open_rubrics = {r for r, component, _ in open_now if not self.silenced(r, component)}
        for rubric in rubrics:
            self.open_incidents.labels(rubric=rubric).set(1 if rubric in open_rubrics else 0)
        self._published_rubrics = rubrics

    async def observe(
        self, rubric: Rubric, rewards: Sequence[Reward], samples: Sequence[Sample]
    ) -> list[Reward]:
        """Feed a graded batch; return the rewards with the flags of open alerts added.

        A monitoring failure is logged and never costs the trainer its rewards.
        Freezing a stream's reference bootstraps its threshold, the costliest
        step, and it happens once per stream.
        """
        if time.monotonic() - self._silences_read >= SILENCE_REFRESH_S:
            await asyncio.to_thread(self.refresh_silences)
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
            return _streams(self.monitor)

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
            keys = _stream_keys(self.monitor, rubric, component, version)
            closed = [a for key in keys for a in self.monitor.reset_reference(key)]
            open_now = [_label(a) for a in self.monitor.open_alerts]
        if closed:
            self.log.record_alerts([], [a.id for a in closed], now)
        self._publish(open_now)
        return len(closed)


#: Rewards read from the log per query, and queries per poll at most (a
#: leader that fell behind catches up over several polls, saving in between).
LOG_BATCH = 2000
READS_PER_POLL = 25
#: How often the leader saves the monitor's state with its log position. A
#: replica that takes over resumes from there and reads the rest again; alert
#: ids are fixed by window, so what it opens again is stored once.
SHARED_SAVE_INTERVAL_S = 5.0


class SharedDriftWatch(DriftWatch):
    """One drift monitor for all the replicas on one store.

    Every replica runs :meth:`run`. The one that holds the store's advisory
    lock (:class:`~arbiter.store.drift_log.LeaderLock`) reads the rewards every replica
    logged, in id order, one request at a time as a single replica would have
    seen them, feeds them to the monitor and stores the alerts. Every replica,
    the leader included, then reads the open alerts back and flags its rewards
    from that, so a flag reaches all replicas within one poll of the batch that
    opened it. If the leader dies, its lock goes with its connection and the
    next replica to poll resumes from the saved state and log position.
    """

    def __init__(
        self,
        store: Store,
        metrics: Metrics,
        catalog: RubricCatalog,
        *,
        refresh_rubrics: Callable[[], None],
        poll_interval_s: float,
        name: str = "shared",
    ) -> None:
        super().__init__(store, metrics, name)
        self.leader = LeaderLock(store, f"arbiter-drift-monitor:{name}")
        self.cursor = LogCursor()
        self.catalog = catalog
        self.refresh_rubrics = refresh_rubrics
        self.poll_interval_s = poll_interval_s
        self._flags: dict[str, tuple[str, ...]] = {}
        self._saved_at = 0.0
        self._unsaved = False
        self._missing: set[str] = set()
        # Held while rows are fed and the cursor moves: a save from another thread
        # (the periodic one, shutdown) then never pairs a state with a cursor
        # that lags it, which would feed those rows twice after a takeover.
        self._following = threading.RLock()
        self.leader_gauge = Gauge(
            "arbiter_drift_monitor_leader",
            "1 on the replica that runs the shared drift monitor, 0 on the others.",
            registry=metrics.registry,
        )
        self.position_gauge = Gauge(
            "arbiter_drift_monitor_log_position",
            "Id of the newest reward-log row the shared drift monitor has read "
            "(on the leader; 0 on the others). Behind the log's newest id: the monitor lags.",
            registry=metrics.registry,
        )

    @property
    def leading(self) -> bool:
        """Whether this replica runs the monitor now."""
        return self.leader.held

    def load(self) -> None:
        """Nothing to load yet: the replica that takes the lock loads the saved state."""

    def save(self) -> None:
        """Save the monitor's state with its log position (only the leader has one)."""
        if not self.leading:
            return
        with self._following:
            with self._lock:
                state = self.monitor.state().model_dump_json()
                cursor = LogCursor(self.cursor.newest, dict(self.cursor.gaps))
            self.log.save_state(self.name, state, cursor)
        self._saved_at = time.monotonic()
        self._unsaved = False

    def close(self) -> None:
        """Save and give up the lead (at shutdown), so another replica takes over at once."""
        try:
            self.save()
        finally:
            self.leader.release()

    async def observe(
        self, rubric: Rubric, rewards: Sequence[Reward], samples: Sequence[Sample]
    ) -> list[Reward]:
        """Return the rewards with the flags of the rubric's open alerts (read each poll).

        The batch itself reaches the monitor through the reward log once it is
        committed: no monitoring work on the request's path.
        """
        flags = self._flags.get(rubric.name)
        if not flags:
            return list(rewards)
        return [r.model_copy(update={"flags": (*r.flags, *flags)}) for r in rewards]

    async def run(self) -> None:
        """Poll until cancelled: lead when the lock is free, then read the alerts back."""
        while True:
            try:
                await asyncio.to_thread(self.step)
            except Exception:  # the watch must outlive a transient store error
                logger.exception("drift monitor poll failed; will retry")
            await asyncio.sleep(self.poll_interval_s)

    def step(self) -> None:
        """One poll: check or take the lead, follow the log if leading, refresh the flags."""
        try:
            if self.leader.held and not self.leader.check():
                self._step_down()
            if not self.leader.held and self.leader.acquire():
                self._take_over()
            if self.leader.held:
                try:
                    with self._following:
                        self._apply_resets()
                        self._follow()
                except Exception:
                    # What was read but not saved is read again by whoever leads next.
                    self._step_down()
                    self.leader.release()
                    raise
        finally:
            self.leader_gauge.set(1 if self.leader.held else 0)
            self.position_gauge.set(self.cursor.newest if self.leader.held else 0)
        self._read_flags()

    def _take_over(self) -> None:
        saved = self.log.load_state(self.name)
        monitor, cursor = DriftMonitor(), LogCursor()
        if saved is not None:
            try:
                monitor = DriftMonitor.from_state(DriftState.model_validate_json(saved[0]))
                cursor = saved[1]
            except ValueError:
                logger.exception("saved drift state is unreadable; monitoring starts afresh")
        with self._lock:
            self.monitor = monitor
            self._configured.clear()
            self.cursor = cursor
        logger.info(
            "this replica runs the drift monitor now (reward log from id %d)", cursor.newest
        )

    def _step_down(self) -> None:
        with self._lock:
            self.monitor = DriftMonitor()
            self._configured.clear()
            self.cursor = LogCursor()

    def _rubric(self, name: str, sha256: str) -> Rubric | None:
        try:
            return self.catalog.resolve(name, sha256=sha256)
        except RubricNotFoundError:
            pass
        if sha256 not in self._missing:
            # Another replica registered it: its text is in the store.
            self.refresh_rubrics()
            try:
                return self.catalog.resolve(name, sha256=sha256)
            except RubricNotFoundError:
                self._missing.add(sha256)
                logger.warning(
                    "rubric %s (%s) is unknown here; drift defaults apply", name, sha256[:12]
                )
        return None

    def _follow(self) -> None:
        for _ in range(READS_PER_POLL):
            rows = self.log.read(self.cursor, LOG_BATCH)
            if not rows:
                break
            fresh = sum(1 for r in rows if r.id > self.cursor.newest)
            alerted = self._feed(rows)
            with self._lock:
                self.cursor.advance([r.id for r in rows], time.time())
            self._unsaved = True
            if alerted:  # the state that opened or closed them, with the position after its rows
                self.save()
            if fresh < LOG_BATCH:
                break
        if self._unsaved and time.monotonic() - self._saved_at >= SHARED_SAVE_INTERVAL_S:
            self.save()

    def _feed(self, rows: Sequence[LoggedReward]) -> bool:
        """Feed the rows one request at a time, as the replica that graded them saw them.

        Returns:
            Whether alerts opened or closed (they are stored by then).
        """
        now = time.time()
        opened: list[dict[str, object]] = []
        closed: list[str] = []
        start = 0
        while start < len(rows):
            end = start + 1
            while end < len(rows) and rows[end].request_id == rows[start].request_id:
                end += 1
            group = rows[start:end]
            start = end
            rewards: list[Reward] = []
            lengths: list[int | None] = []
            for row in group:
                try:
                    rewards.append(Reward.model_validate_json(row.record))
                except ValueError:
                    logger.exception("logged reward %d is unreadable; drift skips it", row.id)
                    continue
                lengths.append(row.response_length)
            if not rewards:
                continue
            rubric = self._rubric(group[0].rubric_name, group[0].rubric_sha256)
            with self._lock:
                if rubric is not None:
                    self._configure(rubric)
                update = self.monitor.observe_rewards(rewards, lengths, at=now)
                open_now = list(self.monitor.open_alerts)
            opened.extend(_row(a, now) for a in update.opened)
            closed.extend(a.id for a in update.closed)
            self._log_opened(update.opened, open_now)
        if opened or closed:
            self.log.record_alerts(opened, closed, now)
        return bool(opened or closed)

    def _apply_resets(self) -> None:
        for reset in self.log.pending_resets():
            with self._lock:
                try:
                    keys = _stream_keys(
                        self.monitor, reset.rubric_name, reset.component, reset.grader_version
                    )
                except KeyError:  # a stream this monitor has not seen (yet): nothing to forget
                    keys = []
                closed = [a for key in keys for a in self.monitor.reset_reference(key)]
            if closed:
                self.log.record_alerts([], [a.id for a in closed], time.time())
            self.log.mark_applied(reset.id)
            self.save()

    def silences_changed(self) -> None:
        """Apply an added or lifted silence now (flags and gauges, on this replica)."""
        self.refresh_silences(force=True)
        self._read_flags()

    def _read_flags(self) -> None:
        self.refresh_silences()
        flags: dict[str, set[str]] = {}
        rows = self.log.open_alerts()
        for alert in rows:
            if self.silenced(alert["rubric_name"], alert["component"]):
                continue
            flags.setdefault(alert["rubric_name"], set()).add(
                f"drift:{alert['component']}:{alert['detector']}"
            )
        self._publish([(a["rubric_name"], a["component"], a["detector"]) for a in rows])
        self._flags = {rubric: tuple(sorted(names)) for rubric, names in flags.items()}

    def _saved_monitor(self) -> DriftMonitor:
        if self.leading:
            return self.monitor
        saved = self.log.load_state(self.name)
        if saved is None:
            return DriftMonitor()
        return DriftMonitor.from_state(DriftState.model_validate_json(saved[0]))

    def streams(self) -> list[dict[str, object]]:
        """Return the streams of the leader's monitor (as last saved, from another replica)."""
        with self._lock:
            return _streams(self._saved_monitor())

    def reset(self, rubric: str, component: str | None = None, version: str | None = None) -> int:
        """Close the streams' alerts now and queue their resets for the leader; return how many.

        Raises:
            KeyError: If no stream matches (as the leader last saved its streams).
        """
        with self._lock:
            keys = _stream_keys(self._saved_monitor(), rubric, component, version)
        closed = 0
        for key in keys:
            closed += self.log.close_stream_alerts(
                key.rubric, key.component, key.version, time.time()
            )
            self.log.request_reset(key.rubric, key.component, key.version)
        # The gauge and the flags follow the reset at once, not at the next poll.
        self._read_flags()
        return closed
