"""LLM-judge grader: a chat model grades the response against rubric criteria.

Each criterion has Prometheus-style levels 1..N, each with a description (what
the judge reads) and a value in [0, 1] (what the level is worth). The judge is
asked once per criterion (and vote) with a prompt from
``reward_models/templates/<template>.txt``; its verdict is the last
``[RESULT] k`` of its answer, weighted by its logprobs when the backend returns
them (see :mod:`arbiter.reward_models.judge`). The score is the criteria's
weighted mean of values.

In ``pairwise`` mode the judge instead compares the response with a baseline
response (``labels.baseline_response``) per criterion, twice, with the order
swapped: a consistent win is worth 1.0, a consistent loss 0.0, and a verdict
that flips with the order is a tie, 0.5 — position bias is not a preference.
With logprobs, a consistent verdict is worth the mean win probability.

The response reaches the judge as data: between markers it cannot close, its
verdict tags defanged, under a system prompt that says so. Text in it written
for the judge (its verdict tag, its markers, words to the grader, a demand for
a grade, role markers: :mod:`arbiter.reward_models.judge.injection`) is a
``judge_injection`` violation, and with ``injection: zero`` the component's 0.

Failures are typed and carry no score: an answer without a verdict is asked
again (``parse_retries``), then it is a ``judge_parse_error`` (not retryable;
but when the response carries text for its judge, the failure is the
response's: 0 with the violation, never an abstention), an unreachable or overloaded judge a
retryable ``judge_error``, a judge that did not answer in time a retryable
``judge_timeout``; ``details.judge_failure`` says which (``parse_error``,
``unavailable``, ``timeout``, ``bad_answer``). One failed criterion fails the
component: a partial set of criteria is not the rubric's score.

The grader is given its judges by name: ready clients
(``judges={"default": JudgeClient(...)}``, registered with
``registry.add_instance``) or a :class:`~arbiter.reward_models.model_set.ModelSet` of
declared ones (a models file). A declared judge's sampling applies where the
rubric leaves a setting unset, and its ``max_tokens`` caps the rubric's. The
tokens the judge read and wrote are in ``details.tokens``, logged with the
reward.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Mapping, Sequence
from typing import Annotated, Any, ClassVar, Literal, TypeVar

from pydantic import Field, model_validator

from arbiter.graders.base import Grader, GraderConfig
from arbiter.graders.types import FailureKind, GradeResult, Sample, Violation, ViolationType
from arbiter.reward_models.errors import (
    ConfigurationError,
    JudgeError,
    JudgeParseError,
    JudgeTimeoutError,
    JudgeUnavailableError,
    ModelUnavailableError,
)
from arbiter.reward_models.judge import (
    Criterion,
    JudgeClient,
    JudgeResult,
    Level,
    PairwiseResult,
    SamplingParams,
    load_template,
    render_pairwise_prompt,
    render_prompt,
)
from arbiter.reward_models.judge.injection import find_injections
from arbiter.reward_models.model_set import ModelSet

__all__ = ["CriterionConfig", "LLMJudgeConfig", "LLMJudgeGrader", "LevelConfig"]

Unit = Annotated[float, Field(ge=0, le=1, allow_inf_nan=False)]


class LevelConfig(GraderConfig):
    """One anchor: the level's number, what it means, and what it is worth."""

    score: int = Field(ge=1, le=9)
    description: str = Field(min_length=1)
    value: Unit


class CriterionConfig(GraderConfig):
    """A criterion with its levels 1..N (2 to 9 of them, in order)."""

    name: str = Field(min_length=1)
    description: str = ""
    weight: Annotated[float, Field(ge=0, allow_inf_nan=False)] = 1.0
    levels: list[LevelConfig] = Field(
        default_factory=list, max_length=9, description="Required in absolute mode."
    )

    @model_validator(mode="after")
    def _levels_in_order(self) -> CriterionConfig:
        if self.levels:
            try:
                self.criterion()
            except ConfigurationError as e:
                raise ValueError(str(e)) from None
        return self

    def criterion(self) -> Criterion:
        """Return the criterion the judge layer works with."""
        return Criterion(
            self.name,
            self.description,
            tuple(Level(lv.score, lv.description, lv.value) for lv in self.levels),
        )


