"""Cross-check a pytest suite's report against what the trusted side expects (pure).

A suite that imports the candidate runs in the candidate's process, so its
report is only a claim. The trusted side collects the expected test ids from
the test files with ``ast`` (never importing them) and accepts the claim only
when it is one well-formed line, claims the exit status the zygote observed,
names every expected test, and says no watched pytest internal was replaced.
Anything else is a typed problem: tampering, an early exit, or a garbled report.
"""

from __future__ import annotations

import ast
import fnmatch
import json
import posixpath
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from graders.sandbox.syntax import parse_module

__all__ = [
    "SuiteVerdict",
    "cross_check",
    "expected_test_ids",
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


@dataclass(frozen=True, slots=True)
class SuiteVerdict:
    """What the trusted side concludes from a suite run."""

    outcomes: dict[str, str]
    passed: int
    total: int
    problems: list[tuple[Problem, str]] = field(default_factory=list)
    collection_error: str | None = None
    claimed_status: int | None = None

    @property
    def trusted(self) -> bool:
        """Whether the claim survived the cross-check (no forgery, patching or early exit)."""
        fatal = ("verdict_forgery", "framework_patching", "early_exit")
        return not any(p in fatal for p, _ in self.problems)


def _parse(raw: bytes) -> dict[str, Any] | None:
    text = raw.decode("utf-8", errors="strict") if raw else ""
    if not text.endswith("\n") or text.count("\n") != 1:
        return None
    try:
        report = json.loads(text)
    except ValueError:
        return None
    if type(report) is not dict:
        return None
    ok = (
        type(report.get("status")) is int
        and type(report.get("outcomes")) is dict
        and all(
            type(k) is str and v in ("passed", "failed", "skipped")
            for k, v in report["outcomes"].items()
        )
        and type(report.get("collected")) is int
        and type(report.get("collect_errors")) is list
        and type(report.get("patched")) is list
    )
    return report if ok else None


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


def cross_check(
    raw_report: bytes, observed_exit: int | None, expected: set[str], nonce: str
) -> SuiteVerdict:
    """Judge a suite run from its claimed report and the exit status the zygote observed."""
    blank = dict.fromkeys(sorted(expected), "missing")
    try:
        report = _parse(raw_report)
    except UnicodeDecodeError:
        report = None
    if report is None:
        problems: list[tuple[Problem, str]] = []
        if raw_report:
            problems.append(("verdict_forgery", "the suite's report is not one well-formed line"))
        elif observed_exit == 0:
            problems.append(("early_exit", "the run exited with status 0 before reporting"))
        return SuiteVerdict(blank, 0, len(expected), problems)
    problems = []
    if report.get("nonce") != nonce:
        problems.append(("verdict_forgery", "the report does not carry this run's nonce"))
    if report["status"] != observed_exit:
        problems.append(
            (
                "verdict_forgery",
                f"the report claims exit status {report['status']}, "
                f"the process exited with {observed_exit}",
            )
        )
    if report["patched"]:
        names = ", ".join(str(p) for p in report["patched"])[:300]
        problems.append(("framework_patching", f"pytest internals replaced: {names}"))
    outcomes = tally(report["outcomes"], expected)
    if any(v == "skipped" for v in outcomes.values()):
        problems.append(("test_skipping", "expected tests were skipped"))
    passed = sum(v == "passed" for v in outcomes.values())
    if report["status"] == 0 and passed < len(expected):
        problems.append(
            ("verdict_forgery", "the report claims success but expected tests did not pass")
        )
    collection_error = None
    if report["collect_errors"] or report["status"] in (2, 3, 4):
        errors = ", ".join(str(e) for e in report["collect_errors"])[:300]
        status = report["status"]
        collection_error = f"pytest could not collect the tests (status {status}): {errors}"
    return SuiteVerdict(
        outcomes, passed, len(expected), problems, collection_error, report["status"]
    )
