"""The ``answer`` grader: 1.0 when the final answer equals the gold, 0.0 otherwise.

Who is to blame for what:

* a gold that does not parse (or takes past the limit to read) is the task's:
  ``invalid_task``, and the reward abstains (never 1.0, never 0);
* no final answer, a hedge (several answers, "A or B", an empty box, an echo,
  an unclosed think block) is the candidate's: 0, with the hedge as a violation;
* a check the candidate's text keeps busy past ``check_timeout_s``, or makes
  our code raise, is the candidate's too: 0 with ``details.failure_kind``
  (``fail_as_zero``), never an abstention a policy could learn to reach;
* a worker that cannot start or dies before the check began is ours
  (``grader_error``, retried, then the reward abstains).
"""

from __future__ import annotations

import os
from typing import Annotated, Any, ClassVar, Literal

from pydantic import Field

from arbiter.graders.answers.check import GOLD, PREDICTION, check_response
from arbiter.graders.answers.equivalence import warm_up
from arbiter.graders.answers.pool import (
    CheckCrashed,
    CheckFailed,
    CheckPool,
    CheckStarved,
    CheckTimeout,
)
from arbiter.graders.base import Grader, GraderConfig
from arbiter.graders.types import AnswerTask, FailureKind, GradeResult, Sample, Violation

__all__ = ["AnswerConfig", "AnswerGrader", "prompt_text"]


class AnswerConfig(GraderConfig):
    """How the answer grader checks a final answer."""

    check_timeout_s: Annotated[float, Field(gt=0, le=120, allow_inf_nan=False)] = Field(
        default=5.0,
        description=(
            "Each check's limit, in its worker's CPU time from when a worker takes it "
            "(never the queue, never a wait for a core); a check past it is killed with "
            "its worker."
        ),
    )
    measure: Literal["correct", "format"] = Field(
        default="correct",
        description=(
            "correct: 1.0 when the final answer equals the gold; format: 1.0 when one final "
            "answer stands where the task's extract looks, unhedged, right or wrong (its "
            "hedges are reported by the 'correct' component, not twice)."
        ),
    )
    fail_as_zero: bool = Field(
        default=True,
        description=(
            "A check the candidate's answer keeps past its limit, or makes our code raise, "
            "scores 0 (its kind in details.failure_kind); off: a typed failure for the "
            "rubric's on_missing."
        ),
    )


def prompt_text(sample: Sample) -> str:
    """Return the problem's text: the prompt, or its user and system messages."""
    if isinstance(sample.prompt, str):
        return sample.prompt
    parts: list[str] = []
    for message in sample.prompt:
        if message.role in ("user", "system") and isinstance(message.content, str):
            parts.append(message.content)
    return "\n".join(parts)


class AnswerGrader(Grader[AnswerConfig]):
    """Grades a final answer (math, number, choice or text) against the task's gold."""

    name: ClassVar[str] = "answer"
    task_kinds: ClassVar[frozenset[str] | None] = frozenset({"answer"})
    version: ClassVar[str] = "1"
    config_model = AnswerConfig
    description: ClassVar[str] = (
        "final answer (math, number, choice, text) against the gold, in killable workers"
    )
    # Our own bound on a job, the queue included; the candidate's is check_timeout_s.
    default_timeout_s: ClassVar[float] = 300.0

    def __init__(self, workers: int | None = None) -> None:
        # More workers than cores: a worker held by a check the candidate keeps busy
        # (until its limit, then a restart) must not stall every other sample's queue.
        count = workers if workers is not None else max(4, 2 * len(os.sched_getaffinity(0)))
        self.pool = CheckPool(count, warm_up=warm_up)

    async def warm(self) -> None:
        """Start the first worker (it imports the checkers); more start as checks queue."""
        await self.pool.start()

    def close(self) -> None:
        """Stop the workers."""
        self.pool.close()

    async def grade(self, sample: Sample, config: AnswerConfig) -> GradeResult:
        """Extract the final answer in a worker and compare it with the gold there."""
        task = sample.task
        if not isinstance(task, AnswerTask):
            kind = task.kind if task is not None else "no task"
            return self.failed(FailureKind.NOT_APPLICABLE, f"not an answer task ({kind})")
        try:
            outcome = await self.pool.run(
                check_response,
                config.check_timeout_s,
                gold=task.answer,
                response=sample.response,
                prompt=prompt_text(sample),
                answer_format=task.format,
                choices=list(task.choices) if task.choices is not None else None,
                tolerance=task.tolerance,
                extract=task.extract,
            )
        except CheckFailed as e:
            return self._check_failed(e, config)
        result: dict[str, Any] = outcome.value
        violations = tuple(Violation.model_validate(v) for v in result["violations"])
        details: dict[str, Any] = {
            "answer": _clip(result["answer"]),
            "where": result["where"],
            "check_s": round(outcome.run_s, 6),
        }
        if config.measure == "format":
            found = result["answer"] is not None and not violations
            details["reason"] = result["reason"]
            return self.scored(1.0 if found else 0.0, details=details)
        if result["equal"] is None:
            details["reason"] = result["reason"]
            return self.scored(0.0, details=details, violations=violations)
        details["how"] = result["how"]
        return self.scored(1.0 if result["equal"] else 0.0, details=details)

    def _check_failed(self, error: CheckFailed, config: AnswerConfig) -> GradeResult:
        message = str(error)
        if isinstance(error, CheckStarved):
            # The host kept the check off the CPU: ours whatever phase it was in.
            return self.failed(FailureKind.INFRA_TIMEOUT, message, retryable=True)
        if error.phase == GOLD:
            # The gold did not parse, or took past the limit to read: the task's fault.
            return self.failed(FailureKind.INVALID_TASK, f"the gold answer: {message}")
        if error.phase != PREDICTION:
            return self.failed(
                FailureKind.GRADER_ERROR, f"the check did not start: {message}", retryable=True
            )
        kind = FailureKind.TIMEOUT if isinstance(error, CheckTimeout) else FailureKind.GRADER_ERROR
        if isinstance(error, CheckCrashed) or config.fail_as_zero:
            # The candidate's text made the check fail: its 0, never an abstention.
            return self.scored(0.0, details={"failure_kind": kind.value, "failure": message[:500]})
        return self.failed(kind, message)


def _clip(answer: str | None, limit: int = 500) -> str | None:
    if answer is None or len(answer) <= limit:
        return answer
    return answer[:limit] + f"... ({len(answer)} characters)"
