"""Dependencies shared by the routes (``Annotated`` aliases, one per concern)."""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable
from typing import Annotated, Any

from fastapi import Depends, Header, Request

from arbiter.api.auth import Principal
from arbiter.api.errors import Invalid
from arbiter.api.service import Service

__all__ = ["Caller", "ServiceDep", "known_query"]


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


def known_query(*names: str) -> Any:
    """Return a dependency that refuses query parameters other than ``names`` (422).

    FastAPI ignores a parameter it does not declare, so ``?opne_only=true``
    silently returned everything; a typo is an error the caller can see.
    """

    def check(request: Request) -> None:
        unknown = sorted(set(request.query_params) - set(names))
        if unknown:
            allowed = ", ".join(names) or "none"
            raise Invalid(
                f"unknown query parameter(s): {', '.join(unknown)}; expected: {allowed}",
                code="unknown_query_parameter",
                errors=[
                    {"path": name, "in": "query", "message": "unknown query parameter"}
                    for name in unknown
                ],
            )

    dependency: Callable[[Request], None] = check
    return Depends(dependency)
