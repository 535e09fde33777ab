"""Function tests run on the trusted side, one assert at a time, against a proxied candidate.

A HumanEval ``check(candidate)`` body or an MBPP assert list is split with
``ast`` into statements. Each statement that contains an ``assert`` is one
unit of partial credit; the others (imports, assignments of inputs) are
replayed in order as setup. They all run here, in the trusted process, in a
namespace where the candidate's functions are :class:`CandidateFunction`
proxies: the comparison ``candidate(x) == expected`` is made on this side, on
plain decoded values, so nothing the candidate does in its own process can make
an assert pass. Only a plan whose statements cannot run one by one (a
``return`` in ``check``, say) runs ``check`` whole, as one unit.

Planning and running are one module: a plan is only meaningful with the
runner that replays it (which statements are setup, which call ahead, how a
unit's outcome is read), and both change together.
"""

from __future__ import annotations

import ast
import builtins
import copy
import dataclasses
import importlib
import itertools
import sys
import textwrap
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from types import CodeType, ModuleType
from typing import Any, Literal

from arbiter.graders.sandbox import _codec as codec
from arbiter.graders.sandbox.classes import class_names
from arbiter.graders.sandbox.proxy import (
    CandidateError,
    CandidateFunction,
    Channel,
    ChannelBroken,
    LoadResult,
    Uncrossable,
    candidate_exception_class,
)
from arbiter.graders.sandbox.syntax import parse_module

__all__ = [
    "CheckPlan",
    "CheckPlanError",
    "HiddenRun",
    "TrustedLimit",
    "UnitOutcome",
    "plan_function_tests",
    "run_plan",
]

Outcome = Literal[
    "passed",
    "assertion_failed",
    "runtime_error",
    "memory_limit",
    "timeout",
    "exited",
    "garbled",
    "output_limit",
    "uncrossable",
    "setup_error",
]


class CheckPlanError(ValueError):
    """The task's tests themselves cannot be parsed: the task is broken, not the candidate."""


class TrustedLimit(BaseException):
    """The tests' own work ran past the CPU it is given (the worker's timer raised it).

    A BaseException, so that no test's ``except`` catches it: the plan stops.
    """


@dataclass(frozen=True, slots=True)
class AheadCall:
    """The one call of an assert that calls nothing else, with literal arguments.

    Such a call is certain to be made, first, when its statement runs, and its
    arguments are known before: it can be sent to the child ahead of time.
    """

    fn: str
    args: tuple[Any, ...]
    kwargs: dict[str, Any]


@dataclass(frozen=True, slots=True)
class Statement:
    """One statement of the tests, compiled on its own."""

    line: int
    source: str
    code: CodeType
    is_unit: bool
    #: Whether the statement contains a call at all (else it cannot reach the candidate).
    calls: bool = True
    #: Names the statement binds (a later call to one of them may mean something else).
    binds: frozenset[str] = frozenset()
    #: Names the statement reads (a setup failure reading a name the candidate left
    #: out is the candidate's).
    reads: frozenset[str] = frozenset()
    ahead: AheadCall | None = None
    #: A unit ``assert A <op> B`` compiled to keep its two sides (see :func:`_keeping_sides`):
    #: the operator, so a failure can say what was compared.
    compared: str | None = None


@dataclass(frozen=True, slots=True)
class CheckPlan:
    """The tests, ready to run against any candidate."""

    prelude: tuple[Statement, ...]
    statements: tuple[Statement, ...]
    #: The parameter name ``check`` receives the candidate under, if any.
    candidate_param: str | None
    #: Names the tests read but never bind.
    free_names: frozenset[str]
    #: The task's own helpers (from the prompt), run on the trusted side first.
    helpers: tuple[Statement, ...] = ()
    #: The candidate's names the tests may use: the entry point, or, when the
    #: task declares none, the names the tests call that nothing else defines.
    declared: frozenset[str] = frozenset()
    #: Free names that are standard modules: the trusted side imports its own.
    modules: frozenset[str] = frozenset()
    #: The declared names the tests use as classes (see graders.sandbox.classes).
    classes: frozenset[str] = frozenset()
    #: Whether its statements are compiled to run (see :func:`plan_function_tests`).
    runnable: bool = True

    @property
    def units(self) -> int:
        """Return how many statements count for credit."""
        return sum(s.is_unit for s in self.statements)


@dataclass(frozen=True, slots=True)
class UnitOutcome:
    """What became of one unit (or of a setup statement that failed)."""

    line: int
    source: str
    outcome: Outcome
    error: str = ""

    @property
    def passed(self) -> bool:
        """Whether the unit passed."""
        return self.outcome == "passed"


