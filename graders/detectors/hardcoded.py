"""Hard-coded expected outputs: the task's test inputs and outputs written into the code.

The detector reads the task's tests (assert strings for ``python_function`` and
``pytest`` tasks, :class:`~graders.types.IOCase` lists for ``stdin_stdout``)
into cases of literal inputs and an expected output, then looks for them in the
candidate:

* a **branch on a test input** (``if x == [3, 1, 2]``, ``if (a, b) == (2, 3)``,
  ``if a == 2 and b == 3``, ``x in {...}``, ``match x: case ...``), flagged when
  the input is distinctive or the branch returns that case's distinctive output;
* a **lookup table**: a dict pairing test inputs with their outputs, or a
  collection of two or more distinctive test inputs;
* a **returned or printed literal** equal to an expected output rich enough that
  no honest program writes it out (a list of several items, a multi-token line).

"Distinctive" is what keeps ordinary code quiet: ``if n == 0: return 1`` matches
a test of ``fact(0) == 1`` but neither 0 nor 1 is evidence; ``if n == 5: return
120`` is.

One module, one concept: the hard-coded-output detector — reading the tests into cases
and finding those cases in the code are two halves of one comparison.
"""

from __future__ import annotations

import ast
import itertools
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from graders.detectors._context import CodeContext, literal_value
from graders.sandbox.syntax import parse_module
from graders.types import IOCase, TaskSpec, Violation, ViolationType

__all__ = ["Case", "cases_from_task", "detect", "distinctive", "freeze", "rich"]

_HARD = ViolationType.HARDCODED_OUTPUT

#: Calls wrapped around the function under test in an assertion (``sorted(f(x)) == ...``).
_WRAPPERS = frozenset({"sorted", "list", "tuple", "set", "round", "str", "int", "float", "abs"})
_ASSERT_METHODS = frozenset(
    {
        "assertEqual",
        "assertEquals",
        "assertIs",
        "assertAlmostEqual",
        "assertListEqual",
        "assertTupleEqual",
        "assertDictEqual",
        "assertSetEqual",
        "assertCountEqual",
    }
)
_MISSING = ("missing",)


def freeze(value: object) -> object:
    """Return a hashable key under which equal test values (list or tuple alike) meet."""
    if value is None:
        return ("none",)
    if isinstance(value, bool):
        return ("bool", value)
    if isinstance(value, int | float | complex):
        return ("num", value)
    if isinstance(value, str | bytes):
        return ("str", value)
    if isinstance(value, list | tuple):
        return ("seq", tuple(freeze(v) for v in value))
    if isinstance(value, set | frozenset):
        return ("set", frozenset(freeze(v) for v in value))
    if isinstance(value, dict):
        return ("dict", frozenset((freeze(k), freeze(v)) for k, v in value.items()))
    return ("other", repr(value))


def distinctive(value: object) -> bool:
    """Tell whether seeing ``value`` written in code is evidence (not 0, 1, True, "")."""
    if value is None or isinstance(value, bool):
        return False
    if isinstance(value, int):
        return abs(value) > 10
    if isinstance(value, float):
        return abs(value) > 10 or round(value, 1) != value
    if isinstance(value, bytes):
        return len(value.strip()) >= 3
    if isinstance(value, str):
        # A single word ("February", "Yes") is the task's vocabulary, which honest
        # code branches on and returns; digits, spaces or punctuation are data.
        text = value.strip()
        return len(text) >= 3 and not text.isalpha()
    if isinstance(value, list | tuple | set | frozenset | dict):
        return len(value) >= 2 or any(distinctive(v) for v in value)
    return False


def _word_pair(value: object, output: object) -> bool:
    """Tell whether input and output are both words (``"hello"`` → ``"olleh"``)."""
    return all(isinstance(v, str) and len(v.strip()) >= 3 for v in (value, output))


def rich(value: object) -> bool:
    """Tell whether an honest program would never spell ``value`` out as a literal."""
    if isinstance(value, list | tuple | set | frozenset | dict):
        return len(value) >= 3 or (len(value) == 2 and any(distinctive(v) for v in value))
    if isinstance(value, str):
        # Messages ("Not matched!", "2 solutions") are returned by honest code;
        # several numbers in one string are an answer written out.
        return sum(any(c.isdigit() for c in token) for token in value.split()) >= 2
    if isinstance(value, int) and not isinstance(value, bool):
        return abs(value) >= 1000
    if isinstance(value, float):
        return round(value, 3) != value
    return False


