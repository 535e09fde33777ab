"""Regression cases: the reward hacks reviewers confirmed, kept to be graded again.

A review label makes its reviewer's case for the item it judges when it ticks a
hack type, or marks a component **fooled**: the reviewer's verdict is ``fail`` on
a component whose grader score, in the logged reward, met that component's pass
threshold (the threshold the review page states beside it, by grader kind). The
grader passed what the reviewer failed. A component without a score (a failure)
fooled no one.

The case keeps what the next version of the rubric is graded on: the sample as
logged (task, response, metrics, trajectory), the rubric version and the reward it
got, the hack types ticked (and which of them the reward's violations flagged
then), and the fooled components. It is written in the label's own transaction
(:meth:`arbiter.store.review.ReviewQueue.submit` and ``edit``): an edit that still
marks a hack updates the case; one that removes every hack and fooled mark retracts
it; one that marks a hack again reopens a retracted case. A reviewer or an admin
dismisses a case with a reason; a dismissed case stays dismissed whatever later
edits say (it has been judged), and is never graded again.

An admin may publish a rubric version that lets open cases through; each such
forcing is kept (:meth:`RegressionCases.record_override`): who, when, the version
and every case let through, with its grading.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from sqlalchemy import Connection, CursorResult, insert, select, update

from arbiter.store.db import Store
from arbiter.store.tables import (
    regression_cases,
    regression_overrides,
    review_items,
    review_labels,
    rewards,
)

__all__ = [
    "DISMISSED",
    "OPEN",
    "RETRACTED",
    "STATUSES",
    "CaseNotFoundError",
    "CaseNotOpenError",
    "RegressionCases",
    "flagged_types",
    "fooled_components",
    "record_case",
]

OPEN = "open"
DISMISSED = "dismissed"
RETRACTED = "retracted"
STATUSES = (OPEN, DISMISSED, RETRACTED)

#: At most this many cases or overrides per listing.
MAX_LIST = 5000

_JSON_COLUMNS = ("hack_types", "flagged_types", "fooled")


class CaseNotFoundError(Exception):
    """No regression case has this id."""


class CaseNotOpenError(Exception):
    """The case is dismissed or retracted: there is nothing to dismiss."""


def fooled_components(
    record: Mapping[str, Any],
    verdicts: Mapping[str, str],
    pass_threshold: Callable[[str], float] | None,
) -> list[str]:
    """Name the components a label fails whose grader passed them, in the reward's order.

    Args:
        record: the logged reward (``components``: name -> ``grader`` and ``score``).
        verdicts: the label's verdicts, component -> ``pass`` or ``fail``.
        pass_threshold: a grader kind's pass threshold; ``None`` finds none fooled.
    """
    if pass_threshold is None:
        return []
    out = []
    components = record.get("components") or {}
    for name, component in components.items():
        if verdicts.get(name) != "fail" or not isinstance(component, Mapping):
            continue
        score = component.get("score")
        if isinstance(score, int | float) and score >= pass_threshold(
            str(component.get("grader") or "")
        ):
            out.append(str(name))
    return out


def flagged_types(record: Mapping[str, Any], hack_types: Sequence[str]) -> list[str]:
    """Return those of ``hack_types`` that the logged reward's violations flagged."""
    found = {
        violation.get("type")
        for component in (record.get("components") or {}).values()
        if isinstance(component, Mapping)
        for violation in component.get("violations") or ()
        if isinstance(violation, Mapping)
    }
    return [h for h in hack_types if h in found]


