"""Hidden cases (``hidden_cases``) on real data, and what they cost per sample.

Run as ``python -m bench.augmented [--cost] [--real humanevalpack mbpp cpp ...] [--runs N]``.

``--real`` grades, per set, every task's reference (and HumanEvalPack's buggy
solution) with hidden cases derived from the reference, and prints (``cpp``,
``java``, ``go``, ``rust``, ``javascript``: HumanEvalPack in that language, as
``test_program`` tasks whose cases cross the bridge):
the cases per task (median, min, and how many tasks got none, with why); how
many references fail any of their own cases (it must be 0); and how many
buggy solutions that pass every visible test fail the hidden ones.

``--cost`` grades HumanEvalPack's 164 canonical solutions through the
unit-test grader, in alternating passes: (v) the visible tests alone; (h)
with the hidden cases, cached (derived in a warm-up pass first); and (u)
with the hidden cases uncached, every task deriving its cases on its first
sample (a fresh store each pass), which is what each task pays once. It
prints items/s per pass, medians, and the extra cost of (h) and (u) over (v);
the target for (h) is at most 25%.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

from arbiter.graders.hidden_cases import HiddenCaseStore
from arbiter.graders.runner import GraderJob, run_jobs
from arbiter.graders.sandbox import PoolConfig, SandboxPool
from arbiter.graders.types import GradeResult, Sample, TaskSpec
from arbiter.graders.unit_tests import UnitTestsConfig, UnitTestsGrader

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"


def humanevalpack() -> list[tuple[str, TaskSpec, str, str | None]]:
    """(id, task, reference, buggy) per HumanEvalPack Python task."""
    out = []
    for line in (DATA / "humanevalpack_python.jsonl").read_text().splitlines():
        row = json.loads(line)
        reference = row["prompt"] + row["canonical_solution"]
        task = TaskSpec(
            kind="python_function",
            tests=row["test"],
            entry_point=row["entry_point"],
            reference=reference,
        )
        out.append((row["task_id"], task, reference, row["prompt"] + row["buggy_solution"]))
    return out


def mbpp() -> list[tuple[str, TaskSpec, str, str | None]]:
    """(id, task, reference, None) per MBPP task (its entry point read from the tests)."""
    out: list[tuple[str, TaskSpec, str, str | None]] = []
    for line in (DATA / "mbpp.jsonl").read_text().splitlines():
        row = json.loads(line)
        tests = list(row["test_list"]) + list(row.get("challenge_test_list") or [])
        task = TaskSpec(
            kind="python_function",
            tests=tests,
            setup_code=row.get("test_setup_code") or None,
            reference=row["code"],
        )
        out.append((f"mbpp/{row['task_id']}", task, row["code"], None))
    return out


#: HumanEvalPack's other languages: the name ``--real`` takes, and the data file's.
LANGUAGES = {"cpp": "cpp", "java": "java", "go": "go", "rust": "rust", "javascript": "js"}


def humanevalpack_in(language: str) -> list[tuple[str, TaskSpec, str, str | None]]:
    """(id, task, reference, buggy) per HumanEvalPack task in a compiled language or JavaScript.

    The reference and the buggy solution continue the task's prompt, as a
    completion would (the prompt goes with each sample, see :func:`_sample`).
    """
    out = []
    for line in (DATA / f"humanevalpack_{LANGUAGES[language]}.jsonl").read_text().splitlines():
        row = json.loads(line)
        task = TaskSpec(
            kind="test_program",
            language=language,
            tests=row["test"],
            entry_point=row["entry_point"],
            reference=row["canonical_solution"],
        )
        PROMPTS[row["task_id"]] = row["prompt"]
        out.append((row["task_id"], task, row["canonical_solution"], row["buggy_solution"]))
    return out


#: Each compiled task's prompt, by id (its samples carry it).
PROMPTS: dict[str, str] = {}


def _grade(
    grader: UnitTestsGrader, samples: Sequence[Sample], config: UnitTestsConfig, slots: int
) -> tuple[list[GradeResult], float]:
    jobs = [GraderJob(s, "tests", grader, config, 600.0) for s in samples]
    started = time.perf_counter()
    results = asyncio.run(run_jobs(jobs, max_concurrency=slots))
    return results, time.perf_counter() - started


def _sample(name: str, code: str, task: TaskSpec) -> Sample:
    if task.language == "python":
        return Sample(id=name, response=f"```python\n{code}\n```", task=task)
    return Sample(id=name, prompt=PROMPTS[name.rsplit("/", 1)[0]], response=code, task=task)


def real(name: str, grader: UnitTestsGrader, slots: int) -> None:
    if name in LANGUAGES:
        items = humanevalpack_in(name)
        name = f"humanevalpack {name}"
    else:
        items = humanevalpack() if name == "humanevalpack" else mbpp()
    config = UnitTestsConfig(timeout_s=10, hidden_cases=True)
    samples = [_sample(f"{i}/reference", ref, task) for i, task, ref, _ in items]
    samples += [_sample(f"{i}/buggy", bug, task) for i, task, _, bug in items if bug is not None]
    results, wall = _grade(grader, samples, config, slots)
    by_id = {s.id: r for s, r in zip(samples, results, strict=True)}
    counts, none, failing = [], Counter[str](), []
    visible_fail = []
    for task_id, _, _, _ in items:
        result = by_id[f"{task_id}/reference"]
        hidden = result.details.get("hidden") or {"total": 0, "reason": str(result.failure)}
        counts.append(hidden["total"])
        if hidden["total"] == 0:
            none[hidden.get("reason") or "?"] += 1
        elif hidden["failed"]:
            failed = f"{hidden['failed']}/{hidden['total']}: {hidden['failures']}"
            failing.append(f"{task_id} ({failed})")
        if result.score != 1.0:
            visible_fail.append(task_id)
    with_cases = [c for c in counts if c]
    print(f"\n== {name}: {len(items)} tasks, {len(samples)} gradings in {wall:.1f} s")
    print(
        f"hidden cases per task: median {statistics.median(counts):g}, min {min(counts)}; "
        f"over the {len(with_cases)} tasks that have any: median "
        f"{statistics.median(with_cases) if with_cases else 0:g}, min {min(with_cases or [0])}"
    )
    for reason, n in none.most_common():
        print(f"  no cases ({n} tasks): {reason}")
    print(f"references failing a visible test: {len(visible_fail)} {visible_fail[:10]}")
    print(f"references failing any of their own hidden cases: {len(failing)}")
    for line in failing[:20]:
        print(f"  {line}")
    buggy = [(s, r) for s, r in zip(samples, results, strict=True) if s.id.endswith("/buggy")]
    if buggy:
        passing = [(s, r) for s, r in buggy if r.score == 1.0]
        caught = [s.id for s, r in passing if (r.details.get("hidden") or {}).get("failed")]
        print(
            f"buggy solutions: {len(buggy)}; passing every visible test: {len(passing)}; "
            f"of those, failing hidden cases: {len(caught)} {caught}"
        )
        alone = [s for s, r in buggy if (r.details.get("hidden") or {}).get("failed")]
        graded = [s for s, r in buggy if (r.details.get("hidden") or {}).get("total")]
        print(
            f"buggy solutions the hidden cases alone catch: {len(alone)} of the {len(graded)} "
            "whose task has cases"
        )


def cost(grader: UnitTestsGrader, runs: int, slots: int, cases: int) -> None:
    items = humanevalpack()
    samples = [_sample(f"{i}/canonical", ref, task) for i, task, ref, _ in items]
    visible = UnitTestsConfig(timeout_s=10)
    hidden = UnitTestsConfig(timeout_s=10, hidden_cases=True, max_hidden_cases=cases)
    store = grader.hidden
    _grade(grader, samples, hidden, slots)  # warm-up: every task's cases derived and cached
    _grade(grader, samples, visible, slots)
    rates: dict[str, list[float]] = {"v": [], "h": [], "u": []}
    for run in range(runs):
        for mode in ("v", "h", "u"):
            if mode == "u":
                grader.hidden = HiddenCaseStore(tempfile.mkdtemp(prefix="arbiter-bench-hidden-"))
            else:
                grader.hidden = store
            _, wall = _grade(grader, samples, visible if mode == "v" else hidden, slots)
            rates[mode].append(len(samples) / wall)
            print(f"pass {run + 1} ({mode}): {len(samples) / wall:7.1f} items/s")
    grader.hidden = store
    v, h, u = (statistics.median(rates[m]) for m in ("v", "h", "u"))
    print(f"\n(v) visible tests alone:        {v:7.1f} items/s (median of {runs})")
    print(f"(h) with hidden cases, cached:  {h:7.1f} items/s: extra cost {100 * (v / h - 1):+.1f}%")
    print(f"(u) with hidden cases, derived: {u:7.1f} items/s: extra cost {100 * (v / u - 1):+.1f}%")
    print("target for (h): at most +25%")


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--real", nargs="*", choices=["humanevalpack", "mbpp", *LANGUAGES], default=[]
    )
    parser.add_argument("--cost", action="store_true")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--slots", type=int, default=2)
    parser.add_argument("--cases", type=int, default=24, help="max_hidden_cases for --cost")
    args = parser.parse_args(argv)
    grader = UnitTestsGrader(SandboxPool(PoolConfig(slots=args.slots)))
    grader.hidden = HiddenCaseStore(tempfile.mkdtemp(prefix="arbiter-bench-hidden-"))
    try:
        for name in args.real:
            real(name, grader, args.slots)
        if args.cost:
            cost(grader, args.runs, args.slots, args.cases)
    finally:
        grader.close()


if __name__ == "__main__":
    main()
