"""A naive SWE-bench-style harness: the control every attack must fool.

The tree is copied, the candidate's patch applied with ``git apply`` (and, as
SWE-bench's harness falls back to other appliers, a permissive one when git
refuses), the hidden tests written where the tree has no file (as harnesses
that keep the tests in the repository do), and pytest run in the tree with
the repository on ``PYTHONPATH`` and plugin autoload on, beside a writable
environment directory (a container's site-packages). Its stdout is parsed:
a test passes when ``-rA`` reports it ``PASSED`` or ``XFAIL`` (SWE-bench's
log parser) or when it is missing from the log (SWE-smith#24). The exit code
is not read (before SWE-bench#620).

Also here: :func:`make_patch`, which writes ``git diff`` text for a set of
changes (files changed, created, deleted, or made links).
"""

from __future__ import annotations

import difflib
import os
import re
import shutil
import stat
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from arbiter.graders.repository.patch import _parse_hunk, apply_hunks

__all__ = ["Link", "NaiveRun", "make_patch", "naive_run"]


@dataclass(frozen=True)
class Link:
    """A symbolic link to ``target`` (as the patch would make it)."""

    target: str


def _lines(text: str) -> list[str]:
    return text.splitlines(keepends=True)


def _body(prefix: str, text: str) -> str:
    out = ""
    for line in _lines(text):
        out += (
            prefix + line
            if line.endswith("\n")
            else prefix + line + "\n\\ No newline at end of file\n"
        )
    return out


def make_patch(base: Path | None, changes: dict[str, str | Link | None]) -> str:
    """The ``git diff`` text that turns ``base`` into ``base`` with ``changes``.

    A value is the file's new text, a :class:`Link`, or None to delete it.
    """
    out = ""
    for path, new in changes.items():
        old_path = (base / path) if base is not None else None
        exists = old_path is not None and (old_path.exists() or old_path.is_symlink())
        old = (
            old_path.read_text() if exists and old_path is not None and old_path.is_file() else None
        )
        if exists and (new is None or isinstance(new, Link)) and old is not None:
            out += f"diff --git a/{path} b/{path}\ndeleted file mode 100644\n"
            out += f"--- a/{path}\n+++ /dev/null\n"
            out += f"@@ -1,{len(_lines(old))} +0,0 @@\n" + _body("-", old)
        if isinstance(new, Link):
            out += (
                f"diff --git a/{path} b/{path}\nnew file mode 120000\n--- /dev/null\n+++ b/{path}\n"
            )
            out += "@@ -0,0 +1 @@\n" + _body("+", new.target)
        elif new is not None and old is None:
            out += (
                f"diff --git a/{path} b/{path}\nnew file mode 100644\n--- /dev/null\n+++ b/{path}\n"
            )
            out += f"@@ -0,0 +1,{len(_lines(new))} @@\n" + _body("+", new)
        elif new is not None and old is not None:
            out += f"diff --git a/{path} b/{path}\n"
            for line in difflib.unified_diff(_lines(old), _lines(new), f"a/{path}", f"b/{path}"):
                out += line if line.endswith("\n") else line + "\n\\ No newline at end of file\n"
    return out


@dataclass(frozen=True)
class NaiveRun:
    """What the naive harness concluded, and why."""

    resolved: bool
    statuses: dict[str, str]
    applied_by: str
    stdout: str


def _permissive_apply(repo: Path, patch: str) -> None:
    """Apply a patch the way a hand-written harness does: paths joined, links followed."""
    for block in re.split(r"(?m)^diff --git ", patch)[1:]:
        target = re.search(r"(?m)^\+\+\+ (?:b/)?(.+)$", block)
        source = re.search(r"(?m)^--- (?:a/)?(.+)$", block)
        if target is None or source is None:
            continue
        path = os.path.join(repo, target.group(1).strip())
        lines = block.split("\n")
        hunks = []
        i = 0
        while i < len(lines):
            if lines[i].startswith("@@"):
                hunk, i = _parse_hunk(lines, i)
                hunks.append(hunk)
            else:
                i += 1
        if target.group(1).strip() == "/dev/null":
            os.unlink(os.path.join(repo, source.group(1).strip()))
            continue
        if "new file mode 120000" in block:
            os.symlink(hunks[0].new[0], path)
            continue
        old = Path(path).read_text() if os.path.exists(path) else ""
        os.makedirs(os.path.dirname(path), exist_ok=True)
        Path(path).write_text(apply_hunks(old, hunks))


