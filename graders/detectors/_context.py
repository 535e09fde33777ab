"""What every detector reads: the parsed candidate, its lines, and a name resolver.

Model-written code hides the names it calls: ``import sys as s; s.exit()``,
``from os import _exit as e``, ``getattr(sys, "exit")``, ``__import__("os")``,
``sys.modules["os"]``, ``e = sys.exit``. :class:`Resolver` maps an expression to
the fully qualified name it stands for (``"sys.exit"``, ``"builtins.open"``) so
that each detector matches qualified names, never spellings. The analysis is
flow-insensitive over the whole module: an alias bound anywhere counts
everywhere, which errs on the side of seeing a call rather than missing it.
"""

from __future__ import annotations

import ast
import builtins
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Literal

from arbiter.graders.sandbox.syntax import parse_module
from arbiter.graders.types import Violation, ViolationType

__all__ = [
    "CodeContext",
    "Reference",
    "Resolver",
    "Usage",
    "literal_value",
    "shorten",
    "string_constants",
]

#: How an expression uses the name it resolves to.
Usage = Literal["load", "store", "del", "import", "dynamic_import"]

_BUILTIN_NAMES = frozenset(dir(builtins))

#: Platform modules that re-export the same functions under another name.
_CANONICAL_MODULES = {"posix": "os", "nt": "os", "_signal": "signal", "_socket": "socket"}

_SNIPPET_MAX_CHARS = 200

_IMPORT_FUNCTIONS = frozenset(
    {"builtins.__import__", "importlib.import_module", "importlib.__import__"}
)


def _canonical(qualname: str) -> str:
    head, dot, rest = qualname.partition(".")
    head = _CANONICAL_MODULES.get(head, head)
    return f"{head}{dot}{rest}"


def literal_value(node: ast.AST) -> tuple[bool, object]:
    """Return ``(True, value)`` when ``node`` is a literal, else ``(False, None)``."""
    try:
        return True, ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return False, None


def string_constants(node: ast.AST) -> Iterator[str]:
    """Yield every string constant inside ``node`` (f-string parts included)."""
    for sub in ast.walk(node):
        if isinstance(sub, ast.Constant) and isinstance(sub.value, str):
            yield sub.value


@dataclass(frozen=True, slots=True)
class Reference:
    """An expression that resolves to a qualified name, and how it is used."""

    node: ast.expr
    qualname: str
    usage: Usage


