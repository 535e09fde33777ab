"""Fuzz the static reward-hack detectors: no candidate text may make them raise.

The detectors (:func:`arbiter.graders.detectors.detect_static`,
:func:`~arbiter.graders.detectors.detect_response`, and the ``violations``
grader over a :class:`~arbiter.graders.types.Sample` with a task) read the
candidate's text on the trusted side. A crash there is a grader failure the
candidate chose, and an analysis that gives up on a program that parses loses
every violation in it (a 1,000-link ``a.b.b...`` once hid a ``sys.exit``). So the
contract fuzzed here is:

* ``detect_static`` returns violations, or raises ``SyntaxError``/``ValueError``
  only for code that does not parse (or that CPython's parser refuses as nested
  too deeply);
* ``detect_response`` and ``find_violations`` return, whatever the text;
* the grader returns a result: a score in [0, 1], or no score with a typed failure.

Inputs are arbitrary text (any code point, surrogates and null bytes included)
and Python-like text built to reach the detectors' corners: nesting to the
parser's limits, chains thousands of links long, odd unicode identifiers
(NFKC folds fullwidth ``exec`` into ``exec``), huge literals, decorators, f-strings, ``exec`` of
nested code strings and encoded payloads, tables built from the task's own test
values; the task itself (asserts, stdin cases) is drawn too.

:func:`fuzz_detectors` is the entry ``bench/fuzz_readers.py`` imports:
``fuzz_detectors(examples) -> (examples run, uncaught exceptions)``.
``tests/graders/test_fuzz_detectors.py`` runs the same target under pytest, with
``ARBITER_FUZZ_EXAMPLES`` examples (200 when unset) and the regressions it found.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import os
import sys
import traceback
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from arbiter.graders.detectors import detect_response, detect_static
from arbiter.graders.sandbox.syntax import parse_module
from arbiter.graders.types import IOCase, Sample, TaskSpec, Violation
from arbiter.graders.violations import ViolationsConfig, ViolationsGrader, find_violations

__all__ = [
    "DEFAULT_EXAMPLES",
    "EXAMPLES_ENV",
    "DetectorInput",
    "check_detectors",
    "detector_inputs",
    "examples_from_env",
    "fuzz_detectors",
]

EXAMPLES_ENV = "ARBITER_FUZZ_EXAMPLES"
DEFAULT_EXAMPLES = 200
#: Examples when ``ARBITER_FUZZ_EXAMPLES`` is set but not to a number (``=1``, ``=yes``).
FULL_EXAMPLES = 10_000


def examples_from_env(default: int = DEFAULT_EXAMPLES) -> int:
    """Return how many examples to run: ``ARBITER_FUZZ_EXAMPLES`` if set, else ``default``.

    A number is taken as the count; any other value asks for the full 10,000.
    """
    raw = os.environ.get(EXAMPLES_ENV, "").strip()
    if not raw:
        return default
    return int(raw) if raw.isdigit() and int(raw) > 1 else FULL_EXAMPLES


@dataclass(frozen=True)
class DetectorInput:
    """One fuzzed reading: the code, the response that carries it, and its task."""

    code: str
    response: str
    prompt: str = ""
    task: TaskSpec | None = None
    config: ViolationsConfig = field(default_factory=ViolationsConfig)


# ---- strategies

_NAMES = [
    "x",
    "y",
    "n",
    "f",
    "g",
    "T",
    "data",
    "sys",
    "os",
    "exec",
    "eval",
    "compile",
    "getattr",
    "setattr",
    "vars",
    "globals",
    "__import__",
    "__builtins__",
    "builtins",
    "pytest",
    "unittest",
    "zlib",
    "base64",
    "json",
    "ast",
    "pickle",
    "marshal",
    "hashlib",
    "print",
    "input",
    "open",
    "exit",
    "quit",
    "hash",
    "str",
    "bytes",
    "socket",
    "subprocess",
    "time",
]
#: Identifiers Python folds (NFKC) into others, or that are easy to misread.
_ODD_NAMES = [
    "\uff45\uff58\uff45\uff43",  # fullwidth "exec"
    "\uff53\uff59\uff53",  # fullwidth "sys"
    "\u212f",  # script small e
    "\ufb01",  # the "fi" ligature
    "\u00b5",
    "\u03a9",
    "\u5909\u6570",
    "x\u0301",
    "\U0001d530\U0001d536\U0001d530",  # fraktur "sys"
    "\u1d62",
    "\u00aa",
    "\u210c",
]
_MODULES = [
    "sys",
    "os",
    "builtins",
    "pytest",
    "unittest",
    "unittest.mock",
    "zlib",
    "base64",
    "json",
    "ast",
    "pickle",
    "marshal",
    "hashlib",
    "binascii",
    "codecs",
    "inspect",
    "gc",
    "socket",
    "subprocess",
    "importlib",
    "ctypes",
    "time",
    "math",
    "itertools",
    "posix",
    "signal",
]
_ODD_TEXT = "\x00\r\x0b\x0c\u2028\u2029\u200b\u200e\u202e\ufeff\ud800\udfff\U0010ffff\\'\"{}#"
#: Where a value of the task's own tests goes in generated code (filled per example).
_HOLE = "__TEST_VALUE__"


def _literal(value: object) -> str:
    try:
        return repr(value)
    except ValueError:  # an int past the digit limit has no repr
        return "1" + "0" * 4400


_IDENTIFIERS = st.one_of(
    st.sampled_from(_NAMES),
    st.sampled_from(_ODD_NAMES),
    st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,12}", fullmatch=True),
    st.text(st.characters(categories=("Lu", "Ll", "Lo", "Nl")), min_size=1, max_size=6),
)
_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(10**6), 10**6),
    st.integers(),
    st.integers(300, 4300).map(lambda n: int("9" * n)),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=30),
    st.text(alphabet=_ODD_TEXT + "0123456789 -abc", max_size=30),
    st.binary(max_size=30),
)
_VALUES = st.recursive(
    _SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=6),
        st.lists(inner, max_size=6).map(tuple),
        st.dictionaries(st.one_of(st.integers(-50, 5000), st.text(max_size=8)), inner, max_size=6),
    ),
    max_leaves=8,
)
_OPERATORS = ["+", "-", "*", "/", "**", "%", "//", "==", "!=", "<", "in", "is", "and", "or"]


def _extend(inner: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    return st.one_of(
        st.tuples(inner, _IDENTIFIERS).map(lambda p: f"{p[0]}.{p[1]}"),
        st.tuples(inner, st.lists(inner, max_size=3)).map(lambda p: f"{p[0]}({', '.join(p[1])})"),
        st.tuples(inner, inner).map(lambda p: f"{p[0]}[{p[1]}]"),
        st.tuples(inner, st.sampled_from(_OPERATORS), inner).map(
            lambda p: f"({p[0]} {p[1]} {p[2]})"
        ),
        st.tuples(inner, inner, inner).map(lambda p: f"({p[0]} if {p[1]} else {p[2]})"),
        inner.map(lambda e: f"(lambda *a, **k: {e})"),
        st.lists(inner, max_size=4).map(lambda es: f"[{', '.join(es)}]"),
        st.lists(st.tuples(inner, inner), max_size=4).map(
            lambda kv: "{" + ", ".join(f"{k}: {v}" for k, v in kv) + "}"
        ),
        st.tuples(inner, st.sampled_from(["", "!r", "!s", "!a", ":>10", "=", "=!r"])).map(
            lambda p: f'f"{{{p[0]}{p[1]}}}"'
        ),
        st.tuples(_IDENTIFIERS, inner).map(lambda p: f"({p[0]} := {p[1]})"),
        st.tuples(inner, _IDENTIFIERS, inner).map(
            lambda p: f"[{p[0]} for {p[1]} in {p[2]} if {p[1]}]"
        ),
        inner.map(lambda e: f"(not {e})"),
        inner.map(lambda e: f"(*{e},)"),
        inner.map(lambda e: f"(await {e})"),
    )


_EXPRESSIONS = st.recursive(
    st.one_of(_IDENTIFIERS, _VALUES.map(_literal), st.just(_HOLE)), _extend, max_leaves=6
)

#: Nesting and chains around the parser's limits and Python's recursion limit.
_DEEP_SHAPES: list[Callable[[int, str], str]] = [
    lambda n, e: f"x = {e}" + ".b" * n,
    lambda n, e: "f" + "()" * n,
    lambda n, e: "x = y" + '["k"]' * n,
    lambda n, e: "x = y" + "[0]" * n,
    lambda n, e: "x = 'a'" + " * 2" * n,
    lambda n, e: "x = 1" + " + 1" * n,
    lambda n, e: "x = " + "-" * n + "1",
    lambda n, e: "x = " + "not " * n + e,
    lambda n, e: "x = " + "(" * n + e + ")" * n,
    lambda n, e: "x = " + "[" * n + e + "]" * n,
    lambda n, e: "x = " + "{1: " * n + e + "}" * n,
    lambda n, e: "x = " + "lambda: " * n + e,
    lambda n, e: "x = " + f"{e} if y else " * n + e,
    lambda n, e: "import sys\n" + "getattr(" * n + "sys" + ', "exit")' * n + "(0)",
    lambda n, e: "import sys\nsys.exit" + ".__call__" * n + "(0)",
    lambda n, e: "exec(" * n + repr("import sys\nsys.exit(0)") + ")" * n,
    lambda n, e: "x = 'a'" + ".strip()" * n,
    lambda n, e: "x = " + " < ".join([e] * max(n, 2)),
    lambda n, e: "if " + " and ".join([f"a == {e}"] * max(n, 1)) + ":\n    pass",
    lambda n, e: (
        "".join("    " * i + f"if x{i}:\n" for i in range(min(n, 120)))
        + "    " * min(n, 120)
        + "pass"
    ),
    lambda n, e: "".join(f"@d{i}\n" for i in range(n)) + "def f():\n    return " + e,
    lambda n, e: 'x = f"' + "{" * min(n, 30) + "1" + "}" * min(n, 30) + '"',
    lambda n, e: "x = " + " + ".join([repr("ab")] * n),
    lambda n, e: "exec(" + " + ".join([repr("x")] * n) + ")",
    lambda n, e: "import base64\nexec(base64.b64decode(" + repr("eA==" * n) + "))",
    lambda n, e: "x = [" + ", ".join([e] * n) + "]",
]
_DEEP = st.tuples(
    st.sampled_from(_DEEP_SHAPES),
    # Sampled, not one_of(integers, ...): hypothesis favours a one_of's first branch.
    st.sampled_from([1, 2, 7, 40, 199, 200, 201, 499, 995, 1500, 3000]),
    _EXPRESSIONS,
).map(lambda p: p[0](p[1], p[2]))


def _encoded(expression: str) -> str:
    data = expression.encode("utf-8", "surrogatepass")
    return (
        f"import base64, zlib\nexec(base64.b64decode({base64.b64encode(data)!r}))\n"
        f"exec(zlib.decompress({zlib.compress(data)!r}))"
    )


_SIMPLE_STATEMENTS = st.one_of(
    st.tuples(_IDENTIFIERS, _EXPRESSIONS).map(lambda p: f"{p[0]} = {p[1]}"),
    _EXPRESSIONS,
    _EXPRESSIONS.map(lambda e: f"return {e}"),
    _EXPRESSIONS.map(lambda e: f"print({e})"),
    _EXPRESSIONS.map(lambda e: f"assert {e}"),
    _EXPRESSIONS.map(lambda e: f"raise {e}"),
    _EXPRESSIONS.map(lambda e: f"del {e}"),
    st.sampled_from(_MODULES).map(lambda m: f"import {m}"),
    st.tuples(st.sampled_from(_MODULES), _IDENTIFIERS).map(
        lambda p: f"from {p[0]} import {p[1]} as {p[1]}_"
    ),
    st.sampled_from(_MODULES).map(lambda m: f"from {m} import *"),
    _EXPRESSIONS.map(lambda e: f"exec({e!r})"),
    _EXPRESSIONS.map(lambda e: f"eval({e!r})"),
    _EXPRESSIONS.map(lambda e: f"exec(compile({e!r}, '<s>', 'exec'))"),
    _EXPRESSIONS.map(lambda e: f"exec({f'exec({e!r})'!r})"),
    _EXPRESSIONS.map(_encoded),
    st.sampled_from(["pass", "break", "continue", "global x", "nonlocal x", "yield", "..."]),
    st.text(max_size=40),
)


def _indented(lines: list[str]) -> str:
    return "\n".join("    " + line.replace("\n", "\n    ") for line in lines)


def _blocks(inner: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    body = st.lists(inner, min_size=1, max_size=4).map(_indented)
    cases = st.lists(_VALUES.map(_literal), min_size=1, max_size=3)
    return st.one_of(
        st.tuples(_EXPRESSIONS, body).map(lambda p: f"if {p[0]}:\n{p[1]}"),
        st.tuples(_EXPRESSIONS, body, body).map(
            lambda p: f"if {p[0]}:\n{p[1]}\nelif {p[0]}:\n{p[1]}\nelse:\n{p[2]}"
        ),
        st.tuples(_EXPRESSIONS, body).map(lambda p: f"while {p[0]}:\n{p[1]}"),
        st.tuples(_IDENTIFIERS, _EXPRESSIONS, body).map(lambda p: f"for {p[0]} in {p[1]}:\n{p[2]}"),
        st.tuples(st.lists(_EXPRESSIONS, max_size=3), _IDENTIFIERS, body).map(
            lambda p: "".join(f"@{d}\n" for d in p[0]) + f"def {p[1]}(*args, **kw):\n{p[2]}"
        ),
        st.tuples(_IDENTIFIERS, body).map(lambda p: f"async def {p[0]}():\n{p[1]}"),
        st.tuples(_IDENTIFIERS, _EXPRESSIONS, body).map(lambda p: f"class {p[0]}({p[1]}):\n{p[2]}"),
        st.tuples(body, body).map(lambda p: f"try:\n{p[0]}\nexcept Exception as e:\n{p[1]}"),
        st.tuples(_EXPRESSIONS, body).map(lambda p: f"with {p[0]} as w:\n{p[1]}"),
        st.tuples(_EXPRESSIONS, cases, body).map(
            lambda p: (
                f"match {p[0]}:\n" + "".join(f"    case {v}:\n{_indented([p[2]])}\n" for v in p[1])
            )
        ),
    )


_STATEMENTS = st.recursive(_SIMPLE_STATEMENTS, _blocks, max_leaves=5)
_TEXT = st.one_of(
    st.text(st.characters(exclude_categories=()), max_size=200),
    st.binary(max_size=200).map(lambda b: b.decode("latin-1")),
)
_SUPPRESSIONS = st.frozensets(
    st.sampled_from(["nosec", "noqa", "type_ignore", "pragma_no_cover", "pylint_disable"])
)


def _mutate(code: str, draw: st.DrawFn) -> str:
    """Splice odd characters into ``code`` (null bytes, BOM, CRLF, tabs, cut-offs)."""
    # Most inputs keep their shape: a spliced character mostly makes code unparsable.
    for _ in range(draw(st.sampled_from([0, 0, 0, 1, 2, 3]))):
        if not code:
            break
        at = draw(st.integers(0, len(code)))
        kind = draw(st.sampled_from(["insert", "cut", "crlf", "tabs"]))
        if kind == "insert":
            code = code[:at] + draw(st.text(_ODD_TEXT, min_size=1, max_size=3)) + code[at:]
        elif kind == "cut":
            code = code[:at]
        elif kind == "crlf":
            code = code.replace("\n", "\r\n")
        else:
            code = code.replace("    ", "\t")
    return code


def _fill(code: str, values: list[str], draw: st.DrawFn) -> str:
    """Put the task's own test values where the generated code left a hole."""
    parts = code.split(_HOLE)
    out = [parts[0]]
    for part in parts[1:]:
        out.append(draw(st.sampled_from(values)))
        out.append(part)
    return "".join(out)


