"""A small, safe expression language for ``combine`` formulas and gate conditions.

Grammar (parsed by :mod:`ast`, then rebuilt as our own tree; nothing is ever
passed to ``eval``)::

    expr    := number | name | expr (+ - * /) expr | - expr | + expr
             | expr (< <= > >= == !=) expr ...        # chains allowed
             | expr and expr | expr or expr | not expr
             | expr if expr else expr
             | min(expr, expr, ...) | max(expr, expr, ...) | abs(expr) | clip(expr, lo, hi)

Names are component names. Comparisons and boolean operators yield 1.0 or 0.0,
so ``tests * (tests >= 1)`` works. Division by zero and non-finite results raise
:class:`FormulaEvalError`, which the composer turns into an abstention, never a
made-up number.

A formula's size is bounded when it is compiled (characters, nodes, nesting,
finite literals), so evaluating one costs a bounded, small amount of work per
sample and neither compiling nor evaluating can exhaust the stack.
"""

from __future__ import annotations

import ast
import difflib
import math
import operator
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from arbiter.graders.sandbox.syntax import parse_expression

__all__ = [
    "MAX_FORMULA_CHARS",
    "MAX_FORMULA_DEPTH",
    "MAX_FORMULA_NODES",
    "Formula",
    "FormulaError",
    "FormulaEvalError",
    "compile_formula",
]

#: Limits on one formula, checked at compile time; real rubrics stay far below.
MAX_FORMULA_CHARS = 2_000
MAX_FORMULA_NODES = 256
MAX_FORMULA_DEPTH = 32


class FormulaError(ValueError):
    """A formula that cannot be compiled; ``col`` is the 0-based offset of the culprit."""

    def __init__(self, message: str, col: int = 0) -> None:
        super().__init__(message)
        self.message = message
        self.col = col


class FormulaEvalError(ArithmeticError):
    """A formula that compiled but has no finite value for these inputs."""


Env = Mapping[str, float]
Node = Callable[[Env], float]

_BINARY: dict[type[ast.operator], Callable[[float, float], float]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
}
_COMPARE: dict[type[ast.cmpop], Callable[[float, float], bool]] = {
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
    ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
}
_FUNCTIONS: dict[str, tuple[int, int | None]] = {  # name → (min args, max args)
    "min": (2, None),
    "max": (2, None),
    "abs": (1, 1),
    "clip": (3, 3),
}


def _divide(a: float, b: float) -> float:
    if b == 0:
        raise FormulaEvalError("division by zero")
    return a / b


def _clip(x: float, lo: float, hi: float) -> float:
    if lo > hi:
        raise FormulaEvalError(f"clip bounds out of order: {lo:g} > {hi:g}")
    return min(hi, max(lo, x))


@dataclass(frozen=True)
class Formula:
    """A compiled formula: its source text, the names it reads, and an evaluator."""

    text: str
    names: frozenset[str]
    _root: Node

    def evaluate(self, env: Env) -> float:
        """Evaluate over ``env`` (name → value); raises FormulaEvalError if not finite."""
        try:
            value = float(self._root(env))
        except OverflowError as e:
            raise FormulaEvalError(f"overflow: {e}") from e
        if not math.isfinite(value):
            raise FormulaEvalError(f"the formula {self.text!r} evaluated to {value}")
        return value

    def __str__(self) -> str:
        return self.text