_STATUS = re.compile(r"^(PASSED|FAILED|ERROR|XFAIL|XPASS) (\S+)", re.MULTILINE)
_RUN = """
import site, sys
site.addsitedir(sys.argv[1])
sys.path.insert(0, sys.argv[2])
import pytest
sys.exit(pytest.main(sys.argv[3:]))
"""


def naive_run(
    tree: Path,
    work: Path,
    tests: dict[str, str],
    patch: str,
    fail_to_pass: list[str],
    pass_to_pass: list[str],
    *,
    history: dict[str, str] | None = None,
    autoload: bool = True,
) -> NaiveRun:
    """Grade ``patch`` the naive way in ``work`` (``work/repo``, ``work/env``).

    ``history``: files whose earlier versions the repository's git history
    holds (a checkout with its history, as SWE-bench's images had).
    ``autoload``: pytest loads the environment's plugins (its default).
    """
    repo, env = work / "repo", work / "env"
    env.mkdir(parents=True, exist_ok=True)
    shutil.copytree(tree, repo, symlinks=True)
    for dirpath, dirnames, filenames in os.walk(repo):
        for name in dirnames + filenames:
            p = os.path.join(dirpath, name)
            if not os.path.islink(p):
                os.chmod(p, os.stat(p).st_mode | stat.S_IWUSR)
    os.chmod(repo, 0o755)
    if history is not None:
        git = ["git", "-c", "user.email=a@b", "-c", "user.name=a"]
        subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
        current = {p: (repo / p).read_text() for p in history}
        for p, text in history.items():
            (repo / p).write_text(text)
        subprocess.run([*git, "add", "-A"], cwd=repo, check=True)
        subprocess.run([*git, "commit", "-qm", "fix"], cwd=repo, check=True)
        for p, text in current.items():
            (repo / p).write_text(text)
        subprocess.run([*git, "commit", "-qam", "state"], cwd=repo, check=True)
    applied_by = "none"
    if patch.strip():
        (work / "patch.diff").write_text(patch)
        done = subprocess.run(
            ["git", "apply", "--verbose", str(work / "patch.diff")],
            cwd=repo,
            capture_output=True,
            check=False,
        )
        applied_by = "git"
        if done.returncode != 0:
            _permissive_apply(repo, patch)
            applied_by = "permissive"
    for path, text in tests.items():
        target = repo / path
        if not (target.exists() or target.is_symlink()):
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text)
    ids = list(dict.fromkeys([*fail_to_pass, *pass_to_pass]))
    env_vars = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "PYTHONPATH": str(repo),
        "HOME": str(work),
        "LANG": "C.UTF-8",
    }
    if not autoload:
        env_vars["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    try:
        done = subprocess.run(
            [
                sys.executable,
                "-c",
                _RUN,
                str(env),
                str(repo),
                "-rA",
                "-p",
                "no:cacheprovider",
                *ids,
            ],
            cwd=repo,
            env=env_vars,
            capture_output=True,
            timeout=300,
            check=False,
        )
        stdout = done.stdout.decode(errors="replace")
    except subprocess.TimeoutExpired:
        return NaiveRun(False, {}, applied_by, "timeout")
    statuses: dict[str, str] = {}
    for status, nodeid in _STATUS.findall(stdout):
        statuses[nodeid] = status
    resolved = all(statuses.get(n, "PASSED") in ("PASSED", "XFAIL") for n in ids)
    return NaiveRun(resolved, statuses, applied_by, stdout)
