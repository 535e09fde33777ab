"""Rubric registration: validate a rubric sent over HTTP, store it, publish it."""

from __future__ import annotations

import asyncio
import contextlib

from arbiter.api.auth import Principal
from arbiter.api.errors import Conflict, Invalid, Unavailable
from arbiter.api.rubric_sync import persist
from arbiter.graders.registry import GraderRegistry
from arbiter.rubrics.catalog import CatalogEntry, RubricCatalog
from arbiter.rubrics.errors import RubricError, RubricNotFoundError
from arbiter.rubrics.loader import parse_rubric
from arbiter.rubrics.rubric import Rubric
from arbiter.store.db import Store

__all__ = ["RubricRegistration"]


class RubricRegistration:
    """Register new rubric versions (admin) in the catalog and the store."""

    def __init__(
        self,
        *,
        registry: GraderRegistry,
        store: Store,
        catalog: RubricCatalog,
        retry_after: dict[str, str],
    ) -> None:
        self.retry_after = retry_after
        self.registry = registry
        self.store = store
        self.catalog = catalog

    async def register(self, text: str, principal: Principal) -> tuple[Rubric, bool]:
        """Validate and register a rubric; return it and whether it is new."""
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
            return rubric, False
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
        return rubric, created
