"""Repository tasks: a patch to a real repository, graded by its hidden tests.

A snapshot (:mod:`.snapshots`) is a read-only, content-addressed tree; each
grading lays a copy-on-write workspace over it (:mod:`.workspace`, the
confined host in ``_host``), applies the candidate's patch strictly
(:mod:`.patch`), writes the hidden tests with tripwires among them
(:mod:`.tripwires`), runs pytest with a reporter loaded from outside the
workspace (``_reporter``), and decides on the trusted side (:mod:`.verdict`).
:mod:`.grading` ties them together for the ``unit_tests`` grader;
:mod:`.mutations` and :mod:`.tasks` make and validate tasks from real
repositories.

Public names load on first use: importing the package starts nothing.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from arbiter.graders.repository.grading import Outcome, RepositoryGrading, RepositorySettings
    from arbiter.graders.repository.patch import PatchError, parse_patch
    from arbiter.graders.repository.snapshots import Snapshot, SnapshotError, SnapshotStore
    from arbiter.graders.repository.workspace import WorkspaceHost, WorkspaceLimits

_HOMES = {
    **dict.fromkeys(
        ("Outcome", "RepositoryGrading", "RepositorySettings"),
        "arbiter.graders.repository.grading",
    ),
    **dict.fromkeys(("PatchError", "parse_patch"), "arbiter.graders.repository.patch"),
    **dict.fromkeys(
        ("Snapshot", "SnapshotError", "SnapshotStore"), "arbiter.graders.repository.snapshots"
    ),
    **dict.fromkeys(("WorkspaceHost", "WorkspaceLimits"), "arbiter.graders.repository.workspace"),
}

__all__ = [
    "Outcome",
    "PatchError",
    "RepositoryGrading",
    "RepositorySettings",
    "Snapshot",
    "SnapshotError",
    "SnapshotStore",
    "WorkspaceHost",
    "WorkspaceLimits",
    "parse_patch",
]


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
