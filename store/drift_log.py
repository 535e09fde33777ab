"""The drift monitor's view of a shared store: leadership, the reward log, alerts, resets.

With several API replicas on one PostgreSQL, one drift monitor watches all
traffic: the replica holding an advisory lock follows the reward log (every
reward every replica committed) and feeds the monitor, and every replica reads
the open alerts back to flag its rewards. This module is the storage half of
that; ``arbiter.api.drift_watch`` is the other.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import JSON, Connection, cast, func, insert, select, text, type_coerce, update

from arbiter.store.db import Store
from arbiter.store.tables import (
    drift_alerts,
    drift_reset_log,
    drift_resets,
    drift_silences,
    drift_state,
    rewards,
)

__all__ = ["DriftLog", "LeaderLock", "LogCursor", "LoggedReward", "StreamReset"]

logger = logging.getLogger("arbiter.drift")

#: Ids below the newest one seen that are still missing (a transaction that
#: took its ids earlier but had not committed yet) are looked for this long.
GAP_GRACE_S = 30.0
#: More missing ids than this and the oldest are given up (a rolled-back batch).
MAX_GAPS = 20_000


@dataclass(frozen=True, slots=True)
class LoggedReward:
    """One logged reward as the monitor needs it."""

    id: int
    request_id: str
    rubric_name: str
    rubric_sha256: str
    record: str
    response_length: int | None


@dataclass
class LogCursor:
    """How far the follower has read: the newest id, and older ids not yet seen.

    Row ids come from a sequence taken at insert time, while rows become visible
    at commit: a batch committed after a later one shows up below the newest id
    already read. Those ids are remembered for ``GAP_GRACE_S``, not skipped.
    """

    newest: int = 0
    gaps: dict[int, float] = field(default_factory=dict)  # id -> when it was first missed

    def to_json(self) -> str:
        """Serialise for the drift state row."""
        return json.dumps(
            {"newest": self.newest, "gaps": {str(k): v for k, v in self.gaps.items()}}
        )

    @classmethod
    def from_json(cls, raw: str | None) -> LogCursor:
        """Read what :meth:`to_json` wrote (a fresh cursor for ``None``)."""
        if not raw:
            return cls()
        data = json.loads(raw)
        return cls(
            newest=int(data["newest"]), gaps={int(k): float(v) for k, v in data["gaps"].items()}
        )

    def advance(self, ids: Sequence[int], now: float) -> None:
        """Take the ids just read: fill gaps, open new ones, give up on expired ones."""
        for i in ids:
            self.gaps.pop(i, None)
        fresh = sorted(i for i in ids if i > self.newest)
        for i in fresh:
            for missing in range(self.newest + 1, i):
                self.gaps.setdefault(missing, now)
            self.newest = i
        expired = [i for i, at in self.gaps.items() if now - at > GAP_GRACE_S]
        for i in expired:
            del self.gaps[i]
        if len(self.gaps) > MAX_GAPS:
            for i in sorted(self.gaps)[: len(self.gaps) - MAX_GAPS]:
                del self.gaps[i]


@dataclass(frozen=True, slots=True)
class StreamReset:
    """An accepted change waiting for the monitor."""

    id: int
    rubric_name: str
    component: str
    grader_version: str


class LeaderLock:
    """A PostgreSQL session advisory lock held on a connection of its own.

    The lock lives as long as that connection: if the process dies or its
    connection drops, PostgreSQL releases it and another replica takes over.
    The key is derived from the schema, so stores in different schemas of one
    database (tests, several deployments) elect their leaders independently.
    """

    def __init__(self, store: Store, name: str) -> None:
        self.store = store
        self.name = name
        self._conn: Connection | None = None
        self._key: int | None = None

    @property
    def held(self) -> bool:
        """Whether this process holds the lock (as of the last check)."""
        return self._conn is not None

    def acquire(self) -> bool:
        """Try to take the lock without waiting; return whether it is held now."""
        if self._conn is not None:
            return self.check()
        if self.store.is_sqlite:
            # An embedded file has one process by design: it leads.
            self._conn = self.store.engine.connect()
            return True
        conn = self.store.engine.connect()
        try:
            schema = conn.execute(text("SELECT current_schema()")).scalar_one()
            digest = hashlib.blake2b(f"{schema}\x00{self.name}".encode(), digest_size=8).digest()
            key = int.from_bytes(digest, "big", signed=True)
            got = bool(conn.execute(text("SELECT pg_try_advisory_lock(:k)"), {"k": key}).scalar())
            conn.commit()
        except Exception:
            conn.close()
            raise
        if not got:
            conn.close()
            return False
        self._conn, self._key = conn, key
        return True

    def check(self) -> bool:
        """Return whether the lock is still held (its connection still answers)."""
        if self._conn is None:
            return False
        try:
            self._conn.execute(text("SELECT 1"))
            self._conn.commit()
        except Exception:
            logger.warning("lost the drift monitor's lock connection; another replica may lead")
            self.release()
            return False
        return True

    def release(self) -> None:
        """Give the lock up (closing its connection releases it)."""
        conn, self._conn = self._conn, None
        if conn is None:
            return
        try:
            if self._key is not None:
                # At once, rather than when the server notices the closed socket.
                conn.execute(text("SELECT pg_advisory_unlock(:k)"), {"k": self._key})
                conn.commit()
        except Exception:  # the connection is already gone, and the lock with it
            logger.debug("unlocking on the lock connection failed", exc_info=True)
        finally:
            # Invalidate, not just close: closing would return the session, and
            # the lock with it if the unlock failed, to the pool.
            with contextlib.suppress(Exception):
                conn.invalidate()
            conn.close()


class DriftLog:
    """Reads and writes the shared drift tables."""

    def __init__(self, store: Store) -> None:
        self.store = store

    def read(self, cursor: LogCursor, limit: int) -> list[LoggedReward]:
        """Return rewards past the cursor and in its gaps, oldest id first (at most ``limit``)."""
        # PostgreSQL parses the text as JSON; SQLite's JSON functions read text as it is.
        document = (
            type_coerce(rewards.c.sample, JSON)
            if self.store.is_sqlite
            else cast(rewards.c.sample, JSON)
        )
        response = document["response"].as_string()
        columns = (
            rewards.c.id,
            rewards.c.request_id,
            rewards.c.rubric_name,
            rewards.c.rubric_sha256,
            rewards.c.record,
            func.length(response).label("response_length"),
        )
        with self.store.engine.connect() as conn:
            rows = list(
                conn.execute(
                    select(*columns)
                    .where(rewards.c.id > cursor.newest)
                    .order_by(rewards.c.id)
                    .limit(limit)
                )
            )
            gaps = sorted(cursor.gaps)
            for start in range(0, len(gaps), 1000):
                chunk = gaps[start : start + 1000]
                rows.extend(conn.execute(select(*columns).where(rewards.c.id.in_(chunk))))
        rows.sort(key=lambda r: r.id)
        return [
            LoggedReward(
                id=int(r.id),
                request_id=r.request_id,
                rubric_name=r.rubric_name,
                rubric_sha256=r.rubric_sha256,
                record=r.record,
                response_length=None if r.response_length is None else int(r.response_length),
            )
            for r in rows
        ]

    def open_alerts(self) -> list[dict[str, Any]]:
        """Return (rubric_name, component, detector) of every open alert."""
        query = select(
            drift_alerts.c.rubric_name, drift_alerts.c.component, drift_alerts.c.detector
        ).where(drift_alerts.c.closed_at.is_(None))
        with self.store.engine.connect() as conn:
            return [dict(row._mapping) for row in conn.execute(query)]

    def alerts(
        self, *, open_only: bool = False, rubric: str | None = None, limit: int = 500
    ) -> list[dict[str, Any]]:
        """Return stored alerts, newest first."""
        query = select(drift_alerts).order_by(drift_alerts.c.opened_at.desc()).limit(limit)
        if open_only:
            query = query.where(drift_alerts.c.closed_at.is_(None))
        if rubric is not None:
            query = query.where(drift_alerts.c.rubric_name == rubric)
        with self.store.engine.connect() as conn:
            return [dict(row._mapping) for row in conn.execute(query)]

    def record_alerts(
        self, opened: Sequence[dict[str, Any]], closed: Sequence[str], at: float
    ) -> None:
        """Store opened alerts not stored yet, and close others by id.

        Alert ids are fixed by stream, detector and window, so a monitor that
        resumes from an older saved state and reads the same rewards again
        opens the same ids: storing them once is what keeps one alert one row.
        """
        ids = [row["id"] for row in opened]
        with self.store.writing() as conn:
            if ids:
                known = set(
                    conn.execute(
                        select(drift_alerts.c.id).where(drift_alerts.c.id.in_(ids))
                    ).scalars()
                )
                new = [row for row in opened if row["id"] not in known]
                if new:
                    conn.execute(insert(drift_alerts), new)
            for alert_id in closed:
                conn.execute(
                    update(drift_alerts)
                    .where(drift_alerts.c.id == alert_id, drift_alerts.c.closed_at.is_(None))
                    .values(closed_at=at)
                )

    def close_stream_alerts(self, rubric: str, component: str, version: str, at: float) -> int:
        """Close a stream's open alerts now; return how many."""
        with self.store.writing() as conn:
            result = conn.execute(
                update(drift_alerts)
                .where(
                    drift_alerts.c.rubric_name == rubric,
                    drift_alerts.c.component == component,
                    drift_alerts.c.grader_version == version,
                    drift_alerts.c.closed_at.is_(None),
                )
                .values(closed_at=at)
            )
        return int(result.rowcount or 0)

    def request_reset(self, rubric: str, component: str, version: str) -> None:
        """Queue a stream's reset for whichever replica runs the monitor."""
        with self.store.writing() as conn:
            conn.execute(
                insert(drift_resets),
                {
                    "rubric_name": rubric,
                    "component": component,
                    "grader_version": version,
                    "requested_at": time.time(),
                },
            )

    def log_reset(
        self,
        rubric: str,
        component: str | None,
        version: str | None,
        *,
        requested_by: str,
        reason: str,
        closed_alerts: int,
    ) -> None:
        """Record a reset on-call asked for: which streams, who, why, what it closed."""
        with self.store.writing() as conn:
            conn.execute(
                insert(drift_reset_log),
                {
                    "rubric_name": rubric,
                    "component": component,
                    "grader_version": version,
                    "requested_by": requested_by,
                    "reason": reason,
                    "closed_alerts": closed_alerts,
                    "reset_at": time.time(),
                },
            )

    def reset_log(self, rubric: str | None = None, limit: int = 100) -> list[dict[str, Any]]:
        """Return recorded resets, the newest first."""
        query = select(drift_reset_log).order_by(drift_reset_log.c.id.desc()).limit(limit)
        if rubric is not None:
            query = query.where(drift_reset_log.c.rubric_name == rubric)
        with self.store.engine.connect() as conn:
            return [dict(r._mapping) for r in conn.execute(query)]

    def silence(
        self,
        rubric: str,
        component: str | None,
        *,
        until: float,
        requested_by: str,
        reason: str,
        now: float | None = None,
    ) -> dict[str, Any]:
        """Silence a rubric's (or one component's) drift flags until ``until``; return it."""
        row = {
            "rubric_name": rubric,
            "component": component,
            "requested_by": requested_by,
            "reason": reason,
            "created_at": time.time() if now is None else now,
            "until": until,
            "lifted_at": None,
        }
        with self.store.writing() as conn:
            silence_id = conn.execute(
                insert(drift_silences).values(row).returning(drift_silences.c.id)
            ).scalar_one()
        return {"id": int(silence_id), **row}

    def lift_silence(self, silence_id: int, now: float | None = None) -> bool:
        """End a silence early; return whether one was active."""
        at = time.time() if now is None else now
        with self.store.writing() as conn:
            result = conn.execute(
                update(drift_silences)
                .where(
                    drift_silences.c.id == silence_id,
                    drift_silences.c.lifted_at.is_(None),
                    drift_silences.c.until > at,
                )
                .values(lifted_at=at)
            )
        return bool(result.rowcount)

    def silences(
        self, *, active_at: float | None = None, rubric: str | None = None, limit: int = 100
    ) -> list[dict[str, Any]]:
        """Return silences, newest first; with ``active_at``, only those active then."""
        query = select(drift_silences).order_by(drift_silences.c.id.desc()).limit(limit)
        if active_at is not None:
            query = query.where(
                drift_silences.c.lifted_at.is_(None), drift_silences.c.until > active_at
            )
        if rubric is not None:
            query = query.where(drift_silences.c.rubric_name == rubric)
        with self.store.engine.connect() as conn:
            return [dict(r._mapping) for r in conn.execute(query)]

    def pending_resets(self) -> list[StreamReset]:
        """Return the resets not applied yet, oldest first."""
        query = (
            select(
                drift_resets.c.id,
                drift_resets.c.rubric_name,
                drift_resets.c.component,
                drift_resets.c.grader_version,
            )
            .where(drift_resets.c.applied_at.is_(None))
            .order_by(drift_resets.c.id)
        )
        with self.store.engine.connect() as conn:
            return [StreamReset(*row) for row in conn.execute(query)]

    def mark_applied(self, reset_id: int) -> None:
        """Record that the monitor applied a reset."""
        with self.store.writing() as conn:
            conn.execute(
                update(drift_resets)
                .where(drift_resets.c.id == reset_id)
                .values(applied_at=time.time())
            )

    def save_state(self, name: str, state: str, cursor: LogCursor | None = None) -> None:
        """Keep the monitor's state with the log position it reflects, in one transaction.

        A monitor that follows no shared log (one process, its own rewards) saves none.
        """
        with self.store.writing() as conn:
            conn.execute(drift_state.delete().where(drift_state.c.name == name))
            conn.execute(
                insert(drift_state),
                {
                    "name": name,
                    "state": state,
                    "saved_at": time.time(),
                    "log_cursor": None if cursor is None else cursor.to_json(),
                },
            )

    def load_state(self, name: str) -> tuple[str, LogCursor] | None:
        """Return the saved state and its log position, if any."""
        with self.store.engine.connect() as conn:
            row = conn.execute(
                select(drift_state.c.state, drift_state.c.log_cursor).where(
                    drift_state.c.name == name
                )
            ).first()
        if row is None:
            return None
        return str(row.state), LogCursor.from_json(row.log_cursor)
