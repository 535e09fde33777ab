"""Grade one repository task: the patch in a fresh workspace, the hidden tests, the verdict.

:class:`RepositoryGrading` is what the ``unit_tests`` grader holds for
repository tasks. It returns an :class:`Outcome` (a score or a typed failure,
with details and violations) and raises
:class:`~arbiter.graders.sandbox.errors.SandboxError` for faults of ours, which
the grader retries and then reports as ``sandbox_error``. Blame:

- the candidate's, scored 0 (``details.failure_kind``): an empty patch, one
  refused (``patch_refused``: a path out of the tree, a size limit) or that
  does not apply (``patch_does_not_apply``), a collection error or a timeout
  with the patch, a forged verdict;
- the task's (``invalid_task``, the task named): a snapshot that cannot be
  read, a fail-to-pass test that already passes without any patch, or a
  pass-to-pass test that fails without one (checked once per task, cached);
- ours: an environment that will not build, a workspace that fails.

Our own work (resolving the snapshot, building its environment, the task's
baseline run) is credited to the grading job's deadline
(:func:`~arbiter.graders.credit.ours`): a reward measures the candidate's run,
which its own deadlines bound (CPU time, and wall clock less the wait for a
CPU), so the job's deadline moves with it too.
"""

from __future__ import annotations

import configparser
import hashlib
import json
import secrets
import threading
import tomllib
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from arbiter.graders.credit import ours
from arbiter.graders.repository import patch as patching
from arbiter.graders.repository.environments import EnvironmentBuildError, Environments
from arbiter.graders.repository.snapshots import Snapshot, SnapshotError, SnapshotStore
from arbiter.graders.repository.tripwires import Tripwire, plant
from arbiter.graders.repository.verdict import Verdict, decide, read_results
from arbiter.graders.repository.workspace import Job, WorkspaceHost, WorkspaceLimits
from arbiter.graders.sandbox.errors import SandboxError
from arbiter.graders.types import RepositoryTask, Violation, ViolationType

__all__ = ["Outcome", "RepositoryGrading", "RepositorySettings"]

#: Arguments every run passes to pytest (plugin autoload is off in its environment).
PYTEST_ARGS = (
    "-q",
    "-p",
    "no:cacheprovider",
    "-p",
    "no:unraisableexception",
    "-p",
    "no:threadexception",
    "--continue-on-collection-errors",
)
#: Task baselines kept (a GRPO group grades one task many times).
_BASELINES = 4096


@dataclass(frozen=True)
class RepositorySettings:
    """The grader's settings for repository tasks."""

    timeout_s: float = 60.0
    wall_factor: float = 2.0
    memory_mb: int = 4096
    max_processes: int = 64
    isolation: str = "test"
    partial_credit: bool = True
    max_patch_bytes: int = 1 << 20
    #: Run the task without any patch once, to refuse tasks that cannot discriminate.
    check_task: bool = True

    def limits(self, task: RepositoryTask) -> WorkspaceLimits:
        """The workspace limits of one run of ``task``."""
        cpu = task.timeout_s or self.timeout_s
        return WorkspaceLimits(
            cpu_s=cpu,
            wall_s=cpu * self.wall_factor,
            backstop_s=max(60.0, cpu * self.wall_factor * 8),
            memory_mb=self.memory_mb,
            max_processes=self.max_processes,
        )


@dataclass(frozen=True)
class Outcome:
    """A repository grading's result, for the grader to wrap."""

    score: float | None
    failure_kind: str | None = None
    message: str = ""
    details: dict[str, Any] = field(default_factory=dict)
    violations: tuple[Violation, ...] = ()
    #: True when ``failure_kind`` is the task's (the grading abstains), not the candidate's.
    task_fault: bool = False


def test_files(task: RepositoryTask) -> set[str]:
    """The files the task's tests live in (the part of each node id before ``::``)."""
    return {n.split("::", 1)[0] for n in [*task.fail_to_pass, *task.pass_to_pass]}


def _pytest_section(path: str, text: str) -> object:
    """The pytest part of a configuration file, as data (None: it has none or is unreadable)."""
    name = path.rsplit("/", 1)[-1]
    try:
        if name == "pyproject.toml":
            return tomllib.loads(text).get("tool", {}).get("pytest")
        parser = configparser.RawConfigParser(strict=False)
        parser.read_string(text)
        section = {"setup.cfg": "tool:pytest", "tox.ini": "pytest"}.get(name, "pytest")
        return dict(parser.items(section)) if parser.has_section(section) else None
    except (ValueError, configparser.Error, tomllib.TOMLDecodeError):
        return "unreadable"