class Resolver:
    """Map expressions of one module to the qualified names they denote."""

    def __init__(
        self,
        tree: ast.AST,
        star_lookup: Callable[[str, str], str | None],
        inherited: Mapping[str, str] | None = None,
    ) -> None:
        self.aliases: dict[str, str] = dict(inherited or {})
        self.shadowed: set[str] = set()
        self.strings: dict[str, set[str]] = {}
        self.star_modules: list[str] = []
        self.imported_modules: set[str] = set()
        self._star_lookup = star_lookup
        #: Names resolved once the aliases are settled, by node id; the nodes are kept
        #: alive beside them so that no id is reused by another node.
        self._memo: dict[int, str | None] | None = None
        self._memo_nodes: list[ast.AST] = []
        self._collect_imports(tree)
        self._collect_assignments(tree)
        self._memo = {}

    def _collect_imports(self, tree: ast.AST) -> None:
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    module = _canonical(alias.name)
                    self.imported_modules.add(module)
                    if alias.asname:
                        self.aliases[alias.asname] = module
                    else:
                        top = module.split(".")[0]
                        self.aliases[alias.name.split(".")[0]] = top
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                module = _canonical(node.module)
                for alias in node.names:
                    if alias.name == "*":
                        self.star_modules.append(module)
                        self.imported_modules.add(module)
                        continue
                    self.aliases[alias.asname or alias.name] = f"{module}.{alias.name}"
                    self.imported_modules.add(f"{module}.{alias.name}")

    def _collect_assignments(self, tree: ast.AST) -> None:
        pairs: list[tuple[ast.expr, ast.expr]] = []
        for node in ast.walk(tree):
            if isinstance(node, ast.Assign):
                pairs.extend((target, node.value) for target in node.targets)
            elif isinstance(node, ast.AnnAssign | ast.NamedExpr) and node.value is not None:
                pairs.append((node.target, node.value))
            elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                self.shadowed.add(node.name)
            elif isinstance(node, ast.arg):
                self.shadowed.add(node.arg)
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                self.shadowed.add(node.id)
            elif isinstance(node, ast.ExceptHandler) and node.name:
                self.shadowed.add(node.name)
        # Unpack ``a, b = x, y`` so each name pairs with its own value.
        flat: list[tuple[ast.Name, ast.expr]] = []
        for target, value in pairs:
            if isinstance(target, ast.Name):
                flat.append((target, value))
            elif (
                isinstance(target, ast.Tuple | ast.List)
                and isinstance(value, ast.Tuple | ast.List)
                and len(target.elts) == len(value.elts)
            ):
                flat.extend(
                    (t, v)
                    for t, v in zip(target.elts, value.elts, strict=True)
                    if isinstance(t, ast.Name)
                )
        for name, value in flat:
            found = set(string_constants(value))
            if found:
                self.strings.setdefault(name.id, set()).update(found)
        # Aliases of aliases (``a = sys; b = a.exit``) settle within a few rounds.
        for _ in range(4):
            changed = False
            for name, value in flat:
                qualname = self.resolve(value)
                if qualname is not None and self.aliases.get(name.id) != qualname:
                    self.aliases[name.id] = qualname
                    changed = True
            if not changed:
                break

    def resolve(self, node: ast.AST) -> str | None:
        """Return the qualified name ``node`` denotes, or ``None`` when it is not a name.

        The chain is walked without recursion, innermost link first: a candidate's
        ``f()()()...`` or ``a.b.b.b...`` may be thousands of links long, deeper than
        Python's recursion limit, and must be read all the same (a chain too deep to
        read would hide a ``sys.exit`` at its root).
        """
        if isinstance(node, ast.Name):
            return self._resolve_name(node.id)
        # Each link is resolved once per program: every detector asks about the
        # sub-chains of a long chain again.
        done: dict[int, str | None] = self._memo if self._memo is not None else {}
        stack: list[tuple[ast.AST, bool]] = [(node, False)]
        while stack:
            current, ready = stack.pop()
            if id(current) in done:
                continue
            links = _links(current)
            if not ready and links:
                stack.append((current, True))
                stack.extend((link, False) for link in links if id(link) not in done)
                continue
            done[id(current)] = self._resolve_link(current, done)
            if self._memo is not None:
                self._memo_nodes.append(current)
        return done[id(node)]

    def _resolve_link(self, node: ast.AST, done: Mapping[int, str | None]) -> str | None:
        """Resolve ``node`` from the names its links (:func:`_links`) resolved to."""
        if isinstance(node, ast.Name):
            return self._resolve_name(node.id)
        if isinstance(node, ast.Attribute):
            base = done[id(node.value)]
            return f"{base}.{node.attr}" if base else None
        if isinstance(node, ast.Subscript):
            return self._resolve_subscript(node, done)
        if isinstance(node, ast.Call):
            return self._resolve_call(node, done)
        return None

    def _resolve_name(self, name: str) -> str | None:
        if name in self.aliases:
            return self.aliases[name]
        if name == "__builtins__":
            return "builtins"
        if name in self.shadowed:
            return None
        if name in _BUILTIN_NAMES:
            return f"builtins.{name}"
        for module in self.star_modules:
            found = self._star_lookup(module, name)
            if found:
                return found
        return None

    def _resolve_subscript(self, node: ast.Subscript, done: Mapping[int, str | None]) -> str | None:
        key = node.slice
        if not (isinstance(key, ast.Constant) and isinstance(key.value, str)):
            return None
        base = done[id(node.value)]
        if base is None:
            return None
        if base == "sys.modules":
            return _canonical(key.value)
        if base.endswith(".__dict__"):
            return f"{base.removesuffix('.__dict__')}.{key.value}"
        if base in ("builtins", "builtins.__dict__"):
            return f"builtins.{key.value}"
        return f"{base}.{key.value}"

    def _resolve_call(self, node: ast.Call, done: Mapping[int, str | None]) -> str | None:
        func = done[id(node.func)]
        first = node.args[0] if node.args else None
        constant = (
            first.value
            if isinstance(first, ast.Constant) and isinstance(first.value, str)
            else None
        )
        if func in _IMPORT_FUNCTIONS:
            if constant is None:
                return None
            if func == "builtins.__import__" and not _has_fromlist(node):
                return _canonical(constant.split(".")[0])
            return _canonical(constant)
        if func == "builtins.getattr" and first is not None and len(node.args) >= 2:
            name = node.args[1]
            if isinstance(name, ast.Constant) and isinstance(name.value, str):
                base = done[id(first)]
                return f"{base}.{name.value}" if base else None
        if func == "builtins.vars" and first is not None:
            base = done[id(first)]
            return f"{base}.__dict__" if base else None
        return None


def _links(node: ast.AST) -> list[ast.AST]:
    """Return the expressions whose names ``node``'s name is built from."""
    if isinstance(node, ast.Attribute):
        return [node.value]
    if isinstance(node, ast.Subscript):
        key = node.slice
        return [node.value] if isinstance(key, ast.Constant) and isinstance(key.value, str) else []
    if isinstance(node, ast.Call):
        return [node.func, node.args[0]] if node.args else [node.func]
    return []


