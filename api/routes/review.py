"""Human review (reviewer role; admin too): the queue, leases, labels, export, agreement.

One module, one job: the review resource's routes. The queue, leases, labels, export and
agreement share one set of request models, role checks and error answers.

Blind by default: a claimed item carries the prompt, the response, the task, the
rollout's metrics and what "pass" means for each component, but not the graders'
scores, violations or the reason it was sampled (a reason such as
``high_reward_violation`` would tell the reviewer what the graders thought). A
rubric's ``review: {show_scores: true}`` shows them for that rubric; without it the
server's ``ARBITER_REVIEW_SHOW_SCORES`` decides. Shown, they come as a compact
summary per component (``arbiter.api.review_view``), not the raw record. Measured facts
that are not verdicts (complexity per function, the maintainability index, token
counts against budgets) are shown blind too.

A label needs a verdict for every component and an overall score (422
``label_incomplete`` names what is missing). A skip sends the item to the back of
the skipping reviewer's queue. A reviewer edits their own submitted labels
(``PUT .../labels/mine``): each edit is a new version, and agreement reads the latest.
"""

from __future__ import annotations

import asyncio
import functools
import json
from pathlib import Path
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Query
from fastapi import Path as PathParam
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, StrictFloat, StrictStr
from starlette.responses import Response, StreamingResponse

from arbiter.api.auth import Principal
from arbiter.api.deps import Caller, ServiceDep
from arbiter.api.errors import Conflict, Invalid, NotFound
from arbiter.api.review_view import (
    grader_guidance,
    measured_facts,
    review_hint,
    reward_summary,
    rubric_guidance,
)
from arbiter.api.schemas import ErrorBody
from arbiter.api.service import Service
from arbiter.graders.types import ViolationType
from arbiter.monitoring.agreement import (
    LabelledPair,
    agreement_report,
    labelled_pair,
    pass_threshold,
)
from arbiter.rubrics.errors import RubricNotFoundError
from arbiter.rubrics.rubric import Rubric, reward_range
from arbiter.store.review import ClaimedItem, Label, LabelNotFoundError, LeaseLostError, ReviewQueue

router = APIRouter(tags=["review"])

PAGE = Path(__file__).resolve().parents[1] / "static" / "review.html"
REVIEW_ROLES = ("reviewer",)

ERRORS: dict[int | str, dict[str, object]] = {
    401: {"model": ErrorBody, "description": "No or unknown API key."},
    403: {"model": ErrorBody, "description": "The key is not a reviewer's (or admin's)."},
}
LEASE_ERRORS: dict[int | str, dict[str, object]] = {
    **ERRORS,
    409: {"model": ErrorBody, "description": "The lease expired and another reviewer has it."},
}

RubricFilter = Annotated[str | None, Query(max_length=128, description="Only this rubric.")]


def _storable(text: str) -> str:
    # JSON may carry lone surrogates ("\\udc80"); no database driver can encode them,
    # so they are a 422 here rather than a 500 at the insert.
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as e:
        raise ValueError("text must be valid Unicode (no lone surrogates)") from e
    return text


Name = Annotated[StrictStr, Field(min_length=1, max_length=128), AfterValidator(_storable)]
Token = Annotated[StrictStr, Field(min_length=1, max_length=64), AfterValidator(_storable)]

# Row ids are 64-bit: a larger number is no item, not an overflow in the driver.
ItemId = Annotated[int, PathParam(ge=1, le=2**63 - 1)]


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ClaimRequest(_Body):
    """Which queue to claim from; optional, as the body itself (any rubric by default)."""

    rubric: Name | None = None


class LeaseRequest(_Body):
    """Proof of holding an item: the token its claim returned."""

    lease_token: Token


class ReleaseRequest(LeaseRequest):
    """Give an item back: a skip (the default) sends it to the back of your queue."""

    skip: bool = Field(
        default=True,
        description="You skipped it: your next claims take it last. False: the page closed.",
    )


class LabelFields(_Body):
    """A reviewer's judgement of an item."""

    verdicts: dict[Name, Literal["pass", "fail"]] = Field(
        default_factory=dict, description="Component name -> pass or fail."
    )
    overall_score: Annotated[StrictFloat, Field(ge=0, le=1, allow_inf_nan=False)] | None = Field(
        default=None, description="The reviewer's overall score in [0, 1]."
    )
    hack_types: list[ViolationType] = Field(
        default_factory=list, description="Reward hacks seen, in the violation detectors' taxonomy."
    )
    comment: Annotated[str, Field(max_length=10_000), AfterValidator(_storable)] = ""


class LabelRequest(LabelFields, LeaseRequest):
    """A reviewer's judgement of the item they hold."""


