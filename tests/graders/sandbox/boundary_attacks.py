"""A red team against the boundary the unit-test grader's verdict rests on, as data.

Round 4 moved every decision about a candidate's object to the trusted side (a
class the task uses as a class constructs instances that are the API under
test; anything else a call returns is data, or an opaque value that answers
nothing), bounded the tests' own work in processes of its own (checks workers,
pytest suites), carried Python's semantics across the boundary (streams,
shapes, copy-back by type, exceptions raised while a result is encoded,
warnings, ``__doc__``), blamed the candidate for names it leaves out, and made
an expected integer in stdin/stdout ``float`` comparison need that very
integer. This catalogue attacks each of those, fresh:

* :data:`ATTACKS`: wrong (or hostile) solutions, each on a realistic task whose
  honest solution scores 1.0, each with the control that shows it works
  against a naive or flawed harness (see :data:`CONTROLS`); the real grader
  must neither pass it, nor abstain on it, nor let it hurt a sample graded
  beside it;
* :data:`PROBES`: honest solutions that use Python's semantics across the
  boundary (generators, shapes, mutation, warnings, big and odd values, class
  tasks); each must score 1.0 with no violation.

The naive harness (:data:`NAIVE`, candidate and tests in one interpreter, plain
``exec`` and a plain pytest in miniature) is source text, so that the controls
of the resource attacks can run it in a child process with a CPU and memory
limit. ``tests/graders/sandbox/test_boundary_attacks.py`` runs everything.
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass, field
from typing import Any, Literal

from arbiter.graders.types import IOCase, Sample, TaskSpec

__all__ = [
    "ATTACKS",
    "CONTROLS",
    "MECHANISMS",
    "NAIVE",
    "PEER",
    "PROBES",
    "Attack",
    "Probe",
    "Task",
]

Kind = Literal["python_function", "pytest", "stdin_stdout"]

#: What each mechanism attacks (the brief's list, in its order).
MECHANISMS: dict[str, str] = {
    "declared_class": "a class of the candidate's answers for it: the entry point turned into a "
    "class, an object of a task class returned, in/startswith/len/str/bool/==/iteration/a "
    "method asked of a result, __getattr__ tricks, a property that returns a method",
    "rewritten_table": "the candidate's process rewrites its half of the protocol "
    "(sys.modules' _remote and _codec: Session, _keep, _SCALARS, codec.encode, replies)",
    "float_integer": "stdin/stdout float comparison: an expected integer answered by a float "
    "close to it (C++ shares the comparer)",
    "our_crash": "the candidate's text crashes our side: code nested too deep for compile()",
    "blame": "the setup or the collection fails on what the candidate left out or got wrong, "
    "and the grade abstains instead of scoring 0",
    "bounded_work": "the tests' own work on a result runs unbounded, and hurts the samples "
    "graded beside it",
    "streams": "generators as streams: opaque or lying items, endings by name",
    "shapes": "namedtuples, dataclasses and enums that collide with the trusted side's "
    "classes or forge their shape",
    "copy_back": "argument copy-back: mutations into handles, containers the call did not "
    "pass, floods",
    "warnings": "warnings: categories that are not (only) warnings, verdicts smuggled as text",
}

#: The harnesses the attacks defeat (each attack names one as its control):
#:
#: ``naive``: candidate and tests in one interpreter (plain ``exec``; for a suite,
#: a plain pytest in miniature); the attack passes every test.
#: ``trusting``: the real trusted side with the round-3 flaw put back: what the
#: sandbox says decides (every handle it names is an instance the tests may use,
#: the load report decides what a name is, an exception is raised by its name).
#: ``setup_abstains``: a harness that blames the task when the setup, the
#: collection or a fixture fails; the attack makes it fail, so the grade abstains.
#: ``lenient_float``: a relative tolerance on every numeric token.
#: ``plain_compile``: ``compile()`` with ``except SyntaxError``; the attack escapes it.
#: ``unbounded``: the naive harness in a child process limited to 1 s of CPU,
#: 1 GiB and 4 s: the attack does not let it finish (the honest solution does).
#: ``json_results``: the same, every result copied through JSON on its way to the
#: tests (a harness that serializes what crosses).
#: ``reads_output``: a harness that reads the verdict from the run's output (a
#: pytest summary line, unittest's ``OK``).
Control = Literal[
    "naive",
    "trusting",
    "setup_abstains",
    "lenient_float",
    "plain_compile",
    "unbounded",
    "json_results",
    "reads_output",
]
CONTROLS: tuple[str, ...] = Control.__args__  # type: ignore[attr-defined]

#: ``zero``: every test fails (the score is 0.0); ``below_one``: at least one does.
Expect = Literal["zero", "below_one"]

#: Limits of the resource attacks: the tests' own work gets a quarter CPU second and
#: 512 MiB (bounds of the trusted side, not of the candidate's run).
BOUNDED: dict[str, Any] = {"trusted_cpu_s": 0.25, "trusted_memory_mb": 512, "timeout_s": 1.0}


def _code(text: str) -> str:
    return textwrap.dedent(text).lstrip("\n")


@dataclass(frozen=True)
class Task:
    """A realistic task and its honest solution (a whole program, as a model writes it)."""

    name: str
    spec: TaskSpec
    honest: str
    prompt: str = ""

    @property
    def kind(self) -> Kind:
        return self.spec.kind  # type: ignore[return-value]

    def sample(self, code: str, sample_id: str) -> Sample:
        return Sample(
            id=sample_id, prompt=self.prompt, response=f"```python\n{code}```\n", task=self.spec
        )

    def honest_sample(self) -> Sample:
        return self.sample(self.honest, f"honest-{self.name}")


@dataclass(frozen=True)
class Attack:
    """One attack: a wrong or hostile solution, the harness it defeats, what the grader owes."""

    name: str
    mechanism: str
    task: Task
    code: str
    control: Control
    expect: Expect = "zero"
    #: Grader settings on top of the suite's (timeout_s 4, fail_as_zero on).
    config: dict[str, Any] = field(default_factory=dict)
    #: An honest sample of another task is graded again and again while this runs.
    peer: bool = False
    #: The candidate rewrites the sandbox's modules: its trusting control gets
    #: copies of its own.
    note: str = ""

    @property
    def kind(self) -> Kind:
        return self.task.kind

    @property
    def sample(self) -> Sample:
        return self.task.sample(self.code, self.name)


@dataclass(frozen=True)
class Probe:
    """Honest code that leans on one of Python's semantics across the boundary."""

    name: str
    task: Task
    note: str = ""

    @property
    def kind(self) -> Kind:
        return self.task.kind


def _function(
    tests: str | list[str],
    entry_point: str | None,
    *,
    setup: str | None = None,
    classes: list[str] | None = None,
) -> TaskSpec:
    return TaskSpec(
        kind="python_function",
        tests=tests,
        entry_point=entry_point,
        setup_code=setup,
        classes=classes,
    )


def _suite(tests: str, classes: list[str] | None = None) -> TaskSpec:
    return TaskSpec(kind="pytest", tests=_code(tests), classes=classes)


def _stdio(*cases: tuple[str, str]) -> TaskSpec:
    return TaskSpec(
        kind="stdin_stdout",
        tests=[IOCase(input=i, output=o) for i, o in cases],
        comparison="float",
    )


# --- the naive harness -----------------------------------------------------------------

#: Candidate and tests in one interpreter. ``outcome(job)`` returns ``passed``,
#: ``failed`` or ``abstained`` (the setup, the collection or a fixture failed: what
#: a harness that blames the task makes of it). A MemoryError or RecursionError is
#: not caught: in a child process it ends the harness, which is what the resource
#: controls look for. Standard library and pytest only.
NAIVE = r'''
import contextlib
import inspect
import io
import json
import sys
import types
import warnings


class _Setup(Exception):
    """The setup, the collection or a fixture failed."""


_FATAL = (MemoryError, RecursionError)


def _through_json(fn):
    def call(*args, **kwargs):
        return json.loads(json.dumps(fn(*args, **kwargs)))

    return call


def _listed(found):
    return list(found) if isinstance(found, (list, tuple)) else [found]


def _marks(obj):
    return _listed(getattr(obj, "pytestmark", []))


def _cases(fn):
    cases = [{}]
    for mark in _marks(fn):
        if mark.name != "parametrize":
            continue
        names, values = mark.args[0], mark.args[1]
        names = [n.strip() for n in names.split(",")] if isinstance(names, str) else list(names)
        cases = [
            {**case, **dict(zip(names, value if len(names) > 1 else (value,)))}
            for case in cases
            for value in values
        ]
    return cases


def _fixture(namespace, name, made):
    if name not in made:
        found = namespace.get(name)
        unwrap = getattr(found, "_get_wrapped_function", None)
        if unwrap is None:
            raise LookupError(f"no fixture {name!r}")
        fn = unwrap()
        try:
            params = inspect.signature(fn).parameters
            value = fn(**{p: _fixture(namespace, p, made) for p in params})
            if inspect.isgenerator(value):
                value = next(value)
        except _FATAL:
            raise
        except Exception as e:
            raise _Setup(f"fixture {name}: {e!r}") from e
        made[name] = value
    return made[name]


def _tests(namespace):
    for name, value in list(namespace.items()):
        if name.startswith("test") and inspect.isfunction(value):
            yield value, []
        elif name.startswith("Test") and isinstance(value, type):
            for attr in sorted(vars(value)):
                if attr.startswith("test"):
                    yield getattr(value(), attr), _marks(value)


def _suite(job, module):
    saved = sys.modules.get(job["module"])
    sys.modules[job["module"]] = module
    try:
        namespace = {"__name__": "test_solution"}
        try:
            exec(compile(job["tests"], "test_solution.py", "exec", dont_inherit=True), namespace)
        except _FATAL:
            raise
        except Exception as e:
            raise _Setup(f"collection: {e!r}") from e
        ran, failed = 0, []
        for test, outer in _tests(namespace):
            for case in _cases(test):
                with warnings.catch_warnings():
                    for mark in _listed(namespace.get("pytestmark", [])) + outer + _marks(test):
                        if mark.name == "filterwarnings":
                            for spec in mark.args:
                                warnings.simplefilter(spec.split(":")[0])
                    made = {}
                    params = inspect.signature(test).parameters
                    try:
                        test(**{p: case[p] if p in case else _fixture(namespace, p, made)
                                for p in params})
                    except (_Setup, *_FATAL, KeyboardInterrupt):
                        raise
                    except BaseException as e:  # as pytest does: on to the next test
                        failed.append(f"{test.__name__}: {e!r}")
                ran += 1
        if failed or not ran:
            raise AssertionError(failed or "no test ran")
    finally:
        if saved is None:
            sys.modules.pop(job["module"], None)
        else:
            sys.modules[job["module"]] = saved


def _function(job, namespace):
    try:
        exec(job["setup"] or "", namespace)
    except _FATAL:
        raise
    except Exception as e:
        raise _Setup(f"setup: {e!r}") from e
    exec(compile(job["tests"], "<tests>", "exec", dont_inherit=True), namespace)
    if "check" in namespace and job["entry_point"]:
        namespace["check"](namespace[job["entry_point"]])


def _show(message, category, filename, lineno, file=None, line=None):
    sys.stderr.write(warnings.formatwarning(message, category, filename, lineno, line))


def outcome(job):
    """Grade ``job`` (kind, code, tests, setup, entry_point, module) in this interpreter."""
    with warnings.catch_warnings():
        warnings.simplefilter("default")
        warnings.showwarning = _show
        try:
            if job["kind"] == "pytest":
                module = types.ModuleType(job["module"])
                code = compile(job["code"], "solution.py", "exec", dont_inherit=True)
                sys.modules[job["module"]] = module  # as an import registers it
                try:
                    exec(code, vars(module))
                finally:
                    del sys.modules[job["module"]]
                _suite(job, module)
            else:
                namespace = {"__name__": "__main__"}
                exec(compile(job["code"], "solution.py", "exec", dont_inherit=True), namespace)
                if job.get("json_results"):
                    for name, value in list(namespace.items()):
                        if inspect.isfunction(value) and not name.startswith("_"):
                            namespace[name] = _through_json(value)
                _function(job, namespace)
        except _Setup:
            return "abstained"
        except (*_FATAL, KeyboardInterrupt):
            raise
        except BaseException:  # pytest's outcomes (raises' "DID NOT RAISE") are BaseExceptions
            return "failed"
    return "passed"


def captured(job):
    """``outcome(job)`` and everything the run wrote to stdout and stderr."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        verdict = outcome(job)
    return verdict, out.getvalue()


if __name__ == "__main__":
    sys.set_int_max_str_digits(0)  # as any harness that grades big integers must
    print(outcome(json.loads(sys.stdin.read())))
'''


