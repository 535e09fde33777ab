"""Canary flips: where one expected value of a task's tests can be changed, and the change.

One module, one job: finding flips. Each task kind's reader answers the same question
(which literal is an expected value) and they share the rule for changing a literal by
its type.

A canary (:mod:`arbiter.canaries`) is a task's twin with one expected value flipped;
this module finds the candidate flips of a task's tests, in order, and writes each
flipped test text (never running anything).

Python tests are read with :mod:`ast`: the literal an assert compares the
tested call's result with (``assert f(x) == LIT``, ``LIT == f(x)``,
``candidate(...) is True``), then the first literal of an expected side that
is no literal itself (``tuple([6, 5])``) or one the result is measured against
(``abs(f(x) - LIT) < tol``), then a bare ``assert f(x)`` negated; the literal
is changed by its type (an int plus one, a float plus one, a string with a
character more, a bool negated, a list or tuple one item shorter, ``None`` made
0) and spliced back, the rest of the text unchanged. A ``stdin_stdout`` case's
expected output gets its first number plus one, or its first word a character
more. A ``test_program`` in another language is read lexically, with the
language's own mask (:func:`arbiter.graders.languages.mutation.masked`): a
number, string, character or boolean literal in a statement that calls the
function under test (the entry point, or a function the prompt declares),
outside that call's arguments (so an expected value, not an input), a
tolerance last; then a call asserted as a truth negated.
"""

from __future__ import annotations

import ast
import builtins
import contextlib
import io
import math
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from arbiter.graders import languages
from arbiter.graders.languages import c_family, mutation
from arbiter.graders.languages.base import ProgramParts, UnsupportedTask
from arbiter.graders.sandbox.syntax import parse_expression, parse_module
from arbiter.graders.types import (
    IOCase,
    TaskSpec,
)

__all__ = ["Flip", "flips"]


@dataclass(frozen=True)
class Flip:
    """One expected value changed in one test: the task's whole tests with the change made."""

    #: The test, as the grader's feedback names it (``line N``, ``case N``, a pytest id).
    test: str
    #: The change itself: ``before -> after``.
    change: str
    tests: str | list[str] | list[IOCase]


# -- Python: an assert's expected literal, with ast ----------------------------------------


class _NoFlip(Exception):
    """A literal this module does not change (a complex number, an infinity)."""


def _flipped(value: Any) -> Any:
    """The value changed by its type (see the module's docstring)."""
    if isinstance(value, bool):
        return not value
    if value is None:
        return 0
    if isinstance(value, int):
        return value + 1
    if isinstance(value, float):
        if not math.isfinite(value):
            raise _NoFlip
        return value + 1.0
    if isinstance(value, str):
        return value + "x"
    if isinstance(value, bytes):
        return value + b"x"
    if isinstance(value, list):
        return value[:-1] if value else [0]
    if isinstance(value, tuple):
        return value[:-1] if value else (0,)
    if isinstance(value, (set, frozenset)):
        if not value:
            return {0}
        dropped = sorted(value, key=repr)[-1]
        return type(value)(v for v in value if v != dropped) or set()
    if isinstance(value, dict):
        return dict(list(value.items())[:-1]) if value else {0: 0}
    raise _NoFlip


def _literal(node: ast.AST) -> tuple[bool, Any]:
    """Whether ``node`` is a literal, and its value."""
    try:
        return True, ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return False, None


def _calls(node: ast.AST, names: frozenset[str] | None) -> bool:
    """Whether ``node`` calls the function under test (any function, when ``names`` is None)."""
    for n in ast.walk(node):
        if isinstance(n, ast.Call):
            if names is None:
                return True
            func = n.func
            name = (
                func.id
                if isinstance(func, ast.Name)
                else func.attr
                if isinstance(func, ast.Attribute)
                else None
            )
            if name in names:
                return True
    return False


