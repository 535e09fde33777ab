"""The human-review queue: sampled rewards waiting for labels, handed out under leases.

A reviewer claims the oldest open item and holds it under a lease (10 minutes by
default) that a heartbeat extends. A lease that runs out returns the item to the
queue; the lease's token changes at every claim, so a reviewer whose lease was taken
over cannot heartbeat or label the item any more. An item is never held by two
reviewers at once: on PostgreSQL the claim locks its row with ``FOR UPDATE SKIP
LOCKED`` (concurrent claims skip it instead of queueing behind it); on SQLite the
store's write lock serializes claims in a process, and the claim itself is an UPDATE
whose WHERE re-checks that the lease is free, so a claim that lost a race (another
process) changes no row and tries the next item.

Double review asks for labels from two different reviewers: after the first label
the item goes back to the queue for anyone who has not labelled it yet.

A skip is remembered per reviewer: that reviewer's claims take the items they
skipped only after every other one, oldest skip first, so skipping moves on instead
of handing the same item back (other reviewers' order is untouched). A submitted
label can be edited by its reviewer: the edit replaces it where agreement reads it
and is kept, with every earlier version, in ``review_label_versions``.

A label that ticks a hack type or finds a component fooled makes (an edit updates
or retracts) the reviewer's regression case for the item, in the label's own
transaction (:mod:`arbiter.store.regressions`).

One module, one concept: the review queue — claims, leases, heartbeats and labels are
one protocol over the review tables.
"""

from __future__ import annotations

import json
import secrets
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import Connection, and_, case, exists, func, insert, or_, select, update
from sqlalchemy.exc import IntegrityError

from arbiter.store.db import Store
from arbiter.store.regressions import record_case
from arbiter.store.tables import (
    review_items,
    review_label_versions,
    review_labels,
    review_skips,
    rewards,
)

__all__ = [
    "DEFAULT_LEASE_S",
    "ClaimedItem",
    "EnqueueItem",
    "Label",
    "LabelNotFoundError",
    "LeaseLostError",
    "ReviewQueue",
]

DEFAULT_LEASE_S = 600.0
OPEN = "open"
DONE = "done"
# How many candidate rows one claim tries before giving up on a race-heavy moment.
CLAIM_ATTEMPTS = 8


class LeaseLostError(Exception):
    """The caller no longer holds this item (never did, expired and reclaimed, or done)."""


class LabelNotFoundError(Exception):
    """The reviewer has no label on this item to edit."""


@dataclass(frozen=True, slots=True)
class EnqueueItem:
    """A logged reward the sampler chose for review."""

    request_id: str
    position: int
    sample_id: str
    rubric_name: str
    rubric_sha256: str
    inclusion_probability: float
    reason: str
    required_reviews: int = 1


@dataclass(frozen=True, slots=True)
class ClaimedItem:
    """An item under a lease, with what the reviewer needs to judge it."""

    id: int
    reward_id: int
    sample_id: str
    rubric_name: str
    rubric_sha256: str
    inclusion_probability: float
    reason: str
    required_reviews: int
    label_count: int
    lease_token: str
    lease_expires_at: float
    record: str
    sample: str | None


@dataclass(frozen=True, slots=True)
class Label:
    """One reviewer's judgement of one item."""

    verdicts: dict[str, str] = field(default_factory=dict)
    overall_score: float | None = None
    hack_types: Sequence[str] = ()
    comment: str = ""