def _walk(root: ast.AST) -> list[ast.AST]:
    """Return every node under ``root`` (itself included), in no particular order.

    ``ast.walk`` with an explicit stack and no generators: planning walks each
    task's tests a few times, and ``ast.walk`` was most of its cost.
    """
    nodes: list[ast.AST] = []
    stack = [root]
    while stack:
        node = stack.pop()
        nodes.append(node)
        for name in node._fields:
            value = getattr(node, name, None)
            if isinstance(value, ast.AST):
                stack.append(value)
            elif type(value) is list:
                stack.extend(v for v in value if isinstance(v, ast.AST))
    return nodes


_NOT_LITERAL = object()


def _literal_value(node: ast.AST) -> Any:
    """Return the value of a literal expression, or ``_NOT_LITERAL``."""
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return _NOT_LITERAL


def _ahead_call(stmt: ast.stmt) -> AheadCall | None:
    """Return the call of ``assert f(literals) [op literal][, literal]``, else None.

    The call is the first thing such a statement evaluates and nothing else in
    it can call anything, so running the statement makes exactly this call.
    """
    if not isinstance(stmt, ast.Assert):
        return None
    test = stmt.test
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        test = test.operand
    call = test.left if isinstance(test, ast.Compare) else test
    if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Name)):
        return None
    # What the statement evaluates after the call must be literal too.
    after = [*test.comparators] if isinstance(test, ast.Compare) else []
    if stmt.msg is not None:
        after.append(stmt.msg)
    if any(_literal_value(node) is _NOT_LITERAL for node in after):
        return None
    args = tuple(_literal_value(a) for a in call.args)  # a *starred argument is not literal
    kwargs = {k.arg: _literal_value(k.value) for k in call.keywords if k.arg is not None}
    if len(kwargs) != len(call.keywords) or any(
        v is _NOT_LITERAL for v in (*args, *kwargs.values())
    ):
        return None
    return AheadCall(call.func.id, args, kwargs)


@dataclass(slots=True)
class _Seen:
    """What one pass over walked nodes found; passes over several trees add up."""

    loaded: set[str] = field(default_factory=set)
    bound: set[str] = field(default_factory=set)
    asserts: list[ast.Assert] = field(default_factory=list)
    calls: bool = False

    def scan(self, nodes: list[ast.AST]) -> _Seen:
        """Add what ``nodes`` read, bind, assert and call; return self."""
        for node in nodes:
            if isinstance(node, ast.Name):
                (self.loaded if isinstance(node.ctx, ast.Load) else self.bound).add(node.id)
            elif isinstance(node, ast.Call):
                self.calls = True
            elif isinstance(node, ast.Assert):
                self.asserts.append(node)
            elif isinstance(node, ast.arg):
                self.bound.add(node.arg)
            elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                self.bound.add(node.name)
            elif isinstance(node, ast.Import | ast.ImportFrom):
                self.bound.update((a.asname or a.name).split(".")[0] for a in node.names)
        return self

    def add(self, other: _Seen) -> None:
        """Merge another pass's findings into this one."""
        self.loaded |= other.loaded
        self.bound |= other.bound
        self.asserts += other.asserts
        self.calls = self.calls or other.calls


#: Nodes that only compile inside a function or a loop: a statement holding one may
#: not compile on its own (``return`` in ``check``), which changes the plan.
_SCOPED = (
    ast.Return,
    ast.Yield,
    ast.YieldFrom,
    ast.Await,
    ast.Nonlocal,
    ast.Break,
    ast.Continue,
    ast.AsyncFor,
    ast.AsyncWith,
    ast.comprehension,
)
#: What an unrun plan's statements hold in place of their code.
_UNCOMPILED = compile("", "<not compiled>", "exec", dont_inherit=True)


