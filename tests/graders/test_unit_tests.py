"""The unit-test grader: scoring, comparison, the codec, the cross-check, typed failures."""

from __future__ import annotations

import asyncio
import json
import math
import os
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from arbiter.graders import unit_tests
from arbiter.graders.sandbox import (
    LAYERS,
    CheckPlanError,
    MissingLayersError,
    PoolConfig,
    SandboxError,
    SandboxPool,
    check_layers,
    plan_function_tests,
    require_layers,
)
from arbiter.graders.sandbox import _codec as codec
from arbiter.graders.sandbox.suites import expected_test_ids, tally, tampering_signals
from arbiter.graders.types import FailureKind, IOCase, Sample, TaskSpec
from arbiter.graders.unit_tests import (
    UnitTestsConfig,
    UnitTestsGrader,
    outputs_match,
    score_outcomes,
)

# --- pure scoring ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("passed", "total", "partial", "expected"),
    [
        (3, 4, True, 0.75),
        (3, 4, False, 0.0),
        (4, 4, False, 1.0),
        (0, 4, True, 0.0),
        (0, 0, True, 0.0),  # no tests is no evidence, not full marks
    ],
)
def test_score_outcomes(passed: int, total: int, partial: bool, expected: float) -> None:
    assert score_outcomes(passed, total, partial_credit=partial) == expected


@pytest.mark.parametrize(
    ("actual", "expected", "mode", "match"),
    [
        ("1 2\n", "1 2\n", "exact", True),
        ("1 2", "1 2\n", "exact", False),
        ("1  2\n\n", "1 2", "whitespace", True),
        ("1 3", "1 2", "whitespace", False),
        ("0.3333333", "0.33333333", "float", True),
        ("0.34", "0.33", "float", False),
        # An expected integer is answered by that integer and nothing "close" to it.
        ("1e-9", "0", "float", False),
        ("0.0", "0", "float", True),
        ("7.000", "7", "float", True),
        ("0.7e1", "7", "float", True),
        ("1e2", "100", "float", True),
        ("1e999999999", "7", "float", False),
        # The red team's 30! in exponent form, within 1e-6 of the answer, wrong.
        ("2.6525294e+32", "265252859812191058636308480000000", "float", False),
        (
            "2.65252859812191058636308480000000e32",
            "265252859812191058636308480000000",
            "float",
            True,
        ),
        ("nan", "nan", "float", True),  # identical tokens
        ("nan", "1.0", "float", False),
        ("abc 1.0", "abc 1.0000001", "float", True),
        ("abd 1.0", "abc 1.0", "float", False),
        ("1.0 2.0", "1.0", "float", False),
        ("inf", "1e308", "float", False),
        # Integers compare exactly under "float": a relative tolerance of 1e-6
        # would pass a wrong 33-digit answer.
        ("123456789012345678901234567890123", "123456789012345678901234567890124", "float", False),
        ("1000001", "1000000", "float", False),
        ("007", "7", "float", True),
        ("-0", "0", "float", True),
        ("-5", "5", "float", False),
        ("1" * 5000, "1" * 5000, "float", True),
        ("1" * 5000 + "1", "1" * 5000 + "2", "float", False),  # past int()'s 4,300 digits
        ("2.9999999", "3", "float", False),  # an integer expected: not within a tolerance
        ("3", "2.9999999", "float", True),  # a fraction expected: the tolerance applies
    ],
)
def test_outputs_match(actual: str, expected: str, mode: Any, match: bool) -> None:
    assert outputs_match(actual, expected, mode, 1e-6) is match


def test_config_rejects_nonsense() -> None:
    with pytest.raises(ValidationError):
        UnitTestsConfig(timeout_s=0)
    with pytest.raises(ValidationError):
        UnitTestsConfig(memory_mb=1)
    with pytest.raises(ValidationError):
        UnitTestsConfig(unknown=1)  # type: ignore[call-arg]
    limits = UnitTestsConfig(timeout_s=2, memory_mb=128).limits()
    assert (limits.timeout_s, limits.memory_mb) == (2, 128)


# --- the codec -------------------------------------------------------------------

scalars = st.none() | st.booleans() | st.integers() | st.floats() | st.text() | st.binary()
# NaN keys are never equal to themselves: leave them out of keys and set members.
keys = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text()
hashable = st.recursive(
    keys, lambda inner: st.tuples(inner, inner) | st.frozensets(inner, max_size=3), max_leaves=8
)
values = st.recursive(
    scalars | st.complex_numbers(),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.tuples(inner, inner)
        | st.sets(hashable, max_size=4)
        | st.dictionaries(hashable, inner, max_size=4)
    ),
    max_leaves=12,
)


