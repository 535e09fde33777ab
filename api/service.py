"""The service of one process: its parts, built from settings, started and stopped together.

Routes reach each part by its job: ``auth`` (who is calling), ``grading``
(the pipeline a batch goes through), ``openrlhf`` (OpenRLHF's protocol onto
that pipeline), ``registration`` (rubrics sent over HTTP), ``rubric_sync``
(rubrics from the store and the watched folders), and the shared catalog,
store, metrics, drift watch and review sampler.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

from arbiter.api.auth import Authenticator
from arbiter.api.drift_watch import DriftWatch, SharedDriftWatch
from arbiter.api.grading import GradingPipeline
from arbiter.api.metrics import Metrics, ModelUsageCollector
from arbiter.api.openrlhf import OpenRLHFAdapter
from arbiter.api.regressions import RegressionGate
from arbiter.api.review_sampler import ReviewSampler
from arbiter.api.rubric_registration import RubricRegistration
from arbiter.api.rubric_sync import RubricSync
from arbiter.api.runs import CodeRuns
from arbiter.api.settings import Settings
from arbiter.graders.executor import GradingExecutor, remote_registry
from arbiter.graders.registry import GraderRegistry, default_registry
from arbiter.monitoring.drift_statistics import load_scipy
from arbiter.rubrics.catalog import RubricCatalog
from arbiter.rubrics.models_file import (
    DeclaredModels,
    load_models_file,
    prepare_registry,
    registry_setup,
)
from arbiter.store.db import Store

__all__ = ["Service"]

logger = logging.getLogger("arbiter.service")


class Service:
    """One process's view of the service."""

    def __init__(
        self,
        settings: Settings,
        *,
        registry: GraderRegistry | None = None,
        store: Store | None = None,
    ) -> None:
        self.settings = settings
        self.registry = registry or default_registry()
        # Declared models and plugin modules, as every entry point loads them
        # (the CLI and the Ray grader actors too); a bad models file stops start-up.
        models = load_models_file(settings.models) if settings.models is not None else None
        #: Where the heavy graders run when a Ray cluster is configured (else None).
        self.executor: GradingExecutor | None = None
        if settings.ray_address:
            from arbiter.graders.ray_executor import RayExecutor

            self.executor = RayExecutor(
                settings.ray_address,
                actors=settings.ray_actors,
                cpus_per_actor=settings.ray_cpus_per_actor,
                max_queue=settings.ray_max_queue,
                registry_setup=registry_setup(models, settings.grader_plugins),
            )
            remote_registry(self.executor, registry=self.registry)
        self.models: DeclaredModels | None = prepare_registry(
            self.registry,
            models=models,
            plugins=settings.grader_plugins,
            ray_address=settings.ray_address,
        )
        self.store = store or Store(settings.database_url)
        self.catalog = RubricCatalog(self.registry)
        self.metrics = Metrics()
        if self.models is not None:
            self.metrics.registry.register(ModelUsageCollector(self.models.usage.values()))
        self.review_sampler = ReviewSampler(self.store, settings)
        # Replicas on one store share one drift monitor (the embedded file has one process).
        self.drift: DriftWatch = (
            SharedDriftWatch(
                self.store,
                self.metrics,
                self.catalog,
                refresh_rubrics=lambda: self.rubric_sync.sync(),
                poll_interval_s=settings.drift_poll_interval_s,
            )
            if settings.shared_drift
            else DriftWatch(self.store, self.metrics)
        )
        self._drift_task: asyncio.Task[None] | None = None
        self.grading = GradingPipeline(
            settings,
            registry=self.registry,
            store=self.store,
            catalog=self.catalog,
            metrics=self.metrics,
            drift=self.drift,
            review_sampler=self.review_sampler,
            executor=self.executor,
        )
        self.auth = Authenticator(
            self.store,
            enabled=settings.auth != "disabled",
            retry_after=self.grading.retry_after(),
        )
        self.openrlhf = OpenRLHFAdapter(settings, self.grading)
        self.runs = CodeRuns(settings, self.registry, self.metrics)
        #: Grades a new rubric version on its regression cases before it is published.
        self.regressions = RegressionGate(
            registry=self.registry,
            store=self.store,
            max_concurrency=settings.grader_concurrency,
        )
        self.registration = RubricRegistration(
            registry=self.registry,
            store=self.store,
            catalog=self.catalog,
            retry_after=self.grading.retry_after(),
            gate=self.regressions,
        )
        self.rubric_sync = RubricSync(
            settings,
            store=self.store,
            catalog=self.catalog,
            drift=self.drift,
            gate=self.regressions,
        )
        self.started = False

    async def start(self) -> None:
        """Migrate the store, load rubrics, and start watching the rubric folders."""
        await asyncio.to_thread(self.store.migrate)
        await asyncio.to_thread(self.drift.load)
        # The watched folder's syncs run in worker threads; their gradings, on this loop.
        self.regressions.bind(asyncio.get_running_loop())
        await asyncio.to_thread(self.rubric_sync.sync)
        await asyncio.to_thread(self.rubric_sync.check_sandbox_layers)
        # Every grader a loaded rubric names starts its workers now, before the
        # service says it is ready: the first batch is graded as the hundredth.
        # The drift detectors' statistics (scipy, a large share of the imports)
        # load beside them, while the warm-up mostly waits for its workers.
        await asyncio.gather(
            self.registry.warm(
                c.grader
                for e in self.catalog.entries()
                for r in e.rubric.route_rubrics()
                for c in r.components.values()
            ),
            asyncio.to_thread(load_scipy),
        )
        if self.settings.auth == "disabled":
            logger.warning(
                "AUTH IS DISABLED (ARBITER_AUTH=disabled): every caller is admin. "
                "Use this for local development only."
            )
        self.rubric_sync.start_watching()
        if isinstance(self.drift, SharedDriftWatch) and self.settings.drift_enabled:
            self._drift_task = asyncio.create_task(self.drift.run())
        self.started = True

    async def stop(self) -> None:
        """Stop watching and release the store."""
        await self.rubric_sync.stop_watching()
        if self._drift_task is not None:
            self._drift_task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._drift_task
        await asyncio.to_thread(self.runs.close)
        await asyncio.to_thread(self.registry.close)
        await asyncio.to_thread(self.grading.close)
        if self.executor is not None:
            await asyncio.to_thread(self.executor.close)
        try:
            await asyncio.to_thread(self.drift.close)
        except Exception:  # shutting down: the state is a convenience, the log is what matters
            logger.exception("could not save the drift monitor's state")
        await asyncio.to_thread(self.store.close)
