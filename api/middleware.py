"""One pure-ASGI middleware: request id, body-size limit, access log and request metrics.

Pure ASGI rather than Starlette's BaseHTTPMiddleware: it adds no task per
request, at the rates trainers send.

Refusals: a grading request (``POST /v1/rewards``, ``POST /get_reward``) answered
4xx or 503 counts in ``arbiter_rejections_total`` by its error ``code``, read from
the answer itself, so every refusal counts wherever it was decided (the body limit
here, authentication, validation, a rubric not found, a store that is down), not
only the admission bound's.
"""

from __future__ import annotations

import logging
import time
import uuid
from typing import Any

import orjson
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from arbiter.api.errors import error_response
from arbiter.api.logs import request_id_var
from arbiter.api.metrics import Metrics

__all__ = ["ServiceMiddleware"]

access = logging.getLogger("arbiter.access")

#: The paths whose refusals count as rejected grading requests.
GRADING_PATHS = frozenset({"/v1/rewards", "/get_reward"})
#: Refusals the grading pipeline counts itself when it decides them (admission).
_COUNTED_AT_SOURCE = frozenset({"key_quota", "server_busy", "cluster_busy"})
#: Enough of an error body to read its code.
_ERROR_PEEK_BYTES = 4096
#: Paths whose bodies are small by nature (a rubric is a few kilobytes): a larger one
#: is refused before the event loop spends time decoding it (a 25 MB rubric took it
#: half a second, with every probe waiting behind it).
SMALL_BODY_PATHS = {"/v1/rubrics": 1 << 20, "/v1/keys": 64 << 10}


def _refusal(status: int, body: bytes) -> str | None:
    """Return the reason a grading request was refused, or ``None`` if it was not."""
    if not (400 <= status < 500 or status == 503):
        return None
    try:
        code = orjson.loads(body).get("code")
    except (orjson.JSONDecodeError, AttributeError):
        code = None
    return code if isinstance(code, str) and code else f"http_{status}"


class ServiceMiddleware:
    """Wrap every HTTP request of the app."""

    def __init__(
        self, app: ASGIApp, *, max_body_bytes: int, metrics: Metrics, auth_disabled: bool
    ) -> None:
        self.app = app
        self.max_body_bytes = max_body_bytes
        self.metrics = metrics
        self.auth_disabled = auth_disabled

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Serve one request."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = dict(scope.get("headers") or [])
        request_id = headers.get(b"x-request-id", b"").decode("latin-1")[:64] or uuid.uuid4().hex
        token = request_id_var.set(request_id)
        started = time.perf_counter()
        status = 500
        limit = self.max_body_bytes
        if scope.get("method") == "POST":
            limit = min(limit, SMALL_BODY_PATHS.get(scope.get("path", ""), limit))
        grading = scope.get("method") == "POST" and scope.get("path") in GRADING_PATHS
        error_body = bytearray()

        declared = headers.get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > limit:
            response = error_response(
                413, "body_too_large", f"the body has {int(declared)} bytes; the limit is {limit}"
            )
            response.headers["x-request-id"] = request_id
            await response(scope, receive, send)
            if grading:
                self.metrics.rejections.labels(reason="body_too_large").inc()
            self._finish(scope, 413, started)
            request_id_var.reset(token)
            return

        received = 0
        too_large = False
        started_response = False

        async def limited_receive() -> Message:
            nonlocal received, too_large
            if too_large:
                return {"type": "http.disconnect"}
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > limit:
                    # Tell the app the client went away (it stops reading); the
                    # 413 is sent below, whatever the app makes of the disconnect.
                    too_large = True
                    return {"type": "http.disconnect"}
            return message

        async def send_with_id(message: Message) -> None:
            nonlocal status, started_response
            if too_large:
                return  # the app's own answer to the "disconnect" is dropped
            if message["type"] == "http.response.start":
                started_response = True
                status = message["status"]
                extra: list[tuple[bytes, bytes]] = [(b"x-request-id", request_id.encode("latin-1"))]
                if self.auth_disabled:
                    extra.append((b"x-arbiter-auth", b"disabled"))
                message["headers"] = [*message.get("headers", []), *extra]
            elif grading and status >= 400 and len(error_body) < _ERROR_PEEK_BYTES:
                error_body.extend(message.get("body", b"")[:_ERROR_PEEK_BYTES])
            await send(message)

        try:
            try:
                await self.app(scope, limited_receive, send_with_id)
            except Exception:
                if not too_large:
                    raise
            if too_large and not started_response:
                status = 413
                response = error_response(413, "body_too_large", f"the body exceeds {limit} bytes")
                response.headers["x-request-id"] = request_id
                await response(scope, receive, send)
                error_body[:] = b'{"code": "body_too_large"}'
        finally:
            if grading:
                reason = _refusal(status, bytes(error_body))
                if reason is not None and reason not in _COUNTED_AT_SOURCE:
                    self.metrics.rejections.labels(reason=reason).inc()
            self._finish(scope, status, started)
            request_id_var.reset(token)

    def _finish(self, scope: Scope, status: int, started: float) -> None:
        elapsed = time.perf_counter() - started
        route = self._route(scope)
        self.metrics.requests.labels(route=route, status=str(status)).inc()
        self.metrics.request_latency.labels(route=route).observe(elapsed)
        extra: dict[str, Any] = {
            "method": scope.get("method"),
            "path": scope.get("path"),
            "status": status,
            "duration_ms": round(elapsed * 1000, 3),
        }
        access.info("%s %s %d", scope.get("method"), scope.get("path"), status, extra=extra)

    @staticmethod
    def _route(scope: Scope) -> str:
        # The matched route's template keeps label cardinality low (no ids in paths).
        path = getattr(scope.get("route"), "path", None)
        if path:
            return str(path)
        endpoint = scope.get("endpoint")
        return getattr(endpoint, "__name__", "unmatched")
