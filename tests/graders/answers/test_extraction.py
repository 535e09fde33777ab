"""The final answer of a response, and every hedge refused (pure)."""

from __future__ import annotations

import pytest

from arbiter.graders.answers.extraction import boxed_contents, choice_labels, extract_answer
from arbiter.graders.types import ViolationType


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (r"\boxed{\frac{1}{2}}", [r"\frac{1}{2}"]),
        (r"a \boxed{1} b \boxed{2}", ["1", "2"]),
        (r"\boxed{\boxed{3}}", [r"\boxed{3}"]),
        (r"\fbox{7}", ["7"]),
        (r"\boxed 5 and more", ["5"]),
        (r"\boxed{unclosed", ["unclosed"]),
        (r"\boxed{a\}b}", [r"a\}b"]),
        ("no box", []),
    ],
)
def test_boxed_contents(text, expected):
    assert boxed_contents(text) == expected


@pytest.mark.parametrize(
    ("response", "mode", "answer", "where"),
    [
        (r"so \boxed{42}.", "auto", "42", "boxed"),
        (r"<think>\boxed{1}</think> then \boxed{2}", "auto", "2", "boxed"),
        ("reasoning </think> \\boxed{5}", "auto", "5", "boxed"),
        ("<answer> 7 </answer>", "auto", "7", "answer_tag"),
        (r"<answer>so \boxed{8}</answer>", "answer_tag", "8", "answer_tag"),
        ("step\n#### 1,234", "auto", "1,234", "gsm8k_marker"),
        ("work\nThe final answer is $12$.", "auto", "12", "answer_phrase"),
        ("work\n\n  **Answer:** 9.  \n", "last_line", "9", "last_line"),
        ("just 3", "auto", "just 3", "last_line"),
    ],
)
def test_the_final_answer_is_found(response, mode, answer, where):
    found = extract_answer(response, mode=mode, gold="1")
    assert (found.answer, found.where) == (answer, where)
    assert found.violations == ()


@pytest.mark.parametrize(
    ("response", "mode"),
    [("no box here", "boxed"), (r"\boxed{3}", "answer_tag"), ("   \n  ", "last_line")],
)
def test_no_answer_where_the_mode_looks_is_a_zero_without_a_violation(response, mode):
    found = extract_answer(response, mode=mode)
    assert found.answer is None
    assert found.violations == ()


@pytest.mark.parametrize(
    ("response", "gold", "violation"),
    [
        (r"\boxed{3} \boxed{4}", "3", ViolationType.ANSWER_HEDGING),
        (r"\boxed{3 \text{ or } 4}", "3", ViolationType.ANSWER_HEDGING),
        ("Answer: 3 or 4", "3", ViolationType.ANSWER_HEDGING),
        (r"\boxed{3 \lor 4}", "3", ViolationType.ANSWER_HEDGING),
        (r"\boxed{3, 4, 5}", "3", ViolationType.ANSWER_HEDGING),
        (r"\boxed{3 and 4}", "3", ViolationType.ANSWER_HEDGING),
        ("\\boxed{3}" * 4, "3", ViolationType.ANSWER_HEDGING),
        (r"\boxed{}", "3", ViolationType.EMPTY_ANSWER),
        (r"\boxed{   }", "3", ViolationType.EMPTY_ANSWER),
        ("<answer></answer>", "3", ViolationType.EMPTY_ANSWER),
        ("<think>I think it is 3", "3", ViolationType.UNCLOSED_THINKING),
        (r"</think> \boxed{3} <think>", "3", ViolationType.UNCLOSED_THINKING),
    ],
)
def test_hedges_have_no_answer_and_record_a_violation(response, gold, violation):
    found = extract_answer(response, gold=gold)
    assert found.answer is None
    assert [v.type for v in found.violations] == [violation]


def test_a_list_is_an_answer_when_the_gold_is_a_list():
    assert extract_answer(r"\boxed{1, 2, 3}", gold="1,2,3").answer == "1, 2, 3"
    assert extract_answer(r"\boxed{x=1 \text{ or } x=2}", gold="x=1 or x=2").answer is not None


def test_thousands_separators_and_intervals_are_not_lists():
    assert extract_answer(r"\boxed{1,000,000}", gold="1000000").answer == "1,000,000"
    assert extract_answer(r"\boxed{[0, 1)}", gold="[0,1)").answer == "[0, 1)"
    assert extract_answer(r"\boxed{(1, 2)}", gold="(1,2)").answer == "(1, 2)"


def test_the_same_answer_restated_is_one_answer():
    found = extract_answer(r"\boxed{004} ... so \boxed{ 004 } ... \boxed{004}", gold="4")
    assert found.answer == "004"


def test_padding_neither_pays_nor_costs():
    assert extract_answer("\\boxed{ 7 }").answer == "7"
    assert extract_answer("\\boxed{\t7\n}").answer == "7"


def test_an_echoed_expression_is_refused():
    found = extract_answer(
        r"\boxed{\frac{2}{4}}", gold=r"\frac{1}{2}", prompt=r"Simplify $\frac{2}{4}$"
    )
    assert [v.type for v in found.violations] == [ViolationType.ECHOED_PROBLEM]
    # A plain number in the prompt is no echo, nor is the gold itself.
    assert extract_answer(r"\boxed{12}", gold="12", prompt="What is 12 - 0?").answer == "12"
    assert extract_answer(r"\boxed{2x+1}", gold="2x+1", prompt="Is it 2x+1?").answer == "2x+1"


@pytest.mark.parametrize(
    ("response", "labels", "answer"),
    [
        (r"\boxed{(B)}", ["B"], "B"),
        ("The answer is B.", ["B"], "B"),
        ("**C**", ["C"], "C"),
        (r"\boxed{(B) Paris}", ["B"], "B"),
    ],
)
def test_a_choice_is_its_label(response, labels, answer):
    assert choice_labels(response, list("ABCD")) == labels
    assert extract_answer(response, answer_format="choice", gold="B").answer == answer


@pytest.mark.parametrize("response", ["Answer: A or B", r"\boxed{A, B}", "A, B, C or D"])
def test_several_choices_are_a_hedge(response):
    found = extract_answer(response, answer_format="choice", gold="A", choices=list("ABCD"))
    assert found.answer is None
    assert [v.type for v in found.violations] == [ViolationType.ANSWER_HEDGING]