def _first_literal(node: ast.expr) -> ast.expr | None:
    """The outermost literal in ``node``, the first in the source's order."""
    if _literal(node)[0]:
        return node
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.expr):
            found = _first_literal(child)
            if found is not None:
                return found
    return None


def _rendered(value: Any) -> str:
    """``value`` as Python source that evaluates back to it."""
    if isinstance(value, (set, frozenset)) and not value:
        return "set()"
    text = repr(value)
    try:
        ok, back = _literal(parse_expression(text).body)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        raise _NoFlip from None
    if not ok or back != value or type(back) is not type(value):
        raise _NoFlip
    return text


def _literal_sites(test: ast.expr, names: frozenset[str] | None) -> Iterator[tuple[int, ast.expr]]:
    """(priority, literal node) of an assert's test, the expected value first.

    ``assert f(x) == LIT`` (or ``LIT == f(x)``, ``f(x) is True``): the literal;
    ``f(x) == tuple([1, 2])``: the first literal of the side that does not call
    the function under test; ``abs(f(x) - LIT) < tol``: the literal the result is
    measured against.
    """
    if not isinstance(test, ast.Compare) or len(test.ops) != 1:
        return
    left, right = test.left, test.comparators[0]
    if isinstance(test.ops[0], (ast.Eq, ast.Is)):
        for mine, other in ((right, left), (left, right)):
            if _calls(other, names) and not _calls(mine, names):
                site = _first_literal(mine)
                if site is not None:
                    yield (0 if site is mine else 1), site
                    return
    # A measure of the result against a literal: abs(f(x) - LIT) < tol.
    for side in (left, right):
        for node in ast.walk(side):
            if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Sub, ast.Add)):
                for mine, other in ((node.right, node.left), (node.left, node.right)):
                    ok, value = _literal(mine)
                    if ok and isinstance(value, (int, float)) and _calls(other, names):
                        yield 1, mine


class _Source:
    """A text's lines, to turn ast's (line, UTF-8 column) positions into offsets."""

    def __init__(self, text: str) -> None:
        # Lines as Python's tokenizer counts them: ended by \n, \r\n or \r alone (a form
        # feed or a Unicode line separator, which str.splitlines ends lines at, is not one).
        self.lines = io.StringIO(text, newline="").readlines()
        self.starts = [0]
        for line in self.lines:
            self.starts.append(self.starts[-1] + len(line))

    def offset(self, lineno: int, col: int) -> int:
        line = self.lines[lineno - 1] if lineno - 1 < len(self.lines) else ""
        return self.starts[lineno - 1] + len(line.encode("utf-8")[:col].decode("utf-8", "replace"))

    def span(self, node: ast.AST) -> tuple[int, int]:
        start = self.offset(node.lineno, node.col_offset)  # type: ignore[attr-defined]
        end = self.offset(node.end_lineno, node.end_col_offset)  # type: ignore[attr-defined]
        return start, end


def _tested_names(tree: ast.Module, task: TaskSpec) -> frozenset[str] | None:
    """The names the tests call the function under test by (None: unknown, any call)."""
    names: set[str] = set()
    if task.entry_point:
        names |= {task.entry_point, "candidate"}
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name == "check":
            names |= {a.arg for a in node.args.args}
        if isinstance(node, ast.ImportFrom) and node.module in ("solution", task.entry_point):
            names |= {alias.asname or alias.name for alias in node.names}
    if not names:
        # No name given (an assert list without an entry point): the functions the tests
        # call that Python does not define.
        names = {
            n.func.id
            for n in ast.walk(tree)
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)
        } - set(dir(builtins))
    return frozenset(names) or None


