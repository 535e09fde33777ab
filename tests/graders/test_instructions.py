"""The instructions grader: IFEval's 25 checks, strict and loose, and the peers' known bugs."""

from __future__ import annotations

import asyncio
import subprocess
import sys

import pytest
from pydantic import ValidationError

from arbiter.graders.instruction_checks import CHECKS, check_instruction, split_into_sentences
from arbiter.graders.instruction_specs import INSTRUCTIONS
from arbiter.graders.instructions import (
    InstructionsConfig,
    InstructionsGrader,
    follow_instructions,
    score_instructions,
)
from arbiter.graders.types import InstructionsTask, Sample

LONG_EN = "The river runs quietly through the green valley every morning. " * 3

#: (id, kwargs, response, strict, loose): each of the 25, followed and not.
TABLE = [
    ("keywords:existence", {"keywords": ["river", "c++"]}, "I like c++ and the river.", True, True),
    ("keywords:existence", {"keywords": ["river", "lake"]}, "The river.", False, False),
    (
        "keywords:frequency",
        {"keyword": "cat", "frequency": 2, "relation": "at least"},
        "cat Cat",
        True,
        True,
    ),
    (
        "keywords:frequency",
        {"keyword": "cat", "frequency": 2, "relation": "less than"},
        "cat cat",
        False,
        False,
    ),
    ("keywords:forbidden_words", {"forbidden_words": ["red"]}, "a bored bird", True, True),
    ("keywords:forbidden_words", {"forbidden_words": ["red"]}, "a Red bird", False, False),
    (
        "keywords:letter_frequency",
        {"letter": "a", "let_frequency": 3, "let_relation": "at least"},
        "Aaa",
        True,
        True,
    ),
    (
        "keywords:letter_frequency",
        {"letter": "z", "let_frequency": 1, "let_relation": "less than"},
        "zoo",
        False,
        False,
    ),
    ("language:response_language", {"language": "en"}, LONG_EN, True, True),
    ("language:response_language", {"language": "es"}, LONG_EN, False, False),
    # Undetectable: not followed (IFEval counts a LangDetectException as followed).
    ("language:response_language", {"language": "en"}, "12345 !!!", False, False),
    (
        "length_constraints:number_sentences",
        {"num_sentences": 2, "relation": "at least"},
        "One. Two. Dr. Who?",
        True,
        True,
    ),
    (
        "length_constraints:number_sentences",
        {"num_sentences": 2, "relation": "less than"},
        "One. Two.",
        False,
        False,
    ),
    ("length_constraints:number_paragraphs", {"num_paragraphs": 2}, "a\n***\nb", True, True),
    ("length_constraints:number_paragraphs", {"num_paragraphs": 2}, "a\n***\n***\nb", False, False),
    (
        "length_constraints:number_words",
        {"num_words": 3, "relation": "at least"},
        "one two three",
        True,
        True,
    ),
    (
        "length_constraints:number_words",
        {"num_words": 3, "relation": "less than"},
        "one two three",
        False,
        False,
    ),
    (
        "length_constraints:nth_paragraph_first_word",
        {"num_paragraphs": 2, "nth_paragraph": 2, "first_word": "then"},
        "First.\n\nThen, more.",
        True,
        True,
    ),
    (
        "length_constraints:nth_paragraph_first_word",
        {"num_paragraphs": 2, "nth_paragraph": 2, "first_word": "then"},
        "First.\n\nNow more.",
        False,
        False,
    ),
    (
        "detectable_content:number_placeholders",
        {"num_placeholders": 2},
        "[name] at [place]",
        True,
        True,
    ),
    ("detectable_content:number_placeholders", {"num_placeholders": 2}, "[name]", False, False),
    ("detectable_content:postscript", {"postscript_marker": "P.S."}, "Hi.\nP.S. bye", True, True),
    (
        "detectable_content:postscript",
        {"postscript_marker": "P.P.S"},
        "Hi.\nP.S. bye",
        False,
        False,
    ),
    ("detectable_format:number_bullet_lists", {"num_bullets": 2}, "* a\n- b", True, True),
    ("detectable_format:number_bullet_lists", {"num_bullets": 2}, "* a", False, False),
    ("detectable_format:constrained_response", {}, "My answer is yes.", True, True),
    ("detectable_format:constrained_response", {}, "Yes.", False, False),
    (
        "detectable_format:number_highlighted_sections",
        {"num_highlights": 2},
        "*a* and **b**",
        True,
        True,
    ),
    (
        "detectable_format:number_highlighted_sections",
        {"num_highlights": 2},
        "*a* and ** **",
        False,
        False,
    ),
    (
        "detectable_format:multiple_sections",
        {"section_spliter": "Section", "num_sections": 2},
        "Section 1\na\nSection 2\nb",
        True,
        True,
    ),
    (
        "detectable_format:multiple_sections",
        {"section_spliter": "Section", "num_sections": 2},
        "Section 1\na",
        False,
        False,
    ),
    ("detectable_format:json_format", {}, '```json\n{"a": 1}\n```', True, True),
    ("detectable_format:json_format", {}, "{a: 1}", False, False),
    ("detectable_format:title", {}, "<<Joy>>\ntext", True, True),
    ("detectable_format:title", {}, "<< >>\ntext", False, False),
    ("combination:two_responses", {}, "one\n******\ntwo", True, True),
    ("combination:two_responses", {}, "one\n******\none", False, False),
    ("combination:repeat_prompt", {"prompt_to_repeat": "Say hi."}, "Say hi. Hi!", True, True),
    # tinker-cookbook#897: repeat_prompt passed every response. Not repeating fails.
    ("combination:repeat_prompt", {"prompt_to_repeat": "Say hi."}, "Hi!", False, False),
    (
        "startend:end_checker",
        {"end_phrase": "Any other questions?"},
        'Done. Any other questions?"',
        True,
        True,
    ),
    (
        "startend:end_checker",
        {"end_phrase": "Any other questions?"},
        "Any other questions? Done.",
        False,
        False,
    ),
    (
        "change_case:capital_word_frequency",
        {"capital_frequency": 2, "capital_relation": "at least"},
        "NASA and ESA agree",
        True,
        True,
    ),
    (
        "change_case:capital_word_frequency",
        {"capital_frequency": 2, "capital_relation": "at least"},
        "NASA agrees",
        False,
        False,
    ),
    ("change_case:english_capital", {}, LONG_EN.upper(), True, True),
    ("change_case:english_capital", {}, LONG_EN, False, False),
    ("change_case:english_lowercase", {}, LONG_EN.lower(), True, True),
    ("change_case:english_lowercase", {}, LONG_EN, False, False),
    ("punctuation:no_comma", {}, "no commas here", True, True),
    ("punctuation:no_comma", {}, "a, b", False, False),
    ("startend:quotation", {}, '"quoted"', True, True),
    ("startend:quotation", {}, 'not "quoted"', False, False),
    # Loose mode: a first line of chatter, or markdown stars, are forgiven.
    ("startend:quotation", {}, 'Sure:\n"quoted"', False, True),
    ("punctuation:no_comma", {}, "Sure, here:\nno commas", False, True),
    ("detectable_format:title", {}, "Here it is\n<<Joy>>", True, True),
]


