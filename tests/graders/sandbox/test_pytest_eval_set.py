"""The pytest eval set: real modules from HumanEvalPack and MBPP tasks, graded on the trusted side.

Every canonical solution must pass every test and every wrong one must fail
some: the verdict made in the trusted pytest process, against a proxy of the
candidate's module, is the verdict the suite means.
"""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from typing import Any

import pytest

from arbiter.eval_sets import eval_set_path
from arbiter.graders.runner import GraderJob, run_jobs
from arbiter.graders.types import Sample, TaskSpec
from arbiter.graders.unit_tests import UnitTestsConfig, UnitTestsGrader

RECORDS = [json.loads(line) for line in eval_set_path("pytest_suites").read_text().splitlines()]


def test_the_set_has_fifty_modules_from_both_sources_using_what_suites_use() -> None:
    modules = {r["group_id"]: r for r in RECORDS}
    assert len(modules) >= 50
    assert Counter(r["labels"]["source"] for r in modules.values()).keys() == {
        "humanevalpack",
        "mbpp",
    }
    text = "\n".join(r["task"]["tests"] for r in modules.values())
    for feature in ("@pytest.fixture", "@pytest.mark.parametrize", "class Test", "pytest.raises"):
        assert feature in text
    assert any(
        "== pytest.approx(" in line or "pytest.approx(0" in line for line in text.splitlines()
    )
    # Each module is there with a solution that passes and one that does not.
    labels = Counter((r["group_id"], r["labels"]["expected"]["tests_pass"]) for r in RECORDS)
    assert set(labels.values()) == {1} and len(labels) == 2 * len(modules)


def _sample(record: dict[str, Any]) -> Sample:
    return Sample(id=record["id"], response=record["response"], task=TaskSpec(**record["task"]))


@pytest.fixture(scope="module")
def verdicts(grader: UnitTestsGrader) -> dict[str, Any]:
    config = UnitTestsConfig(timeout_s=20.0)
    jobs = [GraderJob(_sample(r), "tests", grader, config, 120.0) for r in RECORDS]
    results = asyncio.run(run_jobs(jobs, max_concurrency=2))
    return {r["id"]: result for r, result in zip(RECORDS, results, strict=True)}


def test_canonical_solutions_pass_every_test(verdicts: dict[str, Any]) -> None:
    failing = {
        r["id"]: (verdicts[r["id"]].score, verdicts[r["id"]].details.get("tests"))
        for r in RECORDS
        if r["labels"]["expected"]["tests_pass"] and verdicts[r["id"]].score != 1.0
    }
    assert failing == {}


def test_wrong_solutions_fail(verdicts: dict[str, Any]) -> None:
    passing = [
        r["id"]
        for r in RECORDS
        if not r["labels"]["expected"]["tests_pass"] and verdicts[r["id"]].score == 1.0
    ]
    assert passing == []
    assert all(not verdicts[r["id"]].violations for r in RECORDS)