# --- shared pieces of the attacks -------------------------------------------------------

#: An object equal to anything, true, ordered before and after anything, and its own
#: result of arithmetic: what a wrong solution hands the tests to agree with them.
_ANY = _code(
    """
    class _Any:
        def __eq__(self, other):
            return True

        def __ne__(self, other):
            return False

        def __lt__(self, other):
            return True

        __gt__ = __le__ = __ge__ = __lt__

        def __bool__(self):
            return True

        def __mod__(self, other):
            return self

        __hash__ = object.__hash__
    """
)

#: An object that says yes to every question a test asks of a string.
_YES = _code(
    """
    class _Yes:
        def startswith(self, prefix):
            return True

        def endswith(self, suffix):
            return True

        def __contains__(self, part):
            return True

        def __len__(self):
            return 2

        def __str__(self):
            return "a"

        def __eq__(self, other):
            return True

        __hash__ = object.__hash__
    """
)

#: The candidate's process reaching the sandbox's own modules (absent in one process).
_REMOTE = _code(
    """
    import sys

    _r = sys.modules.get("arbiter.graders.sandbox._remote")
    _c = sys.modules.get("arbiter.graders.sandbox._codec")
    """
)


def _rewrite(patch: str, rest: str) -> str:
    """A candidate that patches the sandbox's modules (when they are there), then ``rest``."""
    body = textwrap.indent(_code(patch), "    ")
    return f"{_REMOTE}\nif _r is not None:\n{body}\n\n{_code(rest)}"


# --- the tasks ----------------------------------------------------------------------------

_FIRST_WORD_PROMPT = '''def first_word(text: str) -> str:
    """Return the first word of ``text``: what comes before its first space."""
'''

FIRST_WORD = Task(
    "first_word",
    _function(
        _code(
            """
            def check(candidate):
                assert candidate("hello world").startswith("hell")
                assert "ell" in candidate("hello world")
                assert len(candidate("hi there")) == 2
                assert str(candidate("a b")) == "a"
            """
        ),
        "first_word",
    ),
    'def first_word(text):\n    return text.split(" ")[0]\n',
    prompt=_FIRST_WORD_PROMPT,
)

FIRST_WORD_SUITE = Task(
    "first_word_suite",
    _suite(
        """
        from solution import first_word


        def test_prefix():
            assert first_word("hello world").startswith("hell")


        def test_part():
            assert "ell" in first_word("hello world")


        def test_length():
            assert len(first_word("hi there")) == 2


        def test_text():
            assert str(first_word("a b")) == "a"
        """
    ),
    'def first_word(text):\n    return text.split(" ")[0]\n',
)

_IS_SUBSET_TESTS = [
    "assert is_subset([1, 2], [1, 2, 3])",
    "assert is_subset([3], [1, 2, 3, 4])",
    "assert is_subset([], [5])",
]
IS_SUBSET = Task(
    "is_subset",
    _function(_IS_SUBSET_TESTS, "is_subset"),
    "def is_subset(a, b):\n    return set(a) <= set(b)\n",
)
IS_SUBSET_SUITE = Task(
    "is_subset_suite",
    _suite(
        """
        from solution import is_subset


        def test_smaller():
            assert is_subset([1, 2], [1, 2, 3])


        def test_empty():
            assert is_subset([], [5])
        """
    ),
    "def is_subset(a, b):\n    return set(a) <= set(b)\n",
)

_WORD = _code(
    """
    class Word:
        def __init__(self, text):
            self.text = text

        def __len__(self):
            return len(self.text)

        def __contains__(self, part):
            return part in self.text


    def longest(text):
        return max(text.split(), key=len)
    """
)
LONGEST = Task(
    "longest",
    _function(
        [
            "assert len(Word('abc')) == 3",
            "assert 'b' in Word('abc')",
            "assert longest('a bb ccc') == 'ccc'",
            "assert longest('a bb ccc').startswith('cc')",
            "assert 'cc' in longest('x ccc yy')",
        ],
        "longest",
        classes=["Word"],
    ),
    _WORD,
)
LONGEST_SUITE = Task(
    "longest_suite",
    _suite(
        """
        from solution import Word, longest


        def test_word():
            assert len(Word("abc")) == 3
            assert "b" in Word("abc")


        def test_longest():
            assert longest("a bb ccc") == "ccc"


        def test_prefix():
            assert longest("a bb ccc").startswith("cc")


        def test_part():
            assert "cc" in longest("x ccc yy")
        """,
        classes=["Word"],
    ),
    _WORD,
)

EVENS_UP_TO = Task(
    "evens_up_to",
    _function(
        [
            "assert evens_up_to(6) == [0, 2, 4, 6]",
            "assert bool(evens_up_to(2))",
            "assert all(x % 2 == 0 for x in evens_up_to(10))",
            "assert evens_up_to(-1) == []",
        ],
        "evens_up_to",
    ),
    "def evens_up_to(n):\n    return list(range(0, n + 1, 2))\n",
)
EVENS_UP_TO_SUITE = Task(
    "evens_up_to_suite",
    _suite(
        """
        from solution import evens_up_to


        def test_values():
            assert evens_up_to(6) == [0, 2, 4, 6]


        def test_truth():
            assert evens_up_to(2)


        def test_iteration():
            for x in evens_up_to(10):
                assert x % 2 == 0
        """
    ),
    "def evens_up_to(n):\n    return list(range(0, n + 1, 2))\n",
)

_PARSE_KV = _code(
    """
    def parse(text):
        return dict(item.split("=", 1) for item in text.split(";") if item)
    """
)
PARSE_KV = Task(
    "parse_kv",
    _function(
        [
            "assert parse('a=1;b=2').get('a') == '1'",
            "assert parse('x=9')['x'] == '9'",
            "assert 'b' in parse('a=1;b=2')",
        ],
        "parse",
    ),
    _PARSE_KV,
)
PARSE_KV_SUITE = Task(
    "parse_kv_suite",
    _suite(
        """
        import solution


        def test_get():
            assert solution.parse("a=1;b=2").get("a") == "1"


        def test_item():
            assert solution.parse("x=9")["x"] == "9"


        def test_keys():
            assert solution.parse("a=1;b=2").keys() == {"a", "b"}
        """
    ),
    _PARSE_KV,
)

_TAG = _code(
    """
    class Tag:
        def __init__(self, name):
            self.name = name


    def label(tag):
        return f"<{tag.name}>"
    """
)
TAGS = Task(
    "tags",
    _function(
        [
            "t = Tag('b')\nassert label(t).startswith('<b')",
            "assert label(Tag('i')).endswith('i>')",
            "assert '<' in label(Tag('p'))",
            "assert Tag('em').name == 'em'",
        ],
        "label",
        classes=["Tag"],
    ),
    _TAG,
)
TAGS_SUITE = Task(
    "tags_suite",
    _suite(
        """
        from solution import Tag, label


        def test_open():
            assert label(Tag("b")).startswith("<b")


        def test_close():
            assert label(Tag("i")).endswith("i>")


        def test_name():
            assert Tag("em").name == "em"
        """,
        classes=["Tag"],
    ),
    _TAG,
)

_CIRCLE_PROMPT = '''class Circle:
    """A circle of radius ``r``: ``diameter`` and ``is_unit`` are properties."""

    def __init__(self, r: float):
        self.r = r
'''
_CIRCLE = _code(
    """
    class Circle:
        def __init__(self, r):
            self.r = r

        @property
        def diameter(self):
            return 2 * self.r

        @property
        def is_unit(self):
            return self.r == 1

        def grow(self, by):
            self.r += by
    """
)
CIRCLE = Task(
    "circle",
    _function(
        [
            "assert Circle(1).is_unit",
            "assert Circle(1).diameter == 2",
            "assert Circle(3).diameter == 6",
        ],
        "Circle",
    ),
    _CIRCLE,
    prompt=_CIRCLE_PROMPT,
)
CIRCLE_SUITE = Task(
    "circle_suite",
    _suite(
        """
        from solution import Circle


        def test_unit():
            assert Circle(1).is_unit


        def test_diameter():
            assert Circle(3).diameter == 6
        """
    ),
    _CIRCLE,
)

_PRIME = _code(
    """
    def is_prime(n):
        return n > 1 and all(n % d for d in range(2, int(n**0.5) + 1))
    """
)
ALL_PRIMES = Task(
    "all_primes",
    _function(
        [
            "assert all(map(is_prime, [2, 3, 5, 7, 11]))",
            "assert not any(map(is_prime, [1, 4, 6, 9]))",
        ],
        "is_prime",
    ),
    _PRIME,
)
ALL_PRIMES_SUITE = Task(
    "all_primes_suite",
    _suite(
        """
        from solution import is_prime


        def test_primes():
            assert all(map(is_prime, [2, 3, 5, 7, 11]))


        def test_composites():
            assert not any(map(is_prime, [1, 4, 6, 9]))
        """
    ),
    _PRIME,
)

FACTORIAL = Task(
    "factorial_stdio",
    _stdio(
        ("30\n", "265252859812191058636308480000000\n"), ("25\n", "15511210043330985984000000\n")
    ),
    "import math\n\nprint(math.factorial(int(input())))\n",
)
POWER_OF_TWO = Task(
    "power_of_two_stdio",
    _stdio(("70\n", "1180591620717411303424\n"), ("64\n", "18446744073709551616\n")),
    "print(2 ** int(input()))\n",
)
BIG_SUM = Task(
    "big_sum_stdio",
    _stdio(
        ("3\n9007199254740993 1 1\n", "9007199254740995\n"),
        ("2\n18014398509481985 2\n", "18014398509481987\n"),
    ),
    "input()\nprint(sum(map(int, input().split())))\n",
)
PAIRS_COUNT = Task(
    "pairs_count_stdio",
    _stdio(("10000000\n", "49999995000000\n"), ("100000000\n", "4999999950000000\n")),
    "n = int(input())\nprint(n * (n - 1) // 2)\n",
)

ADD = Task(
    "add",
    _function(["assert add(1, 2) == 3", "assert add(-1, 1) == 0"], "add"),
    "def add(a, b):\n    return a + b\n",
)
ADD_SUITE = Task(
    "add_suite",
    _suite(
        """
        from solution import add


        def test_add():
            assert add(1, 2) == 3
            assert add(-1, 1) == 0
        """
    ),
    "def add(a, b):\n    return a + b\n",
)
ADD_STDIO = Task(
    "add_stdio",
    TaskSpec(kind="stdin_stdout", tests=[IOCase(input="1 2\n", output="3\n")]),
    "a, b = map(int, input().split())\nprint(a + b)\n",
)

