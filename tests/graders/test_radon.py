"""The radon grader: curves, combination, radon's own expected results, blocks, failures."""

from __future__ import annotations

import asyncio
import json
import math
from pathlib import Path
from textwrap import dedent

import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from pydantic import ValidationError
from radon.metrics import mi_visit

from arbiter.graders.radon import (
    Block,
    Curve,
    RadonConfig,
    RadonGrader,
    RadonMetrics,
    RadonOptions,
    curve_score,
    longest_statement_lines,
    measure_radon,
    score_complexity,
)
from arbiter.graders.registry import GraderRegistry
from arbiter.graders.static_analysis import StaticAnalyzer
from arbiter.graders.types import INFRASTRUCTURE_FAILURES, FailureKind, Sample
from tests.graders.reader_fuzz import TARGETS, fuzz_settings
from tests.strictness import unavailable

DATA = Path(__file__).resolve().parents[2].parent / "shared" / "data"
RADON_CASES = DATA / "radon" / "radon_expected_cases.json"
HUMANEVAL = DATA / "humanevalpack_python.jsonl"


def grade(grader: RadonGrader, response: str, **config):
    return asyncio.run(grader.grade(Sample(id="s", response=response), RadonConfig(**config)))


@pytest.fixture
def grader() -> RadonGrader:
    return RadonGrader(StaticAnalyzer(measure_radon))


# --- curves and combination (pure) --------------------------------------------

UP = Curve(ok=10, worst=30)  # higher is worse
DOWN = Curve(ok=20, worst=0)  # lower is worse


@pytest.mark.parametrize(
    ("curve", "shape", "value", "expected"),
    [
        (UP, "linear", 1, 1.0),
        (UP, "linear", 10, 1.0),
        (UP, "linear", 20, 0.5),
        (UP, "linear", 30, 0.0),
        (UP, "linear", 90, 0.0),
        (UP, "exponential", 10, 1.0),
        (UP, "exponential", 20, math.exp(-1.5)),
        (UP, "exponential", 30, math.exp(-3.0)),
        (UP, "exponential", 50, math.exp(-6.0)),
        (UP, "step", 10, 1.0),
        (UP, "step", 10.5, 0.0),
        (DOWN, "linear", 100, 1.0),
        (DOWN, "linear", 20, 1.0),
        (DOWN, "linear", 15, 0.25 * 3),
        (DOWN, "linear", 0, 0.0),
        (DOWN, "exponential", 10, math.exp(-1.5)),
        (DOWN, "step", 19.9, 0.0),
    ],
)
def test_curve_score(curve, shape, value, expected):
    assert curve_score(value, curve, shape, rate=3.0) == pytest.approx(expected)


finite = st.floats(min_value=-1e6, max_value=1e6, allow_nan=False)


@given(
    ok=finite,
    span=st.floats(min_value=1e-3, max_value=1e6) | st.floats(-1e6, -1e-3),
    a=finite,
    b=finite,
    shape=st.sampled_from(["linear", "exponential", "step"]),
)
def test_curve_is_bounded_and_never_rewards_getting_worse(ok, span, a, b, shape):
    curve = Curve(ok=ok, worst=ok + span)
    # Order a and b so that b is at least as bad as a (further towards worst).
    better, worse = sorted((a, b), key=lambda v: (v - ok) / span)
    s_better = curve_score(better, curve, shape, rate=3.0)
    s_worse = curve_score(worse, curve, shape, rate=3.0)
    assert 0.0 <= s_worse <= s_better <= 1.0


def metrics(max_cc: int, mean_cc: float, mi: float) -> RadonMetrics:
    # Two blocks with the wanted max and mean.
    other = round(2 * mean_cc - max_cc)
    blocks = (Block("a", "function", 1, 2, max_cc), Block("b", "function", 3, 4, other))
    return RadonMetrics(
        blocks=blocks,
        maintainability_index=mi,
        raw=(("lloc", 40),),
        halstead=(("effort", 500.0),),
    )


