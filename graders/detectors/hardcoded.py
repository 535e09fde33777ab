"""Hard-coded expected outputs: the task's test inputs and outputs written into the code.

The detector reads the task's tests (assert strings for ``python_function`` and
``pytest`` tasks, :class:`~arbiter.graders.types.IOCase` lists for ``stdin_stdout``)
into cases of literal inputs and an expected output, then looks for them in the
candidate. Hard-coding is code that carries the tests' own inputs and answers, so
every piece of evidence is a link to the task's test cases; a table or constant
that coincides with an expected output without such a link (month lengths, roman
numerals, factorials up to 20, a ``-1 -1`` printed for "no answer") is the
domain's, not the tests':

* a **branch on a test input** (``if x == [3, 1, 2]``, ``if (a, b) == (2, 3)``,
  ``if a == 2 and b == 3``, ``x in {...}``, ``match x: case ...``), flagged when
  the input is distinctive or the branch returns that case's own output (below);
  a membership test counts only when its collection is all test inputs (not
  ``month in (4, 6, 9, 11)``, a class of the domain tests fall in);
* a **lookup table** whose entries are mostly the tests' (a table of the domain
  covers its domain, of which the tests sample a few points): a dict or list of
  pairs mostly pairing test inputs with their own outputs, a collection mostly of
  test inputs, or the answers alone whatever the keys (a table looked up by a
  hash of the input): entries that are mostly *different* expected outputs,
  two of them their tests' own (31 written seven times for the months is one
  answer);
* a **table keyed by a hash of the input** (``T[zlib.crc32(repr(x).encode())]``,
  ``hash``, ``binascii.crc32``, ``zlib.adler32``, ``hashlib`` digests, also
  through a name holding the hash): a literal table looked up with such a key
  that holds a distinctive expected output, or two different ones;
* a **table stored as text** and decoded at run time (``json.loads``,
  ``ast.literal_eval``, ``eval`` of a literal, ``pickle``/``marshal`` of bytes,
  base64, hex, zlib/gzip/bz2/lzma, a string split into lines or fields): the
  constant is decoded here (never run: pure decoders and this module's own
  readers of pickle and marshal data, at most 1 MiB a step) and the value goes
  through the table checks above, its strings read as the data they spell
  (``"0 2 3"``, ``"[1, 4]"``), or matches a rich expected output whole;
* **code kept in a string** that ``exec``/``eval``/``compile`` run, assembled or
  decoded from constants (a concatenation, a ``join``, bytes, base64, zlib): the
  source is parsed, never run, and this detector runs over it, reporting at the
  line that runs it. A plain string constant is analysed by
  :mod:`arbiter.graders.detectors` with every family. Running code from a string is not
  itself evidence here: only hard-coding found inside it is;
* a **returned or printed literal** equal to an expected output rich enough that
  no honest program writes it out (a list of several items, a multi-token line)
  and that is its test's own.

An expected output is its test's own when it holds a distinctive value or two
different values of that test's input (``1 2 3 4 5`` for ``5 3 1 4 2``); a
sentinel (``-1 -1``, ``[-1, -1]``) or a message (``0 seconds``) equal to it is
what the task answers for a whole class of inputs, and no link to the test.

"Distinctive" is what keeps ordinary code quiet: ``if n == 0: return 1`` matches
a test of ``fact(0) == 1`` but neither 0 nor 1 is evidence; ``if n == 5: return
120`` is. The hidden forms cost a walk of the program that the literal checks
already make; text is decoded only at calls of a decoder or a ``str`` method,
within per-program caps on decoded size, decompressions and parsed text.

One module, one concept: the hard-coded-output detector — reading the tests into cases
and finding those cases in the code are two halves of one comparison.
"""

from __future__ import annotations

import ast
import base64
import binascii
import bz2
import codecs
import contextlib
import itertools
import json
import lzma
import pickletools
import struct
import zlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from arbiter.graders.detectors._context import CodeContext, literal_value
from arbiter.graders.sandbox.syntax import parse_expression, parse_module
from arbiter.graders.types import IOCase, TaskSpec, Violation, ViolationType

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


#: Most items read out of one value to tell whether it is its own test's output.
_MAX_ITEMS_READ = 10_000


def _token(text: str) -> object:
    """Return a token of text as the number it spells, or as itself."""
    try:
        return int(text)
    except ValueError:
        pass
    try:
        return float(text)
    except ValueError:
        return text


