"""What the trusted side knows of a pytest suite before and after it runs (pure).

The expected test ids come from the test files with ``ast`` (never importing
them); :func:`tally` turns the outcomes the trusted suite host recorded into
one per expected test; :func:`tampering_signals` reads a candidate's source for
the moves that attack a test run (exits, introspection, descriptor writes).
"""

from __future__ import annotations

import ast
import fnmatch
import posixpath
import symtable
from collections.abc import Mapping
from typing import Literal

from arbiter.graders.sandbox.classes import class_names
from arbiter.graders.sandbox.syntax import parse_module

__all__ = [
    "declared_names",
    "expected_test_ids",
    "suite_classes",
    "tally",
    "tampering_signals",
]

_TEST_FILES = ("test_*.py", "*_test.py")

Problem = Literal["verdict_forgery", "framework_patching", "early_exit", "test_skipping"]


_EXITS = {("os", "_exit"), ("sys", "exit"), ("os", "abort"), ("os", "kill")}
_INTROSPECTION = {
    ("sys", "_getframe"),
    ("gc", "get_objects"),
    ("gc", "get_referrers"),
    ("inspect", "stack"),
    ("inspect", "currentframe"),
}
_DESCRIPTOR_WRITERS = {("os", "write"), ("os", "fdopen"), ("os", "dup2")}

Signal = tuple[Problem | Literal["introspection"], str, int]


def _dotted(node: ast.AST) -> tuple[str, str] | None:
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
        return node.value.id, node.attr
    return None


def _pytest_aliases(tree: ast.AST) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(
                (a.asname or a.name).split(".")[0]
                for a in node.names
                if a.name.split(".")[0] in ("pytest", "_pytest")
            )
    return names


