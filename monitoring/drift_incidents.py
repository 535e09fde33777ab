"""Drift incidents: the alerts one event opened, grouped so on-call sees one thing.

A real shift in a policy moves several streams at once (the reward, the tests
component, the efficiency component) and several detectors on each (CUSUM, KS,
Wasserstein), so one event opens many alerts. An incident groups the alerts of
one rubric that opened close together: an alert joins the rubric's latest
incident when it opened while a member was still open, or within ``gap_s`` of
the latest member's opening. Pure: alert rows in, incidents out.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict

__all__ = ["DEFAULT_GAP_S", "Incident", "IncidentMember", "group_incidents"]

#: Alerts of a rubric opened within this many seconds of each other are one event.
DEFAULT_GAP_S = 600.0


class IncidentMember(BaseModel):
    """One alert of an incident, in brief (the full alert is at ``/v1/drift/alerts``)."""

    model_config = ConfigDict(frozen=True)

    id: str
    component: str
    grader_version: str
    detector: str
    message: str
    opened_at: float
    closed_at: float | None


class Incident(BaseModel):
    """Related alerts of one rubric: one event for on-call, with every alert it holds."""

    model_config = ConfigDict(frozen=True)

    id: str
    rubric: str
    opened_at: float
    closed_at: float | None
    components: list[str]
    detectors: list[str]
    members: list[IncidentMember]

    @property
    def open(self) -> bool:
        """Return whether any member is still open."""
        return self.closed_at is None


def _member(row: Mapping[str, Any]) -> IncidentMember:
    return IncidentMember(
        id=str(row["id"]),
        component=str(row["component"]),
        grader_version=str(row["grader_version"]),
        detector=str(row["detector"]),
        message=str(row["message"]),
        opened_at=float(row["opened_at"]),
        closed_at=None if row["closed_at"] is None else float(row["closed_at"]),
    )


def _incident(rubric: str, members: list[IncidentMember]) -> Incident:
    closed = [m.closed_at for m in members]
    return Incident(
        # The first member's id: stable as later alerts join.
        id=members[0].id,
        rubric=rubric,
        opened_at=members[0].opened_at,
        closed_at=None
        if any(c is None for c in closed)
        else max(c for c in closed if c is not None),
        components=sorted({m.component for m in members}),
        detectors=sorted({m.detector for m in members}),
        members=members,
    )


def group_incidents(
    alerts: Iterable[Mapping[str, Any]], gap_s: float = DEFAULT_GAP_S
) -> list[Incident]:
    """Group alert rows (as ``/v1/drift/alerts`` returns them) into incidents, newest first.

    Args:
        alerts: Rows with ``id``, ``rubric`` (or the older ``rubric_name``),
            ``component``, ``grader_version``, ``detector``, ``message``,
            ``opened_at`` and ``closed_at``.
        gap_s: Alerts of a rubric opened further apart than this, with none of the
            earlier ones still open, are separate incidents.

    Returns:
        The incidents, the most recently opened first; members oldest first.

    Raises:
        ValueError: If ``gap_s`` is negative.
    """
    if gap_s < 0:
        raise ValueError(f"gap_s must be >= 0; found {gap_s}")
    by_rubric: dict[str, list[IncidentMember]] = {}
    for row in alerts:
        rubric = str(row.get("rubric", row.get("rubric_name")))
        by_rubric.setdefault(rubric, []).append(_member(row))
    incidents: list[Incident] = []
    for rubric, members in by_rubric.items():
        members.sort(key=lambda m: (m.opened_at, m.id))
        group: list[IncidentMember] = []
        # The time until which the current group is still "happening": its latest
        # opening plus the gap, or for as long as a member stays open.
        until = float("-inf")
        for member in members:
            if group and member.opened_at > until:
                incidents.append(_incident(rubric, group))
                group, until = [], float("-inf")
            group.append(member)
            end = float("inf") if member.closed_at is None else member.closed_at
            until = max(until, member.opened_at + gap_s, end)
        if group:
            incidents.append(_incident(rubric, group))
    incidents.sort(key=lambda i: (i.opened_at, i.id), reverse=True)
    return incidents
