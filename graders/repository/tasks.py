"""Make bug-fix tasks from a real repository, and validate tasks (``arbiter tasks``).

``make_tasks`` (SWE-smith's idea): the repository's own suite is run once with
:mod:`._tracer` to learn which tests reach which function; then one function
at a time is mutated (:mod:`.mutations`, seeded), and the tests that reach it
are run against the mutant. A mutant is kept when at least one of them fails
and none fails to collect; the failing tests are its fail-to-pass, those that
still pass its pass-to-pass, the reverse diff its gold patch, and the failing
tests' names and error types (never their code) its problem statement. Each
task's snapshot is the repository with the mutant and without the files that
hold its tests (they are the task's hidden ``tests``). These runs are of the
author's repository, not a candidate's: plain subprocesses, no sandbox.

``validate_tasks`` runs every task through the grader's own path: the gold
patch three times (each must resolve; outcomes that differ name flaky tests
and refuse the task) and no patch once (no fail-to-pass test may pass, every
pass-to-pass test must).
"""

from __future__ import annotations

import collections
import concurrent.futures
import json
import random
import shutil
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from arbiter.graders.repository.grading import RepositoryGrading, RepositorySettings
from arbiter.graders.repository.mutations import Mutant, mutants, unified_diff
from arbiter.graders.repository.snapshots import SnapshotStore, _unseal
from arbiter.graders.types import RepositoryTask

__all__ = ["MakeReport", "ValidationReport", "make_tasks", "validate_tasks"]

_TRACER = str(Path(__file__).resolve().parent / "_tracer.py")
_BOOT = """
import json, sys, importlib.util
cfg = json.loads(sys.argv[1])
spec = importlib.util.spec_from_file_location("arbiter_repository_tracer", cfg["tracer"])
tracer = importlib.util.module_from_spec(spec)
spec.loader.exec_module(tracer)
import pytest
sys.path[0:0] = cfg["paths"]
sys.exit(pytest.main(cfg["args"], plugins=[tracer.Tracer(cfg["fd"], cfg["sources"], cfg["trace"])]))
"""
#: Folders never read as the project's source.
_NOT_SOURCE = {"tests", "test", "testing", "docs", "doc", "bench", "benchmarks", "examples"}
_NOT_SOURCE_FILES = {"setup.py", "conftest.py", "noxfile.py", "fabfile.py", "_version.py"}


def _is_test(rel: str) -> bool:
    name = rel.rsplit("/", 1)[-1]
    return name.endswith(".py") and (name.startswith("test_") or name.endswith("_test.py"))


@dataclass
class MakeReport:
    """What ``make_tasks`` did with one repository."""

    package: str
    snapshot: str = ""
    tests_seen: int = 0
    tests_passing: int = 0
    functions: int = 0
    tried: int = 0
    kept: int = 0
    refused: collections.Counter[str] = field(default_factory=collections.Counter)

    def as_dict(self) -> dict[str, Any]:
        """The report as plain data."""
        return {
            "package": self.package,
            "snapshot": self.snapshot,
            "tests_seen": self.tests_seen,
            "tests_passing": self.tests_passing,
            "functions": self.functions,
            "mutants_tried": self.tried,
            "kept": self.kept,
            "refused": dict(sorted(self.refused.items())),
        }


def _sources(tree: Path, python_paths: tuple[str, ...]) -> list[str]:
    out: list[str] = []
    for base in python_paths:
        root = tree / base if base else tree
        for path in sorted(root.rglob("*.py")):
            rel = path.relative_to(tree).as_posix()
            inner = path.relative_to(root).parts
            if (
                _is_test(rel)
                or path.name in _NOT_SOURCE_FILES
                or any(p in _NOT_SOURCE or p.startswith(".") for p in inner[:-1])
                or (base == "" and "src" in python_paths and inner[0] == "src")
            ):
                continue
            if len(inner) > 1 and not (root / inner[0] / "__init__.py").exists():
                continue  # a folder that is not a package (scripts, tools)
            out.append(rel)
    return out