def _same(a: Any, b: Any) -> bool:
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        return (math.isnan(a) and math.isnan(b)) or (
            a == b and math.copysign(1, a) == math.copysign(1, b)
        )
    if isinstance(a, complex):
        return _same(a.real, b.real) and _same(a.imag, b.imag)
    if isinstance(a, list | tuple):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    return bool(a == b)


@given(values)
def test_codec_round_trip_preserves_types(value: Any) -> None:
    encoded = codec.encode(value)
    decoded = codec.decode(codec.loads(codec.dumps(encoded)))
    assert _same(value, decoded)
    # The encoder built once writes what json.dumps would.
    assert codec.dumps(encoded) == json.dumps(encoded, separators=(",", ":")).encode()


def test_codec_sends_subclasses_as_plain_data() -> None:
    class Liar(int):
        def __eq__(self, other: object) -> bool:
            return True

        __hash__ = int.__hash__

    decoded = codec.decode(codec.encode(Liar(3)))
    assert type(decoded) is int and decoded != 4


def test_codec_refuses_objects_without_a_handle() -> None:
    with pytest.raises(codec.EncodeError):
        codec.encode(object())
    assert codec.encode(object(), refs=lambda v: 7) == {"r": 7}


@pytest.mark.parametrize(
    "raw",
    [
        b"[1, 2]",  # an untagged list
        b'{"l": [1], "t": [2]}',  # two tags
        b'{"x": 1}',  # unknown tag
        b'{"s": [{"l": []}]}',  # an unhashable set member
        b'{"f": "big"}',
        b'{"b": "***"}',
        b'{"r": 1}',  # a handle where none is expected
        b"NaN",
        b"{",
        b'{"l": ' * 5000 + b"1" + b"}" * 5000,  # recursion bomb
    ],
)
def test_codec_rejects_garbage(raw: bytes) -> None:
    with pytest.raises(codec.DecodeError):
        codec.decode(codec.loads(raw))


# --- planning function tests -----------------------------------------------------


def test_plan_splits_check_into_units_and_setup() -> None:
    tests = (
        "import math\nMETA = {}\n\n"
        "def check(candidate):\n"
        "    '''doc'''\n"
        "    x = 3\n"
        "    assert candidate(x) == 9\n"
        "    for i in range(3):\n"
        "        assert candidate(i) == i * i\n"
        "    assert True\n\n"
        "check(square)\n"
    )
    plan = plan_function_tests(tests)
    assert plan.units == 3
    assert [s.is_unit for s in plan.statements] == [False, True, True, True]
    assert plan.candidate_param == "candidate"
    assert "square" in plan.free_names


def test_plan_of_an_assert_list_tests_builtin_shadowing_names_only() -> None:
    plan = plan_function_tests(["assert sum(1, 2) == 3", "assert set(f([1])) == {1}"])
    assert plan.units == 2
    # f is the candidate's; sum and set stay the builtins the test compares with.
    assert plan.declared == {"f"}
    # A task whose only function is named like a builtin (MBPP's sum): that one.
    assert plan_function_tests(["assert sum(1, 2) == 3"]).declared == {"sum"}
    # An entry point, when the task names one, is all the candidate contributes.
    assert plan_function_tests(["assert g(sorted([2, 1])) == 3"], entry_point="g").declared == {"g"}


def test_plan_rejects_tests_that_do_not_parse() -> None:
    with pytest.raises(CheckPlanError):
        plan_function_tests("def check(candidate):\n    assert (\n")


# --- cross-checking a suite report ------------------------------------------------

EXPECTED = {"test_a.py::test_one", "test_a.py::test_two"}


def test_tally_gives_one_outcome_per_expected_test_from_its_variants() -> None:
    reported = {
        "test_a.py::test_one": "passed",
        "test_a.py::test_two[1]": "passed",
        "test_a.py::test_two[2]": "failed",
        "test_a.py::test_not_expected": "passed",
    }
    assert tally(reported, EXPECTED) == {
        "test_a.py::test_one": "passed",
        "test_a.py::test_two": "failed",  # one failed variant fails the test
    }
    assert tally({"test_a.py::test_two[1]": "skipped"}, EXPECTED) == {
        "test_a.py::test_one": "missing",  # never reported
        "test_a.py::test_two": "skipped",
    }


