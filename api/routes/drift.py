"""Drift: the alerts the monitor raised, grouped into incidents, its streams, and resets.

Names: a rubric is ``rubric`` everywhere (alerts, incidents, streams, resets). Alerts
also carry ``rubric_name``, the name they had before, for one release.

Shapes: an alert's ``id`` is short (12 hex digits; ``key`` is the full one, which
names stream, detector and window), times are ISO 8601 (UTC), ``evidence`` is one
flat mapping (the detector's measurements and the ``reference``), and the statistic
is named (``p_value`` for KS, ``cusum`` for CUSUM, ...) with the side of its
threshold it fires on. Lists hold open alerts and incidents unless ``status`` says
otherwise; an unknown query parameter is a 422, not silently ignored.
"""

from __future__ import annotations

import asyncio
import json
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Query
from fastapi import Path as PathParam
from pydantic import BaseModel, ConfigDict, Field
from starlette.responses import Response

from arbiter.api.deps import Caller, ServiceDep, known_query
from arbiter.api.errors import NotFound
from arbiter.api.routes.review import PAGE_HEADERS
from arbiter.api.schemas import ErrorBody
from arbiter.monitoring.drift_alerts import STATISTICS, short_alert_id
from arbiter.monitoring.drift_incidents import DEFAULT_GAP_S, Incident, group_incidents
from arbiter.store.drift_log import DriftLog

router = APIRouter(prefix="/v1/drift", tags=["drift"])
#: The drift page at /drift, beside /review (outside the API's prefix).
page_router = APIRouter(tags=["drift"])
PAGE = Path(__file__).resolve().parents[1] / "static" / "drift.html"
ERRORS: dict[int | str, dict[str, object]] = {401: {"model": ErrorBody}, 403: {"model": ErrorBody}}


class Statistic(BaseModel):
    """What a detector measured, by name, against the threshold it fires at."""

    name: str = Field(description="p_value (KS), cusum, wasserstein_distance, ...")
    value: float
    threshold: float
    fires: Literal["above", "below"] = Field(description="The side of the threshold that fires.")


class DriftAlert(BaseModel):
    """One stored alert with its evidence."""

    id: str = Field(description="Short id: 12 hex digits of the full id's sha256.")
    key: str = Field(description="The full id: rubric/component@version#detector#window.")
    rubric: str
    rubric_name: str = Field(description="Deprecated: the same as ``rubric``.")
    incident: str = Field(description="The incident this alert belongs to (its first alert's id).")
    component: str
    grader_version: str
    detector: str
    window: int
    statistic: Statistic
    message: str
    evidence: dict[str, Any] = Field(
        description="The detector's measurements and the stream's ``reference``, flat."
    )
    status: Literal["open", "closed"]
    silenced: bool = Field(description="An active silence mutes it: no flag, no page.")
    opened_at: str = Field(description="ISO 8601, UTC.")
    closed_at: str | None = Field(description="ISO 8601, UTC; null while open.")


class DriftIncidentMember(BaseModel):
    """One alert of an incident, in brief (the full alert is at ``/v1/drift/alerts``)."""

    id: str
    component: str
    grader_version: str
    detector: str
    message: str
    opened_at: str
    closed_at: str | None


class DriftIncident(BaseModel):
    """Related alerts of one rubric: one event for on-call, with every alert it holds."""

    id: str = Field(description="Its first alert's short id.")
    rubric: str
    status: Literal["open", "closed"]
    opened_at: str
    closed_at: str | None
    components: list[str]
    detectors: list[str]
    members: list[DriftIncidentMember]


Status = Annotated[
    Literal["open", "closed", "all"],
    Query(description="Which to list: open (the default), closed or all."),
]
OpenOnly = Annotated[
    bool | None, Query(description="Deprecated: true is status=open, false status=all.")
]


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
    reason: Annotated[
        str,
        Field(
            min_length=1,
            max_length=2000,
            description="Why the change is accepted (recorded with who reset, at GET /resets).",
        ),
    ]


class ResetResponse(BaseModel):
    """What a reset did."""

    closed_alerts: int
    open_alerts: int = Field(description="Alerts of the rubric still open after the reset.")