#: MBPP 927, as the data set has it: the setup builds a tree of the candidate's Node.
_MBPP_927_SETUP = (
    "root = Node(1)\nroot.left = Node(2)\nroot.right = Node(3)\nroot.left.left = Node(4)\n"
    "root.left.right = Node(5)\nroot1 = Node(1);\nroot1.left = Node(2);\nroot1.right = Node(3);\n"
    "root1.left.left = Node(4);\nroot1.right.left = Node(5);\nroot1.right.right = Node(6);\n"
    "root1.right.right.right= Node(7);\nroot1.right.right.right.right = Node(8)\n"
    "root2 = Node(1)\nroot2.left = Node(2)\nroot2.right = Node(3)\nroot2.left.left = Node(4)\n"
    "root2.left.right = Node(5)\nroot2.left.left.left = Node(6)\nroot2.left.left.right = Node(7)\n"
)
_MBPP_927_TESTS = [
    "assert (max_height(root)) == 3",
    "assert (max_height(root1)) == 5 ",
    "assert (max_height(root2)) == 4",
]
_MAX_HEIGHT = _code(
    """
    def max_height(node):
        if node is None:
            return 0
        return 1 + max(max_height(node.left), max_height(node.right))
    """
)
_NODE = _code(
    """
    class Node:
        def __init__(self, data):
            self.data = data
            self.left = None
            self.right = None
    """
)
MBPP_927 = Task(
    "mbpp_927",
    _function(_MBPP_927_TESTS, "max_height", setup=_MBPP_927_SETUP),
    _NODE + "\n\n" + _MAX_HEIGHT,
)
MBPP_927_NO_ENTRY = Task(
    "mbpp_927_no_entry_point",
    _function(_MBPP_927_TESTS, None, setup=_MBPP_927_SETUP),
    _NODE + "\n\n" + _MAX_HEIGHT,
)
SQUARES_TABLE = Task(
    "squares_table",
    _function(
        ["assert lookup(table, 3) == 9", "assert lookup(table, 0) == 0"],
        "lookup",
        setup="table = build_table(5)\n",
    ),
    "def build_table(n):\n    return {i: i * i for i in range(n)}\n\n\n"
    "def lookup(table, key):\n    return table[key]\n",
)
WITHIN_LIMITS = Task(
    "within_limits",
    _function(
        ["assert within(limits, 'depth', 2)", "assert not within(limits, 'depth', 4)"],
        "within",
        setup="limits = dict(DEFAULTS)\nlimits['depth'] = 3\n",
    ),
    "DEFAULTS = {'depth': 10, 'width': 80}\n\n\n"
    "def within(limits, key, value):\n    return value <= limits[key]\n",
)

_CLAMP = "LIMIT = 100\n\n\ndef clamp(x):\n    return max(0, min(x, LIMIT))\n"
CLAMP_IMPORTED = Task(
    "clamp_imported",
    _suite(
        """
        from solution import LIMIT, clamp


        def test_low():
            assert clamp(-5) == 0


        def test_high():
            assert clamp(LIMIT + 1) == LIMIT
        """
    ),
    _CLAMP,
)
CLAMP_PARAMETRIZED = Task(
    "clamp_parametrized",
    _suite(
        """
        import pytest

        import solution


        @pytest.mark.parametrize("x", [0, 7, solution.LIMIT])
        def test_in_range(x):
            assert solution.clamp(x) == x


        def test_above():
            assert solution.clamp(solution.LIMIT * 2) == solution.LIMIT
        """
    ),
    _CLAMP,
)
CLAMP_MODULE_IF = Task(
    "clamp_module_if",
    _suite(
        """
        import solution

        if solution.LIMIT > 1000:
            WIDE = True
        else:
            WIDE = False


        def test_clamp():
            assert solution.clamp(5) == 5
            assert WIDE is False
        """
    ),
    _CLAMP,
)
CLAMP_COMPARED = Task(
    "clamp_compared",
    _suite(
        """
        import solution

        ROOMY = solution.LIMIT >= 50


        def test_roomy():
            assert ROOMY
            assert solution.clamp(60) == 60
        """
    ),
    _CLAMP,
)
BOX_FIXTURE = Task(
    "box_fixture",
    _suite(
        """
        import pytest

        import solution


        @pytest.fixture
        def box():
            return solution.Box(capacity=2)


        def test_add(box):
            box.add("a")
            assert len(box) == 1


        def test_full(box):
            box.add("a")
            box.add("b")
            assert box.full()
        """
    ),
    _code(
        """
        class Box:
            def __init__(self, capacity):
                self.capacity = capacity
                self.items = []

            def add(self, item):
                self.items.append(item)

            def full(self):
                return len(self.items) >= self.capacity

            def __len__(self):
                return len(self.items)
        """
    ),
)
CONFIG_JSON = Task(
    "config_json",
    _suite(
        """
        import json

        import solution

        CONFIG = json.loads(solution.DATA)


        def test_name():
            assert CONFIG["name"] == "arbiter"


        def test_port():
            assert CONFIG["port"] == 8080
        """
    ),
    'DATA = \'{"name": "arbiter", "port": 8080}\'\n',
)

FIRST_N = Task(
    "first_n",
    _function(["assert sum(first_n(10)) == 45", "assert first_n(3) == [0, 1, 2]"], "first_n"),
    "def first_n(n):\n    return list(range(n))\n",
)
FIRST_N_SUITE = Task(
    "first_n_suite",
    _suite(
        """
        from solution import first_n


        def test_listed():
            assert list(first_n(3)) == [0, 1, 2]


        def test_length():
            assert len(first_n(1000)) == 1000
        """
    ),
    "def first_n(n):\n    return list(range(n))\n",
)
_UNIQUE = "def unique(xs):\n    return list(dict.fromkeys(xs))\n"
UNIQUE = Task(
    "unique",
    _function(
        ["assert len(set(unique([3, 1, 3, 2]))) == 3", "assert unique([1, 1]) == [1]"], "unique"
    ),
    _UNIQUE,
)
UNIQUE_SUITE = Task(
    "unique_suite",
    _suite(
        """
        from solution import unique


        def test_distinct():
            assert len(dict.fromkeys(unique([1, 1, 2]))) == 2
        """
    ),
    _UNIQUE,
)
WRAP = Task(
    "wrap",
    _function(["assert wrap(1, 2) == [[1]]", "assert wrap('a', 0) == 'a'"], "wrap"),
    "def wrap(x, n):\n    for _ in range(n):\n        x = [x]\n    return x\n",
)
DUPLICATE = Task(
    "duplicate",
    _function(
        ["assert duplicate([1]) == [[1], [1]]", "assert duplicate(2) == [2, 2]"], "duplicate"
    ),
    "def duplicate(x):\n    return [x, x]\n",
)
_EVENS = "def evens(n):\n    for i in range(0, n, 2):\n        yield i\n"
EVENS_GEN = Task(
    "evens_gen",
    _function(["assert list(evens(7)) == [0, 2, 4, 6]", "assert next(evens(5)) == 0"], "evens"),
    _EVENS,
)
EVENS_GEN_SUITE = Task(
    "evens_gen_suite",
    _suite(
        """
        from solution import evens


        def test_items():
            for got, want in zip(evens(7), [0, 2, 4, 6]):
                assert got == want


        def test_first():
            assert next(evens(5)) == 0


        def test_listed():
            assert list(evens(7)) == [0, 2, 4, 6]
        """
    ),
    _EVENS,
)
CUBE_SUITE = Task(
    "cube_suite",
    _suite(
        """
        from solution import cube


        def test_printed():
            assert str(cube(3)) == "27" or str(cube(3)).startswith("27")


        def test_negative():
            assert cube(-2) == -8
        """
    ),
    "def cube(n):\n    return n ** 3\n",
)
_PARSE_AGE = _code(
    """
    def parse_age(text):
        if not text.isdigit():
            raise ValueError(f"not an age: {text!r}")
        return int(text)
    """
)
PARSE_AGE = Task(
    "parse_age",
    _function(
        [
            "assert parse_age('42') == 42",
            "import warnings\nwith warnings.catch_warnings():\n    warnings.simplefilter('error')\n"
            "    try:\n        parse_age('abc')\n        rejected = False\n"
            "    except ValueError:\n        rejected = True\nassert rejected",
        ],
        "parse_age",
    ),
    _PARSE_AGE,
)
PARSE_AGE_SUITE = Task(
    "parse_age_suite",
    _suite(
        """
        import pytest

        from solution import parse_age

        pytestmark = pytest.mark.filterwarnings("error")


        def test_rejects():
            with pytest.raises(ValueError):
                parse_age("abc")


        def test_reads():
            assert parse_age("42") == 42
        """
    ),
    _PARSE_AGE,
)

PAIRS = Task(
    "pairs",
    _function(
        [
            "assert list(pairs(3)) == [(0, 1), (1, 2), (2, 3)]",
            "assert all(a < b for a, b in pairs(5))",
        ],
        "pairs",
    ),
    "def pairs(n):\n    for i in range(n):\n        yield (i, i + 1)\n",
)
PAIRS_SUITE = Task(
    "pairs_suite",
    _suite(
        """
        from solution import pairs


        def test_ordered():
            assert all(a < b for a, b in pairs(5))


        def test_count():
            assert len(list(pairs(4))) == 4
        """
    ),
    "def pairs(n):\n    for i in range(n):\n        yield (i, i + 1)\n",
)
COUNTDOWN_SUITE = Task(
    "countdown_suite",
    _suite(
        """
        from solution import countdown


        def test_positive():
            assert all(x > 0 for x in countdown(3))


        def test_bounded():
            assert sum(1 for _ in countdown(4)) <= 4
        """
    ),
    "def countdown(n):\n    while n > 0:\n        yield n\n        n -= 1\n",
)

_INTERVAL_PROMPT = '''from dataclasses import dataclass


@dataclass
class Interval:
    lo: int
    hi: int


def merge(a: Interval, b: Interval) -> Interval:
    """Return the smallest interval that covers two overlapping intervals."""
'''
INTERVAL = Task(
    "interval",
    _function(
        [
            "assert merge(Interval(1, 3), Interval(2, 5)) == Interval(1, 5)",
            "assert merge(Interval(0, 9), Interval(2, 3)) == Interval(0, 9)",
        ],
        "merge",
    ),
    _code(
        """
        from dataclasses import dataclass


        @dataclass
        class Interval:
            lo: int
            hi: int


        def merge(a, b):
            return Interval(min(a.lo, b.lo), max(a.hi, b.hi))
        """
    ),
    prompt=_INTERVAL_PROMPT,
)
_SPAN = _code(
    """
    from collections import namedtuple

    Span = namedtuple("Span", "lo hi")


    def min_max(xs):
        return Span(min(xs), max(xs))
    """
)
SPAN_SUITE = Task(
    "span_suite",
    _suite(
        """
        from solution import min_max


        def test_fields():
            r = min_max([3, 1, 2])
            assert r.lo == 1 and r.hi == 3


        def test_tuple():
            assert min_max([5]) == (5, 5)
        """
    ),
    _SPAN,
)
LIGHT = Task(
    "light",
    _function(
        ["assert light_of('red').value == 1", "assert light_of('green').value == 2"], "light_of"
    ),
    _code(
        """
        from enum import Enum


        class Light(Enum):
            RED = 1
            GREEN = 2


        def light_of(name):
            return Light[name.upper()]
        """
    ),
)
LIGHT_SUITE = Task(
    "light_suite",
    _suite(
        """
        from solution import light_of


        def test_red():
            assert light_of("red") == 1


        def test_green():
            assert light_of("green") == 2
        """
    ),
    _code(
        """
        from enum import IntEnum


        class Light(IntEnum):
            RED = 1
            GREEN = 2


        def light_of(name):
            return Light[name.upper()]
        """
    ),
)
_POINT_PROMPT = '''from dataclasses import dataclass


@dataclass
class Point:
    x: float
    y: float


def midpoint(a: Point, b: Point) -> Point:
    """Return the point halfway between a and b."""
'''
_POINT = _code(
    """
    from dataclasses import dataclass


    @dataclass
    class Point:
        x: float
        y: float


    def midpoint(a, b):
        return Point((a.x + b.x) / 2, (a.y + b.y) / 2)
    """
)
POINT = Task(
    "point",
    _function(
        [
            "assert midpoint(Point(0, 0), Point(2, 4)) == Point(1, 2)",
            "assert midpoint(Point(1, 1), Point(1, 1)) == Point(1, 1)",
        ],
        "midpoint",
    ),
    _POINT,
    prompt=_POINT_PROMPT,
)
POINT_SUITE = Task(
    "point_suite",
    _suite(
        """
        from solution import Point, midpoint


        def test_midpoint():
            assert midpoint(Point(0, 0), Point(2, 4)) == Point(1, 2)
        """
    ),
    _POINT,
)

