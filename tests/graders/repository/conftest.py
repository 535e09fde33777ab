"""Shared fixtures: snapshots built once per session from the sdists kept in the repository."""

from __future__ import annotations

import shutil
import tarfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from arbiter.graders.repository.grading import RepositoryGrading
from arbiter.graders.repository.mutations import unified_diff
from arbiter.graders.repository.snapshots import Snapshot, SnapshotStore
from arbiter.graders.repository.workspace import WorkspaceHost
from arbiter.graders.types import RepositoryTask

REPO = Path(__file__).resolve().parents[3]
SDISTS = REPO / "eval_sets" / "repositories"
TOOLZ = SDISTS / "toolz-1.2.0.tar.gz"
HIDDEN = "toolz/tests/test_itertoolz.py"
VISIBLE = "toolz/tests/test_functoolz.py"
BUGGY = "toolz/itertoolz.py"
#: The bug: interpose keeps the separator it should drop before the first element.
GOOD_LINE = "        next(inposed)\n"
BAD_LINE = "        pass\n"
FAIL_TO_PASS = [f"{HIDDEN}::test_interpose"]
PASS_TO_PASS = [f"{HIDDEN}::test_remove", f"{HIDDEN}::test_groupby", f"{VISIBLE}::test_apply"]


def extract(sdist: Path, dest: Path) -> Path:
    """Unpack an sdist; return its top folder."""
    with tarfile.open(sdist) as tar:
        tar.extractall(dest, filter="data")
    (top,) = [p for p in dest.iterdir() if p.is_dir()]
    return top


@dataclass(frozen=True)
class BugTask:
    """A real bug in toolz's interpose, its snapshot, its hidden tests and its gold patch."""

    snapshot: Snapshot
    original: Path  # the unpacked sdist, tests and all, without the bug
    task: RepositoryTask
    gold: str
    buggy_text: str
    original_text: str


def _bug_task(store: SnapshotStore, root: Path, *, hidden: bool) -> BugTask:
    original = extract(TOOLZ, root / "original")
    tree = root / "tree"
    shutil.copytree(original, tree)
    text = (original / BUGGY).read_text()
    assert text.count(GOOD_LINE) == 1
    buggy = text.replace(GOOD_LINE, BAD_LINE)
    (tree / BUGGY).write_text(buggy)
    tests: dict[str, str] = {}
    if hidden:
        tests[HIDDEN] = (tree / HIDDEN).read_text()
        (tree / HIDDEN).unlink()
    snapshot = store.add(tree)
    task = RepositoryTask(
        kind="repository",
        repository=snapshot.id,
        tests=tests,
        fail_to_pass=FAIL_TO_PASS,
        pass_to_pass=PASS_TO_PASS,
    )
    return BugTask(snapshot, original, task, unified_diff(BUGGY, buggy, text), buggy, text)


@pytest.fixture(scope="session")
def store(tmp_path_factory: pytest.TempPathFactory) -> SnapshotStore:
    return SnapshotStore(tmp_path_factory.mktemp("snapshots"))


@pytest.fixture(scope="session")
def bug(store: SnapshotStore, tmp_path_factory: pytest.TempPathFactory) -> BugTask:
    """The bug with its test file hidden (the task's ``tests``)."""
    return _bug_task(store, tmp_path_factory.mktemp("bug"), hidden=True)


@pytest.fixture(scope="session")
def bug_in_tree(store: SnapshotStore, tmp_path_factory: pytest.TempPathFactory) -> BugTask:
    """The same bug with its tests left in the snapshot (no hidden files)."""
    return _bug_task(store, tmp_path_factory.mktemp("bug-in-tree"), hidden=False)


@pytest.fixture(scope="session")
def grading(store: SnapshotStore) -> Iterator[RepositoryGrading]:
    g = RepositoryGrading(store=store, host=WorkspaceHost(slots=2))
    yield g
    g.close()