class SilenceRequest(BaseModel):
    """Mute a rubric's (or one component's) drift flags for a while, keeping the baseline."""

    model_config = ConfigDict(extra="forbid")

    rubric: Annotated[str, Field(min_length=1, max_length=128)]
    component: Annotated[
        str | None,
        Field(min_length=1, max_length=128, description="Only this component (default: all)."),
    ] = None
    duration_s: Annotated[
        float,
        Field(gt=0, le=30 * 86_400, description="How long, in seconds (at most 30 days)."),
    ]
    reason: Annotated[str, Field(min_length=1, max_length=2000)]


class Silence(BaseModel):
    """A silence: what it mutes, who asked, why, and until when."""

    id: int
    rubric: str
    component: str | None
    requested_by: str
    reason: str
    created_at: str
    until: str = Field(description="When it expires (ISO 8601, UTC).")
    lifted_at: str | None = Field(description="When it was lifted early, if it was.")
    active: bool


class ResetRecord(BaseModel):
    """A recorded reset: which streams, who asked, why, and what it closed."""

    rubric: str
    component: str | None
    grader_version: str | None
    requested_by: str = Field(description="The admin key's name and id.")
    reason: str
    closed_alerts: int
    reset_at: str = Field(description="ISO 8601, UTC.")


#: By the detector's stored name (a detector no longer known keeps a plain name).
_STATISTICS = {detector.value: named for detector, named in STATISTICS.items()}


def _status(status: str, open_only: bool | None) -> str:
    if open_only is None:
        return status
    return "open" if open_only else "all"


def _iso(at: float | None) -> str | None:
    if at is None:
        return None
    return datetime.fromtimestamp(at, UTC).isoformat().replace("+00:00", "Z")


@router.get(
    "/alerts",
    response_model=list[DriftAlert],
    responses=ERRORS,
    dependencies=[known_query("status", "open_only", "rubric", "limit")],
)
async def list_alerts(
    response: Response,
    service: ServiceDep,
    caller: Caller,
    status: Status = "open",
    open_only: OpenOnly = None,
    rubric: Annotated[str | None, Query(max_length=128)] = None,
    limit: Annotated[int, Query(ge=1, le=5000)] = 500,
) -> list[dict[str, Any]]:
    """List drift alerts, newest first: the open ones unless ``status`` says otherwise.

    An empty list while streams are still warming up means nothing is watched
    yet, not that nothing drifted: the ``X-Arbiter-Drift-Watched`` header says
    how many of the (rubric's) streams are watched, and
    ``X-Arbiter-Drift-Warmup`` the least-advanced one's progress (see
    ``/v1/drift/streams`` for each).
    """
    response.headers.update(_warmup_headers(service.drift.streams(), rubric))
    wanted = _status(status, open_only)
    rows = await asyncio.to_thread(
        DriftLog(service.store).alerts, open_only=wanted == "open", rubric=rubric, limit=limit
    )
    alerts = [_alert(row) for row in rows]
    by_id = {a["id"]: a for a in alerts}
    # Each alert names the incident it belongs to (among the alerts listed).
    for incident in group_incidents(alerts):
        for member in incident.members:
            by_id[member.id]["incident"] = incident.id
    if wanted == "closed":
        alerts = [a for a in alerts if a["closed_at"] is not None]
    silences = await asyncio.to_thread(
        DriftLog(service.store).silences, active_at=time.time(), limit=1000
    )
    muted = [(s["rubric_name"], s["component"]) for s in silences]
    return [
        {
            **_rendered(a),
            "silenced": any(r == a["rubric"] and c in (None, a["component"]) for r, c in muted),
        }
        for a in alerts
    ]


def _warmup_headers(streams: list[dict[str, Any]], rubric: str | None) -> dict[str, str]:
    """Say how many streams are watched, and how far the least-advanced other one is."""
    mine = [s for s in streams if rubric is None or s["rubric"] == rubric]
    waiting = [s for s in mine if s["warmup"]["phase"] != "watching"]
    headers = {"X-Arbiter-Drift-Watched": f"{len(mine) - len(waiting)} of {len(mine)}"}
    if waiting:
        least = min(waiting, key=lambda s: s["warmup"]["fraction"])
        progress = least["warmup"]
        headers["X-Arbiter-Drift-Warmup"] = (
            f"{least['rubric']}/{least['component']}: {progress['phase']}, "
            f"{progress['samples']} of {progress['needed']} samples"
        )
    return headers