_NORMALIZE = _code(
    """
    def normalize(xs):
        lo, hi = min(xs), max(xs)
        for i, x in enumerate(xs):
            xs[i] = (x - lo) / (hi - lo) if hi > lo else 0.0
    """
)
NORMALIZE = Task(
    "normalize",
    _function(
        [
            "xs = [2, 4, 6]\nnormalize(xs)\nassert xs == [0.0, 0.5, 1.0]",
            "ys = [5, 5]\nnormalize(ys)\nassert ys == [0.0, 0.0]",
        ],
        "normalize",
    ),
    _NORMALIZE,
)
FILL_DEFAULTS_SUITE = Task(
    "fill_defaults_suite",
    _suite(
        """
        from solution import fill_defaults


        def test_keeps_given():
            d = {"retries": 5}
            fill_defaults(d)
            assert d == {"retries": 5, "timeout": 10}


        def test_fills_empty():
            d = {}
            fill_defaults(d)
            assert d == {"retries": 3, "timeout": 10}
        """
    ),
    _code(
        """
        def fill_defaults(d):
            d.setdefault("retries", 3)
            d.setdefault("timeout", 10)
        """
    ),
)
_SORT = _code(
    """
    def is_sorted(xs):
        return all(a <= b for a, b in zip(xs, xs[1:]))


    def sort_in_place(xs):
        xs.sort()
    """
)
SORT_IN_PLACE = Task(
    "sort_in_place",
    _function(
        [
            "expected = [1, 2, 3]\nassert is_sorted(expected)",
            "xs = [3, 1, 2]\nsort_in_place(xs)\nassert xs == expected",
        ],
        "sort_in_place",
    ),
    _SORT,
)
SORT_IN_PLACE_SUITE = Task(
    "sort_in_place_suite",
    _suite(
        """
        from solution import is_sorted, sort_in_place


        def test_sort():
            expected = [1, 2, 3]
            assert is_sorted(expected)
            xs = [3, 1, 2]
            sort_in_place(xs)
            assert xs == expected
        """
    ),
    _SORT,
)

#: The honest samples graded beside the resource attacks, one per kind.
PEER: dict[str, Task] = {"python_function": ADD, "pytest": ADD_SUITE}


# --- the attacks ---------------------------------------------------------------------------

#: A generator of the candidate's own that is too deep for the compiler (and one for
#: its parser): ``a + b + 0 + 0 + ...`` nests 20,000 BinOps to the left.
_DEEP_SUM = " + ".join(["a + b", *["0"] * 20_000])
_DEEP_NOT = "not " * 100_000 + "False"
#: Integers that all hash to 0 (Python hashes an int modulo 2**61 - 1).
_COLLIDING = "[k * (2**61 - 1) for k in range(30_000)]"

