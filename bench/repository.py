"""Repository tasks: workspace resets, seconds per reward, overhead and memory, against baselines.

Run as ``python -m bench.repository [--tasks FILE --store DIR] [--rewards N] [--resets N]``
(wrap it in ``flock /tmp/arbiter-bench.lock``). In one run:

(a) **reset**: creating and destroying a workspace (ours: a tmpfs and an
    overlay mounted over the snapshot, then unmounted, in a workspace's own
    mount namespace) against a fresh copy of the tree (``shutil.copytree`` then
    ``rmtree``), p50 and p99, on a real task's snapshot and on a snapshot of the
    interpreter's standard library (thousands of files);
(b) **seconds per reward** on real tasks' gold patches: a SWE-bench-style
    baseline (a fresh copy of the tree, ``git apply``, ``python -m pytest``,
    stdout parsed: ``tests/graders/repository/naive_harness.py``, with plugin
    autoload off, which only makes it faster here) against
    Arbiter's grading, alternating per task;
(c) **overhead**: ours beyond the test run's own wall time (the runner
    process, pytest's start included), and with each test in one process
    (``isolation: session``) for comparison;
(d) **memory per concurrent workspace**: the workspace's tmpfs, the
    supervisor's and the runner's peak resident memory.

Without ``--tasks``, tasks are made here from the toolz sdist kept in the
repository (``make_tasks``, seeded). The ratios are printed last.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import sysconfig
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from arbiter.graders.repository.grading import RepositoryGrading, RepositorySettings
from arbiter.graders.repository.snapshots import SnapshotStore
from arbiter.graders.repository.tasks import make_tasks, read_rows
from arbiter.graders.repository.workspace import WorkspaceHost
from arbiter.graders.types import RepositoryTask

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from tests.graders.repository.naive_harness import naive_run  # noqa: E402

TOOLZ = ROOT / "eval_sets" / "repositories" / "toolz-1.2.0.tar.gz"


def _pct(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def _ms(values: Sequence[float]) -> str:
    return (
        f"p50 {1000 * statistics.median(values):8.2f} ms  p99 {1000 * _pct(values, 0.99):8.2f} ms"
    )


def _copies(tree: Path, count: int) -> list[float]:
    times = []
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(count):
            t0 = time.perf_counter()
            dest = Path(tmp) / f"c{i}"
            shutil.copytree(tree, dest, symlinks=True)
            shutil.rmtree(dest)
            times.append(time.perf_counter() - t0)
    return times


def _files(tree: Path) -> int:
    return sum(1 for p in tree.rglob("*") if p.is_file())


def _stdlib(store: SnapshotStore, work: Path) -> Path:
    """A large real tree: this interpreter's standard library without site-packages."""
    source = Path(sysconfig.get_paths()["stdlib"])
    copy = work / "stdlib"
    shutil.copytree(
        source, copy, symlinks=True, ignore=shutil.ignore_patterns("site-packages", "__pycache__")
    )
    tree = store.add(copy).tree
    shutil.rmtree(copy)
    return tree


def bench_resets(host: WorkspaceHost, trees: dict[str, tuple[Path, int]]) -> dict[str, float]:
    print("\n(a) reset: create + destroy a workspace")
    ratios = {}
    for name, (tree, count) in trees.items():
        ours = host.resets(str(tree), count)
        copies = _copies(tree, count)
        ratio = statistics.median(copies) / statistics.median(ours)
        ratios[name] = ratio
        print(f"  {name:<28} {_files(tree):>5} files, {count} times  copy  {_ms(copies)}")
        print(f"  {'':<28} {'':>5}                   ours  {_ms(ours)}   copy/ours {ratio:6.1f}x")
    return ratios


