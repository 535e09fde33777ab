"""The Reward: one number per rollout (or an abstention) with how it was made."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from graders.types import Failure, Violation, ViolationType
from rubrics.rubric import RubricIdentity

__all__ = ["AppliedGate", "AppliedPenalty", "ComponentOutcome", "Reward"]


class ComponentOutcome(BaseModel):
    """One component's grade as it entered the reward."""

    model_config = ConfigDict(frozen=True)

    score: float | None
    weight: float
    required: bool
    grader: str
    grader_version: str
    failure: Failure | None = None
    violations: tuple[Violation, ...] = ()
    details: dict[str, Any] = Field(default_factory=dict)
    latency_s: float = 0.0


class AppliedPenalty(BaseModel):
    """A penalty subtracted from the reward, and how many violations caused it."""

    model_config = ConfigDict(frozen=True)

    violation: ViolationType
    count: int
    penalty: float


class AppliedGate(BaseModel):
    """A gate that bounded the reward, and why it applied."""

    model_config = ConfigDict(frozen=True)

    when: str
    cap: float | None
    floor: float | None
    reason: str


class Reward(BaseModel):
    """The reward for one sample.

    ``reward`` is ``None`` when the rubric abstains (``abstain_reason`` says
    why): a trainer should drop the sample, not read it as zero. After group
    normalization ``reward`` holds the normalized value and ``raw_reward`` the
    value before it.
    """

    model_config = ConfigDict(frozen=True)

    id: str
    group_id: str | None = None
    reward: float | None
    raw_reward: float | None
    abstain_reason: str | None = None
    components: dict[str, ComponentOutcome]
    penalties: tuple[AppliedPenalty, ...] = ()
    gates: tuple[AppliedGate, ...] = ()
    rubric: RubricIdentity
    graders: dict[str, str]
    flags: tuple[str, ...] = ()
