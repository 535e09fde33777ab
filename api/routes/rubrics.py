"""Rubric management: list versions, read one, register a new one (admin)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query
from starlette.responses import Response

from arbiter.api.deps import Caller, ServiceDep
from arbiter.api.errors import NotFound
from arbiter.api.schemas import (
    ErrorBody,
    RubricCaution,
    RubricCreate,
    RubricCreated,
    RubricInfo,
    RubricText,
)
from arbiter.rubrics.catalog import CatalogEntry
from arbiter.rubrics.errors import RubricNotFoundError

router = APIRouter(prefix="/v1/rubrics", tags=["rubrics"])
ERRORS: dict[int | str, dict[str, object]] = {
    401: {"model": ErrorBody},
    403: {"model": ErrorBody},
    404: {"model": ErrorBody},
    409: {"model": ErrorBody},
    422: {"model": ErrorBody},
}


def _info(service: ServiceDep, entry: CatalogEntry) -> dict[str, object]:
    rubric = entry.rubric
    latest = service.catalog.resolve(rubric.name)
    return {
        "name": rubric.name,
        "version": rubric.version,
        "sha256": rubric.sha256,
        "current": service.catalog.is_current(entry),
        "latest": latest.sha256 == rubric.sha256,
        "origin": entry.origin,
    }


@router.get("", response_model=list[RubricInfo], responses=ERRORS)
async def list_rubrics(service: ServiceDep, caller: Caller) -> list[dict[str, object]]:
    """List every rubric version the service knows, with its sha256."""
    return [_info(service, entry) for entry in service.catalog.entries()]


@router.get("/{sha256}", response_model=RubricText, responses=ERRORS)
async def get_rubric(sha256: str, service: ServiceDep, caller: Caller) -> dict[str, object]:
    """Return one rubric version, with its YAML, by sha256."""
    try:
        entry = service.catalog.by_sha256(sha256)
    except RubricNotFoundError as e:
        raise NotFound(str(e), code="rubric_not_found") from e
    return {**_info(service, entry), "text": entry.text, "resolved": entry.rubric.canonical()}


@router.post("", response_model=RubricCreated, status_code=201, responses=ERRORS)
async def register_rubric(
    body: RubricCreate,
    service: ServiceDep,
    caller: Caller,
    force: Annotated[
        bool,
        Query(description="As the body's force: publish over open regression cases (recorded)."),
    ] = False,
) -> Response:
    """Register a new rubric version (admin); errors name line and column, as the CLI's do.

    A new version is first graded on the rubric's open regression cases (confirmed
    hacks): one it lets through (a reward above the ceiling for hacks, or a hack type
    no longer flagged) is a 409 ``regression_failed`` naming each case, unless
    ``force`` is set, in the body or the query; a forced publish is recorded (``GET
    /v1/regressions/overrides``).
    """
    rubric, created, check = await service.registration.register(
        body.yaml, caller, force=body.force or force
    )
    warnings = [
        RubricCaution(line=w.line, column=w.column, path=w.path, message=w.message)
        for w in rubric.warnings
    ]
    content = RubricCreated(
        rubric=rubric.identity, created=created, warnings=warnings, regressions=check
    ).model_dump_json()
    return Response(content, status_code=201 if created else 200, media_type="application/json")
