"""The ``hidden_tests`` term: how a candidate did on cases it never saw.

Its score comes from the tests component's own run (the unit-test grader's
``hidden_cases``, see :mod:`arbiter.graders.hidden_cases`): give both
components the same config (a YAML anchor does it) and one run answers both.
A task without a reference, or whose reference yields no case, gets no hidden
cases: the component is then not applicable, and the rubric leaves it out.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

from arbiter.graders.base import Grader
from arbiter.graders.types import FailureKind, GradeResult, Sample, TaskSpec
from arbiter.graders.unit_tests import UnitTestsConfig, UnitTestsGrader, score_outcomes

if TYPE_CHECKING:
    from arbiter.graders.registry import GraderRegistry

__all__ = ["HiddenTestsGrader"]


class HiddenTestsGrader(Grader[UnitTestsConfig]):
    """The fraction of hidden cases (derived from the task's reference) the candidate passes."""

    name: ClassVar[str] = "hidden_tests"
    version: ClassVar[str] = "1"
    config_model = UnitTestsConfig
    description: ClassVar[str] = (
        "fraction of hidden cases, derived from the task's reference, that the code passes "
        "(same run as the unit tests)"
    )
    default_timeout_s: ClassVar[float] = UnitTestsGrader.default_timeout_s

    def __init__(self, unit_tests: Grader[Any] | None = None) -> None:
        self._unit_tests = unit_tests

    def attach(self, registry: GraderRegistry) -> None:
        """Share the registry's unit-test grader (and so its runs).

        That may be a stand-in for one on a cluster (:mod:`arbiter.graders.executor`):
        its jobs then run there, with their hidden cases, like any unit-test job.
        """
        if self._unit_tests is None:
            self._unit_tests = registry.instance("unit_tests")

    @property
    def unit_tests(self) -> Grader[Any]:
        """The unit-test grader whose runs this term reads."""
        if self._unit_tests is None:
            self._unit_tests = UnitTestsGrader()
        return self._unit_tests

    async def grade(self, sample: Sample, config: UnitTestsConfig) -> GradeResult:
        """Read the hidden cases' outcomes from the (shared) unit-test grading."""
        task = sample.task
        if not _has_hidden_cases(task):
            # Decided by the task alone: nothing the candidate writes makes this term go away.
            return self.failed(
                FailureKind.NOT_APPLICABLE,
                "hidden cases come from the reference of a python_function or test_program "
                "task, or a Python stdin_stdout task's reference and input_generator; this "
                "task has neither",
            )
        shared = config if config.hidden_cases else config.model_copy(update={"hidden_cases": True})
        # With hidden_cases, the unit-test grader shares one grading among the components
        # that ask for it with the same config (UnitTestsGrader.shared_grade).
        result = await self.unit_tests.grade(sample, shared)
        return self.of(result, config)

    def of(self, result: GradeResult, config: UnitTestsConfig) -> GradeResult:
        """This term's result, given the unit-test grading of a task with a reference."""
        hidden: dict[str, Any] | None = result.details.get("hidden")
        if hidden is not None and hidden["total"] == 0:
            # The reference yielded no case (the task's doing, the same for every sample).
            return self.failed(
                FailureKind.NOT_APPLICABLE,
                f"no hidden cases: {hidden.get('reason') or 'none derived'}",
                details={"hidden": hidden},
            )
        if hidden is None or result.score is None:
            # The candidate's code never met the cases (it did not parse, its run
            # failed before them): a failure says the same here; a 0 is a 0.
            if result.score is None:
                failure = result.failure
                assert failure is not None
                return self.failed(
                    failure.kind,
                    failure.message,
                    retryable=failure.retryable,
                    details={"from": "unit_tests", **({"hidden": hidden} if hidden else {})},
                )
            if hidden is None:
                reason = result.details.get("failure_kind") or "the code did not run"
                return self.scored(0.0, details={"hidden_total": 0, "why": reason})
        details = {
            "hidden_total": hidden["total"],
            "hidden_passed": hidden["passed"],
            "hidden_failed": hidden["failed"],
            "failures": hidden["failures"],
        }
        passed, total = hidden["passed"], hidden["total"]
        score = score_outcomes(passed, total, partial_credit=config.partial_credit)
        return self.scored(score, details=details)


def _has_hidden_cases(task: object) -> bool:
    """Whether the task can have hidden cases (whether it has any, its derivation says)."""
    if not isinstance(task, TaskSpec) or not task.reference:
        return False
    if task.kind in ("python_function", "test_program"):
        return True
    return task.kind == "stdin_stdout" and task.language == "python" and bool(task.input_generator)
