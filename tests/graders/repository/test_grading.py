"""Blame on repository tasks: the candidate's zeros, the task's refusals, our retries."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from arbiter.graders.bandit import BanditConfig, BanditGrader
from arbiter.graders.radon import RadonConfig, RadonGrader
from arbiter.graders.repository.environments import Environments
from arbiter.graders.repository.grading import RepositoryGrading, RepositorySettings
from arbiter.graders.repository.snapshots import SnapshotStore
from arbiter.graders.types import FailureKind, RepositoryTask, Sample, ViolationType
from arbiter.graders.unit_tests import UnitTestsConfig, UnitTestsGrader
from arbiter.graders.violations import ViolationsConfig, ViolationsGrader

from .conftest import FAIL_TO_PASS, HIDDEN, BugTask
from .naive_harness import make_patch

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def grader(grading: RepositoryGrading) -> UnitTestsGrader:
    g = UnitTestsGrader()
    g._repositories = grading
    return g


def _grade(grader: UnitTestsGrader, task: RepositoryTask, response: str, **config: object):
    return grader.grade_sync(
        Sample(id="s", response=response, task=task), UnitTestsConfig(**config)
    )


def test_the_gold_patch_resolves_and_says_what_it_did(
    bug: BugTask, grader: UnitTestsGrader
) -> None:
    result = _grade(grader, bug.task, bug.gold)
    assert result.score == 1.0 and result.failure is None
    assert result.details["resolved"] is True
    assert result.details["patch"]["files"] == [
        {"path": "toolz/itertoolz.py", "kind": "modify", "added": 1, "removed": 1}
    ]
    assert {o["outcome"] for o in result.details["tests"].values()} == {"passed"}
    assert result.details["tripwires"] >= 3 and result.details["protected_touched"] == {}


@pytest.mark.parametrize(
    ("response", "kind"),
    [
        ("", "empty_patch"),
        ("I could not find the bug.", "empty_patch"),
        (
            "diff --git a/toolz/itertoolz.py b/toolz/itertoolz.py\n--- a/toolz/itertoolz.py\n"
            "+++ b/toolz/itertoolz.py\n@@ -1,1 +1,1 @@\n-not in the file\n+x\n",
            "patch_does_not_apply",
        ),
        (
            "diff --git a/toolz/nothere.py b/toolz/nothere.py\n--- a/toolz/nothere.py\n"
            "+++ b/toolz/nothere.py\n@@ -1,1 +1,1 @@\n-a\n+b\n",
            "patch_does_not_apply",
        ),
        (make_patch(None, {"../escape.py": "x = 1\n"}), "patch_refused"),
    ],
)
def test_a_patch_that_cannot_be_used_is_the_candidates_zero(
    bug: BugTask, grader: UnitTestsGrader, response: str, kind: str
) -> None:
    result = _grade(grader, bug.task, response)
    assert result.score == 0.0 and result.failure is None
    assert result.details["failure_kind"] == kind


def test_without_fail_as_zero_it_is_typed_never_an_infrastructure_failure(
    bug: BugTask, grader: UnitTestsGrader
) -> None:
    bad = make_patch(None, {"toolz/itertoolz.py": "clobbered\n"})  # created over an existing file
    result = _grade(grader, bug.task, bad, fail_as_zero=False)
    assert result.score is None and result.failure is not None
    assert result.failure.kind is FailureKind.PATCH_DOES_NOT_APPLY and not result.failure.retryable


def test_a_task_whose_fail_to_pass_test_already_passes_is_refused(
    bug: BugTask, grader: UnitTestsGrader
) -> None:
    task = bug.task.model_copy(update={"fail_to_pass": [f"{HIDDEN}::test_remove"]})
    result = _grade(grader, task, bug.gold)
    assert result.score is None and result.failure is not None
    assert result.failure.kind is FailureKind.INVALID_TASK
    assert (
        "already pass" in result.failure.message and bug.task.repository in result.failure.message
    )


def test_a_task_whose_pass_to_pass_test_fails_without_a_patch_is_refused(
    bug: BugTask, grader: UnitTestsGrader
) -> None:
    # The broken test listed as one that must keep passing: without a patch it fails.
    task = bug.task.model_copy(update={"pass_to_pass": FAIL_TO_PASS})
    result = _grade(grader, task, bug.gold)
    assert result.failure is not None and result.failure.kind is FailureKind.INVALID_TASK
    assert "fail without any patch" in result.failure.message


def test_an_unknown_snapshot_is_the_tasks(grader: UnitTestsGrader) -> None:
    task = RepositoryTask(
        kind="repository", repository="sha256:" + "1" * 64, fail_to_pass=["t.py::t"]
    )
    result = _grade(grader, task, "diff")
    assert result.failure is not None and result.failure.kind is FailureKind.INVALID_TASK


def test_an_environment_that_will_not_build_is_ours_retried_then_abstained(
    bug: BugTask, store: SnapshotStore, grading: RepositoryGrading, tmp_path: Path
) -> None:
    offline = RepositoryGrading(
        store=store,
        host=grading.host,
        environments=Environments(tmp_path / "envs", index_args=("--no-index",)),
    )
    g = UnitTestsGrader()
    g._repositories = offline
    task = bug.task.model_copy(update={"requirements": ["arbiter-no-such-package==0.0"]})
    result = _grade(g, task, bug.gold)
    assert result.score is None and result.failure is not None
    assert result.failure.kind is FailureKind.SANDBOX_ERROR and result.failure.retryable
    assert "did not build" in result.failure.message


def test_feedback_never_carries_the_hidden_tests(bug: BugTask, grader: UnitTestsGrader) -> None:
    result = _grade(grader, bug.task, make_patch(bug.snapshot.tree, {"toolz/extra.py": "x = 1\n"}))
    text = repr(result.details) + (result.failure.message if result.failure else "")
    assert result.score == 0.0
    assert "tarzan" not in text and "interpose(" not in text  # the test's code and values
    assert result.details["tests"][FAIL_TO_PASS[0]] == {
        "outcome": "failed",
        "error": "AssertionError",
        "duration_s": result.details["tests"][FAIL_TO_PASS[0]]["duration_s"],
    }


RUNTEST_NOOP = "import _pytest.python\n_pytest.python.Function.runtest = lambda self: None\n"


def test_the_code_graders_read_the_python_the_patch_changes(
    bug: BugTask, store: SnapshotStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ARBITER_REPOSITORY_STORE", str(store.root))
    init = (bug.snapshot.tree / "toolz" / "__init__.py").read_text()
    patch = make_patch(
        bug.snapshot.tree,
        {"toolz/__init__.py": init + "\n" + RUNTEST_NOOP, "toolz/helper.py": "import pickle\n"},
    )
    sample = Sample(id="s", response=patch, task=bug.task)
    found = asyncio.run(ViolationsGrader().grade(sample, ViolationsConfig()))
    assert ViolationType.FRAMEWORK_PATCHING in {v.type for v in found.violations}
    bandit = asyncio.run(BanditGrader().grade(sample, BanditConfig()))
    assert bandit.score is not None and bandit.details.get("findings"), bandit.details
    radon = asyncio.run(RadonGrader().grade(sample, RadonConfig()))
    assert radon.score is not None and radon.failure is None
    gold = Sample(id="g", response=bug.gold, task=bug.task)
    clean = asyncio.run(ViolationsGrader().grade(gold, ViolationsConfig()))
    assert clean.score == 1.0 and clean.violations == ()


def test_a_setup_step_runs_once_per_snapshot_in_a_copy(bug: BugTask, tmp_path: Path) -> None:
    envs = Environments(tmp_path / "envs")
    setup = "echo built >> BUILT.txt"
    first = envs.prepare(bug.snapshot, [], setup)
    second = envs.prepare(bug.snapshot, [], setup)
    assert first == second and first.tree != bug.snapshot.tree
    assert (first.tree / "BUILT.txt").read_text() == "built\n"  # once, not twice
    assert (first.tree / "toolz" / "itertoolz.py").read_text() == bug.buggy_text
    assert not (bug.snapshot.tree / "BUILT.txt").exists()
    assert envs.prepare(bug.snapshot, [], None).tree == bug.snapshot.tree


@pytest.mark.parametrize(
    "update",
    [
        {"tests": {"../outside.py": "x = 1\n"}},
        {"fail_to_pass": ["--rootdir=/"]},
        {"pass_to_pass": ["/etc/passwd::test"]},
    ],
)
def test_a_task_whose_paths_or_ids_reach_out_is_refused(
    bug: BugTask, grader: UnitTestsGrader, update: dict[str, object]
) -> None:
    result = _grade(grader, bug.task.model_copy(update=update), bug.gold)
    assert result.failure is not None and result.failure.kind is FailureKind.INVALID_TASK


SUBTESTS = """import unittest

