"""The stdout comparer (graders/unit_tests.outputs_match) on any output: a verdict, never a crash.

A program's output is the candidate's text: whatever it prints, the comparer must
answer True or False. The properties here hold before and after its exact-integer
rule tightens (an expected integer must then be answered by that integer exactly).
"""

from __future__ import annotations

import pytest
from hypothesis import example, given

from arbiter.graders.unit_tests import outputs_match
from tests.graders.reader_fuzz import TARGETS, fuzz_settings


@fuzz_settings()
@given(TARGETS["unit_tests.outputs_match"].strategy)
@example(("1" * 5000, "1" * 5000 + ".0", 1e-6))  # past int()'s 4,300 digits
@example(("1e99999", "inf", 0.0))
@example(("nan", "nan", 1.0))
@example(("\u0663", "3", 1e-6))  # a digit str.isdigit knows and float() reads
def test_outputs_match_answers_for_any_output(args):
    TARGETS["unit_tests.outputs_match"].check(args)


@pytest.mark.parametrize("mode", ["exact", "whitespace", "float"])
@pytest.mark.parametrize("text", ["", "\n", "5", "a b\r\n", "\x00", "\ud800", "nan", "-0"])
def test_an_output_matches_itself_in_every_mode(mode, text):
    assert outputs_match(text, text, mode) is True


@pytest.mark.parametrize("mode", ["whitespace", "float"])
def test_a_different_token_count_never_matches(mode):
    assert outputs_match("1 2", "1 2 3", mode) is False
