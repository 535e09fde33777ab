"""Workspaces: fresh for every grading, never seen by another, confined, and cheap to reset."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest

from arbiter.graders.repository.grading import RepositoryGrading, RepositorySettings
from arbiter.graders.repository.workspace import WorkspaceHost

from .conftest import BugTask
from .naive_harness import make_patch

pytestmark = pytest.mark.slow

#: Run A leaves what it can: a file from its patch, one written at import in its
#: temporary folder, and one it tries to write into the tree.
PLANT = """
import os as _os
for _where in (_os.environ.get("TMPDIR", "/tmp"), "/tmp", "/dev/shm", "."):
    try:
        with open(_os.path.join(_where, "planted-by-a"), "w") as _f:
            _f.write("a")
    except OSError:
        pass
"""
#: Run B refuses to import (a collection error: its score is 0) if it sees any of
#: it, or if it is not confined as a grading must be.
CHECK = """
import os as _os
_seen = [p for p in ("toolz/planted_a.py", "planted-by-a", "/tmp/planted-by-a",
                     "/dev/shm/planted-by-a",
                     _os.path.join(_os.environ.get("TMPDIR", "/tmp"), "planted-by-a"), ".git")
         if _os.path.exists(p)]
if _seen:
    raise ImportError(f"run B sees {_seen}")
if _os.access(".", _os.W_OK) or _os.access("toolz/__init__.py", _os.W_OK):
    raise ImportError("the tree is writable during the run")
if _os.getuid() == 0 and EXPECT_UNPRIVILEGED:
    raise ImportError("the tests run as root")
try:
    open("/etc/shadow").read()
except OSError:
    pass
else:
    raise ImportError("/etc/shadow is readable")
"""


def _init(bug: BugTask) -> str:
    return (bug.snapshot.tree / "toolz" / "__init__.py").read_text()


def test_a_file_planted_by_one_grading_is_absent_in_the_next(
    bug: BugTask, grading: RepositoryGrading
) -> None:
    settings = RepositorySettings(check_task=False)
    plant = make_patch(
        bug.snapshot.tree,
        {"toolz/planted_a.py": "A = 1\n", "toolz/__init__.py": _init(bug) + PLANT},
    )
    first = grading.grade(plant, bug.task, settings)
    assert first.score == 0.0 and first.failure_kind is None  # A ran; the bug is still there
    check = CHECK.replace("EXPECT_UNPRIVILEGED", str(os.getuid() == 0))
    second = grading.grade(
        bug.gold + make_patch(bug.snapshot.tree, {"toolz/__init__.py": _init(bug) + check}),
        bug.task,
        settings,
    )
    assert second.score == 1.0, (second.failure_kind, second.details.get("tests"))
    assert not (bug.snapshot.tree / "toolz" / "planted_a.py").exists()


def test_a_control_shows_the_check_can_fail(bug: BugTask, grading: RepositoryGrading) -> None:
    """The same check, made to see something that is there, refuses to import: it is live."""
    check = CHECK.replace("EXPECT_UNPRIVILEGED", "False").replace('"toolz/planted_a.py"', '"toolz"')
    result = grading.grade(
        bug.gold + make_patch(bug.snapshot.tree, {"toolz/__init__.py": _init(bug) + check}),
        bug.task,
        RepositorySettings(check_task=False),
    )
    assert result.score == 0.0 and result.failure_kind == "collection_error"


def test_a_workspace_resets_without_copying_the_tree(
    bug: BugTask, grading: RepositoryGrading
) -> None:
    times = grading.host.resets(str(bug.snapshot.tree), 10)
    assert len(times) == 10 and all(t > 0 for t in times)
    assert not (bug.snapshot.tree / ".reset-probe").exists()


def test_a_host_started_by_a_thread_that_has_ended_still_serves(bug: BugTask) -> None:
    # PR_SET_PDEATHSIG fires when the thread that started a child exits: a host
    # started by a batch's worker thread died under the next batch's first job
    # ("a workspace ended without a report"). Hosts are started on a lasting thread.
    host = WorkspaceHost(slots=1)
    try:
        starter = threading.Thread(target=host.start)
        starter.start()
        starter.join()
        started = host._proc
        assert started is not None
        time.sleep(0.5)  # the signal is asynchronous
        assert started.poll() is None, "the host died with the thread that started it"
        assert host.resets(str(bug.snapshot.tree), 2) and host._proc is started
    finally:
        host.close()


def test_a_loop_in_the_patch_is_the_candidates_timeout(
    bug: BugTask, grading: RepositoryGrading
) -> None:
    looping = bug.buggy_text.replace("        pass\n", "        while True:\n            pass\n", 1)
    result = grading.grade(
        make_patch(bug.snapshot.tree, {"toolz/itertoolz.py": looping}),
        bug.task,
        RepositorySettings(check_task=False, timeout_s=4.0),
    )
    assert (result.score, result.failure_kind) == (0.0, "timeout")


def test_the_snapshot_behind_a_workspace_is_never_written(bug: BugTask) -> None:
    tree: Path = bug.snapshot.tree
    assert not (tree / "toolz" / "planted_a.py").exists()
    assert not (tree / "planted-by-a").exists()


def test_opening_a_network_socket_ends_the_run_and_scores_zero(
    bug: BugTask, grading: RepositoryGrading
) -> None:
    code = "\nimport socket\nsocket.create_connection(('127.0.0.1', 22), timeout=1)\n"
    result = grading.grade(
        bug.gold + make_patch(bug.snapshot.tree, {"toolz/__init__.py": _init(bug) + code}),
        bug.task,
        RepositorySettings(check_task=False),
    )
    assert result.score == 0.0
    assert result.details["run"]["signal"] == 31  # SIGSYS: seccomp refused the socket