class LLMJudgeConfig(GraderConfig):
    """Which judge, what it grades, and how it samples."""

    judge: str = Field(default="default", description="A judge the service serves.")
    mode: Literal["absolute", "pairwise"] = Field(
        default="absolute",
        description="absolute: grade on level anchors; pairwise: compare with a baseline "
        "response in both orders (a verdict that flips is a tie).",
    )
    criteria: list[CriterionConfig] = Field(min_length=1)
    template: str | None = Field(default=None, description="Default: the mode's name.")
    baseline_label: str = Field(
        default="baseline_response", description="pairwise: sample label holding the baseline."
    )
    reference_answer: str | None = Field(
        default=None, description="A fixed reference answer shown to the judge."
    )
    reference_label: str | None = Field(
        default="reference_answer",
        description="Sample label holding a per-sample reference answer (wins over the fixed one).",
    )
    votes: int = Field(default=1, ge=1, le=16)
    aggregate: Literal["mean", "median"] = "mean"
    temperature: Annotated[float, Field(ge=0, le=2)] = 0.0
    max_tokens: int = Field(default=512, ge=1, le=8192)
    top_logprobs: int = Field(default=20, ge=0, le=20)
    seed: int | None = None
    use_logprobs: bool = True
    deadline_s: Annotated[float, Field(gt=0)] | None = None
    parse_retries: int = Field(
        default=1,
        ge=0,
        le=3,
        description="Times an answer without a verdict is asked again before it counts as one.",
    )
    injection: Literal["flag", "zero"] = Field(
        default="flag",
        description="A response carrying text for its judge (its verdict tag, its markers, "
        "words to the grader, role markers): flag records a judge_injection violation for the "
        "rubric's penalties; zero also scores the component 0. Either way, a judge that then "
        "gives no verdict is the response's doing: 0 with the violation, never an abstention.",
    )

    @property
    def template_name(self) -> str:
        """Return the prompt template in use."""
        return self.template or self.mode

    @model_validator(mode="after")
    def _consistent(self) -> LLMJudgeConfig:
        try:
            load_template(self.template_name)
        except ConfigurationError as e:
            raise ValueError(str(e)) from None
        if self.mode == "absolute":
            bare = [c.name for c in self.criteria if len(c.levels) < 2]
            if bare:
                raise ValueError(f"absolute mode needs levels 1..N on criteria {bare}")
        elif self.votes != 1:
            raise ValueError("pairwise mode takes one verdict per order (votes: 1)")
        if math.fsum(c.weight for c in self.criteria) <= 0:
            raise ValueError("criterion weights must not all be 0")
        if len({c.name for c in self.criteria}) != len(self.criteria):
            raise ValueError("criterion names must be distinct")
        return self


def _instruction(sample: Sample) -> str:
    if isinstance(sample.prompt, str):
        return sample.prompt
    lines = []
    for message in sample.prompt:
        content = message.content
        if isinstance(content, list):
            content = "".join(str(p.get("text", "")) for p in content if p.get("type") == "text")
        lines.append(f"{message.role}: {content or ''}")
    return "\n".join(lines)


_Judged = TypeVar("_Judged", JudgeResult, PairwiseResult)


def _weighted(
    weights: Mapping[str, float], results: Mapping[str, JudgeResult | PairwiseResult]
) -> float:
    """Combine the criteria's values by their weights, into [0, 1]."""
    score = math.fsum(weights[n] * r.value for n, r in results.items()) / math.fsum(
        weights.values()
    )
    return min(1.0, max(0.0, score))