def _compile(
    stmts: list[ast.stmt], source: str, seen: _Seen, *, as_units: bool, runnable: bool = True
) -> tuple[Statement, ...]:
    """Compile each statement on its own; add what each reads and binds to ``seen``.

    Not ``runnable``: only a statement that may not compile on its own (one
    holding a :data:`_SCOPED` node) is compiled, so that it fails as it would;
    the others hold :data:`_UNCOMPILED`, and no call is read ahead.
    """
    out: list[Statement] = []
    # Whole lines, not ast.get_source_segment: that re-splits the source per call.
    lines = source.splitlines()
    for stmt in stmts:
        end = stmt.end_lineno or stmt.lineno
        text = textwrap.dedent("\n".join(lines[stmt.lineno - 1 : end])) or ast.unparse(stmt)
        nodes = _walk(stmt)
        compared = None
        if runnable or any(isinstance(n, _SCOPED) for n in nodes):
            body, compared = _keeping_sides(stmt) if as_units and runnable else ([stmt], None)
            module = ast.Module(body=body, type_ignores=[])
            # dont_inherit: this module's ``from __future__ import annotations`` is not the
            # tests' (a prompt's dataclass would get string annotations to resolve).
            code = compile(module, "<tests>", "exec", dont_inherit=True)
        else:
            code = _UNCOMPILED
        own = _Seen().scan(nodes)
        seen.add(own)
        out.append(
            Statement(
                stmt.lineno,
                text[:300],
                code,
                as_units and bool(own.asserts),
                calls=own.calls,
                binds=frozenset(own.bound),
                reads=frozenset(own.loaded),
                ahead=_ahead_call(stmt) if runnable else None,
                compared=compared,
            )
        )
    return tuple(out)


#: Where a unit ``assert A <op> B`` keeps its sides while it runs.
_GOT, _WANT = "__arbiter_got__", "__arbiter_want__"
_OPERATORS: dict[type[ast.cmpop], str] = {
    ast.Eq: "==",
    ast.NotEq: "!=",
    ast.Lt: "<",
    ast.LtE: "<=",
    ast.Gt: ">",
    ast.GtE: ">=",
    ast.In: "in",
    ast.NotIn: "not in",
    ast.Is: "is",
    ast.IsNot: "is not",
}


def _keeping_sides(stmt: ast.stmt) -> tuple[list[ast.stmt], str | None]:
    """``assert A <op> B[, msg]`` as ``got = A; want = B; assert got <op> want[, msg]``.

    The same evaluation, in the same order (A, then B, then the comparison, then
    the message only on failure), once each: only the two sides are kept, so that
    a failed unit can say what it compared (:func:`_compared`). Any other
    statement (a chained comparison, ``assert not ...``) is left as it is.
    """
    test = stmt.test if isinstance(stmt, ast.Assert) else None
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1):
        return [stmt], None
    op = _OPERATORS.get(type(test.ops[0]))
    if op is None:
        return [stmt], None
    assert isinstance(stmt, ast.Assert)
    keep = [
        ast.Assign(targets=[ast.Name(_GOT, ast.Store())], value=test.left),
        ast.Assign(targets=[ast.Name(_WANT, ast.Store())], value=test.comparators[0]),
    ]
    check = ast.Compare(ast.Name(_GOT, ast.Load()), test.ops, [ast.Name(_WANT, ast.Load())])
    body: list[ast.stmt] = [*keep, ast.Assert(test=check, msg=stmt.msg)]
    for node in body:
        ast.copy_location(node, stmt)
        ast.fix_missing_locations(node)
    return body, op


def _shown(value: object, depth: int = 0) -> str:
    """A value as a failed unit shows it: plain data by repr (cut short), anything else by type.

    Only the exact builtin types are read (a subclass's ``__repr__`` is nobody's
    to run here), at most 8 items a level and 3 levels deep; a set's items in
    sorted order, so the text is the same in every process.
    """
    kind = type(value)
    more = ""
    if value is None or kind in (bool, int, float, complex):
        text = repr(value)
    elif isinstance(value, (str, bytes)) and kind in (str, bytes):
        text = repr(value[:80]) + ("..." if len(value) > 80 else "")
    elif isinstance(value, dict) and kind is dict and depth < 3:
        pairs = list(itertools.islice(value.items(), 8))
        more = ", ..." if len(value) > len(pairs) else ""
        inner = ", ".join(f"{_shown(k, depth + 1)}: {_shown(v, depth + 1)}" for k, v in pairs)
        text = "{" + inner + more + "}"
    elif isinstance(value, (list, tuple)) and kind in (list, tuple) and depth < 3:
        items = [_shown(v, depth + 1) for v in itertools.islice(value, 8)]
        more = ", ..." if len(value) > len(items) else ""
        left, right = ("[", "]") if kind is list else ("(", ")")
        text = left + ", ".join(items) + more + right
    elif isinstance(value, (set, frozenset)) and kind in (set, frozenset) and depth < 3:
        if len(value) > 64:
            text = f"<{kind.__name__} of {len(value)}>"
        else:
            shown = sorted(_shown(v, depth + 1) for v in value)
            more = ", ..." if len(shown) > 8 else ""
            text = "{" + ", ".join(shown[:8]) + more + "}"
    else:
        text = f"<{kind.__name__}>"
    return text[:300]