def _assert_flips(text: str, task: TaskSpec) -> Iterator[tuple[int, int, ast.Assert, str, str]]:
    """(priority, position, assert, new text, change) for each flip of ``text``'s asserts."""
    try:
        tree = parse_module(text)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return
    names = _tested_names(tree, task)
    source = _Source(text)
    asserts = sorted(
        (n for n in ast.walk(tree) if isinstance(n, ast.Assert)),
        key=lambda n: (n.lineno, n.col_offset),
    )
    for node in asserts:
        for priority, site in _literal_sites(node.test, names):
            try:
                after = _rendered(_flipped(_literal(site)[1]))
            except _NoFlip:
                continue
            start, end = source.span(site)
            before = text[start:end]
            yield priority, start, node, text[:start] + after + text[end:], f"{before} -> {after}"
        if _calls(node.test, names):
            # A bare truth: its expected value is True (or, under ``not``, False).
            start, end = source.span(node.test)
            inner = node.test
            if isinstance(inner, ast.UnaryOp) and isinstance(inner.op, ast.Not):
                operand = source.span(inner.operand)
                new = text[operand[0] : operand[1]]
                change = "not (...) -> (...)"
            elif isinstance(inner, ast.Compare):
                continue  # a comparison with no literal to flip: its truth is not the value
            else:
                new = f"not ({text[start:end]})"
                change = "(...) -> not (...)"
            yield 2, start, node, text[:start] + new + text[end:], change


def _within(node: ast.stmt, scope: ast.stmt) -> bool:
    return scope.lineno <= node.lineno <= (scope.end_lineno or scope.lineno)


def _pytest_id(tree: ast.Module, node: ast.Assert, file: str) -> str:
    """The pytest node id of the test the assert is in (its line when in no test)."""
    functions = (ast.FunctionDef, ast.AsyncFunctionDef)
    for top in tree.body:
        if isinstance(top, functions) and top.name.startswith("test") and _within(node, top):
            return f"{file}::{top.name}"
        if isinstance(top, ast.ClassDef) and top.name.startswith("Test"):
            for item in top.body:
                if isinstance(item, functions) and _within(node, item):
                    return f"{file}::{top.name}::{item.name}"
    return f"line {node.lineno}"


def _python_flips(task: TaskSpec) -> list[Flip]:
    tests = task.tests
    found: list[tuple[int, int, int, Flip]] = []
    if isinstance(tests, str):
        texts: list[str] = [tests]
    elif all(isinstance(t, str) for t in tests):
        texts = [str(t) for t in tests]
    else:
        return []
    for at, text in enumerate(texts):
        tree: ast.Module | None = None
        for priority, start, node, new, change in _assert_flips(text, task):
            if task.kind == "pytest":
                if tree is None:
                    tree = parse_module(text)
                file = "test_solution.py" if isinstance(tests, str) else f"test_{at}.py"
                test = _pytest_id(tree, node, file)
            elif isinstance(tests, str):
                test = f"line {node.lineno}"
            else:
                test = f"line {at + 1}"  # an assert list: the grader numbers its items
            flipped: str | list[str] = (
                new if isinstance(tests, str) else [*texts[:at], new, *texts[at + 1 :]]
            )
            found.append((priority, at, start, Flip(test, change, flipped)))
    found.sort(key=lambda f: f[:3])
    return [f for *_, f in found]


# -- stdin/stdout: a case's expected output -------------------------------------------------

_LEADING_NUMBER = re.compile(r"^([+-]?)(\d+)((?:\.\d*)?(?:[eE][+-]?\d+)?)$")


def _replaced(output: str, word: re.Match[str], after: str) -> tuple[str, str]:
    return output[: word.start()] + after + output[word.end() :], f"{word.group()} -> {after}"


def _output_flip(output: str) -> tuple[str, str]:
    """The output with its first number plus one (else its first word longer), and the change."""
    words = list(re.finditer(r"\S+", output))
    for word in words:
        number = _LEADING_NUMBER.match(word.group())
        if number is not None:
            sign, digits, rest = number.groups()
            return _replaced(output, word, f"{sign}{int(digits) + 1}{rest}")
    if words:
        return _replaced(output, words[0], words[0].group() + "x")
    return "0\n", f"{output!r} -> '0\\n'"