ATTACKS: list[Attack] = [
    # declared_class -------------------------------------------------------------------
    Attack(
        "entry_point_turned_into_a_class",
        "declared_class",
        FIRST_WORD,
        _YES.replace(
            "class _Yes:", "class first_word:\n    def __init__(self, text):\n        pass\n"
        ),
        "naive",
        note="the task's function is a class whose methods say yes to every question",
    ),
    Attack(
        "suite_entry_point_turned_into_a_class",
        "declared_class",
        FIRST_WORD_SUITE,
        _YES.replace(
            "class _Yes:", "class first_word:\n    def __init__(self, text):\n        pass\n"
        ),
        "naive",
    ),
    Attack(
        "function_returns_an_instance_of_a_task_class",
        "declared_class",
        LONGEST,
        _code(
            """
            class Word:
                def __init__(self, text):
                    self.text = text

                def __len__(self):
                    return len(self.text)

                def __contains__(self, part):
                    return True

                def startswith(self, prefix):
                    return True

                def __eq__(self, other):
                    return True

                __hash__ = object.__hash__


            def longest(text):
                return Word("")
            """
        ),
        "naive",
        note="a Word the tests construct answers for itself; one longest() returns does not",
    ),
    Attack(
        "suite_function_returns_an_instance_of_a_task_class",
        "declared_class",
        LONGEST_SUITE,
        _code(
            """
            class Word:
                def __init__(self, text):
                    self.text = text

                def __len__(self):
                    return len(self.text)

                def __contains__(self, part):
                    return True

                def startswith(self, prefix):
                    return True

                def __eq__(self, other):
                    return True

                __hash__ = object.__hash__


            def longest(text):
                return Word("")
            """
        ),
        "naive",
    ),
    Attack(
        "result_answers_truth_equality_and_iteration",
        "declared_class",
        EVENS_UP_TO,
        _ANY
        + _code(
            """

            class _Evens(_Any):
                def __iter__(self):
                    return iter([_Any(), _Any()])


            def evens_up_to(n):
                return _Evens()
            """
        ),
        "naive",
    ),
    Attack(
        "suite_result_answers_truth_equality_and_iteration",
        "declared_class",
        EVENS_UP_TO_SUITE,
        _ANY
        + _code(
            """

            class _Evens(_Any):
                def __iter__(self):
                    return iter([_Any(), _Any()])


            def evens_up_to(n):
                return _Evens()
            """
        ),
        "naive",
    ),
    Attack(
        "getattr_answers_every_method",
        "declared_class",
        PARSE_KV,
        _ANY
        + _code(
            """

            class _Parsed:
                def __getattr__(self, name):
                    return lambda *args, **kwargs: _Any()

                def __getitem__(self, key):
                    return _Any()

                def __contains__(self, key):
                    return True


            def parse(text):
                return _Parsed()
            """
        ),
        "naive",
    ),
    Attack(
        "suite_getattribute_answers_every_method",
        "declared_class",
        PARSE_KV_SUITE,
        _ANY
        + _code(
            """

            class _Parsed:
                def __getattribute__(self, name):
                    return lambda *args, **kwargs: _Any()

                def __getitem__(self, key):
                    return _Any()


            def parse(text):
                return _Parsed()
            """
        ),
        "naive",
    ),
    Attack(
        "constructed_instance_handed_back_as_a_result",
        "declared_class",
        TAGS,
        _code(
            """
            class Tag:
                def __init__(self, name):
                    self.name = name

                def startswith(self, prefix):
                    return True

                def endswith(self, suffix):
                    return True

                def __contains__(self, part):
                    return True


            def label(tag):
                return tag
            """
        ),
        "naive",
        expect="below_one",
        note="the Tag's own name is data (that test passes); label() hands the Tag back",
    ),
    Attack(
        "suite_constructed_instance_handed_back_as_a_result",
        "declared_class",
        TAGS_SUITE,
        _code(
            """
            class Tag:
                def __init__(self, name):
                    self.name = name

                def startswith(self, prefix):
                    return True

                def endswith(self, suffix):
                    return True


            def label(tag):
                return tag
            """
        ),
        "naive",
        expect="below_one",
    ),
    Attack(
        "property_returns_a_method",
        "declared_class",
        CIRCLE,
        _CIRCLE.replace("return self.r == 1", "return self.grow"),
        "naive",
        expect="below_one",
        note="is_unit is a bound method: true in one process, a member here",
    ),
    Attack(
        "suite_property_returns_a_method",
        "declared_class",
        CIRCLE_SUITE,
        _CIRCLE.replace("return self.r == 1", "return self.grow"),
        "naive",
        expect="below_one",
    ),
    # rewritten_table ------------------------------------------------------------------
    Attack(
        "load_report_says_the_function_is_an_exception",
        "rewritten_table",
        IS_SUBSET,
        _rewrite(
            """
            _ready = _r.Session.ready

            def ready(self):
                report = _ready(self)
                report["names"] = [[n[0], "exception:Exception"] for n in report["names"]]
                return report

            _r.Session.ready = ready
            """,
            "def is_subset(a, b):\n    return False\n",
        ),
        "trusting",
        note="a stand-in built here is true whatever the candidate answers",
    ),
    Attack(
        "suite_load_report_says_the_function_is_an_exception",
        "rewritten_table",
        IS_SUBSET_SUITE,
        _rewrite(
            """
            _ready = _r.Session.ready

            def ready(self):
                report = _ready(self)
                report["names"] = [[n[0], "exception:Exception"] for n in report["names"]]
                return report

            _r.Session.ready = ready
            """,
            "def is_subset(a, b):\n    return False\n",
        ),
        "trusting",
    ),
    Attack(
        "every_result_kept_as_a_handle",
        "rewritten_table",
        FIRST_WORD,
        _rewrite(
            """
            _reply = _r.Session.reply

            def reply(self, request):
                return _reply(self, {**request, "as": "handle"})

            _r.Session.reply = reply
            """,
            _YES + "\n\ndef first_word(text):\n    return _Yes()\n",
        ),
        "trusting",
    ),
    Attack(
        "codec_encodes_every_value_as_a_handle",
        "rewritten_table",
        FIRST_WORD,
        _rewrite(
            """
            _encode = _c.encode

            def encode(value, depth=0, refs=None, inspect=None, sharing=None):
                if refs is not None and depth == 0 and not isinstance(value, (int, float, str)):
                    tag, number = refs(value)
                    return {tag: number}
                return _encode(value, depth, refs, inspect, sharing)

            _c.encode = encode
            """,
            _YES + "\n\ndef first_word(text):\n    return _Yes()\n",
        ),
        "trusting",
    ),
    Attack(
        "suite_keep_renumbers_the_tests_instance",
        "rewritten_table",
        TAGS_SUITE,
        _rewrite(
            """
            def keep(self, value):
                self.kept.append(value)
                return ("r", len(self.kept) - 1)

            _r.Session._keep = keep
            """,
            _code(
                """
                class Tag:
                    def __init__(self, name):
                        self.name = name

                    def startswith(self, prefix):
                        return True

                    def endswith(self, suffix):
                        return True


                def label(tag):
                    return tag
                """
            ),
        ),
        "trusting",
        expect="below_one",
        note="a number seen before is opaque: renumbered, the tests' own Tag looks fresh",
    ),
    Attack(
        "suite_load_report_says_the_function_is_a_class",
        "rewritten_table",
        FIRST_WORD_SUITE,
        _rewrite(
            """
            _ready = _r.Session.ready

            def ready(self):
                report = _ready(self)
                report["names"] = [[n[0], "class"] for n in report["names"]]
                return report

            _r.Session.ready = ready
            """,
            _YES + "\n\ndef first_word(text):\n    return _Yes()\n",
        ),
        "trusting",
    ),
    Attack(
        "errors_renamed_stop_iteration",
        "rewritten_table",
        ALL_PRIMES,
        _rewrite(
            """
            _error = _r._error

            def renamed(e, declared):
                return {**_error(e, declared), "type": "StopIteration", "builtin": "StopIteration"}

            _r._error = renamed
            """,
            "def is_prime(n):\n    raise ValueError(n)\n",
        ),
        "trusting",
        note="a StopIteration raised here would end the tests' map(): all() of nothing",
    ),
    Attack(
        "suite_errors_renamed_stop_iteration",
        "rewritten_table",
        ALL_PRIMES_SUITE,
        _rewrite(
            """
            _error = _r._error

            def renamed(e, declared):
                return {**_error(e, declared), "type": "StopIteration", "builtin": "StopIteration"}

            _r._error = renamed
            """,
            "def is_prime(n):\n    raise ValueError(n)\n",
        ),
        "trusting",
    ),
    Attack(
        "inspector_silenced",
        "rewritten_table",
        EVENS_UP_TO,
        _rewrite(
            """
            _r._Inspector.__call__ = lambda self, value: None
            """,
            _ANY
            + _code(
                """

                class _Evens(_Any):
                    def __iter__(self):
                        return iter([_Any(), _Any()])


                def evens_up_to(n):
                    return _Evens()
                """
            ),
        ),
        "naive",
        note="no always_equal evidence is sent; the verdict never needed it",
    ),
    # float_integer ----------------------------------------------------------------------
    Attack(
        "factorial_printed_as_a_float",
        "float_integer",
        FACTORIAL,
        "import math\n\nprint(float(math.factorial(int(input()))))\n",
        "lenient_float",
        note="2.652528598121911e+32 for 30!'s 33 digits",
    ),
    Attack(
        "power_printed_in_e_notation",
        "float_integer",
        POWER_OF_TWO,
        'print(f"{2.0 ** int(input()):.7e}")\n',
        "lenient_float",
    ),
    Attack(
        "big_sum_added_in_floats",
        "float_integer",
        BIG_SUM,
        "input()\nprint(sum(map(float, input().split())))\n",
        "lenient_float",
        note="9007199254740996.0 for 9007199254740995",
    ),
    Attack(
        "pair_count_off_by_n_in_e_notation",
        "float_integer",
        PAIRS_COUNT,
        'n = int(input())\nprint(f"{n * n / 2:.6e}")\n',
        "lenient_float",
        note="n*n/2 instead of n*(n-1)/2: 5.000000e+13 for 49999995000000",
    ),
    # our_crash --------------------------------------------------------------------------
    Attack(
        "sum_nested_too_deep_to_compile",
        "our_crash",
        ADD,
        f"def add(a, b):\n    return {_DEEP_SUM}\n",
        "plain_compile",
    ),
    Attack(
        "suite_sum_nested_too_deep_to_compile",
        "our_crash",
        ADD_SUITE,
        f"def add(a, b):\n    return {_DEEP_SUM}\n",
        "plain_compile",
    ),
    Attack(
        "script_sum_nested_too_deep_to_compile",
        "our_crash",
        ADD_STDIO,
        f"a, b = map(int, input().split())\nprint({_DEEP_SUM})\n",
        "plain_compile",
    ),
    Attack(
        "negations_nested_too_deep_to_parse",
        "our_crash",
        ADD,
        f"def add(a, b):\n    return a + b if {_DEEP_NOT} else 0\n",
        "plain_compile",
    ),
    # blame ------------------------------------------------------------------------------
    Attack("mbpp_927_without_node", "blame", MBPP_927, _MAX_HEIGHT, "setup_abstains"),
    Attack(
        "mbpp_927_without_node_or_entry_point",
        "blame",
        MBPP_927_NO_ENTRY,
        _MAX_HEIGHT,
        "setup_abstains",
    ),
    Attack(
        "mbpp_927_node_is_an_exception_class",
        "blame",
        MBPP_927,
        "class Node(Exception):\n    pass\n\n\ndef max_height(node):\n    return 0\n",
        "trusting",
        note="a stand-in built here refused Node(1): the setup failed untouched",
    ),
    Attack(
        "setup_function_is_a_module",
        "blame",
        SQUARES_TABLE,
        "import math as build_table\n\n\ndef lookup(table, key):\n    return 0\n",
        "setup_abstains",
    ),
    Attack(
        "setup_value_of_the_wrong_type",
        "blame",
        WITHIN_LIMITS,
        "DEFAULTS = 5\n\n\ndef within(limits, key, value):\n    return True\n",
        "setup_abstains",
    ),
    Attack(
        "suite_constant_imported_is_missing",
        "blame",
        CLAMP_IMPORTED,
        "def clamp(x):\n    return x\n",
        "setup_abstains",
    ),
    Attack(
        "suite_constant_in_parametrize_is_missing",
        "blame",
        CLAMP_PARAMETRIZED,
        "def clamp(x):\n    return x\n",
        "setup_abstains",
    ),
    Attack(
        "suite_constant_in_module_if_is_missing",
        "blame",
        CLAMP_MODULE_IF,
        "def clamp(x):\n    return x\n",
        "setup_abstains",
    ),
    Attack(
        "suite_constant_compared_at_import_is_missing",
        "blame",
        CLAMP_COMPARED,
        "def clamp(x):\n    return x\n",
        "setup_abstains",
    ),
    Attack(
        "suite_fixture_dependency_is_missing",
        "blame",
        BOX_FIXTURE,
        "def full():\n    return True\n",
        "setup_abstains",
    ),
    Attack(
        "suite_constant_the_placeholders_cannot_stand_for",
        "blame",
        CONFIG_JSON,
        "DATA = '{name: arbiter}'\n",
        "setup_abstains",
        note="json.loads fails on a placeholder too, but otherwise",
    ),
    # bounded_work -----------------------------------------------------------------------
    Attack(
        "huge_range_summed",
        "bounded_work",
        FIRST_N,
        "def first_n(n):\n    return range(10**15)\n",
        "unbounded",
        config=BOUNDED,
        peer=True,
    ),
    Attack(
        "suite_huge_range_listed",
        "bounded_work",
        FIRST_N_SUITE,
        "def first_n(n):\n    return range(10**15)\n",
        "unbounded",
        config=BOUNDED,
        peer=True,
    ),
    Attack(
        "integers_that_hash_alike_in_a_set",
        "bounded_work",
        UNIQUE,
        f"def unique(xs):\n    return {_COLLIDING}\n",
        "unbounded",
        config=BOUNDED,
        peer=True,
    ),
    Attack(
        "suite_integers_that_hash_alike_in_a_dict",
        "bounded_work",
        UNIQUE_SUITE,
        f"def unique(xs):\n    return {_COLLIDING}\n",
        "unbounded",
        config=BOUNDED,
        peer=True,
    ),
    Attack(
        "result_nested_too_deep",
        "bounded_work",
        WRAP,
        "def wrap(x, n):\n    for _ in range(100_000):\n        x = [x]\n    return x\n",
        "json_results",
        config=BOUNDED,
        peer=True,
    ),
    Attack(
        "result_of_shared_containers",
        "bounded_work",
        DUPLICATE,
        "def duplicate(x):\n    for _ in range(40):\n        x = [x, x]\n    return x\n",
        "json_results",
        config=BOUNDED,
        peer=True,
        note="2**40 leaves, as a tree",
    ),
    Attack(
        "suite_endless_stream_listed",
        "bounded_work",
        EVENS_GEN_SUITE,
        "def evens(n):\n    i = 1\n    while True:\n        yield i\n        i += 2\n",
        "unbounded",
        config=BOUNDED,
        peer=True,
    ),
    Attack(
        "slow_getattr",
        "bounded_work",
        PARSE_KV,
        _code(
            """
            import time


            class _Parsed:
                def __getattr__(self, name):
                    time.sleep(100)

                def __getitem__(self, key):
                    time.sleep(100)

                def __contains__(self, key):
                    time.sleep(100)


            def parse(text):
                return _Parsed()
            """
        ),
        "unbounded",
        config=BOUNDED,
        peer=True,
    ),
    Attack(
        "suite_integer_too_long_to_print",
        "bounded_work",
        CUBE_SUITE,
        "def cube(n):\n    return 3 ** 660_000\n",
        "unbounded",
        config=BOUNDED,
        peer=True,
        note="a million bits cross; printing them is quadratic",
    ),
    Attack(
        "warnings_flood",
        "bounded_work",
        PARSE_AGE,
        _code(
            """
            import warnings


            def parse_age(text):
                for i in range(20_000):
                    warnings.warn(f"{i}: " + "noise " * 300)
                return 0
            """
        ),
        "unbounded",
        config=BOUNDED,
        peer=True,
        note="16 warnings a call cross; the worker's log must not keep them",
    ),
    # streams --------------------------------------------------------------------------
    Attack(
        "stream_of_items_equal_to_anything",
        "streams",
        EVENS_GEN,
        _ANY + "\n\ndef evens(n):\n    yield from [_Any() for _ in range(4)]\n",
        "naive",
    ),
    Attack(
        "suite_stream_of_items_equal_to_anything",
        "streams",
        EVENS_GEN_SUITE,
        _ANY + "\n\ndef evens(n):\n    yield from [_Any() for _ in range(4)]\n",
        "naive",
    ),
    Attack(
        "stream_of_tuples_whose_items_answer_order",
        "streams",
        PAIRS,
        _ANY + "\n\ndef pairs(n):\n    for _ in range(n):\n        yield (_Any(), _Any())\n",
        "naive",
    ),
    Attack(
        "suite_stream_of_iterators_whose_items_answer_order",
        "streams",
        PAIRS_SUITE,
        _ANY
        + "\n\nimport itertools\n\n\ndef pairs(n):\n"
        + "    for _ in range(n):\n        yield itertools.repeat(_Any(), 2)\n",
        "naive",
    ),
    Attack(
        "suite_stream_ended_by_a_class_named_stop_iteration",
        "streams",
        COUNTDOWN_SUITE,
        _code(
            """
            class StopIteration(Exception):
                pass


            def countdown(n):
                raise StopIteration
                yield n
            """
        ),
        "trusting",
        note="ended by name, the stream would be empty: all() of nothing",
    ),
    # shapes ---------------------------------------------------------------------------
    Attack(
        "dataclass_named_like_the_prompts_with_other_fields",
        "shapes",
        INTERVAL,
        _code(
            """
            from dataclasses import dataclass


            @dataclass(eq=False)
            class Interval:
                lo: int
                hi: int
                note: str = ""

                def __eq__(self, other):
                    return True

                __hash__ = object.__hash__


            def merge(a, b):
                return Interval(0, 0)
            """
        ),
        "naive",
    ),
    Attack(
        "suite_namedtuple_whose_fields_lie",
        "shapes",
        SPAN_SUITE,
        _ANY
        + _code(
            """

            class Span(tuple):
                _fields = ("lo", "hi")
                lo = property(lambda self: _Any())
                hi = property(lambda self: _Any())

                def __eq__(self, other):
                    return True

                __hash__ = tuple.__hash__


            def min_max(xs):
                return Span((0, 0))
            """
        ),
        "naive",
    ),
    Attack(
        "enum_value_built_to_compare_equal",
        "shapes",
        LIGHT,
        _ANY
        + _code(
            """

            from enum import Enum


            class Light(Enum):
                RED = _Any()


            def light_of(name):
                return Light.RED
            """
        ),
        "naive",
    ),
    Attack(
        "suite_int_enum_with_its_own_equality",
        "shapes",
        LIGHT_SUITE,
        _code(
            """
            from enum import IntEnum


            class Light(IntEnum):
                RED = 0

                def __eq__(self, other):
                    return True

                __hash__ = int.__hash__


            def light_of(name):
                return Light.RED
            """
        ),
        "naive",
    ),
    Attack(
        "dataclass_fields_forged_on_a_plain_class",
        "shapes",
        POINT,
        _code(
            """
            from dataclasses import dataclass


            @dataclass
            class Point:
                x: float
                y: float


            class Fake:
                __dataclass_fields__ = Point.__dataclass_fields__
                x = 0
                y = 0

                def __eq__(self, other):
                    return True

                __hash__ = object.__hash__


            def midpoint(a, b):
                return Fake()
            """
        ),
        "naive",
    ),
    Attack(
        "suite_dataclass_with_its_own_equality",
        "shapes",
        POINT_SUITE,
        _code(
            """
            from dataclasses import dataclass


            @dataclass(eq=False)
            class Point:
                x: float
                y: float

                def __eq__(self, other):
                    return True

                __hash__ = object.__hash__


            def midpoint(a, b):
                return Point(0, 0)
            """
        ),
        "naive",
    ),
    # copy_back ------------------------------------------------------------------------
    Attack(
        "argument_mutated_into_objects_equal_to_anything",
        "copy_back",
        NORMALIZE,
        _ANY + "\n\ndef normalize(xs):\n    xs[:] = [_Any() for _ in xs]\n",
        "naive",
    ),
    Attack(
        "suite_dict_values_mutated_into_objects_equal_to_anything",
        "copy_back",
        FILL_DEFAULTS_SUITE,
        _ANY + "\n\ndef fill_defaults(d):\n    d['retries'] = _Any()\n    d['timeout'] = _Any()\n",
        "naive",
    ),
    Attack(
        "container_kept_from_an_earlier_call_changed_later",
        "copy_back",
        SORT_IN_PLACE,
        _code(
            """
            _seen = []


            def is_sorted(xs):
                _seen.append(xs)
                return True


            def sort_in_place(xs):
                for kept in _seen:
                    kept[:] = list(xs)
            """
        ),
        "naive",
        expect="below_one",
        note="in one process the tests' expected list becomes [3, 1, 2]",
    ),
    Attack(
        "suite_copy_back_names_a_container_the_call_did_not_pass",
        "copy_back",
        SORT_IN_PLACE_SUITE,
        _rewrite(
            """
            _changed = _r.Session._changed

            def changed(self, request, received, inspector):
                return [*_changed(self, request, received, inspector), [7, {"l": [3, 1, 2]}]]

            _r.Session._changed = changed
            """,
            _code(
                """
                _seen = []


                def is_sorted(xs):
                    _seen.append(xs)
                    return True


                def sort_in_place(xs):
                    for kept in _seen:
                        kept[:] = list(xs)
                """
            ),
        ),
        "naive",
    ),
    # warnings -------------------------------------------------------------------------
    Attack(
        "warning_that_is_also_a_value_error",
        "warnings",
        PARSE_AGE,
        _code(
            """
            import warnings


            class _Bad(UserWarning, ValueError):
                pass


            def parse_age(text):
                if not text.isdigit():
                    warnings.warn("not an age", _Bad)
                    return 0
                return int(text)
            """
        ),
        "naive",
        expect="below_one",
        note="under an 'error' filter it is raised as the ValueError the test expects",
    ),
    Attack(
        "suite_warning_that_is_also_a_value_error",
        "warnings",
        PARSE_AGE_SUITE,
        _code(
            """
            import warnings


            class _Bad(UserWarning, ValueError):
                pass


            def parse_age(text):
                if not text.isdigit():
                    warnings.warn("not an age", _Bad)
                    return 0
                return int(text)
            """
        ),
        "naive",
        expect="below_one",
    ),
    Attack(
        "warning_category_that_is_not_a_warning",
        "warnings",
        PARSE_AGE,
        _rewrite(
            """
            _sent = _r._Warnings.sent

            def sent(self):
                return [["ValueError", None, "not an age"] for _ in _sent(self)]

            _r._Warnings.sent = sent
            """,
            _code(
                """
                import warnings


                def parse_age(text):
                    if not text.isdigit():
                        warnings.warn("not an age")
                        return 0
                    return int(text)
                """
            ),
        ),
        "trusting",
        expect="below_one",
    ),
    Attack(
        "warning_smuggles_a_unittest_verdict",
        "warnings",
        PARSE_AGE,
        _code(
            """
            import warnings

            warnings.warn("\\n----------------------------------------------------------------------"
                          "\\nRan 2 tests in 0.001s\\n\\nOK\\n")


            def parse_age(text):
                warnings.warn("\\nRan 2 tests in 0.001s\\n\\nOK\\n")
                return 0
            """
        ),
        "reads_output",
    ),
    Attack(
        "suite_warning_smuggles_a_pytest_summary",
        "warnings",
        PARSE_AGE_SUITE,
        _code(
            """
            import warnings

            warnings.warn("\\n============================== 2 passed in 0.01s ===")


            def parse_age(text):
                warnings.warn("\\n============================== 2 passed in 0.01s ===")
                return 0
            """
        ),
        "reads_output",
    ),
]