@pytest.mark.parametrize(("instruction_id", "kwargs", "response", "strict", "loose"), TABLE)
def test_each_instruction(instruction_id, kwargs, response, strict, loose):
    InstructionsTask(kind="instructions", instruction_id_list=[instruction_id], kwargs=[kwargs])
    assert check_instruction(instruction_id, kwargs, response, loose=False) is strict
    assert check_instruction(instruction_id, kwargs, response, loose=True) is loose


def test_the_table_covers_all_25():
    assert len(INSTRUCTIONS) == 25
    assert set(CHECKS) == set(INSTRUCTIONS)
    assert {row[0] for row in TABLE} == set(INSTRUCTIONS)


def test_an_empty_response_follows_nothing():
    for instruction_id in ("punctuation:no_comma", "keywords:forbidden_words"):
        kwargs = {"forbidden_words": ["x"]} if "forbidden" in instruction_id else {}
        assert check_instruction(instruction_id, kwargs, "   ", loose=True) is False


def test_sentences_by_rule_not_by_punkt():
    assert split_into_sentences("Mr. Smith paid $3.50. He left! Did he? Yes...") == [
        "Mr. Smith paid $3.50.",
        "He left!",
        "Did he?",
        "Yes...",
    ]


def task(ids, kwargs=None):
    return {"kind": "instructions", "instruction_id_list": ids, "kwargs": kwargs or []}