class RepositoryGrading:
    """Grades repository tasks; one per grader, sharing the store, environments and host."""

    def __init__(
        self,
        store: SnapshotStore | None = None,
        host: WorkspaceHost | None = None,
        environments: Environments | None = None,
    ) -> None:
        self.store = store or SnapshotStore()
        self.host = host or WorkspaceHost()
        self.environments = environments or Environments(self.store.root)
        self._lock = threading.Lock()
        self._baselines: OrderedDict[str, str | None] = OrderedDict()
        self._baseline_locks: dict[str, threading.Lock] = {}

    def close(self) -> None:
        """Stop the workspace host."""
        self.host.close()

    # --- one grading -----------------------------------------------------------

    def grade(self, response: str, task: RepositoryTask, settings: RepositorySettings) -> Outcome:
        """Grade ``response`` (a diff) against ``task``; raise SandboxError for faults of ours."""
        malformed = _malformed(task)
        if malformed is not None:
            return Outcome(None, "invalid_task", malformed, task_fault=True)
        with ours():
            try:
                snapshot = self.store.get(task.repository)
            except SnapshotError as e:
                return Outcome(None, "invalid_task", f"task repository: {e}", task_fault=True)
            try:
                prepared = self.environments.prepare(snapshot, task.requirements, task.setup)
            except EnvironmentBuildError as e:
                raise SandboxError(f"the environment did not build: {e}") from e
            if settings.check_task:
                refusal = self._baseline(
                    snapshot, prepared.tree, prepared.env_paths, task, settings
                )
                if refusal is not None:
                    return Outcome(None, "invalid_task", refusal, task_fault=True)
        diff = patching.extract_diff(response)
        if not diff.strip():
            return Outcome(0.0, "empty_patch", "the response holds no patch")
        limits = patching.PatchLimits(max_patch_bytes=settings.max_patch_bytes)
        try:
            files = patching.parse_patch(diff, limits)
        except patching.PatchError as e:
            return _patch_failure(e)
        if not files:
            return Outcome(0.0, "empty_patch", "the patch changes nothing")
        return self._run(files, snapshot, prepared.tree, prepared.env_paths, task, settings)

    def run_diff(self, diff: str, task: RepositoryTask, settings: RepositorySettings) -> Outcome:
        """Run ``task`` with ``diff`` applied (an empty one: none), without the task's check.

        For ``tasks validate``: the gold patch and no patch at all go through
        the same workspace, reporter and verdict as a candidate's.
        """
        snapshot = self.store.get(task.repository)
        prepared = self.environments.prepare(snapshot, task.requirements, task.setup)
        try:
            files = patching.parse_patch(diff) if diff.strip() else []
        except patching.PatchError as e:
            return _patch_failure(e)
        return self._run(files, snapshot, prepared.tree, prepared.env_paths, task, settings)

    def _run(
        self,
        files: list[patching.FilePatch],
        snapshot: Snapshot,
        tree: Path,
        env_paths: tuple[str, ...],
        task: RepositoryTask,
        settings: RepositorySettings,
    ) -> Outcome:
        protected, restore = self._protected(files, tree, task)
        tests, wires = self._tests_with_tripwires(tree, task)
        args = _node_args([*task.fail_to_pass, *task.pass_to_pass], wires)
        job = Job(
            snapshot=str(tree),
            python_paths=snapshot.python_paths,
            env_paths=env_paths,
            patch=[f.to_json() for f in files],
            restore=restore,
            tests=tests,
            args=[*PYTEST_ARGS, *args],
            isolation=settings.isolation,
            limits=settings.limits(task),
        )
        # The run is bounded by its own deadlines (its CPU time and its wall clock
        # less its wait for a CPU: the candidate's), so the job's timeout moves with
        # it, as it does with a sandbox run's credited wait: a slow host can never
        # turn a candidate's run into our infra_timeout.
        with ours():
            report = self.host.run(job)
        details: dict[str, Any] = {
            "patch": {
                "files": [
                    {
                        "path": f.path,
                        "kind": f.kind,
                        "added": f.counts()[0],
                        "removed": f.counts()[1],
                    }
                    for f in files
                ],
            },
            "protected_touched": protected,
            "workspace": {
                "create_s": report.get("create_s"),
                "apply_s": report.get("apply_s"),
                "destroy_s": report.get("destroy_s"),
                "tmpfs_used_kb": report.get("tmpfs_used_kb"),
                "supervisor_rss_kb": report.get("supervisor_rss_kb"),
            },
        }
        violations = [
            Violation(
                type=ViolationType.TEST_TAMPERING,
                detail=f"the patch changes {path} ({why}); the run used the snapshot's own",
                source="sandbox",
            )
            for path, why in protected.items()
        ]
        applied = report.get("apply") or {}
        if not applied.get("ok"):
            if applied.get("kind") in ("refused", "does_not_apply"):
                error = patching.PatchError(
                    str(applied["kind"]), str(applied.get("message", "")), applied.get("path")
                )
                failed = _patch_failure(error)
                return Outcome(
                    0.0,
                    failed.failure_kind,
                    failed.message,
                    {**details, **failed.details},
                    (*violations, *failed.violations),
                )
            raise SandboxError(f"the patch could not be applied by us: {applied.get('message')}")
        run = report["run"]
        if run.get("ended_by") == "starved":
            raise SandboxError("the host kept the run off the CPU past its backstop")
        verdict = decide(
            read_results(run.get("results", "")),
            run,
            list(task.fail_to_pass),
            list(task.pass_to_pass),
            wires,
            partial_credit=settings.partial_credit,
        )
        details.update(_run_details(verdict, run, wires))
        if verdict.forgery:
            violations.append(
                Violation(
                    type=ViolationType.VERDICT_FORGERY,
                    detail="; ".join(verdict.forgery),
                    source="sandbox",
                )
            )
        return Outcome(
            verdict.score, verdict.failure_kind, verdict.message, details, tuple(violations)
        )

    def _protected(
        self, files: list[patching.FilePatch], tree: Path, task: RepositoryTask
    ) -> tuple[dict[str, str], list[str]]:
        """The protected files the patch touches (path → why), and those to put back for the run."""
        hidden = set(task.tests)
        own_tests = test_files(task) - hidden
        touched: dict[str, str] = {}
        restore: list[str] = []
        by_path = {f.path: f for f in files}
        for path in patching.touched_paths(files):
            if path in hidden:
                continue  # the hidden tests are written over it anyway
            why = patching.protected_reason(path) or (
                "a test file of the task" if path in own_tests else None
            )
            if why is None:
                continue
            restore.append(path)
            name = path.rsplit("/", 1)[-1]
            if name in ("setup.cfg", "pyproject.toml", "tox.ini") and not self._changes_pytest(
                by_path.get(path), tree / path, path
            ):
                continue  # its build or tool sections changed, not pytest's
            touched[path] = why
        return touched, restore

    @staticmethod
    def _changes_pytest(f: patching.FilePatch | None, original: Path, path: str) -> bool:
        if f is None or f.kind != "modify":
            return True
        try:
            before = original.read_text(encoding="utf-8")
            after = patching.apply_hunks(before, f.hunks, path)
        except (OSError, UnicodeDecodeError, patching.PatchError):
            return True
        return _pytest_section(path, before) != _pytest_section(path, after)

    @staticmethod
    def _tests_with_tripwires(
        tree: Path, task: RepositoryTask
    ) -> tuple[dict[str, str], list[Tripwire]]:
        """The hidden files with tripwires planted in each that holds the task's tests."""
        tests = dict(task.tests)
        files = list(dict.fromkeys(n.split("::", 1)[0] for n in task.fail_to_pass))
        files += [f for f in test_files(task) if f in tests and f not in files]
        if not any(f in tests for f in files):
            # The tests live in the snapshot: plant into a copy of the first one's file.
            first = files[0]
            try:
                tests[first] = (tree / first).read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError):
                return tests, []
        wires: list[Tripwire] = []
        for path in files:
            if path not in tests or not path.endswith(".py"):
                continue
            tests[path], planted = plant(path, tests[path])
            wires += planted
        return tests, wires

    # --- the task's own check ------------------------------------------------------

    def _baseline(
        self,
        snapshot: Snapshot,
        tree: Path,
        env_paths: tuple[str, ...],
        task: RepositoryTask,
        settings: RepositorySettings,
    ) -> str | None:
        """Run the task without a patch once; return why it is refused, or None."""
        key = hashlib.sha256(
            json.dumps(
                [
                    snapshot.id,
                    str(tree),
                    task.tests,
                    task.fail_to_pass,
                    task.pass_to_pass,
                    task.requirements,
                    task.setup,
                ],
                sort_keys=True,
            ).encode()
        ).hexdigest()
        with self._lock:
            if key in self._baselines:
                return self._baselines[key]
            lock = self._baseline_locks.setdefault(key, threading.Lock())
        with lock:
            with self._lock:
                if key in self._baselines:
                    return self._baselines[key]
            outcome = self._run([], snapshot, tree, env_paths, task, settings)
            refusal = _refusal(outcome, task)
            with self._lock:
                self._baselines[key] = refusal
                while len(self._baselines) > _BASELINES:
                    self._baselines.popitem(last=False)
                self._baseline_locks.pop(key, None)
        return refusal


