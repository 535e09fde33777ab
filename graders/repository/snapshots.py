"""Snapshots: read-only, content-addressed trees that workspaces are laid over.

A snapshot is registered from a directory or a ``.tar.gz`` (``arbiter repos
add``, ``POST /v1/repositories``) and named by ``sha256:<hex>``, the hash of
its manifest (every path, its kind, its executable bit, and its content's or
link target's hash), so the same tree uploaded twice is stored once. What a
snapshot never carries: version-control history (``.git``, ``.hg``, ``.svn``:
a candidate could read a fix from future commits or the tests from past ones),
compiled bytecode (``__pycache__``, ``*.pyc``: a forged ``.pyc`` is read before
its source) and ``.pytest_cache``.

A host that lacks a snapshot named by id fetches it once from
``ARBITER_REPOSITORY_SOURCE`` (a service's URL; ``GET
/v1/repositories/{id}/tarball``, with ``ARBITER_REPOSITORY_SOURCE_KEY`` as its
bearer key), checks that the tarball hashes to that id, and keeps it: a Ray
node caches each snapshot it grades.

The store is a directory (``ARBITER_REPOSITORY_STORE``, else
``<cache>/repository/store``): ``snapshots/<hex>/tree`` (files 0444 or 0555,
directories 0555) and ``meta.json`` beside it. A tarball is read with
:func:`tarfile.data_filter` (no absolute paths, no ``..``, no links out, no
devices) and within size limits.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import shutil
import stat
import tarfile
import tempfile
import threading
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import IO

__all__ = ["Snapshot", "SnapshotError", "SnapshotStore", "default_store_root"]

#: What no snapshot keeps: history, bytecode, caches.
EXCLUDED_DIRS = frozenset({".git", ".hg", ".svn", "__pycache__", ".pytest_cache", ".tox", ".nox"})
EXCLUDED_SUFFIXES = (".pyc", ".pyo")
MAX_FILES = 200_000
MAX_BYTES = 2 << 30


class SnapshotError(ValueError):
    """A snapshot that cannot be read or registered: the task's, never the candidate's."""


@dataclass(frozen=True)
class Snapshot:
    """One stored snapshot."""

    id: str
    tree: Path
    files: int
    bytes: int
    #: Folders (relative to the tree, "" for its root) the tests import from.
    python_paths: tuple[str, ...]

    @property
    def hex(self) -> str:
        """The id without its ``sha256:`` prefix."""
        return self.id.split(":", 1)[1]


def default_store_root() -> Path:
    """``ARBITER_REPOSITORY_STORE``, else ``repository/store`` under the sandbox's cache."""
    env = os.environ.get("ARBITER_REPOSITORY_STORE")
    if env:
        return Path(env)
    base = os.environ.get("ARBITER_CACHE_DIR") or f"/var/tmp/arbiter-{os.geteuid()}"
    return Path(base) / "repository" / "store"


def _excluded(name: str, is_dir: bool) -> bool:
    return name in EXCLUDED_DIRS if is_dir else name.endswith(EXCLUDED_SUFFIXES)


def _manifest(tree: Path) -> tuple[str, int, int]:
    """Hash the tree's manifest; return the id, the file count and the bytes."""
    lines: list[bytes] = []
    files = size = 0
    for dirpath, dirnames, filenames in os.walk(tree):
        dirnames[:] = sorted(d for d in dirnames if not _excluded(d, True))
        for name in sorted(filenames + [d for d in dirnames if os.path.islink(Path(dirpath, d))]):
            path = Path(dirpath, name)
            rel = path.relative_to(tree).as_posix()
            st = path.lstat()
            if stat.S_ISLNK(st.st_mode):
                digest = hashlib.sha256(os.readlink(path).encode()).hexdigest()
                lines.append(f"l {rel}\0{digest}\n".encode())
            elif stat.S_ISREG(st.st_mode):
                if _excluded(name, False):
                    continue
                h = hashlib.sha256()
                with open(path, "rb") as f:
                    for chunk in iter(lambda: f.read(1 << 20), b""):
                        h.update(chunk)
                kind = "x" if st.st_mode & 0o111 else "f"
                lines.append(f"{kind} {rel}\0{h.hexdigest()}\n".encode())
                size += st.st_size
            files += 1
    return "sha256:" + hashlib.sha256(b"".join(lines)).hexdigest(), files, size


def _python_paths(tree: Path) -> tuple[str, ...]:
    """The root, and ``src`` when the project keeps its packages there."""
    src = tree / "src"
    if src.is_dir() and any(
        (p / "__init__.py").exists() or p.suffix == ".py" for p in src.iterdir()
    ):
        return ("src", "")
    return ("",)


def _seal(tree: Path) -> None:
    """Make the tree read-only: files 0444 (0555 if executable), directories 0555."""
    for dirpath, dirnames, filenames in os.walk(tree, topdown=False):
        for name in filenames:
            path = os.path.join(dirpath, name)
            st = os.lstat(path)
            if stat.S_ISREG(st.st_mode):
                os.chmod(path, 0o555 if st.st_mode & 0o111 else 0o444)
        for name in dirnames:
            path = os.path.join(dirpath, name)
            if not os.path.islink(path):
                os.chmod(path, 0o555)
    os.chmod(tree, 0o555)