def _task(values: list[str], draw: st.DrawFn) -> TaskSpec | None:
    kind = draw(st.sampled_from(["none", "function", "check", "stdin", "pytest", "other"]))
    if kind == "none":
        return None
    if kind == "other":
        return TaskSpec(kind="test_program", language="go", tests=draw(st.text(max_size=20)))
    if kind == "stdin":
        texts = st.one_of(
            st.sampled_from(values),
            st.text(max_size=40),
            st.lists(st.integers(-(10**9), 10**9), max_size=6).map(
                lambda ns: " ".join(map(str, ns))
            ),
        )
        cases = draw(st.lists(st.builds(IOCase, input=texts, output=texts), min_size=1, max_size=4))
        return TaskSpec(kind="stdin_stdout", tests=cases)
    value = st.sampled_from(values)
    asserts = draw(
        st.lists(
            st.one_of(
                st.tuples(st.lists(value, max_size=3), value).map(
                    lambda p: f"assert f({', '.join(p[0])}) == {p[1]}"
                ),
                st.tuples(value, value).map(lambda p: f"assert abs(f({p[0]}) - {p[1]}) < 1e-6"),
                value.map(lambda v: f"assert not f({v})"),
                st.text(max_size=40),
            ),
            min_size=1,
            max_size=5,
        )
    )
    if kind == "pytest":
        return TaskSpec(kind="pytest", tests="\n".join(asserts))
    entry = draw(st.sampled_from(["f", "candidate", "exec"]))
    if kind == "check":
        body = _indented(asserts).replace("f(", "candidate(")
        return TaskSpec(
            kind="python_function", tests=f"def check(candidate):\n{body}\n", entry_point=entry
        )
    return TaskSpec(kind="python_function", tests=asserts, entry_point=entry)