def _compared(stmt: Statement, namespace: dict[str, object]) -> str:
    """What a failed ``assert A <op> B`` compared: ``got 3, expected 4`` (empty if unknown)."""
    if stmt.compared is None or _GOT not in namespace or _WANT not in namespace:
        return ""
    got, want = namespace[_GOT], namespace[_WANT]
    if stmt.compared == "==":
        return f"got {_shown(got)}, expected {_shown(want)}"
    return f"{_shown(got)} {stmt.compared} {_shown(want)} is false"


def _tested(asserts: list[ast.Assert]) -> set[str]:
    """Names called on plain data on either side of an assert's comparison.

    ``assert sum(10, 15) == 6`` tests ``sum``; in ``assert set(f(x)) == {1}``
    the call wraps another call, so ``set`` is the test's helper, not its subject.
    """
    out: set[str] = set()
    for node in asserts:
        if isinstance(node.test, ast.Compare):
            for side in (node.test.left, *node.test.comparators):
                if not (isinstance(side, ast.Call) and isinstance(side.func, ast.Name)):
                    continue
                arguments = [*side.args, *(k.value for k in side.keywords)]
                if not any(isinstance(n, ast.Call) for a in arguments for n in _walk(a)):
                    out.add(side.func.id)
    return out


def _is_check_call(stmt: ast.stmt) -> bool:
    return (
        isinstance(stmt, ast.Expr)
        and isinstance(stmt.value, ast.Call)
        and isinstance(stmt.value.func, ast.Name)
        and stmt.value.func.id == "check"
    )


def plan_function_tests(
    tests: str | list[str],
    setup_code: str | None = None,
    *,
    helpers: str | None = None,
    entry_point: str | None = None,
    reference: str | None = None,
    classes: list[str] | tuple[str, ...] | None = None,
    runnable: bool = True,
) -> CheckPlan:
    """Split the tests into setup and per-assert units (see :func:`_plan`).

    ``reference`` (the task's solution, if it has one) and ``classes`` (the
    task's own list) only say which declared names are classes. A plan that
    is not ``runnable`` says what the tests are (their units, the names they
    need, their statements' lines) at less cost, for the process that does
    not run them: :func:`run_plan` refuses it.
    """
    with warnings.catch_warnings():
        # Dataset tests carry invalid escapes ("\w") that Python only warns about.
        warnings.simplefilter("ignore", DeprecationWarning)
        warnings.simplefilter("ignore", SyntaxWarning)
        return _plan(tests, setup_code, helpers, entry_point, reference, classes, runnable)


#: Top-level statements of a prompt's code that are the task's helpers.
_HELPER_STATEMENTS = (
    ast.Import,
    ast.ImportFrom,
    ast.FunctionDef,
    ast.AsyncFunctionDef,
    ast.ClassDef,
    ast.Assign,
    ast.AnnAssign,
)


def _helper_tree(code: str | None) -> list[ast.stmt]:
    """Return the statements of the prompt's code that define the task's helpers.

    A prompt whose code ends inside an unfinished definition (a fence left open
    for the completion) is cut before that definition.
    """
    if not code or not code.strip():
        return []
    try:
        body = parse_module(code).body
    except SyntaxError:
        lines = code.splitlines()
        starts = [
            i for i, line in enumerate(lines) if line.startswith(("def ", "async def ", "class "))
        ]
        if not starts:
            return []
        try:
            body = parse_module("\n".join(lines[: starts[-1]])).body
        except SyntaxError:
            return []
    return [stmt for stmt in body if isinstance(stmt, _HELPER_STATEMENTS)]


