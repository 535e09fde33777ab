"""Rewards: the native batch endpoint and OpenRLHF's remote reward protocol."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Header, Query, Request
from starlette.responses import Response

from api.body import json_body_openapi, parse_body
from api.deps import Caller, ServiceDep
from api.grading import GradedBatch, render
from api.schemas import ErrorBody, OpenRLHFRequest, OpenRLHFResponse, RewardRequest, RewardResponse
from arbiter.adapters.rows import AbstainPolicy

router = APIRouter(tags=["rewards"])

ERRORS: dict[int | str, dict[str, object]] = {
    code: {"model": ErrorBody, "description": text}
    for code, text in {
        401: "No or unknown API key.",
        403: "The key's role may not grade.",
        404: "No such rubric (or version, or sha256).",
        409: "The same Idempotency-Key is still being graded.",
        413: "Body or batch over the limit.",
        422: "The request does not validate; `errors` lists field paths.",
        429: "Over capacity or over this key's quota; see Retry-After.",
        503: "The store could not log the rewards; nothing was acknowledged.",
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
    batch = await service.grading.grade_request(body, caller, idempotency_key, sent=data["samples"])
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
