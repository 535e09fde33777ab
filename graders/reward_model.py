"""Reward-model grader: a learned scalar reward, normalized, then squashed into [0, 1].

A reward model's raw score is an unbounded logit, and a GradeResult's score is
in [0, 1]. The mapping is explicit and configurable, and the raw score (and
the normalized one) are kept in ``details`` so nothing is lost:

1. **Objectives.** A multi-objective head gives one value per objective; the
   grader uses ``objective`` (one of them) or the ``objective_weights``-weighted
   sum (default: the first objective).
2. **Normalization** (:mod:`arbiter.reward_models.normalize`): ``none``; ``affine``
   with a fixed ``mean``/``std`` (a config without both is refused at load);
   ``running`` z-score; or ``group`` z-score within the sample's ``group_id``
   (Bradley-Terry scores only compare answers to the same prompt). ``group``
   needs a ``group_id`` on the sample.
3. **Squashing** to [0, 1], with ``x`` the normalized score:

   * ``sigmoid``: ``1 / (1 + exp(-(x - center) / temperature))`` — the default,
     the Bradley-Terry probability of beating an answer scored ``center``;
   * ``cdf``: the standard normal CDF of ``(x - center) / temperature`` — the
     natural choice after a z-score;
   * ``linear``: ``(x - low) / (high - low)`` clipped to [0, 1].

The grader is given its models by name: ready clients
(``models={"default": client}``, registered with ``registry.add_instance``),
or a :class:`~arbiter.reward_models.model_set.ModelSet` of declared ones (a models
file), built on :meth:`RewardModelGrader.warm`. A rubric naming a model the
service does not serve, or one that could not be loaded, gets a
``judge_error`` failure, not a number.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping
from typing import Annotated, Any, ClassVar, Literal

from pydantic import Field, model_validator

from arbiter.graders.base import Grader, GraderConfig
from arbiter.graders.types import FailureKind, GradeResult, Sample
from arbiter.reward_models.client import RewardModelClient, RewardOutput
from arbiter.reward_models.errors import RewardModelError
from arbiter.reward_models.model_set import ModelSet
from arbiter.reward_models.normalize import AffineNormalizer, GroupZScorer, RunningZNormalizer

__all__ = ["RewardModelConfig", "RewardModelGrader", "combine_objectives", "squash", "to_messages"]

Finite = Annotated[float, Field(allow_inf_nan=False)]
Positive = Annotated[float, Field(gt=0, allow_inf_nan=False)]


class RewardModelConfig(GraderConfig):
    """Which reward model, and how its raw score becomes a score in [0, 1]."""

    model: str = Field(default="default", description="A reward model the service serves.")
    objective: str | None = Field(default=None, description="Use this objective's value.")
    objective_weights: dict[str, Finite] | None = Field(
        default=None, description="Weighted sum of objectives (instead of one objective)."
    )
    normalize: Literal["none", "affine", "running", "group"] = "none"
    mean: Finite | None = Field(default=None, description="affine: the raw scores' mean.")
    std: Positive | None = Field(default=None, description="affine: the raw scores' std.")
    running_min_count: int = Field(default=16, ge=2)
    squash: Literal["sigmoid", "cdf", "linear"] = "sigmoid"
    center: Finite = 0.0
    temperature: Positive = 1.0
    low: Finite = -5.0
    high: Finite = 5.0
    deadline_s: Positive | None = Field(
        default=None, description="Give up on a queued request after this long."
    )

    @model_validator(mode="after")
    def _consistent(self) -> RewardModelConfig:
        if self.normalize == "affine" and (self.mean is None or self.std is None):
            raise ValueError("normalize: affine needs both mean and std (measured offline)")
        if self.objective is not None and self.objective_weights is not None:
            raise ValueError("set objective or objective_weights, not both")
        if self.squash == "linear" and self.high <= self.low:
            raise ValueError("squash: linear needs high > low")
        return self


def squash(x: float, config: RewardModelConfig) -> float:
    """Map a (normalized) score into [0, 1] as ``config.squash`` says (pure)."""
    if config.squash == "linear":
        return min(1.0, max(0.0, (x - config.low) / (config.high - config.low)))
    z = (x - config.center) / config.temperature
    if config.squash == "cdf":
        return 0.5 * (1.0 + math.erf(z / math.sqrt(2.0)))
    # Two branches so exp never overflows for large |z|.
    if z >= 0:
        return 1.0 / (1.0 + math.exp(-z))
    e = math.exp(z)
    return e / (1.0 + e)


def combine_objectives(output: RewardOutput, config: RewardModelConfig) -> float:
    """Return the one raw score the config asks for (pure).

    Raises:
        KeyError: an objective the model does not have.
    """
    values = output.by_objective()
    if config.objective_weights is not None:
        return math.fsum(w * values[name] for name, w in config.objective_weights.items())
    if config.objective is not None:
        return values[config.objective]
    return output.values[0]


def _text(content: str | list[dict[str, Any]] | None) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    return "".join(str(part.get("text", "")) for part in content if part.get("type") == "text")


def to_messages(sample: Sample) -> list[dict[str, str]]:
    """Return the sample as a chat whose last message is the response."""
    if isinstance(sample.prompt, str):
        messages = [{"role": "user", "content": sample.prompt}] if sample.prompt else []
    else:
        messages = [{"role": m.role, "content": _text(m.content)} for m in sample.prompt]
    return [*messages, {"role": "assistant", "content": sample.response}]


class RewardModelGrader(Grader[RewardModelConfig]):
    """Scores a response with a learned reward model."""

    name: ClassVar[str] = "reward_model"
    version: ClassVar[str] = "1"
    config_model = RewardModelConfig
    description: ClassVar[str] = "a transformers or vLLM reward model's score, squashed to [0, 1]"
    default_timeout_s: ClassVar[float] = 60.0

    def __init__(
        self,
        models: Mapping[str, RewardModelClient] | ModelSet[RewardModelClient] | None = None,
    ) -> None:
        """Serve the given reward-model clients (or declared models) by name."""
        self.models: ModelSet[RewardModelClient] = (
            models
            if isinstance(models, ModelSet)
            else ModelSet.of("reward model", dict(models or {}))
        )
        self._running: dict[str, RunningZNormalizer] = {}
        self._groups: dict[str, GroupZScorer] = {}

    async def warm(self) -> None:
        """Load every declared reward model (one that fails is marked unavailable)."""
        await self.models.warm()

    def close(self) -> None:
        """Release the models (stops Ray replicas)."""
        self.models.close()

    async def grade(self, sample: Sample, config: RewardModelConfig) -> GradeResult:
        """Score the sample; group normalization waits for the group's other members."""
        try:
            client = await self.models.get(config.model)
        except RewardModelError as e:
            return self.failed(FailureKind.JUDGE_ERROR, f"{type(e).__name__}: {e}")
        if client is None:
            return self.failed(
                FailureKind.JUDGE_ERROR,
                f"no reward model named {config.model!r} is served here "
                f"(served: {', '.join(self.models.names()) or 'none'})",
            )
        key = config.model_dump_json()  # statistics are per model and per configuration
        ticket = None
        if config.normalize == "group":
            if sample.group_id is None:
                return self.failed(
                    FailureKind.MISSING_INPUT, "normalize: group needs the sample's group_id"
                )
            # Join before the first await, so every member of the batch is counted
            # before any member's score can settle the group.
            ticket = self._groups.setdefault(key, GroupZScorer()).join(sample.group_id)
        deadline = time.monotonic() + config.deadline_s if config.deadline_s else None
        try:
            output = await client.score(to_messages(sample), deadline=deadline)
            raw = combine_objectives(output, config)
        except RewardModelError as e:
            if ticket is not None:
                self._groups[key].abandon(ticket)
            return self.failed(
                FailureKind.JUDGE_ERROR, f"{type(e).__name__}: {e}", retryable=e.retryable
            )
        except KeyError as e:
            if ticket is not None:
                self._groups[key].abandon(ticket)
            return self.failed(FailureKind.JUDGE_ERROR, f"the model has no objective {e}")
        except BaseException:
            # Cancelled (a deadline): withdraw, so the rest of the group can settle.
            if ticket is not None:
                self._groups[key].abandon(ticket)
            raise
        details: dict[str, Any] = {
            "model": config.model,
            "raw": raw,
            "objectives": output.by_objective(),
            "tokens": output.tokens,
            "normalize": config.normalize,
            "squash": config.squash,
        }
        if output.prompt_tokens_cut or output.response_tokens_cut:
            details["truncated"] = {
                "prompt_tokens": output.prompt_tokens_cut,
                "response_tokens": output.response_tokens_cut,
            }
        if config.normalize == "none":
            normalized = raw
        elif config.normalize == "affine":
            normalized = AffineNormalizer(config.mean, config.std)(raw)
        elif config.normalize == "running":
            running = self._running.setdefault(key, RunningZNormalizer(config.running_min_count))
            normalized = running(raw)
        else:
            assert ticket is not None
            z = await self._groups[key].settle(ticket, raw)
            assert z is not None
            normalized = z
        details["normalized"] = normalized
        return self.scored(squash(normalized, config), details=details)