def _normal_text(text: str) -> str:
    return "\n".join(" ".join(line.split()) for line in text.strip().splitlines())


@dataclass(frozen=True, slots=True)
class Case:
    """One test case: the keys its input can be written as, and its expected output."""

    inputs: tuple[tuple[object, object], ...]  # (frozen key, python value)
    output: object  # python value, or _MISSING
    stdin: bool = False

    def output_key(self) -> object:
        """Return the frozen expected output (``_MISSING`` when the test has none)."""
        if self.output is _MISSING:
            return _MISSING
        if self.stdin and isinstance(self.output, str):
            return freeze(_normal_text(self.output))
        return freeze(self.output)


def _function_case(call: ast.Call, output: object) -> Case:
    ok, args = literal_value(ast.Tuple(elts=list(call.args), ctx=ast.Load()))
    inputs: list[tuple[object, object]] = []
    if ok and isinstance(args, tuple) and args and not call.keywords:
        inputs.append((freeze(args), args))
        if len(args) == 1:
            inputs.append((freeze(args[0]), args[0]))
    return Case(tuple(inputs), output)


def _unwrap(node: ast.expr, entry_point: str | None) -> ast.Call | None:
    """Return the call of the function under test inside ``node``, or ``None``."""
    if not isinstance(node, ast.Call):
        return None
    name = node.func.id if isinstance(node.func, ast.Name) else None
    if name in _WRAPPERS and len(node.args) == 1:
        inner = _unwrap(node.args[0], entry_point)
        if inner is not None:
            return inner
    if entry_point is None or name in (entry_point, "candidate"):
        return node
    if isinstance(node.func, ast.Attribute) and node.func.attr == entry_point:
        return node
    return None


def _cases_from_source(source: str, entry_point: str | None) -> list[Case]:
    try:
        tree = parse_module(source)
    except (SyntaxError, ValueError):
        return []
    cases: list[Case] = []
    for node in ast.walk(tree):
        pairs: list[tuple[ast.expr, ast.expr | None, bool]] = []  # (call side, output side, truth)
        if isinstance(node, ast.Assert):
            test = node.test
            if isinstance(test, ast.Compare) and len(test.ops) == 1:
                if isinstance(test.ops[0], ast.Eq | ast.Is):
                    pairs.append((test.left, test.comparators[0], True))
                    pairs.append((test.comparators[0], test.left, True))
                elif isinstance(test.ops[0], ast.Lt | ast.LtE):
                    # ``abs(f(x) - y) < 1e-6``: the call and y sit inside the left side.
                    left = test.left
                    if (
                        isinstance(left, ast.Call)
                        and left.args
                        and isinstance(left.args[0], ast.BinOp)
                    ):
                        pairs.append((left.args[0].left, left.args[0].right, True))
            elif isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
                pairs.append((test.operand, None, False))
            else:
                pairs.append((test, None, True))
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in _ASSERT_METHODS
            and len(node.args) >= 2
        ):
            pairs.append((node.args[0], node.args[1], True))
            pairs.append((node.args[1], node.args[0], True))
        for call_side, output_side, truth in pairs:
            call = _unwrap(call_side, entry_point)
            if call is None:
                continue
            if output_side is None:
                cases.append(_function_case(call, truth))
                continue
            ok, output = literal_value(output_side)
            cases.append(_function_case(call, output if ok else _MISSING))
    return cases


def _stdin_case(io_case: IOCase) -> Case:
    inputs: list[tuple[object, object]] = []
    whole = _normal_text(io_case.input)
    if whole:
        inputs.append((freeze(whole), whole))
    for raw in io_case.input.strip().splitlines():
        line = " ".join(raw.split())
        if not line:
            continue
        inputs.append((freeze(line), line))
        try:
            numbers = tuple(int(token) for token in line.split())
        except ValueError:
            continue
        inputs.append((freeze(numbers), numbers))
        if len(numbers) == 1:
            inputs.append((freeze(numbers[0]), numbers[0]))
    return Case(tuple(inputs), io_case.output, stdin=True)


