"""Reading the reward log back: one request's rewards, or a key's rewards by sample and time.

Every read is scoped to one client (the API key that logged the rewards): a
trainer reads its own log, never another tenant's. A request that exists under
another client reads exactly like one that does not exist, so ids leak nothing.
Rows come out in log order (their row id), which is also the paging cursor.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from sqlalchemy import select

from arbiter.store.db import Store, reward_filters
from arbiter.store.tables import requests, rewards

__all__ = ["LoggedRow", "RewardReader"]

#: At most this many rewards per read; page on with ``after_id``.
MAX_PAGE = 1000


@dataclass(frozen=True, slots=True)
class LoggedRow:
    """One logged reward: where it sits in the log, and the reward as it was returned."""

    id: int
    request_id: str
    position: int
    sample_id: str
    rubric_name: str
    rubric_version: int
    rubric_sha256: str
    created_at: float
    record: dict[str, Any]

    @classmethod
    def from_row(cls, row: Any) -> LoggedRow:
        """Build from a row of the rewards table."""
        return cls(
            id=int(row.id),
            request_id=row.request_id,
            position=int(row.position),
            sample_id=row.sample_id,
            rubric_name=row.rubric_name,
            rubric_version=int(row.rubric_version),
            rubric_sha256=row.rubric_sha256,
            created_at=float(row.created_at),
            record=json.loads(row.record),
        )


_COLUMNS = (
    rewards.c.id,
    rewards.c.request_id,
    rewards.c.position,
    rewards.c.sample_id,
    rewards.c.rubric_name,
    rewards.c.rubric_version,
    rewards.c.rubric_sha256,
    rewards.c.created_at,
    rewards.c.record,
)


class RewardReader:
    """Read-only queries over a :class:`Store`'s reward log."""

    def __init__(self, store: Store) -> None:
        self.store = store

    def request(self, client: str, request_id: str) -> list[LoggedRow] | None:
        """Return one request's rewards in input order; ``None`` unless ``client`` logged it."""
        with self.store.engine.connect() as conn:
            owner = conn.execute(
                select(requests.c.client).where(requests.c.id == request_id)
            ).scalar()
            if owner is None or owner != client:
                return None
            rows = conn.execute(
                select(*_COLUMNS)
                .where(rewards.c.request_id == request_id)
                .order_by(rewards.c.position)
            ).all()
        return [LoggedRow.from_row(r) for r in rows]

    def find(
        self,
        client: str | None,
        *,
        sample_id: str | None = None,
        rubric: str | None = None,
        since: float | None = None,
        until: float | None = None,
        after_id: int = 0,
        limit: int = 100,
    ) -> list[LoggedRow]:
        """Return logged rewards in log order, filtered; ``client=None`` reads every client's.

        Args:
            client: Only this client's rewards (``None``: all, for the operator's CLI).
            sample_id: Only this sample id.
            rubric: Only this rubric name.
            since: Logged at or after this Unix time.
            until: Logged before this Unix time.
            after_id: Only rows after this log id (the cursor of the previous page).
            limit: At most this many (capped at ``MAX_PAGE``).
        """
        query = select(*_COLUMNS).where(
            rewards.c.id > after_id,
            *reward_filters(
                client=client, sample_id=sample_id, rubric_name=rubric, since=since, until=until
            ),
        )
        query = query.order_by(rewards.c.id).limit(max(1, min(limit, MAX_PAGE)))
        with self.store.engine.connect() as conn:
            return [LoggedRow.from_row(r) for r in conn.execute(query)]

    def scan(self, client: str | None = None, **filters: Any) -> Iterator[LoggedRow]:
        """Yield every matching row, a page at a time (for exports of any size)."""
        after = 0
        while True:
            page = self.find(client, after_id=after, limit=MAX_PAGE, **filters)
            yield from page
            if len(page) < MAX_PAGE:
                return
            after = page[-1].id