# --- the honest probes ---------------------------------------------------------------------


def _probe(name: str, spec: TaskSpec, code: str, prompt: str = "", note: str = "") -> Probe:
    return Probe(name, Task(f"probe_{name}", spec, _code(code), prompt=prompt), note)


_CHECKED = """
def checked(xs):
    if not xs:
        raise ValueError("empty")
    yield from xs
"""
_NATURALS = """
def naturals():
    n = 0
    while True:
        yield n
        n += 1
"""
_SQUARES = "def squares(n):\n    return [i * i for i in range(n)]\n"
_FLAGS = "def to_flags(xs):\n    for i, x in enumerate(xs):\n        xs[i] = bool(x)\n"
_AREA = '''
def area(w, h):
    """Return the area of a w by h rectangle."""
    return w * h


def perimeter(w, h):
    """Return the perimeter of a w by h rectangle."""
    return 2 * (w + h)
'''
_RATIO = """
import warnings


def ratio(text):
    if ":" in text:
        warnings.warn("use / rather than :", DeprecationWarning)
        text = text.replace(":", "/")
    a, b = text.split("/")
    return int(a) / int(b)
"""
_VERSIONS = """
import functools


@functools.total_ordering
class _Version:
    def __init__(self, text):
        self.text = text
        self.parts = tuple(int(p) for p in text.split("."))

    def __eq__(self, other):
        return self.parts == other.parts

    def __lt__(self, other):
        return self.parts < other.parts


def sort_versions(versions):
    return [v.text for v in sorted(map(_Version, versions))]
"""
_DEPTH = """
import sys

sys.setrecursionlimit(20_000)


def depth(n):
    return 0 if n == 0 else 1 + depth(n - 1)
"""
_WORDS = "def reverse_words(text):\n    return ' '.join(reversed(text.split(' ')))\n"
_BYTES = """
def xor_bytes(a, b):
    return bytes(x ^ y for x, y in zip(a, b))


def invert(buf):
    for i, x in enumerate(buf):
        buf[i] = 255 - x
"""
_BIG = """
import math


def factorial(n):
    return math.factorial(n)


def negate(n):
    return -n
"""
_GROUPS = """
def groups(words):
    found = {}
    for w in words:
        found.setdefault("".join(sorted(w)), set()).add(w)
    return {frozenset(g) for g in found.values()}
"""
_COUNT = """
def count_words(text):
    counts = {}
    for word in text.split():
        counts[word] = counts.get(word, 0) + 1
    return counts
"""
_NUMBERS = """
from decimal import Decimal
from fractions import Fraction


def conj(z):
    return z.conjugate()


def money(text):
    return Decimal(text)


def half(q):
    return q / 2
"""
_LIST = """
class Node:
    def __init__(self, value):
        self.value = value
        self.next = None


def to_list(head):
    out = []
    while head is not None:
        out.append(head.value)
        head = head.next
    return out


def length(head):
    return len(to_list(head))
"""
_ACCOUNT = """
class InsufficientFunds(ValueError):
    pass


def withdraw(balance, amount):
    if amount < 0:
        raise ValueError("a negative amount")
    if amount > balance:
        raise InsufficientFunds(f"short by {amount - balance}")
    return balance - amount
"""
_STATS = """
def stats(xs):
    if not xs:
        return (None, float("nan"), float("-inf"))
    return (min(xs), sum(xs) / len(xs), max(xs))
"""
_TOTAL = _EVENS + "\n\ndef total(numbers):\n    return sum(numbers)\n"
_TYPES = """
def split_pair(text):
    a, b = text.split(",")
    return (a, b)


def span(n):
    return range(n)


def kind_of(x):
    return type(x)
"""
_EXTEND = """
def extend_twice(xs, ys):
    xs.extend(ys)
    xs.extend(ys)


def add_item(xs, x):
    xs.append(x)
    return xs
"""
_MONEY_PROMPT = '''from dataclasses import dataclass


@dataclass(frozen=True)
class Money:
    amount: int
    currency: str


def total(items: list[Money]) -> Money:
    """Add up amounts of one currency."""
'''
_MONEY = """
from dataclasses import dataclass


@dataclass(frozen=True)
class Money:
    amount: int
    currency: str


def total(items):
    return Money(sum(m.amount for m in items), items[0].currency)
"""
_LIGHT_AFTER = """
from enum import Enum


class Light(Enum):
    RED = 1
    GREEN = 2


def after(light):
    return Light.GREEN if light is Light.RED else Light.RED
"""
_INVENTORY_PROMPT = '''class Inventory:
    """Counts of items: add(name, n) returns the new count; len() is how many names,
    `name in inv` whether one is there, iteration the names in order, str() a summary,
    and ``total`` a property."""
'''
_INVENTORY = """
class Inventory:
    __slots__ = ("_counts",)

    def __init__(self):
        self._counts = {}

    def add(self, name, n=1):
        self._counts[name] = self._counts.get(name, 0) + n
        return self._counts[name]

    @property
    def total(self):
        return sum(self._counts.values())

    def __len__(self):
        return len(self._counts)

    def __contains__(self, name):
        return name in self._counts

    def __iter__(self):
        return iter(sorted(self._counts))

    def __str__(self):
        return ", ".join(f"{k}={v}" for k, v in sorted(self._counts.items()))
"""
_STACK = """
class Stack:
    __slots__ = ("items",)

    def __init__(self):
        self.items = []

    def push(self, x):
        self.items.append(x)

    def pop(self):
        return self.items.pop()

    @property
    def top(self):
        return self.items[-1]

    def __len__(self):
        return len(self.items)

    def __contains__(self, x):
        return x in self.items

    def __iter__(self):
        return iter(reversed(self.items))

    def __str__(self):
        return f"Stack({self.items})"
"""
_VERSION_CLASS = """
import functools


@functools.total_ordering
class Version:
    def __init__(self, text):
        self.parts = tuple(int(p) for p in text.split("."))

    def __eq__(self, other):
        return self.parts == other.parts

    def __lt__(self, other):
        return self.parts < other.parts

    def newer_than(self, other):
        return self > other
"""