def bench_rewards(
    rows: list[dict[str, Any]], grading: RepositoryGrading, store: SnapshotStore, work: Path
) -> dict[str, Any]:
    print(f"\n(b) seconds per reward: {len(rows)} real tasks' gold patches, alternating")
    settings = RepositorySettings(check_task=False)
    session = RepositorySettings(check_task=False, isolation="session")
    naive_s, ours_s, session_s, runner_s, tests_s = [], [], [], [], []
    memory: list[tuple[int, int, int]] = []
    resolved = {"naive": 0, "ours": 0}
    for i, row in enumerate(rows):
        task = RepositoryTask.model_validate(row["task"])
        tree = store.get(task.repository).tree
        order = ("naive", "ours") if i % 2 == 0 else ("ours", "naive")
        for which in order:
            t0 = time.perf_counter()
            if which == "naive":
                run = naive_run(
                    tree,
                    work / f"n{i}",
                    task.tests,
                    row["gold_patch"],
                    task.fail_to_pass,
                    task.pass_to_pass,
                    autoload=False,
                )
                naive_s.append(time.perf_counter() - t0)
                resolved["naive"] += run.resolved
                shutil.rmtree(work / f"n{i}", ignore_errors=True)
            else:
                out = grading.grade(row["gold_patch"], task, settings)
                ours_s.append(time.perf_counter() - t0)
                resolved["ours"] += out.score == 1.0
                run_d = out.details.get("run", {})
                runner_s.append(float(run_d.get("wall_s") or 0.0))
                tests_s.append(float(run_d.get("tests_s") or 0.0))
                ws = out.details.get("workspace", {})
                memory.append(
                    (
                        int(ws.get("tmpfs_used_kb") or 0),
                        int(ws.get("supervisor_rss_kb") or 0),
                        int(run_d.get("maxrss_kb") or 0),
                    )
                )
        t0 = time.perf_counter()
        grading.grade(row["gold_patch"], task, session)
        session_s.append(time.perf_counter() - t0)
    print(
        f"  naive (copy, git apply, pytest, stdout)  {statistics.median(naive_s):6.3f} s/reward "
        f"(mean {statistics.mean(naive_s):6.3f})  resolved {resolved['naive']}/{len(rows)}"
    )
    print(
        f"  ours  (workspace, tripwires, per-test)   {statistics.median(ours_s):6.3f} s/reward "
        f"(mean {statistics.mean(ours_s):6.3f})  resolved {resolved['ours']}/{len(rows)}"
    )
    print(f"  ours  (isolation: session)              {statistics.median(session_s):6.3f} s/reward")
    overheads = [(o - r) / r for o, r in zip(ours_s, runner_s, strict=True) if r > 0]
    print("\n(c) overhead beyond the test run (the runner process: interpreter, pytest, tests)")
    print(
        f"  runner wall p50 {statistics.median(runner_s):6.3f} s, of which the tests' own "
        f"phases p50 {statistics.median(tests_s):6.3f} s"
    )
    print(
        f"  grading beyond the runner: p50 {100 * statistics.median(overheads):5.1f}%  "
        f"mean {100 * statistics.mean(overheads):5.1f}%"
    )
    tmpfs, sup, runner = (statistics.median(m[k] for m in memory) for k in range(3))
    print("\n(d) memory per concurrent workspace (medians)")
    print(
        f"  tmpfs (upper, temp) {tmpfs / 1024:6.1f} MiB  supervisor {sup / 1024:6.1f} MiB  "
        f"runner peak {runner / 1024:6.1f} MiB  total {(tmpfs + sup + runner) / 1024:6.1f} MiB"
    )
    return {
        "naive_s": statistics.median(naive_s),
        "ours_s": statistics.median(ours_s),
        "overhead": statistics.median(overheads),
    }


def main(argv: Sequence[str] | None = None) -> None:
    """Run the benchmark; see the module's docstring."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=Path, help="A tasks JSONL (default: made from toolz here)")
    parser.add_argument("--store", type=Path, help="The store the tasks' snapshots are in")
    parser.add_argument("--rewards", type=int, default=12, help="Tasks graded per side")
    parser.add_argument("--resets", type=int, default=200, help="Resets of the task's tree")
    parser.add_argument("--large-resets", type=int, default=30, help="Resets of the large tree")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        store = SnapshotStore(args.store or work / "store")
        if args.tasks:
            rows = read_rows(args.tasks)
        else:
            print(f"making tasks from {TOOLZ.name} ...")
            rows, _ = make_tasks(TOOLZ, store=store, max_tasks=args.rewards)
        step = max(1, len(rows) // args.rewards)
        rows = rows[::step][: args.rewards]
        host = WorkspaceHost(slots=2)
        grading = RepositoryGrading(store=store, host=host)
        try:
            task_tree = store.get(rows[0]["task"]["repository"]).tree
            stdlib = _stdlib(store, work)
            ratios = bench_resets(
                host,
                {
                    "real task (toolz)": (task_tree, args.resets),
                    "stdlib snapshot": (stdlib, args.large_resets),
                },
            )
            rewards = bench_rewards(rows, grading, store, work)
        finally:
            grading.close()
    print("\nratios")
    for name, ratio in ratios.items():
        print(f"  reset, copy/ours, {name:<22} {ratio:7.1f}x")
    print(f"  overhead beyond the test run     {100 * rewards['overhead']:6.1f}%")
    print(f"  seconds per reward, naive/ours   {rewards['naive_s'] / rewards['ours_s']:7.2f}x")


if __name__ == "__main__":
    main()