def _items(value: object) -> list[object] | None:
    """Return what a value of several items is made of, or ``None`` for a single value.

    A text's items are its whitespace-separated tokens (numbers read as numbers), a
    collection's its members (a dict's keys and values).
    """
    if isinstance(value, bytes):
        try:
            value = value.decode("utf-8")
        except UnicodeDecodeError:
            return None
    if isinstance(value, str):
        return [_token(t) for t in itertools.islice(value.split(), _MAX_ITEMS_READ)]
    if isinstance(value, dict):
        pairs = itertools.islice(value.items(), _MAX_ITEMS_READ // 2)
        return [item for pair in pairs for item in pair]
    if isinstance(value, list | tuple | set | frozenset):
        return list(itertools.islice(value, _MAX_ITEMS_READ))
    return None


def _input_items(case: Case) -> frozenset[object]:
    """Return the frozen scalars a case's input is made of: members, tokens, numbers."""
    found: set[object] = set()
    stack: list[object] = [value for _, value in case.inputs]
    while stack and len(found) < _MAX_ITEMS_READ:
        item = stack.pop()
        if isinstance(item, str):
            found.add(freeze(item))
            found.update(freeze(_token(t)) for t in item.split()[:_MAX_ITEMS_READ])
        elif isinstance(item, dict):
            stack.extend(itertools.islice(itertools.chain(item, item.values()), _MAX_ITEMS_READ))
        elif isinstance(item, list | tuple | set | frozenset):
            stack.extend(itertools.islice(item, _MAX_ITEMS_READ))
        else:
            found.add(freeze(item))
    return frozenset(found)


def _own_output(value: object, input_items: frozenset[object]) -> bool:
    """Tell whether ``value``, a case's expected output, carries something of that case.

    An output equal to the expected one is not yet a link to the test: a sentinel
    (``-1 -1``, ``[-1, -1]``, ``0 0``) or a message (``0 seconds``) is what the
    task prints for a whole class of inputs, and honest code spells it out. It is
    the test's own when it holds a distinctive value (``120``, ``[0, 2, 3, 5, 9,
    123]``) or two different values of that test's input (``1 2 3 4 5`` for the
    input ``5 3 1 4 2``: an answer worked out by hand); ``input_items`` are those
    values (:func:`_input_items`).
    """
    items = _items(value)
    if items is None:
        return distinctive(value)
    if any(not isinstance(item, str) and distinctive(item) for item in items):
        return True
    shared = {freeze(item) for item in items} & input_items
    return len(shared) >= 2


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
    # A pytest task's entry point names the candidate's module, not a function:
    # every call an assert makes may be the one under test.
    entry_point = None if task.kind == "pytest" else task.entry_point
    joined = _cases_from_source("\n".join(sources), entry_point)
    if joined or len(sources) == 1:
        return joined
    # One unparsable assert must not hide the others.
    return [c for s in sources for c in _cases_from_source(s, entry_point)]


class _Index:
    """Test inputs and outputs by frozen key."""

    def __init__(self, cases: Sequence[Case]) -> None:
        self.inputs: dict[object, list[int]] = {}
        self.outputs: dict[object, list[int]] = {}
        self.cases = cases
        self.stdin = any(c.stdin for c in cases)
        self._read: dict[str | bytes, list[object]] = {}
        self._parse_budget = _MAX_PARSED  # characters of decoded text parsed as literals
        for i, case in enumerate(cases):
            for key, _ in case.inputs:
                self.inputs.setdefault(key, []).append(i)
            out = case.output_key()
            if out is not _MISSING:
                self.outputs.setdefault(out, []).append(i)
        #: The kinds and sizes of the test values: a decoded value of another shape is
        #: no test value, and is not frozen to find out (a 3000-item list costs).
        self._shapes = {_frozen_shape(k) for k in itertools.chain(self.inputs, self.outputs)}
        self._input_items: dict[int, frozenset[object]] = {}

    def own(self, value: object, case: int) -> bool:
        """Tell whether ``value``, the expected output of case ``case``, is that case's own.

        See :func:`_own_output`: a sentinel or a message equal to it is not.
        """
        items = self._input_items.get(case)
        if items is None:
            items = self._input_items[case] = _input_items(self.cases[case])
        return _own_output(value, items)

    def own_in(self, value: object, cases: Sequence[int]) -> bool:
        """Tell whether ``value`` is the own expected output of one of ``cases``."""
        return any(self.own(value, case) for case in cases)

    def output_key(self, value: object, stdin: bool) -> object:
        if stdin and isinstance(value, str):
            return freeze(_normal_text(value))
        return freeze(value)

    def matches(self, value: object, decoded: bool, *, output: bool) -> tuple[list[int], object]:
        """Return the cases whose input (or output) ``value`` is, and the reading that matched.

        A value decoded from text is read several ways (:meth:`readings`).
        """
        for reading in self.readings(value, decoded):
            if decoded and _shape(reading) not in self._shapes:
                continue
            if output:
                hits = self.outputs.get(self.output_key(reading, self.stdin), [])
            else:
                text = _normal_text(reading) if self.stdin and isinstance(reading, str) else None
                hits = self.inputs.get(freeze(reading if text is None else text), [])
            if hits:
                return hits, reading
        return [], value

    def readings(self, value: object, decoded: bool) -> list[object]:
        """Return the ways ``value`` may stand for a test value: decoded text is data too.

        ``"0 2 3"`` from a split string may be the list ``[0, 2, 3]`` and ``"[1, 4]"``
        the list it spells; a value written in code is only itself.
        """
        if not decoded or not isinstance(value, str | bytes):
            return [value]
        found = self._read.get(value)
        if found is None:
            found, parsed = _readings(value, self._parse_budget)
            self._read[value] = found
            self._parse_budget -= parsed
        return found


def _compared_literals(ctx: CodeContext, test: ast.expr, index: _Index) -> Iterator[object]:
    """Yield the literal values ``test`` compares something against.

    The members of a collection tested for membership count only when every one
    of them is a test input: ``month in (4, 6, 9, 11)`` is a class of the domain
    that tests fall in, not test inputs singled out.
    """
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
                    members = list(value)
                    if all(index.matches(m, False, output=False)[0] for m in members):
                        yield from members
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


_OUTPUT_CALLS = frozenset({"builtins.print", "sys.stdout.write"})


def _is_output_call(ctx: CodeContext, node: ast.Call) -> bool:
    return ctx.resolver.resolve(node.func) in _OUTPUT_CALLS


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
    yield from _detect(ctx, _Index(cases), 0)


def _detect(ctx: CodeContext, index: _Index, depth: int) -> Iterator[Violation]:
    """Run the detector over ``ctx``; ``depth`` counts the code strings it sits in."""
    stdin = index.stdin
    flagged: set[int] = set()

    for node, test, body in _branches(ctx.tree):
        outputs = list(_branch_outputs(ctx, body))
        for value in _compared_literals(ctx, test, index):
            if isinstance(value, str) and stdin:
                value = _normal_text(value)
            hits = index.inputs.get(freeze(value), [])
            if not hits:
                continue
            # What the branch returns that is the output of the very case it compares with.
            returned = [
                (v, [i for i in index.outputs.get(index.output_key(v, stdin), []) if i in hits])
                for _, v in outputs
            ]
            returned = [(v, cases) for v, cases in returned if cases]
            if (
                distinctive(value)
                or any(index.own_in(v, cases) for v, cases in returned)
                or any(_word_pair(value, v) for v, _ in returned)
            ):
                line = getattr(node, "lineno", 0)
                flagged.add(line)
                shown = repr(value) if len(repr(value)) <= 60 else repr(value)[:57] + "..."
                why = "and returns its expected output" if returned else "a test's input"
                yield ctx.violation(_HARD, node, f"branches on the test input {shown} ({why})")
                break

    folder = _Folder(ctx, hashing=_hashes_referenced(ctx))
    sites: list[ast.Call] = []  # decoders, text methods, code runners
    lookups: list[ast.Call | ast.Subscript] = []  # ``T[k]`` and ``T.get(k)``, when hashing
    tables: set[int] = set()  # the collections already reported
    for node in ast.walk(ctx.tree):
        folder.learn(node)
        line = getattr(node, "lineno", 0)
        if line in flagged:
            continue
        if isinstance(node, ast.Dict | ast.List | ast.Tuple | ast.Set):
            why = _table(node, index)
            if why:
                flagged.add(line)
                tables.add(id(node))
                yield ctx.violation(_HARD, node, why)
        elif isinstance(node, ast.Return) and node.value is not None:
            ok, value = literal_value(node.value)
            if ok and _written_out(value, index):
                yield ctx.violation(_HARD, node, "returns a test's expected output as a literal")
        elif isinstance(node, ast.Call):
            qualname = ctx.resolver.resolve(node.func)
            if qualname in _OUTPUT_CALLS and len(node.args) == 1:
                ok, value = literal_value(node.args[0])
                if ok and _written_out(str(value), index):
                    yield ctx.violation(_HARD, node, "prints a test's expected output as a literal")
            method = node.func.attr if isinstance(node.func, ast.Attribute) else None
            if qualname in _CODE_RUNNERS or qualname in _DECODERS or method in _TEXT_METHODS:
                sites.append(node)
            if folder.hashing and method in ("get", "__getitem__") and node.args:
                lookups.append(node)
        elif isinstance(node, ast.Subscript) and folder.hashing and isinstance(node.ctx, ast.Load):
            lookups.append(node)

    # The program's names are all known now: fold what the walk set aside.
    folder.settle()
    for site in sites:
        line = site.lineno
        if line not in flagged:
            for violation in _hidden(ctx, folder, site, index, depth):
                flagged.add(line)
                tables.add(id(site))
                yield violation
    for lookup in lookups:
        why = "" if lookup.lineno in flagged else _hashed_lookup(folder, lookup, index, tables)
        if why:
            flagged.add(lookup.lineno)
            yield ctx.violation(_HARD, lookup, why)


def _written_out(value: object, index: _Index) -> bool:
    """Tell whether the literal ``value`` is a test's own expected output, written out whole.

    Rich enough that no honest program spells it (several items, a multi-number
    line), and that test's own rather than a sentinel it shares with the task
    (``print("-1 -1")`` for "no answer" is honest even when a test expects it).
    """
    if not rich(value):
        return False
    cases = index.outputs.get(index.output_key(value, index.stdin), [])
    return index.own_in(value, cases)


def _hashes_referenced(ctx: CodeContext) -> bool:
    """Tell whether the program refers to a hash function at all (else no lookup is hashed)."""
    return any(
        ref.qualname in _HASH_CALLS or ref.qualname.startswith(_HASH_MODULES)
        for ref in ctx.references
    )


# ---- literal tables


def _table(node: ast.Dict | ast.List | ast.Tuple | ast.Set, index: _Index) -> str:
    """Return why the literal collection ``node`` is a table of test cases, or ``""``."""
    ok, value = literal_value(node)
    if ok:
        return _collection_why(value, index, decoded=False)
    if not isinstance(node, ast.Dict):
        return ""
    # Keys computed at run time (``{hash(...): [1, 2, 3]}``): the literal entries,
    # and the literal values whatever their keys, may still be the answers.
    pairs: list[tuple[object, object]] = []
    values: list[object] = []
    for key_node, value_node in zip(node.keys, node.values, strict=True):
        ok, value = literal_value(value_node)
        if not ok:
            continue
        values.append(value)
        ok, key = literal_value(key_node) if key_node is not None else (False, None)
        if ok:
            pairs.append((key, value))
    return _why(pairs, [k for k, _ in pairs], values, True, index, decoded=False)


def _collection_why(value: object, index: _Index, *, decoded: bool) -> str:
    """Return why the collection ``value`` is a table of test cases, or ``""``."""
    if isinstance(value, dict):
        return _why(list(value.items()), list(value), list(value.values()), True, index, decoded)
    if isinstance(value, list | tuple | set | frozenset):
        pairs = [(v[0], v[1]) for v in value if isinstance(v, tuple | list) and len(v) == 2]
        members = list(value)
        return _why(pairs, members, members, False, index, decoded)
    return ""


def _mostly(part: int, whole: int) -> bool:
    """Tell whether ``part`` of ``whole`` entries is a strict majority of them."""
    return 2 * part > whole


def _why(
    pairs: Sequence[tuple[object, object]],
    elements: Sequence[object],
    values: Sequence[object],
    keyed: bool,
    index: _Index,
    decoded: bool,
) -> str:
    """Return why a collection is a table of test cases, or ``""``.

    A table of the domain (month lengths, roman numerals, HTTP reason phrases,
    factorials up to 20) covers its domain, of which the tests sample a few
    points: a few of its entries are test cases, most are not. A table of the
    tests is made of them. So each of the three readings asks for entries that
    are mostly the tests' own:

    * pairs: most entries pair a test's input with that test's expected output,
      and one of those outputs is its test's own (:func:`_own_output`) or every
      entry is a test case (``{'Arbiter': 3, 'xyz': 0, '': 0}``);
    * inputs: most members are test inputs, one of them distinctive, or every
      member is a test input of a word or more (``("racecar", "abba")``);
    * answers, whatever the keys (``{2212294583: [1, 2, 3], ...}``, looked up by a
      hash of the input): most entries are different expected outputs, two of
      them their tests' own; a value that several domain keys share (31 days)
      is one answer, however often it is written.

    Args:
        pairs: its (key, value) entries, or its two-item members.
        elements: its keys, or its members.
        values: its values, or its members.
        keyed: whether it is a dict (for the wording only).
        index: the task's cases.
        decoded: whether it was decoded from text (its strings are read as values too).
    """
    paired: set[int] = set()
    linked = 0  # entries pairing a test's input with that test's output
    own = False
    for key, out in pairs:
        hits, _ = index.matches(key, decoded, output=False)
        if not hits:
            continue
        out_hits, out_read = index.matches(out, decoded, output=True)
        matched = [i for i in hits if i in out_hits]
        if matched:
            linked += 1
            paired.update(matched)
            own = own or index.own_in(out_read, matched)
    if len(paired) >= 2 and _mostly(linked, len(pairs)) and (own or linked == len(pairs)):
        return f"a table of {len(paired)} test case(s): inputs paired with expected outputs"

    inputs: set[int] = set()
    matched_elements = 0
    evidence = False
    words = True
    for element in elements:
        hits, reading = index.matches(element, decoded, output=False)
        if hits:
            inputs.update(hits)
            matched_elements += 1
            evidence = evidence or distinctive(reading)
        words = words and isinstance(reading, str) and len(reading.strip()) >= 3
    # A table of test inputs is mostly test inputs; a table of roman-numeral
    # values that happens to hold a few of them (HumanEval/156) is not.
    if len(inputs) >= 2 and evidence and _mostly(matched_elements, len(elements)):
        return f"a collection of {len(inputs)} test inputs"
    # Words are vocabulary ("April", "June"), unless the collection is nothing else.
    if len(inputs) >= 2 and matched_elements == len(elements) and words:
        return f"a collection of exactly {len(inputs)} test inputs"

    answers: dict[object, bool] = {}  # each different expected output: whether it is its test's
    for value in values:
        hits, reading = index.matches(value, decoded, output=True)
        if hits:
            key = index.output_key(reading, index.stdin)
            answers[key] = answers.get(key, False) or index.own_in(reading, hits)
    if sum(answers.values()) >= 2 and _mostly(len(answers), len(values)):
        kind = "a table whose values are" if keyed else "a collection of"
        return f"{kind} {len(answers)} of the tests' expected outputs"
    return ""


# ---- hidden tables: decoded text, hashed keys, code strings


def _hidden(
    ctx: CodeContext, folder: _Folder, node: ast.Call, index: _Index, depth: int
) -> Iterator[Violation]:
    """Yield what the call ``node`` hides: a table decoded from text, or hard-coded code text."""
    runner = ctx.resolver.resolve(node.func) in _CODE_RUNNERS
    if runner and node.args and depth < _MAX_CODE_DEPTH:
        found = list(_code_string(ctx, folder, node, index, depth))
        if found:
            yield from found
            return
    decoded = folder.fold(node)
    if decoded is not None and decoded.steps:
        why = _decoded_why(decoded.value, index)
        if why:
            yield ctx.violation(
                _HARD, node, f"{why}, decoded at run time ({', '.join(decoded.steps)})"
            )


def _decoded_why(value: object, index: _Index) -> str:
    """Return why a value decoded from text is the tests' answers, or ``""``."""
    containers = 0
    stack = [value]
    while stack and containers < _MAX_TABLES:
        item = stack.pop()
        if isinstance(item, dict | list | tuple | set | frozenset):
            containers += 1
            why = _collection_why(item, index, decoded=True)
            if why:
                return why
            members = item.values() if isinstance(item, dict) else item
            stack.extend(m for m in members if isinstance(m, dict | list | tuple | set | frozenset))
    for reading in index.readings(value, True):
        if _written_out(reading, index):
            return "a test's expected output"
    return ""


def _hashed_lookup(
    folder: _Folder, node: ast.Call | ast.Subscript, index: _Index, reported: set[int]
) -> str:
    """Return why ``node`` looks an answer up by a hash of the input, or ``""``.

    A table already reported (``reported`` holds node ids) is not reported again.
    """
    if isinstance(node, ast.Subscript):
        table, key = node.value, node.slice
    elif isinstance(node.func, ast.Attribute):
        table, key = node.func.value, node.args[0]
    else:
        return ""
    hasher = folder.hash_in(key)
    if hasher is None:
        return ""
    if isinstance(table, ast.Name) and table.id in folder.bindings:
        table = folder.bindings[table.id]
    if id(table) in reported:
        return ""
    values = folder.table_values(table)
    if len(values) < 2:
        return ""
    answers: set[object] = set()
    evidence = False
    for value in values:
        hits, reading = index.matches(value, True, output=True)
        if hits:
            answers.add(index.output_key(reading, index.stdin))
            evidence = evidence or distinctive(reading)
    if len(answers) >= 2 or evidence:
        return f"looks the tests' expected outputs up in a table keyed by a hash ({hasher})"
    return ""


def _code_string(
    ctx: CodeContext, folder: _Folder, node: ast.Call, index: _Index, depth: int
) -> Iterator[Violation]:
    """Run the detector over source assembled or decoded from constants for ``exec``/``eval``."""
    payload = node.args[0]
    if depth == 0 and isinstance(payload, ast.Constant) and isinstance(payload.value, str):
        return  # a plain string is analysed by graders.detectors, with every family
    decoded = folder.fold(payload)
    source = decoded.value if decoded is not None else None
    if isinstance(source, bytes | bytearray):
        try:
            source = bytes(source).decode("utf-8")
        except UnicodeDecodeError:
            return
    if not isinstance(source, str) or len(source) > _MAX_DECODED:
        return
    line = ctx.line_override or node.lineno
    try:
        inner = CodeContext.parse(
            source,
            _no_star_lookup,
            line_override=line,
            override_snippet=ctx.override_snippet or ctx.snippet(line),
            inherited=ctx.resolver.aliases,
        )
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return
    yield from _detect(inner, index, depth + 1)


def _no_star_lookup(module: str, name: str) -> str | None:
    """Resolve no name through ``import *`` (the hashes and decoders are imported by name)."""
    return None


def _shape(value: object) -> tuple[str, int]:
    """Return the kind and size of ``value``, as :func:`_frozen_shape` of its frozen key."""
    if isinstance(value, list | tuple):
        return ("seq", len(value))
    if isinstance(value, set | frozenset | dict):
        return ("set" if not isinstance(value, dict) else "dict", len(value))
    if isinstance(value, bytes):
        return ("str", 0)
    return ("str", 0) if isinstance(value, str) else ("scalar", 0)


def _frozen_shape(key: object) -> tuple[str, int]:
    """Return the kind and size of the value frozen into ``key`` (see :func:`freeze`)."""
    if isinstance(key, tuple) and len(key) == 2 and key[0] in ("seq", "set", "dict"):
        inner = key[1]
        return (key[0], len(inner)) if isinstance(inner, tuple | frozenset) else ("scalar", 0)
    if isinstance(key, tuple) and key and key[0] == "str":
        return ("str", 0)
    return ("scalar", 0)


_LITERAL_STARTS = tuple("[({'\"")


def _readings(value: str | bytes, parse_budget: int) -> tuple[list[object], int]:
    """Return ``value`` and what it spells (a literal, numbers), and the characters parsed.

    Text is parsed as a literal only within ``parse_budget`` characters.
    """
    if isinstance(value, bytes):
        try:
            value = value.decode("utf-8")
        except UnicodeDecodeError:
            return [value], 0
    found: list[object] = [value]
    text = value.strip()
    if not text or len(text) > _MAX_FIELD:
        return found, 0
    parsed = 0
    if text.startswith(_LITERAL_STARTS) and len(text) <= parse_budget:
        parsed = len(text)
        with contextlib.suppress(*_DECODE_ERRORS):
            found.append(ast.literal_eval(parse_expression(text)))
    numbers: list[object] = []
    for token in text.replace(",", " ").split():
        try:
            numbers.append(int(token))
        except ValueError:
            try:
                numbers.append(float(token))
            except ValueError:
                return found, parsed
    if numbers:
        found.append(tuple(numbers))
    if len(numbers) == 1:
        found.append(numbers[0])
    return found, parsed


# ---- folding constant expressions, decoding text on the way

#: Most bytes (or characters) one decoding step may produce; all steps of a program together.
_MAX_DECODED = 1 << 20
_MAX_DECODED_TOTAL = 4 << 20
#: Most decompressions (zlib, gzip, bz2, lzma) tried in one program.
_MAX_DECOMPRESSIONS = 16
#: Most memory an lzma stream may ask for (its header names its dictionary's size).
_LZMA_MEMLIMIT = 64 << 20
#: Most items a decoded value may hold, and how deeply it may nest.
_MAX_ITEMS = 20_000
_MAX_NESTING = 40
#: Most collections inside one decoded value that are checked as tables.
_MAX_TABLES = 1_000
#: Most characters of decoded strings parsed as literals in one program.
_MAX_PARSED = 256 << 10
#: Longest decoded string also read as a literal or as numbers.
_MAX_FIELD = 10_000
#: How deeply expressions are folded (a name through its value, a call through its arguments).
_MAX_FOLD_DEPTH = 30
#: Code decoded for ``exec`` nests; past this depth it is left alone.
_MAX_CODE_DEPTH = 3

_CODE_RUNNERS = frozenset({"builtins.exec", "builtins.eval", "builtins.compile"})
_HASH_CALLS = frozenset(
    {"builtins.hash", "zlib.crc32", "zlib.adler32", "binascii.crc32", "binascii.crc_hqx"}
)
_HASH_MODULES = ("hashlib.", "_hashlib.", "hmac.", "xxhash.", "mmh3.")
_HASH_METHODS = frozenset({"hexdigest", "digest", "intdigest", "__hash__"})
_TEXT_METHODS = frozenset(
    {"decode", "encode", "split", "rsplit", "splitlines", "strip", "lstrip", "rstrip", "replace"}
    | {"join"}
)
#: Text encodings ``str.encode``/``bytes.decode`` are folded through (normalised names).
_TEXT_ENCODINGS = frozenset(
    {"utf-8", "utf8", "ascii", "us-ascii", "latin-1", "latin1", "iso-8859-1", "cp1252"}
    | {"utf-16", "utf-32", "unicode-escape", "raw-unicode-escape"}
)
_DECODE_ERRORS = (
    ArithmeticError,
    AttributeError,
    EOFError,
    LookupError,
    MemoryError,
    OSError,
    RecursionError,
    SyntaxError,
    TypeError,
    ValueError,
    lzma.LZMAError,
    zlib.error,
)


@dataclass(frozen=True, slots=True)
class _Decoded:
    """A constant expression's value, and the decoding steps that produced it."""

    value: object
    steps: tuple[str, ...] = ()


def _merge(*steps: tuple[str, ...]) -> tuple[str, ...]:
    """Join decoding step lists, each step once, in order."""
    return tuple(dict.fromkeys(s for group in steps for s in group))


class _Folder:
    """Evaluate the constant expressions of one program safely: literals, names, decoders.

    Nothing the candidate wrote runs: concatenation, ``join`` and the ``str``
    methods act on constants; base64, hex, zlib/gzip/bz2/lzma, JSON and
    ``ast.literal_eval`` are the standard library's pure decoders (decompression
    stops at ``_MAX_DECODED``); pickle and marshal are read by this module's own
    readers of their plain-data opcodes.
    """

    def __init__(self, ctx: CodeContext, *, hashing: bool) -> None:
        self.ctx = ctx
        #: Whether the program calls a hash function (else no name holds a hash).
        self.hashing = hashing
        #: Names assigned exactly once, and the expression each is assigned.
        self.bindings: dict[str, ast.expr] = {}
        #: Names whose value is computed by a hash function (``k = zlib.crc32(...)``).
        self.hash_names: set[str] = set()
        self._stores: dict[str, int] = {}
        self._assigned: list[tuple[str, ast.expr]] = []
        self._memo: dict[int, _Decoded | None] = {}
        self._budget = _MAX_DECODED_TOTAL
        self._decompressions = 0
        self._depth = 0

    def learn(self, node: ast.AST) -> None:
        """Note the names ``node`` binds (call on every node, then :meth:`settle` once)."""
        if isinstance(node, ast.Name):
            if isinstance(node.ctx, ast.Store):
                self._stores[node.id] = self._stores.get(node.id, 0) + 1
        elif isinstance(node, ast.Assign):
            self._assigned.extend(
                (t.id, node.value) for t in node.targets if isinstance(t, ast.Name)
            )
        elif (
            isinstance(node, ast.AnnAssign | ast.NamedExpr)
            and isinstance(node.target, ast.Name)
            and node.value is not None
        ):
            self._assigned.append((node.target.id, node.value))

    def settle(self) -> None:
        """Resolve the names noted by :meth:`learn` into bindings and hash-holding names."""
        self.bindings = {n: v for n, v in self._assigned if self._stores.get(n) == 1}
        for _ in range(2) if self.hashing else ():
            # ``k = zlib.crc32(...)``, then ``h = k % 97``: the names holding a hash.
            for name, value in self._assigned:
                if name not in self.hash_names and self.hash_in(value) is not None:
                    self.hash_names.add(name)

    def _hasher(self, node: ast.Call) -> str | None:
        """Return the hash function ``node`` calls, or ``None``."""
        if isinstance(node.func, ast.Attribute) and node.func.attr in _HASH_METHODS:
            return node.func.attr
        qualname = self.ctx.resolver.resolve(node.func)
        if qualname is not None and (qualname in _HASH_CALLS or qualname.startswith(_HASH_MODULES)):
            return qualname.removeprefix("builtins.")
        return None

    def hash_in(self, key: ast.expr) -> str | None:
        """Return the hash function ``key`` is computed with, or ``None``."""
        for sub in ast.walk(key):
            if isinstance(sub, ast.Call):
                hasher = self._hasher(sub)
                if hasher is not None:
                    return hasher
            elif isinstance(sub, ast.Name) and sub.id in self.hash_names:
                return f"{sub.id}, a hash"
        return None

    def table_values(self, table: ast.expr) -> list[object]:
        """Return the literal values of the table ``table`` (a dict's values, or its members)."""
        if isinstance(table, ast.Dict | ast.List | ast.Tuple | ast.Set):
            members = table.values if isinstance(table, ast.Dict) else table.elts
            return [v for ok, v in map(literal_value, members) if ok]
        decoded = self.fold(table)
        value = decoded.value if decoded is not None else None
        if isinstance(value, dict):
            return list(value.values())
        if isinstance(value, list | tuple | set | frozenset):
            return list(value)
        return []

    def fold(self, node: ast.AST) -> _Decoded | None:
        """Return the value of the constant expression ``node``, or ``None`` when it has none."""
        key = id(node)
        if key in self._memo:
            return self._memo[key]
        if self._depth >= _MAX_FOLD_DEPTH:
            return None
        self._memo[key] = None  # a name bound to an expression of itself has no value
        self._depth += 1
        try:
            found = self._fold(node)
        except _DECODE_ERRORS:
            found = None
        finally:
            self._depth -= 1
        if found is not None and found.steps:
            size = _size(found.value)
            if size is None or size > self._budget:
                found = None
            else:
                self._budget -= size
        self._memo[key] = found
        return found

    def _fold(self, node: ast.AST) -> _Decoded | None:
        if isinstance(node, ast.Constant):
            return _Decoded(node.value)
        if isinstance(node, ast.Name):
            bound = self.bindings.get(node.id)
            return self.fold(bound) if bound is not None else None
        if isinstance(node, ast.List | ast.Tuple | ast.Dict | ast.Set):
            ok, value = literal_value(node)
            if ok:
                return _Decoded(value)
            if isinstance(node, ast.List | ast.Tuple):
                parts = self._all(node.elts)
                if parts is None:
                    return None
                items = [p.value for p in parts]
                return _Decoded(
                    items if isinstance(node, ast.List) else tuple(items), _steps(parts)
                )
            return None
        if isinstance(node, ast.BinOp):
            return self._binop(node)
        if isinstance(node, ast.Subscript):
            return self._subscript(node)
        if isinstance(node, ast.Call):
            return self._call(node)
        return None

    def _all(self, nodes: Sequence[ast.AST]) -> list[_Decoded] | None:
        parts: list[_Decoded] = []
        for node in nodes:
            part = self.fold(node)
            if part is None:
                return None
            parts.append(part)
        return parts

    def _binop(self, node: ast.BinOp) -> _Decoded | None:
        if isinstance(node.op, ast.Add):
            operands: list[ast.expr] = []
            current: ast.expr = node
            while isinstance(current, ast.BinOp) and isinstance(current.op, ast.Add):
                operands.append(current.right)
                current = current.left
            operands.append(current)
            parts = self._all(operands[::-1])
            if parts is None:
                return None
            values = [p.value for p in parts]
            if sum(len(v) for v in values if isinstance(v, str | bytes)) > _MAX_DECODED:
                return None
            if all(isinstance(v, str) for v in values):
                return _Decoded("".join(v for v in values if isinstance(v, str)), _steps(parts))
            if all(isinstance(v, bytes) for v in values):
                return _Decoded(b"".join(v for v in values if isinstance(v, bytes)), _steps(parts))
            return None
        if isinstance(node.op, ast.Mult):
            parts = self._all([node.left, node.right])
            if parts is None:
                return None
            left, right = parts[0].value, parts[1].value
            text, times = (right, left) if isinstance(left, int) else (left, right)
            if (
                isinstance(text, str | bytes)
                and isinstance(times, int)
                and not isinstance(times, bool)
                and len(text) * max(times, 0) <= _MAX_DECODED
            ):
                return _Decoded(text * times, _steps(parts))
        return None

    def _subscript(self, node: ast.Subscript) -> _Decoded | None:
        base = self.fold(node.value)
        if base is None:
            return None
        if isinstance(node.slice, ast.Slice):
            bounds: list[object] = []
            for bound in (node.slice.lower, node.slice.upper, node.slice.step):
                part = self.fold(bound) if bound is not None else _Decoded(None)
                if part is None:
                    return None
                bounds.append(part.value)
            key: Any = slice(*bounds)
        else:
            part = self.fold(node.slice)
            if part is None:
                return None
            key = part.value
        container: Any = base.value
        if isinstance(container, str | bytes | list | tuple | dict):
            return _Decoded(container[key], base.steps)
        return None

    def _call(self, node: ast.Call) -> _Decoded | None:
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr in _TEXT_METHODS:
            base = self.fold(func.value)
            if base is not None and isinstance(base.value, str | bytes | bytearray):
                arguments = self._arguments(node)
                if arguments is None:
                    return None
                args, kwargs, steps = arguments
                value = _text_method(base.value, func.attr, args, kwargs)
                return _Decoded(value, _merge(base.steps, steps, (f"str.{func.attr}",)))
        qualname = self.ctx.resolver.resolve(func)
        decoder = _DECODERS.get(qualname or "")
        if decoder is None or not node.args or qualname is None:
            return None
        if qualname in _FIRST_ARGUMENT_ONLY:
            first = self.fold(node.args[0])
            if first is None:
                return None
            arguments = ([first.value], {}, first.steps)
        else:
            arguments = self._arguments(node)
            if arguments is None:
                return None
        if qualname in _DECOMPRESSING:
            # Each may inflate up to _MAX_DECODED before it is refused: a few per program.
            if self._decompressions >= _MAX_DECOMPRESSIONS:
                return None
            self._decompressions += 1
        args, kwargs, steps = arguments
        value = decoder(*args, **kwargs)
        if _size(value) is None:
            return None
        return _Decoded(value, _merge(steps, (qualname.removeprefix("builtins."),)))

    def _arguments(
        self, node: ast.Call
    ) -> tuple[list[object], dict[str, object], tuple[str, ...]] | None:
        if any(isinstance(a, ast.Starred) for a in node.args):
            return None
        if any(k.arg is None for k in node.keywords):
            return None
        parts = self._all([*node.args, *(k.value for k in node.keywords)])
        if parts is None:
            return None
        args = [p.value for p in parts[: len(node.args)]]
        kwargs = {
            k.arg: p.value
            for k, p in zip(node.keywords, parts[len(node.args) :], strict=True)
            if k.arg is not None
        }
        return args, kwargs, _steps(parts)


def _steps(parts: Sequence[_Decoded]) -> tuple[str, ...]:
    return _merge(*(p.steps for p in parts))


def _size(value: object) -> int | None:
    """Return how big ``value`` is (characters, or items), ``None`` when too big or cyclic."""
    if isinstance(value, str | bytes | bytearray):
        return len(value) if len(value) <= _MAX_DECODED else None
    stack: list[tuple[object, int]] = [(value, 0)]
    items = 0
    while stack:
        item, depth = stack.pop()
        items += 1
        if items > _MAX_ITEMS or depth > _MAX_NESTING:
            return None
        if isinstance(item, dict):
            if len(item) > _MAX_ITEMS:
                return None
            stack.extend((v, depth + 1) for pair in item.items() for v in pair)
        elif isinstance(item, list | tuple | set | frozenset):
            if len(item) > _MAX_ITEMS:
                return None
            stack.extend((v, depth + 1) for v in item)
        elif isinstance(item, str | bytes | bytearray):
            items += len(item) // 64
    return items


def _codec(name: object) -> str:
    """Return the normalised name of an encoding (``"UTF_8"`` → ``"utf-8"``)."""
    if not isinstance(name, str):
        raise TypeError("an encoding is a string")
    return name.strip().lower().replace("_", "-")


def _text_method(
    value: str | bytes | bytearray, method: str, args: list[object], kwargs: dict[str, object]
) -> object:
    """Apply the ``str``/``bytes`` method ``method`` to constants, refusing oversized results."""
    if method in ("decode", "encode"):
        encoding = args[0] if args else kwargs.get("encoding", "utf-8")
        if _codec(encoding) not in _TEXT_ENCODINGS:
            raise LookupError(f"not folded through {encoding!r}")
    elif method == "replace" and len(args) >= 2:
        new = args[1]
        if not isinstance(new, str | bytes) or len(value) * (len(new) + 1) > _MAX_DECODED:
            raise ValueError("too large")
    elif method == "join":
        parts = args[0] if args else None
        if not isinstance(parts, list | tuple):
            raise TypeError("join folds a list of constants")
        size = len(value) * len(parts)
        size += sum(len(p) for p in parts if isinstance(p, str | bytes))
        if size > _MAX_DECODED:
            raise ValueError("too large")
    result: object = getattr(value, method)(*args, **kwargs)
    return result


class _Decompressor(Protocol):
    @property
    def eof(self) -> bool: ...

    def decompress(self, data: bytes, max_length: int, /) -> bytes: ...


def _decompress(decompressor: _Decompressor, data: object) -> bytes:
    """Decompress ``data`` whole, or raise when it holds more than ``_MAX_DECODED`` bytes."""
    if not isinstance(data, bytes | bytearray):
        raise TypeError("compressed data is bytes")
    out = decompressor.decompress(bytes(data), _MAX_DECODED)
    if not decompressor.eof:
        raise ValueError("truncated, or larger than the decoding cap")
    return out


def _inflate(data: object, wbits: object = zlib.MAX_WBITS, bufsize: object = 0) -> bytes:
    if not isinstance(wbits, int):
        raise TypeError("wbits is an int")
    return _decompress(zlib.decompressobj(wbits), data)


def _gunzip(data: object) -> bytes:
    return _decompress(zlib.decompressobj(zlib.MAX_WBITS | 16), data)


def _bunzip2(data: object) -> bytes:
    return _decompress(bz2.BZ2Decompressor(), data)


def _unxz(data: object, **_: object) -> bytes:
    return _decompress(lzma.LZMADecompressor(memlimit=_LZMA_MEMLIMIT), data)


def _codecs_decode(data: object, encoding: object = "utf-8", errors: object = "strict") -> object:
    name = _codec(encoding)
    if name in ("base64", "base-64", "base64-codec"):
        return base64.b64decode(data)  # type: ignore[arg-type]
    if name in ("hex", "hex-codec"):
        return binascii.unhexlify(data)  # type: ignore[arg-type]
    if name in ("zlib", "zip", "zlib-codec"):
        return _inflate(data)
    if name in ("bz2", "bz2-codec"):
        return _bunzip2(data)
    if name in ("rot13", "rot-13") and isinstance(data, str):
        return codecs.decode(data, "rot13")
    if name in _TEXT_ENCODINGS and isinstance(data, bytes | bytearray) and isinstance(errors, str):
        return bytes(data).decode(name, errors)
    raise LookupError(f"not folded through {encoding!r}")


def _codecs_encode(data: object, encoding: object = "utf-8", errors: object = "strict") -> object:
    name = _codec(encoding)
    if name in ("rot13", "rot-13") and isinstance(data, str):
        return codecs.encode(data, "rot13")
    if name in _TEXT_ENCODINGS and isinstance(data, str) and isinstance(errors, str):
        return data.encode(name, errors)
    raise LookupError(f"not folded through {encoding!r}")


def _str_of(data: object, encoding: object = None, errors: object = "strict") -> str:
    if isinstance(data, str) and encoding is None:
        return data
    if isinstance(data, bytes | bytearray) and encoding is not None:
        return _codecs_decode(bytes(data), encoding, errors)  # type: ignore[return-value]
    raise TypeError("only str(bytes, encoding) is folded")


def _bytes_of(data: object, encoding: object = None, errors: object = "strict") -> bytes:
    if isinstance(data, str) and encoding is not None:
        return _codecs_encode(data, encoding, errors)  # type: ignore[return-value]
    if isinstance(data, bytes | bytearray) and encoding is None:
        return bytes(data)
    if isinstance(data, list | tuple) and len(data) <= _MAX_DECODED and encoding is None:
        return bytes(data)
    raise TypeError("bytes(n) and other forms are not folded")


def _text_of(data: object) -> str:
    if isinstance(data, bytes | bytearray):
        return bytes(data).decode("utf-8")
    if isinstance(data, str):
        return data
    raise TypeError("text is str or bytes")


def _json_loads(data: object) -> object:
    return json.loads(_text_of(data))


def _literal_eval(data: object) -> object:
    """Read a Python literal from text (``ast.literal_eval``; nothing is evaluated)."""
    text = _text_of(data).strip(" \t\n")
    return ast.literal_eval(parse_expression(text))


_PICKLE_ARGUMENTS = frozenset(
    {"INT", "BININT", "BININT1", "BININT2", "LONG", "LONG1", "LONG4", "FLOAT", "BINFLOAT"}
    | {"STRING", "BINSTRING", "SHORT_BINSTRING", "UNICODE", "BINUNICODE", "SHORT_BINUNICODE"}
    | {"BINUNICODE8", "BINBYTES", "SHORT_BINBYTES", "BINBYTES8"}
)
_PICKLE_CONSTANTS: dict[str, object] = {"NONE": None, "NEWTRUE": True, "NEWFALSE": False}
_PICKLE_MARKED = frozenset(
    {"TUPLE", "LIST", "DICT", "FROZENSET", "APPENDS", "SETITEMS", "ADDITEMS", "POP_MARK"}
)


def _unpickle(data: object) -> object:
    """Read plain data (numbers, strings, lists, tuples, dicts, sets) from a pickle.

    The opcodes are read by :func:`pickletools.genops`, which only parses; an
    opcode that would import or call anything makes the whole pickle unreadable.
    """
    if not isinstance(data, bytes | bytearray):
        raise TypeError("a pickle is bytes")
    stack: list[Any] = []
    marks: list[int] = []
    memo: dict[object, object] = {}
    for opcode, arg, _ in pickletools.genops(bytes(data)):
        name = opcode.name
        if name in ("PROTO", "FRAME"):
            continue
        if name == "STOP":
            if len(stack) != 1 or marks:
                raise ValueError("malformed pickle")
            return stack[0]
        if name in _PICKLE_ARGUMENTS:
            stack.append(arg)
        elif name in _PICKLE_CONSTANTS:
            stack.append(_PICKLE_CONSTANTS[name])
        elif name in ("EMPTY_LIST", "EMPTY_DICT", "EMPTY_TUPLE", "EMPTY_SET"):
            stack.append({"EMPTY_LIST": [], "EMPTY_DICT": {}, "EMPTY_TUPLE": ()}.get(name, set()))
        elif name == "MARK":
            marks.append(len(stack))
        elif name in _PICKLE_MARKED:
            start = marks.pop()
            items = stack[start:]
            del stack[start:]
            if name == "TUPLE":
                stack.append(tuple(items))
            elif name == "LIST":
                stack.append(items)
            elif name == "DICT":
                stack.append(dict(zip(items[::2], items[1::2], strict=True)))
            elif name == "FROZENSET":
                stack.append(frozenset(items))
            elif name == "APPENDS":
                _pickle_target(stack, list).extend(items)
            elif name == "SETITEMS":
                _pickle_target(stack, dict).update(zip(items[::2], items[1::2], strict=True))
            elif name == "ADDITEMS":
                _pickle_target(stack, set).update(items)
        elif name in ("TUPLE1", "TUPLE2", "TUPLE3"):
            count = int(name[-1])
            if len(stack) < count:
                raise ValueError("malformed pickle")
            items = stack[-count:]
            del stack[-count:]
            stack.append(tuple(items))
        elif name == "APPEND":
            item = stack.pop()
            _pickle_target(stack, list).append(item)
        elif name == "SETITEM":
            item = stack.pop()
            key = stack.pop()
            _pickle_target(stack, dict)[key] = item
        elif name == "MEMOIZE":
            memo[len(memo)] = stack[-1]
        elif name in ("PUT", "BINPUT", "LONG_BINPUT"):
            memo[arg] = stack[-1]
        elif name in ("GET", "BINGET", "LONG_BINGET"):
            stack.append(memo[arg])
        elif name == "POP":
            stack.pop()
        elif name == "DUP":
            stack.append(stack[-1])
        else:
            raise ValueError(f"pickle opcode {name} builds more than plain data")
    raise ValueError("a pickle without STOP")


def _pickle_target(stack: list[Any], kind: type) -> Any:
    """Return the container on top of ``stack``, which must be a ``kind``."""
    if not stack or type(stack[-1]) is not kind:
        raise ValueError("malformed pickle")
    return stack[-1]


class _Marshal:
    """A reader of the plain-data part of the ``marshal`` format (no code objects)."""

    _PENDING = object()

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0
        self.refs: list[object] = []

    def take(self, count: int) -> bytes:
        if count < 0 or self.pos + count > len(self.data):
            raise EOFError("marshal data ends early")
        chunk = self.data[self.pos : self.pos + count]
        self.pos += count
        return chunk

    def int32(self) -> int:
        return int.from_bytes(self.take(4), "little", signed=True)

    def count(self) -> int:
        count = self.int32()
        if not 0 <= count <= len(self.data):
            raise ValueError("malformed marshal data")
        return count

    def read(self, depth: int) -> object:
        if depth > _MAX_NESTING:
            raise ValueError("marshal data nests too deeply")
        code = self.take(1)[0]
        kind, referenced = chr(code & 0x7F), bool(code & 0x80)
        slot = None
        if referenced and kind in "()[]{<>":
            slot = len(self.refs)  # containers are registered before their items
            self.refs.append(self._PENDING)
        value = self.value(kind, depth)
        if slot is not None:
            self.refs[slot] = value
        elif referenced:
            self.refs.append(value)
        return value

    def value(self, kind: str, depth: int) -> object:
        simple: dict[str, object] = {"N": None, "F": False, "T": True}
        if kind in simple:
            return simple[kind]
        if kind == "i":
            return self.int32()
        if kind == "l":
            size = self.int32()
            if abs(size) > 1000:
                raise ValueError("integer too long")
            digits = self.take(2 * abs(size))
            number = sum(
                int.from_bytes(digits[2 * i : 2 * i + 2], "little") << (15 * i)
                for i in range(abs(size))
            )
            return -number if size < 0 else number
        if kind == "g":
            return float(struct.unpack("<d", self.take(8))[0])
        if kind in "s":
            return self.take(self.count())
        if kind in "ut":
            return self.take(self.count()).decode("utf-8", "surrogatepass")
        if kind in "aA":
            return self.take(self.count()).decode("ascii")
        if kind in "zZ":
            return self.take(self.take(1)[0]).decode("ascii")
        if kind == "r":
            index = self.int32()
            if not 0 <= index < len(self.refs) or self.refs[index] is self._PENDING:
                raise ValueError("malformed marshal reference")
            return self.refs[index]
        if kind in "()[<>":
            size = self.take(1)[0] if kind == ")" else self.count()
            items = [self.read(depth + 1) for _ in range(size)]
            if kind == "[":
                return items
            if kind == "<":
                return set(items)
            return frozenset(items) if kind == ">" else tuple(items)
        if kind == "{":
            table: dict[object, object] = {}
            while self.data[self.pos : self.pos + 1] != b"0":
                key = self.read(depth + 1)
                table[key] = self.read(depth + 1)
            self.take(1)
            return table
        raise ValueError(f"marshal type {kind!r} is not plain data")


def _unmarshal(data: object) -> object:
    """Read plain data from ``marshal`` bytes (``marshal.loads`` trusts its input: not this)."""
    if not isinstance(data, bytes | bytearray):
        raise TypeError("marshal data is bytes")
    return _Marshal(bytes(data)).read(0)


#: Pure decoders the folder applies to constants, by qualified name.
_DECODERS: dict[str, Callable[..., object]] = {
    "base64.b64decode": base64.b64decode,
    "base64.standard_b64decode": base64.standard_b64decode,
    "base64.urlsafe_b64decode": base64.urlsafe_b64decode,
    "base64.b32decode": base64.b32decode,
    "base64.b32hexdecode": base64.b32hexdecode,
    "base64.b16decode": base64.b16decode,
    "base64.b85decode": base64.b85decode,
    "base64.a85decode": base64.a85decode,
    "base64.decodebytes": base64.decodebytes,
    "binascii.a2b_base64": binascii.a2b_base64,
    "binascii.unhexlify": binascii.unhexlify,
    "binascii.a2b_hex": binascii.a2b_hex,
    "builtins.bytes.fromhex": bytes.fromhex,
    "builtins.bytearray.fromhex": bytes.fromhex,
    "zlib.decompress": _inflate,
    "gzip.decompress": _gunzip,
    "bz2.decompress": _bunzip2,
    "lzma.decompress": _unxz,
    "codecs.decode": _codecs_decode,
    "codecs.encode": _codecs_encode,
    "builtins.str": _str_of,
    "builtins.bytes": _bytes_of,
    "builtins.bytearray": _bytes_of,
    "json.loads": _json_loads,
    "ast.literal_eval": _literal_eval,
    "builtins.eval": _literal_eval,
    "pickle.loads": _unpickle,
    "_pickle.loads": _unpickle,
    "marshal.loads": _unmarshal,
}
#: Decoders whose further arguments (``eval``'s namespaces, ``json.loads``' hooks) do not matter.
_DECOMPRESSING = frozenset(
    {"zlib.decompress", "gzip.decompress", "bz2.decompress", "lzma.decompress", "codecs.decode"}
)
_FIRST_ARGUMENT_ONLY = frozenset(
    {"json.loads", "ast.literal_eval", "builtins.eval", "pickle.loads", "_pickle.loads"}
    | {"marshal.loads"}
)