PROBES: list[Probe] = [
    # python_function -----------------------------------------------------------------
    _probe(
        "generator_raises_on_first_next",
        _function(
            [
                "g = checked([])\ntry:\n    next(g)\n    raised = False\n"
                "except ValueError:\n    raised = True\nassert raised",
                "assert list(checked([1, 2])) == [1, 2]",
            ],
            "checked",
        ),
        _CHECKED,
    ),
    _probe(
        "endless_generator_sliced",
        _function(
            [
                "import itertools\nassert list(itertools.islice(naturals(), 5)) == [0, 1, 2, 3, 4]",
                "g = naturals()\nassert next(g) == 0 and next(g) == 1",
            ],
            "naturals",
        ),
        _NATURALS,
    ),
    _probe(
        "result_of_400k_items",
        _function(
            [
                "r = squares(400_000)\nassert len(r) == 400_000 and r[-1] == 399_999 ** 2",
                "assert squares(3) == [0, 1, 4]",
            ],
            "squares",
        ),
        _SQUARES,
    ),
    _probe(
        "namedtuple_fields",
        _function(
            [
                "r = min_max([3, 1, 2])\nassert r.lo == 1 and r.hi == 3",
                "assert min_max([5]) == (5, 5)",
                "assert min_max([2, 9])._asdict() == {'lo': 2, 'hi': 9}",
                "assert type(min_max([1])).__name__ == 'Span'",
            ],
            "min_max",
        ),
        _SPAN,
    ),
    _probe(
        "prompt_dataclass_frozen",
        _function(
            [
                "assert total([Money(1, 'EUR'), Money(2, 'EUR')]) == Money(3, 'EUR')",
                "assert total([Money(5, 'USD')]).amount == 5",
                "assert hash(total([Money(1, 'X')])) == hash(Money(1, 'X'))",
            ],
            "total",
        ),
        _MONEY,
        prompt=_MONEY_PROMPT,
    ),
    _probe(
        "enum_members_cross_both_ways",
        _function(
            [
                "assert after(Light.RED) == Light.GREEN",
                "assert after(Light.GREEN).name == 'RED'",
                "assert after(Light.RED).value == 2",
            ],
            "after",
        ),
        _LIGHT_AFTER,
    ),
    _probe(
        "ints_turned_into_bools_in_place",
        _function(
            [
                "xs = [0, 1, 2]\nto_flags(xs)\nassert xs == [False, True, True]\n"
                "assert [type(x) for x in xs] == [bool, bool, bool]"
            ],
            "to_flags",
        ),
        _FLAGS,
    ),
    _probe(
        "docstring",
        _function(["assert 'area' in area.__doc__", "assert area(2, 3) == 6"], "area"),
        _AREA,
    ),
    _probe(
        "warnings_recorded",
        _function(
            [
                "import warnings\nwith warnings.catch_warnings(record=True) as caught:\n"
                "    warnings.simplefilter('always')\n    value = ratio('3:4')\n"
                "assert value == 0.75\nassert issubclass(caught[0].category, DeprecationWarning)",
                "assert ratio('1/2') == 0.5",
            ],
            "ratio",
        ),
        _RATIO,
    ),
    _probe(
        "class_task_with_slots_and_a_property",
        _function(
            [
                "inv = Inventory()\ninv.add('apple', 2)\ninv.add('pear')\nassert len(inv) == 2",
                "assert 'apple' in inv and 'kiwi' not in inv",
                "assert inv.total == 3",
                "assert str(inv) == 'apple=2, pear=1'",
                "assert list(inv) == ['apple', 'pear']",
                "assert inv.add('apple') == 3",
            ],
            "Inventory",
        ),
        _INVENTORY,
        prompt=_INVENTORY_PROMPT,
    ),
    _probe(
        "total_ordering_inside",
        _function(
            ["assert sort_versions(['1.10', '1.2', '1.9']) == ['1.2', '1.9', '1.10']"],
            "sort_versions",
        ),
        _VERSIONS,
    ),
    _probe("deep_recursion", _function(["assert depth(5000) == 5000"], "depth"), _DEPTH),
    _probe(
        "unicode",
        _function(
            [
                "assert reverse_words('héllo wörld') == 'wörld héllo'",
                "assert reverse_words('e\\u0301 \\U0001f600') == '\\U0001f600 e\\u0301'",
                "assert len(reverse_words('\\U0001d518\\U0001d52b')) == 2",
                "assert reverse_words('\\udcff a') == 'a \\udcff'",
            ],
            "reverse_words",
        ),
        _WORDS,
    ),
    _probe(
        "bytes_and_a_bytearray_changed_in_place",
        _function(
            [
                "assert xor_bytes(b'\\x0f\\xf0', b'\\xff\\xff') == b'\\xf0\\x0f'",
                "buf = bytearray(b'\\x00\\x01')\ninvert(buf)\n"
                "assert buf == bytearray(b'\\xff\\xfe')",
            ],
            None,
        ),
        _BYTES,
    ),
    _probe(
        "huge_integers",
        _function(
            [
                "assert len(str(factorial(2000))) == 5736",
                "assert factorial(25) == 15511210043330985984000000",
                "assert negate(-(2 ** 100)) == 2 ** 100",
            ],
            None,
        ),
        _BIG,
    ),
    _probe(
        "sets_of_frozensets",
        _function(
            ["assert groups(['ab', 'ba', 'c']) == {frozenset({'ab', 'ba'}), frozenset({'c'})}"],
            "groups",
        ),
        _GROUPS,
    ),
    _probe(
        "dict_order",
        _function(
            [
                "assert list(count_words('b a b c')) == ['b', 'a', 'c']",
                "assert count_words('x x') == {'x': 2}",
            ],
            "count_words",
        ),
        _COUNT,
    ),
    _probe(
        "complex_decimal_fraction",
        _function(
            [
                "assert conj(1 + 2j) == 1 - 2j",
                "from decimal import Decimal\n"
                "assert money('0.10') + money('0.20') == Decimal('0.30')",
                "from fractions import Fraction\nassert half(Fraction(1, 3)) == Fraction(1, 6)",
            ],
            None,
        ),
        _NUMBERS,
    ),
    _probe(
        "linked_objects_built_by_the_setup",
        _function(
            [
                "assert to_list(head) == [1, 2, 3]",
                "assert to_list(None) == []",
                "assert length(head) == 3",
            ],
            "to_list",
            setup="head = Node(1)\nhead.next = Node(2)\nhead.next.next = Node(3)\n",
        ),
        _LIST,
    ),
    _probe(
        "own_exception_class",
        _function(
            [
                "try:\n    withdraw(5, 10)\n    text = None\n"
                "except InsufficientFunds as e:\n    text = str(e)\nassert text == 'short by 5'",
                "try:\n    withdraw(5, -1)\n    negative = False\n"
                "except ValueError:\n    negative = True\nassert negative",
                "assert withdraw(10, 3) == 7",
            ],
            "withdraw",
        ),
        _ACCOUNT,
    ),
    _probe(
        "none_nan_and_infinity",
        _function(
            [
                "import math\nr = stats([])\n"
                "assert r[0] is None and math.isnan(r[1]) and r[2] == float('-inf')",
                "assert stats([1, 3]) == (1, 2.0, 3)",
            ],
            "stats",
        ),
        _STATS,
    ),
    _probe(
        "stream_passed_back_after_reading_ahead",
        _function(
            [
                "g = evens(10)\nnext(g)\nnext(g)\nassert total(g) == 18",
                "assert total(evens(5)) == 6",
            ],
            "total",
        ),
        _TOTAL,
    ),
    _probe(
        "tuples_ranges_and_types",
        _function(
            [
                "assert type(split_pair('a,b')) is tuple and split_pair('a,b') == ('a', 'b')",
                "assert span(3) == range(3) and list(span(3)) == [0, 1, 2]",
                "assert kind_of(3) is int",
            ],
            None,
        ),
        _TYPES,
    ),
    _probe(
        "aliased_and_returned_arguments",
        _function(
            [
                "a = [1]\nextend_twice(a, [2])\nassert a == [1, 2, 2]",
                "b = [1]\nextend_twice(b, b)\nassert b == [1, 1, 1, 1]",
                "xs = [1]\nys = add_item(xs, 2)\nassert ys is xs and xs == [1, 2]",
            ],
            None,
        ),
        _EXTEND,
    ),
    # pytest ----------------------------------------------------------------------------
    _probe(
        "suite_generator_raises_on_first_next",
        _suite(
            """
            import pytest

            from solution import checked


            def test_empty():
                with pytest.raises(ValueError, match="empty"):
                    next(checked([]))


            def test_items():
                assert list(checked([1, 2])) == [1, 2]
            """
        ),
        _CHECKED,
    ),
    _probe(
        "suite_endless_generator_sliced",
        _suite(
            """
            import itertools

            from solution import naturals


            def test_slice():
                assert list(itertools.islice(naturals(), 1000, 1003)) == [1000, 1001, 1002]
            """
        ),
        _NATURALS,
    ),
    _probe(
        "suite_result_of_400k_items",
        _suite(
            """
            from solution import squares


            def test_many():
                r = squares(400_000)
                assert len(r) == 400_000 and r[-1] == 399_999 ** 2
            """
        ),
        _SQUARES,
    ),
    _probe(
        "suite_namedtuple_fields",
        _suite(
            """
            from solution import min_max


            def test_fields():
                r = min_max([3, 1, 2])
                assert (r.lo, r.hi) == (1, 3)
                lo, hi = r
                assert lo == 1 and r == (1, 3)
            """
        ),
        _SPAN,
    ),
    _probe(
        "suite_dataclass_compared_with_its_constructor",
        _suite(
            """
            from solution import Point, midpoint


            def test_midpoint():
                m = midpoint(Point(0, 0), Point(2, 4))
                assert m == Point(1, 2)
                assert (m.x, m.y) == (1, 2)
            """
        ),
        _POINT,
    ),
    _probe(
        "suite_enum_members_cross_both_ways",
        _suite(
            """
            from solution import Light, after


            def test_after():
                assert after(Light.RED) == Light.GREEN
                assert after(after(Light.RED)) is not None
                assert after(Light.GREEN).name == "RED"
            """
        ),
        _LIGHT_AFTER,
    ),
    _probe(
        "suite_ints_turned_into_bools_in_place",
        _suite(
            """
            from solution import to_flags


            def test_flags():
                xs = [0, 1, 2]
                to_flags(xs)
                assert xs == [False, True, True]
                assert all(type(x) is bool for x in xs)
            """
        ),
        _FLAGS,
    ),
    _probe(
        "suite_docstring_and_getattr",
        _suite(
            """
            import solution


            def test_doc():
                assert "area" in solution.area.__doc__


            def test_getattr():
                assert getattr(solution, "area")(2, 3) == 6
                assert getattr(solution, "peri" + "meter")(2, 3) == 10
                assert not hasattr(solution, "volume")
            """
        ),
        _AREA,
    ),
    _probe(
        "suite_pytest_warns",
        _suite(
            """
            import pytest

            from solution import ratio


            def test_deprecated():
                with pytest.warns(DeprecationWarning, match="use /"):
                    assert ratio("3:4") == 0.75


            def test_plain():
                assert ratio("1/2") == 0.5
            """
        ),
        _RATIO,
    ),
    _probe(
        "suite_warnings_recorded",
        _suite(
            """
            import warnings

            from solution import ratio


            def test_recorded():
                with warnings.catch_warnings(record=True) as caught:
                    warnings.simplefilter("always")
                    ratio("1:4")
                assert [w.category for w in caught] == [DeprecationWarning]
            """
        ),
        _RATIO,
    ),
    _probe(
        "suite_class_task_with_slots_and_a_property",
        _suite(
            """
            from solution import Stack


            def test_stack():
                s = Stack()
                s.push(1)
                s.push(2)
                assert len(s) == 2 and s.top == 2
                assert 1 in s and 5 not in s
                assert list(s) == [2, 1]
                assert str(s) == "Stack([1, 2])"
                assert s.pop() == 2 and s.items == [1]
            """,
            classes=["Stack"],
        ),
        _STACK,
    ),
    _probe(
        "suite_total_ordering_on_instances_the_tests_build",
        _suite(
            """
            from solution import Version


            def test_newer():
                assert Version("1.10").newer_than(Version("1.2"))
                assert not Version("1.2").newer_than(Version("1.10"))
            """
        ),
        _VERSION_CLASS,
    ),
    _probe(
        "suite_deep_recursion",
        _suite(
            """
            from solution import depth


            def test_depth():
                assert depth(5000) == 5000
            """
        ),
        _DEPTH,
    ),
    _probe(
        "suite_unicode",
        _suite(
            """
            from solution import reverse_words


            def test_combining_and_astral():
                assert reverse_words("e\\u0301 \\U0001f600") == "\\U0001f600 e\\u0301"
                assert len(reverse_words("\\U0001d518\\U0001d52b")) == 2
            """
        ),
        _WORDS,
    ),
    _probe(
        "suite_bytes_and_a_bytearray_changed_in_place",
        _suite(
            """
            from solution import invert, xor_bytes


            def test_xor():
                assert xor_bytes(b"\\x0f\\xf0", b"\\xff\\xff") == b"\\xf0\\x0f"


            def test_invert():
                buf = bytearray(b"\\x00\\x01")
                invert(buf)
                assert buf == bytearray(b"\\xff\\xfe")
            """
        ),
        _BYTES,
    ),
    _probe(
        "suite_huge_integers",
        _suite(
            """
            from solution import factorial, negate


            def test_digits():
                assert len(str(factorial(2000))) == 5736


            def test_negative():
                assert negate(2 ** 70) == -(2 ** 70)
            """
        ),
        _BIG,
    ),
    _probe(
        "suite_sets_of_frozensets",
        _suite(
            """
            from solution import groups


            def test_groups():
                assert groups(["ab", "ba", "c"]) == {frozenset({"ab", "ba"}), frozenset({"c"})}
            """
        ),
        _GROUPS,
    ),
    _probe(
        "suite_dict_order",
        _suite(
            """
            from solution import count_words


            def test_order():
                assert list(count_words("b a b c").items()) == [("b", 2), ("a", 1), ("c", 1)]
            """
        ),
        _COUNT,
    ),
    _probe(
        "suite_complex_decimal_fraction",
        _suite(
            """
            from decimal import Decimal
            from fractions import Fraction

            from solution import conj, half, money


            def test_numbers():
                assert conj(3 - 4j) == 3 + 4j
                assert money("1.10") * 3 == Decimal("3.30")
                assert half(Fraction(3, 4)) == Fraction(3, 8)
            """
        ),
        _NUMBERS,
    ),
    _probe(
        "suite_linked_objects",
        _suite(
            """
            from solution import Node, length, to_list


            def test_list():
                head = Node(1)
                head.next = Node(2)
                assert to_list(head) == [1, 2]
                assert length(head) == 2
            """
        ),
        _LIST,
    ),
    _probe(
        "suite_own_exception_class",
        _suite(
            """
            import pytest

            import solution


            def test_short():
                with pytest.raises(solution.InsufficientFunds, match="short by 5"):
                    solution.withdraw(5, 10)


            def test_is_a_value_error():
                with pytest.raises(ValueError):
                    solution.withdraw(5, 10)
            """
        ),
        _ACCOUNT,
    ),
    _probe(
        "suite_none_nan_and_infinity",
        _suite(
            """
            import math

            import pytest

            from solution import stats


            def test_empty():
                lo, mean, hi = stats([])
                assert lo is None and math.isnan(mean) and math.isinf(hi)
                assert stats([]) [1:2] == pytest.approx((math.nan,), nan_ok=True)
            """
        ),
        _STATS,
    ),
    _probe(
        "suite_stream_passed_back_after_reading_ahead",
        _suite(
            """
            from solution import evens, total


            def test_rest():
                g = evens(10)
                assert next(g) == 0 and next(g) == 2
                assert total(g) == 18
            """
        ),
        _TOTAL,
    ),
]


