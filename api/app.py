"""The app factory: settings in, a FastAPI app out."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.responses import Response

from api.errors import ApiError, error_response
from api.middleware import ServiceMiddleware
from api.routes import drift, health, keys, review, rewards, rubrics
from api.service import Service
from api.settings import Settings
from arbiter.version import __version__

__all__ = ["create_app"]

logger = logging.getLogger("arbiter.api")


def _validation_errors(exc: RequestValidationError) -> list[dict[str, Any]]:
    out = []
    for err in exc.errors():
        loc = [str(p) for p in err.get("loc", ())]
        if loc and loc[0] in ("body", "query", "header", "path"):
            where, loc = loc[0], loc[1:]
        else:
            where = "body"
        found = err.get("input")
        text = repr(found)
        out.append(
            {
                "in": where,
                "path": ".".join(loc),
                "message": str(err.get("msg", "")),
                "found": text if len(text) <= 80 else text[:77] + "...",
            }
        )
    return out


def create_app(settings: Settings | None = None, *, service: Service | None = None) -> FastAPI:
    """Build the service's app; the store is migrated and rubrics loaded at start-up."""
    settings = settings or Settings()
    service = service or Service(settings)

    @asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        await service.start()
        try:
            yield
        finally:
            await service.stop()

    app = FastAPI(
        title="Arbiter",
        version=__version__,
        description="Rewards for RL post-training: rubrics of graders over HTTP.",
        lifespan=lifespan,
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
        health.router,
        review.router,
        drift.router,
    ):
        app.include_router(router)
    app.add_middleware(
        ServiceMiddleware,
        max_body_bytes=settings.max_body_bytes,
        metrics=service.metrics,
        auth_disabled=settings.auth == "disabled",
    )
    return app
