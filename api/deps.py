"""Dependencies shared by the routes (``Annotated`` aliases, one per concern)."""

from __future__ import annotations

import base64
import binascii
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
    """Authenticate the caller from ``Authorization: Bearer``, ``X-API-Key`` or HTTP Basic.

    Basic carries the key as its password (the user name is ignored): clients
    that send no headers of their own, such as OpenRLHF's, send it when the URL
    carries userinfo (``http://trainer:KEY@host/get_reward``). It is the same key
    checked the same way, so the header paths lose nothing.
    """
    key = x_api_key
    if authorization is not None:
        scheme, _, value = authorization.partition(" ")
        if scheme.lower() == "bearer" and value.strip():
            key = value.strip()
        elif scheme.lower() == "basic" and value.strip():
            key = _basic_password(value.strip())
    return await service.auth.authenticate(key)


def _basic_password(token: str) -> str | None:
    """Return the password of a Basic credential, or ``None`` when it is malformed."""
    try:
        decoded = base64.b64decode(token, validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        return None
    _user, sep, password = decoded.partition(":")
    return password if sep and password else None


Caller = Annotated[Principal, Depends(get_principal)]
