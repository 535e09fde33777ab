"""Rubric registration: validate a rubric sent over HTTP, store it, publish it."""

from __future__ import annotations

import asyncio
import contextlib

from api.auth import Principal
from api.errors import Conflict, Invalid
from api.rubric_sync import persist
from graders.registry import GraderRegistry
from rubrics.catalog import RubricCatalog
from rubrics.errors import RubricError, RubricNotFoundError
from rubrics.loader import parse_rubric
from rubrics.rubric import Rubric
from store.db import Store

__all__ = ["RubricRegistration"]


class RubricRegistration:
    """Register new rubric versions (admin) in the catalog and the store."""

    def __init__(self, *, registry: GraderRegistry, store: Store, catalog: RubricCatalog) -> None:
        self.registry = registry
        self.store = store
        self.catalog = catalog

    async def register(self, text: str, principal: Principal) -> tuple[Rubric, bool]:
        """Validate and register a rubric; return it and whether it is new."""
        principal.require("admin")
        try:
            rubric = parse_rubric(text, source="<request>", registry=self.registry)
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
        entry, created = self.catalog.add(rubric, text, "api")
        if created:
            await asyncio.to_thread(persist, self.store, entry)
        return rubric, created
