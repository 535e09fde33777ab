"""Graders loaded into test servers through ARBITER_GRADER_PLUGINS."""

from __future__ import annotations

import asyncio
from typing import ClassVar

from graders.base import Grader, GraderConfig
from graders.registry import GraderRegistry
from graders.types import GradeResult, Sample


class SleepConfig(GraderConfig):
    delay_s: float = 0.5
    score: float = 1.0


class Sleepy(Grader[SleepConfig]):
    """Waits, then scores: makes requests slow enough to overlap."""

    name: ClassVar[str] = "sleepy"
    version: ClassVar[str] = "1"
    config_model = SleepConfig
    default_timeout_s: ClassVar[float] = 60.0

    async def grade(self, sample: Sample, config: SleepConfig) -> GradeResult:
        await asyncio.sleep(config.delay_s)
        return self.scored(config.score)


def register(registry: GraderRegistry) -> None:
    registry.register(Sleepy)
