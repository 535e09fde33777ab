"""The Python a patch adds or changes, for the graders that read code (bandit, radon, violations).

A repository task's response is a diff, not a program. What those graders
read of it: for each Python file the patch creates, the whole new file; for
each it modifies, every top-level statement (a function, a class, an import,
an assignment) of the file after the patch that holds an added or changed
line, taken whole so that it parses. Test files (``test_*.py``,
``*_test.py``, ``conftest.py``) are left out: the detectors look for
framework patching in the code under test. The file after the patch is
rebuilt from the snapshot on this host; a patch that does not apply there
(the tests grader scores that 0) has no code to read.
"""

from __future__ import annotations

import difflib
import threading
from pathlib import Path

from arbiter.graders.program import prompt_text
from arbiter.graders.repository.patch import (
    FilePatch,
    PatchError,
    apply_hunks,
    extract_diff,
    parse_patch,
)
from arbiter.graders.repository.snapshots import SnapshotError, SnapshotStore, default_store_root
from arbiter.graders.sandbox.syntax import parse_module
from arbiter.graders.types import RepositoryTask, Sample

__all__ = ["changed_python", "code_to_read", "is_test_file"]

_stores: dict[Path, SnapshotStore] = {}
_lock = threading.Lock()


def _store() -> SnapshotStore:
    root = default_store_root()
    with _lock:
        if root not in _stores:
            _stores[root] = SnapshotStore(root)
        return _stores[root]


def is_test_file(path: str) -> bool:
    """Whether ``path`` is a test module or a pytest configuration module."""
    name = path.rsplit("/", 1)[-1]
    return name == "conftest.py" or name.startswith("test_") or name.endswith("_test.py")


def _changed_units(before: str, after: str) -> str:
    """The top-level statements of ``after`` that hold a line ``before`` does not."""
    tree = parse_module(after)
    new_lines = after.splitlines(keepends=True)
    changed: set[int] = set()
    matcher = difflib.SequenceMatcher(None, before.splitlines(), after.splitlines(), autojunk=False)
    for tag, _i1, _i2, j1, j2 in matcher.get_opcodes():
        if tag in ("replace", "insert"):
            changed.update(range(j1 + 1, j2 + 1))
    units = []
    for node in tree.body:
        start = min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", []))])
        end = node.end_lineno or node.lineno
        if any(start <= line <= end for line in changed):
            units.append("".join(new_lines[start - 1 : end]))
    return "\n".join(u if u.endswith("\n") else u + "\n" for u in units)


def _file_code(f: FilePatch, tree: Path | None) -> str | None:
    if f.kind == "delete" or f.is_symlink or not f.path.endswith(".py") or is_test_file(f.path):
        return None
    if f.kind == "create":
        return apply_hunks("", f.hunks, f.path)
    if tree is None or f.old_path is None:
        return None
    before = (tree / f.old_path).read_text(encoding="utf-8")
    after = apply_hunks(before, f.hunks, f.old_path)
    return _changed_units(before, after)


def changed_python(
    response: str, task: RepositoryTask, store: SnapshotStore | None = None
) -> str | None:
    """The Python the patch in ``response`` adds or changes, as one text; None when it has none."""
    try:
        files = parse_patch(extract_diff(response))
    except PatchError:
        return None
    tree: Path | None
    try:
        tree = (store or _store()).get(task.repository).tree
    except (SnapshotError, OSError):
        tree = None
    parts = []
    for f in files:
        try:
            code = _file_code(f, tree)
        except (PatchError, OSError, UnicodeDecodeError, SyntaxError, ValueError):
            return None
        if code:
            parts.append(f"# {f.path}\n{code}")
    return "\n\n".join(parts) if parts else None


def code_to_read(sample: Sample) -> tuple[str, str]:
    """The response and prompt a code-reading grader reads: a repository task's changed Python."""
    if isinstance(sample.task, RepositoryTask):
        code = changed_python(sample.response, sample.task)
        return (f"```python\n{code}```" if code else ""), ""
    return sample.response, prompt_text(sample)