def record_case(
    conn: Connection,
    *,
    item_id: int,
    label_id: int,
    label_version: int,
    reviewer: str,
    verdicts: Mapping[str, str],
    hack_types: Sequence[str],
    pass_threshold: Callable[[str], float] | None,
    now: float,
) -> int | None:
    """Create, update or retract a reviewer's case for an item, in the label's transaction.

    Returns:
        The case's id, or ``None`` when the label marks nothing and there was no case.
    """
    item = conn.execute(
        select(
            review_items.c.rubric_name,
            review_items.c.rubric_sha256,
            review_items.c.sample_id,
            rewards.c.record,
            rewards.c.sample,
        )
        .join(rewards, rewards.c.id == review_items.c.reward_id)
        .where(review_items.c.id == item_id)
    ).one()
    record = json.loads(item.record)
    hacks = sorted(set(hack_types))
    fooled = fooled_components(record, verdicts, pass_threshold)
    marked = bool(hacks or fooled)
    existing = conn.execute(
        select(regression_cases.c.id, regression_cases.c.status).where(
            regression_cases.c.item_id == item_id, regression_cases.c.reviewer == reviewer
        )
    ).one_or_none()
    if existing is None and not marked:
        return None
    values: dict[str, Any] = {
        "label_id": label_id,
        "label_version": label_version,
        "hack_types": json.dumps(hacks),
        "flagged_types": json.dumps(flagged_types(record, hacks)),
        "fooled": json.dumps(fooled),
    }
    if existing is None:
        reward = record.get("reward")
        result = conn.execute(
            insert(regression_cases).values(
                rubric_name=item.rubric_name,
                rubric_sha256=item.rubric_sha256,
                item_id=item_id,
                reviewer=reviewer,
                sample_id=item.sample_id,
                sample=item.sample,
                reward=float(reward) if isinstance(reward, int | float) else None,
                status=OPEN,
                created_at=now,
                **values,
            )
        )
        return _inserted_id(result)
    # A dismissal is a judgement: later edits change the marks, not the status.
    kept = existing.status == DISMISSED
    status = DISMISSED if kept else (OPEN if marked else RETRACTED)
    conn.execute(
        update(regression_cases)
        .where(regression_cases.c.id == existing.id)
        .values(status=status, updated_at=now, **values)
    )
    return int(existing.id)


def _inserted_id(result: CursorResult[Any]) -> int:
    key = result.inserted_primary_key
    if key is None:
        raise RuntimeError("the insert gave back no row id")
    return int(key[0])


def _decoded(row: Any) -> dict[str, Any]:
    out = dict(row._mapping)
    for name in (*_JSON_COLUMNS, "case_ids", "cases"):
        if name in out and isinstance(out[name], str):
            out[name] = json.loads(out[name])
    if "sample" in out and isinstance(out["sample"], str):
        out["sample"] = json.loads(out["sample"])
    return out