from pkg import double


class DoubleTests(unittest.TestCase):
    def test_values(self):
        for x in (0, 1, 2):
            with self.subTest(x=x):
                self.assertEqual(double(x), 2 * x)
"""


@pytest.mark.parametrize("isolation", ["test", "session"])
def test_a_failed_subtest_fails_its_test(
    store: SnapshotStore, grading: RepositoryGrading, tmp_path: Path, isolation: str
) -> None:
    """A failure in a unittest subTest arrives as a report of its own: its test has failed."""
    tree = tmp_path / "tree"
    (tree / "pkg").mkdir(parents=True)
    (tree / "pkg" / "__init__.py").write_text("def double(x):\n    return x * 3\n")
    snapshot = store.add(tree)
    task = RepositoryTask(
        kind="repository",
        repository=snapshot.id,
        tests={"tests/test_pkg.py": SUBTESTS},
        fail_to_pass=["tests/test_pkg.py::DoubleTests::test_values"],
    )
    settings = RepositorySettings(check_task=False, isolation=isolation)
    broken = grading.run_diff("", task, settings)
    assert broken.details["tests"][task.fail_to_pass[0]]["outcome"] == "failed"
    fix = make_patch(tree, {"pkg/__init__.py": "def double(x):\n    return x * 2\n"})
    assert grading.run_diff(fix, task, settings).score == 1.0