def _stdio_flips(task: TaskSpec) -> list[Flip]:
    tests = task.tests
    if not isinstance(tests, list) or not all(isinstance(t, IOCase) for t in tests):
        return []
    cases = [t for t in tests if isinstance(t, IOCase)]
    out = []
    for at, case in enumerate(cases):
        output, change = _output_flip(case.output)
        new = [*cases[:at], IOCase(input=case.input, output=output), *cases[at + 1 :]]
        out.append(Flip(f"case {at}", change, new))
    return out


# -- test programs in other languages: a literal in an assertion, lexically ----------------

_NUMBER = re.compile(r"(?<![\w.])(\d+)(\.\d*)?([eE][+-]?\d+)?([A-Za-z_]\w*)?(?![\w.])")
_BOOLEAN = re.compile(r"(?<![\w.])(true|false)(?!\w)")


def _statements(masked: str) -> list[tuple[int, int]]:
    """Spans of the statements of masked code: cut at ``;``, braces and line ends outside parens."""
    spans = []
    depth = 0
    start = 0
    for i, c in enumerate(masked):
        if c in "([":
            depth += 1
        elif c in ")]":
            depth = max(0, depth - 1)
        elif depth == 0 and c in ";{}\n":
            if i > start:
                spans.append((start, i))
            start = i + 1
    if start < len(masked):
        spans.append((start, len(masked)))
    return spans


def _tolerance(number: re.Match[str]) -> bool:
    """A number that reads as a tolerance (``1e-6``, ``0.0001``): flipped last."""
    if number.group(3):
        return True
    if number.group(2):
        value = float(number.group(1) + number.group(2))
        return 0 < value < 1e-3
    return False


#: Calls whose arguments are truths the tests assert (``assert (f(x))``, ``assert!(f(x))``,
#: ``console.assert(f(x))``, Java's ``Arrays.asList(s.f(x), ...)`` of HumanEvalPack, C++'s
#: ``not(f(x))``).
_ASSERTING = frozenset({"assert", "debug_assert", "assertTrue", "assertFalse", "asList", "not"})


def _asserted(masked: str, at: int) -> bool:
    """Whether the expression at ``at`` is an argument of an asserting call."""
    depth = 0
    for i in range(at - 1, -1, -1):
        if masked[i] == ")":
            depth += 1
        elif masked[i] == "(":
            if depth == 0:
                name = re.search(r"([\w.]+)!?\s*$", masked[:i])
                return name is not None and name.group(1).rsplit(".", 1)[-1] in _ASSERTING
            depth -= 1
    return False