def _pytest(
    tree: Path,
    python_paths: tuple[str, ...],
    args: list[str],
    sources: list[str],
    *,
    trace: bool,
    timeout_s: float,
) -> list[dict[str, Any]] | None:
    """Run pytest on ``tree`` with the tracer; its lines, or None when it ran out of time."""
    with tempfile.TemporaryFile() as results:
        cfg = {
            "tracer": _TRACER,
            "paths": [str(tree / p) if p else str(tree) for p in python_paths],
            "sources": sources,
            "trace": trace,
            "fd": results.fileno(),
            "args": ["-q", "-p", "no:cacheprovider", "--continue-on-collection-errors", *args],
        }
        env = {
            "PATH": "/usr/local/bin:/usr/bin:/bin",
            "LANG": "C.UTF-8",
            "TZ": "UTC",
            "PYTHONHASHSEED": "0",
            "PYTHONDONTWRITEBYTECODE": "1",
            "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",
            "HOME": str(tree.parent),
        }
        try:
            subprocess.run(
                [sys.executable, "-c", _BOOT, json.dumps(cfg)],
                cwd=tree,
                env=env,
                pass_fds=[results.fileno()],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                timeout=timeout_s,
                check=False,
            )
        except subprocess.TimeoutExpired:
            return None
        results.seek(0)
        lines = []
        for raw in results.read().decode("utf-8", "replace").splitlines():
            try:
                lines.append(json.loads(raw))
            except ValueError:
                continue
        return lines


def _statement(package: str, failing: list[dict[str, Any]]) -> str:
    names = ", ".join(
        f"{t['id'].split('::', 1)[-1]} ({t.get('error') or t['outcome']})" for t in failing[:8]
    )
    more = f" and {len(failing) - 8} more" if len(failing) > 8 else ""
    return (
        f"A bug was introduced into {package}. These tests now fail: {names}{more}. "
        "Find the bug in the package's source (not in its tests) and fix it; reply with a "
        "unified diff as `git diff` prints it."
    )


def make_tasks(
    source: Path,
    *,
    store: SnapshotStore,
    seed: int = 0,
    max_tasks: int | None = None,
    max_fail_to_pass: int = 20,
    max_pass_to_pass: int = 30,
    per_function: int = 3,
    max_test_s: float = 2.0,
    timeout_s: float = 120.0,
    log: Callable[[str], None] = lambda _: None,
) -> tuple[list[dict[str, Any]], MakeReport]:
    """Turn the repository at ``source`` (a folder or an sdist) into validated-shape tasks."""
    base = store.add(source)
    package = Path(source).name.removesuffix(".tar.gz")
    report = MakeReport(package=package, snapshot=base.id)
    work = Path(tempfile.mkdtemp(prefix="arbiter-make-repo-"))
    try:
        tree = work / "tree"
        shutil.copytree(base.tree, tree, symlinks=True)
        _unseal(tree)
        sources = _sources(tree, base.python_paths)
        tests = sorted(
            p.relative_to(tree).as_posix() for p in tree.rglob("*.py") if _is_test(p.name)
        )
        log(f"{package}: {len(sources)} source files, {len(tests)} test files; tracing the suite")
        traced = _pytest(tree, base.python_paths, tests, sources, trace=True, timeout_s=3600)
        if traced is None:
            raise RuntimeError(f"{package}: the traced suite ran past an hour")
        report.tests_seen = sum(1 for t in traced if t["outcome"] != "collect_error")
        passing = {
            t["id"]: t
            for t in traced
            if t["outcome"] == "passed" and t.get("duration_s", 0) <= max_test_s
        }
        report.tests_passing = len(passing)
        reaching: dict[str, list[str]] = collections.defaultdict(list)
        for nodeid, t in passing.items():
            for call in t["calls"]:
                reaching[call].append(nodeid)
        rows: list[dict[str, Any]] = []
        by_function: dict[tuple[str, str], list[Mutant]] = collections.defaultdict(list)
        for rel in sources:
            text = (tree / rel).read_text(encoding="utf-8")
            for m in mutants(rel, text, seed=seed, per_function=per_function):
                by_function[(rel, m.function)].append(m)
        report.functions = len(by_function)
        for (rel, function), candidates in by_function.items():
            if max_tasks is not None and len(rows) >= max_tasks:
                break
            reached = sorted(reaching.get(f"{rel}::{function}", []))
            if not reached:
                report.refused["no_test_reaches_it"] += 1
                continue
            for mutant in candidates:
                report.tried += 1
                why, row = _try(
                    mutant,
                    tree,
                    base.python_paths,
                    sources,
                    reached,
                    package,
                    seed,
                    max_fail_to_pass,
                    max_pass_to_pass,
                    timeout_s,
                    store,
                )
                if row is None:
                    report.refused[why] += 1
                    continue
                row["id"] = f"{package}-{len(rows) + 1:04d}"
                rows.append(row)
                report.kept += 1
                log(
                    f"{row['id']}: {rel}::{function} ({mutant.operator}), "
                    f"{len(row['task']['fail_to_pass'])} fail-to-pass"
                )
                break
        return rows, report
    finally:
        _unseal(work)
        shutil.rmtree(work, ignore_errors=True)


