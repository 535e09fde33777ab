"""A candidate that forks: its copies never speak for the run, so the grade is the same every time.

A process the candidate forks inside its function (or at import) is a copy of the
confined child, channel and all. Had it come back through the serve loop, its
reply would race the run's own, and which frame the trusted side read first (a
wrong count of passed tests, or a forged frame) would depend on timing. The
grade is a function of the rollout: the same, run after run. The C++ and Go bridges
serve the same way and leave the same way.
"""

from __future__ import annotations

import pytest

from arbiter.graders.types import Sample, TaskSpec, ViolationType
from arbiter.graders.unit_tests import UnitTestsConfig, UnitTestsGrader
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


CPP_PROMPT = "#include <vector>\nusing namespace std;\nlong long total(vector<int> xs){\n"
CPP_TESTS = """#undef NDEBUG
#include<assert.h>
int main(){
    assert (total({1, 2, 3}) == 6);
    assert (total({}) == 0);
    assert (total({5}) == 5);
}
"""
CPP_BODY = "    fork();\n    long long s = 0;\n    for (int x : xs) s += x;\n    return s;\n}\n"


def test_a_forked_copy_of_a_compiled_candidate_never_answers_either(
    grader: UnitTestsGrader,
) -> None:
    # The program includes <unistd.h> itself: the bridge declares fork's neighbours as
    # it does, so both compile together.
    code = "#include <unistd.h>\n" + CPP_PROMPT + CPP_BODY
    task = TaskSpec(kind="test_program", language="cpp", tests=CPP_TESTS)
    sample = Sample(id="fork", prompt=CPP_PROMPT, response=f"```cpp\n{code}```\n", task=task)
    results = [grader.grade_sync(sample, UnitTestsConfig(timeout_s=10)) for _ in range(3)]
    assert {r.score for r in results} == {1.0}, [
        r.details.get("harness_output_tail") for r in results
    ]
    for result in results:
        assert ViolationType.SUBPROCESS in {v.type for v in result.violations}
