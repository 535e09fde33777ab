"""Seeded, deterministic mutants of one function body at a time (pure).

A mutant changes one token inside one function: a comparison (``<`` for
``<=``, ``==`` for ``!=``, ``in`` for ``not in``), an arithmetic ``+`` or
``-``, ``and`` for ``or``, an integer literal off by one, or a ``not``
dropped. The edit is spliced into the original text at the token's place, so
the rest of the file (its formatting, its comments) is untouched and the gold
patch, the reverse diff, is one line. Which sites of a function are tried, in
which order, follows from the seed and the function's name alone.
"""

from __future__ import annotations

import ast
import difflib
import hashlib
import random
import re
from dataclasses import dataclass

from arbiter.graders.sandbox.syntax import parse_module

__all__ = ["Mutant", "mutants", "unified_diff"]

_COMPARE_SWAP = {
    ast.Lt: ("<", "<="),
    ast.LtE: ("<=", "<"),
    ast.Gt: (">", ">="),
    ast.GtE: (">=", ">"),
    ast.Eq: ("==", "!="),
    ast.NotEq: ("!=", "=="),
    ast.In: ("in", "not in"),
    ast.NotIn: ("not in", "in"),
    ast.Is: ("is", "is not"),
    ast.IsNot: ("is not", "is"),
}
_BINOP_SWAP = {ast.Add: ("+", "-"), ast.Sub: ("-", "+")}
_BOOL_SWAP = {ast.And: ("and", "or"), ast.Or: ("or", "and")}
_GAP = re.compile(r"^[\s()\\]*$")


@dataclass(frozen=True)
class Mutant:
    """One mutant: where it is, what it did, and the whole mutated file."""

    path: str
    function: str
    line: int
    operator: str
    original: str
    mutated: str


class _Offsets:
    """Turns ast's (line, UTF-8 byte column) into string indices."""

    def __init__(self, source: str) -> None:
        self.lines = source.splitlines(keepends=True)
        self.starts = [0]
        for line in self.lines:
            self.starts.append(self.starts[-1] + len(line))

    def index(self, line: int, col: int) -> int:
        text = self.lines[line - 1] if line - 1 < len(self.lines) else ""
        return self.starts[line - 1] + len(text.encode("utf-8")[:col].decode("utf-8", "replace"))


def _span(off: _Offsets, node: ast.AST) -> tuple[int, int]:
    return (
        off.index(node.lineno, node.col_offset),  # type: ignore[attr-defined]
        off.index(node.end_lineno, node.end_col_offset),  # type: ignore[attr-defined]
    )


def _gap_site(source: str, start: int, end: int, old: str, new: str) -> tuple[int, int, str] | None:
    """The one place ``old`` stands between two operands, if nothing else does."""
    gap = source[start:end]
    pattern = r"\s+".join(re.escape(w) for w in old.split())
    found = list(re.finditer(rf"(?<![\w=<>!]){pattern}(?![\w=<>])", gap))
    if len(found) != 1:
        return None
    m = found[0]
    if not (_GAP.match(gap[: m.start()]) and _GAP.match(gap[m.end() :])):
        return None
    return start + m.start(), start + m.end(), new


#: The wider set's extra operators (``wide=True``): what task lint needs to reach
#: 20 mutants of a ten-line function. Repository tasks keep the classic set.
_WIDE_BINOP_SWAP: dict[type[ast.operator], list[tuple[str, str]]] = {
    ast.Add: [("+", "*")],
    ast.Sub: [("-", "*")],
    ast.Mult: [("*", "/"), ("*", "+")],
    ast.Div: [("/", "*"), ("/", "//")],
    ast.FloorDiv: [("//", "/"), ("//", "*")],
    ast.Mod: [("%", "//"), ("%", "*")],
    ast.Pow: [("**", "*")],
}
#: Each comparison to the others of its family (the classic set swaps to one of them).
_WIDE_COMPARE: dict[type[ast.cmpop], tuple[str, list[str]]] = {
    ast.Lt: ("<", [">", "==", "!="]),
    ast.LtE: ("<=", [">=", "==", "!="]),
    ast.Gt: (">", ["<", "==", "!="]),
    ast.GtE: (">=", ["<=", "==", "!="]),
    ast.Eq: ("==", ["<", ">"]),
    ast.NotEq: ("!=", ["<", ">"]),
}
_WIDE_CALL_SWAP = {"min": "max", "max": "min", "any": "all", "all": "any"}
_WIDE_AUG_SWAP = {ast.Add: ("+=", "-="), ast.Sub: ("-=", "+="), ast.Mult: ("*=", "+=")}