class _Compiler:
    def __init__(self, text: str, names: frozenset[str]) -> None:
        self.text = text
        self.known = names
        self.used: set[str] = set()

    def fail(self, node: ast.AST, message: str) -> FormulaError:
        return FormulaError(message, getattr(node, "col_offset", 0))

    def build(self, node: ast.AST) -> Node:
        if isinstance(node, ast.Constant):
            value = node.value
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise self.fail(node, f"only numbers are allowed as constants, found {value!r}")
            try:
                number = float(value)
            except OverflowError:
                number = math.inf
            if not math.isfinite(number):
                raise self.fail(node, "a number in the formula is too large to be a float")
            return lambda env: number
        if isinstance(node, ast.Name):
            return self.name(node)
        if isinstance(node, ast.UnaryOp):
            operand = self.build(node.operand)
            if isinstance(node.op, ast.USub):
                return lambda env: -operand(env)
            if isinstance(node.op, ast.UAdd):
                return operand
            if isinstance(node.op, ast.Not):
                return lambda env: 0.0 if operand(env) else 1.0
            raise self.fail(node, "unsupported unary operator (use - + not)")
        if isinstance(node, ast.BinOp):
            left, right = self.build(node.left), self.build(node.right)
            if isinstance(node.op, ast.Div):
                return lambda env: _divide(left(env), right(env))
            op = _BINARY.get(type(node.op))
            if op is None:
                raise self.fail(node, "unsupported operator (use + - * /)")
            return lambda env: op(left(env), right(env))
        if isinstance(node, ast.Compare):
            return self.compare(node)
        if isinstance(node, ast.BoolOp):
            parts = [self.build(v) for v in node.values]
            if isinstance(node.op, ast.And):
                return lambda env: 1.0 if all(p(env) for p in parts) else 0.0
            return lambda env: 1.0 if any(p(env) for p in parts) else 0.0
        if isinstance(node, ast.IfExp):
            test, body, orelse = (
                self.build(node.test),
                self.build(node.body),
                self.build(node.orelse),
            )
            return lambda env: body(env) if test(env) else orelse(env)
        if isinstance(node, ast.Call):
            return self.call(node)
        raise self.fail(node, f"{type(node).__name__} is not allowed in a formula")

    def name(self, node: ast.Name) -> Node:
        if node.id not in self.known:
            hint = difflib.get_close_matches(node.id, sorted(self.known), n=1)
            suggestion = f"; did you mean {hint[0]!r}?" if hint else ""
            known = ", ".join(sorted(self.known)) or "none"
            raise self.fail(
                node, f"unknown component {node.id!r} (components: {known}){suggestion}"
            )
        self.used.add(node.id)
        key = node.id
        return lambda env: env[key]

    def compare(self, node: ast.Compare) -> Node:
        ops = []
        for op_node in node.ops:
            op = _COMPARE.get(type(op_node))
            if op is None:
                raise self.fail(node, "unsupported comparison (use < <= > >= == !=)")
            ops.append(op)
        operands = [self.build(node.left), *(self.build(c) for c in node.comparators)]

        def run(env: Env) -> float:
            values = [o(env) for o in operands]
            ok = all(op(a, b) for op, a, b in zip(ops, values, values[1:], strict=False))
            return 1.0 if ok else 0.0

        return run

    def call(self, node: ast.Call) -> Node:
        if not isinstance(node.func, ast.Name) or node.func.id not in _FUNCTIONS:
            allowed = ", ".join(_FUNCTIONS)
            raise self.fail(node, f"only the functions {allowed} may be called")
        if node.keywords:
            raise self.fail(node, "keyword arguments are not allowed")
        name = node.func.id
        low, high = _FUNCTIONS[name]
        if len(node.args) < low or (high is not None and len(node.args) > high):
            want = f"{low}" if low == high else f"at least {low}"
            raise self.fail(node, f"{name}() takes {want} arguments, got {len(node.args)}")
        args = [self.build(a) for a in node.args]
        if name == "min":
            return lambda env: min(a(env) for a in args)
        if name == "max":
            return lambda env: max(a(env) for a in args)
        if name == "abs":
            (x,) = args
            return lambda env: abs(x(env))
        x, lo, hi = args
        return lambda env: _clip(x(env), lo(env), hi(env))


def _check_size(root: ast.AST, lead: int) -> None:
    """Raise FormulaError when the tree is over the node or nesting limit (no recursion)."""
    count = 0
    stack: list[tuple[ast.AST, int]] = [(root, 1)]
    while stack:
        node, depth = stack.pop()
        count += 1
        if count > MAX_FORMULA_NODES:
            raise FormulaError(
                f"the formula has more than {MAX_FORMULA_NODES} terms; simplify it", lead
            )
        if depth > MAX_FORMULA_DEPTH:
            col = lead + getattr(node, "col_offset", 0)
            raise FormulaError(f"the formula nests deeper than {MAX_FORMULA_DEPTH} levels", col)
        stack.extend((child, depth + 1) for child in ast.iter_child_nodes(node))


def compile_formula(text: str, names: Iterable[str]) -> Formula:
    """Compile ``text`` over the given component names.

    Raises:
        FormulaError: on a syntax error, a disallowed construct or an unknown
            name, with the column of the culprit.
    """
    source = text.strip()
    if not source:
        raise FormulaError("the formula is empty")
    lead = len(text) - len(text.lstrip())
    if len(source) > MAX_FORMULA_CHARS:
        raise FormulaError(
            f"the formula has {len(source)} characters; the limit is {MAX_FORMULA_CHARS}"
        )
    try:
        tree = parse_expression(source)
    except SyntaxError as e:
        # Python reports offset 0 when the text ended too early: point at the end.
        col = lead + (e.offset - 1 if e.offset else len(source))
        raise FormulaError(f"not a valid expression: {e.msg}", col) from e
    except (ValueError, RecursionError, MemoryError) as e:
        # ValueError: an integer literal beyond Python's digit limit; the others:
        # nesting the parser itself cannot hold.
        raise FormulaError(f"not a valid expression: {e}", lead) from None
    _check_size(tree.body, lead)
    compiler = _Compiler(source, frozenset(names))
    try:
        root = compiler.build(tree.body)
    except FormulaError as e:
        raise FormulaError(e.message, lead + e.col) from None
    return Formula(text=source, names=frozenset(compiler.used), _root=root)