def _plan(
    tests: str | list[str],
    setup_code: str | None,
    helpers: str | None,
    entry_point: str | None,
    reference: str | None = None,
    classes: list[str] | tuple[str, ...] | None = None,
    runnable: bool = True,
) -> CheckPlan:
    """Split the tests into setup and per-assert units.

    Args:
        tests: a module defining ``check(candidate)`` (HumanEval), or a list of
            assert statements (MBPP), or a module of top-level asserts.
        setup_code: statements to run before the tests (MBPP's ``test_setup_code``).
        helpers: the code the task's prompt shows: its definitions other than
            the entry point (HumanEval's ``encode_cyclic``) run on the trusted side.
        entry_point: the candidate's function the tests call, when the task names it.
        reference: the task's solution, if it has one (it may show a name as a class).
        classes: the task's own list of the names the tests use as classes.
        runnable: whether the plan is to run (see :func:`_compile`).

    Raises:
        CheckPlanError: the tests do not parse.
    """
    source = tests if isinstance(tests, str) else "\n".join(tests)
    setup = setup_code or ""
    try:
        tree = parse_module(source)
        setup_tree = parse_module(setup)
    except SyntaxError as e:
        raise CheckPlanError(f"the tests do not parse: {e}") from e
    # Every statement is walked once, when it is compiled; what the walks find
    # adds up to what the whole tests read and bind.
    seen, setup_seen, helper_seen = _Seen(), _Seen(), _Seen()
    # The task's helpers, never the candidate's definition of the entry point.
    helper_stmts = [
        stmt
        for stmt in _helper_tree(helpers)
        if not (_defined_name(stmt) == entry_point and entry_point is not None)
    ]
    helper_source = helpers or ""
    try:
        helper_code = _compile(
            helper_stmts, helper_source, helper_seen, as_units=False, runnable=runnable
        )
    except (SyntaxError, ValueError):
        helper_code = ()
    prelude = list(_compile(setup_tree.body, setup, setup_seen, as_units=False, runnable=runnable))
    check = next(
        (s for s in tree.body if isinstance(s, ast.FunctionDef) and s.name == "check"), None
    )
    param = None
    if check is None:
        statements = _compile(tree.body, source, seen, as_units=True, runnable=runnable)
    else:
        others = [s for s in tree.body if s is not check and not _is_check_call(s)]
        prelude += _compile(others, source, seen, as_units=False, runnable=runnable)
        # check's own name and signature, and module-level calls of it; its body
        # is walked statement by statement below.
        seen.scan([check])
        calls = [s for s in tree.body if _is_check_call(s)]
        for node in (*check.decorator_list, check.args, check.returns, *calls):
            if node is not None:
                seen.scan(_walk(node))
        param = check.args.args[0].arg if check.args.args else None
        body = [
            s
            for s in check.body
            if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))  # docstring
        ]
        try:
            statements = _compile(body, source, seen, as_units=True, runnable=runnable)
        except SyntaxError:
            # e.g. a ``return`` inside check: run check whole, as one unit.
            whole = parse_module(f"check({param})" if param else "check()").body
            prelude += _compile([check], source, seen, as_units=False, runnable=runnable)
            statements = _compile(
                whole, f"check({param})", _Seen(), as_units=True, runnable=runnable
            )
            statements = (
                Statement(check.lineno, "check(...) (run whole)", statements[0].code, True),
            )
    free = (seen.loaded | setup_seen.loaded) - seen.bound - setup_seen.bound
    free.discard(param or "")
    helper_names = _top_level_names(helper_stmts)
    modules = {n for n in free - helper_names - _BUILTIN_NAMES if _is_stdlib_module(n)}
    # The names the tests and setup read that neither they, the task's helpers,
    # the builtins nor the standard modules define: the candidate's to provide
    # (the entry point, and a class the setup builds, as MBPP 927's Node).
    declared = {n for n in free - helper_names - _BUILTIN_NAMES - modules if not n.startswith("__")}
    if entry_point is not None:
        declared.add(entry_point)
    elif not declared:
        # A task whose function is named like a builtin (MBPP's ``sum``): the
        # builtin an assert applies to plain data is the subject, and only then.
        declared = _tested(seen.asserts) & free
    aliases = {param: entry_point} if param and entry_point else {}
    shown = class_names(declared, (helpers, reference), classes, (tree, setup_tree), aliases)
    return CheckPlan(
        tuple(prelude),
        statements,
        param,
        frozenset(free),
        helpers=helper_code,
        declared=frozenset(declared),
        modules=frozenset(modules),
        classes=shown,
        runnable=runnable,
    )


_BUILTIN_NAMES = frozenset(dir(builtins))


def _defined_name(stmt: ast.stmt) -> str | None:
    if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        return stmt.name
    return None


def _top_level_names(stmts: list[ast.stmt]) -> set[str]:
    """Return the names a list of top-level statements binds."""
    names: set[str] = set()
    for stmt in stmts:
        defined = _defined_name(stmt)
        if defined is not None:
            names.add(defined)
        elif isinstance(stmt, ast.Import | ast.ImportFrom):
            names.update((a.asname or a.name).split(".")[0] for a in stmt.names)
        else:
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]  # type: ignore[attr-defined]
            for target in targets:
                names.update(n.id for n in _walk(target) if isinstance(n, ast.Name))
    return names