def _malformed(task: RepositoryTask) -> str | None:
    """Why the task's own paths and node ids cannot be used, or None.

    A hidden test's path must stay in the tree, and a node id is never an
    option (``--rootdir=/`` passed as a test would configure the run).
    """
    for path in [*task.tests, *test_files(task)]:
        try:
            patching.check_path(path)
        except patching.PatchError as e:
            return f"task repository {task.repository}: {e}"
    for nodeid in [*task.fail_to_pass, *task.pass_to_pass]:
        if nodeid.startswith("-") or "\x00" in nodeid:
            return f"task repository {task.repository}: {nodeid!r} is not a pytest node id"
    return None


def _refusal(outcome: Outcome, task: RepositoryTask) -> str | None:
    """Why a task is refused, from its run without a patch (None: it discriminates)."""
    if outcome.failure_kind not in (None, "collection_error"):
        return (
            f"task repository {task.repository}: without a patch the run failed "
            f"({outcome.failure_kind}: {outcome.message})"
        )
    outcomes = outcome.details.get("tests", {})
    passing = [n for n in task.fail_to_pass if outcomes.get(n, {}).get("outcome") == "passed"]
    if passing:
        return (
            f"task repository {task.repository}: {len(passing)} fail-to-pass test(s) already "
            f"pass without any patch ({passing[0]})"
        )
    broken = [n for n in task.pass_to_pass if outcomes.get(n, {}).get("outcome") != "passed"]
    if broken:
        return (
            f"task repository {task.repository}: {len(broken)} pass-to-pass test(s) fail "
            f"without any patch ({broken[0]})"
        )
    return None


