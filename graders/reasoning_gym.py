"""The ``reasoning_gym`` grader: an entry scored by reasoning-gym's own scorer for its dataset.

The entry (question, oracle answer, metadata naming its ``source_dataset``) is
validated with the sample. The candidate's answer is the last ``<answer>`` tag
after any think block (reasoning-gym's own ``extract_answer``: the tag's text,
stripped), or the last box, or the whole text, as ``extract`` says. The scorer
is the package's (``get_score_answer_fn``), built once per dataset in each
worker and kept, and it runs in the killable workers: a scorer the answer keeps
busy past ``check_timeout_s``, or that the answer makes raise, is the
candidate's 0. A dataset whose scorer cannot be built is the task's
(``invalid_task``). ``binary`` turns partial credit off: reasoning-gym's default
scorer pays ``len(oracle) / len(answer)`` for an answer that contains the
oracle, which a policy can learn to exploit by padding.
"""

from __future__ import annotations

import math
import os
import re
from functools import cache
from typing import Annotated, Any, ClassVar, Literal

from pydantic import Field

from arbiter.graders.answers.extraction import after_thinking, boxed_contents
from arbiter.graders.answers.pool import (
    CheckFailed,
    CheckPool,
    CheckStarved,
    CheckTimeout,
    report_phase,
)
from arbiter.graders.base import Grader, GraderConfig
from arbiter.graders.types import (
    FailureKind,
    GradeResult,
    ReasoningGymTask,
    Sample,
    Violation,
    ViolationType,
)

__all__ = [
    "ReasoningGymConfig",
    "ReasoningGymGrader",
    "extract_gym_answer",
    "score_entry",
    "scorer_for",
]

#: The phases of a check (as the answer grader's): building the scorer, then scoring.
SCORER = "gold"
ANSWER = "prediction"

_TAG = re.compile(r"<answer>\s?(.*?)\s?</answer>", re.DOTALL)


class ReasoningGymConfig(GraderConfig):
    """How the reasoning-gym grader reads the answer and keeps the score."""

    extract: Literal["answer_tag", "boxed", "none"] = Field(
        default="answer_tag",
        description=(
            "Where the answer is: the last <answer> tag (reasoning-gym's own convention), "
            "the last \\boxed{}, or the whole text after any think block."
        ),
    )
    binary: bool = Field(
        default=False, description="1 only for a full score; partial credit becomes 0."
    )
    check_timeout_s: Annotated[float, Field(gt=0, le=120, allow_inf_nan=False)] = Field(
        default=10.0, description="The scorer's limit per sample, in CPU time from a worker's take."
    )


def extract_gym_answer(text: str, extract: str) -> str | None:
    """Return the answer in ``text`` (after thinking) as ``extract`` says, or None."""
    if extract == "answer_tag":
        matches = _TAG.findall(text)
        return matches[-1].strip() if matches else None
    if extract == "boxed":
        boxes = boxed_contents(text)
        return boxes[-1].strip() if boxes else None
    return text.strip()


@cache
def scorer_for(dataset: str) -> Any:
    """Return reasoning-gym's scorer for ``dataset``, built once per process."""
    import reasoning_gym  # type: ignore[import-untyped]

    return reasoning_gym.get_score_answer_fn(dataset)


def warm_up() -> None:
    """Import reasoning-gym in a fresh worker."""
    import reasoning_gym  # noqa: F401


def score_entry(*, response: str, entry: dict[str, Any], extract: str) -> dict[str, Any]:
    """Score ``response`` on ``entry`` with its dataset's scorer; plain data back."""
    report_phase(SCORER)
    scorer = scorer_for(entry["metadata"]["source_dataset"])
    report_phase(ANSWER)
    text, why = after_thinking(response)
    if text is None:
        return {"score": 0.0, "answer": None, "reason": why, "unclosed": True}
    answer = extract_gym_answer(text, extract)
    score = float(scorer(answer=answer, entry=entry))
    return {"score": score, "answer": answer, "reason": "", "unclosed": False}


class ReasoningGymGrader(Grader[ReasoningGymConfig]):
    """Grades a reasoning-gym entry with the package's own scorer for its dataset."""

    name: ClassVar[str] = "reasoning_gym"
    task_kinds: ClassVar[frozenset[str] | None] = frozenset({"reasoning_gym"})
    version: ClassVar[str] = "1"
    config_model = ReasoningGymConfig
    description: ClassVar[str] = "reasoning-gym's own scorer for the entry's dataset"
    default_timeout_s: ClassVar[float] = 300.0

    def __init__(self, workers: int | None = None) -> None:
        count = workers if workers is not None else max(4, 2 * len(os.sched_getaffinity(0)))
        self.pool = CheckPool(count, warm_up=warm_up)

    async def warm(self) -> None:
        """Start the first worker (it imports reasoning-gym); more start as checks queue."""
        await self.pool.start()

    def close(self) -> None:
        """Stop the workers."""
        self.pool.close()

    async def grade(self, sample: Sample, config: ReasoningGymConfig) -> GradeResult:
        """Score the sample's answer with the entry's dataset scorer, in a worker."""
        task = sample.task
        if not isinstance(task, ReasoningGymTask):
            kind = task.kind if task is not None else "no task"
            return self.failed(FailureKind.NOT_APPLICABLE, f"not a reasoning_gym task ({kind})")
        dataset = task.entry["metadata"]["source_dataset"]
        try:
            outcome = await self.pool.run(
                score_entry,
                config.check_timeout_s,
                response=sample.response,
                entry=task.entry,
                extract=config.extract,
            )
        except CheckStarved as e:  # the host kept the check off the CPU: ours
            return self.failed(FailureKind.INFRA_TIMEOUT, str(e), retryable=True)
        except CheckFailed as e:
            if e.phase == SCORER:
                return self.failed(
                    FailureKind.INVALID_TASK, f"no scorer for dataset {dataset!r}: {e}"
                )
            if e.phase != ANSWER:
                return self.failed(FailureKind.GRADER_ERROR, str(e), retryable=True)
            cause = FailureKind.TIMEOUT if isinstance(e, CheckTimeout) else FailureKind.GRADER_ERROR
            return self.scored(0.0, details={"failure_kind": cause.value, "failure": str(e)[:500]})
        result: dict[str, Any] = outcome.value
        raw = result["score"]
        details: dict[str, Any] = {
            "dataset": dataset,
            "answer": result["answer"] if result["answer"] is None else result["answer"][:500],
            "raw_score": raw,
            "check_s": round(outcome.run_s, 6),
        }
        if result["unclosed"]:
            violation = Violation(
                type=ViolationType.UNCLOSED_THINKING, detail=result["reason"], source="static"
            )
            return self.scored(0.0, details=details, violations=(violation,))
        if not (math.isfinite(raw) and 0.0 <= raw <= 1.0):
            return self.failed(
                FailureKind.INVALID_SCORE, f"the {dataset} scorer returned {raw!r}", details=details
            )
        score = (1.0 if raw == 1.0 else 0.0) if config.binary else raw
        return self.scored(score, details=details)
