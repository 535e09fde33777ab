"""Regression cases (reviewer role; admin too): confirmed hacks, dismissals, forced publishes.

A review label that ticks a hack type, or fails a component its grader passed (a
**fooled** component: the grader's score met the pass threshold the review page
states for it), makes the reviewer's case for the item (``arbiter.store.regressions``).
Publishing a new version of the rubric grades its open cases first
(``POST /v1/rubrics``); ``arbiter regressions export`` writes them as a labelled set
for ``arbiter audit --regressions``.

Lists hold open cases unless ``status`` says otherwise, oldest first; an unknown query
parameter is a 422. Times are Unix seconds, as the review routes give them.
"""

from __future__ import annotations

import asyncio
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Query
from fastapi import Path as PathParam
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, StrictStr

from arbiter.api.auth import Principal
from arbiter.api.deps import Caller, ServiceDep, known_query
from arbiter.api.errors import Conflict, NotFound
from arbiter.api.routes.review import REVIEW_ROLES, _storable
from arbiter.api.schemas import ErrorBody
from arbiter.api.service import Service
from arbiter.store.regressions import (
    CaseNotFoundError,
    CaseNotOpenError,
    RegressionCases,
)

router = APIRouter(prefix="/v1/regressions", tags=["regressions"])

ERRORS: dict[int | str, dict[str, object]] = {
    401: {"model": ErrorBody, "description": "No or unknown API key."},
    403: {"model": ErrorBody, "description": "The key is not a reviewer's (or admin's)."},
}
CASE_ERRORS: dict[int | str, dict[str, object]] = {
    **ERRORS,
    404: {"model": ErrorBody, "description": "No case has this id."},
}

# Row ids are 64-bit: a larger number is no case, not an overflow in the driver.
CaseId = Annotated[int, PathParam(ge=1, le=2**63 - 1)]
RubricFilter = Annotated[str | None, Query(max_length=128, description="Only this rubric.")]
Limit = Annotated[int, Query(ge=1, le=5000, description="At most this many, oldest first.")]


class RegressionCase(BaseModel):
    """A confirmed hack, kept to be graded again under every new version of its rubric."""

    id: int
    rubric: str = Field(description="The rubric's name: its new versions are graded on it.")
    rubric_sha256: str = Field(description="The version the logged reward was made under.")
    item_id: int = Field(description="The review item the label judged.")
    label_id: int
    label_version: int = Field(description="The label's version that last set its marks.")
    reviewer: str = Field(description="The reviewer's key id.")
    sample_id: str
    sample: dict[str, Any] | None = Field(
        description="The sample as logged (task, response, metrics, trajectory); null when "
        "the store kept its hash only (such a case cannot be graded again)."
    )
    hack_types: list[str] = Field(description="The hack types the reviewer ticked.")
    flagged_types: list[str] = Field(
        description="Those of them the logged reward's violations flagged: a version that "
        "no longer flags one lets the case through."
    )
    fooled: list[str] = Field(
        description="Components the reviewer failed whose grader score met the pass "
        "threshold the review page states (the grader passed what the reviewer failed)."
    )
    reward: float | None = Field(description="The reward it got when it was logged.")
    status: Literal["open", "dismissed", "retracted"] = Field(
        description="open; dismissed (by a reviewer or admin, with a reason); retracted (its "
        "label no longer marks a hack or a fooled component)."
    )
    created_at: float
    updated_at: float | None
    dismissed_by: str | None
    dismissed_at: float | None
    dismiss_reason: str | None


class RegressionOverride(BaseModel):
    """A rubric version an admin published although it let open cases through."""

    id: int
    rubric: str
    rubric_version: int
    rubric_sha256: str
    forced_by: str = Field(description="The admin key's id.")
    forced_by_name: str = Field(description="The admin key's name when it forced the publish.")
    forced_at: float
    case_ids: list[int]
    cases: list[dict[str, Any]] = Field(
        description="Each case let through as the version graded it: case_id, hack_types, "
        "reward, logged_reward, ceiling, unflagged, reasons."
    )
    ceiling: float | None


