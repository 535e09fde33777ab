"""The contracts: a result is a probability or an explained absence; inputs are strict."""

from __future__ import annotations

import math

import pytest
from pydantic import ValidationError

from arbiter.graders.types import (
    AnswerTask,
    FailureKind,
    GradeResult,
    InstructionsTask,
    Metrics,
    ReasoningGymTask,
    RepositoryTask,
    Sample,
    TaskSpec,
    program_language,
)


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


@pytest.mark.parametrize(
    ("task", "model", "language"),
    [
        ({"kind": "python_function", "tests": ["assert f() == 1"]}, TaskSpec, "python"),
        ({"kind": "test_program", "language": "go", "tests": "x"}, TaskSpec, "go"),
        (
            {"kind": "repository", "repository": "sha256:ab", "fail_to_pass": ["t.py::t"]},
            RepositoryTask,
            "python",  # the static graders read the Python its patch adds or changes
        ),
        ({"kind": "answer", "answer": "\\frac{1}{2}"}, AnswerTask, None),
        (
            {"kind": "instructions", "instruction_id_list": ["detectable_format:title"]},
            InstructionsTask,
            None,
        ),
        (
            {
                "kind": "reasoning_gym",
                "entry": {"question": "q", "answer": "a", "metadata": {"source_dataset": "gcd"}},
            },
            ReasoningGymTask,
            None,
        ),
    ],
)
def test_a_task_is_told_apart_by_its_kind(task, model, language):
    sample = Sample.model_validate({"id": "s", "response": "r", "task": task})
    assert type(sample.task) is model
    assert program_language(sample.task) == language


def test_no_task_is_python_code_to_the_static_graders():
    assert program_language(None) == "python"


@pytest.mark.parametrize(
    ("task", "error"),
    [
        ({"kind": "essay", "tests": []}, "does not match any of the expected tags"),
        ({"kind": "answer"}, "answer"),
        ({"kind": "repository", "repository": "r", "fail_to_pass": []}, "fail_to_pass"),
        ({"kind": "answer", "answer": "1", "tests": ["x"]}, "tests"),
    ],
)
def test_a_task_of_an_unknown_kind_or_shape_is_refused_with_the_field_named(task, error):
    with pytest.raises(ValidationError, match=error):
        Sample.model_validate({"id": "s", "response": "r", "task": task})
