"""Graders loaded into test servers through ARBITER_GRADER_PLUGINS."""

from __future__ import annotations

import asyncio
from typing import ClassVar

from arbiter.graders.base import Grader, GraderConfig
from arbiter.graders.registry import GraderRegistry
from arbiter.graders.types import GradeResult, Sample


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


class CountConfig(GraderConfig):
    path: str


class Counting(Grader[CountConfig]):
    """Scores 1 and appends the sample's id to a file: counts gradings across processes."""

    name: ClassVar[str] = "counting"
    version: ClassVar[str] = "1"
    config_model = CountConfig

    async def grade(self, sample: Sample, config: CountConfig) -> GradeResult:
        with open(config.path, "a", encoding="utf-8") as log:
            log.write(sample.id + "\n")
        return self.scored(1.0)


def register(registry: GraderRegistry) -> None:
    registry.register(Sleepy)
    registry.register(Counting)