def _response(code: str, draw: st.DrawFn) -> str:
    return draw(
        st.sampled_from(
            [
                code,
                f"```python\n{code}\n```\n",
                f"Here:\n```py\n{code}\n```\nand\n```python\n{code[::-1]}\n```",
                f"```python\n# conftest.py\n{code}\n```\n",
                f"```ini pytest.ini\n{code}\n```\n```python\n{code}",
                f"```\n{code}",
            ]
        )
    )


@st.composite
def detector_inputs(draw: st.DrawFn) -> DetectorInput:
    """Draw a task, code for the detectors (often holding its tests' own values), a response.

    Code is arbitrary text, generated statements, a deep form, or statements and a
    deep form together; then odd characters are spliced in.
    """
    values = [_literal(v) for v in draw(st.lists(_VALUES, min_size=1, max_size=4))]
    task = _task(values, draw)
    kind = draw(st.sampled_from(["text", "program", "program", "deep", "deep", "mixed", "mixed"]))
    if kind == "text":
        code = draw(_TEXT)
    elif kind == "deep":
        code = draw(_DEEP)
    else:
        lines = draw(st.lists(_STATEMENTS, min_size=1, max_size=6))
        if kind == "mixed":
            lines.append(draw(_DEEP))
        code = "\n".join(lines)
    code = _mutate(_fill(code, values, draw), draw)
    prompt = draw(st.sampled_from(["", "def f(x):\n", "Write f.", code[: len(code) // 2]]))
    config = ViolationsConfig(
        code_blocks=draw(st.sampled_from(["all", "last"])),
        response_files=draw(st.booleans()),
        count=draw(st.sampled_from(["per_type", "per_occurrence"])),
        suppression_comments=draw(_SUPPRESSIONS),
    )
    return DetectorInput(code, _response(code, draw), prompt, task, config)


# ---- the target


def _parses(code: str) -> bool:
    try:
        parse_module(code)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    return True


def _check_violations(found: object) -> None:
    assert isinstance(found, list), found
    for v in found:
        assert isinstance(v, Violation), v
        assert v.line is None or v.line >= 1, v


#: CPython's default recursion limit, the one the service grades under. Hypothesis
#: raises the limit while it runs a test (2,017 here), which would hide exactly the
#: recursion a deep chain causes; the check puts the default back.
_SERVICE_RECURSION_LIMIT = 1000


@contextlib.contextmanager
def _service_recursion_limit() -> Iterator[None]:
    previous = sys.getrecursionlimit()
    sys.setrecursionlimit(_SERVICE_RECURSION_LIMIT)
    try:
        yield
    finally:
        sys.setrecursionlimit(previous)


def check_detectors(given_input: DetectorInput) -> None:
    """Run every reader of candidate text on one input; raise when one breaks its contract.

    Runs under the service's recursion limit, not the one hypothesis sets.
    """
    with _service_recursion_limit():
        _check(given_input)


def _check(given_input: DetectorInput) -> None:
    code, task = given_input.code, given_input.task
    try:
        found = detect_static(
            code, task, suppressions=sorted(given_input.config.suppression_comments)
        )
    except (SyntaxError, ValueError) as e:
        # Refusing code is allowed only when it does not parse (here or, nested
        # to the limit, a few frames deeper inside the detector).
        too_deep = isinstance(e.__cause__, RecursionError | MemoryError)
        if _parses(code) and not too_deep:
            raise AssertionError(f"detect_static refused code that parses: {e!r}") from e
    else:
        _check_violations(found)
    _check_violations(detect_response(given_input.response))
    violations, details, _ = find_violations(
        given_input.response, task, given_input.config, prompt=given_input.prompt
    )
    _check_violations(violations)
    assert isinstance(details, dict)
    sample = Sample(id="fuzz", prompt=given_input.prompt, response=given_input.response, task=task)
    result = asyncio.run(ViolationsGrader().grade(sample, given_input.config))
    if result.score is None:
        assert result.failure is not None, result
    else:
        assert result.failure is None and 0.0 <= result.score <= 1.0, result
    _check_violations(list(result.violations))


def fuzz_detectors(
    examples: int, *, report: Callable[[str], None] | None = None
) -> tuple[int, int]:
    """Run :func:`check_detectors` on ``examples`` generated inputs.

    Returns (examples run, uncaught exceptions). Each exception is counted and the
    run goes on; ``report`` (stderr by default) gets the first few with their input.
    """
    say = report or (lambda line: print(line, file=sys.stderr))
    run = 0
    failures = 0

    @settings(
        max_examples=examples,
        deadline=None,
        database=None,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(detector_inputs())
    def target(given_input: DetectorInput) -> None:
        nonlocal run, failures
        run += 1
        try:
            check_detectors(given_input)
        except Exception as e:  # counted, never swallowed silently: reported below
            failures += 1
            if failures <= 5:
                say(f"uncaught {type(e).__name__}: {e}\n  input: {given_input!r}"[:2000])
                say("".join(traceback.format_exception(e))[-3000:])

    target()
    return run, failures


if __name__ == "__main__":
    count = examples_from_env(FULL_EXAMPLES)
    ran, crashed = fuzz_detectors(count)
    print(f"fuzz_detectors: {ran} examples, {crashed} uncaught exceptions")
    sys.exit(1 if crashed else 0)
