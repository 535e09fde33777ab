"""Hard-coded expected outputs: the task's test inputs and outputs written into the code.

One module, one job: the checks. Every check here compares the code with the task's
cases through one index of them; reading the cases and decoding stored text are modules
of their own.

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

Three modules: :mod:`._cases` reads the task's tests into cases, :mod:`._decoding`
folds constants and decodes stored text (never running it), and this one holds the
checks that compare the two.
"""

from __future__ import annotations

import ast
import contextlib
import itertools
from collections.abc import Iterator, Sequence

from arbiter.graders.detectors._cases import (
    MISSING,
    Case,
    cases_from_task,
    distinctive,
    freeze,
    input_items,
    normal_text,
    own_output,
    rich,
    word_pair,
)
from arbiter.graders.detectors._context import CodeContext, literal_value
from arbiter.graders.detectors._decoding import (
    CODE_RUNNERS,
    DECODE_ERRORS,
    DECODERS,
    HASH_CALLS,
    HASH_MODULES,
    MAX_CODE_DEPTH,
    MAX_DECODED,
    MAX_FIELD,
    MAX_PARSED,
    MAX_TABLES,
    TEXT_METHODS,
    Folder,
)
from arbiter.graders.sandbox.syntax import parse_expression
from arbiter.graders.types import Violation, ViolationType

__all__ = ["Case", "cases_from_task", "detect", "distinctive", "freeze", "rich"]

_HARD = ViolationType.HARDCODED_OUTPUT


class _Index:
    """Test inputs and outputs by frozen key."""

    def __init__(self, cases: Sequence[Case]) -> None:
        self.inputs: dict[object, list[int]] = {}
        self.outputs: dict[object, list[int]] = {}
        self.cases = cases
        self.stdin = any(c.stdin for c in cases)
        self._read: dict[str | bytes, list[object]] = {}
        self._parse_budget = MAX_PARSED  # characters of decoded text parsed as literals
        for i, case in enumerate(cases):
            for key, _ in case.inputs:
                self.inputs.setdefault(key, []).append(i)
            out = case.output_key()
            if out is not MISSING:
                self.outputs.setdefault(out, []).append(i)
        #: The kinds and sizes of the test values: a decoded value of another shape is
        #: no test value, and is not frozen to find out (a 3000-item list costs).
        self._shapes = {_frozen_shape(k) for k in itertools.chain(self.inputs, self.outputs)}
        self._input_items: dict[int, frozenset[object]] = {}

    def own(self, value: object, case: int) -> bool:
        """Tell whether ``value``, the expected output of case ``case``, is that case's own.

        See :func:`own_output`: a sentinel or a message equal to it is not.
        """
        items = self._input_items.get(case)
        if items is None:
            items = self._input_items[case] = input_items(self.cases[case])
        return own_output(value, items)

    def own_in(self, value: object, cases: Sequence[int]) -> bool:
        """Tell whether ``value`` is the own expected output of one of ``cases``."""
        return any(self.own(value, case) for case in cases)

    def output_key(self, value: object, stdin: bool) -> object:
        if stdin and isinstance(value, str):
            return freeze(normal_text(value))
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
                text = normal_text(reading) if self.stdin and isinstance(reading, str) else None
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
                value = normal_text(value)
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
                or any(word_pair(value, v) for v, _ in returned)
            ):
                line = getattr(node, "lineno", 0)
                flagged.add(line)
                shown = repr(value) if len(repr(value)) <= 60 else repr(value)[:57] + "..."
                why = "and returns its expected output" if returned else "a test's input"
                yield ctx.violation(_HARD, node, f"branches on the test input {shown} ({why})")
                break

    folder = Folder(ctx, hashing=_hashes_referenced(ctx))
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
            if qualname in CODE_RUNNERS or qualname in DECODERS or method in TEXT_METHODS:
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
        ref.qualname in HASH_CALLS or ref.qualname.startswith(HASH_MODULES)
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
      and one of those outputs is its test's own (:func:`own_output`) or every
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
    ctx: CodeContext, folder: Folder, node: ast.Call, index: _Index, depth: int
) -> Iterator[Violation]:
    """Yield what the call ``node`` hides: a table decoded from text, or hard-coded code text."""
    runner = ctx.resolver.resolve(node.func) in CODE_RUNNERS
    if runner and node.args and depth < MAX_CODE_DEPTH:
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
    while stack and containers < MAX_TABLES:
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
    folder: Folder, node: ast.Call | ast.Subscript, index: _Index, reported: set[int]
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
    ctx: CodeContext, folder: Folder, node: ast.Call, index: _Index, depth: int
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
    if not isinstance(source, str) or len(source) > MAX_DECODED:
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
    if not text or len(text) > MAX_FIELD:
        return found, 0
    parsed = 0
    if text.startswith(_LITERAL_STARTS) and len(text) <= parse_budget:
        parsed = len(text)
        with contextlib.suppress(*DECODE_ERRORS):
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