@pytest.mark.parametrize(
    ("m", "config", "expected"),
    [
        (metrics(3, 2, 80), {}, 1.0),
        # max 20 -> 0.5; mean 10 -> 0.5; MI 80 -> 1
        (metrics(20, 10, 80), {}, (0.5 + 0.5 + 1.0) / 3),
        (metrics(20, 10, 80), {"combine": "min"}, 0.5),
        (metrics(20, 10, 80), {"combine": "product"}, 0.25),
        (metrics(20, 10, 10), {}, (0.5 + 0.5 + 0.5) / 3),
        (metrics(20, 10, 80), {"mean_cyclomatic": None, "maintainability": None}, 0.5),
        (metrics(20, 10, 80), {"max_cyclomatic": {"ok": 10, "worst": 30, "weight": 2}}, 0.625),
        # A bare number N means {ok: N, worst: 3N}: max 20 against 5..15 is 0.
        (metrics(20, 10, 80), {"max_cyclomatic": 5, "combine": "min"}, 0.0),
        (metrics(3, 2, 80), {"lloc": {"ok": 20, "worst": 60}, "combine": "min"}, 0.5),
        (
            metrics(3, 2, 80),
            {"halstead_effort": {"ok": 100, "worst": 900, "shape": "step"}, "combine": "min"},
            0.0,
        ),
        (metrics(20, 10, 80), {"shape": "exponential", "combine": "min"}, math.exp(-1.5)),
    ],
)
def test_score_complexity(m, config, expected):
    result = score_complexity(m, RadonConfig(**config))
    assert result.score == pytest.approx(expected)
    assert 0.0 <= result.score <= 1.0


def test_terms_say_how_each_metric_scored():
    result = score_complexity(metrics(20, 10, 80), RadonConfig())
    assert result.terms["max_cyclomatic"] == {
        "value": 20.0,
        "ok": 10.0,
        "worst": 30.0,
        "shape": "linear",
        "weight": 1.0,
        "score": 0.5,
    }
    assert set(result.terms) == {"max_cyclomatic", "mean_cyclomatic", "maintainability"}


def test_bare_numbers_expand():
    config = RadonConfig(max_cyclomatic=10, maintainability=40)
    assert (config.max_cyclomatic.ok, config.max_cyclomatic.worst) == (10, 30)
    assert (config.maintainability.ok, config.maintainability.worst) == (40, 0)


@pytest.mark.parametrize(
    "bad",
    [
        {"max_cyclomatic": {"ok": 5, "worst": 5}},
        {"max_cyclomatic": None, "mean_cyclomatic": None, "maintainability": None},
        {
            "max_cyclomatic": {"ok": 5, "worst": 10, "weight": 0},
            "mean_cyclomatic": None,
            "maintainability": None,
        },
        {"max_cyclomatic": {"ok": 5, "worst": 10, "weight": -1}},
        {"max_cyclomatic": True},
        {"shape": "cubic"},
        {"cyclomatic": 10},
    ],
)
def test_bad_config_fails_at_load(bad):
    with pytest.raises(ValidationError):
        RadonConfig(**bad)


# --- radon's own expected results ------------------------------------------------


def _radon_cases(kind: str) -> list:
    if not RADON_CASES.exists():
        reason = f"radon's expected cases are absent ({RADON_CASES})"
        return [pytest.param(None, marks=pytest.mark.skip(reason=reason), id="no-data")]
    cases = json.loads(RADON_CASES.read_text())[kind]
    return [pytest.param(c, id=f"{kind}-{i}") for i, c in enumerate(cases)]


def test_there_are_58_radon_cases():
    if not RADON_CASES.exists():
        unavailable(f"radon's expected cases are absent ({RADON_CASES})")
    data = json.loads(RADON_CASES.read_text())
    assert sum(len(data[k]) for k in ("cc_module_total", "cc_single_function", "mi")) == 58


@pytest.mark.parametrize("case", _radon_cases("cc_module_total"))
def test_module_complexity_matches_radon(case):
    options = RadonOptions(count_asserts=not case["kwargs"].get("no_assert", False))
    m = measure_radon(dedent(case["code"]), options)
    assert m.syntax_error is None
    assert m.module_complexity == case["expected_complexity"]


@pytest.mark.parametrize("case", _radon_cases("cc_single_function"))
def test_single_function_complexity_matches_radon(case):
    m = measure_radon(dedent(case["code"]), RadonOptions())
    functions = [b for b in m.blocks if b.kind == "function"]
    assert len(functions) == 1
    assert m.module_complexity == case["expected_module_complexity"]
    assert functions[0].complexity == case["expected_function_complexity"]


@pytest.mark.parametrize("case", _radon_cases("mi"))
def test_maintainability_index_matches_radon(case):
    m = measure_radon(dedent(case["code"]), RadonOptions(mi_count_multi=case["count_multi"]))
    assert m.maintainability_index == case["expected_mi"]  # exact: the same arithmetic


def test_maintainability_index_equals_radon_on_humaneval():
    # One parse instead of radon's two must not change a single bit of the MI.
    if not HUMANEVAL.exists():
        unavailable(f"HumanEvalPack is absent ({HUMANEVAL})")
    rows = [json.loads(line) for line in HUMANEVAL.read_text().splitlines() if line.strip()]
    assert len(rows) == 164
    for row in rows:
        code = row["prompt"] + row["canonical_solution"]
        for multi in (True, False):
            got = measure_radon(code, RadonOptions(mi_count_multi=multi))
            assert got.maintainability_index == mi_visit(code, multi), row["task_id"]


