"""Efficiency: what the rollout cost (turns, tokens, wall time, tool calls) against budgets.

Each budgeted metric becomes a term in [0, 1] through a shape:

* ``linear``: 1 up to ``target``, falling in a straight line to 0 at ``limit``;
* ``exponential``: 1 up to ``target``, then ``exp(-rate * (usage - target) / (limit - target))``
  (``exp(-rate)`` at the limit, never exactly 0, so there is always a gradient);
* ``step``: 1 up to and including ``limit``, 0 above it.

The terms combine by weighted mean, minimum or product. A metric the rollout did
not report is skipped (or fails the component, by config); a rollout that reports
none of the budgeted metrics has no efficiency score at all — ``missing_input``,
not 1.0 and not 0.0.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import Annotated, Any, ClassVar, Literal, NamedTuple

from pydantic import Field, model_validator

from arbiter.graders.base import Grader, GraderConfig
from arbiter.graders.types import FailureKind, GradeResult, Sample

__all__ = [
    "METRICS",
    "Budget",
    "EfficiencyConfig",
    "EfficiencyGrader",
    "EfficiencyScore",
    "measure",
    "score_efficiency",
    "shape_score",
]

Shape = Literal["linear", "exponential", "step"]

#: Budget field of the config → the metric it bounds.
METRICS: dict[str, str] = {
    "max_turns": "turns",
    "max_prompt_tokens": "prompt_tokens",
    "max_completion_tokens": "completion_tokens",
    "max_total_tokens": "total_tokens",
    "max_wall_s": "wall_s",
    "max_tool_calls": "tool_calls",
}

FiniteNonNegative = Annotated[float, Field(ge=0, allow_inf_nan=False)]
FinitePositive = Annotated[float, Field(gt=0, allow_inf_nan=False)]


class Budget(GraderConfig):
    """One metric's budget; a bare number in YAML means ``{limit: N}``."""

    limit: FinitePositive
    target: FiniteNonNegative = 0.0
    weight: FiniteNonNegative = 1.0
    shape: Shape | None = Field(default=None, description="Overrides the grader-wide shape.")
    rate: FinitePositive | None = Field(
        default=None, description="Exponential decay per budget span; overrides the grader's."
    )

    @model_validator(mode="after")
    def _target_below_limit(self) -> Budget:
        if self.target >= self.limit:
            raise ValueError(f"target ({self.target:g}) must be below limit ({self.limit:g})")
        return self


BudgetField = Budget | FinitePositive | None


class EfficiencyConfig(GraderConfig):
    """Budgets for the efficiency grader; at least one ``max_*`` must be set."""

    shape: Shape = "linear"
    rate: FinitePositive = Field(
        default=3.0, description="Exponential shape: the term is exp(-rate) at the limit."
    )
    combine: Literal["mean", "min", "product"] = "mean"
    missing_metric: Literal["skip", "fail"] = Field(
        default="skip",
        description="A budgeted metric the rollout did not report: leave it out, or fail.",
    )
    max_turns: BudgetField = None
    max_prompt_tokens: BudgetField = None
    max_completion_tokens: BudgetField = None
    max_total_tokens: BudgetField = None
    max_wall_s: BudgetField = None
    max_tool_calls: BudgetField = None

    @model_validator(mode="after")
    def _has_a_budget(self) -> EfficiencyConfig:
        budgets = self.budgets()
        if not budgets:
            raise ValueError(f"set at least one budget ({', '.join(METRICS)})")
        if self.combine == "mean" and sum(b.weight for b in budgets.values()) <= 0:
            raise ValueError("budget weights must not all be 0 when combine is 'mean'")
        return self

    def budgets(self) -> dict[str, Budget]:
        """Return metric name → budget, with bare numbers expanded."""
        out: dict[str, Budget] = {}
        for field, metric in METRICS.items():
            value = getattr(self, field)
            if value is None:
                continue
            out[metric] = value if isinstance(value, Budget) else Budget(limit=value)
        return out

    @cached_property
    def terms(self) -> tuple[_Term, ...]:
        """The budgets with the grader-wide shape and rate filled in (computed once).

        Scoring runs per sample on the request path, so it reads plain tuples
        instead of resolving overrides on models every time.
        """
        return tuple(
            _Term(
                metric,
                b.limit,
                b.target,
                b.weight,
                b.shape or self.shape,
                b.rate or self.rate,
            )
            for metric, b in self.budgets().items()
        )


