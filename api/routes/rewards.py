"""Rewards: the native batch endpoint and OpenRLHF's remote reward protocol."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from typing import Annotated, Any

from fastapi import APIRouter, Header, Query, Request
from fastapi import Path as PathParam
from pydantic import BaseModel, Field
from starlette.responses import Response

from arbiter.api.body import json_body_openapi, parse_body
from arbiter.api.deps import Caller, ServiceDep, known_query
from arbiter.api.errors import NotFound
from arbiter.api.grading import GradedBatch, render
from arbiter.api.schemas import (
    ErrorBody,
    OpenRLHFRequest,
    OpenRLHFResponse,
    RewardRequest,
    RewardResponse,
)
from arbiter.rows import AbstainPolicy
from arbiter.store.reward_reads import MAX_PAGE, LoggedRow, RewardReader

router = APIRouter(tags=["rewards"])

ERRORS: dict[int | str, dict[str, object]] = {
    code: {"model": ErrorBody, "description": text}
    for code, text in {
        401: "No or unknown API key.",
        403: "The key's role may not grade.",
        404: "No such rubric (or version, or sha256).",
        409: "The same Idempotency-Key is still being graded (here or by another replica); "
        "retry after Retry-After, with the same key.",
        413: "Body or batch over the limit.",
        422: "The request does not validate; `errors` lists field paths.",
        429: "Over capacity or over this key's quota; see Retry-After.",
        503: "The store failed (unreachable, a lock held, a full disk); nothing was "
        "acknowledged. Retry after Retry-After with the same Idempotency-Key.",
    }.items()
}


def _json(body: bytes, batch: GradedBatch) -> Response:
    headers = {"Idempotent-Replayed": "true"} if batch.replayed else None
    return Response(body, media_type="application/json", headers=headers)


@router.post(
    "/v1/rewards",
    response_model=RewardResponse,
    responses=ERRORS,
    openapi_extra=json_body_openapi(RewardRequest),
)
async def create_rewards(
    request: Request,
    service: ServiceDep,
    caller: Caller,
    idempotency_key: Annotated[str | None, Header(max_length=256)] = None,
) -> Response:
    """Grade a batch of samples under a rubric; rewards come back in input order.

    With an ``Idempotency-Key`` header, a repeat returns the stored response
    unchanged (header ``Idempotent-Replayed: true``) instead of grading again.
    """
    # A RewardRequest, parsed by api.body rather than declared: faster, and each
    # sample is logged as it was sent.
    body, data = parse_body(await request.body(), RewardRequest)
    batch = await service.grading.grade_request(
        body, caller, idempotency_key, sent=data["samples"], body=data
    )
    return _json(render(batch), batch)


@router.post(
    "/get_reward",
    response_model=OpenRLHFResponse,
    responses=ERRORS,
    openapi_extra=json_body_openapi(OpenRLHFRequest),
)
async def openrlhf_reward(
    request: Request,
    service: ServiceDep,
    caller: Caller,
    rubric: Annotated[str | None, Query(max_length=128)] = None,
    abstain: Annotated[AbstainPolicy | None, Query()] = None,
) -> Response:
    """Grade OpenRLHF's remote reward request (``query``/``prompts``/``labels``).

    The response of each sample is what follows its prompt in its query (or the
    longest tail of the prompt the query starts with, when OpenRLHF truncated
    the prompt). ``abstain`` (or ``ARBITER_OPENRLHF_ABSTAIN``) says what an
    abstained reward becomes. Empty lists get empty lists. A retry of the same
    body is answered from the log, not graded twice.
    """
    body, _ = parse_body(await request.body(), OpenRLHFRequest)  # as /v1/rewards
    if not body.query and not body.prompts:
        return Response(
            b'{"rewards":[],"scores":[],"extra_logs":{}}', media_type="application/json"
        )
    answer = await service.openrlhf.grade(body, caller, rubric, abstain)
    headers = {"Idempotent-Replayed": "true"} if answer.replayed else None
    return Response(service.openrlhf.render(answer), media_type="application/json", headers=headers)


# -- reading the log back (trainer role; a key reads its own rewards only) ----------

READ_ERRORS: dict[int | str, dict[str, object]] = {
    401: ERRORS[401],
    403: {"model": ErrorBody, "description": "The key's role may not read rewards."},
    422: ERRORS[422],
}


class LoggedReward(BaseModel):
    """One logged reward, where it sits in the log, and the reward as it was returned."""

    log_id: int = Field(description="Its place in the log (the cursor: ``after_id``).")
    request_id: str
    position: int = Field(description="Its index in the request's batch.")
    sample_id: str
    rubric: dict[str, Any] = Field(description="name, version and sha256.")
    logged_at: str = Field(description="When it was logged (ISO 8601, UTC).")
    reward: dict[str, Any] = Field(description="The reward exactly as it was returned.")


class LoggedRewards(BaseModel):
    """Logged rewards in log order, and the cursor for the next page (``null``: no more)."""

    rewards: list[LoggedReward]
    next_after_id: int | None


def _iso(at: float) -> str:
    return datetime.fromtimestamp(at, UTC).isoformat().replace("+00:00", "Z")


def _unix(at: datetime | None) -> float | None:
    if at is None:
        return None
    # A time without a zone is read as UTC, as every time this API writes is.
    return (at if at.tzinfo is not None else at.replace(tzinfo=UTC)).timestamp()


def _logged(row: LoggedRow) -> LoggedReward:
    return LoggedReward(
        log_id=row.id,
        request_id=row.request_id,
        position=row.position,
        sample_id=row.sample_id,
        rubric={
            "name": row.rubric_name,
            "version": row.rubric_version,
            "sha256": row.rubric_sha256,
        },
        logged_at=_iso(row.created_at),
        reward=row.record,
    )


@router.get(
    "/v1/rewards",
    response_model=LoggedRewards,
    responses=READ_ERRORS,
    dependencies=[known_query("sample_id", "rubric", "since", "until", "after_id", "limit")],
)
async def list_rewards(
    service: ServiceDep,
    caller: Caller,
    sample_id: Annotated[str | None, Query(max_length=512, description="Only this sample.")] = None,
    rubric: Annotated[str | None, Query(max_length=128, description="Only this rubric.")] = None,
    since: Annotated[datetime | None, Query(description="Logged at or after (ISO 8601).")] = None,
    until: Annotated[datetime | None, Query(description="Logged before (ISO 8601).")] = None,
    after_id: Annotated[int, Query(ge=0, le=2**63 - 1, description="Page after this log id.")] = 0,
    limit: Annotated[int, Query(ge=1, le=MAX_PAGE)] = 100,
) -> LoggedRewards:
    """Read back this key's logged rewards by sample id and time range, oldest first."""
    caller.require("trainer")
    rows = await asyncio.to_thread(
        RewardReader(service.store).find,
        caller.client,
        sample_id=sample_id,
        rubric=rubric,
        since=_unix(since),
        until=_unix(until),
        after_id=after_id,
        limit=limit,
    )
    return LoggedRewards(
        rewards=[_logged(r) for r in rows],
        next_after_id=rows[-1].id if len(rows) == limit else None,
    )


@router.get(
    "/v1/rewards/{request_id}",
    response_model=LoggedRewards,
    responses={**READ_ERRORS, 404: {"model": ErrorBody, "description": "No such request here."}},
    dependencies=[known_query()],
)
async def get_request_rewards(
    request_id: Annotated[str, PathParam(max_length=64)],
    service: ServiceDep,
    caller: Caller,
) -> LoggedRewards:
    """Read back one request's rewards, in input order (404 unless this key sent it)."""
    caller.require("trainer")
    rows = await asyncio.to_thread(RewardReader(service.store).request, caller.client, request_id)
    if rows is None:
        # Another tenant's request reads as no request: ids leak nothing.
        raise NotFound(f"no request {request_id} logged by this key", code="request_not_found")
    return LoggedRewards(rewards=[_logged(r) for r in rows], next_after_id=None)