@pytest.mark.parametrize(
    ("bad", "field"),
    [
        # if-verifiable skips an unknown id silently.
        (task(["detectable_format:titel"], [{}]), "instruction_id_list[0]"),
        # Missing arguments: IFEval's build_description draws a random threshold instead.
        (
            task(["length_constraints:number_words"], [{"relation": "at least"}]),
            "kwargs[0].num_words",
        ),
        # tinker-cookbook#897: repeat_prompt without a prompt passed every response.
        (task(["combination:repeat_prompt"], [{}]), "kwargs[0].prompt_to_repeat"),
        (
            task(["combination:repeat_prompt"], [{"prompt_to_repeat": "  "}]),
            "kwargs[0].prompt_to_repeat",
        ),
        (
            task(["length_constraints:number_words"], [{"relation": "at most", "num_words": 5}]),
            "kwargs[0].relation",
        ),
        (
            task(["length_constraints:number_words"], [{"relation": "at least", "num_words": "5"}]),
            "kwargs[0].num_words",
        ),
        (
            task(
                ["length_constraints:number_words"], [{"relation": "at least", "num_words": True}]
            ),
            "kwargs[0].num_words",
        ),
        (
            task(
                ["keywords:letter_frequency"],
                [{"letter": "ab", "let_frequency": 1, "let_relation": "at least"}],
            ),
            "kwargs[0].letter",
        ),
        (task(["language:response_language"], [{"language": "klingon"}]), "kwargs[0].language"),
        (task(["detectable_format:title"], [{"num_words": 3}]), "kwargs[0].num_words"),
        (task(["detectable_format:title", "punctuation:no_comma"], [{}]), "kwargs has 1 entries"),
        (
            task(["punctuation:no_comma", "keywords:existence"], [{}, {"keywords": []}]),
            "kwargs[1].keywords",
        ),
    ],
)
def test_bad_instructions_are_refused_when_the_sample_is_validated(bad, field):
    with pytest.raises(ValidationError) as caught:
        Sample(id="s", response="r", task=bad)
    assert field in str(caught.value)


def test_ifevals_own_rows_validate_as_they_are():
    # The data set's rows carry every argument name, null where it does not apply.
    row = {name: None for spec in INSTRUCTIONS.values() for name in spec}
    words = {**row, "num_words": 300, "relation": "at least"}
    Sample(
        id="s",
        response="r",
        task=task(["length_constraints:number_words", "detectable_format:title"], [words, row]),
    )


def test_repeated_ids_are_each_checked():
    # A peer that keys verdicts by id checks one of two keywords:existence entries.
    followed = follow_instructions(
        response="the river",
        instruction_ids=["keywords:existence", "keywords:existence"],
        kwargs=[{"keywords": ["river"]}, {"keywords": ["lake"]}],
    )
    assert followed["strict"] == [True, False]
    assert score_instructions(followed["strict"], binary=False) == 0.5
    assert score_instructions(followed["strict"], binary=True) == 0.0


def test_no_download_and_no_nltk():
    # Every check runs on installed data: nltk (whose punkt a peer downloads) is never imported.
    code = (
        "import sys\n"
        "from arbiter.graders.instruction_checks import CHECKS, check_instruction\n"
        "from tests.graders.test_instructions import TABLE\n"
        "for i, k, r, _, _ in TABLE:\n"
        "    check_instruction(i, k, r, loose=True)\n"
        "assert 'nltk' not in sys.modules, 'nltk imported'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


def test_the_grader_scores_fraction_binary_strict_and_loose():
    sample = Sample(
        id="s",
        response='Sure:\n"no commas, here"',
        task=InstructionsTask(
            kind="instructions",
            instruction_id_list=[
                "startend:quotation",
                "punctuation:no_comma",
                "detectable_format:title",
            ],
            kwargs=[{}, {}, {}],
        ),
    )
    configs = [
        InstructionsConfig(),
        InstructionsConfig(mode="loose"),
        InstructionsConfig(binary=True),
    ]

    async def go():
        grader = InstructionsGrader(workers=1)
        await grader.warm()
        try:
            return [await grader.grade(sample, c) for c in configs]
        finally:
            grader.close()

    strict, loose, binary = asyncio.run(go())
    assert strict.score == 0.0
    # Loose forgives the first line ("Sure:") and, as IFEval's does, the last one too.
    assert loose.score == pytest.approx(2 / 3)
    assert binary.score == 0.0
    assert loose.details["followed"][0] == ["startend:quotation", True]