class ReviewItem(BaseModel):
    """A claimed item: what to judge, and the lease to hold it by."""

    id: int
    sample_id: str
    rubric: dict[str, str] = Field(description="The rubric's name, version and sha256.")
    components: list[str] = Field(description="Component names, in the rubric's order.")
    sample: dict[str, Any] | None
    lease_token: str
    lease_expires_at: float
    label_count: int
    required_reviews: int
    graders: dict[str, str] = Field(
        default_factory=dict, description="Component name -> the grader that scored it."
    )
    guidance: dict[str, str] = Field(
        default_factory=dict,
        description="Component name -> what 'pass' means there, with the rubric's thresholds.",
    )
    pass_thresholds: dict[str, float] = Field(
        default_factory=dict,
        description="Component name -> the grader score agreement counts as a pass.",
    )
    measured: dict[str, list[str]] = Field(
        default_factory=dict,
        description="Component name -> measured facts that are not verdicts (complexity per "
        "function, maintainability index, token counts against budgets); shown blind too.",
    )
    label: dict[str, Any] | None = Field(
        default=None, description="Your latest label of this item, when you are editing it."
    )
    blind: bool = Field(default=True, description="Whether the graders' output is withheld.")
    grading: dict[str, Any] | None = Field(
        default=None,
        description="The reward, gates, penalties, why it was sampled and a compact summary "
        "per component (score, violations with line and snippet, what it measured); "
        "absent when blind.",
    )


class ClaimResponse(BaseModel):
    """The claimed item, or ``null`` when nothing is waiting."""

    item: ReviewItem | None


class LeaseResponse(BaseModel):
    """When the lease now runs out (Unix seconds)."""

    lease_expires_at: float


def _queue(service: Service) -> ReviewQueue:
    return service.review_sampler.queue


def _reviewer(caller: Principal) -> str:
    caller.require(*REVIEW_ROLES)
    return caller.client


def _rubric(service: Service, sha256: str) -> Rubric | None:
    try:
        return service.catalog.by_sha256(sha256).rubric
    except RubricNotFoundError:
        return None  # a version no longer loaded: the record alone still describes it


def _item(claimed: ClaimedItem, rubric: Rubric | None, *, default_show: bool) -> ReviewItem:
    record = json.loads(claimed.record)
    components = record.get("components", {})
    graders = {name: str(c.get("grader", "")) for name, c in components.items()}
    # The rubric's order (tests first where the author put them first), not the
    # alphabet; a version no longer loaded keeps the record's own order.
    order = [n for n in (rubric.components if rubric is not None else ()) if n in components]
    names = order + [n for n in components if n not in order]
    sample = json.loads(claimed.sample) if claimed.sample is not None else None
    chosen = None if rubric is None else rubric.spec.review.show_scores
    show_scores = default_show if chosen is None else chosen
    guidance = (
        rubric_guidance(rubric)
        if rubric is not None
        else {name: grader_guidance(grader) for name, grader in graders.items()}
    )
    return ReviewItem(
        id=claimed.id,
        sample_id=claimed.sample_id,
        rubric={
            "name": claimed.rubric_name,
            "version": str((record.get("rubric") or {}).get("version", "")),
            "sha256": claimed.rubric_sha256,
        },
        components=names,
        sample=sample,
        lease_token=claimed.lease_token,
        lease_expires_at=claimed.lease_expires_at,
        label_count=claimed.label_count,
        required_reviews=claimed.required_reviews,
        graders=graders,
        guidance={name: guidance.get(name, "") for name in names},
        pass_thresholds={name: pass_threshold(graders[name]) for name in names},
        measured=measured_facts(rubric, sample) if rubric is not None else {},
        blind=not show_scores,
        grading=reward_summary(record, claimed.reason, claimed.inclusion_probability)
        if show_scores
        else None,
    )


def _complete(record: str | None, body: LabelFields) -> None:
    """Refuse a label that leaves a component or the overall score unjudged."""
    if record is None:
        return  # no such item: the store answers (lease lost, or no label to edit)
    components = list(json.loads(record).get("components", {}))
    missing = [f"verdict for {name}" for name in components if name not in body.verdicts]
    if body.overall_score is None:
        missing.append("overall score")
    unknown = sorted(set(body.verdicts) - set(components))
    if missing or unknown:
        parts = []
        if missing:
            parts.append("missing " + ", ".join(missing))
        if unknown:
            parts.append("no such component: " + ", ".join(unknown))
        raise Invalid(
            "the label is incomplete: " + "; ".join(parts),
            code="label_incomplete",
            errors=[{"loc": ["body"], "missing": missing, "unknown_components": unknown}],
        )


def _label(body: LabelFields) -> Label:
    return Label(
        verdicts=dict(body.verdicts),
        overall_score=body.overall_score,
        hack_types=[h.value for h in body.hack_types],
        comment=body.comment,
    )


