"""The candidate's patch: a unified diff as ``git diff`` prints it, read strictly.

One module, one job: one grammar of unified diffs. The trusted side and the confined
applier import this same file, so that parsing and applying cannot disagree.

Standard library only: the trusted side parses and checks the patch here, and
the confined applier (:mod:`arbiter.graders.repository._host`) imports this same
module by file to apply it inside the workspace, so both read one grammar.

What is refused, before anything is written: a path that is absolute, has an
empty, ``.`` or ``..`` component, a NUL, or lies under ``.git``; a symbolic
link whose target is absolute or climbs out of the tree; binary patches;
patches, files and hunks past the size limits. What does not apply (a hunk
whose context is not in the file, a file created over an existing one, a
file modified that is absent) is the candidate's too: the grader scores it 0
with ``patch_does_not_apply``.
"""

from __future__ import annotations

import os
import posixpath
import re
import stat
from dataclasses import dataclass, field

__all__ = [
    "FilePatch",
    "Hunk",
    "PatchError",
    "PatchLimits",
    "apply_hunks",
    "apply_to_tree",
    "extract_diff",
    "parse_patch",
    "protected_reason",
    "touched_paths",
]


class PatchError(ValueError):
    """The patch is refused or does not apply; ``kind`` says which.

    ``refused``: it breaks a rule (a path out of the tree, a size limit, a
    binary patch), before anything is applied. ``does_not_apply``: it is well
    formed but does not fit the tree (a hunk's context is not there).
    """

    def __init__(self, kind: str, message: str, path: str | None = None) -> None:
        super().__init__(message)
        self.kind = kind
        self.path = path


@dataclass(frozen=True)
class PatchLimits:
    """How large a patch, and what it makes, may be."""

    max_patch_bytes: int = 1 << 20
    max_files: int = 500
    max_file_bytes: int = 4 << 20
    max_hunks: int = 5000


@dataclass
class Hunk:
    """One ``@@`` hunk: the lines it expects (``old``) and the lines it leaves (``new``)."""

    old_start: int
    old: list[str] = field(default_factory=list)
    new: list[str] = field(default_factory=list)
    #: The old / new side's last line has no newline (``\\ No newline at end of file``).
    old_no_eol: bool = False
    new_no_eol: bool = False
    #: The lines it adds (``+``) and how many it removes (``-``).
    added: list[str] = field(default_factory=list)
    removed: int = 0


@dataclass
class FilePatch:
    """What the patch does to one file."""

    old_path: str | None
    new_path: str | None
    hunks: list[Hunk] = field(default_factory=list)
    old_mode: int | None = None
    new_mode: int | None = None
    added_lines: list[str] = field(default_factory=list)

    @property
    def path(self) -> str:
        """The file's path after the patch (before it, for a deletion)."""
        return self.new_path or self.old_path or ""

    @property
    def kind(self) -> str:
        """``create``, ``delete``, ``rename`` or ``modify``."""
        if self.old_path is None:
            return "create"
        if self.new_path is None:
            return "delete"
        if self.old_path != self.new_path:
            return "rename"
        return "modify"

    @property
    def is_symlink(self) -> bool:
        """Whether the file after the patch is a symbolic link (mode 120000)."""
        return self.new_mode is not None and stat.S_ISLNK(self.new_mode)

    def counts(self) -> tuple[int, int]:
        """Lines added and removed."""
        return sum(len(h.added) for h in self.hunks), sum(h.removed for h in self.hunks)

    def to_json(self) -> dict[str, object]:
        """The file patch as plain data (what the confined applier receives)."""
        return {
            "old_path": self.old_path,
            "new_path": self.new_path,
            "old_mode": self.old_mode,
            "new_mode": self.new_mode,
            "hunks": [[h.old_start, h.old, h.new, h.old_no_eol, h.new_no_eol] for h in self.hunks],
        }

    @classmethod
    def from_json(cls, data: dict[str, object]) -> FilePatch:
        """Rebuild a file patch from :meth:`to_json`'s data."""
        hunks = [
            Hunk(int(s), list(o), list(n), bool(a), bool(b))
            for s, o, n, a, b in data["hunks"]  # type: ignore[attr-defined]
        ]
        return cls(
            old_path=data["old_path"],  # type: ignore[arg-type]
            new_path=data["new_path"],  # type: ignore[arg-type]
            hunks=hunks,
            old_mode=data["old_mode"],  # type: ignore[arg-type]
            new_mode=data["new_mode"],  # type: ignore[arg-type]
        )