def _try(
    mutant: Mutant,
    tree: Path,
    python_paths: tuple[str, ...],
    sources: list[str],
    reached: list[str],
    package: str,
    seed: int,
    max_fail_to_pass: int,
    max_pass_to_pass: int,
    timeout_s: float,
    store: SnapshotStore,
) -> tuple[str, dict[str, Any] | None]:
    path = tree / mutant.path
    path.write_text(mutant.mutated, encoding="utf-8")
    try:
        results = _pytest(tree, python_paths, reached, sources, trace=False, timeout_s=timeout_s)
    finally:
        path.write_text(mutant.original, encoding="utf-8")
    if results is None:
        return "timeout", None
    if any(t["outcome"] == "collect_error" for t in results):
        return "breaks_collection", None
    by_id = {t["id"]: t for t in results}
    failing = [
        by_id[n] for n in reached if n in by_id and by_id[n]["outcome"] in ("failed", "error")
    ]
    if any(n not in by_id for n in reached):
        return "tests_missing", None
    if not failing:
        return "survived", None
    rng = random.Random(f"{seed}\0{mutant.path}\0{mutant.function}")
    fail_to_pass = [t["id"] for t in failing][:max_fail_to_pass]
    still = [n for n in reached if by_id[n]["outcome"] == "passed"]
    pass_to_pass = sorted(rng.sample(still, min(len(still), max_pass_to_pass)))
    hidden = sorted({n.split("::", 1)[0] for n in [*fail_to_pass, *pass_to_pass]})
    staging = Path(tempfile.mkdtemp(prefix="arbiter-task-"))
    try:
        shutil.copytree(tree, staging / "t", symlinks=True)
        (staging / "t" / mutant.path).write_text(mutant.mutated, encoding="utf-8")
        for name in hidden:
            (staging / "t" / name).unlink()
        snapshot = store.add(staging / "t")
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    task = {
        "kind": "repository",
        "repository": snapshot.id,
        "tests": {name: (tree / name).read_text(encoding="utf-8") for name in hidden},
        "fail_to_pass": fail_to_pass,
        "pass_to_pass": pass_to_pass,
    }
    return "kept", {
        "id": "",
        "prompt": _statement(package, failing),
        "task": task,
        "gold_patch": unified_diff(mutant.path, mutant.mutated, mutant.original),
        "meta": {
            "package": package,
            "path": mutant.path,
            "function": mutant.function,
            "line": mutant.line,
            "operator": mutant.operator,
        },
    }


# --- validation -------------------------------------------------------------------


