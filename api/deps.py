"""Dependencies shared by the routes (``Annotated`` aliases, one per concern)."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Header, Request

from api.auth import Principal
from api.service import Service

__all__ = ["Caller", "ServiceDep"]


def get_service(request: Request) -> Service:
    """Return the app's service."""
    service: Service = request.app.state.service
    return service


ServiceDep = Annotated[Service, Depends(get_service)]


async def get_principal(
    service: ServiceDep,
    authorization: Annotated[str | None, Header(include_in_schema=False)] = None,
    x_api_key: Annotated[str | None, Header(include_in_schema=False)] = None,
) -> Principal:
    """Authenticate the caller from ``Authorization: Bearer`` or ``X-API-Key``."""
    key = x_api_key
    if authorization is not None:
        scheme, _, value = authorization.partition(" ")
        if scheme.lower() == "bearer" and value.strip():
            key = value.strip()
    return await service.auth.authenticate(key)


Caller = Annotated[Principal, Depends(get_principal)]