class _Term(NamedTuple):
    metric: str
    limit: float
    target: float
    weight: float
    shape: Shape
    rate: float


def shape_score(usage: float, budget: Budget, shape: Shape, rate: float) -> float:
    """Map one metric's usage to [0, 1] under ``shape``."""
    return _shaped(usage, budget.limit, budget.target, shape, rate)


def _shaped(usage: float, limit: float, target: float, shape: Shape, rate: float) -> float:
    # The arithmetic of shape_score on plain numbers: scoring calls it per budget
    # per sample from the config's resolved terms.
    if shape == "step":
        return 1.0 if usage <= limit else 0.0
    if usage <= target:
        return 1.0
    over = (usage - target) / (limit - target)
    if shape == "linear":
        return max(0.0, 1.0 - over)
    return math.exp(-rate * over)


@dataclass(frozen=True, slots=True)
class EfficiencyScore:
    """The combined score (``None`` when nothing could be measured) and its terms."""

    score: float | None
    terms: dict[str, dict[str, Any]]
    missing: tuple[str, ...]


def score_efficiency(
    usage: Mapping[str, float | None], config: EfficiencyConfig
) -> EfficiencyScore:
    """Score measured usage against the config's budgets (pure)."""
    terms: dict[str, dict[str, Any]] = {}
    missing: list[str] = []
    weighted = 0.0
    total_weight = 0.0
    scores: list[float] = []
    for metric, limit, target, weight, shape, rate in config.terms:
        used = usage.get(metric)
        if used is None:
            missing.append(metric)
            continue
        score = _shaped(used, limit, target, shape, rate)
        terms[metric] = {
            "usage": used,
            "limit": limit,
            "target": target,
            "shape": shape,
            "weight": weight,
            "score": score,
        }
        scores.append(score)
        weighted += weight * score
        total_weight += weight
    if not terms or (missing and config.missing_metric == "fail"):
        return EfficiencyScore(None, terms, tuple(missing))
    if config.combine == "min":
        combined = min(scores)
    elif config.combine == "product":
        combined = math.prod(scores)
    else:
        # Every present budget may carry weight 0 when another, missing one held it all.
        combined = weighted / total_weight if total_weight else 1.0
    return EfficiencyScore(min(1.0, max(0.0, combined)), terms, tuple(missing))


def measure(sample: Sample) -> dict[str, float | None]:
    """Read a rollout's usage from its metrics, falling back to its trajectory."""
    m = sample.metrics
    turns = m.turns if m else None
    tool_calls = m.tool_calls if m else None
    if sample.trajectory is not None:
        if turns is None:
            turns = sum(1 for msg in sample.trajectory if msg.role == "assistant")
        if tool_calls is None:
            tool_calls = sum(len(msg.tool_calls or ()) for msg in sample.trajectory)
    prompt = m.prompt_tokens if m else None
    completion = m.completion_tokens if m else None
    total = prompt + completion if prompt is not None and completion is not None else None
    return {
        "turns": turns,
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": total,
        "wall_s": m.wall_s if m else None,
        "tool_calls": tool_calls,
    }


class EfficiencyGrader(Grader[EfficiencyConfig]):
    """Scores turns, tokens, wall time and tool calls against budgets."""

    name: ClassVar[str] = "efficiency"
    version: ClassVar[str] = "1"
    config_model = EfficiencyConfig
    description: ClassVar[str] = "turns, tokens, wall seconds and tool calls against budgets"
    default_timeout_s: ClassVar[float] = 5.0
    inline: ClassVar[bool] = True

    async def grade(self, sample: Sample, config: EfficiencyConfig) -> GradeResult:
        """Score the sample's recorded usage."""
        return self.grade_inline(sample, config)

    def grade_inline(self, sample: Sample, config: EfficiencyConfig) -> GradeResult:
        """Score the sample's recorded usage (pure, no I/O)."""
        result = score_efficiency(measure(sample), config)
        details: dict[str, Any] = {"terms": result.terms, "missing": list(result.missing)}
        if result.score is None:
            what = ", ".join(result.missing) or "any budgeted metric"
            return self.failed(
                FailureKind.MISSING_INPUT, f"the rollout did not report {what}", details=details
            )
        return self.scored(result.score, details=details)
