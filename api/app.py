"""The app factory: settings in, a FastAPI app out."""

from __future__ import annotations

import gc
import json
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from importlib import resources
from typing import Any

import orjson
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.openapi.docs import get_redoc_html, get_swagger_ui_html
from fastapi.openapi.utils import get_openapi
from sqlalchemy.exc import InterfaceError, OperationalError
from sqlalchemy.exc import TimeoutError as PoolTimeoutError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.responses import HTMLResponse, Response
from starlette.staticfiles import StaticFiles

from arbiter.api.body import DOCUMENTED_BODIES
from arbiter.api.errors import ApiError, error_response
from arbiter.api.middleware import ServiceMiddleware
from arbiter.api.routes import (
    drift,
    health,
    keys,
    regressions,
    repositories,
    review,
    rewards,
    rubrics,
    runs,
)
from arbiter.api.service import Service
from arbiter.api.settings import Settings
from arbiter.version import __version__

__all__ = ["create_app"]

logger = logging.getLogger("arbiter.api")


#: The longest ``found`` of a validation error, in characters of JSON text.
FOUND_MAX = 80
#: Characters of the document shown before and after where JSON decoding stopped.
_AROUND_BEFORE, _AROUND_AFTER = 24, 16


def _found(value: Any) -> str:
    """Return ``value`` as JSON text, cut to :data:`FOUND_MAX` characters (ending in "…").

    orjson first; the standard library for what orjson refuses (integers beyond 64
    bits, lone surrogates, which it escapes); anything else JSON has no type for
    (bytes of a body that was not JSON) as a string.
    """
    try:
        text = orjson.dumps(value, default=_plain).decode()
    except (orjson.JSONEncodeError, TypeError):
        try:
            text = json.dumps(value, default=_plain)
        except (TypeError, ValueError, RecursionError):
            text = json.dumps(repr(value)[:FOUND_MAX])
    return text if len(text) <= FOUND_MAX else text[: FOUND_MAX - 1] + "\u2026"


def _plain(value: Any) -> str:
    if isinstance(value, bytes | bytearray):
        return bytes(value).decode("utf-8", "replace")
    return str(value)


def _json_syntax_error(err: Any, body: Any) -> dict[str, Any]:
    """Describe a body that is not JSON: line, column (1-based, as ``json`` counts), why.

    ``err`` is the ``json_invalid`` entry FastAPI (or ``arbiter.api.body``) raised,
    located at a character offset of ``body``, the decoded document.
    """
    if isinstance(body, bytes | bytearray):
        body = bytes(body).decode("utf-8", "replace")
    doc = body if isinstance(body, str) else ""
    loc = err.get("loc", ())
    offset = loc[1] if len(loc) > 1 and isinstance(loc[1], int) else 0
    pos = min(max(offset, 0), len(doc))
    line = doc.count("\n", 0, pos) + 1
    column = pos - doc.rfind("\n", 0, pos)
    reason = str((err.get("ctx") or {}).get("error") or err.get("msg") or "not JSON")
    reason = reason[:1].lower() + reason[1:]
    return {
        "in": "body",
        "path": "",
        "line": line,
        "column": column,
        "message": f"invalid JSON at line {line}, column {column}: {reason}",
        "found": _found(doc[max(pos - _AROUND_BEFORE, 0) : pos + _AROUND_AFTER]),
    }


def _validation_errors(exc: RequestValidationError) -> list[dict[str, Any]]:
    """Turn FastAPI's validation errors into the entries of a 422's ``errors``.

    Each names where (``in``: body, query, header or path; ``path``: the dotted
    field), what is wrong (``message``) and what was there (``found``: the value as
    JSON text, cut to :data:`FOUND_MAX` characters). A body that is not JSON is one
    entry with its ``line`` and ``column`` and, as ``found``, the text around them.
    """
    out = []
    for err in exc.errors():
        if err.get("type") == "json_invalid":
            out.append(_json_syntax_error(err, exc.body))
            continue
        loc = [str(p) for p in err.get("loc", ())]
        if loc and loc[0] in ("body", "query", "header", "path"):
            where, loc = loc[0], loc[1:]
        else:
            where = "body"
        out.append(
            {
                "in": where,
                "path": ".".join(loc),
                "message": str(err.get("msg", "")),
                "found": _found(err.get("input")),
            }
        )
    return out


#: Allocations (net, of objects the collector tracks) between young collections.
#: Python's default of 700 had the collector run every few samples of a batch.
GC_YOUNG_THRESHOLD = 10_000
_gc_settled = False


def _settle_garbage_collector() -> None:
    """Keep the cyclic garbage collector off the request path (once per process).

    Everything loaded at start-up (modules, rubrics, the app, the store's
    engine) lives as long as the process, yet every full collection would walk
    it again, on the request path. Freezing moves it out of the collector's
    sight; a larger young threshold
    makes the collections of request garbage rarer. Reference counting still
    frees everything that is not in a cycle, as before.
    """
    global _gc_settled
    if _gc_settled:
        return
    _gc_settled = True
    gc.collect()
    gc.freeze()
    _, middle, old = gc.get_threshold()
    gc.set_threshold(GC_YOUNG_THRESHOLD, middle, old)


def _with_hand_parsed_bodies(app: FastAPI) -> None:
    """Make ``app.openapi`` also list the schemas of the bodies routes parse themselves."""

    def openapi() -> dict[str, Any]:
        if app.openapi_schema:
            return app.openapi_schema
        schema = get_openapi(
            title=app.title,
            version=app.version,
            description=app.description,
            routes=app.routes,
        )
        components = schema.setdefault("components", {}).setdefault("schemas", {})
        for model in DOCUMENTED_BODIES:
            body = model.model_json_schema(ref_template="#/components/schemas/{model}")
            for name, definition in body.pop("$defs", {}).items():
                components.setdefault(name, definition)
            components[model.__name__] = body
        app.openapi_schema = schema
        return schema

    app.openapi = openapi  # type: ignore[method-assign]


