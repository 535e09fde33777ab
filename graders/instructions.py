"""The ``instructions`` grader: IFEval's verifiable instructions, the fraction followed.

The task carries IFEval's own ids and arguments, validated with the sample
(:class:`~arbiter.graders.types.InstructionsTask`), so nothing is skipped or
invented here. The checks (:mod:`arbiter.graders.instruction_checks`) run in
the answer grader's killable workers: a check the response keeps busy past
``check_timeout_s`` is the candidate's 0 (``details.failure_kind``), and the
other samples are unaffected. Every data a check needs is in an installed
package (langdetect's profiles); nothing is downloaded.
"""

from __future__ import annotations

import os
from typing import Annotated, Any, ClassVar, Literal

from pydantic import Field

from arbiter.graders.answers.pool import CheckFailed, CheckPool, CheckStarved, CheckTimeout
from arbiter.graders.base import Grader, GraderConfig
from arbiter.graders.instruction_checks import check_instruction, detect_language
from arbiter.graders.types import FailureKind, GradeResult, InstructionsTask, Sample

__all__ = [
    "InstructionsConfig",
    "InstructionsGrader",
    "follow_instructions",
    "score_instructions",
    "warm_up",
]


class InstructionsConfig(GraderConfig):
    """How the instructions grader scores."""

    mode: Literal["strict", "loose"] = Field(
        default="strict",
        description=(
            "strict: the response as it is; loose: IFEval's upper bound (the response "
            "without its first or last line, or without '*', may follow instead)."
        ),
    )
    binary: bool = Field(
        default=False, description="1 only when every instruction is followed, else 0."
    )
    check_timeout_s: Annotated[float, Field(gt=0, le=120, allow_inf_nan=False)] = Field(
        default=10.0, description="The checks' limit per sample, in CPU time from a worker's take."
    )


def warm_up() -> None:
    """Load langdetect's profiles in a fresh worker, so no sample's check pays for it."""
    detect_language("This sentence is written in English.")


def follow_instructions(
    *, response: str, instruction_ids: list[str], kwargs: list[dict[str, Any]]
) -> dict[str, list[bool]]:
    """Return, per instruction, whether ``response`` follows it, strict and loose."""
    strict: list[bool] = []
    loose: list[bool] = []
    for index, instruction_id in enumerate(instruction_ids):
        args = kwargs[index] if kwargs else {}
        followed = check_instruction(instruction_id, args, response, loose=False)
        strict.append(followed)
        loose.append(followed or check_instruction(instruction_id, args, response, loose=True))
    return {"strict": strict, "loose": loose}


def score_instructions(followed: list[bool], *, binary: bool) -> float:
    """Return the fraction followed, or 1/0 for all/not all when ``binary`` (pure)."""
    if binary:
        return 1.0 if all(followed) else 0.0
    return sum(followed) / len(followed)


class InstructionsGrader(Grader[InstructionsConfig]):
    """Grades IFEval's verifiable instructions: fraction followed, strict or loose."""

    name: ClassVar[str] = "instructions"
    task_kinds: ClassVar[frozenset[str] | None] = frozenset({"instructions"})
    version: ClassVar[str] = "1"
    config_model = InstructionsConfig
    description: ClassVar[str] = "IFEval's 25 verifiable instructions, strict or loose"
    default_timeout_s: ClassVar[float] = 300.0

    def __init__(self, workers: int | None = None) -> None:
        count = workers if workers is not None else max(4, 2 * len(os.sched_getaffinity(0)))
        self.pool = CheckPool(count, warm_up=warm_up)

    async def warm(self) -> None:
        """Start the first worker (it loads langdetect's profiles); more start as checks queue."""
        await self.pool.start()

    def close(self) -> None:
        """Stop the workers."""
        self.pool.close()

    async def grade(self, sample: Sample, config: InstructionsConfig) -> GradeResult:
        """Check every instruction in a worker; score the fraction followed (or all)."""
        task = sample.task
        if not isinstance(task, InstructionsTask):
            kind = task.kind if task is not None else "no task"
            return self.failed(FailureKind.NOT_APPLICABLE, f"not an instructions task ({kind})")
        try:
            outcome = await self.pool.run(
                follow_instructions,
                config.check_timeout_s,
                response=sample.response,
                instruction_ids=list(task.instruction_id_list),
                kwargs=[dict(k) for k in task.kwargs],
            )
        except CheckStarved as e:  # the host kept the check off the CPU: ours
            return self.failed(FailureKind.INFRA_TIMEOUT, str(e), retryable=True)
        except CheckFailed as e:
            # The arguments were validated with the sample: only the response is left
            # to blame, so a check it keeps busy or breaks is its 0, never an abstention.
            cause = FailureKind.TIMEOUT if isinstance(e, CheckTimeout) else FailureKind.GRADER_ERROR
            return self.scored(0.0, details={"failure_kind": cause.value, "failure": str(e)[:500]})
        followed: dict[str, list[bool]] = outcome.value
        chosen = followed[config.mode]
        details: dict[str, Any] = {
            "mode": config.mode,
            # Pairs, not a mapping: an id may repeat, each entry checked on its own.
            "followed": [
                [instruction_id, ok]
                for instruction_id, ok in zip(task.instruction_id_list, chosen, strict=True)
            ],
            "strict": followed["strict"],
            "loose": followed["loose"],
            "check_s": round(outcome.run_s, 6),
        }
        return self.scored(score_instructions(chosen, binary=config.binary), details=details)