def _node_args(nodeids: list[str], wires: list[Tripwire]) -> list[str]:
    """The node ids to run, deduplicated, with the tripwires at random places among them."""
    args = list(dict.fromkeys(nodeids))
    rng = secrets.SystemRandom()
    for wire in wires:
        args.insert(rng.randrange(len(args) + 1), wire.nodeid)
    return args


def _patch_failure(e: patching.PatchError) -> Outcome:
    if e.kind == "refused":
        violations: tuple[Violation, ...] = ()
        if "leaves" in str(e) or "outside" in str(e) or "link" in str(e) or ".git" in str(e):
            violations = (
                Violation(type=ViolationType.FORBIDDEN_OPERATION, detail=str(e), source="static"),
            )
        return Outcome(0.0, "patch_refused", str(e), {"patch_path": e.path}, violations)
    return Outcome(0.0, "patch_does_not_apply", str(e), {"patch_path": e.path})


def _run_details(verdict: Verdict, run: dict[str, Any], wires: list[Tripwire]) -> dict[str, Any]:
    return {
        "tests": verdict.outcomes,
        "resolved": verdict.resolved,
        "tripwires": len(wires),
        "run": {
            "exit_code": run.get("exit_code"),
            "signal": run.get("signal"),
            "ended_by": run.get("ended_by"),
            "wall_s": run.get("wall_s"),
            "cpu_s": run.get("cpu_s"),
            "wait_s": run.get("wait_s"),
            "maxrss_kb": run.get("maxrss_kb"),
            "tests_s": verdict.tests_s,
        },
    }