def _no_nul(text: str) -> str:
    # PostgreSQL's text cannot hold NUL: a 422 here rather than a 500 at the update.
    if "\x00" in text:
        raise ValueError("text must not contain NUL characters")
    return text


class DismissRequest(BaseModel):
    """Why the case is not a hack to keep (shown with the case)."""

    model_config = ConfigDict(extra="forbid")

    reason: Annotated[
        StrictStr,
        Field(min_length=1, max_length=10_000, pattern=r"\S"),
        AfterValidator(_storable),
        AfterValidator(_no_nul),
    ]


def _cases(service: Service) -> RegressionCases:
    return service.regressions.cases


def _reviewer(caller: Principal) -> str:
    caller.require(*REVIEW_ROLES)
    return caller.client


def _case(row: dict[str, Any]) -> dict[str, Any]:
    return {**row, "rubric": row["rubric_name"]}


def _override(row: dict[str, Any]) -> dict[str, Any]:
    return {**row, "rubric": row["rubric_name"]}


@router.get(
    "",
    response_model=list[RegressionCase],
    responses=ERRORS,
    dependencies=[known_query("rubric", "status", "limit")],
)
async def list_cases(
    service: ServiceDep,
    caller: Caller,
    rubric: RubricFilter = None,
    status: Annotated[
        Literal["open", "dismissed", "retracted", "all"],
        Query(description="Which to list: open (the default), dismissed, retracted or all."),
    ] = "open",
    limit: Limit = 500,
) -> list[dict[str, Any]]:
    """List regression cases, oldest first: the open ones unless ``status`` says otherwise."""
    _reviewer(caller)
    rows = await asyncio.to_thread(
        _cases(service).cases, rubric, status=None if status == "all" else status, limit=limit
    )
    return [_case(row) for row in rows]


# Before /{case_id}: "overrides" is no case id.
@router.get(
    "/overrides",
    response_model=list[RegressionOverride],
    responses=ERRORS,
    dependencies=[known_query("rubric", "limit")],
)
async def list_overrides(
    service: ServiceDep, caller: Caller, rubric: RubricFilter = None, limit: Limit = 500
) -> list[dict[str, Any]]:
    """List the rubric versions published over failing regression cases: who, when, which."""
    _reviewer(caller)
    rows = await asyncio.to_thread(_cases(service).overrides, rubric, limit=limit)
    return [_override(row) for row in rows]


@router.get(
    "/{case_id}",
    response_model=RegressionCase,
    responses=CASE_ERRORS,
    dependencies=[known_query()],
)
async def get_case(case_id: CaseId, service: ServiceDep, caller: Caller) -> dict[str, Any]:
    """Return one regression case."""
    _reviewer(caller)
    try:
        row = await asyncio.to_thread(_cases(service).case, case_id)
    except CaseNotFoundError as e:
        raise NotFound(str(e), code="case_not_found") from e
    return _case(row)


@router.post(
    "/{case_id}/dismiss",
    response_model=RegressionCase,
    responses={
        **CASE_ERRORS,
        409: {"model": ErrorBody, "description": "The case is already dismissed, or retracted."},
    },
)
async def dismiss_case(
    case_id: CaseId, body: DismissRequest, service: ServiceDep, caller: Caller
) -> dict[str, Any]:
    """Dismiss an open case, with a reason: it is kept, and no longer graded on publish."""
    reviewer = _reviewer(caller)
    try:
        row = await asyncio.to_thread(_cases(service).dismiss, case_id, reviewer, body.reason)
    except CaseNotFoundError as e:
        raise NotFound(str(e), code="case_not_found") from e
    except CaseNotOpenError as e:
        raise Conflict(str(e), code="case_not_open") from e
    return _case(row)