def _alert(row: dict[str, Any]) -> dict[str, Any]:
    """A stored row with the short id, as the incidents are grouped (Unix times still)."""
    return {**row, "key": row["id"], "id": short_alert_id(row["id"]), "rubric": row["rubric_name"]}


def _rendered(alert: dict[str, Any]) -> dict[str, Any]:
    stored = json.loads(alert["evidence"])
    # Stored as {"evidence": {...}, "reference": {...}}; answered as one flat mapping.
    evidence = {**stored.get("evidence", {}), "reference": stored.get("reference")}
    name, side = _STATISTICS.get(alert["detector"], ("statistic", "above"))
    return {
        **{k: alert[k] for k in ("id", "key", "rubric", "rubric_name", "incident", "component")},
        **{k: alert[k] for k in ("grader_version", "detector", "window", "message")},
        "statistic": {
            "name": name,
            "value": alert["statistic"],
            "threshold": alert["threshold"],
            "fires": side,
        },
        "evidence": evidence,
        "status": "open" if alert["closed_at"] is None else "closed",
        "opened_at": _iso(alert["opened_at"]),
        "closed_at": _iso(alert["closed_at"]),
    }


def _incident(incident: Incident) -> dict[str, Any]:
    return {
        **incident.model_dump(include={"id", "rubric", "components", "detectors"}),
        "status": "open" if incident.open else "closed",
        "opened_at": _iso(incident.opened_at),
        "closed_at": _iso(incident.closed_at),
        "members": [
            {**m.model_dump(), "opened_at": _iso(m.opened_at), "closed_at": _iso(m.closed_at)}
            for m in incident.members
        ],
    }


@router.get(
    "/incidents",
    response_model=list[DriftIncident],
    responses=ERRORS,
    dependencies=[known_query("status", "open_only", "rubric", "gap_s", "limit")],
)
async def list_incidents(
    service: ServiceDep,
    caller: Caller,
    status: Status = "open",
    open_only: OpenOnly = None,
    rubric: Annotated[str | None, Query(max_length=128)] = None,
    gap_s: Annotated[float, Query(ge=0, le=86_400)] = DEFAULT_GAP_S,
    limit: Annotated[int, Query(ge=1, le=5000)] = 500,
) -> list[dict[str, Any]]:
    """List drift incidents, newest first: a rubric's alerts opened together, as one event.

    An alert joins its rubric's latest incident when it opened while a member was still
    open or within ``gap_s`` seconds of the latest member's opening. Open ones unless
    ``status`` says otherwise.
    """
    wanted = _status(status, open_only)
    rows = await asyncio.to_thread(DriftLog(service.store).alerts, rubric=rubric, limit=limit)
    incidents = group_incidents([_alert(row) for row in rows], gap_s)
    if wanted != "all":
        incidents = [i for i in incidents if i.open == (wanted == "open")]
    return [_incident(i) for i in incidents]


@router.get("/streams", responses=ERRORS, dependencies=[known_query()])
async def list_streams(service: ServiceDep, caller: Caller) -> list[dict[str, object]]:
    """List monitored streams (rubric, component, grader version), references and warm-up.

    ``warmup`` says how far each stream is from being watched (``phase``: warmup,
    reference or watching; ``samples`` of ``needed``): a stream without a reference
    detects nothing.
    """
    return service.drift.streams()


@router.post(
    "/reset", response_model=ResetResponse, responses={**ERRORS, 404: {"model": ErrorBody}}
)
async def reset_stream(body: StreamReset, service: ServiceDep, caller: Caller) -> ResetResponse:
    """Accept a reviewed change (admin): the streams take new references, their alerts close.

    ``{"rubric": NAME}`` resets every stream of the rubric (each component, each grader
    version, and the rubric-level reward stream); ``component`` and ``grader_version``
    narrow it. The reference is collected afresh from the next ``reference_windows``.
    A ``reason`` is required; it is recorded with who reset (``GET /v1/drift/resets``).
    """
    caller.require("admin")
    try:
        closed = await asyncio.to_thread(
            service.drift.reset, body.rubric, body.component, body.grader_version
        )
    except KeyError as e:
        raise NotFound(str(e.args[0]), code="stream_not_found") from e
    await asyncio.to_thread(
        DriftLog(service.store).log_reset,
        body.rubric,
        body.component,
        body.grader_version,
        requested_by=f"{caller.name} ({caller.client})",
        reason=body.reason,
        closed_alerts=closed,
    )
    still_open = await asyncio.to_thread(
        DriftLog(service.store).alerts, open_only=True, rubric=body.rubric, limit=5000
    )
    return ResetResponse(closed_alerts=closed, open_alerts=len(still_open))