def test_expected_test_ids() -> None:
    files = {
        "test_a.py": "def test_x():\n    pass\nclass TestY:\n    def test_z(self):\n        pass\n"
        "class TestInit:\n    def __init__(self):\n        pass\n"
        "    def test_no(self):\n        pass\n",
        "helper.py": "def test_not_collected():\n    pass\n",
    }
    assert expected_test_ids(files) == {"test_a.py::test_x", "test_a.py::TestY::test_z"}


@pytest.mark.parametrize(
    ("code", "signal"),
    [
        ("import _pytest.python", "framework_patching"),
        ("import pytest\npytest.main = None", "framework_patching"),
        ("import os\nos.write(3, b'x')", "verdict_forgery"),
        ("import os\nos._exit(0)", "early_exit"),
        ("import sys\nsys._getframe(1)", "introspection"),
    ],
)
def test_tampering_signals(code: str, signal: str) -> None:
    assert signal in [s for s, _, _ in tampering_signals(code)]


def test_no_tampering_signals_in_plain_code() -> None:
    assert tampering_signals("import os\ndef add(a, b):\n    return a + b\nprint(os.sep)\n") == []


# --- the grader, end to end, through a real sandbox ------------------------------


@pytest.fixture(scope="module")
def grader() -> Iterator[UnitTestsGrader]:
    pool = SandboxPool(PoolConfig(slots=1))
    yield UnitTestsGrader(pool)
    pool.close()


SQUARE = TaskSpec(
    kind="python_function",
    tests="def check(candidate):\n    assert candidate(2) == 4\n    assert candidate(3) == 9\n",
    entry_point="square",
)


def _grade(grader: UnitTestsGrader, response: str, task: TaskSpec | None, **config: Any) -> Any:
    return grader.grade_sync(
        Sample(id="s", response=response, task=task), UnitTestsConfig(**config)
    )


def test_missing_task_is_missing_input(grader: UnitTestsGrader) -> None:
    result = _grade(grader, "def square(x):\n    return x * x\n", None)
    assert result.failure.kind == FailureKind.MISSING_INPUT


def test_no_code_scores_zero_and_says_why(grader: UnitTestsGrader) -> None:
    # The candidate's own fault is a 0 by default, its kind kept in the details.
    result = _grade(grader, "I am not sure how to do this.", SQUARE)
    assert result.score == 0.0 and result.details["failure_kind"] == "no_code"
    typed = _grade(grader, "I am not sure how to do this.", SQUARE, fail_as_zero=False)
    assert typed.score is None and typed.failure.kind == FailureKind.NO_CODE


def test_syntax_error_is_zero_or_typed(grader: UnitTestsGrader) -> None:
    broken = "```python\ndef square(x)\n    return x * x\n```"
    zero = _grade(grader, broken, SQUARE)
    assert zero.score == 0.0 and zero.details["failure_kind"] == "syntax_error"
    typed = _grade(grader, broken, SQUARE, fail_as_zero=False)
    assert typed.score is None and typed.failure.kind == FailureKind.SYNTAX_ERROR


def test_broken_tests_are_a_collection_error(grader: UnitTestsGrader) -> None:
    task = SQUARE.model_copy(update={"tests": "def check(candidate):\n    assert (\n"})
    result = _grade(grader, "def square(x):\n    return x * x\n", task)
    assert result.failure.kind == FailureKind.COLLECTION_ERROR


def test_partial_credit_per_assert(grader: UnitTestsGrader) -> None:
    half = "def square(x):\n    return 4\n"
    assert _grade(grader, half, SQUARE).score == 0.5
    assert _grade(grader, half, SQUARE, partial_credit=False).score == 0.0
    outcomes = [t["outcome"] for t in _grade(grader, half, SQUARE).details["tests"]]
    assert outcomes == ["passed", "assertion_failed"]


def test_runtime_and_import_errors_are_told_apart(grader: UnitTestsGrader) -> None:
    raising = _grade(grader, "def square(x):\n    raise ValueError('no')\n", SQUARE)
    assert raising.score == 0.0
    assert raising.details["tests"][0]["error"].startswith("ValueError")
    missing = _grade(grader, "import not_a_module_anywhere\n", SQUARE)
    assert missing.score == 0.0 and missing.details["failure_kind"] == "import_error"