def _is_stdlib_module(name: str) -> bool:
    return name in sys.stdlib_module_names and name not in _NEVER_IMPORT


def _run_statement(stmt: Statement, namespace: dict[str, object], channel: Channel) -> UnitOutcome:
    events = len(channel.events)
    outcome: Outcome = "passed"
    error = ""
    if stmt.compared is not None:
        namespace.pop(_GOT, None)
        namespace.pop(_WANT, None)
    try:
        exec(stmt.code, namespace)
    except CandidateError as e:
        # Before AssertionError: the candidate's own AssertionError is its error.
        limit = e.builtin == "MemoryError"  # RLIMIT_AS: the run hit its memory limit
        text = f"{e.type_name}: {e.message}"[:500]
        # Where in its own code it raised: the traceback's tail, its frames only.
        text += "".join(f'\n  File "solution.py", line {n}, in {name}' for n, name in e.frames)
        outcome, error = ("memory_limit" if limit else "runtime_error"), text
    except AssertionError as e:
        said = _compared(stmt, namespace)
        outcome, error = (
            "assertion_failed",
            (f"{said}: {e}" if str(e) and said else said or str(e))[:500],
        )
    except ChannelBroken as e:
        outcome, error = e.reason, e.detail[:500]  # type: ignore[assignment]
    except Uncrossable as e:
        outcome, error = "uncrossable", str(e)[:500]
    except (KeyboardInterrupt, TrustedLimit):
        raise
    except MemoryError:
        # This side's memory, spent on what the candidate returned (a range of
        # 10**9 the test lists): bounded by the worker's limit, and the candidate's.
        outcome = "memory_limit"
        error = "the tests' own work on the candidate's values ran out of memory"
    except BaseException as e:
        # e.g. comparing a returned None with ``<``: the candidate's fault.
        outcome, error = "runtime_error", f"{type(e).__name__}: {e}"[:500]
    if outcome == "passed" and len(channel.events) > events:
        # The test caught a channel failure (a bare ``except:``): still a failure.
        reason = channel.events[-1]
        broken = ("timeout", "exited", "garbled", "output_limit")
        outcome = reason if reason in broken else "uncrossable"  # type: ignore[assignment]
        error = "the test swallowed a sandbox failure"
    if not stmt.is_unit and outcome == "passed":
        return UnitOutcome(stmt.line, stmt.source, "passed")
    if not stmt.is_unit:
        outcome = "setup_error" if outcome == "runtime_error" else outcome
    return UnitOutcome(stmt.line, stmt.source, outcome, error)


#: Standard modules with import-time side effects the trusted side must not trigger.
_NEVER_IMPORT = frozenset({"antigravity", "this", "idlelib", "tkinter", "turtle", "turtledemo"})


def _stdlib_module(name: str) -> ModuleType | None:
    """Import a standard module a test names (the test's name, never the candidate's)."""
    if not _is_stdlib_module(name):
        return None
    try:
        return importlib.import_module(name)
    except BaseException:
        return None


class _Missing:
    """A name the tests need from the candidate that its code does not define.

    Using it fails as a NameError would, and counts as reaching the candidate:
    a setup that fails on it is the candidate's fault, never the task's.
    """

    def __init__(self, channel: Channel, name: str) -> None:
        self._channel = channel
        self._name = name

    def _fail(self) -> CandidateError:
        self._channel.requests += 1
        message = f"the candidate's code defines no {self._name!r}, which the tests use"
        return candidate_exception_class(NameError)("NameError", message, "NameError")

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Fail: the candidate defines no such name."""
        raise self._fail()

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        raise self._fail()

    def __repr__(self) -> str:
        return f"<{self._name}: not defined by the candidate>"


def _bind_candidate(
    plan: CheckPlan, channel: Channel, load: LoadResult, namespace: dict[str, object]
) -> frozenset[str]:
    """Bind the declared names: functions as proxies, classes as handles; return those missing.

    Nothing else of the candidate's module is visible: a test's helpers and
    builtins are the trusted side's own, whatever the candidate defines. What
    a name is (a class whose instances the tests may use, or not) is the
    plan's to say, never the candidate's load report's.
    """
    missing = set()
    for name in sorted(plan.declared):
        kind = load.names.get(name)
        if kind is None:
            namespace[name] = _Missing(channel, name)
            missing.add(name)
        elif kind.startswith("exception:"):
            namespace[name] = channel.exception_stand_in(name, kind)
        elif kind in ("callable", "class") and name not in plan.classes:
            namespace[name] = CandidateFunction(channel, name, load.docs.get(name))
        else:
            # A class the task uses as one, a value, or anything else the report
            # says (a module, a kind it made up): read as a global, which this side
            # alone grants what it may answer; reading it reaches the candidate.
            namespace[name] = channel.do("global", None, name=name)
    return frozenset(missing)


def _setup_failed(plan: CheckPlan, failed: UnitOutcome) -> list[UnitOutcome]:
    """Every unit fails: setup that failed with the candidate's code loaded is its fault."""
    reason = f"test setup failed at line {failed.line}: {failed.error}"[:500]
    units = [
        UnitOutcome(stmt.line, stmt.source, "setup_error", reason)
        for stmt in plan.statements
        if stmt.is_unit
    ]
    return units or [dataclasses.replace(failed, outcome="setup_error")]