def _unseal(tree: Path) -> None:
    for dirpath, dirnames, _ in os.walk(tree):
        os.chmod(dirpath, 0o755)
        for name in dirnames:
            path = os.path.join(dirpath, name)
            if not os.path.islink(path):
                os.chmod(path, 0o755)


class SnapshotStore:
    """The snapshots of this host, by id; adds are atomic and deduplicated."""

    def __init__(self, root: Path | str | None = None) -> None:
        self.root = Path(root) if root is not None else default_store_root()
        self._lock = threading.Lock()
        #: A directory given by path -> (its stat signature, its snapshot).
        self._by_path: dict[str, tuple[str, Snapshot]] = {}
        #: One fetch at a time per id (a node fetches a snapshot once).
        self._fetching: dict[str, threading.Lock] = {}

    def _dir(self, hex_id: str) -> Path:
        return self.root / "snapshots" / hex_id

    def get(self, ref: str) -> Snapshot:
        """Return the snapshot ``ref`` names: an id, a directory or a ``.tar.gz`` on this host."""
        if ref.startswith("sha256:"):
            hex_id = ref.split(":", 1)[1]
            if len(hex_id) != 64 or any(c not in "0123456789abcdef" for c in hex_id):
                raise SnapshotError(f"{ref!r} is not a snapshot id")
            meta = self._dir(hex_id) / "meta.json"
            if meta.exists():
                return self._load(hex_id)
            source = os.environ.get("ARBITER_REPOSITORY_SOURCE")
            if source:
                return self.fetch(ref, source)
            raise SnapshotError(f"no snapshot {ref} on this host (register it first)")
        path = Path(ref)
        if not path.exists():
            raise SnapshotError(f"no repository at {ref!r}")
        if path.is_dir():
            return self._add_dir_memo(path)
        return self.add(path)

    def _load(self, hex_id: str) -> Snapshot:
        data = json.loads((self._dir(hex_id) / "meta.json").read_text())
        return Snapshot(
            id=data["id"],
            tree=self._dir(hex_id) / "tree",
            files=data["files"],
            bytes=data["bytes"],
            python_paths=tuple(data["python_paths"]),
        )

    def _add_dir_memo(self, path: Path) -> Snapshot:
        real = str(path.resolve())
        signature = _signature(Path(real))
        with self._lock:
            known = self._by_path.get(real)
        if known is not None and known[0] == signature:
            return known[1]
        snapshot = self.add(path)
        with self._lock:
            self._by_path[real] = (signature, snapshot)
        return snapshot

    def add(self, source: Path | str) -> Snapshot:
        """Register a directory or a ``.tar.gz``; return its snapshot (the stored one if known)."""
        source = Path(source)
        if source.is_dir():
            return self._import(lambda dest: _copy_tree(source, dest))
        if not source.is_file():
            raise SnapshotError(f"no repository at {str(source)!r}")
        with open(source, "rb") as f:
            return self.add_tarball(f)

    def add_tarball(self, data: bytes | IO[bytes]) -> Snapshot:
        """Register a gzip-compressed tarball (one top-level folder is stripped)."""
        stream = io.BytesIO(data) if isinstance(data, bytes) else data
        return self._import(lambda dest: _extract(stream, dest))

    def _import(self, fill: object) -> Snapshot:
        staging_root = self.root / "staging"
        staging_root.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(dir=staging_root))
        try:
            tree = staging / "tree"
            tree.mkdir()
            fill(tree)  # type: ignore[operator]
            _prune(tree)
            snapshot_id, files, size = _manifest(tree)
            hex_id = snapshot_id.split(":", 1)[1]
            final = self._dir(hex_id)
            if (final / "meta.json").exists():
                return self._load(hex_id)
            meta = {
                "id": snapshot_id,
                "files": files,
                "bytes": size,
                "python_paths": list(_python_paths(tree)),
            }
            _seal(tree)
            (staging / "meta.json").write_text(json.dumps(meta))
            final.parent.mkdir(parents=True, exist_ok=True)
            try:
                os.rename(staging, final)
            except OSError:
                if not (final / "meta.json").exists():
                    raise
            else:
                os.chmod(final, 0o755)
            return self._load(hex_id)
        finally:
            if staging.exists():
                with contextlib.suppress(OSError):
                    _unseal(staging)
                shutil.rmtree(staging, ignore_errors=True)

    def tarball(self, snapshot_id: str) -> bytes:
        """The snapshot as a ``.tar.gz`` (one top folder), as a node that lacks it fetches it."""
        snapshot = self.get(snapshot_id) if snapshot_id.startswith("sha256:") else None
        if snapshot is None:
            raise SnapshotError(f"{snapshot_id!r} is not a snapshot id")
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w:gz", compresslevel=6) as tar:
            tar.add(snapshot.tree, arcname="snapshot")
        return buf.getvalue()

    def fetch(self, snapshot_id: str, source: str, timeout_s: float = 60.0) -> Snapshot:
        """Fetch a snapshot this host lacks from ``source`` (a service's URL), once, and keep it.

        The tarball is checked against its id: what is stored is what was asked
        for, whoever answered.
        """
        with self._lock:
            lock = self._fetching.setdefault(snapshot_id, threading.Lock())
        with lock:
            hex_id = snapshot_id.split(":", 1)[1]
            if (self._dir(hex_id) / "meta.json").exists():
                return self._load(hex_id)  # another thread fetched it meanwhile
            url = f"{source.rstrip('/')}/v1/repositories/{snapshot_id}/tarball"
            request = urllib.request.Request(url, headers=_auth_headers())
            try:
                with urllib.request.urlopen(request, timeout=timeout_s) as response:
                    data = response.read(MAX_BYTES + 1)
            except OSError as e:
                raise SnapshotError(f"could not fetch {snapshot_id} from {source}: {e}") from e
            snapshot = self.add_tarball(data)
            if snapshot.id != snapshot_id:
                raise SnapshotError(f"{source} sent {snapshot.id} for {snapshot_id}")
            return snapshot

    def ids(self) -> list[str]:
        """Every snapshot id in the store."""
        root = self.root / "snapshots"
        if not root.is_dir():
            return []
        return sorted(f"sha256:{p.name}" for p in root.iterdir() if (p / "meta.json").exists())