_FENCE = re.compile(r"```[ \t]*(?:diff|patch|udiff)?[ \t]*\n(.*?)(?:\n```|\Z)", re.DOTALL)


def extract_diff(response: str) -> str:
    """Return the diff in a response: the body of a ```diff fence, or the whole text."""
    if "```" in response:
        blocks = [m.group(1) for m in _FENCE.finditer(response)]
        diffs = [b for b in blocks if "\n@@" in b or b.startswith(("diff --git", "--- "))]
        if diffs:
            return "\n".join(d if d.endswith("\n") else d + "\n" for d in diffs)
    return response


_ESCAPES = {"a": "\a", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v"}


def _unquote(text: str) -> str:
    r"""Undo git's C-style quoting of a path (``"a/f\\303\\266o"``)."""
    if not (len(text) >= 2 and text[0] == '"' and text[-1] == '"'):
        return text
    body = text[1:-1]
    out = bytearray()
    i = 0
    while i < len(body):
        ch = body[i]
        if ch != "\\":
            out += ch.encode("utf-8", "surrogateescape")
            i += 1
            continue
        nxt = body[i + 1 : i + 2]
        if nxt in _ESCAPES:
            out += _ESCAPES[nxt].encode()
            i += 2
        elif nxt.isdigit() and re.fullmatch(r"[0-7]{3}", body[i + 1 : i + 4]):
            out.append(int(body[i + 1 : i + 4], 8))
            i += 4
        elif nxt in ('"', "\\"):
            out += nxt.encode()
            i += 2
        else:
            raise PatchError("refused", f"bad escape in quoted path {text!r}")
    return out.decode("utf-8", "surrogateescape")


def _strip_prefix(raw: str, prefix: str) -> str | None:
    path = _unquote(raw.split("\t")[0].rstrip("\r") if not raw.startswith('"') else raw)
    if path == "/dev/null":
        return None
    if path.startswith(prefix):
        path = path[len(prefix) :]
    return path


def check_path(path: str) -> str:
    """Return ``path`` if it names a place inside the tree; raise ``refused`` otherwise."""
    if not path or len(path) > 4096 or "\x00" in path:
        raise PatchError("refused", f"invalid path {path!r}", path)
    if path.startswith("/"):
        raise PatchError("refused", f"absolute path {path!r} leaves the workspace", path)
    parts = path.split("/")
    for part in parts:
        if part in ("", ".", ".."):
            raise PatchError("refused", f"path {path!r} leaves or escapes the workspace", path)
        if len(part.encode("utf-8", "surrogateescape")) > 255:
            raise PatchError("refused", f"path component too long in {path!r}", path)
    if parts[0] == ".git" or ".git" in parts:
        raise PatchError("refused", f"path {path!r} is inside .git", path)
    return path


def _check_link_target(path: str, target: str) -> None:
    """A link the patch makes must point inside the tree, by a relative path."""
    if not target or target.startswith("/") or "\x00" in target:
        raise PatchError("refused", f"symlink {path!r} points outside the workspace", path)
    joined = posixpath.normpath(posixpath.join(posixpath.dirname(path), target))
    if joined == ".." or joined.startswith("../") or joined.startswith("/"):
        raise PatchError("refused", f"symlink {path!r} points outside the workspace", path)


_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
_DIFF_GIT = re.compile(r'^diff --git ("(?:[^"\\]|\\.)*"|\S+) ("(?:[^"\\]|\\.)*"|\S+)\s*$')


def parse_patch(text: str, limits: PatchLimits | None = None) -> list[FilePatch]:
    """Parse a unified diff into file patches, checking every rule; raise :class:`PatchError`."""
    limits = limits or PatchLimits()
    if len(text.encode("utf-8", "surrogateescape")) > limits.max_patch_bytes:
        raise PatchError("refused", f"the patch is larger than {limits.max_patch_bytes} bytes")
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    files: list[FilePatch] = []
    hunks_seen = 0
    i = 0
    current: FilePatch | None = None
    while i < len(lines):
        line = lines[i].rstrip("\r") if not lines[i].startswith(("+", "-", " ")) else lines[i]
        m = _DIFF_GIT.match(line)
        if m:
            current = FilePatch(_strip_prefix(m.group(1), "a/"), _strip_prefix(m.group(2), "b/"))
            files.append(current)
            i += 1
            continue
        if line.startswith("--- ") and i + 1 < len(lines) and lines[i + 1].startswith("+++ "):
            old = _strip_prefix(line[4:], "a/")
            new = _strip_prefix(lines[i + 1][4:].rstrip("\r"), "b/")
            if current is None or current.hunks:
                current = FilePatch(old, new)
                files.append(current)
            else:
                current.old_path, current.new_path = old, new
            i += 2
            continue
        if current is not None and not current.hunks and _header_line(current, line):
            i += 1
            continue
        if line.startswith("@@"):
            if current is None:
                raise PatchError("does_not_apply", "a hunk before any file header")
            hunk, i = _parse_hunk(lines, i)
            hunks_seen += 1
            if hunks_seen > limits.max_hunks:
                raise PatchError("refused", f"more than {limits.max_hunks} hunks")
            current.hunks.append(hunk)
            continue
        if line.startswith(("GIT binary patch", "Binary files ")):
            raise PatchError(
                "refused", "binary patches are not accepted", current.path if current else None
            )
        i += 1  # commit messages, "index" lines of bare diffs, blank lines: not the patch
    files = [f for f in files if f.hunks or f.kind != "modify" or f.old_mode != f.new_mode]
    if len(files) > limits.max_files:
        raise PatchError("refused", f"the patch changes more than {limits.max_files} files")
    seen: dict[str, str] = {}
    for f in files:
        for p in (f.old_path, f.new_path):
            if p is not None:
                check_path(p)
        # A file replaced by a link (or the reverse) is a deletion, then a creation.
        if f.path in seen and not (seen[f.path] == "delete" and f.kind == "create"):
            raise PatchError("does_not_apply", f"{f.path!r} is patched twice", f.path)
        seen[f.path] = f.kind
        if f.is_symlink:
            target = "\n".join(f.hunks[-1].new) if f.hunks else ""
            _check_link_target(f.path, target)
        f.added_lines = [ln for h in f.hunks for ln in h.added]
    return files


def _header_line(f: FilePatch, line: str) -> bool:
    """Read one extended header line of a ``diff --git`` block; False if it is not one."""
    for prefix, attr in (
        ("new file mode ", "create"),
        ("deleted file mode ", "delete"),
        ("old mode ", "old"),
        ("new mode ", "new"),
    ):
        if line.startswith(prefix):
            mode = _mode(line[len(prefix) :])
            if attr == "create":
                f.old_path, f.new_mode = None, mode
            elif attr == "delete":
                f.new_path, f.old_mode = None, mode
            elif attr == "old":
                f.old_mode = mode
            else:
                f.new_mode = mode
            return True
    if line.startswith(("rename from ", "copy from ")):
        f.old_path = check_path(_unquote(line.split(" ", 2)[2]))
        return True
    if line.startswith(("rename to ", "copy to ")):
        f.new_path = check_path(_unquote(line.split(" ", 2)[2]))
        return True
    return line.startswith(("index ", "similarity index ", "dissimilarity index "))


def _mode(text: str) -> int:
    try:
        mode = int(text.strip(), 8)
    except ValueError as e:
        raise PatchError("does_not_apply", f"bad file mode {text!r}") from e
    if mode not in (0o100644, 0o100755, 0o120000, 0o100664):
        raise PatchError("refused", f"file mode {text.strip()} is not a file or a link")
    return mode


def _parse_hunk(lines: list[str], i: int) -> tuple[Hunk, int]:
    m = _HUNK.match(lines[i])
    if m is None:
        raise PatchError("does_not_apply", f"bad hunk header {lines[i][:80]!r}")
    old_count = int(m.group(2)) if m.group(2) is not None else 1
    new_count = int(m.group(4)) if m.group(4) is not None else 1
    hunk = Hunk(old_start=int(m.group(1)))
    i += 1
    last = ""
    while i < len(lines) and (old_count > 0 or new_count > 0):
        line = lines[i]
        tag, body = (line[:1], line[1:]) if line else (" ", "")
        if tag == " ":
            hunk.old.append(body)
            hunk.new.append(body)
            old_count -= 1
            new_count -= 1
        elif tag == "-":
            hunk.old.append(body)
            hunk.removed += 1
            old_count -= 1
        elif tag == "+":
            hunk.new.append(body)
            hunk.added.append(body)
            new_count -= 1
        elif tag == "\\":
            _no_eol(hunk, last)
        else:
            raise PatchError("does_not_apply", f"hunk ends early at {line[:80]!r}")
        last = tag
        i += 1
    if old_count != 0 or new_count != 0:
        raise PatchError("does_not_apply", "a hunk is shorter than its header says")
    if i < len(lines) and lines[i].startswith("\\"):
        _no_eol(hunk, last)
        i += 1
    return hunk, i


def _no_eol(hunk: Hunk, last: str) -> None:
    if last in (" ", "-"):
        hunk.old_no_eol = True
    if last in (" ", "+"):
        hunk.new_no_eol = True


def touched_paths(files: list[FilePatch]) -> list[str]:
    """Every path the patch writes, deletes or renames away from."""
    out: list[str] = []
    for f in files:
        for p in (f.old_path, f.new_path):
            if p is not None and p not in out:
                out.append(p)
    return out


#: Files that configure or extend a pytest run: for the run, the snapshot's own.
_PROTECTED_NAMES = {
    "conftest.py": "conftest",
    "pytest.ini": "pytest configuration",
    ".pytest.ini": "pytest configuration",
    "tox.ini": "pytest configuration",
    "setup.cfg": "pytest configuration",
    "pyproject.toml": "pytest configuration",
    "sitecustomize.py": "sitecustomize",
    "usercustomize.py": "usercustomize",
    "pytest.py": "shadows pytest",
    "_pytest.py": "shadows pytest",
    "pluggy.py": "shadows pytest",
    "py.py": "shadows pytest",
}
_PROTECTED_DIRS = {"_pytest", "pytest", "pluggy", "__pycache__", ".pytest_cache"}


def protected_reason(path: str) -> str | None:
    """Say why ``path`` configures the test run (so the patch may not change it), or None."""
    parts = path.split("/")
    name = parts[-1]
    if name in _PROTECTED_NAMES:
        return _PROTECTED_NAMES[name]
    if name.endswith(".pth"):
        return ".pth file"
    if name.endswith((".pyc", ".pyo")):
        return "compiled bytecode"
    for part in parts[:-1]:
        if part in _PROTECTED_DIRS:
            return f"inside {part}/"
        if part.endswith((".dist-info", ".egg-info")):
            return "plugin entry points"
    return None


# --- applying -----------------------------------------------------------------


def _split(text: str) -> tuple[list[str], bool]:
    """Lines without their newlines, and whether the text ends with one."""
    if text == "":
        return [], True
    ends = text.endswith("\n")
    lines = text.split("\n")
    if ends:
        lines.pop()
    return lines, ends


def apply_hunks(text: str, hunks: list[Hunk], path: str = "") -> str:
    """Apply hunks to ``text`` as ``git apply`` does: exact context, nearest offset first."""
    lines, ends = _split(text)
    out: list[str] = []
    pos = 0
    for n, hunk in enumerate(hunks, 1):
        want = hunk.old_start - 1 if hunk.old else hunk.old_start
        at = _find(lines, hunk.old, max(want, 0), pos)
        if at is None:
            raise PatchError("does_not_apply", f"hunk {n} of {path!r} does not apply", path)
        if hunk.old_no_eol and at + len(hunk.old) == len(lines) and ends:
            raise PatchError("does_not_apply", f"hunk {n} of {path!r} does not apply", path)
        out += lines[pos:at]
        out += hunk.new
        pos = at + len(hunk.old)
        if pos == len(lines):
            ends = not hunk.new_no_eol if (hunk.new or hunk.old) else ends
    out += lines[pos:]
    if not out:
        return ""
    return "\n".join(out) + ("\n" if ends else "")


def _find(lines: list[str], old: list[str], want: int, floor: int) -> int | None:
    if not old:
        return min(max(want, floor), len(lines))
    size = len(old)
    last = len(lines) - size
    for delta in range(len(lines) + 1):
        for at in (want - delta, want + delta) if delta else (want,):
            if floor <= at <= last and lines[at : at + size] == old:
                return at
        if want - delta < floor and want + delta > last:
            break
    return None


_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def _open_parent(root: int, path: str, *, create: bool) -> tuple[int, str]:
    """Open ``path``'s directory under ``root`` without following any link; return it and the name.

    A component that is a link or not a directory is refused (``create``
    replaces nothing: the tree's own links are never followed either).
    """
    parts = path.split("/")
    fd = os.dup(root)
    try:
        for part in parts[:-1]:
            try:
                nxt = os.open(part, _DIR, dir_fd=fd)
            except FileNotFoundError:
                if not create:
                    raise PatchError("does_not_apply", f"{path!r} does not exist", path) from None
                os.mkdir(part, 0o755, dir_fd=fd)
                nxt = os.open(part, _DIR, dir_fd=fd)
            except (NotADirectoryError, OSError) as e:
                raise PatchError(
                    "refused", f"{path!r} goes through a link or a file ({e.strerror})", path
                ) from None
            os.close(fd)
            fd = nxt
        return fd, parts[-1]
    except BaseException:
        os.close(fd)
        raise


def _read(dir_fd: int, name: str, path: str, limit: int) -> tuple[str, int]:
    try:
        st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        raise PatchError("does_not_apply", f"{path!r} does not exist", path) from None
    if stat.S_ISLNK(st.st_mode):
        return os.readlink(name, dir_fd=dir_fd), st.st_mode
    if not stat.S_ISREG(st.st_mode):
        raise PatchError("does_not_apply", f"{path!r} is not a file", path)
    if st.st_size > limit:
        raise PatchError("refused", f"{path!r} is larger than {limit} bytes", path)
    fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dir_fd)
    with os.fdopen(fd, "rb") as f:
        return f.read().decode("utf-8", "surrogateescape"), st.st_mode