def test_candidate_objects_stay_in_the_sandbox(grader: UnitTestsGrader) -> None:
    # MBPP-style: the tests build the candidate's own objects and pass them back.
    code = (
        "class Pair:\n    def __init__(self, a, b):\n        self.a, self.b = a, b\n"
        "def total(pairs):\n    return sum(p.a + p.b for p in pairs)\n"
    )
    task = TaskSpec(kind="python_function", tests=["assert total([Pair(1, 2), Pair(3, 4)]) == 10"])
    assert _grade(grader, code, task).score == 1.0


def test_types_cross_intact(grader: UnitTestsGrader) -> None:
    code = "def f():\n    return (1, {2, 3}, {(4, 5): b'x'}, float('inf'), 1 + 2j)\n"
    task = TaskSpec(
        kind="python_function",
        tests=[
            "assert f() == (1, {2, 3}, {(4, 5): b'x'}, float('inf'), 1 + 2j)",
            "assert type(f()) is tuple",
        ],
    )
    assert _grade(grader, code, task).score == 1.0


@pytest.mark.parametrize(
    ("comparison", "output", "expected_score"),
    [
        ("exact", "6\n", 1.0),
        ("exact", "6", 0.0),
        ("whitespace", "  6 ", 1.0),
        ("float", "6.000", 1.0),
        # The expected 6 is an integer: an answer merely close to it is wrong.
        ("float", "6.0000001", 0.0),
    ],
)
def test_stdin_stdout(
    grader: UnitTestsGrader, comparison: Any, output: str, expected_score: float
) -> None:
    code = f"import sys\nsum(map(int, sys.stdin.read().split()))\nprint({output!r}, end='')\n"
    task = TaskSpec(
        kind="stdin_stdout", tests=[IOCase(input="1 2 3", output="6\n")], comparison=comparison
    )
    assert _grade(grader, code, task).score == expected_score


def test_stdin_stdout_reads_the_input(grader: UnitTestsGrader) -> None:
    code = "print(sum(map(int, input().split())))\n"
    task = TaskSpec(
        kind="stdin_stdout",
        tests=[IOCase(input="1 2 3\n", output="6"), IOCase(input="5 5\n", output="11")],
    )
    result = _grade(grader, code, task)
    assert result.score == 0.5
    assert [t["outcome"] for t in result.details["tests"]] == ["passed", "wrong_output"]


def test_pytest_suite_partial_credit(grader: UnitTestsGrader) -> None:
    tests = (
        "import pytest\nfrom solution import add\n\n"
        "@pytest.mark.parametrize('a', [1, 2])\ndef test_param(a):\n    assert add(a, 0) == a\n\n"
        "class TestAdd:\n    def test_big(self):\n        assert add(10, 5) == 15\n"
    )
    task = TaskSpec(kind="pytest", tests=tests, entry_point="solution")
    assert _grade(grader, "def add(a, b):\n    return a + b\n", task).score == 1.0
    result = _grade(grader, "def add(a, b):\n    return a\n", task)
    assert result.score == 0.5
    assert result.details["tests"] == {
        "test_solution.py::test_param": "passed",
        "test_solution.py::TestAdd::test_big": "failed",
    }


def test_pytest_candidate_that_does_not_load_scores_zero(grader: UnitTestsGrader) -> None:
    task = TaskSpec(
        kind="pytest",
        tests="from solution import add\n\ndef test_a():\n    assert add(1, 1) == 2\n",
    )
    # As for a function task: the candidate's own fault, scored, with the reason.
    result = _grade(grader, "raise RuntimeError('boom')\n", task)
    assert result.score == 0.0
    assert result.details["failure_kind"] == "runtime_error"
    assert "RuntimeError: boom" in result.details["load_error"]


def test_pytest_tests_that_do_not_collect_are_a_collection_error(
    grader: UnitTestsGrader,
) -> None:
    task = TaskSpec(
        kind="pytest",
        tests="from solution import add\nimport no_such_module\n\ndef test_a():\n    pass\n",
    )
    result = _grade(grader, "def add(a, b):\n    return a + b\n", task)
    assert result.failure is not None
    assert result.failure.kind == FailureKind.COLLECTION_ERROR


def test_a_dead_slot_is_restarted_and_never_blamed_on_the_candidate(
    grader: UnitTestsGrader,
) -> None:
    pool = grader.pool
    pool.start()
    slot = pool._slots[0]
    assert slot.proc is not None
    slot.proc.kill()
    slot.proc.wait()
    # The next run finds the slot dead, restarts it, and grades normally.
    assert _grade(grader, "def square(x):\n    return x * x\n", SQUARE).score == 1.0