# --- blocks ---------------------------------------------------------------------

NESTED = """\
def outer(x):
    def inner(y):
        if y:
            if y > 1:
                return 2
        return 0
    return inner(x)


class K:
    def m(self, a):
        return a if a else -a


if __name__ == "__main__":
    outer(1)
"""


def test_closures_methods_and_module_are_blocks():
    m = measure_radon(NESTED, RadonOptions())
    got = {(b.name, b.kind): b.complexity for b in m.blocks}
    # radon leaves a closure's branches out of its parent: the closure is its own block.
    assert got == {
        ("<module>", "module"): 2,
        ("outer", "function"): 1,
        ("outer.inner", "function"): 3,
        ("K.m", "method"): 2,
    }
    assert m.max_cyclomatic == 3
    assert m.mean_cyclomatic == pytest.approx(2.0)


def test_a_script_without_functions_is_one_block():
    m = measure_radon("for i in range(3):\n    print(i)\n", RadonOptions())
    assert [(b.name, b.complexity) for b in m.blocks] == [("<module>", 2)]


def test_module_without_decisions_is_not_a_block():
    m = measure_radon("def f(a):\n    return a or 1\n", RadonOptions())
    assert [b.name for b in m.blocks] == ["f"]


@pytest.mark.parametrize(
    ("code", "expected"),
    [
        ("x = 1\n", 1),
        ("x = [\n    1,\n    2,\n]\n", 4),
        ('"""one\ntwo\nthree"""\n', 3),
        # A compound statement counts its header only: its body is other statements.
        ("def f(\n    a,\n    b,\n):\n    return [\n        a,\n        b]\n", 4),
        ("if (a and\n        b):\n    pass\n", 2),
        ("match x:\n    case 1:\n        pass\n", 1),
    ],
)
def test_longest_statement_lines(code, expected):
    import ast

    assert longest_statement_lines(ast.parse(code)) == expected


def test_an_overlong_statement_is_declined_not_analysed_for_minutes(grader):
    code = "table = {\n" + "".join(f"    {i}: {i * i},\n" for i in range(30)) + "}\n"
    # The candidate's text, so the candidate's fault: a 0 (it was a grader_error,
    # which made the whole reward abstain), or unscored and typed without fail_as_zero.
    declined = grade(grader, code, max_statement_lines=20)
    assert declined.score == 0.0 and declined.failure is None
    assert declined.details["failure_kind"] == "unanalysable"
    assert "32 lines" in declined.details["message"]
    unscored = grade(grader, code, max_statement_lines=20, fail_as_zero=False)
    assert unscored.failure is not None and unscored.failure.kind == FailureKind.UNANALYSABLE
    assert grade(grader, code).score == 1.0  # within the default limit


def test_asserts_count_unless_configured():
    code = "def f(x):\n    assert x\n    return x\n"
    assert measure_radon(code, RadonOptions()).max_cyclomatic == 2
    assert measure_radon(code, RadonOptions(count_asserts=False)).max_cyclomatic == 1


# --- the grader --------------------------------------------------------------------


def test_details_hold_every_metric(grader):
    result = grade(grader, f"```python\n{NESTED}```", include_halstead=True)
    assert result.failure is None and result.score is not None
    d = result.details
    assert d["cyclomatic"]["max"] == 3 and d["cyclomatic"]["blocks_total"] == 4
    assert {b["name"] for b in d["cyclomatic"]["blocks"]} == {
        "<module>",
        "outer",
        "outer.inner",
        "K.m",
    }
    assert d["cyclomatic"]["blocks"][0]["rank"] == "A"
    assert d["maintainability"]["index"] == mi_visit(NESTED, True)
    assert d["maintainability"]["rank"] == "A"
    assert set(d["raw"]) == {"loc", "lloc", "sloc", "comments", "multi", "blank", "single_comments"}
    assert d["halstead"]["total"]["volume"] > 0
    # radon's per-function Halstead covers top-level functions and methods.
    assert [f["name"] for f in d["halstead"]["functions"]] == ["outer", "m"]
    assert set(d["terms"]) == {"max_cyclomatic", "mean_cyclomatic", "maintainability"}
    assert d["code_source"] == "fenced"


def test_complex_code_scores_lower(grader):
    branches = "".join(f"    if x == {i}:\n        return {i}\n" for i in range(25))
    tangled = grade(grader, f"def f(x):\n{branches}    return -1\n")
    simple = grade(grader, "def f(x):\n    return x\n")
    assert simple.score == 1.0
    assert tangled.score is not None and tangled.score < simple.score
    assert tangled.details["cyclomatic"]["max"] == 26
    assert tangled.details["terms"]["max_cyclomatic"]["score"] == pytest.approx(0.2)


