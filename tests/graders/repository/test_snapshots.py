"""Snapshots: content-addressed, deduplicated, read-only, without history, safely unpacked."""

from __future__ import annotations

import io
import os
import subprocess
import tarfile
from pathlib import Path

import pytest

from arbiter.graders.repository.snapshots import SnapshotError, SnapshotStore

from .conftest import TOOLZ


def test_the_same_tree_is_one_snapshot_whichever_way_it_comes(tmp_path: Path) -> None:
    store = SnapshotStore(tmp_path / "store")
    from_tarball = store.add(TOOLZ)
    unpacked = tmp_path / "unpacked"
    with tarfile.open(TOOLZ) as tar:
        tar.extractall(unpacked, filter="data")
    from_folder = store.add(next(unpacked.iterdir()))
    assert from_tarball.id == from_folder.id and from_tarball.id.startswith("sha256:")
    assert store.ids() == [from_tarball.id]
    assert store.get(from_tarball.id).tree == from_tarball.tree
    assert (from_tarball.tree / "toolz" / "itertoolz.py").exists()
    # Read-only: no grading can change what the next one sees.
    assert not os.access(from_tarball.tree / "toolz" / "itertoolz.py", os.W_OK) or os.getuid() == 0
    assert os.stat(from_tarball.tree / "toolz").st_mode & 0o222 == 0


def test_a_snapshot_carries_no_history_and_no_bytecode(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / "pkg" / "__pycache__").mkdir(parents=True)
    (repo / "pkg" / "mod.py").write_text("def f():\n    return 1\n")
    (repo / "pkg" / "__pycache__" / "mod.cpython-311.pyc").write_bytes(b"forged")
    git = ["git", "-c", "user.email=a@b", "-c", "user.name=a"]
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    subprocess.run([*git, "add", "-A"], cwd=repo, check=True)
    subprocess.run([*git, "commit", "-qm", "the fix lives here"], cwd=repo, check=True)
    snapshot = SnapshotStore(tmp_path / "store").add(repo)
    names = {p.name for p in snapshot.tree.rglob("*")}
    assert ".git" not in names and "__pycache__" not in names
    assert not any(n.endswith(".pyc") for n in names)
    assert snapshot.python_paths == ("",)


def _tarball(members: list[tuple[tarfile.TarInfo, bytes | None]]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for info, data in members:
            tar.addfile(info, io.BytesIO(data) if data is not None else None)
    return buf.getvalue()


def _file(name: str, data: bytes = b"x") -> tuple[tarfile.TarInfo, bytes]:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    return info, data


def _link(name: str, target: str) -> tuple[tarfile.TarInfo, None]:
    info = tarfile.TarInfo(name)
    info.type = tarfile.SYMTYPE
    info.linkname = target
    return info, None


@pytest.mark.parametrize(
    "members",
    [
        [_file("proj/ok.py"), _file("proj/../../escaped.py")],
        [_file("proj/ok.py"), _file("/abs/escaped.py")],
        [_file("proj/ok.py"), _link("proj/out", "/etc")],
        [_file("proj/ok.py"), _link("proj/up", "../../..")],
    ],
)
def test_a_tarball_that_reaches_out_is_refused(tmp_path: Path, members: list) -> None:
    store = SnapshotStore(tmp_path / "store")
    with pytest.raises(SnapshotError):
        store.add_tarball(_tarball(members))
    assert not (tmp_path / "escaped.py").exists()
    assert store.ids() == []


def test_a_src_layout_puts_src_on_the_path(tmp_path: Path) -> None:
    data = _tarball([_file("p/src/pkg/__init__.py"), _file("p/tests/test_a.py")])
    snapshot = SnapshotStore(tmp_path / "store").add_tarball(data)
    assert snapshot.python_paths == ("src", "")
    assert (snapshot.tree / "src" / "pkg" / "__init__.py").exists()


def test_an_unknown_id_or_path_is_the_tasks_error(tmp_path: Path) -> None:
    store = SnapshotStore(tmp_path / "store")
    for ref in ("sha256:" + "0" * 64, "sha256:nothex", str(tmp_path / "missing")):
        with pytest.raises(SnapshotError):
            store.get(ref)
