"""The formula language: what it computes, and everything it refuses."""

from __future__ import annotations

import pytest

from arbiter.rubrics.formula import FormulaError, FormulaEvalError, compile_formula

NAMES = ["tests", "judge", "style"]
ENV = {"tests": 1.0, "judge": 0.5, "style": 0.25}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("tests", 1.0),
        ("0.6 * tests + 0.4 * judge", 0.8),
        ("tests * (0.7 + 0.3 * judge)", 0.85),
        ("-judge + 1", 0.5),
        ("judge / 2", 0.25),
        ("min(tests, judge, style)", 0.25),
        ("max(judge, style)", 0.5),
        ("abs(style - judge)", 0.25),
        ("clip(tests + judge, 0, 1)", 1.0),
        ("tests >= 1", 1.0),
        ("0 < style < judge < tests", 1.0),
        ("judge == 0.5 and style != 0.25", 0.0),
        ("not style or judge > 1", 0.0),
        ("judge if tests >= 1 else 0", 0.5),
        ("tests * (judge > 0.4)", 1.0),
        ("1e-1 + 2", 2.1),
    ],
)
def test_values(text, expected):
    assert compile_formula(text, NAMES).evaluate(ENV) == pytest.approx(expected)


def test_names_lists_only_what_is_read():
    assert compile_formula("tests * 2", NAMES).names == frozenset({"tests"})


@pytest.mark.parametrize(
    ("text", "fragment", "col"),
    [
        ("tests + jduge", "did you mean 'judge'?", 8),
        ("__import__('os')", "only the functions", 0),
        ("tests.__class__", "Attribute is not allowed", 0),
        ("tests[0]", "Subscript is not allowed", 0),
        ("'tests'", "only numbers", 0),
        ("True + tests", "only numbers", 0),
        ("lambda: 1", "Lambda is not allowed", 0),
        ("tests ** 2", "unsupported operator", 0),
        ("tests // 2", "unsupported operator", 0),
        ("tests in [1]", "unsupported comparison", 0),
        ("min(tests)", "min() takes at least 2 arguments, got 1", 0),
        ("clip(tests, 0)", "clip() takes 3 arguments, got 2", 0),
        ("max(tests, key=judge)", "keyword arguments", 0),
        ("tests +", "not a valid expression", 7),
        ("", "empty", 0),
        ("  tests + nope", "unknown component 'nope'", 10),
        ("[x for x in tests]", "ListComp is not allowed", 0),
        ("(tests := 1)", "NamedExpr is not allowed", 1),
    ],
)
def test_rejections_point_at_the_culprit(text, fragment, col):
    with pytest.raises(FormulaError) as info:
        compile_formula(text, NAMES)
    assert fragment in info.value.message
    assert info.value.col == col


@pytest.mark.parametrize(
    "text", ["tests / (judge - 0.5)", "clip(tests, 1, 0)", "1e308 * 1e308 * tests"]
)
def test_no_value_is_an_error_not_a_number(text):
    with pytest.raises(FormulaEvalError):
        compile_formula(text, NAMES).evaluate(ENV)


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("tests * 1e999", "too large to be a float"),
        ("tests * " + "9" * 400, "too large to be a float"),
        ("tests * " + "9" * 5_000, "characters; the limit is"),
        ("-" * 100 + "tests", "nests deeper than"),
        ("max(" + ", ".join(["tests"] * 200) + ")", "more than 256 terms"),
        ("(" * 300 + "tests" + ")" * 300, "not a valid expression"),
    ],
)
def test_formulas_over_the_size_limits_are_refused_when_compiled(text, match):
    # Each of these once overflowed, recursed into a RecursionError, or cost
    # seconds per sample to evaluate.
    with pytest.raises(FormulaError, match=match):
        compile_formula(text, NAMES)
