"""API keys (admin): create, list, revoke."""

from __future__ import annotations

import asyncio

from fastapi import APIRouter
from starlette.responses import Response

from arbiter.api.deps import Caller, ServiceDep
from arbiter.api.errors import Conflict, NotFound
from arbiter.api.schemas import ErrorBody, KeyCreate, KeyCreated, KeyInfo
from arbiter.store.db import LastAdminKeyError

router = APIRouter(prefix="/v1/keys", tags=["keys"])
ERRORS: dict[int | str, dict[str, object]] = {401: {"model": ErrorBody}, 403: {"model": ErrorBody}}


@router.post("", response_model=KeyCreated, status_code=201, responses=ERRORS)
async def create_key(body: KeyCreate, service: ServiceDep, caller: Caller) -> KeyCreated:
    """Create a key; the response is the only time the key is shown."""
    caller.require("admin")
    record, key = await asyncio.to_thread(service.store.create_key, body.name, body.role)
    return KeyCreated(**_fields(record), key=key)


@router.get("", response_model=list[KeyInfo], responses=ERRORS)
async def list_keys(service: ServiceDep, caller: Caller) -> list[KeyInfo]:
    """List keys (never the keys themselves)."""
    caller.require("admin")
    records = await asyncio.to_thread(service.store.list_keys)
    return [KeyInfo(**_fields(r)) for r in records]


@router.delete(
    "/{key_id}",
    status_code=204,
    responses={**ERRORS, 404: {"model": ErrorBody}, 409: {"model": ErrorBody}},
)
async def revoke_key(key_id: str, service: ServiceDep, caller: Caller) -> Response:
    """Revoke a key; it stops working within a second everywhere (never the last admin key)."""
    caller.require("admin")
    try:
        revoked = await asyncio.to_thread(service.store.revoke_key, key_id)
    except LastAdminKeyError as e:
        raise Conflict(
            f"{key_id!r} is the last live admin key; create another admin key first",
            code="last_admin_key",
        ) from e
    if not revoked:
        raise NotFound(f"no live key with id {key_id!r}", code="key_not_found")
    service.auth.forget()
    return Response(status_code=204)


def _fields(record: object) -> dict[str, object]:
    return {
        name: getattr(record, name) for name in ("id", "name", "role", "created_at", "revoked_at")
    }