def _has_fromlist(node: ast.Call) -> bool:
    if len(node.args) >= 4:
        return True
    return any(k.arg == "fromlist" for k in node.keywords)


@dataclass
class CodeContext:
    """One parsed program and the lookups the detectors share."""

    code: str
    tree: ast.Module
    resolver: Resolver
    lines: list[str]
    references: list[Reference] = field(default_factory=list)
    #: Line every violation reports instead of its own (code analysed out of an
    #: ``exec("...")`` string reports the line of the ``exec``).
    line_override: int | None = None
    override_snippet: str | None = None
    #: Constant arithmetic already evaluated (``10**9``), by id of a node of ``tree``.
    numbers: dict[int, float | None] = field(default_factory=dict)

    @classmethod
    def parse(
        cls,
        code: str,
        star_lookup: Callable[[str, str], str | None],
        *,
        line_override: int | None = None,
        override_snippet: str | None = None,
        inherited: Mapping[str, str] | None = None,
    ) -> CodeContext:
        """Parse ``code``; raises ``SyntaxError`` or ``ValueError`` when it does not parse.

        ``inherited`` seeds the aliases, for code run inside another's namespace.
        """
        try:
            tree = parse_module(code)
        except (RecursionError, MemoryError) as e:
            # CPython's parser gives up on nesting it cannot hold (thousands of
            # ``-`` or ``.b``) this way; code it cannot parse is code that does not parse.
            raise SyntaxError(f"nested too deeply to parse ({type(e).__name__})") from e
        resolver = Resolver(tree, star_lookup, inherited)
        ctx = cls(
            code,
            tree,
            resolver,
            code.splitlines(),
            line_override=line_override,
            override_snippet=override_snippet,
        )
        ctx.references = list(_references(tree, resolver))
        return ctx

    def snippet(self, line: int | None) -> str | None:
        """Return the stripped source line ``line`` (1-based), shortened."""
        if line is None or not 1 <= line <= len(self.lines):
            return None
        return shorten(self.lines[line - 1].strip())

    def violation(self, vtype: ViolationType, node: ast.AST, detail: str) -> Violation:
        """Build a static violation at ``node`` with its line and snippet as evidence."""
        if self.line_override is not None:
            return Violation(
                type=vtype,
                detail=f"{detail} (in a code string run by exec/eval)",
                line=self.line_override,
                snippet=self.override_snippet,
            )
        line = getattr(node, "lineno", None)
        return Violation(type=vtype, detail=detail, line=line, snippet=self.snippet(line))


def shorten(text: str) -> str:
    """Cut ``text`` to the length a snippet may have."""
    if len(text) > _SNIPPET_MAX_CHARS:
        return text[: _SNIPPET_MAX_CHARS - 1] + "…"
    return text


def _references(tree: ast.AST, resolver: Resolver) -> Iterator[Reference]:
    """Yield the maximal name expressions of ``tree`` that resolve, and import statements.

    Only the outermost resolvable expression counts (``pytest.mark.skip``, not
    also ``pytest.mark`` and ``pytest``), so one use is one reference.
    """
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield Reference(_as_expr(node), _canonical(alias.name), "import")
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            module = _canonical(node.module)
            for alias in node.names:
                name = module if alias.name == "*" else f"{module}.{alias.name}"
                yield Reference(_as_expr(node), name, "import")
    yield from _walk_expressions(tree, resolver)


def _as_expr(node: ast.stmt) -> ast.expr:
    """Wrap an import statement's position in an expression node for a Reference."""
    marker = ast.Constant(value=None)
    ast.copy_location(marker, node)
    return marker


def _walk_expressions(node: ast.AST, resolver: Resolver) -> Iterator[Reference]:
    stack: list[ast.AST] = [node]
    while stack:
        current = stack.pop()
        if isinstance(current, ast.Name | ast.Attribute | ast.Subscript | ast.Call):
            qualname = resolver.resolve(current)
            if qualname is not None:
                usage = _usage(current, resolver)
                yield Reference(current, qualname, usage)
                if isinstance(current, ast.Call):
                    stack.extend(current.args)
                    stack.extend(k.value for k in current.keywords)
                continue
        stack.extend(ast.iter_child_nodes(current))


def _usage(node: ast.expr, resolver: Resolver) -> Usage:
    if isinstance(node, ast.Call):
        func = resolver.resolve(node.func)
        return "dynamic_import" if func in _IMPORT_FUNCTIONS else "load"
    ctx = getattr(node, "ctx", None)
    if isinstance(ctx, ast.Store):
        return "store"
    if isinstance(ctx, ast.Del):
        return "del"
    return "load"