class RegressionCases:
    """Read, dismiss and override regression cases over a :class:`Store`."""

    def __init__(self, store: Store, *, clock: Callable[[], float] = time.time) -> None:
        self.store = store
        self.clock = clock

    def cases(
        self,
        rubric: str | None = None,
        *,
        status: str | None = None,
        limit: int = MAX_LIST,
    ) -> list[dict[str, Any]]:
        """Return cases oldest first, with their samples decoded (``None``: not kept).

        Raises:
            ValueError: ``status`` is not one of :data:`STATUSES`.
        """
        if status is not None and status not in STATUSES:
            raise ValueError(f"status must be one of {', '.join(STATUSES)}, got {status!r}")
        query = select(regression_cases).order_by(regression_cases.c.id).limit(limit)
        if rubric is not None:
            query = query.where(regression_cases.c.rubric_name == rubric)
        if status is not None:
            query = query.where(regression_cases.c.status == status)
        with self.store.engine.connect() as conn:
            return [_decoded(row) for row in conn.execute(query)]

    def case(self, case_id: int) -> dict[str, Any]:
        """Return one case.

        Raises:
            CaseNotFoundError: no case has this id.
        """
        with self.store.engine.connect() as conn:
            row = conn.execute(
                select(regression_cases).where(regression_cases.c.id == case_id)
            ).one_or_none()
        if row is None:
            raise CaseNotFoundError(f"no regression case {case_id}")
        return _decoded(row)

    def dismiss(self, case_id: int, by: str, reason: str) -> dict[str, Any]:
        """Dismiss an open case, saying who and why; return it as it is now.

        Raises:
            ValueError: the reason is empty.
            CaseNotFoundError: no case has this id.
            CaseNotOpenError: the case is already dismissed, or retracted.
        """
        if not reason.strip():
            raise ValueError("a dismissal needs a reason")
        now = self.clock()
        with self.store.writing() as conn:
            done = conn.execute(
                update(regression_cases)
                .where(regression_cases.c.id == case_id, regression_cases.c.status == OPEN)
                .values(status=DISMISSED, dismissed_by=by, dismissed_at=now, dismiss_reason=reason)
            )
            if done.rowcount != 1:
                status = conn.execute(
                    select(regression_cases.c.status).where(regression_cases.c.id == case_id)
                ).scalar()
                if status is None:
                    raise CaseNotFoundError(f"no regression case {case_id}")
                raise CaseNotOpenError(f"regression case {case_id} is {status}, not open")
        return self.case(case_id)

    def honest_items(self, rubric: str, *, limit: int = 200) -> list[dict[str, Any]]:
        """Return the rubric's latest reviewed items judged honest, newest first.

        Honest: every label of the item (each reviewer's latest version) ticks no
        hack type and passes every component. Each comes with its logged sample
        (items whose sample was not kept are left out), reward and rubric sha256.
        """
        query = (
            select(
                review_items.c.id,
                review_items.c.rubric_sha256,
                rewards.c.reward,
                rewards.c.sample,
                review_labels.c.verdicts,
                review_labels.c.hack_types,
            )
            .join(rewards, rewards.c.id == review_items.c.reward_id)
            .join(review_labels, review_labels.c.item_id == review_items.c.id)
            .where(review_items.c.rubric_name == rubric, rewards.c.sample.is_not(None))
            .order_by(review_items.c.id.desc())
        )
        items: dict[int, dict[str, Any]] = {}
        dishonest: set[int] = set()
        with self.store.engine.connect() as conn:
            for row in conn.execute(query):
                verdicts = json.loads(row.verdicts)
                clean = not json.loads(row.hack_types) and bool(verdicts)
                if not clean or any(v != "pass" for v in verdicts.values()):
                    dishonest.add(row.id)
                if row.id not in items:
                    items[row.id] = {
                        "item_id": row.id,
                        "rubric_sha256": row.rubric_sha256,
                        "reward": row.reward,
                        "sample": json.loads(row.sample),
                    }
        return [item for key, item in items.items() if key not in dishonest][:limit]

    def record_override(
        self,
        *,
        rubric_name: str,
        rubric_version: int,
        rubric_sha256: str,
        forced_by: str,
        forced_by_name: str,
        cases: Sequence[Mapping[str, Any]],
        ceiling: float | None,
    ) -> dict[str, Any]:
        """Keep the record of a version published over failing cases; return it.

        ``cases``: each case let through, as the gate graded it (``case_id`` first).
        """
        now = self.clock()
        ids = [int(c["case_id"]) for c in cases]
        with self.store.writing() as conn:
            result = conn.execute(
                insert(regression_overrides).values(
                    rubric_name=rubric_name,
                    rubric_version=rubric_version,
                    rubric_sha256=rubric_sha256,
                    forced_by=forced_by,
                    forced_by_name=forced_by_name,
                    forced_at=now,
                    case_ids=json.dumps(ids),
                    cases=json.dumps([dict(c) for c in cases], sort_keys=True),
                    ceiling=ceiling,
                )
            )
            override_id = _inserted_id(result)
            row = conn.execute(
                select(regression_overrides).where(regression_overrides.c.id == override_id)
            ).one()
        return _decoded(row)

    def overrides(
        self, rubric: str | None = None, *, limit: int = MAX_LIST
    ) -> list[dict[str, Any]]:
        """Return the recorded forcings, oldest first."""
        query = select(regression_overrides).order_by(regression_overrides.c.id).limit(limit)
        if rubric is not None:
            query = query.where(regression_overrides.c.rubric_name == rubric)
        with self.store.engine.connect() as conn:
            return [_decoded(row) for row in conn.execute(query)]
