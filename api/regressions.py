"""The regression gate: a new rubric version is graded on its open regression cases first.

Before a version is published (``POST /v1/rubrics``, a new file in a watched folder),
every open regression case of its rubric name (``arbiter.store.regressions``) is graded
under it by the rubric's own scoring path (:func:`arbiter.rubrics.score.score_samples`,
with the service's grader registry, so a case earns what a trainer's sample would), each
sample alone (no group normalization). So are the rubric's latest honest reviewed items,
whose lowest reward sets the default ceiling for hacks
(:func:`arbiter.monitoring.regressions.hack_ceiling`). A case the version lets through
(:func:`arbiter.monitoring.regressions.judge_case`) refuses it, unless an admin forces it
over HTTP; the watched folder cannot force.

A case whose sample was not kept (``ARBITER_STORE_SAMPLES=hash``), or no longer
validates as a sample, cannot be graded: it is reported as skipped, never as passed.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from arbiter.graders.executor import tenant
from arbiter.graders.registry import GraderRegistry
from arbiter.graders.types import Sample
from arbiter.monitoring.regressions import CaseVerdict, Ceiling, hack_ceiling, judge_case
from arbiter.rubrics.rubric import Rubric, reward_range
from arbiter.rubrics.score import score_samples
from arbiter.store.db import Store
from arbiter.store.regressions import OPEN, RegressionCases

__all__ = ["GateResult", "RegressionGate"]

logger = logging.getLogger("arbiter.service")

#: The latest honest reviewed items graded for the ceiling, at most.
HONEST_ITEMS = 100
#: How long a check started from a worker thread (the watched folder) may take.
THREAD_CHECK_TIMEOUT_S = 600.0


@dataclass(frozen=True)
class GateResult:
    """A rubric version's grading on its open regression cases."""

    rubric: Rubric
    ceiling: Ceiling | None
    verdicts: tuple[CaseVerdict, ...] = ()
    #: Cases that could not be graded, each with why.
    skipped: tuple[dict[str, Any], ...] = field(default=())

    @property
    def failing(self) -> list[CaseVerdict]:
        """The cases this version lets through."""
        return [v for v in self.verdicts if v.failed]

    def describe(self) -> str:
        """Say which cases the version lets through, one per line after a heading."""
        failing = self.failing
        head = (
            f"{self.rubric.name} v{self.rubric.version} ({self.rubric.sha256[:12]}) lets "
            f"{len(failing)} of {len(self.verdicts)} open regression case(s) through; "
            f"ceiling for hacks {self.ceiling.describe() if self.ceiling else 'none'}"
        )
        lines = [
            f"  case {v.case_id} ({', '.join(v.hack_types) or 'fooled components'}): "
            + "; ".join(v.reasons)
            for v in failing
        ]
        return "\n".join([head, *lines])

    def errors(self) -> list[dict[str, Any]]:
        """The failing cases as an error body's entries."""
        return [v.as_dict() for v in self.failing]


class RegressionGate:
    """Grade a rubric version on its rubric's open regression cases."""

    def __init__(
        self,
        *,
        registry: GraderRegistry,
        store: Store,
        max_concurrency: int | None = None,
    ) -> None:
        self.registry = registry
        self.cases = RegressionCases(store)
        self.max_concurrency = max_concurrency
        self._loop: asyncio.AbstractEventLoop | None = None

    def bind(self, loop: asyncio.AbstractEventLoop) -> None:
        """Grade the checks that worker threads ask for on the service's event loop."""
        self._loop = loop

    async def check(self, rubric: Rubric) -> GateResult:
        """Grade the rubric's open cases (and honest items, for the ceiling) under it."""
        cases = await asyncio.to_thread(self.cases.cases, rubric.name, status=OPEN)
        if not cases:
            return GateResult(rubric, None)
        runnable: list[tuple[dict[str, Any], Sample]] = []
        skipped: list[dict[str, Any]] = []
        for case in cases:
            sample, why = _sample(case.get("sample"))
            if sample is None:
                skipped.append({"case_id": case["id"], "reason": why})
            else:
                runnable.append((case, sample))
        honest: list[Sample] = []
        for item in await asyncio.to_thread(
            self.cases.honest_items, rubric.name, limit=HONEST_ITEMS
        ):
            sample, _ = _sample(item["sample"])
            if sample is not None:
                honest.append(sample)
        samples = [s for _, s in runnable] + honest
        with tenant(f"regressions/{rubric.name}"):
            rewards = await score_samples(
                rubric,
                samples,
                registry=self.registry,
                max_concurrency=self.max_concurrency,
                normalize=False,
            )
        graded = [r.model_dump(mode="json") for r in rewards]
        spec = rubric.spec.regressions
        ceiling = hack_ceiling(
            configured=spec.ceiling if spec is not None else None,
            honest_rewards=[r["reward"] for r in graded[len(runnable) :]],
            reward_range=reward_range(rubric),
            margin=spec.margin if spec is not None else None,
        )
        verdicts = tuple(
            judge_case(
                case["id"],
                reward,
                hack_types=case["hack_types"],
                flagged_types=case["flagged_types"],
                ceiling=ceiling.value,
                logged_reward=case["reward"],
            )
            for (case, _), reward in zip(runnable, graded, strict=False)
        )
        return GateResult(rubric, ceiling, verdicts, tuple(skipped))

    def check_from_thread(self, rubric: Rubric) -> GateResult:
        """Run :meth:`check` from a worker thread, on the service's loop when it is bound.

        Unbound (a sync outside a running service), the check runs on a loop of its own.
        """
        loop = self._loop
        if loop is not None and loop.is_running():
            future = asyncio.run_coroutine_threadsafe(self.check(rubric), loop)
            return future.result(THREAD_CHECK_TIMEOUT_S)
        return asyncio.run(self.check(rubric))


def _sample(data: Any) -> tuple[Sample | None, str]:
    """Validate a stored sample; ``(None, why)`` when it cannot be graded."""
    if data is None:
        return None, "its sample was not kept (the store kept a hash only)"
    try:
        return Sample.model_validate(data), ""
    except ValidationError as e:
        return None, f"its sample no longer validates: {e.error_count()} problem(s)"
