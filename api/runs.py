"""Code runs on demand (``POST /run_code``, ``/v1/run``): admission, a thread pool, metrics.

A run blocks a thread for as long as the program runs (the sandbox's own
admission queues it for a slot), so runs have threads of their own and never
take the event loop's default executor, which the key store and the graders
share. Admission bounds the runs in flight or queued, and each key's share:
beyond either, 429 with ``Retry-After``.
"""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from prometheus_client import Counter

from arbiter.api.admission import Admission
from arbiter.api.auth import Principal
from arbiter.api.errors import Busy, Invalid
from arbiter.api.metrics import Metrics
from arbiter.api.settings import Settings
from arbiter.graders.registry import GraderRegistry
from arbiter.graders.run_code import RunCodeRequest, RunRefused, run_code
from arbiter.graders.unit_tests import UnitTestsGrader

__all__ = ["CodeRuns"]

#: Threads running programs at once; more wait in the admission's bound.
RUN_THREADS = 32


class CodeRuns:
    """One service's code runs."""

    def __init__(self, settings: Settings, registry: GraderRegistry, metrics: Metrics) -> None:
        self.settings = settings
        self.registry = registry
        self.admission = Admission(settings.max_inflight_runs, settings.per_key_max_inflight_runs)
        self.runs = Counter(
            "arbiter_runs_total",
            "Code runs (POST /run_code, /v1/run) by language and SandboxFusion status.",
            ["language", "status"],
            registry=metrics.registry,
        )
        self._metrics = metrics
        self._threads: ThreadPoolExecutor | None = None

    def _pool(self) -> ThreadPoolExecutor:
        if self._threads is None:
            self._threads = ThreadPoolExecutor(RUN_THREADS, thread_name_prefix="arbiter-run")
        return self._threads

    async def run(self, request: RunCodeRequest, caller: Principal) -> dict[str, Any]:
        """Run one program for ``caller`` (a trainer key); 429 beyond the bounds, 422 if refused."""
        caller.require("trainer")
        ticket = self.admission.admit(caller.client, 1)
        if isinstance(ticket, str):
            self._metrics.rejections.labels(reason=ticket).inc()
            message = (
                "this key has too many runs in flight"
                if ticket == "key_quota"
                else "the service is at its bound of runs in flight"
            )
            raise Busy(
                f"{message}; retry after {self.settings.retry_after_s} s",
                code=ticket,
                headers={"Retry-After": str(self.settings.retry_after_s)},
            )
        try:
            grader = self.registry.instance("unit_tests")
            assert isinstance(grader, UnitTestsGrader)
            loop = asyncio.get_running_loop()
            try:
                answer = await loop.run_in_executor(self._pool(), run_code, grader, request)
            except RunRefused as e:
                raise Invalid(str(e)) from None
        finally:
            self.admission.release(ticket)
        self.runs.labels(language=request.language, status=answer["status"]).inc()
        return answer

    def close(self) -> None:
        """Stop the run threads (runs in flight finish first)."""
        if self._threads is not None:
            self._threads.shutdown(wait=True)
            self._threads = None
