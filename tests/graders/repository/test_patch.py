"""The patch grammar: what parses, what applies, what is refused (pure, and on a real tree)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from arbiter.graders.repository.patch import (
    PatchError,
    PatchLimits,
    apply_hunks,
    apply_to_tree,
    extract_diff,
    parse_patch,
    protected_reason,
)

from .naive_harness import Link, make_patch

MODIFY = (
    "diff --git a/pkg/mod.py b/pkg/mod.py\n"
    "index 1111111..2222222 100644\n"
    "--- a/pkg/mod.py\n"
    "+++ b/pkg/mod.py\n"
    "@@ -1,3 +1,3 @@\n"
    " def f(x):\n"
    "-    return x\n"
    "+    return x + 1\n"
    " \n"
)


def test_a_modification_parses_with_its_counts() -> None:
    (f,) = parse_patch(MODIFY)
    assert (f.path, f.kind, f.counts()) == ("pkg/mod.py", "modify", (1, 1))
    assert f.added_lines == ["    return x + 1"]


def test_a_fenced_diff_is_found_and_prose_around_it_ignored() -> None:
    response = f"Here is the fix:\n\n```diff\n{MODIFY}```\nThat should do it."
    assert parse_patch(extract_diff(response))[0].path == "pkg/mod.py"


@pytest.mark.parametrize(
    ("before", "hunk_text", "after"),
    [
        ("a\nb\nc\n", "@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n", "a\nB\nc\n"),
        # The hunk's context found at another line, as git apply does.
        ("x\ny\na\nb\nc\n", "@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n", "x\ny\na\nB\nc\n"),
        ("a\nb", "@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+b\n", "a\nb\n"),
        ("", "@@ -0,0 +1,2 @@\n+new\n+file\n", "new\nfile\n"),
    ],
)
def test_hunks_apply_as_git_applies_them(before: str, hunk_text: str, after: str) -> None:
    (f,) = parse_patch(f"--- a/f.txt\n+++ b/f.txt\n{hunk_text}")
    assert apply_hunks(before, f.hunks) == after


def test_a_hunk_whose_context_is_absent_does_not_apply() -> None:
    (f,) = parse_patch(MODIFY)
    with pytest.raises(PatchError) as e:
        apply_hunks("def g(y):\n    return y\n\n", f.hunks, f.path)
    assert e.value.kind == "does_not_apply"


@pytest.mark.parametrize(
    "path", ["../outside.py", "/etc/passwd", "a/../../b.py", "a//b.py", ".git/config", "x/./y.py"]
)
def test_a_path_out_of_the_tree_is_refused(path: str) -> None:
    patch = (
        f"diff --git a/{path} b/{path}\nnew file mode 100644\n"
        f"--- /dev/null\n+++ b/{path}\n@@ -0,0 +1 @@\n+x\n"
    )
    with pytest.raises(PatchError) as e:
        parse_patch(patch)
    assert e.value.kind == "refused"


@pytest.mark.parametrize("target", ["/etc", "../../..", "a/../../.."])
def test_a_link_pointing_out_is_refused(target: str) -> None:
    with pytest.raises(PatchError) as e:
        parse_patch(make_patch(None, {"pkg/link": Link(target)}))
    assert e.value.kind == "refused"


def test_limits_refuse_a_huge_patch_and_binary_patches() -> None:
    big = make_patch(None, {"big.txt": "x\n" * 600_000})
    with pytest.raises(PatchError, match="larger than"):
        parse_patch(big, PatchLimits(max_patch_bytes=1 << 20))
    binary = "diff --git a/b.bin b/b.bin\nnew file mode 100644\nGIT binary patch\nliteral 3\nabc\n"
    with pytest.raises(PatchError, match="binary"):
        parse_patch(binary)


@pytest.mark.parametrize(
    ("path", "protected"),
    [
        ("conftest.py", True),
        ("tests/deep/conftest.py", True),
        ("pytest.ini", True),
        ("setup.cfg", True),
        ("pyproject.toml", True),
        ("tox.ini", True),
        ("sitecustomize.py", True),
        ("usercustomize.py", True),
        ("zz.pth", True),
        ("pkg.egg-info/entry_points.txt", True),
        ("pkg/__pycache__/mod.cpython-311.pyc", True),
        ("_pytest/python.py", True),
        ("pkg/mod.py", False),
        ("tests/test_mod.py", False),
    ],
)
def test_what_configures_the_run_is_protected(path: str, protected: bool) -> None:
    assert (protected_reason(path) is not None) == protected


def _tree(tmp_path: Path) -> Path:
    root = tmp_path / "tree"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "mod.py").write_text("def f(x):\n    return x\n\n")
    (root / "pkg" / "old.py").write_text("gone = True\n")
    return root


def test_a_tree_takes_creations_deletions_renames_modes_and_links(tmp_path: Path) -> None:
    root = _tree(tmp_path)
    patch = (
        MODIFY
        + make_patch(
            root, {"pkg/old.py": None, "pkg/new.py": "made = 1\n", "pkg/alias": Link("mod.py")}
        )
        + "diff --git a/pkg/new2.py b/pkg/renamed.py\nsimilarity index 100%\n"
        "rename from pkg/new2.py\nrename to pkg/renamed.py\n"
    )
    (root / "pkg" / "new2.py").write_text("r = 2\n")
    apply_to_tree(str(root), parse_patch(patch))
    assert (root / "pkg" / "mod.py").read_text() == "def f(x):\n    return x + 1\n\n"
    assert not (root / "pkg" / "old.py").exists()
    assert (root / "pkg" / "new.py").read_text() == "made = 1\n"
    assert os.readlink(root / "pkg" / "alias") == "mod.py"
    assert (root / "pkg" / "renamed.py").read_text() == "r = 2\n"
    assert not (root / "pkg" / "new2.py").exists()


def test_a_write_through_a_link_in_the_tree_is_refused(tmp_path: Path) -> None:
    root = _tree(tmp_path)
    outside = tmp_path / "outside"
    outside.mkdir()
    (root / "escape").symlink_to(outside)
    with pytest.raises(PatchError) as e:
        apply_to_tree(str(root), parse_patch(make_patch(root, {"escape/planted.py": "x = 1\n"})))
    assert e.value.kind == "refused"
    assert list(outside.iterdir()) == []


def test_creating_over_an_existing_file_does_not_apply(tmp_path: Path) -> None:
    root = _tree(tmp_path)
    patch = make_patch(None, {"pkg/mod.py": "clobbered = True\n"})
    with pytest.raises(PatchError) as e:
        apply_to_tree(str(root), parse_patch(patch))
    assert e.value.kind == "does_not_apply"
