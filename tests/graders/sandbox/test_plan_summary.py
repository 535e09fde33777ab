"""The plan the grading process keeps: what the tests are, without what running them needs.

The checks worker runs the tests from a plan of its own; the grading process
plans only to know their units, the names they need from the candidate and
their statements' lines, and skips compiling statements that need no check
and reading calls ahead. What it says must be what the worker's plan says.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from arbiter.graders.program import prompt_code
from arbiter.graders.sandbox.checks import CheckPlan, plan_function_tests, run_plan
from tests.strictness import unavailable

DATA = Path(__file__).resolve().parents[4] / "shared" / "data"


def _said(plan: CheckPlan) -> tuple[object, ...]:
    return (
        [(s.line, s.source, s.is_unit, s.calls, s.binds, s.reads) for s in plan.statements],
        [(s.line, s.source, s.is_unit, s.calls, s.binds, s.reads) for s in plan.prelude],
        plan.candidate_param,
        plan.free_names,
        plan.declared,
        plan.modules,
        plan.classes,
        plan.units,
    )


def _tasks() -> list[tuple[str | list[str], str | None, str | None, str | None]]:
    tasks: list[tuple[str | list[str], str | None, str | None, str | None]] = []
    for line in (DATA / "humanevalpack_python.jsonl").read_text().splitlines():
        row = json.loads(line)
        tasks.append((row["test"], None, prompt_code(row["prompt"]), row["entry_point"]))
    for line in (DATA / "mbpp.jsonl").read_text().splitlines():
        row = json.loads(line)
        tests = list(row["test_list"]) + list(row.get("challenge_test_list") or [])
        tasks.append((tests, row.get("test_setup_code") or None, None, None))
    return tasks


def test_the_summary_says_what_the_runnable_plan_says_on_real_sets() -> None:
    if not DATA.is_dir():
        unavailable(f"the real sets are read from {DATA}, which is absent")
    tasks = _tasks()
    assert len(tasks) == 164 + 974
    for tests, setup, helpers, entry_point in tasks:
        runnable = plan_function_tests(tests, setup, helpers=helpers, entry_point=entry_point)
        summary = plan_function_tests(
            tests, setup, helpers=helpers, entry_point=entry_point, runnable=False
        )
        assert _said(summary) == _said(runnable), tests
        assert runnable.runnable and not summary.runnable


def test_a_check_that_cannot_be_split_is_one_unit_in_both() -> None:
    tests = (
        "def check(candidate):\n"
        "    assert candidate(1) == 2\n"
        "    if candidate(2) == 3:\n"
        "        return\n"
        "    assert False\n"
    )
    runnable = plan_function_tests(tests, entry_point="f")
    summary = plan_function_tests(tests, entry_point="f", runnable=False)
    assert runnable.units == 1 and runnable.statements[0].source == "check(...) (run whole)"
    assert _said(summary) == _said(runnable)


def test_a_summary_is_never_run() -> None:
    plan = plan_function_tests("assert f(1) == 2\n", runnable=False)
    with pytest.raises(ValueError, match="not to run"):
        run_plan(plan, None, None, "f")  # type: ignore[arg-type]