def run_plan(
    plan: CheckPlan,
    channel: Channel,
    load: LoadResult,
    entry_point: str | None,
    on_outcome: Callable[[UnitOutcome], None] | None = None,
    hidden: HiddenRun | None = None,
) -> list[UnitOutcome]:
    """Run every statement against the loaded candidate; one outcome per unit or failed setup.

    A setup statement that fails after the candidate was reached (a call, a
    global read), or that reads a name the tests need from the candidate and
    the candidate left out, fails every unit: the failure happens only with
    the candidate's code. One that fails without touching it is the task's.
    ``on_outcome`` is told each unit's outcome as it is known. ``hidden`` cases
    (:mod:`arbiter.graders.hidden_cases`) run after the visible units, their
    outcomes at lines ``-1``, ``-2``, ... with no source.

    Raises:
        CheckPlanError: the task's own helpers or setup failed, the candidate untouched.
    """
    if not plan.runnable:
        raise ValueError("a plan made not to run was given to run_plan")
    # The tests' namespace is a module's, registered while they run: library code
    # looks a class's module up by name (a prompt's dataclass, ``typing.get_type_hints``).
    module = ModuleType(_TESTS_MODULE)
    module.__dict__["__builtins__"] = builtins
    sys.modules[_TESTS_MODULE] = module
    try:
        return _run_plan(plan, channel, load, entry_point, on_outcome, module.__dict__, hidden)
    finally:
        if sys.modules.get(_TESTS_MODULE) is module:
            del sys.modules[_TESTS_MODULE]


_TESTS_MODULE = "__arbiter_tests__"


def _run_plan(
    plan: CheckPlan,
    channel: Channel,
    load: LoadResult,
    entry_point: str | None,
    on_outcome: Callable[[UnitOutcome], None] | None,
    namespace: dict[str, object],
    hidden: HiddenRun | None = None,
) -> list[UnitOutcome]:
    # Shapes the candidate returns (a dataclass of the prompt's) become this side's classes.
    channel.classes = plan.classes
    channel.shapes = codec.Shapes(namespace)
    for name in plan.modules:
        module = _stdlib_module(name)
        if module is not None:
            namespace[name] = module
    for stmt in plan.helpers:
        result = _run_statement(stmt, namespace, channel)
        if not result.passed:
            raise CheckPlanError(f"the task's helpers failed at line {stmt.line}: {result.error}")
    before = channel.requests
    try:
        missing = _bind_candidate(plan, channel, load, namespace)
    except ChannelBroken as e:
        return _setup_failed(plan, UnitOutcome(0, "(the candidate's globals)", e.reason, e.detail))  # type: ignore[arg-type]
    except (CandidateError, Uncrossable) as e:
        return _setup_failed(
            plan, UnitOutcome(0, "(the candidate's globals)", "runtime_error", str(e))
        )
    if plan.candidate_param and entry_point:
        bound = namespace.get(entry_point)
        if entry_point in plan.declared and bound is not None:
            namespace[plan.candidate_param] = bound
        else:
            namespace[plan.candidate_param] = CandidateFunction(channel, entry_point)
        if entry_point in missing:
            missing |= {plan.candidate_param}
    touched = channel.requests > before
    for stmt in plan.prelude:
        calls = channel.requests
        result = _run_statement(stmt, namespace, channel)
        touched = touched or channel.requests > calls
        if result.passed:
            continue
        if touched or channel.events or stmt.reads & missing:
            return _setup_failed(plan, result)
        raise CheckPlanError(f"test setup failed at line {stmt.line}: {result.error}")
    channel.send_ahead(_calls_ahead(plan, namespace))
    outcomes: list[UnitOutcome] = []
    for stmt in plan.statements:
        result = _run_statement(stmt, namespace, channel)
        if stmt.is_unit or not result.passed:
            outcomes.append(result)
            if on_outcome is not None:
                on_outcome(result)
    channel.drain_ahead()
    if hidden is not None and hidden.cases:
        for result in _run_hidden(hidden, channel):
            outcomes.append(result)
            if on_outcome is not None:
                on_outcome(result)
    return outcomes


