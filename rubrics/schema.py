"""The rubric file's schema (pydantic), as people write it in YAML.

This is the contract for rubric files. Grader configs are plain mappings here;
the loader validates each one with its grader's own config model, so a grader
owns its configuration and the rubric never needs to know it.
"""

from __future__ import annotations

import keyword
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictInt, model_validator

from arbiter.graders.types import LANGUAGES, ViolationType

__all__ = [
    "COMPONENT_NAME_PATTERN",
    "RESERVED_NAMES",
    "ROUTE_NAME_PATTERN",
    "TASK_KINDS",
    "Accepts",
    "ComponentSpec",
    "DriftSpec",
    "GateSpec",
    "PenaltySpec",
    "RegressionsSpec",
    "ReviewSpec",
    "RouteMatch",
    "RouteSpec",
    "RubricSpec",
    "Stratum",
]

#: Component names must be identifiers so a formula can name them.
COMPONENT_NAME_PATTERN = r"^[A-Za-z_][A-Za-z0-9_]{0,63}$"
#: Words a component may not be called: the formula's functions and Python's keywords.
RESERVED_NAMES = frozenset({"min", "max", "abs", "clip", *keyword.kwlist})

Finite = Annotated[float, Field(allow_inf_nan=False)]
FiniteNonNegative = Annotated[float, Field(ge=0, allow_inf_nan=False)]
Probability = Annotated[float, Field(ge=0, le=1, allow_inf_nan=False)]
ComponentName = Annotated[str, Field(pattern=COMPONENT_NAME_PATTERN)]


