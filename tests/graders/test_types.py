"""The contracts: a result is a probability or an explained absence; inputs are strict."""

from __future__ import annotations

import math

import pytest
from pydantic import ValidationError

from arbiter.graders.types import FailureKind, GradeResult, Metrics, Sample


@pytest.mark.parametrize("score", [-0.01, 1.01, math.nan, math.inf])
def test_scores_outside_the_unit_interval_are_refused(score):
    with pytest.raises(ValidationError):
        GradeResult(grader="g", score=score)


def test_no_score_without_a_reason():
    with pytest.raises(ValidationError, match="must carry a failure"):
        GradeResult(grader="g", score=None)
    failed = GradeResult.failed("g", FailureKind.TIMEOUT, "slow")
    assert failed.score is None and failed.failure is not None


@pytest.mark.parametrize(
    "metrics",
    [
        {"turns": False},
        {"turns": "3"},
        {"turns": -1},
        {"wall_s": "1.0"},
        {"wall_s": math.inf},
        {"tokens": 3},
    ],
)
def test_metrics_are_strict(metrics):
    with pytest.raises(ValidationError):
        Metrics.model_validate(metrics)


def test_ints_are_accepted_as_seconds():
    assert Metrics.model_validate({"wall_s": 3}).wall_s == 3.0


@pytest.mark.parametrize(
    "bad", [{"response": "r"}, {"id": "", "response": "r"}, {"id": 3, "response": "r"}]
)
def test_sample_needs_an_id(bad):
    with pytest.raises(ValidationError):
        Sample.model_validate(bad)


@pytest.mark.parametrize(
    ("task", "error"),
    [
        ({"kind": "test_program", "tests": "int main() {}"}, "needs a language other than python"),
        ({"kind": "python_function", "language": "go", "tests": "x"}, "needs test_program"),
        ({"kind": "pytest", "language": "rust", "tests": "x"}, "needs test_program"),
        ({"kind": "test_program", "language": "java", "tests": ["a"]}, "source text"),
        ({"kind": "stdin_stdout", "language": "cobol", "tests": []}, "language"),
    ],
)
def test_a_task_kind_must_fit_its_language(task, error):
    from arbiter.graders.types import TaskSpec

    with pytest.raises(ValidationError, match=error):
        TaskSpec.model_validate(task)


def test_python_stays_the_default_language_and_limits_are_per_task():
    from arbiter.graders.types import TaskSpec

    task = TaskSpec.model_validate(
        {"kind": "stdin_stdout", "tests": [], "limit_overrides": {"timeout_s": 2, "memory_mb": 64}}
    )
    assert task.language == "python"
    assert task.limit_overrides is not None and task.limit_overrides.timeout_s == 2
    with pytest.raises(ValidationError, match="greater than 0"):
        TaskSpec.model_validate(
            {"kind": "stdin_stdout", "tests": [], "limit_overrides": {"timeout_s": 0}}
        )