@router.get(
    "/resets",
    response_model=list[ResetRecord],
    responses=ERRORS,
    dependencies=[known_query("rubric", "limit")],
)
async def list_resets(
    service: ServiceDep,
    caller: Caller,
    rubric: Annotated[str | None, Query(max_length=128)] = None,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
) -> list[dict[str, Any]]:
    """List recorded resets, newest first: which streams, who, why, and what each closed."""
    rows = await asyncio.to_thread(DriftLog(service.store).reset_log, rubric, limit)
    return [
        {
            "rubric": row["rubric_name"],
            **{k: row[k] for k in ("component", "grader_version", "requested_by", "reason")},
            "closed_alerts": row["closed_alerts"],
            "reset_at": _iso(row["reset_at"]),
        }
        for row in rows
    ]


@page_router.get("/drift", include_in_schema=False)
async def drift_page() -> Response:
    """Serve the drift page (it asks for a key; resetting needs an admin's)."""
    # The same policy as the review page: text only, no other origin, no remote script.
    return Response(PAGE.read_bytes(), media_type="text/html; charset=utf-8", headers=PAGE_HEADERS)


def _silence(row: dict[str, Any], now: float) -> dict[str, Any]:
    return {
        "id": row["id"],
        "rubric": row["rubric_name"],
        **{k: row[k] for k in ("component", "requested_by", "reason")},
        "created_at": _iso(row["created_at"]),
        "until": _iso(row["until"]),
        "lifted_at": _iso(row["lifted_at"]),
        "active": row["lifted_at"] is None and row["until"] > now,
    }


@router.post("/silences", response_model=Silence, status_code=201, responses=ERRORS)
async def add_silence(body: SilenceRequest, service: ServiceDep, caller: Caller) -> dict[str, Any]:
    """Silence a rubric's (or one component's) drift flags for ``duration_s`` (admin).

    Unlike a reset, the reference stays: the detectors go on, alerts still open and
    close and are listed (``silenced: true``), but no reward carries their flags and
    ``arbiter_drift_incident_open`` does not page until the silence expires or is lifted.
    """
    caller.require("admin")
    now = time.time()
    row = await asyncio.to_thread(
        DriftLog(service.store).silence,
        body.rubric,
        body.component,
        until=now + body.duration_s,
        requested_by=f"{caller.name} ({caller.client})",
        reason=body.reason,
        now=now,
    )
    await asyncio.to_thread(service.drift.silences_changed)
    return _silence(row, now)


@router.get(
    "/silences",
    response_model=list[Silence],
    responses=ERRORS,
    dependencies=[known_query("status", "rubric", "limit")],
)
async def list_silences(
    service: ServiceDep,
    caller: Caller,
    status: Annotated[Literal["active", "all"], Query()] = "active",
    rubric: Annotated[str | None, Query(max_length=128)] = None,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
) -> list[dict[str, Any]]:
    """List silences, newest first: the active ones unless ``status=all``."""
    now = time.time()
    rows = await asyncio.to_thread(
        DriftLog(service.store).silences,
        active_at=now if status == "active" else None,
        rubric=rubric,
        limit=limit,
    )
    return [_silence(row, now) for row in rows]


@router.delete(
    "/silences/{silence_id}",
    status_code=204,
    responses={**ERRORS, 404: {"model": ErrorBody, "description": "No active silence by that id."}},
)
async def lift_silence(
    silence_id: Annotated[int, PathParam(ge=1, le=2**63 - 1)], service: ServiceDep, caller: Caller
) -> Response:
    """Lift a silence before it expires (admin); flags and paging resume at once."""
    caller.require("admin")
    lifted = await asyncio.to_thread(DriftLog(service.store).lift_silence, silence_id)
    if not lifted:
        raise NotFound(f"no active silence {silence_id}", code="silence_not_found")
    await asyncio.to_thread(service.drift.silences_changed)
    return Response(status_code=204)
