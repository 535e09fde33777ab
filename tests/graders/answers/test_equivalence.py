"""Equivalence of a final answer with the gold: exact numbers, math-verify, the veto."""

from __future__ import annotations

from fractions import Fraction

import pytest

from arbiter.graders.answers.equivalence import (
    GoldUnparseable,
    equivalent,
    exact_number,
    normalize_latex,
    read_gold,
)


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("12", (Fraction(12), False)),
        ("-0.5", (Fraction(-1, 2), False)),
        ("1,000,000", (Fraction(10**6), False)),
        (r"\frac{3}{6}", (Fraction(1, 2), False)),
        (r"-\dfrac{2}{4}", (Fraction(-1, 2), False)),
        ("2/4", (Fraction(1, 2), False)),
        ("2.5e3", (Fraction(2500), False)),
        (r"2.5 \times 10^{3}", (Fraction(2500), False)),
        (r"50\%", (Fraction(50), True)),
        ("$12$", (Fraction(12), False)),
        (r"12\text{ cm}", (Fraction(12), False)),
        ("\u22128", (Fraction(-8), False)),
        ("x+1", None),
        (r"\frac{1}{0}", None),
    ],
)
def test_exact_numbers(text, value):
    assert exact_number(text) == value


def test_normalization_repairs_what_math_verify_misreads():
    # Math-Verify#41: 4\sqrt(2) was read as 4.
    assert normalize_latex(r"4\sqrt(2)") == r"4\sqrt{2}"
    assert normalize_latex(r"\dfrac12") == r"\frac{1}{2}"
    assert normalize_latex(r"30^\circ") == "30"


@pytest.mark.parametrize(
    ("gold", "prediction", "equal"),
    [
        # The published wrong verdicts (Math-Verify#14, #41).
        (r"\frac{1}{2004!}", r"\frac{1}{2006!}", False),
        (r"\frac{1}{2006!}", r"\frac{1}{2004!}", False),
        ("2021", r"\pm 2021", False),
        (r"1-\frac{1}{e}", r"1+\frac{1}{e}", False),
        ("4", r"4\sqrt(2)", False),
        (r"\frac{1}{2^{99}}", r"\frac{1}{2^{98}}", False),
        ("1", r"1+10^{-20}", False),
        # Equal answers written otherwise.
        (r"\frac{1}{2}", "0.5", True),
        (r"\sqrt{2}", r"2^{1/2}", True),
        ("x^2-1", "(x-1)(x+1)", True),
        (r"\{1,2,3\}", r"\{3,2,1\}", True),
        ("[0,1)", "[0, 1)", True),
        ("[0,1)", "(0,1)", False),
        ("x>3", "3<x", True),
        ("x=5", "5", True),
        (r"4\sqrt{2}", r"\sqrt{32}", True),
        ("10!", "3628800", True),
        # A repeating decimal written out, rounded or truncated at 4+ places.
        (r"\frac{1}{12}", "0.0833333333333333", True),
        (r"\frac{2}{3}", "0.6667", True),
        (r"\frac{1}{3}", "0.3334", False),
        (r"\frac{1}{3}", "0.333", False),
        ("0.125", "0.1251", False),
    ],
)
def test_math_equivalence(gold, prediction, equal):
    assert equivalent(gold=gold, prediction=prediction).equal is equal


@pytest.mark.parametrize(
    ("gold", "prediction"),
    [
        (r"\frac{1}{2004!}", r"\frac{1}{2006!}"),
        ("2021", r"\pm 2021"),
        ("4", r"4\sqrt{2}"),
        (r"\frac{1}{2}", "0.5"),
        ("x^2-1", "(x-1)(x+1)"),
        (r"\{1,2\}", r"\{2,1\}"),
        ("3", "4"),
    ],
)
def test_swapping_gold_and_prediction_keeps_the_verdict_of_symmetric_checks(gold, prediction):
    # open-r1#557 called verify(answer, gold). Named arguments make the order explicit;
    # on values (not sets of solutions against one) equality is symmetric, so a swap
    # that changed the verdict would show that an argument is read as the other.
    forward = equivalent(gold=gold, prediction=prediction).equal
    backward = equivalent(gold=prediction, prediction=gold).equal
    assert forward == backward


def test_gold_and_prediction_are_keyword_only():
    with pytest.raises(TypeError):
        equivalent("1", "1")  # type: ignore[misc]


@pytest.mark.parametrize(
    ("gold", "prediction", "tolerance", "equal"),
    [
        ("3.14159", "3.1416", 1e-3, True),
        ("3.14159", "3.15", 1e-3, False),
        ("100", "101", 0.01, True),
        ("42", "42.0", None, True),
        ("42", "41.99", None, False),
        ("1,234", "1234", None, True),
        ("2.5e3", "2500", None, True),
        ("18", "$18", None, True),
        ("18", "eighteen dollars", None, False),
    ],
)
def test_numbers(gold, prediction, tolerance, equal):
    verdict = equivalent(
        gold=gold, prediction=prediction, answer_format="number", tolerance=tolerance
    )
    assert verdict.equal is equal


@pytest.mark.parametrize(
    ("gold", "choices", "prediction", "equal"),
    [
        ("B", list("ABCD"), "B", True),
        ("B", list("ABCD"), "(b)", True),
        ("B", list("ABCD"), "C", False),
        ("Paris", ["London", "Paris"], "B", True),
        ("Paris", ["London", "Paris"], "paris", True),
        ("B", ["London", "Paris"], "Paris", True),
        ("B", ["London", "Paris"], "London", False),
    ],
)
def test_choices(gold, choices, prediction, equal):
    verdict = equivalent(gold=gold, prediction=prediction, answer_format="choice", choices=choices)
    assert verdict.equal is equal


@pytest.mark.parametrize(
    ("gold", "prediction", "equal"),
    [
        ("Paris", "paris", True),
        ("the Pacific Ocean", "Pacific ocean.", True),
        ("Zürich", "Zurich", True),
        ("Paris", "Rome", False),
    ],
)
def test_text(gold, prediction, equal):
    assert equivalent(gold=gold, prediction=prediction, answer_format="text").equal is equal


@pytest.mark.parametrize(
    ("gold", "answer_format", "choices"),
    [
        (r"\frac{", "math", None),
        ("", "math", None),
        ("twelve-ish", "number", None),
        ("E", "choice", list("ABCD")),
        ("  ", "text", None),
    ],
)
def test_an_unreadable_gold_is_the_tasks_fault(gold, answer_format, choices):
    with pytest.raises(GoldUnparseable):
        read_gold(gold=gold, answer_format=answer_format, choices=choices)