def _wide_sites(source: str, off: _Offsets, node: ast.AST) -> list[tuple[int, int, str, str, int]]:
    """The wider set's places in one node: more operators, returns, conditions, loops."""
    out: list[tuple[int, int, str, str, int]] = []
    line = getattr(node, "lineno", 0)
    if isinstance(node, ast.BinOp) and type(node.op) in _WIDE_BINOP_SWAP:
        for swap in _WIDE_BINOP_SWAP[type(node.op)]:
            left, right = _span(off, node.left)[1], _span(off, node.right)[0]
            site = _gap_site(source, left, right, *swap)
            if site:
                out.append((*site, f"arithmetic {swap[0]} -> {swap[1]}", line))
    elif isinstance(node, ast.Compare):
        operands = [node.left, *node.comparators]
        for op, left_node, right_node in zip(node.ops, operands, operands[1:], strict=False):
            if type(op) not in _WIDE_COMPARE:
                continue
            old, news = _WIDE_COMPARE[type(op)]
            for new in news:
                left, right = _span(off, left_node)[1], _span(off, right_node)[0]
                site = _gap_site(source, left, right, old, new)
                if site:
                    out.append((*site, f"compare {old} -> {new}", line))
    elif isinstance(node, ast.Constant) and type(node.value) is float:
        start, end = _span(off, node)
        if re.fullmatch(r"[0-9.eE+-]+", source[start:end]):
            new = "0.0" if node.value != 0 else "1.0"
            out.append((start, end, new, f"constant {source[start:end]} -> {new}", line))
    elif isinstance(node, ast.AugAssign) and type(node.op) in _WIDE_AUG_SWAP:
        swap = _WIDE_AUG_SWAP[type(node.op)]
        site = _gap_site(source, _span(off, node.target)[1], _span(off, node.value)[0], *swap)
        if site:
            out.append((*site, f"assignment {swap[0]} -> {swap[1]}", line))
    elif isinstance(node, ast.Constant) and type(node.value) is int and 0 <= node.value < 10_000:
        start, end = _span(off, node)
        if source[start:end].isdigit():
            for new in (str(node.value - 1), "0") if node.value > 1 else ("-1",):
                out.append((start, end, new, f"constant {node.value} -> {new}", line))
    elif isinstance(node, ast.Constant) and type(node.value) is bool:
        start, end = _span(off, node)
        new = str(not node.value)
        if source[start:end] in ("True", "False"):
            out.append((start, end, new, f"constant {node.value} -> {new}", line))
    elif isinstance(node, ast.Constant) and type(node.value) is str and node.value:
        start, end = _span(off, node)
        if source[start:end][:1] in ("'", '"') and "\n" not in source[start:end]:
            out.append((start, end, '""', "constant string -> empty", line))
    elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        start, end = _span(off, node)
        inner_start = _span(off, node.operand)[0]
        if re.fullmatch(r"-\s*", source[start:inner_start]):
            out.append((start, inner_start, "", "drop minus", line))
    elif (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in _WIDE_CALL_SWAP
    ):
        start, end = _span(off, node.func)
        new = _WIDE_CALL_SWAP[node.func.id]
        out.append((start, end, new, f"call {node.func.id} -> {new}", line))
    elif isinstance(node, ast.Return) and node.value is not None:
        if not (isinstance(node.value, ast.Constant) and node.value.value is None):
            start, end = _span(off, node.value)
            if "\n" not in source[start:end]:
                out.append((start, end, "None", "return value -> None", line))
    elif isinstance(node, ast.If | ast.While):
        start, end = _span(off, node.test)
        text = source[start:end]
        if "\n" not in text:
            out.append((start, end, f"not ({text})", "negate condition", line))
    elif isinstance(node, ast.Break | ast.Continue):
        start, end = _span(off, node)
        new = "continue" if isinstance(node, ast.Break) else "break"
        out.append((start, end, new, f"{source[start:end]} -> {new}", line))
    return out


