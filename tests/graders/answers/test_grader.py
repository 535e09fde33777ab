"""The answer grader on samples: verdicts, hedges with violations, typed failures."""

from __future__ import annotations

import asyncio

import pytest
from pydantic import ValidationError

from arbiter.graders.answers.grader import AnswerConfig, AnswerGrader
from arbiter.graders.registry import default_registry
from arbiter.graders.runner import GraderJob, run_jobs
from arbiter.graders.types import (
    AnswerTask,
    FailureKind,
    GradeResult,
    Message,
    Sample,
    TaskSpec,
    ViolationType,
)
from arbiter.rubrics import build_rubric, compose


def sample(response: str, gold: str, prompt: str = "", **task: object) -> Sample:
    return Sample(
        id="s",
        prompt=prompt,
        response=response,
        task=AnswerTask(kind="answer", answer=gold, **task),  # type: ignore[arg-type]
    )


def grade_all(samples: list[Sample], config: AnswerConfig | None = None) -> list[GradeResult]:
    async def go():
        grader = AnswerGrader(workers=2)
        await grader.warm()
        try:
            return await asyncio.gather(
                *(grader.grade(s, config or AnswerConfig()) for s in samples)
            )
        finally:
            grader.close()

    return asyncio.run(go())


@pytest.fixture(scope="module")
def hacks() -> dict[str, GradeResult]:
    cases = {
        "two boxes": sample(r"\boxed{3} \boxed{4}", "3"),
        "A or B": sample("Answer: A or B", "A", format="choice", choices=["A", "B", "C"]),
        "empty": sample(r"\boxed{}", "3"),
        "echo": sample(r"\boxed{\frac{2}{4}}", r"\frac{1}{2}", prompt=r"Simplify $\frac{2}{4}$."),
        "unclosed think": sample(r"<think>so \boxed{3}", "3"),
        "spam": sample("\\boxed{3}" * 10, "3"),
        "list": sample(r"\boxed{1, 2, 3}", "3"),
    }
    return dict(zip(cases, grade_all(list(cases.values())), strict=True))


@pytest.mark.parametrize(
    ("name", "violation"),
    [
        ("two boxes", ViolationType.ANSWER_HEDGING),
        ("A or B", ViolationType.ANSWER_HEDGING),
        ("empty", ViolationType.EMPTY_ANSWER),
        ("echo", ViolationType.ECHOED_PROBLEM),
        ("unclosed think", ViolationType.UNCLOSED_THINKING),
        ("spam", ViolationType.ANSWER_HEDGING),
        ("list", ViolationType.ANSWER_HEDGING),
    ],
)
def test_hacks_score_zero_with_their_violation(hacks, name, violation):
    result = hacks[name]
    assert result.score == 0.0
    assert [v.type for v in result.violations] == [violation]


def test_verdicts_and_padding():
    results = grade_all(
        [
            sample(r"so \boxed{\frac{1}{2}}", "0.5"),
            sample(r"so \boxed{ \frac{1}{2} }", "0.5"),
            sample(r"so \boxed{\frac{1}{2006!}}", r"\frac{1}{2004!}"),
            sample("<answer>B</answer>", "B", format="choice", choices=list("ABCD")),
            sample("Answer: 3.1416", "3.14159", format="number", tolerance=1e-3),
            sample("<answer>paris</answer>", "Paris", format="text"),
            sample(
                r"\boxed{7}",
                "7",
                prompt=[Message(role="user", content="What is 3 + 4?")],  # type: ignore[arg-type]
            ),
        ]
    )
    assert [r.score for r in results] == [1.0, 1.0, 0.0, 1.0, 1.0, 1.0, 1.0]
    assert all(r.violations == () for r in results)


def test_swapped_gold_and_response_do_not_pay():
    # open-r1#557 passed (answer, gold). The grader reads the gold from the task and the
    # answer from the response, by name: a response that holds the gold's text as its
    # "answer" but boxes a different value is graded on the box.
    results = grade_all([sample(r"\boxed{4}", "3"), sample(r"\boxed{3}", "4")])
    assert [r.score for r in results] == [0.0, 0.0]


def test_an_unparseable_gold_abstains_typed_never_scores():
    (result,) = grade_all([sample(r"\boxed{1}", r"\frac{")])
    assert result.score is None
    assert result.failure is not None
    assert result.failure.kind == FailureKind.INVALID_TASK
    # The rubric abstains on it whatever on_missing says: never 1.0, never 0.
    for on_missing in ("zero", "renormalize", "abstain"):
        rubric = build_rubric(
            {
                "name": "m",
                "version": 1,
                "on_missing": on_missing,
                "components": {"a": {"grader": "answer", "weight": 1.0}},
            }
        )
        reward = compose(rubric, {"a": result}, sample_id="s")
        assert reward.reward is None
        assert "invalid task" in (reward.abstain_reason or "")


def test_a_power_tower_is_the_candidates_timeout_and_the_batch_goes_on():
    grader = AnswerGrader(workers=2)
    config = AnswerConfig(check_timeout_s=1.0)
    tower = sample(r"\boxed{2^{2^{2^{2^{2^{2^{2}}}}}}}", "1")
    others = [sample(rf"\boxed{{{i}}}", str(i)) for i in range(30)]
    jobs = [GraderJob(s, "answer", grader, config, 60.0) for s in [tower, *others]]

    async def go():
        await grader.warm()
        try:
            return await run_jobs(jobs)
        finally:
            grader.close()

    first, *rest = asyncio.run(go())
    assert first.score == 0.0
    assert first.details["failure_kind"] == "timeout"
    assert [r.score for r in rest] == [1.0] * 30


def test_a_timeout_without_fail_as_zero_is_typed():
    (result,) = grade_all(
        [sample(r"\boxed{2^{2^{2^{2^{2^{2^{2}}}}}}}", "1")],
        AnswerConfig(check_timeout_s=0.5, fail_as_zero=False),
    )
    assert result.score is None
    assert result.failure is not None and result.failure.kind == FailureKind.TIMEOUT


def test_not_an_answer_task_is_not_applicable():
    code = Sample(
        id="c",
        response="def f(): pass",
        task=TaskSpec(kind="python_function", tests="assert f() is None", entry_point="f"),
    )
    (result,) = grade_all([code])
    assert result.failure is not None and result.failure.kind == FailureKind.NOT_APPLICABLE


def test_config_refusals():
    with pytest.raises(ValidationError):
        AnswerConfig(check_timeout_s=0)
    with pytest.raises(ValidationError):
        AnswerConfig(unknown=1)  # type: ignore[call-arg]


def test_the_registry_names_it():
    assert default_registry().get("answer") is AnswerGrader
