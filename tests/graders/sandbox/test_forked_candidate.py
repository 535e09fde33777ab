"""A candidate that forks: its copies never speak for the run, so the grade is the same every time.

A process the candidate forks inside its function (or at import) is a copy of the
confined child, channel and all. Had it come back through the serve loop, its
reply would race the run's own, and which frame the trusted side read first (a
wrong count of passed tests, or a forged frame) would depend on timing. The
grade is a function of the rollout: the same, run after run.
"""

from __future__ import annotations

import pytest

from arbiter.graders.types import ViolationType
from arbiter.graders.unit_tests import UnitTestsGrader
from tests.graders.sandbox.conftest import function_task, grade

TESTS = ["assert f(1) == 2", "assert f(5) == 6", "assert f(-1) == 0"]


@pytest.mark.parametrize(
    "code",
    [
        "import os\n\ndef f(x):\n    os.fork()\n    return x + 1\n",
        "import os\n\nos.fork()\n\ndef f(x):\n    return x + 1\n",
        "import os\n\ndef f(x):\n    if os.fork() == 0:\n        return x + 2\n    return x + 1\n",
    ],
    ids=["in-the-function", "at-import", "the-copy-answers-otherwise"],
)
def test_a_forked_copy_never_answers_for_the_run(grader: UnitTestsGrader, code: str) -> None:
    results = [grade(grader, code, function_task(TESTS)) for _ in range(4)]
    assert {r.score for r in results} == {1.0}, [r.details.get("tests") for r in results]
    for result in results:
        types = {v.type for v in result.violations}
        assert ViolationType.VERDICT_FORGERY not in types, result.violations
        assert ViolationType.SUBPROCESS in types, result.violations
