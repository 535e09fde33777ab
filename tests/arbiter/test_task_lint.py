"""Task lint: real gradings in the sandbox tell weak test sets from strong ones."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from arbiter.cli import app
from arbiter.graders.types import Sample, TaskSpec
from arbiter.graders.unit_tests import UnitTestsConfig, UnitTestsGrader
from arbiter.task_lint import TaskToLint, lint_tasks, tasks_of

SUB = "def sub(a, b):\n    if a > b:\n        return a - b\n    return 0 - (b - a)\n"


def _task(tests: list[str], *, entry_point: str | None = "sub", reference: str | None = SUB):
    task = TaskSpec(kind="python_function", tests=tests, entry_point=entry_point)
    return TaskToLint("t", task, "", reference)


@pytest.fixture(scope="module")
def grader() -> Iterator[UnitTestsGrader]:
    graders = UnitTestsGrader()
    yield graders
    graders.close()


def test_tests_that_only_say_what_the_answer_is_not_are_weak(grader: UnitTestsGrader) -> None:
    # The example: NaN compares false with everything, so it passes both.
    [linted] = lint_tasks(
        [_task(["assert not sub(1, 0) > 1", "assert sub(4, 2) != 3"])], grader, max_mutants=12
    )
    assert linted.grade == "weak"
    assert linted.trivial["nan"] == "passes" and linted.reference == "passes"
    assert any("nan" in reason for reason in linted.reasons)


SIGN_SUM = (
    "def sign_sum(values):\n"
    "    total = 0\n"
    "    for v in values:\n"
    "        if v > 0:\n"
    "            total += 2 * v\n"
    "        elif v < 0:\n"
    "            total -= 3\n"
    "    return total\n"
)


def test_tests_that_pin_the_answer_are_strong(grader: UnitTestsGrader) -> None:
    tests = [
        "assert sign_sum([]) == 0",
        "assert sign_sum([1]) == 2",
        "assert sign_sum([-5]) == -3",
        "assert sign_sum([0]) == 0",
        "assert sign_sum([2, -1, 0, 3]) == 7",
        "assert sign_sum([-1, -1]) == -6",
        "assert sign_sum([1, 1]) == 4",
    ]
    item = _task(tests, entry_point="sign_sum", reference=SIGN_SUM)
    [linted] = lint_tasks([item], grader, max_mutants=30)
    assert set(linted.trivial.values()) == {"fails"}
    assert linted.mutants >= 20 and linted.grade == "strong", linted.reasons
    # The survivors are listed for a person to judge: here each is equivalent to the
    # reference on integers (v >= 0 adds 0 for v == 0; after v > 0, v != 0 is v < 0).
    assert len(linted.survivors) == linted.mutants - linted.killed
    assert "compare > -> >= @ line 4" in linted.survivors


def test_hidden_cases_kill_the_mutants_weak_tests_let_live(grader: UnitTestsGrader) -> None:
    # Two asserts on one sign of input: the mutants of the other branch all survive them.
    tests = ["assert sub(5, 3) == 2", "assert sub(9, 1) == 8"]
    [linted] = lint_tasks([_task(tests)], grader, max_mutants=20)
    [plain] = lint_tasks([_task(tests)], grader, max_mutants=20, hidden=False)
    assert linted.hidden_cases > 0 and plain.hidden_cases == 0
    assert linted.killed == plain.killed  # the grade reads the visible tests alone
    assert linted.survivors and linted.killed_with_hidden > linted.killed
    score = linted.mutation_score_with_hidden
    assert score is not None and score > (linted.mutation_score or 0.0)
    assert any("hidden cases" in reason for reason in linted.reasons)


def test_a_reference_that_fails_its_own_tests_is_a_contradiction(grader: UnitTestsGrader) -> None:
    [linted] = lint_tasks([_task(["assert sub(5, 3) == 3"])], grader, max_mutants=4)
    assert linted.reference == "fails" and linted.grade == "weak"
    assert any("contradiction" in reason for reason in linted.reasons)


def test_a_reference_past_the_lints_limit_is_no_contradiction(grader: UnitTestsGrader) -> None:
    slow = "def sub(a, b):\n    while True:\n        pass\n"
    [linted] = lint_tasks(
        [_task(["assert sub(5, 3) == 2"], reference=slow)],
        grader,
        config=UnitTestsConfig(timeout_s=0.5),
        repeats=1,
        max_mutants=4,
    )
    assert linted.reference == "timeout" and linted.mutants == 0
    assert linted.grade == "fine" and "time limit" in linted.reasons[0]


def test_without_an_entry_point_the_function_the_tests_call_is_linted(
    grader: UnitTestsGrader,
) -> None:
    [linted] = lint_tasks(
        [_task(["assert sub(5, 3) == 2", "assert sub(1, 1) == 0"], entry_point=None)],
        grader,
        max_mutants=4,
    )
    assert len(linted.trivial) == 8 and set(linted.trivial.values()) == {"fails"}


def test_a_program_that_echoes_its_input_passes_a_weak_stdio_task(grader: UnitTestsGrader) -> None:
    task = TaskSpec(
        kind="stdin_stdout",
        tests=[{"input": "7\n", "output": "7\n"}, {"input": "12\n", "output": "12\n"}],
    )
    reference = "def main():\n    print(int(input()))\n\nmain()\n"
    [linted] = lint_tasks([TaskToLint("echo", task, "", reference)], grader, max_mutants=4)
    assert linted.trivial["echo_input"] == "passes" and linted.grade == "weak"


def test_a_sets_reference_is_a_sample_labelled_to_pass() -> None:
    task = {"kind": "python_function", "tests": ["assert sub(2, 1) == 1"], "entry_point": "sub"}
    samples = [
        Sample(id="wrong", group_id="g", prompt="", response="def sub(a, b): return 0", task=task),
        Sample(
            id="right",
            group_id="g",
            prompt="",
            response="def sub(a, b):\n    return a - b\n",
            task=task,
            labels={"expected": {"tests_pass": True}},
        ),
    ]
    [item] = tasks_of(samples)
    assert item.reference is not None and "return a - b" in item.reference


def test_the_command_writes_the_reports_beside_each_other(tmp_path: Path) -> None:
    rows = [
        {
            "id": "weak",
            "prompt": "",
            "response": SUB,
            "task": {
                "kind": "python_function",
                "tests": ["assert not sub(1, 0) > 1"],
                "entry_point": "sub",
                "reference": SUB,
            },
        }
    ]
    source = tmp_path / "set.jsonl"
    source.write_text("".join(json.dumps(r) + "\n" for r in rows))
    report = tmp_path / "lint"
    done = CliRunner().invoke(
        app, ["tasks", "lint", str(source), "--report", str(report), "--mutants", "4", "-q"]
    )
    assert done.exit_code == 0, done.output
    summary = json.loads(done.output.splitlines()[0])
    assert summary["tasks"] == 1 and summary["weak"] == 1
    assert "weak: weak:" in done.output
    written = json.loads((report / "report.json").read_text())
    assert written["tasks"][0]["grade"] == "weak"
    assert "Task lint" in (report / "report.html").read_text()