def test_suites_run_on_the_trusted_side_and_no_sandbox_process_carries_pytest() -> None:
    pool = SandboxPool(PoolConfig(slots=1))
    grader = UnitTestsGrader(pool)
    modules = TaskSpec(
        kind="python_function",
        tests="def check(candidate):\n    assert candidate() == []\n",
        entry_point="heavy",
    )
    # The candidate lists what its process holds beyond the standard library and
    # the template's own stdlib-only modules: nothing (no pytest, pydantic, asyncio),
    # not threading (imported only by a run that asks for it), and neither ctypes
    # nor the confiner that needed it (the template is a fresh interpreter).
    listing = (
        "import sys\n"
        "def heavy():\n"
        "    own = ('arbiter', 'arbiter.graders', 'arbiter.graders.sandbox',\n"
        "           'arbiter.graders.sandbox._template',\n"
        "           'arbiter.graders.sandbox._codec', 'arbiter.graders.sandbox._frames',\n"
        "           'arbiter.graders.sandbox._remote')\n"
        "    tops = {'pytest', '_pytest', 'pluggy', 'pydantic', 'asyncio', 'arbiter',\n"
        "            'threading', 'queue', 'subprocess', 'ctypes', '_ctypes'}\n"
        "    return sorted(m for m in sys.modules if m.split('.')[0] in tops and m not in own)\n"
    )
    # The same listing under a pytest suite: the tests run in the trusted host,
    # so the candidate's process is a plain function run, without pytest.
    suite = TaskSpec(
        kind="pytest",
        tests="from solution import heavy\n\ndef test_a():\n    assert heavy() == []\n",
    )
    try:
        assert _grade(grader, listing, modules).score == 1.0
        assert _grade(grader, listing, suite).score == 1.0
        assert grader.suites.alive
        # A trusted host that dies is started again; the suite is graded normally.
        proc = grader.suites._proc
        assert proc is not None
        proc.kill()
        proc.wait()
        assert _grade(grader, listing, suite).score == 1.0
        assert grader.suites.alive
    finally:
        grader.close()
        pool.close()


@pytest.mark.skipif(os.getuid() != 0, reason="only a root pool drops to sandbox uids")
def test_pools_on_one_host_never_share_sandbox_uids(grader: UnitTestsGrader) -> None:
    grader.pool.start()
    first = grader.pool.uids.base
    second = SandboxPool(PoolConfig(slots=1))
    try:
        second.start()
        # Another pool (a second service on the host, say) gets other uids...
        mine = set(range(first, first + grader.pool.capacity))
        assert mine.isdisjoint(range(second.uids.base, second.uids.base + second.capacity))
        # ...and a pool told to use uids another pool holds refuses to start.
        taken = SandboxPool(PoolConfig(slots=1, uid_base=first))
        with pytest.raises(SandboxError, match="held by another pool"):
            taken.start()
        assert _grade(UnitTestsGrader(second), "def square(x):\n    return x * x\n", SQUARE).score
    finally:
        second.close()
    # Closed, its uids are free again.
    again = SandboxPool(PoolConfig(slots=1, uid_base=second.uids.base))
    again.start()
    again.close()