def _write(dir_fd: int, name: str, text: str, mode: int, path: str, limit: int) -> None:
    data = text.encode("utf-8", "surrogateescape")
    if len(data) > limit:
        raise PatchError("refused", f"{path!r} would be larger than {limit} bytes", path)
    if stat.S_ISLNK(mode):
        os.symlink(text.split("\n")[0], name, dir_fd=dir_fd)
        return
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    fd = os.open(name, flags, 0o755 if mode & 0o111 else 0o644, dir_fd=dir_fd)
    with os.fdopen(fd, "wb") as f:
        f.write(data)


def _remove(dir_fd: int, name: str) -> None:
    st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    if stat.S_ISDIR(st.st_mode):
        raise PatchError("does_not_apply", f"{name!r} is a directory")
    os.unlink(name, dir_fd=dir_fd)


def apply_to_tree(root: str, files: list[FilePatch], limits: PatchLimits | None = None) -> None:
    """Apply parsed file patches to the tree at ``root``, following no link anywhere.

    Runs in the confined applier, over the workspace: every path is opened
    component by component with ``O_NOFOLLOW``, so neither a link in the tree
    nor one the patch makes can take a write outside it.
    """
    limits = limits or PatchLimits()
    root_fd = os.open(root, _DIR)
    try:
        # Read every old side first: a rename's source may be another file's target.
        staged: list[tuple[FilePatch, str, int]] = []
        for f in files:
            if f.old_path is None:
                staged.append((f, apply_hunks("", f.hunks, f.path), f.new_mode or 0o100644))
                continue
            dfd, name = _open_parent(root_fd, f.old_path, create=False)
            try:
                text, mode = _read(dfd, name, f.old_path, limits.max_file_bytes)
            finally:
                os.close(dfd)
            if stat.S_ISLNK(mode) and f.new_path is not None and not f.is_symlink and f.hunks:
                raise PatchError("does_not_apply", f"{f.old_path!r} is a link", f.old_path)
            new_text = apply_hunks(text, f.hunks, f.old_path) if f.hunks else text
            staged.append((f, new_text, f.new_mode or mode))
        for f, _text, _mode in staged:
            if f.old_path is not None and (f.new_path is None or f.new_path != f.old_path):
                dfd, name = _open_parent(root_fd, f.old_path, create=False)
                try:
                    _remove(dfd, name)
                finally:
                    os.close(dfd)
        for f, text, mode in staged:
            if f.new_path is None:
                continue
            dfd, name = _open_parent(root_fd, f.new_path, create=True)
            try:
                if f.old_path == f.new_path:
                    _remove(dfd, name)
                elif _exists(dfd, name):
                    raise PatchError("does_not_apply", f"{f.new_path!r} already exists", f.new_path)
                _write(dfd, name, text, mode, f.new_path, limits.max_file_bytes)
            finally:
                os.close(dfd)
    finally:
        os.close(root_fd)


def _exists(dir_fd: int, name: str) -> bool:
    try:
        os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return False
    return True
