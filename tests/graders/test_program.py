"""The program a grader runs: assembled from prompt and completion by graders.program's rules."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given

from arbiter.graders.program import assemble_program, program_of
from arbiter.graders.types import FailureKind, Message, Sample, TaskSpec
from arbiter.graders.unit_tests import UnitTestsConfig, UnitTestsGrader
from arbiter.rubrics.loader import load_rubric
from arbiter.rubrics.score import score_samples
from tests.graders.reader_fuzz import TARGETS, fuzz_settings
from tests.strictness import unavailable

ROOT = Path(__file__).resolve().parents[2]
SHARED_DATA = ROOT.parent / "shared" / "data"

HUMANEVAL_PROMPT = '''from typing import List


def add(xs: List[int]) -> int:
    """Return the sum of xs.
    >>> add([1, 2])
    3
    """
'''
BODY = "    total = 0\n    for x in xs:\n        total += x\n    return total\n"


def test_humaneval_body_only_completion_continues_the_prompt():
    program = assemble_program(HUMANEVAL_PROMPT, BODY, entry_point="add")
    assert program is not None
    assert program.assembled == "prompt_body"
    assert program.code == HUMANEVAL_PROMPT + BODY
    namespace: dict[str, Any] = {}
    exec(program.code, namespace)
    assert namespace["add"]([1, 2, 3]) == 6


def test_fenced_body_only_completion_continues_the_prompt():
    program = assemble_program(
        HUMANEVAL_PROMPT, f"Here:\n```python\n{BODY}```\n", entry_point="add"
    )
    assert program is not None and program.assembled == "prompt_body"
    assert program.code == HUMANEVAL_PROMPT + BODY


def test_whole_function_completion_is_graded_alone():
    whole = "def add(xs):\n    return sum(xs)\n"
    program = assemble_program(HUMANEVAL_PROMPT, whole, entry_point="add")
    assert program is not None
    assert program.assembled == "response"
    assert program.code == whole


def test_fence_opened_in_the_prompt_is_closed_by_the_completion():
    prompt = "Write add(xs).\n```python\nfrom typing import List\n"
    response = "def add(xs: List[int]) -> int:\n    return sum(xs)\n```\nThat sums the list."
    program = assemble_program(prompt, response, entry_point="add")
    assert program is not None
    assert program.assembled == "prompt_fence"
    assert program.code == (
        "from typing import List\ndef add(xs: List[int]) -> int:\n    return sum(xs)\n"
    )
    assert not program.truncated


def test_fence_opened_in_the_prompt_and_never_closed_is_truncated():
    program = assemble_program("```\n", "def f():\n    return 1", entry_point="f")
    assert program is not None and program.assembled == "prompt_fence" and program.truncated


def test_closed_fence_in_the_prompt_is_not_continued():
    prompt = "Example:\n```python\nprint(1)\n```\nNow write f."
    program = assemble_program(prompt, "def f():\n    return 1\n", entry_point="f")
    assert program is not None and program.assembled == "response"


def test_mbpp_prompt_with_asserts_and_a_full_solution():
    row = {
        "text": "Write a function to find the similar elements from the given two tuple lists.",
        "test_list": ["assert similar_elements((3, 4, 5, 6),(5, 7, 4, 10)) == (4, 5)"],
    }
    prompt = f"{row['text']} Your code should pass these tests:\n\n" + "\n".join(row["test_list"])
    response = (
        "```python\ndef similar_elements(a, b):\n    return tuple(sorted(set(a) & set(b)))\n```"
    )
    program = assemble_program(prompt, response, entry_point="similar_elements")
    assert program is not None and program.assembled == "response"
    assert "assert" not in program.code


def test_mbpp_prompt_ending_in_an_open_fence():
    prompt = "Write a function to add two numbers.\n```python\n"
    program = assemble_program(prompt, "def add(a, b):\n    return a + b\n```", entry_point="add")
    assert program is not None and program.assembled == "prompt_fence"
    assert program.code == "def add(a, b):\n    return a + b\n"


def test_prose_prompt_never_joins_a_body():
    # The prompt is not code ending in a function: an indented fragment stays unassembled.
    assert assemble_program("Write add(xs).", BODY, entry_point="add") is None


def test_chat_prompt_reads_the_last_message():
    sample = Sample(
        id="c",
        prompt=[
            Message(role="system", content="You write Python."),
            Message(role="user", content=HUMANEVAL_PROMPT),
        ],
        response=BODY,
        task=TaskSpec(kind="python_function", tests="assert add([1]) == 1", entry_point="add"),
    )
    program = program_of(sample)
    assert program is not None and program.assembled == "prompt_body"


def test_body_that_does_not_compile_is_a_syntax_error_not_a_join():
    program = assemble_program(HUMANEVAL_PROMPT, "    return (\n", entry_point="add")
    assert program is None  # no code of its own either: the grader says no_code


@pytest.fixture(scope="module")
def grader():
    grader = UnitTestsGrader()
    yield grader
    grader.close()


def _task() -> TaskSpec:
    return TaskSpec(
        kind="python_function",
        tests="def check(candidate):\n    assert candidate([1, 2]) == 3\n",
        entry_point="add",
    )


def test_unit_tests_grade_a_body_only_completion(grader):
    sample = Sample(id="b", prompt=HUMANEVAL_PROMPT, response=BODY, task=_task())
    result = grader.grade_sync(sample, UnitTestsConfig())
    assert result.score == 1.0


@pytest.mark.parametrize(
    ("fail_as_zero", "score", "failure"),
    [(True, 0.0, None), (False, None, FailureKind.NO_CODE)],
)
def test_no_code_is_the_policy_fault_when_fail_as_zero(grader, fail_as_zero, score, failure):
    sample = Sample(id="n", prompt="Write add.", response="I cannot do that.", task=_task())
    result = grader.grade_sync(sample, UnitTestsConfig(fail_as_zero=fail_as_zero))
    assert result.score == score
    assert (result.failure.kind if result.failure else None) == failure
    if fail_as_zero:
        assert result.details["failure_kind"] == "no_code"


def _humanevalpack() -> list[dict[str, Any]]:
    path = SHARED_DATA / "humanevalpack_python.jsonl"
    if not path.exists():
        unavailable(f"{path} is absent: the shared reference data is not beside the checkout")
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


@pytest.mark.slow
def test_humanevalpack_body_only_completions_under_python_codegen():
    rows = _humanevalpack()
    rubric = load_rubric(ROOT / "rubrics" / "library" / "python-codegen.yaml")
    samples = []
    for row in rows:
        task = TaskSpec(kind="python_function", tests=row["test"], entry_point=row["entry_point"])
        for variant in ("canonical_solution", "buggy_solution"):
            samples.append(
                Sample(
                    id=f"{row['task_id']}/{variant}",
                    prompt=row["prompt"],
                    response=row[variant],  # the body alone, as a HumanEval completion is
                    task=task,
                )
            )
    rewards = asyncio.run(score_samples(rubric, samples))
    tests = {r.id: r.components["tests"].score for r in rewards}
    canonical_pass = [k for k, v in tests.items() if k.endswith("canonical_solution") and v == 1.0]
    buggy_fail = [k for k, v in tests.items() if k.endswith("buggy_solution") and v != 1.0]
    print(f"canonical pass {len(canonical_pass)}/164, buggy fail {len(buggy_fail)}/164")
    assert len(rows) == 164
    assert len(canonical_pass) == 164
    assert len(buggy_fail) == 164
    # Every body-only completion got a score, and the passing ones a reward above the gates.
    assert all(v is not None for v in tests.values())
    by_id = {r.id: r for r in rewards}
    assert all((by_id[k].reward or 0.0) > 0.5 for k in canonical_pass), (
        "a passing body was capped: another component found no code"
    )


# --- any text: the assembler answers for every prompt and completion ----------------


@fuzz_settings()
@given(TARGETS["program.prompt_code"].strategy)
@example("```python\n" + "x = " + "-" * 100_000 + "1\n")  # the parser's MemoryError
def test_prompt_code_reads_any_prompt(prompt):
    TARGETS["program.prompt_code"].check(prompt)


@fuzz_settings()
@given(TARGETS["program.compiles"].strategy)
@example("x = " + "+".join(["1"] * 5000) + "\n")  # RecursionError during compilation
def test_compiles_answers_for_any_code(code):
    TARGETS["program.compiles"].check(code)


@fuzz_settings()
@given(TARGETS["program.assemble_program"].strategy)
@example(("```python\ndef f(x):\n", "`" * 40_000, "all", "f"))
def test_assemble_program_reads_any_prompt_and_completion(args):
    TARGETS["program.assemble_program"].check(args)


@fuzz_settings()
@given(TARGETS["program.program_of"].strategy)
@example(([Message(role="user", content="```py\n")], "\x00", None))
def test_program_of_reads_any_sample(args):
    TARGETS["program.program_of"].check(args)