def _lost(item_id: int) -> Conflict:
    return Conflict(
        f"you no longer hold review item {item_id}: the lease ran out and another reviewer "
        "took it, or it is already labelled; claim the next one",
        code="lease_lost",
    )


# The page shows model output: it sets it only as text, and this policy forbids it
# any other origin, any plugin, any form post and any remote script even if it did not.
PAGE_HEADERS = {
    "Content-Security-Policy": "default-src 'none'; script-src 'unsafe-inline'; "
    "style-src 'unsafe-inline'; connect-src 'self'; base-uri 'none'; form-action 'none'; "
    "frame-ancestors 'none'",
    "X-Content-Type-Options": "nosniff",
    "Cache-Control": "no-store",
}


@functools.cache
def _page() -> bytes:
    hack_types = json.dumps([v.value for v in ViolationType])
    return PAGE.read_text(encoding="utf-8").replace("/*HACK_TYPES*/[]", hack_types).encode()


@router.get("/review", include_in_schema=False)
async def review_page() -> Response:
    """Serve the reviewer page (it asks for a key; every call it makes is authenticated)."""
    return Response(_page(), media_type="text/html; charset=utf-8", headers=PAGE_HEADERS)


def _review_rubrics(service: Service) -> list[str]:
    """Name the loaded rubrics whose ``review`` section sends rewards for review.

    Each name as a request naming it resolves (its latest version).
    """
    names = sorted({entry.rubric.name for entry in service.catalog.entries()})
    sampler = service.review_sampler
    out = []
    for name in names:
        try:
            rubric = service.catalog.resolve(name)
        except RubricNotFoundError:
            continue
        if sampler.policy(rubric).active:
            out.append(name)
    return out


@router.get("/v1/review/queue", responses=ERRORS)
async def queue_stats(
    service: ServiceDep, caller: Caller, rubric: RubricFilter = None
) -> dict[str, Any]:
    """Count items waiting, leased and done, and labels, per rubric; ``you``: your progress.

    ``review_rubrics`` names the loaded rubrics (only ``rubric``, when given) that send
    rewards for review. When there is none, ``hint`` says so and how a rubric's
    ``review:`` section turns review on; otherwise it is null.
    """
    reviewer = _reviewer(caller)
    stats = await asyncio.to_thread(_queue(service).stats, rubric, reviewer=reviewer)
    sampling = [name for name in _review_rubrics(service) if rubric in (None, name)]
    stats["review_rubrics"] = sampling
    stats["hint"] = None if sampling else review_hint(rubric)
    return stats


@router.post("/v1/review/claim", response_model=ClaimResponse, responses=ERRORS)
async def claim_next(
    service: ServiceDep, caller: Caller, body: ClaimRequest | None = None
) -> ClaimResponse:
    """Lease the oldest waiting item you have not labelled (``item`` is null when none).

    The body is optional: without one (or with ``{}``) the item comes from any rubric.
    """
    reviewer = _reviewer(caller)
    wanted = body.rubric if body is not None else None
    claimed = await asyncio.to_thread(_queue(service).claim, reviewer, rubric=wanted)
    if claimed is None:
        return ClaimResponse(item=None)
    rubric = _rubric(service, claimed.rubric_sha256)
    # Measuring the code (radon) is CPU work: off the event loop.
    item = await asyncio.to_thread(
        _item, claimed, rubric, default_show=service.settings.review_show_scores
    )
    return ClaimResponse(item=item)


@router.post(
    "/v1/review/items/{item_id}/heartbeat", response_model=LeaseResponse, responses=LEASE_ERRORS
)
async def heartbeat(
    item_id: ItemId, body: LeaseRequest, service: ServiceDep, caller: Caller
) -> LeaseResponse:
    """Extend your lease on an item by the lease length."""
    reviewer = _reviewer(caller)
    try:
        expires = await asyncio.to_thread(
            _queue(service).heartbeat, item_id, body.lease_token, reviewer
        )
    except LeaseLostError as e:
        raise _lost(item_id) from e
    return LeaseResponse(lease_expires_at=expires)


@router.post("/v1/review/items/{item_id}/release", status_code=204, responses=LEASE_ERRORS)
async def release(
    item_id: ItemId, body: ReleaseRequest, service: ServiceDep, caller: Caller
) -> Response:
    """Give an item back unlabelled; another reviewer can claim it at once.

    A skip (the default) sends it to the back of your own queue, so your next claim
    is another item while any other is waiting.
    """
    reviewer = _reviewer(caller)
    try:
        await asyncio.to_thread(
            _queue(service).release, item_id, body.lease_token, reviewer, skip=body.skip
        )
    except LeaseLostError as e:
        raise _lost(item_id) from e
    return Response(status_code=204)