#: Where the API pages' scripts, styles and icon are served from.
DOCS_ASSETS = "/docs/assets"
#: The API pages may load from this server only. ReDoc's bundle shows Redocly's logo
#: from its CDN whatever the options: the browser is not to ask for it (offline, the
#: request would hang until it failed); the page hides an image that does not load.
DOCS_POLICY = (
    "default-src 'self'; script-src 'self' 'unsafe-inline'; style-src 'self' 'unsafe-inline'; "
    "img-src 'self' data:; font-src 'self' data:; worker-src 'self' blob:; "
    "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)


def _offline_docs(app: FastAPI) -> None:
    """Serve /docs (Swagger UI) and /redoc with their files from this server, not a CDN.

    The files ship in the ``fastapi-offline`` package (a dependency of the server
    extra), so the pages render on a cluster with no way out. Like ``/openapi.json``
    they need no key: they describe the API, and every call made from them needs one.
    """
    files = resources.files("fastapi_offline") / "static"
    app.mount(DOCS_ASSETS, StaticFiles(directory=str(files)), name="docs-assets")
    openapi_url = app.openapi_url or "/openapi.json"

    def local_only(page: HTMLResponse) -> HTMLResponse:
        page.headers["Content-Security-Policy"] = DOCS_POLICY
        return page

    @app.get("/docs", include_in_schema=False)
    async def swagger_ui(request: Request) -> HTMLResponse:
        root = request.scope.get("root_path", "")
        page = get_swagger_ui_html(
            openapi_url=f"{root}{openapi_url}",
            title=f"{app.title} - Swagger UI",
            swagger_js_url=f"{root}{DOCS_ASSETS}/swagger-ui-bundle.js",
            swagger_css_url=f"{root}{DOCS_ASSETS}/swagger-ui.css",
            swagger_favicon_url=f"{root}{DOCS_ASSETS}/favicon.png",
            # No badge from the online validator (swagger.io).
            swagger_ui_parameters={"validatorUrl": None},
        )
        return local_only(page)

    @app.get("/redoc", include_in_schema=False)
    async def redoc(request: Request) -> HTMLResponse:
        root = request.scope.get("root_path", "")
        page = get_redoc_html(
            openapi_url=f"{root}{openapi_url}",
            title=f"{app.title} - ReDoc",
            redoc_js_url=f"{root}{DOCS_ASSETS}/redoc.standalone.js",
            redoc_favicon_url=f"{root}{DOCS_ASSETS}/favicon.png",
            with_google_fonts=False,
        )
        return local_only(page)


def create_app(settings: Settings | None = None, *, service: Service | None = None) -> FastAPI:
    """Build the service's app; the store is migrated and rubrics loaded at start-up."""
    settings = settings or Settings()
    service = service or Service(settings)

    @asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        await service.start()
        _settle_garbage_collector()
        try:
            yield
        finally:
            await service.stop()

    app = FastAPI(
        title="Arbiter",
        version=__version__,
        description="Rewards for RL post-training: rubrics of graders over HTTP.",
        lifespan=lifespan,
        # Served by _offline_docs instead, from files installed with the server.
        docs_url=None,
        redoc_url=None,
    )
    app.state.service = service

    @app.exception_handler(ApiError)
    async def _api_error(_request: Request, exc: ApiError) -> Response:
        return exc.response()

    @app.exception_handler(RequestValidationError)
    async def _invalid(_request: Request, exc: RequestValidationError) -> Response:
        errors = _validation_errors(exc)
        first = errors[0] if errors else {"path": "", "message": "invalid"}
        where = first["path"] or first.get("in", "body")
        message = f"{where}: {first['message']}"
        if len(errors) > 1:
            message += f" (and {len(errors) - 1} more)"
        return error_response(422, "invalid_request", message, errors=errors)

    @app.exception_handler(StarletteHTTPException)
    async def _http(_request: Request, exc: StarletteHTTPException) -> Response:
        code = {404: "not_found", 405: "method_not_allowed", 400: "bad_request"}.get(
            exc.status_code, "http_error"
        )
        return error_response(
            exc.status_code, code, str(exc.detail), headers=getattr(exc, "headers", None)
        )

    async def _store_down(_request: Request, exc: Exception) -> Response:
        # A store that cannot be reached, a lock or statement timeout, a full
        # disk: the request may be retried as it is. Routes that write say so
        # themselves; this covers every other read or write of the store.
        logger.warning("store error on a request: %s", str(exc).splitlines()[0][:200])
        return error_response(
            503,
            "store_unavailable",
            "the store could not be reached; retry",
            headers=service.grading.retry_after(),
        )

    for store_error in (OperationalError, InterfaceError, PoolTimeoutError):
        app.add_exception_handler(store_error, _store_down)

    @app.exception_handler(Exception)
    async def _crash(_request: Request, exc: Exception) -> Response:
        logger.error("unhandled error", exc_info=exc)
        return error_response(
            500, "internal_error", "the service failed on this request; it was logged"
        )

    for router in (
        rewards.router,
        rubrics.router,
        keys.router,
        repositories.router,
        runs.router,
        health.router,
        review.router,
        regressions.router,
        drift.router,
        drift.page_router,
    ):
        app.include_router(router)
    _with_hand_parsed_bodies(app)
    _offline_docs(app)
    app.add_middleware(
        ServiceMiddleware,
        max_body_bytes=settings.max_body_bytes,
        metrics=service.metrics,
        auth_disabled=settings.auth == "disabled",
    )
    return app