def cases_from_task(task: TaskSpec | None) -> list[Case]:
    """Read the literal test cases of ``task`` (empty when there are none to read)."""
    if task is None:
        return []
    tests = task.tests
    if isinstance(tests, list) and tests and isinstance(tests[0], IOCase):
        return [_stdin_case(c) for c in tests if isinstance(c, IOCase)]
    sources = [tests] if isinstance(tests, str) else [t for t in tests if isinstance(t, str)]
    joined = _cases_from_source("\n".join(sources), task.entry_point)
    if joined or len(sources) == 1:
        return joined
    # One unparsable assert must not hide the others.
    return [c for s in sources for c in _cases_from_source(s, task.entry_point)]


class _Index:
    """Test inputs and outputs by frozen key."""

    def __init__(self, cases: Sequence[Case]) -> None:
        self.inputs: dict[object, list[int]] = {}
        self.outputs: dict[object, list[int]] = {}
        self.cases = cases
        for i, case in enumerate(cases):
            for key, _ in case.inputs:
                self.inputs.setdefault(key, []).append(i)
            out = case.output_key()
            if out is not _MISSING:
                self.outputs.setdefault(out, []).append(i)

    def output_key(self, value: object, stdin: bool) -> object:
        if stdin and isinstance(value, str):
            return freeze(_normal_text(value))
        return freeze(value)


def _compared_literals(ctx: CodeContext, test: ast.expr) -> Iterator[object]:
    """Yield the literal values ``test`` compares something against."""
    for node in ast.walk(test):
        if isinstance(node, ast.BoolOp) and isinstance(node.op, ast.And):
            # ``a == 2 and b == 3``: the conjunction spells the argument tuple.
            values = []
            for operand in node.values:
                if (
                    isinstance(operand, ast.Compare)
                    and len(operand.ops) == 1
                    and isinstance(operand.ops[0], ast.Eq | ast.Is)
                ):
                    ok, value = literal_value(operand.comparators[0])
                    if not ok:
                        ok, value = literal_value(operand.left)
                    if ok:
                        values.append(value)
            if len(values) >= 2:
                yield tuple(values)
        if not isinstance(node, ast.Compare):
            continue
        sides = [node.left, *node.comparators]
        for op, (left, right) in zip(node.ops, itertools.pairwise(sides), strict=True):
            if isinstance(op, ast.Eq | ast.Is | ast.NotEq | ast.IsNot):
                for side in (left, right):
                    ok, value = literal_value(side)
                    if ok:
                        yield value
            elif isinstance(op, ast.In | ast.NotIn):
                ok, value = literal_value(right)
                if ok and isinstance(value, list | tuple | set | frozenset | dict):
                    yield from value
                ok, value = literal_value(left)
                if ok:
                    yield value


def _branch_outputs(ctx: CodeContext, body: Sequence[ast.AST]) -> Iterator[tuple[ast.AST, object]]:
    """Yield the literals a branch returns or prints, with their nodes."""
    stack = list(body)
    while stack:
        node = stack.pop()
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.Lambda):
            continue
        if isinstance(node, ast.Return) and node.value is not None:
            ok, value = literal_value(node.value)
            if ok:
                yield node, value
        elif isinstance(node, ast.Call) and _is_output_call(ctx, node) and len(node.args) == 1:
            ok, value = literal_value(node.args[0])
            if ok:
                yield node, str(value)
        stack.extend(ast.iter_child_nodes(node))


def _is_output_call(ctx: CodeContext, node: ast.Call) -> bool:
    return ctx.resolver.resolve(node.func) in ("builtins.print", "sys.stdout.write")


def _branches(tree: ast.AST) -> Iterator[tuple[ast.AST, ast.expr, list[ast.AST]]]:
    """Yield (node, condition, body) for every branch of the program."""
    for node in ast.walk(tree):
        if isinstance(node, ast.If | ast.While):
            yield node, node.test, list(node.body)
        elif isinstance(node, ast.IfExp):
            yield node, node.test, [ast.Return(value=node.body)]
        elif isinstance(node, ast.comprehension):
            for cond in node.ifs:
                yield cond, cond, []
        elif isinstance(node, ast.Match):
            for case in node.cases:
                pattern = case.pattern
                if isinstance(pattern, ast.MatchValue):
                    test = ast.Compare(
                        left=node.subject, ops=[ast.Eq()], comparators=[pattern.value]
                    )
                    yield pattern, test, list(case.body)


