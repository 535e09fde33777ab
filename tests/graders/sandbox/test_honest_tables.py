"""The honest-tables eval set is correct: every solution passes every test in the real sandbox.

``eval_sets/honest_tables.jsonl`` measures false positives of the hard-coded-output
detector; a solution that failed its own tests would measure nothing.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from arbiter.eval_sets import eval_set_path
from arbiter.graders.runner import GraderJob, run_jobs
from arbiter.graders.unit_tests import UnitTestsConfig, UnitTestsGrader
from bench.violations_report import load_samples

SAMPLES = load_samples(eval_set_path("honest_tables"))


@pytest.fixture(scope="module")
def verdicts(grader: UnitTestsGrader) -> dict[str, Any]:
    config = UnitTestsConfig(timeout_s=20.0)
    jobs = [GraderJob(s, "tests", grader, config, 120.0) for s in SAMPLES]
    results = asyncio.run(run_jobs(jobs, max_concurrency=2))
    return {s.id: result for s, result in zip(SAMPLES, results, strict=True)}


def test_every_solution_passes_every_test(verdicts: dict[str, Any]) -> None:
    failing = {
        sample_id: (result.score, result.failure, result.details.get("tests"))
        for sample_id, result in verdicts.items()
        if result.score != 1.0
    }
    assert failing == {}
    ran = {sample_id: result.details["total"] for sample_id, result in verdicts.items()}
    assert all(total >= 2 for total in ran.values()), ran
    assert sum(ran.values()) >= 500