class ReviewQueue:
    """Queue operations over a :class:`Store`'s engine and write lock."""

    def __init__(
        self,
        store: Store,
        *,
        lease_s: float = DEFAULT_LEASE_S,
        clock: Callable[[], float] = time.time,
        pass_threshold: Callable[[str], float] | None = None,
    ) -> None:
        """Build the queue.

        Args:
            store: the store.
            lease_s: how long a claim holds an item without a heartbeat.
            clock: the time (Unix seconds).
            pass_threshold: a grader kind's pass threshold, by which a label's ``fail``
                on a component its grader scored at or above it marks the component
                fooled (a regression case); ``None``: only hack types make cases.
        """
        if lease_s <= 0:
            raise ValueError(f"lease_s must be positive, got {lease_s}")
        self.store = store
        self.lease_s = lease_s
        self.clock = clock
        self.pass_threshold = pass_threshold
        #: Claims that picked an item another process leased first and moved on.
        #: On PostgreSQL the row lock keeps this at 0; a count there means the
        #: claims collided instead of skipping each other.
        self.claim_conflicts = 0

    # -- filling --------------------------------------------------------------------

    def enqueue(self, items: Sequence[EnqueueItem]) -> int:
        """Add sampled rewards to the queue; return how many were new.

        A reward already in the queue is skipped (an idempotent replay of a request
        must not queue its samples twice).
        """
        if not items:
            return 0
        now = self.clock()
        with self.store.writing() as conn:
            ids = self._reward_ids(conn, {item.request_id for item in items})
            wanted: dict[int, EnqueueItem] = {}
            for item in items:
                reward_id = ids.get((item.request_id, item.position))
                if reward_id is None:
                    raise KeyError(f"no logged reward at {item.request_id}[{item.position}]")
                wanted[reward_id] = item
            present = set(
                conn.execute(
                    select(review_items.c.reward_id).where(
                        review_items.c.reward_id.in_(sorted(wanted))
                    )
                ).scalars()
            )
            rows = [
                {
                    "reward_id": reward_id,
                    "sample_id": item.sample_id,
                    "rubric_name": item.rubric_name,
                    "rubric_sha256": item.rubric_sha256,
                    "inclusion_probability": item.inclusion_probability,
                    "reason": item.reason,
                    "status": OPEN,
                    "required_reviews": item.required_reviews,
                    "label_count": 0,
                    "created_at": now,
                }
                for reward_id, item in wanted.items()
                if reward_id not in present
            ]
            if rows:
                conn.execute(insert(review_items), rows)
        return len(rows)

    @staticmethod
    def _reward_ids(conn: Connection, request_ids: set[str]) -> dict[tuple[str, int], int]:
        rows = conn.execute(
            select(rewards.c.request_id, rewards.c.position, rewards.c.id).where(
                rewards.c.request_id.in_(sorted(request_ids))
            )
        )
        return {(r.request_id, r.position): r.id for r in rows}

    # -- leasing ----------------------------------------------------------------------

    def _claimable(self, reviewer: str, now: float, rubric: str | None) -> Any:
        labelled_by_me = exists().where(
            review_labels.c.item_id == review_items.c.id, review_labels.c.reviewer == reviewer
        )
        condition = and_(
            review_items.c.status == OPEN,
            or_(review_items.c.lease_expires_at.is_(None), review_items.c.lease_expires_at <= now),
            ~labelled_by_me,
        )
        if rubric is not None:
            condition = and_(condition, review_items.c.rubric_name == rubric)
        return condition

    def claim(self, reviewer: str, *, rubric: str | None = None) -> ClaimedItem | None:
        """Lease the oldest open item this reviewer has not labelled; ``None`` if none is free.

        Items this reviewer skipped come last, the longest-skipped first.
        """
        skipped_at = (
            select(review_skips.c.skipped_at)
            .where(review_skips.c.item_id == review_items.c.id, review_skips.c.reviewer == reviewer)
            .scalar_subquery()
        )
        for _ in range(CLAIM_ATTEMPTS):
            now = self.clock()
            token = secrets.token_hex(16)
            expires = now + self.lease_s
            with self.store.writing() as conn:
                query = (
                    select(review_items.c.id)
                    .where(self._claimable(reviewer, now, rubric))
                    .order_by(func.coalesce(skipped_at, -1.0), review_items.c.id)
                    .limit(1)
                )
                if not self.store.is_sqlite:
                    query = query.with_for_update(skip_locked=True, of=review_items)
                item_id = conn.execute(query).scalar()
                if item_id is None:
                    return None
                # The WHERE repeats the claimable condition: on SQLite the SELECT ran
                # outside any snapshot, so another process may have leased it since.
                taken = conn.execute(
                    update(review_items)
                    .where(review_items.c.id == item_id, self._claimable(reviewer, now, rubric))
                    .values(lease_owner=reviewer, lease_token=token, lease_expires_at=expires)
                )
                if taken.rowcount != 1:
                    self.claim_conflicts += 1
                    continue
                row = conn.execute(
                    select(review_items, rewards.c.record, rewards.c.sample)
                    .join(rewards, rewards.c.id == review_items.c.reward_id)
                    .where(review_items.c.id == item_id)
                ).one()
            return self._claimed(row, token, expires)
        return None

    @staticmethod
    def _claimed(row: Any, token: str, expires: float) -> ClaimedItem:
        return ClaimedItem(
            id=row.id,
            reward_id=row.reward_id,
            sample_id=row.sample_id,
            rubric_name=row.rubric_name,
            rubric_sha256=row.rubric_sha256,
            inclusion_probability=row.inclusion_probability,
            reason=row.reason,
            required_reviews=row.required_reviews,
            label_count=row.label_count,
            lease_token=token,
            lease_expires_at=expires,
            record=row.record,
            sample=row.sample,
        )

    def _held(self, item_id: int, token: str, reviewer: str) -> Any:
        # The token alone decides: a lease that ran out but was not reclaimed by
        # anyone is still this reviewer's (no one else saw the item meanwhile).
        return and_(
            review_items.c.id == item_id,
            review_items.c.lease_token == token,
            review_items.c.lease_owner == reviewer,
            review_items.c.status == OPEN,
        )

    def heartbeat(self, item_id: int, token: str, reviewer: str) -> float:
        """Extend a held lease by the lease length; return its new expiry.

        Raises:
            LeaseLostError: the caller does not hold this item.
        """
        expires = self.clock() + self.lease_s
        with self.store.writing() as conn:
            result = conn.execute(
                update(review_items)
                .where(self._held(item_id, token, reviewer))
                .values(lease_expires_at=expires)
            )
        if result.rowcount != 1:
            raise LeaseLostError(f"review item {item_id} is not held under this lease")
        return expires

    def release(self, item_id: int, token: str, reviewer: str, *, skip: bool = True) -> None:
        """Give a held item back to the queue unlabelled.

        Args:
            item_id: the item.
            token: the lease's token.
            reviewer: who holds it.
            skip: the reviewer skipped it: their next claims take it last. A page
                that closed gives its item back without skipping it.

        Raises:
            LeaseLostError: the caller does not hold this item.
        """
        now = self.clock()
        with self.store.writing() as conn:
            result = conn.execute(
                update(review_items)
                .where(self._held(item_id, token, reviewer))
                .values(lease_owner=None, lease_token=None, lease_expires_at=None)
            )
            if result.rowcount != 1:
                raise LeaseLostError(f"review item {item_id} is not held under this lease")
            if skip:
                # Delete and insert, not an upsert: the same statements on both stores.
                conn.execute(
                    review_skips.delete().where(
                        review_skips.c.item_id == item_id, review_skips.c.reviewer == reviewer
                    )
                )
                conn.execute(
                    insert(review_skips),
                    {"item_id": item_id, "reviewer": reviewer, "skipped_at": now},
                )

    def submit(self, item_id: int, token: str, reviewer: str, label: Label) -> None:
        """Store a label for a held item and end the lease, in one transaction.

        Raises:
            LeaseLostError: the caller does not hold this item; nothing is stored.
        """
        now = self.clock()
        try:
            with self.store.writing() as conn:
                result = conn.execute(
                    update(review_items)
                    .where(self._held(item_id, token, reviewer))
                    .values(
                        label_count=review_items.c.label_count + 1,
                        status=case(
                            (
                                review_items.c.label_count + 1 >= review_items.c.required_reviews,
                                DONE,
                            ),
                            else_=OPEN,
                        ),
                        lease_owner=None,
                        lease_token=None,
                        lease_expires_at=None,
                    )
                )
                if result.rowcount != 1:
                    raise LeaseLostError(f"review item {item_id} is not held under this lease")
                values = self._label_values(label, now)
                conn.execute(
                    insert(review_labels),
                    {"item_id": item_id, "reviewer": reviewer, "version": 1, **values},
                )
                label_id = conn.execute(
                    select(review_labels.c.id).where(
                        review_labels.c.item_id == item_id, review_labels.c.reviewer == reviewer
                    )
                ).scalar_one()
                conn.execute(
                    insert(review_label_versions), {"label_id": label_id, "version": 1, **values}
                )
                self._case(conn, item_id, label_id, 1, reviewer, label, now)
        except IntegrityError as e:
            # Unreachable through claim (it skips items this reviewer labelled), but a
            # second label by one reviewer must never count as a double review.
            raise LeaseLostError(f"review item {item_id} already has this reviewer's label") from e

    @staticmethod
    def _label_values(label: Label, now: float) -> dict[str, Any]:
        return {
            "verdicts": json.dumps(label.verdicts, sort_keys=True),
            "overall_score": label.overall_score,
            "hack_types": json.dumps(list(label.hack_types)),
            "comment": label.comment,
            "created_at": now,
        }

    def edit(self, item_id: int, reviewer: str, label: Label) -> int:
        """Replace this reviewer's label on an item with a new version; return its number.

        No lease is needed: the item is already labelled, and only its own reviewer
        can edit a label. The earlier versions stay in ``review_label_versions``.

        Raises:
            LabelNotFoundError: the reviewer has not labelled this item.
        """
        now = self.clock()
        values = self._label_values(label, now)
        mine = and_(review_labels.c.item_id == item_id, review_labels.c.reviewer == reviewer)
        with self.store.writing() as conn:
            result = conn.execute(
                update(review_labels)
                .where(mine)
                .values(
                    verdicts=values["verdicts"],
                    overall_score=values["overall_score"],
                    hack_types=values["hack_types"],
                    comment=values["comment"],
                    version=review_labels.c.version + 1,
                    updated_at=now,
                )
            )
            if result.rowcount != 1:
                raise LabelNotFoundError(f"you have no label on review item {item_id}")
            row = conn.execute(
                select(review_labels.c.id, review_labels.c.version).where(mine)
            ).one()
            conn.execute(
                insert(review_label_versions),
                {"label_id": row.id, "version": row.version, **values},
            )
            self._case(conn, item_id, row.id, row.version, reviewer, label, now)
        return int(row.version)

    def _case(
        self,
        conn: Connection,
        item_id: int,
        label_id: int,
        version: int,
        reviewer: str,
        label: Label,
        now: float,
    ) -> None:
        record_case(
            conn,
            item_id=item_id,
            label_id=label_id,
            label_version=version,
            reviewer=reviewer,
            verdicts=label.verdicts,
            hack_types=label.hack_types,
            pass_threshold=self.pass_threshold,
            now=now,
        )

    def labelled_item(self, item_id: int, reviewer: str) -> tuple[ClaimedItem, dict[str, Any]]:
        """Return an item this reviewer labelled (no lease) and their latest label of it.

        Raises:
            LabelNotFoundError: the reviewer has not labelled this item.
        """
        query = (
            select(
                review_items,
                rewards.c.record,
                rewards.c.sample,
                review_labels.c.verdicts,
                review_labels.c.overall_score,
                review_labels.c.hack_types,
                review_labels.c.comment,
                review_labels.c.version,
            )
            .join(rewards, rewards.c.id == review_items.c.reward_id)
            .join(review_labels, review_labels.c.item_id == review_items.c.id)
            .where(review_items.c.id == item_id, review_labels.c.reviewer == reviewer)
        )
        with self.store.engine.connect() as conn:
            row = conn.execute(query).one_or_none()
        if row is None:
            raise LabelNotFoundError(f"you have no label on review item {item_id}")
        label = {
            "verdicts": json.loads(row.verdicts),
            "overall_score": row.overall_score,
            "hack_types": json.loads(row.hack_types),
            "comment": row.comment,
            "version": row.version,
        }
        return self._claimed(row, "", 0.0), label

    def item_record(self, item_id: int) -> str | None:
        """Return the logged reward record (JSON) an item judges; ``None``: no such item."""
        query = (
            select(rewards.c.record)
            .join(review_items, review_items.c.reward_id == rewards.c.id)
            .where(review_items.c.id == item_id)
        )
        with self.store.engine.connect() as conn:
            record: str | None = conn.execute(query).scalar()
        return record

    def recent_labels(self, reviewer: str, limit: int = 10) -> list[dict[str, Any]]:
        """Return this reviewer's latest labels, the most recently submitted or edited first."""
        touched = func.coalesce(review_labels.c.updated_at, review_labels.c.created_at)
        query = (
            select(
                review_labels.c.item_id,
                review_labels.c.version,
                review_labels.c.verdicts,
                review_labels.c.overall_score,
                review_labels.c.hack_types,
                review_labels.c.comment,
                review_labels.c.created_at,
                review_labels.c.updated_at,
                review_items.c.sample_id,
                review_items.c.rubric_name,
            )
            .join(review_items, review_items.c.id == review_labels.c.item_id)
            .where(review_labels.c.reviewer == reviewer)
            .order_by(touched.desc(), review_labels.c.id.desc())
            .limit(limit)
        )
        with self.store.engine.connect() as conn:
            rows = [dict(r._mapping) for r in conn.execute(query)]
        for row in rows:
            row["verdicts"] = json.loads(row["verdicts"])
            row["hack_types"] = json.loads(row["hack_types"])
        return rows

    def label_versions(self, item_id: int, reviewer: str) -> list[dict[str, Any]]:
        """Return every version of this reviewer's label on an item, oldest first."""
        query = (
            select(review_label_versions)
            .join(review_labels, review_labels.c.id == review_label_versions.c.label_id)
            .where(review_labels.c.item_id == item_id, review_labels.c.reviewer == reviewer)
            .order_by(review_label_versions.c.version)
        )
        with self.store.engine.connect() as conn:
            rows = [dict(r._mapping) for r in conn.execute(query)]
        for row in rows:
            row["verdicts"] = json.loads(row["verdicts"])
            row["hack_types"] = json.loads(row["hack_types"])
        return rows

    # -- reading ----------------------------------------------------------------------

    def recent_raw_rewards(self, rubric_sha256: str, limit: int) -> list[float]:
        """Return the rubric version's latest logged raw rewards (abstentions left out).

        Every replica on the store reads the same log, so reward deciles built
        from it are the same on all of them: a sample's inclusion probability
        does not depend on which replica graded it.
        """
        query = (
            select(rewards.c.raw_reward)
            .where(rewards.c.rubric_sha256 == rubric_sha256, rewards.c.raw_reward.is_not(None))
            .order_by(rewards.c.id.desc())
            .limit(limit)
        )
        with self.store.engine.connect() as conn:
            return [float(v) for v in conn.execute(query).scalars()]

    def stats(self, rubric: str | None = None, *, reviewer: str | None = None) -> dict[str, Any]:
        """Count items per rubric: open (free), leased, done, and labels.

        With ``reviewer``, also that reviewer's progress (``you``): how many items
        they labelled, and how many open items are still theirs to label.
        """
        now = self.clock()
        leased = and_(
            review_items.c.status == OPEN,
            review_items.c.lease_expires_at.is_not(None),
            review_items.c.lease_expires_at > now,
        )
        query = select(
            review_items.c.rubric_name,
            func.count().label("items"),
            func.sum(case((review_items.c.status == DONE, 1), else_=0)).label("done"),
            func.sum(case((leased, 1), else_=0)).label("leased"),
            func.sum(review_items.c.label_count).label("labels"),
        ).group_by(review_items.c.rubric_name)
        if rubric is not None:
            query = query.where(review_items.c.rubric_name == rubric)
        with self.store.engine.connect() as conn:
            rows = conn.execute(query).all()
        per_rubric = {
            r.rubric_name: {
                "items": int(r.items),
                "done": int(r.done or 0),
                "leased": int(r.leased or 0),
                "open": int(r.items) - int(r.done or 0) - int(r.leased or 0),
                "labels": int(r.labels or 0),
            }
            for r in rows
        }
        totals = {
            key: sum(v[key] for v in per_rubric.values())
            for key in ("items", "open", "leased", "done", "labels")
        }
        out: dict[str, Any] = {**totals, "rubrics": per_rubric}
        if reviewer is not None:
            out["you"] = self._progress(reviewer, rubric)
        return out

    def _progress(self, reviewer: str, rubric: str | None) -> dict[str, int]:
        labelled = (
            select(func.count())
            .select_from(review_labels.join(review_items))
            .where(review_labels.c.reviewer == reviewer)
        )
        mine = exists().where(
            review_labels.c.item_id == review_items.c.id, review_labels.c.reviewer == reviewer
        )
        left = (
            select(func.count())
            .select_from(review_items)
            .where(review_items.c.status == OPEN, ~mine)
        )
        if rubric is not None:
            labelled = labelled.where(review_items.c.rubric_name == rubric)
            left = left.where(review_items.c.rubric_name == rubric)
        with self.store.engine.connect() as conn:
            return {
                "labelled": int(conn.execute(labelled).scalar() or 0),
                "left": int(conn.execute(left).scalar() or 0),
            }

    def labels(self, rubric: str | None = None) -> list[dict[str, Any]]:
        """Return every label (oldest first) with its item and the reward record it judged.

        An edited label appears once, as its latest version (``version``, ``updated_at``).
        """
        query = (
            select(
                review_labels.c.id.label("label_id"),
                review_labels.c.item_id,
                review_labels.c.reviewer,
                review_labels.c.verdicts,
                review_labels.c.overall_score,
                review_labels.c.hack_types,
                review_labels.c.comment,
                review_labels.c.created_at,
                review_labels.c.version,
                review_labels.c.updated_at,
                review_items.c.reward_id,
                review_items.c.sample_id,
                review_items.c.rubric_name,
                review_items.c.rubric_sha256,
                review_items.c.inclusion_probability,
                review_items.c.reason,
                rewards.c.record,
            )
            .join(review_items, review_items.c.id == review_labels.c.item_id)
            .join(rewards, rewards.c.id == review_items.c.reward_id)
            .order_by(review_labels.c.id)
        )
        if rubric is not None:
            query = query.where(review_items.c.rubric_name == rubric)
        with self.store.engine.connect() as conn:
            rows = [dict(r._mapping) for r in conn.execute(query)]
        for row in rows:
            row["verdicts"] = json.loads(row["verdicts"])
            row["hack_types"] = json.loads(row["hack_types"])
        return rows

    def export_jsonl(self, rubric: str | None = None) -> Iterator[str]:
        """Yield one JSON line per label (the reward record left out; it is in the log)."""
        for row in self.labels(rubric):
            row.pop("record")
            yield json.dumps(row, sort_keys=True) + "\n"