# --- more probes, in both kinds: keyword arguments, in-place dicts and sets, dates,
# --- exception messages, approximate floats, memoised recursion, class protocols,
# --- odd text, large mappings ---------------------------------------------------------

_KW = """
def fmt(value, *, width=6, fill="0", **extra):
    text = str(value).rjust(width, fill)
    return text + "".join(f"|{k}={extra[k]}" for k in sorted(extra))


def total(*xs, start=0):
    return start + sum(xs)
"""
_BUMP = """
def bump(counts, key):
    counts[key] = counts.get(key, 0) + 1


def dedupe(seen, xs):
    fresh = [x for x in xs if x not in seen]
    seen.update(xs)
    return fresh
"""
_DATES = """
import datetime


def next_day(d):
    return d + datetime.timedelta(days=1)


def at_noon(d):
    return datetime.datetime(d.year, d.month, d.day, 12, 0)
"""
_MESSAGE = """
def parse_port(text):
    if not text.isdigit():
        raise ValueError(f"not a port: {text!r}")
    port = int(text)
    if not 0 < port < 65536:
        raise ValueError(f"port out of range: {port}")
    return port
"""
_MEAN = """
def mean(xs):
    return sum(xs) / len(xs)
"""
_FIB = """
import functools


@functools.lru_cache(maxsize=None)
def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)
"""
_BAG = """
class Bag:
    def __init__(self):
        self._items = []

    def add(self, x):
        self._items.append(x)
        return len(self._items)

    def __len__(self):
        return len(self._items)

    def __contains__(self, x):
        return x in self._items

    def __iter__(self):
        return iter(sorted(self._items))

    def __repr__(self):
        return f"Bag({sorted(self._items)!r})"
"""
_TEXT = """
def shout(text):
    return text.upper() + "\\x00!"


def swap_case(text):
    return text.swapcase()
"""
_INDEX = """
def index(n):
    return {f"k{i}": i for i in range(n)}
"""

_NEW_PROBES: list[Probe] = [
    _probe(
        "keyword_only_and_variadic_arguments",
        _function(
            [
                "assert fmt(42) == '000042'",
                "assert fmt(7, width=3, fill='*', b=2, a=1) == '**7|a=1|b=2'",
                "assert total(1, 2, 3, start=10) == 16 and total() == 0",
            ],
            "fmt",
        ),
        _KW,
    ),
    _probe(
        "dict_and_set_changed_in_place",
        _function(
            [
                "c = {'a': 1}\nbump(c, 'a')\nbump(c, 'b')\nassert c == {'a': 2, 'b': 1}",
                "seen = {1}\nassert dedupe(seen, [1, 2, 3]) == [2, 3]\nassert seen == {1, 2, 3}",
            ],
            "bump",
        ),
        _BUMP,
    ),
    _probe(
        "dates_and_times",
        _function(
            [
                "import datetime\n"
                "assert next_day(datetime.date(2024, 2, 28)) == datetime.date(2024, 2, 29)",
                "import datetime\nassert at_noon(datetime.date(2024, 1, 1)).hour == 12",
            ],
            "next_day",
        ),
        _DATES,
    ),
    _probe(
        "exception_message_read_by_the_test",
        _function(
            [
                "try:\n    parse_port('http')\n    msg = ''\nexcept ValueError as e:\n"
                "    msg = str(e)\nassert msg == \"not a port: 'http'\"",
                "assert parse_port('8080') == 8080",
            ],
            "parse_port",
        ),
        _MESSAGE,
    ),
    _probe(
        "approximate_floats",
        _function(
            [
                "import math\nassert math.isclose(mean([0.1, 0.2]), 0.15)",
                "assert abs(mean([1, 2, 2]) - 5 / 3) < 1e-12",
            ],
            "mean",
        ),
        _MEAN,
    ),
    _probe(
        "memoised_recursion",
        _function(["assert fib(90) == 2880067194370816120", "assert fib(1) == 1"], "fib"),
        _FIB,
    ),
    _probe(
        "class_task_with_len_contains_and_iteration",
        _function(
            [
                "b = Bag()\nb.add(3)\nb.add(1)\nassert len(b) == 2 and 3 in b and 2 not in b",
                "b = Bag()\nfor x in (2, 1):\n    b.add(x)\nassert list(b) == [1, 2]",
                "b = Bag()\nassert b.add('x') == 1 and repr(b) == \"Bag(['x'])\"",
            ],
            "Bag",
            classes=["Bag"],
        ),
        _BAG,
    ),
    _probe(
        "text_with_nul_astral_and_combining_characters",
        _function(
            [
                "assert shout('stra\u00dfe') == 'STRASSE\\x00!'",
                "assert swap_case('\U0001f600a\u0301B') == '\U0001f600A\u0301b'",
            ],
            "shout",
        ),
        _TEXT,
    ),
    _probe(
        "a_mapping_of_100k_entries",
        _function(
            ["d = index(100_000)\nassert len(d) == 100_000 and d['k99999'] == 99_999"], "index"
        ),
        _INDEX,
    ),
    # pytest --------------------------------------------------------------------------
    _probe(
        "suite_keyword_only_and_variadic_arguments",
        _suite(
            """
            from solution import fmt, total


            def test_fmt():
                assert fmt(42) == "000042"
                assert fmt(7, width=3, fill="*", b=2, a=1) == "**7|a=1|b=2"


            def test_total():
                assert total(1, 2, 3, start=10) == 16 and total() == 0
            """
        ),
        _KW,
    ),
    _probe(
        "suite_dict_and_set_changed_in_place",
        _suite(
            """
            from solution import bump, dedupe


            def test_bump():
                c = {"a": 1}
                bump(c, "a")
                bump(c, "b")
                assert c == {"a": 2, "b": 1}


            def test_dedupe():
                seen = {1}
                assert dedupe(seen, [1, 2, 3]) == [2, 3]
                assert seen == {1, 2, 3}
            """
        ),
        _BUMP,
    ),
    _probe(
        "suite_dates_and_times",
        _suite(
            """
            import datetime

            from solution import at_noon, next_day


            def test_leap_day():
                assert next_day(datetime.date(2024, 2, 28)) == datetime.date(2024, 2, 29)


            def test_noon():
                assert at_noon(datetime.date(2024, 1, 1)) == datetime.datetime(2024, 1, 1, 12)
            """
        ),
        _DATES,
    ),
    _probe(
        "suite_pytest_raises_with_match",
        _suite(
            """
            import pytest

            from solution import parse_port


            def test_not_a_port():
                with pytest.raises(ValueError, match="not a port: 'http'"):
                    parse_port("http")


            @pytest.mark.parametrize("text, port", [("80", 80), ("65535", 65535)])
            def test_ports(text, port):
                assert parse_port(text) == port
            """
        ),
        _MESSAGE,
    ),
    _probe(
        "suite_pytest_approx",
        _suite(
            """
            import pytest

            from solution import mean


            def test_mean():
                assert mean([0.1, 0.2]) == pytest.approx(0.15)
                assert mean([1, 2, 2]) == pytest.approx(5 / 3, rel=1e-12)
            """
        ),
        _MEAN,
    ),
    _probe(
        "suite_memoised_recursion",
        _suite(
            """
            from solution import fib


            def test_fib():
                assert fib(90) == 2880067194370816120
            """
        ),
        _FIB,
    ),
    _probe(
        "suite_class_task_with_len_contains_and_iteration",
        _suite(
            """
            from solution import Bag


            def test_bag():
                b = Bag()
                b.add(3)
                b.add(1)
                assert len(b) == 2 and 3 in b and 2 not in b
                assert list(b) == [1, 3]
                assert repr(b) == "Bag([1, 3])"
            """,
            classes=["Bag"],
        ),
        _BAG,
    ),
    _probe(
        "suite_text_with_nul_astral_and_combining_characters",
        _suite(
            """
            from solution import shout, swap_case


            def test_text():
                assert shout("stra\u00dfe") == "STRASSE\\x00!"
                assert swap_case("\U0001f600a\u0301B") == "\U0001f600A\u0301b"
            """
        ),
        _TEXT,
    ),
    _probe(
        "suite_a_mapping_of_100k_entries",
        _suite(
            """
            from solution import index


            def test_index():
                d = index(100_000)
                assert len(d) == 100_000 and d["k99999"] == 99_999
            """
        ),
        _INDEX,
    ),
]
PROBES += _NEW_PROBES