class _Spec(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ComponentSpec(_Spec):
    """One reward component: which grader, how much it weighs, and its config."""

    grader: str = Field(description="Name of a registered grader (see `arbiter rubric graders`).")
    weight: FiniteNonNegative = Field(
        default=1.0, description="Weight in `weighted_sum`; ignored by a formula."
    )
    required: StrictBool = Field(
        default=False, description="Without this component's score the reward abstains."
    )
    timeout_s: Annotated[float, Field(gt=0, allow_inf_nan=False)] | None = Field(
        default=None, description="Deadline for this grader per sample (default: the grader's)."
    )
    description: str = ""
    config: dict[str, Any] = Field(
        default_factory=dict, description="The grader's own configuration."
    )


class GateSpec(_Spec):
    """Bound the reward when a condition over component scores holds."""

    when: str = Field(description='A condition over component names, e.g. "tests < 1.0".')
    cap: Finite | None = Field(default=None, description="Upper bound on the reward.")
    floor: Finite | None = Field(default=None, description="Lower bound on the reward.")
    description: str = ""

    @model_validator(mode="after")
    def _bounds(self) -> GateSpec:
        if self.cap is None and self.floor is None:
            raise ValueError("a gate needs a cap, a floor, or both")
        if self.cap is not None and self.floor is not None and self.floor > self.cap:
            raise ValueError(f"floor ({self.floor:g}) is above cap ({self.cap:g})")
        return self


class PenaltySpec(_Spec):
    """Subtract from the reward when a violation of this type was observed."""

    violation: ViolationType
    penalty: FiniteNonNegative
    per_occurrence: StrictBool = Field(
        default=False, description="Multiply by the number of occurrences (default: once)."
    )
    max_penalty: FiniteNonNegative | None = Field(
        default=None, description="Upper bound on this penalty when counted per occurrence."
    )


#: Targeted review sampling policies a rubric can turn on (``arbiter.monitoring.sampling``).
Stratum = Literal["reward_decile", "disagreement", "high_reward_violation"]


class ReviewSpec(_Spec):
    """Human-review sampling (used by the review queue) and what reviewers see."""

    sample_rate: Probability = Field(
        default=0.0, description="Probability that any reward is sent for review."
    )
    stratify_by: list[Stratum] = Field(
        default_factory=list,
        description="Targeted sampling on top of sample_rate: 'reward_decile' samples every "
        "reward decile at sample_rate (rare deciles are not starved); 'disagreement' (component "
        "scores spread by 0.5 or more) and 'high_reward_violation' (a violation on a high "
        "reward) sample what they select at 10 x sample_rate, at most 1.",
    )
    show_scores: StrictBool | None = Field(
        default=None,
        description="Show reviewers the graders' scores, violations and why an item was "
        "sampled (false: blind review). Default: the server's ARBITER_REVIEW_SHOW_SCORES.",
    )


class RegressionsSpec(_Spec):
    """How the rubric's regression cases (hacks reviewers confirmed) are judged on publish."""

    ceiling: Finite | None = Field(
        default=None,
        description="The reward above which a confirmed hack is let through: a version that "
        "pays a case more is refused on publish. Default: just below the lowest reward of the "
        "honest reviewed items under the new version (by margin), or the middle of the reward "
        "range when there is none.",
    )
    margin: Annotated[float, Field(ge=0, le=1, allow_inf_nan=False)] = Field(
        default=0.05,
        description="How far below the honest floor the default ceiling lies, as a share of "
        "the reward range's width.",
    )


class DriftSpec(_Spec):
    """Drift monitoring of this rubric's components (thresholds left out keep the defaults)."""

    enabled: StrictBool = True
    window: Annotated[int, Field(ge=10)] = Field(
        default=200, description="Scores per window, per stream."
    )
    warmup_windows: Annotated[int, Field(ge=0)] = Field(
        default=3, description="Windows ignored at the start of a stream (training settles)."
    )
    reference_windows: Annotated[int, Field(ge=2)] | None = Field(
        default=None, description="Windows after warm-up frozen as the reference (default 10)."
    )
    clear_after_windows: Annotated[int, Field(ge=1)] | None = Field(
        default=None, description="Quiet windows in a row that close an alert (default 3)."
    )
    cusum_k: Annotated[float, Field(gt=0, allow_inf_nan=False)] | None = Field(
        default=None, description="CUSUM allowance per window, in z units (default 1.5)."
    )
    cusum_h: Annotated[float, Field(gt=0, allow_inf_nan=False)] | None = Field(
        default=None, description="CUSUM decision threshold, in z units (default 6)."
    )
    ks_alpha: Probability | None = Field(
        default=None, description="KS level per round across streams (default 1e-5)."
    )
    ks_correction: Literal["holm", "bh"] | None = None
    wasserstein_quantile: Probability | None = Field(
        default=None, description="Bootstrap quantile used as the distance threshold (0.995)."
    )
    wasserstein_windows: Annotated[int, Field(ge=1)] | None = None
    collapse_ratio: Probability | None = Field(
        default=None, description="Window/reference variance below which a window collapsed."
    )
    pass_rate_z: Annotated[float, Field(gt=0, allow_inf_nan=False)] | None = None
    pass_rate_min_jump_pp: Annotated[float, Field(ge=0, le=100)] | None = Field(
        default=None, description="Smallest pass-rate step worth an alert, in points (10)."
    )
    hacking_z: Annotated[float, Field(gt=0, allow_inf_nan=False)] | None = None
    length_correlation_z: Annotated[float, Field(gt=0, allow_inf_nan=False)] | None = None
    hack_rate_alpha: Probability | None = Field(
        default=None,
        description="Exact p-value at or below which a violation type's rate (or the share "
        "of groups whose rewards all agree) has risen over the reference (default 1e-5).",
    )
    hack_rate_min_rise_pp: Annotated[float, Field(ge=0, le=100)] | None = Field(
        default=None, description="Smallest rise of such a rate worth an alert, in points (2)."
    )
    canary_passes: Annotated[int, Field(ge=1)] | None = Field(
        default=None, description="Canary passes in one window that open an alert (1)."
    )


#: Route names, as they appear in drift streams and reward provenance (``<rubric>.<route>``).
ROUTE_NAME_PATTERN = r"^[a-z0-9][a-z0-9_-]{0,63}$"
RouteName = Annotated[str, Field(pattern=ROUTE_NAME_PATTERN)]
#: The task kinds a route may match (a sample without a task is ``none``).
TASK_KINDS = (
    "python_function",
    "pytest",
    "stdin_stdout",
    "test_program",
    "repository",
    "answer",
    "instructions",
    "reasoning_gym",
    "none",
)


class Accepts(_Spec):
    """Which samples a rubric is written for: others abstain, saying so, instead of scoring.

    A sample's language is its program's: a Python task kind's, a ``stdin_stdout`` or
    ``test_program`` task's own ``language``, Python for a repository task or a sample
    without a task; an answer, instructions or a reasoning-gym entry has none.
    """

    kind: list[Literal[TASK_KINDS]] | None = Field(  # type: ignore[valid-type]
        default=None, min_length=1, description="Task kinds ('none': a sample without a task)."
    )
    language: list[Literal[LANGUAGES]] | None = Field(  # type: ignore[valid-type]
        default=None, min_length=1, description="Program languages."
    )

    @model_validator(mode="after")
    def _says_something(self) -> Accepts:
        if self.kind is None and self.language is None:
            raise ValueError("accepts names task kinds, languages or both")
        return self


class RouteMatch(_Spec):
    """Which samples a route takes: by task kind, by data source, or both (all must hold)."""

    kind: list[Literal[TASK_KINDS]] | None = Field(  # type: ignore[valid-type]
        default=None, min_length=1, description="Task kinds ('none': a sample without a task)."
    )
    data_source: list[Annotated[str, Field(min_length=1)]] | None = Field(
        default=None,
        min_length=1,
        description="Sample data_source values (verl's, a data set's), matched exactly.",
    )

    @model_validator(mode="after")
    def _says_something(self) -> RouteMatch:
        if self.kind is None and self.data_source is None:
            raise ValueError("a route matches by kind, data_source or both")
        return self


class RouteSpec(_Spec):
    """One route of a mixed batch: its own components, combination, gates and penalties."""

    when: RouteMatch
    description: str = ""
    components: Annotated[dict[ComponentName, ComponentSpec], Field(min_length=1)]
    combine: str = "weighted_sum"
    gates: list[GateSpec] = Field(default_factory=list)
    penalties: list[PenaltySpec] = Field(default_factory=list)
    on_missing: Literal["abstain", "renormalize", "zero"] = "abstain"
    clip: tuple[Finite, Finite] | None = None
    normalize: Literal["none", "group_z", "group_rank"] = "none"


class RubricSpec(_Spec):
    """A rubric file: which graders run and how their scores become one reward."""

    name: Annotated[str, Field(pattern=r"^[a-z0-9][a-z0-9._-]{0,127}$")]
    # At most what a 32-bit integer column holds, so every version can be stored.
    version: Annotated[StrictInt, Field(ge=1, le=2**31 - 1)]
    description: str = ""
    components: Annotated[dict[ComponentName, ComponentSpec], Field(min_length=1)]
    combine: str = Field(
        default="weighted_sum",
        description='"weighted_sum", or a formula over component names such as '
        '"tests * (0.7 + 0.3 * judge)".',
    )
    gates: list[GateSpec] = Field(default_factory=list)
    penalties: list[PenaltySpec] = Field(default_factory=list)
    on_missing: Literal["abstain", "renormalize", "zero"] = Field(
        default="abstain",
        description="What a component without a score does to the reward (a required "
        "component always abstains).",
    )
    clip: tuple[Finite, Finite] | None = Field(
        default=None, description="[low, high] bounds on the reward, applied last."
    )
    normalize: Literal["none", "group_z", "group_rank"] = Field(
        default="none", description="Normalize rewards within each group (GRPO-style)."
    )
    accepts: Accepts | None = Field(
        default=None,
        description=(
            "The samples this rubric is written for, by task kind and program language "
            "(all given must hold). Any other sample abstains (abstained_by 'request') with "
            "a reason naming what the rubric accepts, instead of being scored by graders "
            "that do not apply to it. Default: every sample."
        ),
    )
    review: ReviewSpec = Field(default_factory=ReviewSpec)
    drift: DriftSpec = Field(default_factory=DriftSpec)
    regressions: RegressionsSpec | None = Field(
        default=None,
        description="The ceiling for hacks that publishing a new version holds the rubric's "
        "open regression cases to (default: below the floor of the honest rewards).",
    )
    routes: dict[RouteName, RouteSpec] = Field(
        default_factory=dict,
        description=(
            "A mixed batch's routes, tried in order: the first whose `when` matches a "
            "sample grades it with its own components, gates and penalties; a sample no "
            "route takes is graded by the top-level components. Each route is its own "
            "rubric `<name>.<route>` in rewards, drift streams, review and audits."
        ),
    )