class LLMJudgeGrader(Grader[LLMJudgeConfig]):
    """Grades a response with an LLM judge against rubric criteria."""

    name: ClassVar[str] = "llm_judge"
    version: ClassVar[str] = "1"
    config_model = LLMJudgeConfig
    description: ClassVar[str] = "an LLM judge grading criteria with level anchors"
    #: A sampling judge may grade the same answer differently twice; audits report
    #: its determinism without holding it to 100%.
    deterministic: ClassVar[bool] = False
    default_timeout_s: ClassVar[float] = 120.0

    def __init__(
        self, judges: Mapping[str, JudgeClient] | ModelSet[JudgeClient] | None = None
    ) -> None:
        """Serve the given judge clients (or declared judges) by name."""
        self.judges: ModelSet[JudgeClient] = (
            judges if isinstance(judges, ModelSet) else ModelSet.of("judge", dict(judges or {}))
        )

    async def warm(self) -> None:
        """Build every declared judge (one that fails is marked unavailable)."""
        await self.judges.warm()

    def close(self) -> None:
        """Release the judges."""
        self.judges.close()

    async def grade(self, sample: Sample, config: LLMJudgeConfig) -> GradeResult:
        """Ask the judge once per criterion (and vote) and combine the values."""
        try:
            client = await self.judges.get(config.judge)
        except ModelUnavailableError as e:
            return self.failed(
                FailureKind.JUDGE_ERROR,
                f"{type(e).__name__}: {e}",
                details={"judge_failure": "unavailable"},
            )
        if client is None:
            return self.failed(
                FailureKind.JUDGE_ERROR,
                f"no judge named {config.judge!r} is served here "
                f"(served: {', '.join(self.judges.names()) or 'none'})",
            )
        reference = config.reference_answer
        if config.reference_label and sample.labels and config.reference_label in sample.labels:
            reference = str(sample.labels[config.reference_label])
        params = client.defaults.apply(
            SamplingParams(
                temperature=config.temperature,
                max_tokens=config.max_tokens,
                top_logprobs=config.top_logprobs if config.use_logprobs else 0,
                seed=config.seed,
            ),
            config.model_fields_set,
        )
        votes = config.votes
        if "votes" not in config.model_fields_set and client.defaults.votes is not None:
            votes = client.defaults.votes
        deadline = time.monotonic() + config.deadline_s if config.deadline_s else None
        instruction = _instruction(sample)
        injected = self._injections(sample.response)
        if config.mode == "pairwise":
            return await self._pairwise(
                sample, config, client, params, reference, deadline, injected
            )
        criteria = [c.criterion() for c in config.criteria]
        outcomes = await asyncio.gather(
            *(
                client.judge(
                    render_prompt(
                        config.template_name,
                        instruction=instruction,
                        response=sample.response,
                        criterion=criterion,
                        reference=reference,
                    ),
                    criterion,
                    params,
                    votes=votes,
                    aggregate=config.aggregate,
                    use_logprobs=config.use_logprobs,
                    deadline=deadline,
                    parse_retries=config.parse_retries,
                )
                for criterion in criteria
            ),
            return_exceptions=True,
        )
        results = self._collect([c.name for c in criteria], outcomes, injected)
        if isinstance(results, GradeResult):
            return results
        weights = {c.name: c.weight for c in config.criteria}
        details: dict[str, Any] = {
            "judge": client.backend.model,
            "criteria": {
                name: {
                    "value": r.value,
                    "weight": weights[name],
                    "levels": [v.level for v in r.verdicts],
                    "method": sorted({v.method for v in r.verdicts}),
                    "distribution": r.verdicts[0].distribution,
                    "cached_votes": r.cached,
                }
                for name, r in results.items()
            },
            "tokens": {
                "prompt": sum(r.prompt_tokens for r in results.values()),
                "completion": sum(r.completion_tokens for r in results.values()),
            },
        }
        return self._judged(_weighted(weights, results), details, config, injected)

    @staticmethod
    def _injections(response: str) -> tuple[Violation, ...]:
        """The response's text for its judge, as ``judge_injection`` violations."""
        return tuple(
            Violation(
                type=ViolationType.JUDGE_INJECTION,
                detail=f"{found.kind}: the response carries text for its judge",
                snippet=found.text,
                source="static",
            )
            for found in find_injections(response)
        )

    def _judged(
        self,
        score: float,
        details: dict[str, Any],
        config: LLMJudgeConfig,
        injected: tuple[Violation, ...],
    ) -> GradeResult:
        """The judge's score, with the response's injection attempts (0 under ``zero``)."""
        if injected and config.injection == "zero":
            details = {**details, "judge_score": score, "zeroed": "judge_injection"}
            score = 0.0
        return self.scored(score, details=details, violations=injected)

    async def _pairwise(
        self,
        sample: Sample,
        config: LLMJudgeConfig,
        client: JudgeClient,
        params: SamplingParams,
        reference: str | None,
        deadline: float | None,
        injected: tuple[Violation, ...] = (),
    ) -> GradeResult:
        baseline = (sample.labels or {}).get(config.baseline_label)
        if not isinstance(baseline, str):
            return self.failed(
                FailureKind.MISSING_INPUT,
                f"pairwise mode needs the baseline response in labels.{config.baseline_label}",
            )
        instruction = _instruction(sample)

        def prompt(a: str, b: str, criterion: CriterionConfig) -> list[dict[str, str]]:
            return render_pairwise_prompt(
                config.template_name,
                instruction=instruction,
                response_a=a,
                response_b=b,
                criterion=criterion.name,
                criterion_description=criterion.description,
                reference=reference,
            )

        outcomes = await asyncio.gather(
            *(
                client.compare(
                    prompt(sample.response, baseline, c),
                    prompt(baseline, sample.response, c),
                    params,
                    use_logprobs=config.use_logprobs,
                    deadline=deadline,
                    parse_retries=config.parse_retries,
                )
                for c in config.criteria
            ),
            return_exceptions=True,
        )
        results = self._collect([c.name for c in config.criteria], outcomes, injected)
        if isinstance(results, GradeResult):
            return results
        weights = {c.name: c.weight for c in config.criteria}
        details: dict[str, Any] = {
            "judge": client.backend.model,
            "mode": "pairwise",
            "criteria": {
                name: {
                    "value": r.value,
                    "weight": weights[name],
                    "consistent": r.consistent,
                    "verdicts": [
                        p.winner for p in (r.candidate_first, r.candidate_second) if p is not None
                    ],
                }
                for name, r in results.items()
            },
        }
        return self._judged(_weighted(weights, results), details, config, injected)

    def _collect(
        self,
        names: Sequence[str],
        outcomes: Sequence[_Judged | BaseException],
        injected: tuple[Violation, ...] = (),
    ) -> dict[str, _Judged] | GradeResult:
        """Pair each criterion with its outcome; the first judge failure fails the component.

        A judge that gave no verdict (after its retries) for a response that carries
        text for it failed because of that text: the response scores 0, with the
        violation. Abstaining would pay it the trainer's fill, more than a bad answer.
        """
        results: dict[str, _Judged] = {}
        for name, outcome in zip(names, outcomes, strict=True):
            if isinstance(outcome, JudgeParseError) and injected:
                return self.scored(
                    0.0,
                    details={
                        "judge_failure": "parse_error",
                        "blamed": "response",
                        "message": f"criterion {name!r}: {outcome}; the response carries "
                        "text for its judge",
                    },
                    violations=injected,
                )
            if isinstance(outcome, JudgeError):
                return self._judge_failure(name, outcome)
            if isinstance(outcome, BaseException):
                raise outcome
            results[name] = outcome
        return results

    def _judge_failure(self, criterion: str, error: JudgeError) -> GradeResult:
        message = f"criterion {criterion!r}: {type(error).__name__}: {error}"
        if isinstance(error, JudgeParseError):
            return self.failed(
                FailureKind.JUDGE_PARSE_ERROR, message, details={"judge_failure": "parse_error"}
            )
        if isinstance(error, JudgeTimeoutError):
            return self.failed(
                FailureKind.JUDGE_TIMEOUT,
                message,
                retryable=True,
                details={"judge_failure": "timeout"},
            )
        if isinstance(error, JudgeUnavailableError):
            return self.failed(
                FailureKind.JUDGE_ERROR,
                message,
                retryable=True,
                details={"judge_failure": "unavailable"},
            )
        return self.failed(
            FailureKind.JUDGE_ERROR, message, details={"judge_failure": "bad_answer"}
        )
