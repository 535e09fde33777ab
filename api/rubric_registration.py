"""Rubric registration: validate a rubric sent over HTTP, gate it, store it, publish it.

A new version is first graded on the open regression cases of its rubric name
(:mod:`arbiter.api.regressions`): one it lets through is refused (409
``regression_failed``, each case named with its hack types, its reward under the new
version and the ceiling), unless the admin forces it; a forced publish is recorded
(who, when, the version and every case let through) before the version is stored.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

from arbiter.api.auth import Principal
from arbiter.api.errors import Conflict, Invalid, Unavailable
from arbiter.api.regressions import GateResult, RegressionGate
from arbiter.api.rubric_sync import persist
from arbiter.api.schemas import RegressionCheck
from arbiter.graders.registry import GraderRegistry
from arbiter.rubrics.catalog import CatalogEntry, RubricCatalog
from arbiter.rubrics.errors import RubricError, RubricNotFoundError
from arbiter.rubrics.loader import parse_rubric
from arbiter.rubrics.rubric import Rubric
from arbiter.store.db import Store

__all__ = ["RubricRegistration"]

logger = logging.getLogger("arbiter.service")


class RubricRegistration:
    """Register new rubric versions (admin) in the catalog and the store."""

    def __init__(
        self,
        *,
        registry: GraderRegistry,
        store: Store,
        catalog: RubricCatalog,
        retry_after: dict[str, str],
        gate: RegressionGate | None = None,
    ) -> None:
        self.retry_after = retry_after
        self.registry = registry
        self.store = store
        self.catalog = catalog
        self.gate = gate

    async def register(
        self, text: str, principal: Principal, *, force: bool = False
    ) -> tuple[Rubric, bool, RegressionCheck | None]:
        """Validate, gate and register a rubric.

        Returns:
            The rubric, whether it is new, and how it fared on its regression cases
            (``None`` for a version already known, which is not graded again).

        Raises:
            Conflict: ``regression_failed`` (the version lets open cases through and
                ``force`` is off), or ``version_exists``.
        """
        principal.require("admin")
        try:
            # Off the event loop: parsing is bounded, but not free.
            rubric = await asyncio.to_thread(
                parse_rubric, text, source="<request>", registry=self.registry
            )
        except RubricError as e:
            raise Invalid(
                f"the rubric is invalid ({len(e.issues)} problem(s))",
                code="invalid_rubric",
                errors=[i.as_dict() for i in e.issues],
            ) from e
        with contextlib.suppress(RubricNotFoundError):
            same_version = self.catalog.resolve(rubric.name, version=rubric.version)
            if same_version.sha256 != rubric.sha256:
                raise Conflict(
                    f"{rubric.name} v{rubric.version} already exists with other content "
                    f"(sha256 {same_version.sha256[:12]}); bump the version",
                    code="version_exists",
                )
        if self.catalog.knows(rubric.sha256):
            return rubric, False, None
        check = await self._gate(rubric, principal, force)
        # Stored before it is published: a version the store refuses never
        # enters the catalog, where requests would find it.
        try:
            await asyncio.to_thread(persist, self.store, CatalogEntry(rubric, text, "api"))
        except Exception as e:
            raise Unavailable(
                "the store could not save the rubric; it was not registered, retry",
                code="store_unavailable",
                headers=dict(self.retry_after),
            ) from e
        _, created = self.catalog.add(rubric, text, "api")
        return rubric, created, check

    async def _gate(self, rubric: Rubric, principal: Principal, force: bool) -> RegressionCheck:
        """Grade the version on its open cases; refuse it, or record that it was forced."""
        if self.gate is None:
            return RegressionCheck(checked=0, ceiling=None, ceiling_source=None)
        # A store error reading the cases is the service's 503: nothing is published.
        result = await self.gate.check(rubric)
        check = _check(result)
        if result.skipped:
            logger.warning(
                "rubric %s v%d: %d regression case(s) could not be graded: %s",
                rubric.name,
                rubric.version,
                len(result.skipped),
                "; ".join(f"case {s['case_id']}: {s['reason']}" for s in result.skipped),
            )
        if not result.failing:
            return check
        if not force:
            raise Conflict(
                f"{result.describe()}\nnot registered: fix the rubric, dismiss the cases that "
                "are not hacks, or force it (an admin's decision, recorded)",
                code="regression_failed",
                errors=result.errors(),
            )
        # Recorded before the version is stored: a forcing is never published unrecorded
        # (a store error here is the service's 503, and nothing is published).
        override = await asyncio.to_thread(
            self.gate.cases.record_override,
            rubric_name=rubric.name,
            rubric_version=rubric.version,
            rubric_sha256=rubric.sha256,
            forced_by=principal.client,
            forced_by_name=principal.name,
            cases=result.errors(),
            ceiling=result.ceiling.value if result.ceiling is not None else None,
        )
        logger.warning("forced by %s (%s): %s", principal.name, principal.client, result.describe())
        return check.model_copy(update={"override": override})


def _check(result: GateResult) -> RegressionCheck:
    ceiling = result.ceiling
    return RegressionCheck(
        checked=len(result.verdicts),
        ceiling=ceiling.value if ceiling is not None else None,
        ceiling_source=ceiling.source if ceiling is not None else None,
        let_through=result.errors(),
        skipped=list(result.skipped),
    )