@router.post("/v1/review/items/{item_id}/labels", status_code=201, responses=LEASE_ERRORS)
async def submit_label(
    item_id: ItemId, body: LabelRequest, service: ServiceDep, caller: Caller
) -> dict[str, Any]:
    """Label the item you hold (every component and the overall score); the lease ends with it."""
    reviewer = _reviewer(caller)
    queue = _queue(service)
    _complete(await asyncio.to_thread(queue.item_record, item_id), body)
    try:
        await asyncio.to_thread(queue.submit, item_id, body.lease_token, reviewer, _label(body))
    except LeaseLostError as e:
        raise _lost(item_id) from e
    return {"item_id": item_id, "reviewer": reviewer, "status": "stored", "version": 1}


@router.put(
    "/v1/review/items/{item_id}/labels/mine",
    responses={**ERRORS, 404: {"model": ErrorBody, "description": "You have no label there."}},
)
async def edit_label(
    item_id: ItemId, body: LabelFields, service: ServiceDep, caller: Caller
) -> dict[str, Any]:
    """Replace your label of an item with a new version (the old ones are kept)."""
    reviewer = _reviewer(caller)
    queue = _queue(service)
    _complete(await asyncio.to_thread(queue.item_record, item_id), body)
    try:
        version = await asyncio.to_thread(queue.edit, item_id, reviewer, _label(body))
    except LabelNotFoundError as e:
        raise NotFound(str(e), code="label_not_found") from e
    return {"item_id": item_id, "reviewer": reviewer, "status": "stored", "version": version}


@router.get("/v1/review/labels/mine", responses=ERRORS)
async def my_labels(
    service: ServiceDep,
    caller: Caller,
    limit: Annotated[int, Query(ge=1, le=100, description="How many, newest first.")] = 10,
) -> dict[str, Any]:
    """List your latest labels, the most recently submitted or edited first."""
    reviewer = _reviewer(caller)
    rows = await asyncio.to_thread(_queue(service).recent_labels, reviewer, limit)
    return {"labels": rows}


@router.get(
    "/v1/review/items/{item_id}/labels/mine",
    responses={**ERRORS, 404: {"model": ErrorBody, "description": "You have no label there."}},
)
async def my_label(item_id: ItemId, service: ServiceDep, caller: Caller) -> dict[str, Any]:
    """Return an item you labelled, as the page shows it, with every version of your label."""
    reviewer = _reviewer(caller)
    queue = _queue(service)
    try:
        claimed, label = await asyncio.to_thread(queue.labelled_item, item_id, reviewer)
    except LabelNotFoundError as e:
        raise NotFound(str(e), code="label_not_found") from e
    rubric = _rubric(service, claimed.rubric_sha256)
    item = await asyncio.to_thread(
        _item, claimed, rubric, default_show=service.settings.review_show_scores
    )
    item.label = label
    versions = await asyncio.to_thread(queue.label_versions, item_id, reviewer)
    return {"item": item.model_dump(mode="json"), "versions": versions}


@router.get("/v1/review/export", responses=ERRORS)
async def export_labels(
    service: ServiceDep, caller: Caller, rubric: RubricFilter = None
) -> Response:
    """Download every label as JSON Lines (one label per line, oldest first)."""
    _reviewer(caller)
    lines = await asyncio.to_thread(lambda: list(_queue(service).export_jsonl(rubric)))
    return StreamingResponse(
        iter(lines),
        media_type="application/x-ndjson",
        headers={"Content-Disposition": 'attachment; filename="review-labels.jsonl"'},
    )


def _pair(service: Service, row: dict[str, Any]) -> LabelledPair:
    return labelled_pair(
        json.loads(row["record"]),
        inclusion_probability=row["inclusion_probability"],
        verdicts=row["verdicts"],
        overall_score=row["overall_score"],
        hack_types=row["hack_types"],
        reward_range=reward_range(_rubric(service, row["rubric_sha256"])),
    )


@router.get("/v1/review/agreement", responses=ERRORS)
async def agreement_stats(
    service: ServiceDep, caller: Caller, rubric: RubricFilter = None
) -> dict[str, Any]:
    """Grader-vs-reviewer agreement, weighted by inverse inclusion probability.

    Each statistic says ``insufficient_data`` below 50 labels and sits beside the
    counts behind it. Pass/fail: a component passes at its grader kind's threshold
    (stated per component as ``pass_threshold``, and for every kind in
    ``pass_thresholds``; the review page states the same). Each reviewer's latest
    label counts. Overall: the reward before group normalization, mapped from its
    rubric's clip range onto [0, 1].
    """
    _reviewer(caller)

    def compute() -> dict[str, Any]:
        pairs = [_pair(service, row) for row in _queue(service).labels(rubric)]
        return {"rubric": rubric, **agreement_report(pairs)}

    return await asyncio.to_thread(compute)
