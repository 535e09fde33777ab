"""Liveness, readiness and Prometheus metrics (no auth: scraped from inside the network)."""

from __future__ import annotations

import asyncio
import logging

import orjson
from fastapi import APIRouter
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from starlette.responses import Response

from arbiter.api.deps import ServiceDep

router = APIRouter(tags=["health"])
logger = logging.getLogger("arbiter.metrics")


@router.get("/healthz")
async def healthz() -> dict[str, str]:
    """Answer while the process serves at all."""
    return {"status": "ok"}


@router.get("/readyz", responses={503: {"description": "A dependency is not ready."}})
async def readyz(service: ServiceDep) -> Response:
    """Check what grading needs: store, rubrics, graders in use; 503 with the failing checks.

    Each declared model's state is listed too (``model:reward_model:NAME``:
    ``ok``, ``not loaded``, ``unavailable: <reason>``), without making the
    service unready: a model that cannot load fails its own components only.
    """
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
    if service.models is not None:
        # Listed, not required: an unusable model fails its own components typed
        # (they abstain) while every other rubric is served.
        checks.update({f"model:{k}": v for k, v in service.models.states().items()})
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
    """Prometheus text exposition.

    Readiness, failing store writes and the review queue's depth are read at
    scrape time: cheap state the service already keeps, and one grouped count of
    the review queue (a store that cannot answer leaves the last counts).
    """
    m = service.metrics
    failing = service.grading.write_failure is not None
    m.store_writes_failing.set(1 if failing else 0)
    m.ready.set(1 if service.started and not failing and service.catalog.entries() else 0)
    try:
        stats = await asyncio.wait_for(
            asyncio.to_thread(service.review_sampler.queue.stats), timeout=5
        )
    except Exception:  # a scrape never fails for the queue's sake: the store is checked above
        logger.warning("review queue counts unavailable for this scrape", exc_info=True)
    else:
        m.gauge_review_queue(stats)
    return Response(generate_latest(m.registry), media_type=CONTENT_TYPE_LATEST)
