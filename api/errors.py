"""HTTP errors as JSON: a machine-readable ``code`` and a human ``message``.

Exceptions::

    ApiError                    any error the service answers on purpose
    ├── Unauthorized  (401)     no key, or a key that is unknown or revoked
    ├── Forbidden     (403)     a valid key whose role may not do this
    ├── NotFound      (404)     no such rubric, key or record
    ├── Conflict      (409)     same idempotency key in flight; version reused with new content
    ├── TooLarge      (413)     body or batch over the limit
    ├── Invalid       (422)     a request that does not validate (field paths listed)
    ├── Busy          (429)     over the in-flight bound or the key's quota; Retry-After set
    └── Unavailable   (503)     the store is unreachable; Retry-After set
"""

from __future__ import annotations

from typing import Any

import orjson
from starlette.responses import Response

__all__ = [
    "ApiError",
    "Busy",
    "Conflict",
    "Forbidden",
    "Invalid",
    "NotFound",
    "TooLarge",
    "Unauthorized",
    "Unavailable",
    "error_response",
]


def error_response(
    status: int,
    code: str,
    message: str,
    *,
    errors: list[dict[str, Any]] | None = None,
    headers: dict[str, str] | None = None,
) -> Response:
    """Build the JSON error body every error of the service uses."""
    body: dict[str, Any] = {"code": code, "message": message}
    if errors is not None:
        body["errors"] = errors
    return Response(
        orjson.dumps(body), status_code=status, media_type="application/json", headers=headers
    )


class ApiError(Exception):
    """An error answered with ``status`` and a JSON body."""

    status = 500
    code = "error"

    def __init__(
        self,
        message: str,
        *,
        code: str | None = None,
        errors: list[dict[str, Any]] | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.code = code or type(self).code
        self.errors = errors
        self.headers = headers

    def response(self) -> Response:
        """Render this error."""
        return error_response(
            self.status, self.code, self.message, errors=self.errors, headers=self.headers
        )


class Unauthorized(ApiError):
    """No valid API key."""

    status = 401
    code = "unauthorized"


class Forbidden(ApiError):
    """The key's role may not do this."""

    status = 403
    code = "forbidden"


class NotFound(ApiError):
    """Nothing by that name."""

    status = 404
    code = "not_found"


class Conflict(ApiError):
    """The request conflicts with one in flight or stored."""

    status = 409
    code = "conflict"


class TooLarge(ApiError):
    """Body or batch over the limit."""

    status = 413
    code = "too_large"


class Invalid(ApiError):
    """The request does not validate."""

    status = 422
    code = "invalid_request"


class Busy(ApiError):
    """Over capacity: retry after the given seconds."""

    status = 429
    code = "busy"


class Unavailable(ApiError):
    """A dependency is down: retry after the given seconds."""

    status = 503
    code = "unavailable"
