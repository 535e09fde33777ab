"""Grade HumanEvalPack's canonical solutions: a naive pytest-per-item baseline against Arbiter.

Run as ``python -m bench.sandbox [--runs N]``. In the same run:

(a) naive: a fresh ``python -m pytest`` subprocess per item, one after the
    other, in this project's environment, ``PYTEST_DISABLE_PLUGIN_AUTOLOAD=1``,
    no isolation at all; (a') is the same with one worker per sandbox slot, for
    reference;
(b) Arbiter: the ``unit_tests`` grader through the grader runner, every
    sandbox layer this host provides (they are printed), one job in flight per
    slot; each pass starts with empty plan and program caches, so every task
    is planned, and every program read, as if first seen;
(c) the floor: a confined child that loads an empty module and is torn down;
(d) the ``pytest`` kind: each item's ``check`` as a one-test pytest module that
    imports the candidate, through the same grader.

(b) and (c) run ``--runs`` passes over the 164 items and print each; the
summary takes medians. Each line gives items/s and p50/p99 latency; the ratio
(b)/(a) is printed last.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from arbiter.graders.program import clear_cache as clear_program_cache
from arbiter.graders.runner import GraderJob, run_jobs
from arbiter.graders.sandbox import Limits, PoolConfig, SandboxPool
from arbiter.graders.types import Sample, TaskSpec
from arbiter.graders.unit_tests import UnitTestsConfig, UnitTestsGrader, clear_plan_cache

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "humanevalpack_python.jsonl"


def _percentile(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def _line(name: str, items: int, wall_s: float, latencies: Sequence[float], note: str) -> float:
    rate = items / wall_s
    print(
        f"{name:<34} {items:>4} items  {rate:8.1f} items/s  "
        f"p50 {1000 * statistics.median(latencies):7.1f} ms  "
        f"p99 {1000 * _percentile(latencies, 0.99):7.1f} ms  {note}"
    )
    return rate


def _timed(
    fn: Callable[[Any], bool], items: Sequence[Any], workers: int
) -> tuple[float, list[float], int]:
    latencies: list[float] = []

    def one(item: Any) -> bool:
        started = time.perf_counter()
        ok = fn(item)
        latencies.append(time.perf_counter() - started)
        return ok

    started = time.perf_counter()
    with ThreadPoolExecutor(workers) as executor:
        passed = sum(executor.map(one, items))
    return time.perf_counter() - started, latencies, passed


def naive(rows: Sequence[dict[str, Any]], workers: int, name: str) -> float:
    """(a): one fresh pytest process per item; the module-level ``check(...)`` runs at import."""
    env = {**os.environ, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
    with tempfile.TemporaryDirectory(prefix="arbiter-bench-") as tmp:

        def run(row: dict[str, Any]) -> bool:
            directory = Path(tmp) / row["task_id"].replace("/", "_")
            directory.mkdir()
            path = directory / "test_item.py"
            path.write_text(
                f"{row['prompt']}{row['canonical_solution']}\n\n{row['test']}\n\n"
                "def test_item():\n    pass\n"
            )
            done = subprocess.run(
                [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(path)],
                cwd=directory,
                env=env,
                capture_output=True,
                timeout=60,
                check=False,
            )
            return done.returncode == 0

        wall, latencies, passed = _timed(run, rows, workers)
    return _line(name, len(rows), wall, latencies, f"passed {passed}/{len(rows)}")


def _suite(row: dict[str, Any]) -> str:
    """Return a HumanEvalPack item's ``check`` as a pytest module that star-imports the candidate.

    Star, not the entry point alone: some checks call the prompt's helpers (``poly``).
    """
    return (
        f"from solution import *\n\n{row['test']}\n\n"
        f"def test_check():\n    check({row['entry_point']})\n"
    )


def arbiter(
    rows: Sequence[dict[str, Any]],
    pool: SandboxPool,
    concurrency: int,
    runs: int,
    kind: str = "python_function",
) -> list[float]:
    """(b), (d): the unit_tests grader through the runner, as the service calls it."""
    grader = UnitTestsGrader(pool)
    config = UnitTestsConfig(timeout_s=10.0)
    suites = kind == "pytest"
    samples = [
        Sample(
            # The prompt as the prompt too: its helpers (poly, encode_cyclic) are the
            # task's, run on the trusted side, whatever the response defines.
            id=row["task_id"],
            prompt=row["prompt"],
            response=f"```python\n{row['prompt']}{row['canonical_solution']}\n```",
            task=TaskSpec(
                kind=kind,
                tests=_suite(row) if suites else row["test"],
                entry_point="solution" if suites else row["entry_point"],
            ),
        )
        for row in rows
    ]
    jobs = [GraderJob(s, "tests", grader, config, 60.0) for s in samples]

    async def grade_all() -> tuple[float, list[float], int]:
        started = time.perf_counter()
        results = await run_jobs(jobs, max_concurrency=concurrency)
        wall = time.perf_counter() - started
        return wall, [r.latency_s for r in results], sum(r.score == 1.0 for r in results)

    asyncio.run(run_jobs(jobs[:20], max_concurrency=concurrency))  # warm-up
    rates = []
    for _ in range(runs):
        clear_plan_cache()
        clear_program_cache()
        wall, latencies, passed = asyncio.run(grade_all())
        note = f"passed {passed}/{len(rows)}"
        name = "(d) arbiter, pytest kind" if suites else "(b) arbiter unit_tests grader"
        rates.append(_line(name, len(rows), wall, latencies, note))
    return rates


def floor(pool: SandboxPool, items: int, workers: int) -> float:
    """(c): a confined child that loads an empty module, answers nothing, and is torn down."""
    limits = Limits(timeout_s=5.0)

    def bare(_: int) -> bool:
        with pool.function_run("pass\n", limits) as child:
            child.channel.recv(1)
        return child.report is not None

    wall, latencies, _ = _timed(bare, range(items), workers)
    return _line("(c) floor: bare confined child", items, wall, latencies, "")


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument(
        "--slots",
        type=int,
        default=2 * (os.cpu_count() or 1),
        help="sandbox slots, and the workers of every variant (default: 2 per CPU)",
    )
    parser.add_argument(
        "--naive-items", type=int, default=40, help="items for the slow baseline (a rate)"
    )
    parser.add_argument("--runs", type=int, default=5, help="passes of (b) and (c)")
    args = parser.parse_args(argv)
    if not DATA.exists():
        sys.exit(f"{DATA} is absent: check out ../shared/data beside the repository")
    rows = [json.loads(line) for line in DATA.read_text().splitlines() if line.strip()]
    pool = SandboxPool(PoolConfig(slots=args.slots))
    try:
        pool.start()
        active = [k for k, v in pool.layers().items() if v.startswith("active")]
        print(f"HumanEvalPack canonical solutions; {args.slots} slots on {os.cpu_count()} CPUs")
        print(f"sandbox layers active: {', '.join(active)}")
        sample = rows[: args.naive_items]
        naive_rate = naive(sample, 1, "(a) naive pytest subprocess")
        naive(sample, args.slots, f"(a') naive, {args.slots} in parallel")
        ours = arbiter(rows, pool, args.slots, args.runs)
        floors = [floor(pool, len(rows), args.slots) for _ in range(args.runs)]
        suites = arbiter(rows, pool, args.slots, args.runs, kind="pytest")
    finally:
        pool.close()
    median = statistics.median(ours)
    print(
        f"median of {args.runs}: (b) {median:.1f} items/s, (c) {statistics.median(floors):.1f} "
        f"items/s; (a) {naive_rate:.1f} items/s"
    )
    print(f"pytest kind (d): median {statistics.median(suites):.1f} items/s")
    print(f"ratio (b)/(a): {median / naive_rate:.1f}x")


if __name__ == "__main__":
    main()
