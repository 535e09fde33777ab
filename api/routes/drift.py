"""Drift: the alerts the monitor raised, grouped into incidents, its streams, and resets.

Names: a rubric is ``rubric`` everywhere (alerts, incidents, streams, resets). Alerts
also carry ``rubric_name``, the name they had before, for one release.
"""

from __future__ import annotations

import asyncio
import json
from typing import Annotated, Any

from fastapi import APIRouter, Query
from pydantic import BaseModel, ConfigDict, Field

from api.deps import Caller, ServiceDep
from api.errors import NotFound
from api.schemas import ErrorBody
from monitoring.drift_incidents import DEFAULT_GAP_S, Incident, group_incidents

router = APIRouter(prefix="/v1/drift", tags=["drift"])
ERRORS: dict[int | str, dict[str, object]] = {401: {"model": ErrorBody}, 403: {"model": ErrorBody}}


class DriftAlert(BaseModel):
    """One stored alert with its evidence."""

    id: str
    rubric: str
    rubric_name: str = Field(description="Deprecated: the same as ``rubric``.")
    incident: str = Field(description="The incident this alert belongs to (its first alert's id).")
    component: str
    grader_version: str
    detector: str
    window: int
    statistic: float
    threshold: float
    message: str
    evidence: dict[str, Any]
    opened_at: float
    closed_at: float | None


class StreamReset(BaseModel):
    """Which streams' references to forget: a whole rubric, or one component or version."""

    model_config = ConfigDict(extra="forbid")

    rubric: Annotated[str, Field(min_length=1, max_length=128)]
    component: Annotated[
        str | None,
        Field(min_length=1, max_length=128, description="Only this component (default: all)."),
    ] = None
    grader_version: Annotated[
        str | None,
        Field(min_length=1, max_length=64, description="Only this grader version (default: all)."),
    ] = None


class ResetResponse(BaseModel):
    """What a reset did."""

    closed_alerts: int
    open_alerts: int = Field(description="Alerts of the rubric still open after the reset.")


@router.get("/alerts", response_model=list[DriftAlert], responses=ERRORS)
async def list_alerts(
    service: ServiceDep,
    caller: Caller,
    open_only: bool = False,
    rubric: Annotated[str | None, Query(max_length=128)] = None,
    limit: Annotated[int, Query(ge=1, le=5000)] = 500,
) -> list[dict[str, Any]]:
    """List drift alerts, newest first (``open_only`` for those still open)."""
    rows = await asyncio.to_thread(
        service.store.alerts, open_only=open_only, rubric=rubric, limit=limit
    )
    alerts = [_alert(row) for row in rows]
    by_id = {a["id"]: a for a in alerts}
    # Each alert names the incident it belongs to (among the alerts listed).
    for incident in group_incidents(alerts):
        for member in incident.members:
            by_id[member.id]["incident"] = incident.id
    return alerts


def _alert(row: dict[str, Any]) -> dict[str, Any]:
    return {**row, "rubric": row["rubric_name"], "evidence": json.loads(row["evidence"])}


@router.get("/incidents", response_model=list[Incident], responses=ERRORS)
async def list_incidents(
    service: ServiceDep,
    caller: Caller,
    open_only: bool = False,
    rubric: Annotated[str | None, Query(max_length=128)] = None,
    gap_s: Annotated[float, Query(ge=0, le=86_400)] = DEFAULT_GAP_S,
    limit: Annotated[int, Query(ge=1, le=5000)] = 500,
) -> list[Incident]:
    """List drift incidents, newest first: a rubric's alerts opened together, as one event.

    An alert joins its rubric's latest incident when it opened while a member was still
    open or within ``gap_s`` seconds of the latest member's opening.
    """
    rows = await asyncio.to_thread(service.store.alerts, rubric=rubric, limit=limit)
    incidents = group_incidents([_alert(row) for row in rows], gap_s)
    return [i for i in incidents if i.open] if open_only else incidents


@router.get("/streams", responses=ERRORS)
async def list_streams(service: ServiceDep, caller: Caller) -> list[dict[str, object]]:
    """List monitored streams (rubric, component, grader version) and their references."""
    return service.drift.streams()


@router.post(
    "/reset", response_model=ResetResponse, responses={**ERRORS, 404: {"model": ErrorBody}}
)
async def reset_stream(body: StreamReset, service: ServiceDep, caller: Caller) -> ResetResponse:
    """Accept a reviewed change (admin): the streams take new references, their alerts close.

    ``{"rubric": NAME}`` resets every stream of the rubric (each component, each grader
    version, and the rubric-level reward stream); ``component`` and ``grader_version``
    narrow it. The reference is collected afresh from the next ``reference_windows``.
    """
    caller.require("admin")
    try:
        closed = await asyncio.to_thread(
            service.drift.reset, body.rubric, body.component, body.grader_version
        )
    except KeyError as e:
        raise NotFound(str(e.args[0]), code="stream_not_found") from e
    still_open = await asyncio.to_thread(
        service.store.alerts, open_only=True, rubric=body.rubric, limit=5000
    )
    return ResetResponse(closed_alerts=closed, open_alerts=len(still_open))