def tampering_signals(code: str) -> list[Signal]:
    """Find constructs in the candidate that only make sense against the test runner (pure).

    Importing ``_pytest`` or assigning into ``pytest``, writing to inherited
    descriptors, ending the process, walking frames or the heap: in a module
    that a test suite imports, each is a reason to distrust the suite's report.
    """
    try:
        tree = parse_module(code)
    except SyntaxError:
        return []
    out: list[Signal] = []
    aliases = _pytest_aliases(tree)
    for node in ast.walk(tree):
        line = getattr(node, "lineno", 0)
        if isinstance(node, ast.Import | ast.ImportFrom):
            modules = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            if isinstance(node, ast.ImportFrom) and node.module:
                modules.append(node.module)
            out += [
                ("framework_patching", f"imports {m}", line)
                for m in modules
                if m.split(".")[0] == "_pytest"
            ]
        elif isinstance(node, ast.Assign | ast.AugAssign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                base = target
                while isinstance(base, ast.Attribute):
                    base = base.value
                into_pytest = isinstance(base, ast.Name) and base.id in aliases
                if isinstance(target, ast.Attribute) and into_pytest:
                    out.append(("framework_patching", "assigns into pytest", line))
        elif isinstance(node, ast.Call):
            name = _dotted(node.func)
            first = node.args[0] if node.args else None
            if name in _EXITS:
                out.append(("early_exit", f"calls {name[0]}.{name[1]}", line))
            elif name in _INTROSPECTION:
                out.append(("introspection", f"calls {name[0]}.{name[1]}", line))
            elif (name in _DESCRIPTOR_WRITERS or _is_open(node.func)) and (
                isinstance(first, ast.Constant) and type(first.value) is int
            ):
                out.append(("verdict_forgery", f"writes to descriptor {first.value}", line))
    return out


def _is_open(func: ast.AST) -> bool:
    return isinstance(func, ast.Name) and func.id == "open"


def expected_test_ids(files: Mapping[str, str]) -> set[str]:
    """Return the node ids (without parameters) pytest should collect from ``files``.

    Keys are paths relative to the tests directory; files that do not parse or
    do not match pytest's default file patterns contribute nothing.
    """
    out: set[str] = set()
    for path, text in files.items():
        if not any(fnmatch.fnmatch(posixpath.basename(path), p) for p in _TEST_FILES):
            continue
        try:
            tree = parse_module(text)
        except SyntaxError:
            continue
        for node in tree.body:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name.startswith(
                "test"
            ):
                out.add(f"{path}::{node.name}")
            elif isinstance(node, ast.ClassDef) and node.name.startswith("Test"):
                has_init = any(
                    isinstance(m, ast.FunctionDef) and m.name == "__init__" for m in node.body
                )
                if has_init:
                    continue  # pytest does not collect classes with __init__
                for m in node.body:
                    if isinstance(m, ast.FunctionDef | ast.AsyncFunctionDef) and m.name.startswith(
                        "test"
                    ):
                        out.add(f"{path}::{node.name}::{m.name}")
    return out


def tally(reported: Mapping[str, str], expected: set[str]) -> dict[str, str]:
    """Return one outcome per expected test id from outcomes reported per node id (pure).

    A test passes only if every parametrized variant of it passed; one that was
    never reported is ``missing``; a failed variant makes it ``failed``.
    """
    outcomes: dict[str, str] = {}
    for test_id in sorted(expected):
        variants = [v for k, v in reported.items() if k.split("[", 1)[0] == test_id]
        if not variants:
            outcomes[test_id] = "missing"
        elif all(v == "passed" for v in variants):
            outcomes[test_id] = "passed"
        elif any(v == "failed" for v in variants):
            outcomes[test_id] = "failed"
        else:
            outcomes[test_id] = "skipped"
    return outcomes


_BUILTINS = frozenset(dir(__import__("builtins")))


def _free_globals(source: str) -> set[str]:
    """Return the global names ``source`` reads (in any scope) that its module never binds."""
    try:
        top = symtable.symtable(source, "<tests>", "exec")
    except (SyntaxError, ValueError):
        return set()
    bound = {s.get_name() for s in top.get_symbols() if s.is_assigned() or s.is_imported()}
    read: set[str] = set()
    tables = [top]
    while tables:
        table = tables.pop()
        tables.extend(table.get_children())
        for symbol in table.get_symbols():
            if not symbol.is_referenced():
                continue
            if table is top or symbol.is_global():
                read.add(symbol.get_name())
    return read - bound


def declared_names(files: Mapping[str, str], module: str) -> list[str]:
    """Return the names of the candidate's ``module`` that the test files use (pure).

    What the tests name explicitly: ``from module import a, b``, and
    ``module.x`` (or ``alias.x``) after ``import module [as alias]``. A star
    import contributes the names its file reads and never binds, builtins
    aside, so that ``from module import *`` can neither replace a test's own
    imports (``math``, ``pytest``) nor its builtins (``sorted``, ``abs``).
    """
    names: set[str] = set()
    for source in files.values():
        try:
            tree = parse_module(source)
        except SyntaxError:
            continue
        aliases: set[str] = set()
        star = False
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module == module and node.level == 0:
                for alias in node.names:
                    if alias.name == "*":
                        star = True
                    else:
                        names.add(alias.name)
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name == module:
                        aliases.add(alias.asname or alias.name)
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id in aliases
            ):
                names.add(node.attr)
        if star:
            names.update(_free_globals(source) - _BUILTINS)
    return sorted(n for n in names if n.isidentifier() and not n.startswith("__"))


def suite_classes(
    files: Mapping[str, str],
    module: str,
    declared: list[str],
    shown: tuple[str | None, ...] = (),
    explicit: list[str] | None = None,
) -> frozenset[str]:
    """Return the declared names the test files use as classes (see graders.sandbox.classes)."""
    trees: list[ast.AST] = []
    aliases: dict[str, str] = {}
    for source in files.values():
        try:
            tree = parse_module(source)
        except SyntaxError:
            continue
        trees.append(tree)
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module == module and node.level == 0:
                aliases.update((a.asname, a.name) for a in node.names if a.asname)
    return class_names(declared, shown, explicit, trees, aliases)
