"""ComponentOutcome.of builds, without validating again, what validation would have built."""

from __future__ import annotations

import pickle

import pytest

from arbiter.graders.types import Failure, FailureKind, GradeResult, Violation, ViolationType
from arbiter.rubrics.reward import ComponentOutcome

RESULTS = [
    GradeResult(grader="efficiency", grader_version="1", score=0.25, details={"turns": 0.5}),
    GradeResult(
        grader="unit_tests",
        score=None,
        failure=Failure(kind=FailureKind.TIMEOUT, message="ran past 10 s", retryable=False),
        violations=(Violation(type=ViolationType.EARLY_EXIT, detail="sys.exit(0)", line=3),),
        latency_s=10.2,
    ),
]


@pytest.mark.parametrize("result", RESULTS, ids=lambda r: r.grader)
def test_the_outcome_is_the_validated_one(result: GradeResult) -> None:
    outcome = ComponentOutcome.of(result, weight=0.5, required=True)
    validated = ComponentOutcome.model_validate(
        {**result.model_dump(), "weight": 0.5, "required": True}
    )
    assert outcome == validated
    assert outcome.model_dump_json() == validated.model_dump_json()
    assert outcome.model_fields_set == result.model_fields_set | {"weight", "required"}
    assert pickle.loads(pickle.dumps(outcome)) == outcome  # what a Ray actor sends back
    assert outcome.model_copy(update={"weight": 1.0}).weight == 1.0
    with pytest.raises(Exception, match="frozen"):
        outcome.weight = 2.0  # type: ignore[misc]
