"""Which fenced blocks make the program: one key, ``code_blocks``, in every grader that reads code.

bandit and radon once spelled it ``code_block``, violations ``which``; rubrics
written so still load, with a warning, and mean the same.
"""

from __future__ import annotations

import logging
import re
from pathlib import Path

import pytest
from pydantic import ValidationError

from arbiter.grader_configs import config_keys
from arbiter.graders.bandit import BanditConfig
from arbiter.graders.radon import RadonConfig
from arbiter.graders.registry import default_registry
from arbiter.graders.violations import ViolationsConfig
from arbiter.rubrics.loader import parse_rubric

REPO = Path(__file__).resolve().parents[2]
SPELLINGS = {"code_block", "code_blocks", "which"}
FORMER = [(BanditConfig, "code_block"), (RadonConfig, "code_block"), (ViolationsConfig, "which")]

RUBRIC = """\
name: static
version: 1
components:
  security:
    grader: bandit
    weight: 0.4
    config: {BLOCK: last, tests: [B101]}
  complexity:
    grader: radon
    weight: 0.3
    config: {BLOCK: last}
  hacks:
    grader: violations
    weight: 0.3
    config: {WHICH: last, suppression_comments: [nosec]}
"""


def test_every_grader_that_picks_code_blocks_calls_the_key_code_blocks():
    keys = {
        grader.name: {k.name for k in config_keys(grader.config_model)} & SPELLINGS
        for grader in default_registry()
    }
    picking = {name: found for name, found in keys.items() if found}
    assert set(picking) >= {"bandit", "radon", "violations", "unit_tests"}
    assert all(found == {"code_blocks"} for found in picking.values()), picking


@pytest.mark.parametrize(("model", "former"), FORMER)
def test_the_former_spelling_gives_the_same_config_and_warns(model, former, caplog):
    with caplog.at_level(logging.WARNING, logger="arbiter.graders"):
        old = model.model_validate({former: "last"})
    assert old == model.model_validate({"code_blocks": "last"})
    assert old.code_blocks == "last"
    assert f"{former!r} is deprecated" in caplog.text
    assert "'code_blocks'" in caplog.text
    assert former not in old.model_dump()  # a rubric's identity hashes one spelling
    with pytest.warns(DeprecationWarning):  # code reading the former attribute still works
        assert getattr(old, former) == "last"


def test_the_current_spelling_does_not_warn(caplog):
    with caplog.at_level(logging.WARNING, logger="arbiter.graders"):
        for model, _ in FORMER:
            model.model_validate({"code_blocks": "last"})
    assert caplog.text == ""


@pytest.mark.parametrize(("model", "former"), FORMER)
def test_both_spellings_at_once_are_refused(model, former):
    with pytest.raises(ValidationError, match="former name of 'code_blocks'"):
        model.model_validate({former: "all", "code_blocks": "last"})


def test_a_rubric_in_the_former_spelling_is_the_same_rubric(caplog):
    with caplog.at_level(logging.WARNING, logger="arbiter.graders"):
        old = parse_rubric(RUBRIC.replace("BLOCK", "code_block").replace("WHICH", "which"))
    new = parse_rubric(RUBRIC.replace("BLOCK", "code_blocks").replace("WHICH", "code_blocks"))
    assert old.sha256 == new.sha256
    assert {n: c.config for n, c in old.components.items()} == {
        n: c.config for n, c in new.components.items()
    }
    assert caplog.text.count("deprecated") == 3


def test_library_rubrics_and_eval_sets_use_the_current_spelling():
    files = [
        *(REPO / "rubrics" / "library").glob("*.y*ml"),
        *(REPO / "eval_sets").rglob("*.y*ml"),
        *(REPO / "eval_sets").rglob("*.jsonl"),
    ]
    assert files
    former = re.compile(r"\b(code_block|which)\b\s*[:=]|\"(code_block|which)\"\s*:")
    offending = [f for f in files if former.search(f.read_text(errors="ignore"))]
    assert offending == []