#: Responses whose code radon cannot score, each the candidate's doing.
CANDIDATE_FAULTS = [
    ("", FailureKind.NO_CODE),
    ("I cannot write that function.", FailureKind.NO_CODE),
    ("```python\ndef f(:\n    pass\n```", FailureKind.SYNTAX_ERROR),
    ("```python\nx = 1\x00\n```", FailureKind.SYNTAX_ERROR),
    ("```python\nx = '\ud800'\n```", FailureKind.SYNTAX_ERROR),
    ("```python\nx = " + "(" * 300 + "1" + ")" * 300 + "\n```", FailureKind.SYNTAX_ERROR),
    # Python's parser gives up (RecursionError; a MemoryError for the unary chain,
    # which used to escape as a crash): CPython cannot compile these either.
    ("```python\nx = " + "+".join(["1"] * 5000) + "\n```", FailureKind.SYNTAX_ERROR),
    ("```python\nx = " + "-" * 100_000 + "1\n```", FailureKind.SYNTAX_ERROR),
    # Compiles, but is too deep for radon's visitors (it was a grader_error).
    ("```python\nx = " + "+".join(["1"] * 2000) + "\n```", FailureKind.UNANALYSABLE),
]


@pytest.mark.parametrize(("response", "kind"), CANDIDATE_FAULTS)
def test_a_candidates_fault_scores_zero_with_its_kind(grader, response, kind):
    result = grade(grader, response)
    assert result.score == 0.0 and result.failure is None
    assert result.details["failure_kind"] == kind.value


@pytest.mark.parametrize(("response", "kind"), CANDIDATE_FAULTS)
def test_without_fail_as_zero_a_candidates_fault_is_unscored_and_never_ours(grader, response, kind):
    result = grade(grader, response, fail_as_zero=False)
    assert result.score is None
    assert result.failure is not None and result.failure.kind == kind
    assert kind not in INFRASTRUCTURE_FAILURES


def test_cache_by_code_hash_and_options():
    analyzer = StaticAnalyzer(measure_radon, cache_size=8)
    grader = RadonGrader(analyzer)
    code = "def f(x):\n    assert x\n    return x\n"
    assert grade(grader, code).details["cached"] is False
    assert grade(grader, code, max_cyclomatic=2).details["cached"] is True  # scoring only
    assert grade(grader, code, count_asserts=False).details["cached"] is False  # measuring
    assert (analyzer.stats.hits, analyzer.stats.misses) == (1, 2)


def test_registers_under_its_name():
    registry = GraderRegistry()
    registry.register(RadonGrader)
    assert registry.get("radon") is RadonGrader


def test_a_task_in_another_language_is_not_applicable_never_zero(grader):
    from arbiter.graders.types import FailureKind, TaskSpec

    task = TaskSpec(kind="stdin_stdout", language="rust", tests=[])
    sample = Sample(id="s", response="fn main() {}\n", task=task)
    result = asyncio.run(grader.grade(sample, RadonConfig()))
    assert result.score is None
    assert result.failure is not None and result.failure.kind == FailureKind.NOT_APPLICABLE


# --- any text: radon answers for every response ---------------------------------

#: The unary chain overflows CPython's parser stack as a MemoryError, which escaped
#: measure_radon as a crash; the long sum and the long literal were grader_errors.
UNARY_CHAIN = "x = " + "-" * 100_000 + "1\n"
LONG_SUM = "x = " + "+".join(["1"] * 2000) + "\n"
LONG_LITERAL = "x = [\n" + "1,\n" * 600 + "]\n"


#: bench.fuzz_readers found it: a line separator of str.splitlines (not of Python's) in
#: a string literal made radon's line counter raise SyntaxError on code Python compiles.
SPLIT_LITERAL = 's = "a\x1cb"\nt = "\u2028"  # \x0c\n'


@fuzz_settings()
@given(TARGETS["radon.measure_radon"].strategy)
@example(UNARY_CHAIN)
@example(SPLIT_LITERAL)
def test_measure_radon_answers_for_any_code(code):
    TARGETS["radon.measure_radon"].check(code)


def test_line_separators_python_does_not_split_at_are_counted_as_python_reads_them():
    m = measure_radon(SPLIT_LITERAL, RadonOptions())
    assert m.syntax_error is None and m.unanalysable is None
    assert dict(m.raw)["loc"] == 2 and dict(m.raw)["comments"] == 1


@fuzz_settings()
@given(TARGETS["radon.grade"].strategy)
@example((UNARY_CHAIN, True))
@example((LONG_SUM, False))
@example((LONG_LITERAL, False))
def test_no_response_makes_radon_fail_as_ours(args):
    TARGETS["radon.grade"].check(args)