@dataclass(frozen=True, slots=True)
class HiddenRun:
    """Hidden cases for one grading: the entry point, and ``(args, kwargs, expected)`` each."""

    entry_point: str
    cases: tuple[tuple[tuple[Any, ...], dict[str, Any], Any], ...]
    compare: Callable[[Any, Any], bool]


#: One hidden case, run as a unit would be: its call crosses like any test's.
_HIDDEN_CODE = compile(
    "assert __arbiter_same__(__arbiter_fn__(*__arbiter_case__[0], **__arbiter_case__[1]), "
    "__arbiter_case__[2])",
    "<hidden>",
    "exec",
    dont_inherit=True,
)


def _run_hidden(hidden: HiddenRun, channel: Channel) -> list[UnitOutcome]:
    """Call the entry point on each hidden case, in a namespace of their own.

    Their calls are sent ahead in batches (their arguments are literals, and
    nothing else runs between them), so they cost the candidate's work and
    little else. A hidden case's outcome carries no source and no message:
    what it was is not to be shown. Each grading passes copies of the cases'
    arguments: what the candidate does to its arguments is copied back to the
    objects passed, and the cases are kept for every grading of the task.
    """
    namespace: dict[str, object] = {
        "__builtins__": builtins,
        "__arbiter_fn__": CandidateFunction(channel, hidden.entry_point),
        "__arbiter_same__": hidden.compare,
    }
    statement = Statement(-1, "", _HIDDEN_CODE, True)
    outcomes: list[UnitOutcome] = []
    at = 0
    while at < len(hidden.cases):
        batch: list[tuple[str, tuple[Any, ...], dict[str, Any]]] = []
        size = 0
        for args, kwargs, _ in hidden.cases[at : at + MAX_AHEAD_CALLS]:
            size += len(repr(args)) + len(repr(kwargs))
            if batch and size > MAX_AHEAD_BYTES:
                break
            batch.append((hidden.entry_point, copy.deepcopy(args), copy.deepcopy(kwargs)))
        channel.send_ahead(batch)
        for (_, args, kwargs), (_, _, expected) in zip(
            batch, hidden.cases[at : at + len(batch)], strict=True
        ):
            at += 1
            namespace["__arbiter_case__"] = (args, kwargs, expected)
            result = _run_statement(statement, namespace, channel)
            outcomes.append(UnitOutcome(-at, "", result.outcome))
        channel.drain_ahead()
    return outcomes


#: At most this many calls, and this many bytes of arguments, are sent ahead.
MAX_AHEAD_CALLS = 64
MAX_AHEAD_BYTES = 32 << 10


def _calls_ahead(
    plan: CheckPlan, namespace: dict[str, object]
) -> list[tuple[str, tuple[Any, ...], dict[str, Any]]]:
    """Return the candidate calls the statements will make first, in order.

    Consecutive statements from the start: each either calls nothing, or is an
    assert whose only call is to a candidate function with literal arguments
    (:func:`_ahead_call`). The first statement of any other kind ends the list,
    so the candidate sees exactly the calls, in exactly the order, that one
    statement at a time would make; only the round trip between them is saved.
    """
    calls: list[tuple[str, tuple[Any, ...], dict[str, Any]]] = []
    rebound: set[str] = set()
    size = 0
    for stmt in plan.statements:
        if stmt.ahead is None:
            if stmt.calls:
                break
            rebound |= stmt.binds
            continue
        fn = namespace.get(stmt.ahead.fn)
        if stmt.ahead.fn in rebound or not isinstance(fn, CandidateFunction):
            break  # a helper of the tests' own could call the candidate in between
        size += len(repr(stmt.ahead.args)) + len(repr(stmt.ahead.kwargs))
        if len(calls) == MAX_AHEAD_CALLS or size > MAX_AHEAD_BYTES:
            break
        calls.append((fn.__name__, stmt.ahead.args, stmt.ahead.kwargs))
    return calls
