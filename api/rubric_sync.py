"""Rubric sync: keep the catalog in step with the store and the watched rubric folders.

At start-up and then every ``rubric_reload_interval_s``, versions other
replicas stored are loaded, and new or changed files in the watched folders
are validated, stored and published. The sandbox layers the loaded rubrics
require are checked once at start-up.

A new version from a file is graded on its rubric's open regression cases first
(:mod:`arbiter.api.regressions`): one that lets a case through is not published
(an error is logged naming the cases, and the previous version keeps serving)
until the file changes. A folder cannot force it; ``POST /v1/rubrics`` can.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time

from arbiter.api.drift_watch import DriftWatch
from arbiter.api.regressions import RegressionGate
from arbiter.api.settings import Settings
from arbiter.rubrics.catalog import CatalogEntry, RubricCatalog, RubricRefusedError
from arbiter.rubrics.errors import RubricError
from arbiter.store.db import Store

__all__ = ["RubricSync", "persist"]

logger = logging.getLogger("arbiter.service")

#: How often the watcher saves the drift monitor's state (and always at shutdown).
DRIFT_SAVE_INTERVAL_S = 60.0


def persist(store: Store, entry: CatalogEntry) -> None:
    """Save a catalog entry's rubric in the store."""
    store.save_rubric(
        sha256=entry.rubric.sha256,
        name=entry.rubric.name,
        version=entry.rubric.version,
        text_=entry.text,
        origin=entry.origin,
    )


class RubricSync:
    """Load rubrics into the catalog from the store and the watched folders."""

    def __init__(
        self,
        settings: Settings,
        *,
        store: Store,
        catalog: RubricCatalog,
        drift: DriftWatch,
        gate: RegressionGate | None = None,
    ) -> None:
        self.settings = settings
        self.store = store
        self.catalog = catalog
        self.drift = drift
        self.gate = gate
        self._task: asyncio.Task[None] | None = None

    def sync(self) -> None:
        """Load versions other replicas stored, then new or changed files (stored too)."""
        for text, origin in self.store.rubric_texts():
            try:
                self.catalog.add_text(text, origin)
            except RubricError as e:
                logger.error("stored rubric from %s no longer validates:\n%s", origin, e)
        for entry in self.catalog.scan(self.settings.watched_dirs(), save=self._publish):
            logger.info(
                "loaded rubric %s v%d (%s) from %s",
                entry.rubric.name,
                entry.rubric.version,
                entry.rubric.sha256[:12],
                entry.origin,
            )

    def _publish(self, entry: CatalogEntry) -> None:
        """Grade a file's new version on its regression cases, then store it.

        Runs in the sync's worker thread; the grading runs on the service's loop.

        Raises:
            RubricRefusedError: the version lets open regression cases through.
        """
        if self.gate is not None:
            result = self.gate.check_from_thread(entry.rubric)
            if result.failing:
                raise RubricRefusedError(
                    f"{result.describe()}\nthe versions before it keep serving; fix the file "
                    "(or dismiss the cases that are not hacks, then touch it), or publish it "
                    "forced with `arbiter rubric publish --force` (an admin's decision, recorded)"
                )
            for skipped in result.skipped:
                logger.warning(
                    "rubric file %s: regression case %s could not be graded: %s",
                    entry.origin,
                    skipped["case_id"],
                    skipped["reason"],
                )
        persist(self.store, entry)

    def required_sandbox_layers(self) -> set[str]:
        """Layers the settings and the loaded rubrics' unit_tests components require."""
        from arbiter.graders.sandbox.layers import LAYERS

        wanted = set(self.settings.require_sandbox_layers)
        if "all" in wanted:
            wanted = (wanted - {"all"}) | set(LAYERS)
        for entry in self.catalog.entries():
            for rubric in entry.rubric.route_rubrics():
                for component in rubric.components.values():
                    wanted.update(getattr(component.config, "require_layers", ()))
        return wanted

    def check_sandbox_layers(self) -> None:
        """Refuse to start when a required sandbox layer is not active on this host.

        Raises:
            MissingLayersError: naming each missing layer and why it is unavailable.
        """
        required = self.required_sandbox_layers()
        if not required:
            return
        from arbiter.graders.sandbox.layers import check_layers, require_layers

        layers = check_layers()
        require_layers(layers, required)
        logger.info("sandbox layers required and active: %s", ", ".join(sorted(required)))

    def start_watching(self) -> None:
        """Re-sync in the background every ``rubric_reload_interval_s`` (if positive)."""
        if self.settings.rubric_reload_interval_s > 0:
            self._task = asyncio.create_task(self._watch())

    async def stop_watching(self) -> None:
        """Stop the background re-sync."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    async def _watch(self) -> None:
        saved = time.monotonic()
        while True:
            await asyncio.sleep(self.settings.rubric_reload_interval_s)
            try:
                await asyncio.to_thread(self.sync)
                if time.monotonic() - saved >= DRIFT_SAVE_INTERVAL_S:
                    await asyncio.to_thread(self.drift.save)
                    saved = time.monotonic()
            except Exception:  # the watcher must outlive a transient store error
                logger.exception("rubric reload or drift-state save failed; will retry")
