"""Which of the candidate's names the trusted side treats as classes (pure).

Calling a class the tests name constructs an instance whose attributes and
methods are the API under test (:class:`~arbiter.graders.sandbox.proxy.InstanceHandle`);
calling anything else returns data, or an opaque value that answers nothing.
That choice must never come from the candidate: if its own word (or its
process's) made a name a class, it could turn the task's function into a
class and have its own methods answer the tests' questions about a result
(``"x" in f(1)``, ``f(1).startswith("x")``). So it comes from the task alone:

1. the task's ``classes``, when it lists them;
2. else a name the task's own code shows as a class (``class Stack:`` in the
   prompt's code or the reference), never one it shows as a function;
3. else a name spelled as Python spells classes (PEP 8's CapWords: a capital
   first letter, a lowercase letter, no underscore: ``Node``, ``LRUCache``),
   unless the tests use what a call of it returns as a value, as one uses a
   function's result (compared, asserted, negated, computed with: MBPP's
   ``assert Sort(xs) == ys``; the container of an ``in`` is asked a question of
   its own, not used as a value), directly or through the name it was
   assigned to. ``Node(1)`` that the setup assigns and links, ``Pair(5, 24)`` that a
   test hands to the function, are classes.

Even a name wrongly taken for a class costs an honest function little: a call
that constructs returns builtin data (a list, a number) as data; only an
object stays behind as an instance.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Mapping

__all__ = ["class_names", "looks_like_class"]

_DEFINED = re.compile(r"^[ \t]*(?:(class)|(?:async[ \t]+)?def)[ \t]+([A-Za-z_]\w*)", re.MULTILINE)


def looks_like_class(name: str) -> bool:
    """Whether ``name`` is in CapWords (``Node``, ``LRUCache``; not ``MAX``, ``Find_Max``)."""
    return name[:1].isupper() and "_" not in name and any(c.islower() for c in name)


def _shown(code: str) -> tuple[set[str], set[str]]:
    """Return the names ``code`` defines as classes and as functions, at any level.

    Line by line rather than with ``ast``: a prompt's code usually ends inside
    the definition left for the completion, which does not parse.
    """
    classes: set[str] = set()
    functions: set[str] = set()
    for match in _DEFINED.finditer(code):
        (classes if match.group(1) else functions).add(match.group(2))
    return classes, functions


def _called(node: ast.AST, aliases: Mapping[str, str]) -> str | None:
    """Return the name a call calls (``f(...)``, ``solution.f(...)``), if ``node`` is one."""
    if not isinstance(node, ast.Call):
        return None
    func = node.func
    if isinstance(func, ast.Name):
        return aliases.get(func.id, func.id)
    if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
        return func.attr
    return None


def _operands(node: ast.AST) -> list[ast.AST]:
    """The expressions ``node`` uses as values: compared, asserted, negated or computed with.

    Not the container of ``in``: ``1 in s`` asks ``s`` a question of its own (an
    instance's ``__contains__`` is the API of a class under test), as ``len(s)``
    or iterating it would.
    """
    if isinstance(node, ast.Compare):
        containers = {
            id(right)
            for op, right in zip(node.ops, node.comparators, strict=True)
            if isinstance(op, ast.In | ast.NotIn)
        }
        return [n for n in (node.left, *node.comparators) if id(n) not in containers]
    if isinstance(node, ast.Assert | ast.If | ast.While | ast.IfExp):
        return [node.test]
    if isinstance(node, ast.BoolOp):
        return list(node.values)
    if isinstance(node, ast.UnaryOp):
        return [node.operand]
    if isinstance(node, ast.BinOp):
        return [node.left, node.right]
    return []


def _used_as_values(trees: Iterable[ast.AST], aliases: Mapping[str, str]) -> set[str]:
    """The names whose calls' results the trees use as values (directly or once assigned)."""
    nodes = [n for tree in trees for n in ast.walk(tree)]
    # Variables bound to a call's result: ``x = f(1)`` makes ``x`` stand for f's result.
    bound: dict[str, str] = {}
    for node in nodes:
        if isinstance(node, ast.Assign):
            called = _called(node.value, aliases)
            if called is not None:
                for target in node.targets:
                    if isinstance(target, ast.Name):
                        bound[target.id] = called
    out: set[str] = set()
    for node in nodes:
        for operand in _operands(node):
            called = _called(operand, aliases)
            if called is None and isinstance(operand, ast.Name):
                called = bound.get(operand.id)
            if called is not None:
                out.add(called)
    return out


def class_names(
    declared: Iterable[str],
    shown: Iterable[str | None] = (),
    explicit: Iterable[str] | None = None,
    usage: Iterable[ast.AST] = (),
    aliases: Mapping[str, str] | None = None,
) -> frozenset[str]:
    """Return the declared names the trusted side treats as classes.

    Args:
        declared: the candidate's names the tests use.
        shown: the task's own code (the prompt's code, the reference solution).
        explicit: the task's ``classes``, which decide alone when given.
        usage: the tests and their setup, parsed: a CapWords name whose calls'
            results they use as values is a function.
        aliases: names the tests call a declared name by (HumanEval's
            ``candidate`` parameter for the entry point).
    """
    if explicit is not None:
        return frozenset(explicit)
    classes: set[str] = set()
    functions: set[str] = set()
    for code in shown:
        if code:
            c, f = _shown(code)
            classes |= c
            functions |= f
    spelled = [n for n in declared if n not in classes and n not in functions]
    spelled = [n for n in spelled if looks_like_class(n)]
    values = _used_as_values(usage, aliases or {}) if spelled else set()
    return frozenset(n for n in declared if n in classes) | frozenset(
        n for n in spelled if n not in values
    )
