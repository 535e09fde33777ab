"""make-repo on a real sdist, and validate through the grader's own path."""

from __future__ import annotations

import pytest

from arbiter.graders.repository.grading import RepositoryGrading
from arbiter.graders.repository.snapshots import SnapshotStore
from arbiter.graders.repository.tasks import make_tasks, validate_tasks
from arbiter.graders.types import RepositoryTask

from .conftest import TOOLZ

pytestmark = pytest.mark.slow


def test_make_repo_tasks_validate_and_keep_their_tests_hidden(
    store: SnapshotStore, grading: RepositoryGrading
) -> None:
    rows, report = make_tasks(TOOLZ, store=store, seed=0, max_tasks=2)
    assert len(rows) == 2 and report.kept == 2 and report.tried >= 2
    assert report.tests_passing > 150  # toolz's own suite ran
    for row in rows:
        task = RepositoryTask.model_validate(row["task"])
        tree = store.get(task.repository).tree
        assert task.tests and all(not (tree / path).exists() for path in task.tests)
        assert all(n.split("::")[0] in task.tests for n in task.fail_to_pass)
        # The statement names the failing tests, never their code.
        assert "def test" not in row["prompt"] and "assert" not in row["prompt"]
        assert row["gold_patch"].startswith("diff --git ")
    validated = validate_tasks(rows, grading, repeats=2)
    summary = validated.summary()["total"]
    why = [(r["id"], r["refused"], r["flaky"], r["gold_failures"]) for r in validated.rows]
    assert summary["tasks"] == 2 and summary["valid"] == 2, why
    assert summary["gold_resolved"] == 2 and summary["noop_resolves_any"] == 0