def _sites(
    source: str, off: _Offsets, fn: ast.AST, *, wide: bool = False
) -> list[tuple[int, int, str, str, int]]:
    """Every place in ``fn``'s body a mutant may change: (start, end, new text, operator, line)."""
    out: list[tuple[int, int, str, str, int]] = []
    body = list(fn.body)  # type: ignore[attr-defined]
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]  # the docstring
    for stmt in body:
        for node in ast.walk(stmt):
            line = getattr(node, "lineno", 0)
            if isinstance(node, ast.Compare):
                operands = [node.left, *node.comparators]
                for op, left, right in zip(node.ops, operands, operands[1:], strict=False):
                    swap = _COMPARE_SWAP.get(type(op))
                    if swap is None:
                        continue
                    site = _gap_site(source, _span(off, left)[1], _span(off, right)[0], *swap)
                    if site:
                        out.append((*site, f"compare {swap[0]} -> {swap[1]}", line))
            elif isinstance(node, ast.BinOp) and type(node.op) in _BINOP_SWAP:
                swap = _BINOP_SWAP[type(node.op)]
                site = _gap_site(source, _span(off, node.left)[1], _span(off, node.right)[0], *swap)
                if site:
                    out.append((*site, f"arithmetic {swap[0]} -> {swap[1]}", line))
            elif isinstance(node, ast.BoolOp):
                swap = _BOOL_SWAP[type(node.op)]
                left, right = node.values[0], node.values[1]
                site = _gap_site(source, _span(off, left)[1], _span(off, right)[0], *swap)
                if site:
                    out.append((*site, f"boolean {swap[0]} -> {swap[1]}", line))
            elif (
                isinstance(node, ast.Constant)
                and type(node.value) is int
                and 0 <= node.value < 10_000
            ):
                start, end = _span(off, node)
                if source[start:end].isdigit():
                    new = str(node.value + 1) if node.value != 1 else "0"
                    out.append((start, end, new, f"constant {node.value} -> {new}", line))
            elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
                start, end = _span(off, node)
                inner_start = _span(off, node.operand)[0]
                if re.fullmatch(r"not\s+", source[start:inner_start]):
                    out.append((start, inner_start, "", "drop not", line))
            if wide:
                out += _wide_sites(source, off, node)
    return out


def _functions(tree: ast.Module) -> list[tuple[str, ast.AST]]:
    found: list[tuple[str, ast.AST]] = []

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                found.append((prefix + child.name, child))
            elif isinstance(child, ast.ClassDef):
                visit(child, f"{prefix}{child.name}.")

    visit(tree, "")
    return found


def mutants(
    path: str, source: str, *, seed: int, per_function: int = 3, wide: bool = False
) -> list[Mutant]:
    """Up to ``per_function`` mutants of each function in ``source``, in seeded order.

    ``wide`` adds more operators (``*``, ``/``, ``//``, ``%``, ``**``, augmented
    assignments, constants down by one, booleans flipped, strings emptied, a
    minus dropped, ``min``/``max`` and ``any``/``all`` swapped, a return value
    made ``None``, a condition negated, ``break``/``continue`` swapped).
    """
    try:
        tree = parse_module(source)
    except (SyntaxError, ValueError):
        return []
    off = _Offsets(source)
    original_dump = ast.dump(tree)
    out: list[Mutant] = []
    for name, fn in _functions(tree):
        sites = _sites(source, off, fn, wide=wide)
        digest = hashlib.sha256(f"{seed}\0{path}\0{name}".encode()).digest()
        random.Random(digest).shuffle(sites)
        kept = 0
        for start, end, new, operator, line in sites:
            mutated = source[:start] + new + source[end:]
            try:
                if ast.dump(parse_module(mutated)) == original_dump:
                    continue
            except (SyntaxError, ValueError):
                continue
            out.append(Mutant(path, name, line, operator, source, mutated))
            kept += 1
            if kept >= per_function:
                break
    return out


def unified_diff(path: str, before: str, after: str) -> str:
    """The diff from ``before`` to ``after`` of ``path``, as ``git diff`` prints it."""
    a = before.splitlines(keepends=True)
    b = after.splitlines(keepends=True)
    lines = [f"diff --git a/{path} b/{path}\n"]
    for line in difflib.unified_diff(a, b, f"a/{path}", f"b/{path}", n=3):
        if line.startswith(("---", "+++")):
            lines.append(line.rstrip() + "\n")
            continue
        if line.endswith("\n"):
            lines.append(line)
        else:
            lines.append(line + "\n\\ No newline at end of file\n")
    return "".join(lines)