def _auth_headers() -> dict[str, str]:
    key = os.environ.get("ARBITER_REPOSITORY_SOURCE_KEY")
    return {"Authorization": f"Bearer {key}"} if key else {}


def _signature(tree: Path) -> str:
    h = hashlib.sha256()
    for dirpath, dirnames, filenames in os.walk(tree):
        dirnames.sort()
        for name in sorted(filenames):
            st = os.lstat(os.path.join(dirpath, name))
            h.update(f"{dirpath}/{name}\0{st.st_size}\0{st.st_mtime_ns}\0{st.st_mode}\n".encode())
    return h.hexdigest()


def _copy_tree(source: Path, dest: Path) -> None:
    def ignore(directory: str, names: list[str]) -> set[str]:
        return {n for n in names if _excluded(n, os.path.isdir(os.path.join(directory, n)))}

    shutil.copytree(source, dest, symlinks=True, ignore=ignore, dirs_exist_ok=True)
    _check_links(dest)


def _check_links(tree: Path) -> None:
    """A snapshot's links stay inside it."""
    root = tree.resolve()
    for dirpath, dirnames, filenames in os.walk(tree):
        for name in dirnames + filenames:
            path = Path(dirpath, name)
            if path.is_symlink():
                target = os.readlink(path)
                resolved = Path(os.path.normpath(path.parent / target))
                if os.path.isabs(target) or not resolved.is_relative_to(root):
                    raise SnapshotError(f"link {path.relative_to(tree)} points outside the tree")


def _extract(stream: IO[bytes], dest: Path) -> None:
    try:
        with tarfile.open(fileobj=stream, mode="r:gz") as tar:
            members = []
            total = 0
            for member in tar:
                name = _member_name(member.name)
                if name.startswith("/") or ".." in name.split("/"):
                    raise SnapshotError(f"tarball member {member.name!r} points outside the tree")
                member.name = name
                members.append(member)
                total += max(member.size, 0)
                if len(members) > MAX_FILES or total > MAX_BYTES:
                    raise SnapshotError("the tarball is larger than a snapshot may be")
            tops = {m.name.split("/", 1)[0] for m in members if m.name}
            strip = len(tops) == 1 and all("/" in m.name or m.isdir() for m in members if m.name)
            for member in members:
                name = member.name
                if strip:
                    name = name.split("/", 1)[1] if "/" in name else ""
                if not name:
                    continue
                member.name = name
                if member.islnk() and strip and "/" in member.linkname:
                    member.linkname = member.linkname.split("/", 1)[1]
                tar.extract(member, dest, filter="data")
    except (tarfile.TarError, OSError, EOFError) as e:
        raise SnapshotError(f"not a readable .tar.gz: {e}") from e
    _check_links(dest)


def _member_name(name: str) -> str:
    while name.startswith("./"):
        name = name[2:]
    return name.rstrip("/")


def _prune(tree: Path) -> None:
    """Remove what no snapshot keeps (history, bytecode, caches) from a fresh tree."""
    for dirpath, dirnames, filenames in os.walk(tree):
        for name in list(dirnames):
            if _excluded(name, True):
                path = os.path.join(dirpath, name)
                if os.path.islink(path):
                    os.unlink(path)
                else:
                    shutil.rmtree(path, ignore_errors=True)
                dirnames.remove(name)
        for name in filenames:
            if _excluded(name, False):
                os.unlink(os.path.join(dirpath, name))
