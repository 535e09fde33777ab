"""A snapshot's environment: its requirements, installed once into a read-only prefix.

Keyed by the snapshot, its requirements, its setup step and this interpreter's
version, so every grading of a snapshot shares one. ``pip install --target``
builds it into a staging folder that is renamed into place only when it is
whole (a file lock keeps concurrent gradings from building it twice); it is
then made read-only, and the runner may read it and nothing else of the store.

A task's ``setup`` (a shell command, the task author's, never the candidate's)
runs once in a copy of the snapshot, with the requirements on its path; the
copy, made read-only, is the tree that the workspaces of that key lay their
overlay over. An environment that will not build is ours: an
:class:`EnvironmentBuildError`, retried, then an abstention.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from arbiter.graders.repository.snapshots import Snapshot, _seal, _unseal

__all__ = ["EnvironmentBuildError", "Environments", "Prepared"]

#: The longest a requirements install or a setup step may take.
BUILD_TIMEOUT_S = 900.0


class EnvironmentBuildError(RuntimeError):
    """The environment did not build: ours, never the candidate's."""


@dataclass(frozen=True)
class Prepared:
    """What a workspace is laid over: the tree, and the folders added to the tests' path."""

    tree: Path
    env_paths: tuple[str, ...]


class Environments:
    """The prepared environments of one store, by key."""

    def __init__(self, root: Path, *, index_args: tuple[str, ...] = ()) -> None:
        self.root = Path(root)
        #: Extra pip arguments (``--no-index --find-links DIR`` for an offline index).
        self.index_args = index_args

    @staticmethod
    def key(snapshot: Snapshot, requirements: list[str], setup: str | None) -> str:
        """The environment's key: snapshot, requirements, setup and this Python's version."""
        text = json.dumps(
            [snapshot.id, sorted(requirements), setup, sys.version_info[:2]], sort_keys=True
        )
        return hashlib.sha256(text.encode()).hexdigest()

    def prepare(self, snapshot: Snapshot, requirements: list[str], setup: str | None) -> Prepared:
        """Return the snapshot's prepared tree and environment, building them once."""
        if not requirements and not setup:
            return Prepared(snapshot.tree, ())
        key = self.key(snapshot, requirements, setup)
        final = self.root / "envs" / key
        done = final / "ok.json"
        if done.exists():
            return self._load(final)
        (self.root / "envs").mkdir(parents=True, exist_ok=True)
        with open(self.root / "envs" / f"{key}.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if done.exists():
                return self._load(final)
            staging = Path(tempfile.mkdtemp(dir=self.root / "envs", prefix="staging-"))
            try:
                self._build(staging, snapshot, requirements, setup)
                os.rename(staging, final)
            finally:
                if staging.exists():
                    with contextlib.suppress(OSError):
                        _unseal(staging)
                    shutil.rmtree(staging, ignore_errors=True)
        return self._load(final)

    def _load(self, final: Path) -> Prepared:
        data = json.loads((final / "ok.json").read_text())
        tree = final / "tree" if data["setup"] else Path(data["snapshot_tree"])
        env = (str(final / "site"),) if data["requirements"] else ()
        return Prepared(tree, env)

    def _build(
        self, staging: Path, snapshot: Snapshot, requirements: list[str], setup: str | None
    ) -> None:
        site = staging / "site"
        if requirements:
            command = [
                sys.executable,
                "-m",
                "pip",
                "install",
                "--no-input",
                "--disable-pip-version-check",
                "--no-warn-script-location",
                "--no-compile",
                "--target",
                str(site),
                *self.index_args,
                *requirements,
            ]
            self._check(command, cwd=staging, what="installing the requirements")
            _seal(site)
        if setup:
            tree = staging / "tree"
            shutil.copytree(snapshot.tree, tree, symlinks=True)
            _unseal(tree)
            env = {
                "PATH": "/usr/local/bin:/usr/bin:/bin",
                "HOME": str(staging),
                "LANG": "C.UTF-8",
                "PYTHONPATH": os.pathsep.join(
                    [str(tree / p) if p else str(tree) for p in snapshot.python_paths]
                    + ([str(site)] if requirements else [])
                ),
            }
            self._check(["/bin/sh", "-c", setup], cwd=tree, what="the setup step", env=env)
            _seal(tree)
        (staging / "ok.json").write_text(
            json.dumps(
                {
                    "snapshot": snapshot.id,
                    "snapshot_tree": str(snapshot.tree),
                    "requirements": requirements,
                    "setup": setup,
                }
            )
        )
        os.chmod(staging, 0o755)

    @staticmethod
    def _check(
        command: list[str], *, cwd: Path, what: str, env: dict[str, str] | None = None
    ) -> None:
        try:
            done = subprocess.run(
                command,
                cwd=cwd,
                env=env,
                capture_output=True,
                timeout=BUILD_TIMEOUT_S,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired) as e:
            raise EnvironmentBuildError(f"{what} failed: {e}") from e
        if done.returncode != 0:
            tail = (done.stderr or done.stdout).decode(errors="replace")[-1500:]
            raise EnvironmentBuildError(f"{what} failed (exit {done.returncode}): {tail}")
