"""Repository snapshots: uploaded once as a tarball, referenced by id in repository tasks."""

from __future__ import annotations

import asyncio
from functools import lru_cache

from fastapi import APIRouter, Request
from pydantic import BaseModel
from starlette.responses import Response

from arbiter.api.deps import Caller
from arbiter.api.errors import Invalid, NotFound
from arbiter.api.schemas import ErrorBody
from arbiter.graders.repository.snapshots import Snapshot, SnapshotError, SnapshotStore

router = APIRouter(prefix="/v1/repositories", tags=["repositories"])
ERRORS: dict[int | str, dict[str, object]] = {
    401: {"model": ErrorBody},
    403: {"model": ErrorBody},
    404: {"model": ErrorBody},
    413: {"model": ErrorBody},
    422: {"model": ErrorBody},
}


class SnapshotInfo(BaseModel):
    """A stored snapshot: its id (what a task's ``repository`` names) and its size."""

    id: str
    files: int
    bytes: int


@lru_cache(maxsize=1)
def _store() -> SnapshotStore:
    # The store the graders read (ARBITER_REPOSITORY_STORE): one per process.
    return SnapshotStore()


@router.post("", response_model=SnapshotInfo, status_code=201, responses=ERRORS)
async def upload(request: Request, caller: Caller) -> SnapshotInfo:
    """Store a repository sent as a ``.tar.gz`` body; the same tree twice is one snapshot."""
    caller.require("trainer")
    body = await request.body()
    try:
        snapshot = await asyncio.to_thread(_store().add_tarball, body)
    except SnapshotError as e:
        raise Invalid(str(e), code="invalid_snapshot") from e
    return SnapshotInfo(id=snapshot.id, files=snapshot.files, bytes=snapshot.bytes)


@router.get("/{snapshot_id}", response_model=SnapshotInfo, responses=ERRORS)
async def describe(snapshot_id: str, caller: Caller) -> SnapshotInfo:
    """Say whether this service holds a snapshot, and its size."""
    caller.require("trainer")
    snapshot = await asyncio.to_thread(_local, snapshot_id)
    return SnapshotInfo(id=snapshot.id, files=snapshot.files, bytes=snapshot.bytes)


@router.get(
    "/{snapshot_id}/tarball", responses={**ERRORS, 200: {"content": {"application/gzip": {}}}}
)
async def tarball(snapshot_id: str, caller: Caller) -> Response:
    """The snapshot as a ``.tar.gz``: what a grading node that lacks it fetches, once."""
    caller.require("trainer")
    await asyncio.to_thread(_local, snapshot_id)
    data = await asyncio.to_thread(_store().tarball, snapshot_id)
    return Response(data, media_type="application/gzip")


def _local(snapshot_id: str) -> Snapshot:
    if not snapshot_id.startswith("sha256:"):
        raise NotFound(f"{snapshot_id!r} is not a snapshot id", code="snapshot_not_found")
    meta = _store().root / "snapshots" / snapshot_id.split(":", 1)[1] / "meta.json"
    if not meta.exists():
        raise NotFound(f"no snapshot {snapshot_id} here", code="snapshot_not_found")
    try:
        return _store().get(snapshot_id)
    except SnapshotError as e:
        raise NotFound(str(e), code="snapshot_not_found") from e