@dataclass
class ValidationReport:
    """What ``validate_tasks`` found, per package and in all."""

    rows: list[dict[str, Any]] = field(default_factory=list)

    def summary(self) -> dict[str, Any]:
        """Counts per package and overall: gold resolved, no-op resolving, refused, flaky."""
        per: dict[str, dict[str, Any]] = {}
        for row in self.rows:
            p = per.setdefault(
                row["package"],
                {
                    "tasks": 0,
                    "gold_resolved": 0,
                    "noop_resolves_any": 0,
                    "valid": 0,
                    "refused": collections.Counter(),
                    "flaky_tests": [],
                },
            )
            p["tasks"] += 1
            p["gold_resolved"] += row["gold_resolved"]
            p["noop_resolves_any"] += row["noop_resolves_any"]
            p["valid"] += row["valid"]
            for reason in row["refused"]:
                p["refused"][reason] += 1
            p["flaky_tests"] += row["flaky"]
        total = {
            k: sum(p[k] for p in per.values())
            for k in ("tasks", "gold_resolved", "noop_resolves_any", "valid")
        }
        for p in per.values():
            p["refused"] = dict(p["refused"])
        n = max(total["tasks"], 1)
        total["gold_resolved_pct"] = round(100 * total["gold_resolved"] / n, 2)
        total["noop_resolves_pct"] = round(100 * total["noop_resolves_any"] / n, 2)
        return {"packages": per, "total": total}


def _validate_one(
    row: dict[str, Any], grading: RepositoryGrading, settings: RepositorySettings, repeats: int
) -> dict[str, Any]:
    task = RepositoryTask.model_validate(row["task"])
    gold = [grading.run_diff(row["gold_patch"], task, settings) for _ in range(repeats)]
    noop = grading.run_diff("", task, settings)
    refused: list[str] = []
    outcomes = [{n: o["outcome"] for n, o in g.details.get("tests", {}).items()} for g in gold]
    flaky = sorted({n for n in outcomes[0] for o in outcomes[1:] if o.get(n) != outcomes[0].get(n)})
    resolved = [bool(g.details.get("resolved")) and g.failure_kind is None for g in gold]
    if flaky:
        refused.append("flaky")
    if not all(resolved):
        refused.append("gold_does_not_resolve")
    noop_tests = noop.details.get("tests", {})
    noop_resolves = any(noop_tests.get(n, {}).get("outcome") == "passed" for n in task.fail_to_pass)
    if noop_resolves:
        refused.append("noop_resolves")
    if any(noop_tests.get(n, {}).get("outcome") != "passed" for n in task.pass_to_pass):
        refused.append("pass_to_pass_fails_without_gold")
    if noop.failure_kind not in (None, "collection_error"):
        refused.append(f"noop_run_{noop.failure_kind}")
    return {
        "id": row["id"],
        "package": row.get("meta", {}).get("package", "?"),
        "gold_resolved": all(resolved),
        "noop_resolves_any": noop_resolves,
        "valid": not refused,
        "refused": refused,
        "flaky": flaky,
        "gold_failures": [
            g.failure_kind or g.message for g, ok in zip(gold, resolved, strict=True) if not ok
        ],
        "seconds": [g.details.get("run", {}).get("wall_s") for g in gold],
    }


def validate_tasks(
    rows: Iterable[dict[str, Any]],
    grading: RepositoryGrading,
    *,
    settings: RepositorySettings | None = None,
    repeats: int = 3,
    workers: int = 2,
    log: Callable[[dict[str, Any]], None] = lambda _: None,
) -> ValidationReport:
    """Validate every task through the grader's path; see the module's docstring."""
    settings = settings or RepositorySettings(check_task=False)
    report = ValidationReport()
    lock = threading.Lock()
    with concurrent.futures.ThreadPoolExecutor(max_workers=workers) as pool:
        futures = [pool.submit(_validate_one, row, grading, settings, repeats) for row in rows]
        for future in concurrent.futures.as_completed(futures):
            result = future.result()
            with lock:
                report.rows.append(result)
            log(result)
    report.rows.sort(key=lambda r: r["id"])
    return report


def read_rows(path: Path) -> list[dict[str, Any]]:
    """Read a tasks JSONL file."""
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def write_rows(path: Path, rows: list[dict[str, Any]]) -> None:
    """Write tasks as JSONL."""
    with open(path, "w", encoding="utf-8") as f:
        for row in rows:
            f.write(json.dumps(row) + "\n")
