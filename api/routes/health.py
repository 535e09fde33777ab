"""Liveness, readiness and Prometheus metrics (no auth: scraped from inside the network)."""

from __future__ import annotations

import asyncio

import orjson
from fastapi import APIRouter
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from starlette.responses import Response

from api.deps import ServiceDep

router = APIRouter(tags=["health"])


@router.get("/healthz")
async def healthz() -> dict[str, str]:
    """Answer while the process serves at all."""
    return {"status": "ok"}


@router.get("/readyz", responses={503: {"description": "A dependency is not ready."}})
async def readyz(service: ServiceDep) -> Response:
    """Check what grading needs: store, rubrics, graders in use; 503 with the failing checks."""
    checks: dict[str, str] = {}
    try:
        await asyncio.wait_for(asyncio.to_thread(service.store.ping), timeout=5)
        checks["store"] = "ok"
    except Exception as e:
        checks["store"] = f"unreachable: {type(e).__name__}"
    else:
        # Reads can work while writes fail (a lock held elsewhere, a full disk):
        # not ready until a write succeeds again, which this retries.
        failure = await service.grading.probe_write(timeout_s=5)
        if failure is not None:
            checks["store"] = f"writes failing: {failure}"
    for grader in service.registry.built():
        try:
            problem = await asyncio.wait_for(grader.readiness(), timeout=5)
        except Exception as e:  # a readiness probe that fails is itself the answer
            problem = f"readiness check failed: {type(e).__name__}"
        checks[f"grader:{grader.name}"] = problem or "ok"
    count = len(service.catalog.entries())
    checks["rubrics"] = f"{count} loaded" if count else "none loaded"
    invalid = service.catalog.file_errors()
    if invalid:
        checks["invalid_rubric_files"] = ", ".join(sorted(str(p) for p in invalid))
    graders_ok = all(v == "ok" for k, v in checks.items() if k.startswith("grader:"))
    ready = service.started and checks["store"] == "ok" and count > 0 and graders_ok
    body = orjson.dumps({"status": "ready" if ready else "not_ready", "checks": checks})
    return Response(body, status_code=200 if ready else 503, media_type="application/json")


@router.get("/metrics")
async def metrics(service: ServiceDep) -> Response:
    """Prometheus text exposition."""
    return Response(generate_latest(service.metrics.registry), media_type=CONTENT_TYPE_LATEST)