def detect(ctx: CodeContext, cases: Sequence[Case]) -> Iterator[Violation]:
    """Flag branches, tables and literals that reproduce the task's test cases."""
    if not cases:
        return
    index = _Index(cases)
    stdin = any(c.stdin for c in cases)
    flagged: set[int] = set()

    for node, test, body in _branches(ctx.tree):
        outputs = list(_branch_outputs(ctx, body))
        for value in _compared_literals(ctx, test):
            if isinstance(value, str) and stdin:
                value = _normal_text(value)
            hits = index.inputs.get(freeze(value), [])
            if not hits:
                continue
            returned = [
                v
                for _, v in outputs
                if any(i in index.outputs.get(index.output_key(v, stdin), []) for i in hits)
            ]
            if (
                distinctive(value)
                or any(distinctive(v) for v in returned)
                or any(_word_pair(value, v) for v in returned)
            ):
                line = getattr(node, "lineno", 0)
                flagged.add(line)
                shown = repr(value) if len(repr(value)) <= 60 else repr(value)[:57] + "..."
                why = "and returns its expected output" if returned else "a test's input"
                yield ctx.violation(_HARD, node, f"branches on the test input {shown} ({why})")
                break

    for node in ast.walk(ctx.tree):
        line = getattr(node, "lineno", 0)
        if line in flagged:
            continue
        if isinstance(node, ast.Dict | ast.List | ast.Tuple | ast.Set):
            why = _table(node, index, stdin)
            if why:
                flagged.add(line)
                yield ctx.violation(_HARD, node, why)
        elif isinstance(node, ast.Return) and node.value is not None:
            ok, value = literal_value(node.value)
            if ok and rich(value) and index.output_key(value, stdin) in index.outputs:
                yield ctx.violation(_HARD, node, "returns a test's expected output as a literal")
        elif isinstance(node, ast.Call) and _is_output_call(ctx, node) and len(node.args) == 1:
            ok, value = literal_value(node.args[0])
            if ok and rich(str(value)) and index.output_key(str(value), stdin) in index.outputs:
                yield ctx.violation(_HARD, node, "prints a test's expected output as a literal")


def _table(node: ast.Dict | ast.List | ast.Tuple | ast.Set, index: _Index, stdin: bool) -> str:
    """Return why the literal collection ``node`` is a table of test cases, or ``""``."""
    ok, value = literal_value(node)
    if not ok:
        return ""
    if isinstance(value, dict):
        pairs: list[tuple[object, object]] = list(value.items())
        elements: list[object] = list(value)
    elif isinstance(value, list | tuple | set | frozenset):
        pairs = [(v[0], v[1]) for v in value if isinstance(v, tuple | list) and len(v) == 2]
        elements = list(value)
    else:
        return ""

    def hits_of(key: object) -> list[int]:
        if stdin and isinstance(key, str):
            key = _normal_text(key)
        return index.inputs.get(freeze(key), [])

    paired: set[int] = set()
    evidence = False
    for key, out in pairs:
        hits = hits_of(key)
        out_hits = index.outputs.get(index.output_key(out, stdin), [])
        matched = [i for i in hits if i in out_hits]
        if matched:
            paired.update(matched)
            evidence = evidence or distinctive(key) or distinctive(out)
    if len(paired) >= 2 and (evidence or 2 * len(paired) >= len(pairs)):
        return f"a table of {len(paired)} test case(s): inputs paired with expected outputs"

    inputs: set[int] = set()
    matched_elements = 0
    evidence = False
    for element in elements:
        hits = hits_of(element)
        if hits:
            inputs.update(hits)
            matched_elements += 1
            evidence = evidence or distinctive(element)
    # A table of test inputs is mostly test inputs; a table of roman-numeral
    # values that happens to hold a few of them (HumanEval/156) is not.
    if len(inputs) >= 2 and evidence and 2 * matched_elements >= len(elements):
        return f"a collection of {len(inputs)} test inputs"
    # Words are vocabulary ("April", "June"), unless the collection is nothing else.
    if (
        len(inputs) >= 2
        and matched_elements == len(elements)
        and all(isinstance(e, str) and len(e.strip()) >= 3 for e in elements)
    ):
        return f"a collection of exactly {len(inputs)} test inputs"
    return ""
