"""Drift: the alerts the monitor raised, its streams, and accepting a change (admin)."""

from __future__ import annotations

import asyncio
import json
from typing import Annotated, Any

from fastapi import APIRouter, Query
from pydantic import BaseModel, ConfigDict, Field

from api.deps import Caller, ServiceDep
from api.errors import NotFound
from api.schemas import ErrorBody

router = APIRouter(prefix="/v1/drift", tags=["drift"])
ERRORS: dict[int | str, dict[str, object]] = {401: {"model": ErrorBody}, 403: {"model": ErrorBody}}


class DriftAlert(BaseModel):
    """One stored alert with its evidence."""

    id: str
    rubric_name: str
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
    """Which stream's reference to forget."""

    model_config = ConfigDict(extra="forbid")

    rubric: Annotated[str, Field(min_length=1, max_length=128)]
    component: Annotated[str, Field(min_length=1, max_length=128)]
    grader_version: Annotated[str, Field(min_length=1, max_length=64)]


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
    return [{**row, "evidence": json.loads(row["evidence"])} for row in rows]


@router.get("/streams", responses=ERRORS)
async def list_streams(service: ServiceDep, caller: Caller) -> list[dict[str, object]]:
    """List monitored streams (rubric, component, grader version) and their references."""
    return service.drift.streams()


@router.post("/reset", responses={**ERRORS, 404: {"model": ErrorBody}})
async def reset_stream(body: StreamReset, service: ServiceDep, caller: Caller) -> dict[str, int]:
    """Accept a reviewed change (admin): the stream takes a new reference, its alerts close."""
    caller.require("admin")
    try:
        closed = await asyncio.to_thread(
            service.drift.reset, body.rubric, body.component, body.grader_version
        )
    except KeyError as e:
        raise NotFound(str(e.args[0]), code="stream_not_found") from e
    return {"closed_alerts": closed}