def _program_sites(
    language: str, tests: str, names: Sequence[str]
) -> list[tuple[int, int, int, str, str]]:
    """(priority, start, end, replacement, change) of each value a test program expects.

    Literals first, tolerances after them, then a bare truth negated (``f(x)``
    where a boolean is asserted: ``!f(x)``, and ``!f(x)``: ``f(x)``).
    """
    masked = mutation.masked(language, tests)
    call = re.compile(rf"(?<![\w$])(?:{'|'.join(re.escape(n) for n in names)})\s*\(")
    sites: list[tuple[int, int, int, str, str]] = []

    def add(priority: int, at: int, end: int, after: str, change: str = "") -> None:
        sites.append((priority, at, end, after, change or f"{tests[at:end]} -> {after}"))

    for start, end in _statements(masked):
        statement = masked[start:end]
        inputs = []  # each call's opening and closing parenthesis
        for m in call.finditer(statement):
            opened = start + m.end() - 1
            past = c_family.closing(masked, opened)
            inputs.append((opened, len(masked) if past is None else past - 1))
        if not inputs:
            continue

        def an_input(at: int, inputs: list[tuple[int, int]] = inputs) -> bool:
            return any(a <= at <= b for a, b in inputs)

        for m in _NUMBER.finditer(statement):
            at = start + m.start()
            if an_input(at) or (m.group(1) == "0" and (m.group(4) or "")[:1] in ("x", "X", "b")):
                continue
            after = str(int(m.group(1)) + 1) + "".join(g or "" for g in m.groups()[1:])
            add(1 if _tolerance(m) else 0, at, start + m.end(), after)
        for m in _BOOLEAN.finditer(statement):
            at = start + m.start()
            if not an_input(at):
                add(0, at, start + m.end(), "false" if m.group(1) == "true" else "true")
        for quote in re.finditer(r"[\"'`]", statement):
            at = start + quote.start()
            close = masked.find(quote.group(), at + 1)
            if close < 0 or an_input(at) or masked[at + 1 : close].strip():
                continue  # not a literal's opening quote (its contents are blanked)
            content = tests[at + 1 : close]
            if quote.group() == "'" and language != "javascript":
                # A character literal: another letter or digit of the same kind.
                if len(content) == 1 and content.isalnum():
                    other = {"z": "a", "Z": "A", "9": "0"}.get(content, chr(ord(content) + 1))
                    add(0, at, close + 1, f"'{other}'")
            else:
                add(0, at, close + 1, tests[at:close] + "x" + quote.group())  # one more character
        for opened, closed in inputs:
            # The call as a whole argument (of assert, asList, assert!): a truth it expects.
            head = opened
            while head > 0 and (masked[head - 1].isalnum() or masked[head - 1] in "_.$:"):
                head -= 1
            before = masked[:head].rstrip()
            after_call = masked[closed + 1 :].lstrip()[:1]
            called = tests[head:opened] + "(...)"
            if before.endswith("!") and not before.endswith("!!"):
                add(2, len(before) - 1, head, "", f"!{called} -> {called}")
            elif before[-1:] in ("(", ",") and after_call in (")", ",") and _asserted(masked, head):
                add(2, head, head, "!", f"{called} -> !{called}")
    # Each site once (a quote that closes one literal is scanned as opening another).
    seen: set[int] = set()
    unique = []
    for site in sorted(sites, key=lambda s: (s[0], s[1])):
        if site[1] not in seen:
            seen.add(site[1])
            unique.append(site)
    return unique


def _function_names(task: TaskSpec, prompt: str) -> list[str]:
    """The task's entry point and the functions its prompt declares (the tests call them)."""
    names = [task.entry_point] if task.entry_point else []
    parts = ProgramParts(
        prompt=prompt,
        code=prompt,
        tests=str(task.tests),
        setup_code=task.setup_code or "",
        entry_point=task.entry_point,
    )
    with contextlib.suppress(UnsupportedTask):
        names += [d.name for d in languages.language(task.language).declared(parts)]
    return list(dict.fromkeys(n for n in names if n))


def _program_flips(task: TaskSpec, prompt: str) -> list[Flip]:
    tests = task.tests
    if not isinstance(tests, str) or task.language not in mutation.LANGUAGES:
        return []
    names = _function_names(task, prompt)
    if not names:
        return []
    out = []
    for _, start, end, replacement, change in _program_sites(task.language, tests, names):
        line = tests.count("\n", 0, start) + 1
        out.append(Flip(f"line {line}", change, tests[:start] + replacement + tests[end:]))
    return out


def flips(task: TaskSpec, prompt: str = "") -> list[Flip]:
    """Every candidate flip of ``task``'s tests, the likeliest expected value first (pure).

    ``prompt``: the sample's prompt, where a ``test_program`` task's function is
    declared (the tests call it by that name, whatever the entry point says).
    """
    if task.kind in ("python_function", "pytest"):
        return _python_flips(task)
    if task.kind == "stdin_stdout":
        return _stdio_flips(task)
    if task.kind == "test_program":
        return _program_flips(task, prompt)
    return []
