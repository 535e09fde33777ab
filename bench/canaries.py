"""Canary tasks on HumanEvalPack, all six languages: made, left out, and the time it took.

Run as ``python -m bench.canaries [--languages python,cpp,...] [--limit N]``. For
each language, HumanEvalPack's 164 canonical solutions (``../shared/data/
humanevalpack_<lang>.jsonl``: Python as body-only ``python_function`` samples, the
other languages as ``test_program`` samples, as :mod:`arbiter.eval_loaders` reads
them) go through :func:`arbiter.canaries.make_canaries` with the real sandbox:
each twin is kept only when the canonical solution passes the original tests and
fails the flipped ones. Then every twin made is graded once more, on its own,
with the canonical solution: its tests must score below 1.0 (a second proof, of
the twins as written out).

It prints one line per language: canaries made, left out by reason, gradings,
seconds, and how many twins the second grading did not score below 1.0 (must be 0). There
is no baseline: no other tool makes canary tasks to compare with.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from pathlib import Path
from typing import Any

from arbiter.canaries import make_canaries
from arbiter.eval_loaders import load_humanevalpack
from arbiter.graders.runner import GraderJob, run_jobs
from arbiter.graders.types import Sample, TaskSpec
from arbiter.graders.unit_tests import UnitTestsConfig, UnitTestsGrader

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"
#: HumanEvalPack's file suffix for each of Arbiter's languages.
FILES = {
    "python": "python",
    "cpp": "cpp",
    "java": "java",
    "go": "go",
    "rust": "rust",
    "javascript": "js",
}


def humanevalpack_path(language: str) -> Path:
    """Where the shared data keeps HumanEvalPack's file for ``language``."""
    return DATA / f"humanevalpack_{FILES[language]}.jsonl"


def humanevalpack_samples(language: str, limit: int | None = None) -> list[Sample]:
    """HumanEvalPack's canonical solutions as samples (Python: the body alone, as HumanEval's)."""
    path = humanevalpack_path(language)
    if language == "python":
        rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
        return [
            Sample(
                id=f"{row['task_id']}/canonical",
                group_id=row["task_id"],
                prompt=row["prompt"],
                response=row["canonical_solution"],
                task=TaskSpec(
                    kind="python_function", tests=row["test"], entry_point=row["entry_point"]
                ),
                labels={"expected": {"tests_pass": True}},
            )
            for row in rows[:limit]
        ]
    canonical = [s for s in load_humanevalpack(path) if s.id.endswith("/canonical")]
    return canonical[:limit]


def regrade(twins: list[Sample], grader: UnitTestsGrader, config: UnitTestsConfig) -> list[Any]:
    """Grade each twin with its own response (the canonical solution), a job each."""
    jobs = [GraderJob(t, "tests", grader, config, 300.0) for t in twins]
    return asyncio.run(run_jobs(jobs, max_concurrency=8))


def run(language: str, limit: int | None, workers: int) -> dict[str, Any]:
    """Make one language's canaries and grade them again; the figures as a dict."""
    samples = humanevalpack_samples(language, limit)
    grader = UnitTestsGrader()
    grader.expect(samples)
    config = UnitTestsConfig()
    try:
        started = time.perf_counter()
        outcomes, summary = make_canaries(samples, grader, config=config, concurrency=workers)
        seconds = time.perf_counter() - started
        twins = [o.twin for o in outcomes if o.twin is not None]
        again = regrade(twins, grader, config)
    finally:
        grader.close()
    counts = summary.as_dict()["languages"].get(language, {"made": 0, "left_out": {}})
    return {
        "language": language,
        "tasks": len(samples),
        "made": counts["made"],
        "left_out": counts["left_out"],
        "gradings": summary.gradings,
        "seconds": round(seconds, 1),
        # Twins whose tests the canonical solution did not score below 1.0 (must be none).
        "regraded_not_below_1": sum(r.score is None or r.score >= 1.0 for r in again),
        "left_out_ids": [o.id for o in outcomes if o.twin is None],
    }


def main() -> None:
    """Run every language asked for and print its line."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--languages", default=",".join(FILES))
    parser.add_argument("--limit", type=int, default=None, help="The first N tasks only.")
    parser.add_argument("--workers", type=int, default=8, help="Gradings at once.")
    args = parser.parse_args()
    for language in args.languages.split(","):
        row = run(language, args.limit, args.workers)
        why = "; ".join(f"{k}: {v}" for k, v in sorted(row["left_out"].items())) or "-"
        print(
            f"{language:<10} {row['made']:>3}/{row['tasks']} made  left out: {why}  "
            f"gradings {row['gradings']}  {row['seconds']:.1f} s  "
            f"not below 1.0 on re-grade: {row['regraded_not_below_1']}  "
            f"left out: {', '.join(row['left_out_ids']) or '-'}",
            flush=True,
        )


if __name__ == "__main__":
    main()
