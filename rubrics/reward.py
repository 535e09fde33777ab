"""The Reward: one number per rollout (or an abstention) with how it was made."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

from arbiter.graders.types import GradeResult, ViolationType
from arbiter.rubrics.rubric import RubricIdentity

__all__ = ["AbstainOwner", "AppliedGate", "AppliedPenalty", "ComponentOutcome", "Reward"]

#: Whose doing a reward's abstention is (see :attr:`Reward.abstained_by`).
AbstainOwner = Literal["ours", "task", "candidate", "request", "rubric"]


class ComponentOutcome(GradeResult):
    """One component's grade as it entered the reward: the grader's result, weighted.

    It is the :class:`~arbiter.graders.types.GradeResult` itself (every field of it, in
    the same place of the JSON) plus the component's weight and whether the
    rubric requires it.
    """

    weight: float
    required: bool

    @classmethod
    def of(cls, result: GradeResult, *, weight: float, required: bool) -> ComponentOutcome:
        """Weight a grader's result, without validating it a second time.

        ``result`` was validated when it was made and ``weight`` and
        ``required`` come from a validated rubric, so the outcome is built as
        pydantic's ``model_construct`` builds one, from the result's own
        ``__dict__``, rather than validating the fields again or calling
        ``model_construct`` itself: every component of every sample passes here.
        """
        values = dict(result.__dict__)
        values["weight"] = weight
        values["required"] = required
        outcome = cls.__new__(cls)
        _set(outcome, "__dict__", values)
        _set(outcome, "__pydantic_fields_set__", result.__pydantic_fields_set__ | _WEIGHTED)
        _set(outcome, "__pydantic_extra__", None)
        _set(outcome, "__pydantic_private__", None)
        return outcome


_set = object.__setattr__
_WEIGHTED = frozenset({"weight", "required"})


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
    why, ``abstained_by`` whose doing it is): a trainer should drop the sample,
    not read it as zero, unless ``abstained_by`` is ``candidate`` (the rubric
    left the candidate's own failure unscored: a fill reads it as 0.0, never as
    its group's mean). ``raw_reward`` is the rubric's value before the clip and
    before group normalization; ``reward`` is clipped, then normalized. Every step
    that moved the value (a gate's cap or floor, a renormalization, a fill, the clip,
    the normalization) is named in ``flags``.
    """

    model_config = ConfigDict(frozen=True)

    id: str
    group_id: str | None = None
    reward: float | None
    raw_reward: float | None
    abstain_reason: str | None = None
    #: Whose doing an abstention is: ``ours`` (infrastructure), ``task`` (its tests or
    #: gold), ``candidate`` (its own failure, left unscored by the rubric), ``request``
    #: (the sample lacks what a grader needs), ``rubric`` (its formula has no value).
    abstained_by: AbstainOwner | None = None
    components: dict[str, ComponentOutcome]
    penalties: tuple[AppliedPenalty, ...] = ()
    gates: tuple[AppliedGate, ...] = ()
    rubric: RubricIdentity
    graders: dict[str, str]
    flags: tuple[str, ...] = ()
    #: The route of a mixed batch that graded the sample (``rubric`` is then the
    #: route's own, ``<name>.<route>``); ``None`` without routes or when none took it.
    route: str | None = None