def test_a_grading_stuck_on_the_trusted_side_is_reported_not_hidden(
    grader: UnitTestsGrader, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The task's own test computes (here: sleeps) past every deadline, on the
    # trusted side where no sandbox limit reaches; readiness tells, and stops
    # telling once the grading ends.
    monkeypatch.setattr(UnitTestsGrader, "stuck_after_s", 0.0)
    monkeypatch.setattr(unit_tests, "REPORT_GRACE_S", 0.0)
    task = TaskSpec(
        kind="python_function",
        tests="import time\n\ndef check(candidate):\n    assert time.sleep(candidate()) is None\n",
        entry_point="pause",
    )
    sample = Sample(id="slow-1", response="def pause():\n    return 2.5\n", task=task)
    config = UnitTestsConfig(timeout_s=0.5)
    worker = threading.Thread(target=grader.grade_sync, args=(sample, config))
    worker.start()
    try:
        deadline = time.monotonic() + 10
        said = None
        while said is None and worker.is_alive() and time.monotonic() < deadline:
            time.sleep(0.05)
            said = asyncio.run(grader.readiness())
        assert said is not None and "past their deadline" in said and "'slow-1'" in said
    finally:
        worker.join()
    assert asyncio.run(grader.readiness()) is None


def test_lazy_modules_are_imported_by_the_run_that_asks(grader: UnitTestsGrader) -> None:
    task = TaskSpec(
        kind="python_function",
        tests="def check(candidate):\n    assert candidate(5) == [0, 1, 4, 9, 16]\n",
        entry_point="squares",
    )
    threaded = (
        "import queue\n"
        "import threading\n\n"
        "def squares(n):\n"
        "    out = queue.Queue()\n"
        "    workers = [threading.Thread(target=lambda i=i: out.put(i * i)) for i in range(n)]\n"
        "    for w in workers:\n"
        "        w.start()\n"
        "    for w in workers:\n"
        "        w.join()\n"
        "    return sorted(out.get() for _ in range(n))\n"
    )
    assert grader.pool.missing_modules() == []
    assert _grade(grader, threaded, task).score == 1.0


def test_temporary_files_go_to_the_runs_own_directory(grader: UnitTestsGrader) -> None:
    task = TaskSpec(
        kind="python_function",
        tests="def check(candidate):\n    assert candidate() == ['run', 'run', 'hi']\n",
        entry_point="scratch",
    )
    code = (
        "import os, tempfile\n\n"
        "def scratch():\n"
        "    with tempfile.NamedTemporaryFile('w+', delete=False) as f:\n"
        "        f.write('hi')\n"
        "    here = os.path.basename(os.path.dirname(f.name))\n"
        "    return [here, os.path.basename(os.getcwd()), open(f.name).read()]\n"
    )
    assert _grade(grader, code, task).score == 1.0
    # A suite's tests run on the trusted side: their temporary files go in the
    # suite's own directory, which goes with the suite.
    suite = TaskSpec(
        kind="pytest",
        tests=(
            "import os, tempfile\n\n"
            "def test_tmp():\n"
            "    with tempfile.TemporaryFile() as f:\n"
            "        f.write(b'x')\n"
            "    assert os.path.basename(tempfile.gettempdir()).startswith('suite-')\n"
            "    assert os.environ['TMPDIR'] == tempfile.gettempdir() == os.getcwd()\n"
        ),
    )
    assert _grade(grader, "x = 1\n", suite).score == 1.0


# --- layers ----------------------------------------------------------------------


def test_check_layers_reports_every_layer() -> None:
    layers = check_layers()
    assert set(LAYERS) <= set(layers)
    for name in LAYERS:
        assert layers[name].startswith(("active", "unavailable: "))


def test_require_layers() -> None:
    require_layers({"seccomp": "active"}, ["seccomp"])
    with pytest.raises(MissingLayersError, match="landlock"):
        require_layers(
            {"seccomp": "active", "landlock": "unavailable: ENOSYS"}, ["seccomp", "landlock"]
        )


def test_sandbox_faults_are_retried_then_typed_never_scored() -> None:
    # A pool without pytest support cannot run a suite: an infrastructure fault.
    pool = SandboxPool(PoolConfig(slots=1, pytest=False, preload=()))
    try:
        task = TaskSpec(kind="pytest", tests="def test_a():\n    assert True\n")
        result = UnitTestsGrader(pool).grade_sync(
            Sample(id="s", response="x = 1\n", task=task), UnitTestsConfig()
        )
    finally:
        pool.close()
    assert result.score is None
    assert result.failure is not None and result.failure.kind == FailureKind.SANDBOX_ERROR
    assert result.failure.retryable


def test_required_layers_are_checked(
    grader: UnitTestsGrader, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(ValidationError, match="unknown sandbox layers"):
        UnitTestsConfig(require_layers=("chroot",))
    right = "def square(x):\n    return x * x\n"
    everything = UnitTestsConfig(require_layers=LAYERS)
    if all(v.startswith("active") for v in grader.pool.layers().values()):
        assert _grade(grader, right, SQUARE, require_layers=LAYERS).score == 1.0
    # A host without Landlock (the report is faked; the refusal is real).
    degraded = {**grader.pool.layers(), "landlock": "unavailable: ENOSYS"}
    monkeypatch.setattr(grader.pool, "layers", lambda: degraded)
    result = grader.grade_sync(Sample(id="s", response=right, task=SQUARE), everything)
    assert result.score is None
    assert result.failure is not None and result.failure.kind == FailureKind.SANDBOX_ERROR
    assert "landlock" in result.failure.message
