"""Correct JavaScript and C++ answers under every library rubric that grades code.

Each rubric either scores a correct answer 1.0 or refuses it, saying which samples
it accepts (abstained_by "request"): none quietly returns 0 because a Python-only
component or gate met a program in another language.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest

from arbiter.graders.registry import GraderRegistry, default_registry
from arbiter.graders.types import Sample, TaskSpec
from arbiter.graders.unit_tests import UnitTestsGrader
from arbiter.rubrics.loader import load_rubric
from arbiter.rubrics.score import score_samples
from tests.graders.languages.conftest import require_toolchain

LIBRARY = Path(__file__).resolve().parents[3] / "rubrics" / "library"

STDIN_CASES = [{"input": "1 2\n", "output": "3\n"}, {"input": "5 7\n", "output": "12\n"}]
SAMPLES = [
    Sample(
        id="javascript-stdin",
        prompt="Read two integers, print their sum.",
        response=(
            "```javascript\nconst [a, b] = require('fs').readFileSync(0, 'utf8')"
            ".trim().split(/\\s+/).map(Number);\nconsole.log(a + b);\n```\n"
        ),
        task=TaskSpec(kind="stdin_stdout", language="javascript", tests=STDIN_CASES),
    ),
    Sample(
        id="cpp-stdin",
        prompt="Read two integers, print their sum.",
        response=(
            "```cpp\n#include <iostream>\n"
            'int main() { long long a, b; std::cin >> a >> b; std::cout << a + b << "\\n"; }\n'
            "```\n"
        ),
        task=TaskSpec(kind="stdin_stdout", language="cpp", tests=STDIN_CASES),
    ),
    Sample(
        id="javascript-program",
        prompt="function add(a, b) {\n",
        response="  return a + b;\n}\n",
        task=TaskSpec(
            kind="test_program",
            language="javascript",
            tests=(
                "const assert = require('node:assert');\n"
                "assert.strictEqual(add(1, 2), 3);\nassert.strictEqual(add(-1, 1), 0);\n"
            ),
        ),
    ),
    Sample(
        id="cpp-program",
        prompt="int add(int a, int b) {\n",
        response="    return a + b;\n}\n",
        task=TaskSpec(
            kind="test_program",
            language="cpp",
            tests=(
                "#include <cassert>\n"
                "int main() { assert(add(1, 2) == 3); assert(add(-1, 1) == 0); }\n"
            ),
        ),
    ),
]

#: Each library rubric that grades code: the samples it scores 1.0; it refuses the others.
EXPECTED = {
    "code-tests": {"javascript-stdin", "cpp-stdin", "javascript-program", "cpp-program"},
    "cpp-competitive": {"javascript-stdin", "cpp-stdin", "javascript-program", "cpp-program"},
    "mixed-rl": {"javascript-stdin", "cpp-stdin", "javascript-program", "cpp-program"},
    "competitive-stdio": {"javascript-stdin", "cpp-stdin"},
    "python-codegen": set(),
    "python-static": set(),
    "math-answer": set(),
    "instruction-following": set(),
}


@pytest.fixture(scope="module")
def registry(language_grader: UnitTestsGrader) -> Iterator[GraderRegistry]:
    require_toolchain(language_grader, "cpp")
    require_toolchain(language_grader, "javascript")
    made = default_registry()
    made.add_instance(language_grader)
    yield made
    made.close()


def test_every_library_rubric_is_listed() -> None:
    graded = {
        path.stem
        for path in LIBRARY.glob("*.yaml")
        if any(c.grader == "unit_tests" for c in load_rubric(path).components.values())
        or load_rubric(path).spec.accepts is not None
    }
    assert graded == set(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_a_correct_answer_scores_one_or_is_refused_saying_so(
    registry: GraderRegistry, name: str
) -> None:
    rubric = load_rubric(LIBRARY / f"{name}.yaml")
    rewards = asyncio.run(score_samples(rubric, SAMPLES, registry=registry))
    for sample, reward in zip(SAMPLES, rewards, strict=True):
        if sample.id in EXPECTED[name]:
            assert reward.reward == 1.0, (name, sample.id, reward.abstain_reason, reward.flags)
            continue
        assert reward.reward is None, (name, sample.id, reward.reward)
        assert reward.abstained_by == "request"
        assert "not_accepted" in reward.flags
        assert reward.abstain_reason is not None
        assert reward.abstain_reason.startswith(f"rubric {name!r} accepts ")
        language = sample.task.language if isinstance(sample.task, TaskSpec) else None
        assert f"this sample is a {sample.task.kind} task in {language}" in reward.abstain_reason
