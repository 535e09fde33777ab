"""Rubric loading: errors a person can act on, and a content address they can trust."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
from ruamel.yaml import YAML

from arbiter.rubrics import RubricError, load_rubric, parse_rubric
from arbiter.rubrics.json_schema import rubric_json_schema

REPO = Path(__file__).resolve().parents[2]
LIBRARY = sorted((REPO / "rubrics" / "library").glob("*.yaml"))

GOOD = """\
name: demo
version: 2
description: a rubric
components:
  speed:
    grader: efficiency
    weight: 0.7
    config: {max_turns: 8}
  cost:
    grader: efficiency
    weight: 0.3
    config:
      max_completion_tokens: {limit: 4096, target: 512}
combine: weighted_sum
gates: [{when: "speed < 0.5", cap: 0.4}]
penalties: [{violation: early_exit, penalty: 1.0}]
clip: [-1.0, 1.0]
"""


def issues_of(text: str) -> list[str]:
    with pytest.raises(RubricError) as info:
        parse_rubric(text, source="r.yaml")
    return [str(i) for i in info.value.issues]


def test_good_rubric_loads():
    rubric = parse_rubric(GOOD, source="r.yaml")
    assert rubric.name == "demo" and rubric.version == 2
    assert list(rubric.components) == ["speed", "cost"]
    assert len(rubric.sha256) == 64


def test_misspelled_key_on_line_7_names_file_line_path_and_suggestion():
    text = GOOD.replace("    weight: 0.7\n", "    wieght: 0.7\n")
    assert text.splitlines()[6] == "    wieght: 0.7"
    (issue,) = issues_of(text)
    assert issue.startswith("r.yaml:7:5: components.speed.wieght: unknown key 'wieght'")
    assert "did you mean 'weight'?" in issue


def test_misspelled_key_inside_a_grader_config_is_checked_by_that_grader():
    (issue,) = issues_of(GOOD.replace("{max_turns: 8}", "{max_turn: 8}"))
    assert issue.startswith("r.yaml:8:14: components.speed.config.max_turn: unknown key")
    assert "did you mean 'max_turns'?" in issue


def test_misspelled_config_key_is_one_error_not_two():
    text = GOOD.replace("    config: {max_turns: 8}\n", "    confg: {max_turns: 8}\n")
    (issue,) = issues_of(text)
    assert issue.startswith("r.yaml:8:5: components.speed.confg: unknown key 'confg'")
    assert "did you mean 'config'?" in issue


def test_grader_config_left_out_is_checked_as_empty():
    text = GOOD.replace("    config: {max_turns: 8}\n", "")
    (issue,) = issues_of(text)
    assert issue.startswith("r.yaml:5:3: components.speed.config: set at least one budget")
    assert issue.endswith("found nothing (the key is left out)")


def test_formula_with_unknown_component_points_into_the_formula():
    text = GOOD.replace("combine: weighted_sum", 'combine: "speed * (0.5 + csot)"')
    (issue,) = issues_of(text)
    # line 14: the quote is at column 10, the formula starts at 11, `csot` is 15 further
    assert issue.startswith("r.yaml:14:26: combine: in formula 'speed * (0.5 + csot)'")
    assert "unknown component 'csot'" in issue and "did you mean 'cost'?" in issue


def test_gate_condition_is_checked_too():
    (issue,) = issues_of(GOOD.replace("speed < 0.5", "sped < 0.5"))
    assert issue.startswith("r.yaml:15:")
    assert "gates[0].when" in issue and "did you mean 'speed'?" in issue


@pytest.mark.parametrize(
    ("old", "new", "fragment"),
    [
        (
            "grader: efficiency\n    weight: 0.7",
            "grader: efficency\n    weight: 0.7",
            "unknown grader 'efficency'",
        ),
        ("weight: 0.7", "weight: .nan", "components.speed.weight: expected a finite number"),
        ("weight: 0.7", "weight: .inf", "components.speed.weight: expected a finite number"),
        (
            "weight: 0.7",
            "weight: -0.7",
            "components.speed.weight: expected greater than or equal to 0",
        ),
        ("version: 2", "version: two", "version: expected a valid integer"),
        ("version: 2", "version: 2.5", "version: expected a valid integer"),
        ("clip: [-1.0, 1.0]", "clip: [1.0, -1.0]", "clip: expected [low, high] with low < high"),
        ("violation: early_exit", "violation: early_exti", "did you mean 'early_exit'?"),
        (
            "combine: weighted_sum",
            "combine: weighted_sum\non_missing: skip",
            "on_missing: expected one of",
        ),
        (
            "{max_turns: 8}",
            "{max_turns: {limit: 4, target: 8}}",
            "target (8) must be below limit (4)",
        ),
        ("{max_turns: 8}", "{shape: linear}", "set at least one budget"),
    ],
)
def test_bad_values_are_rejected_at_load(old, new, fragment):
    text = GOOD.replace(old, new, 1)
    assert text != GOOD
    issues = issues_of(text)
    assert any(fragment in i for i in issues), issues
    assert all(i.startswith("r.yaml:") and i.split(":")[1].isdigit() for i in issues)


def test_duplicate_component_is_rejected_with_its_line():
    text = GOOD.replace("  cost:\n", "  speed:\n")
    (issue,) = issues_of(text)
    assert issue.startswith("r.yaml:9:") and "duplicate key" in issue and "speed" in issue


def test_every_problem_is_listed_not_just_the_first():
    text = (
        GOOD.replace("    weight: 0.7\n", "    wieght: 0.7\n")
        .replace("weighted_sum", "speed + nope")
        .replace("early_exit", "nonsense")
    )
    issues = issues_of(text)
    assert len(issues) == 3
    assert [int(i.split(":")[1]) for i in issues] == sorted(int(i.split(":")[1]) for i in issues)


def test_renormalize_needs_a_weighted_sum():
    issues = issues_of(
        GOOD.replace("combine: weighted_sum", "combine: speed * cost\non_missing: renormalize")
    )
    assert any("on_missing" in i and "renormalize" in i for i in issues)


DROPPABLE = """\
name: codegen
version: 1
components:
  tests:
    grader: unit_tests
    weight: 0.7
    config: {timeout_s: 5, fail_as_zero: false}
  speed:
    grader: efficiency
    weight: 0.3
    config: {max_turns: 8}
on_missing: renormalize
"""


def test_a_candidate_cannot_be_paid_to_drop_its_tests_from_a_renormalized_sum():
    # Unscored on a timeout, the tests' weight would go to `speed`: a looper
    # would earn the whole reward that failing its tests should have cost it.
    (issue,) = issues_of(DROPPABLE)
    assert issue.startswith("r.yaml:4:3: components.tests: under on_missing: renormalize"), issue
    assert "'speed'" in issue and "fail_as_zero: true" in issue and "required: true" in issue


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("fail_as_zero: false", "fail_as_zero: true"),
        ("config: {timeout_s: 5, fail_as_zero: false}", "config: {timeout_s: 5}"),
        ("    weight: 0.7\n", "    weight: 0.7\n    required: true\n"),
        ("on_missing: renormalize", "on_missing: abstain"),
        ("on_missing: renormalize", "on_missing: zero"),
        ("    weight: 0.3\n", "    weight: 0\n"),
    ],
    ids=[
        "fail_as_zero",
        "fail_as_zero_by_default",
        "required",
        "abstain",
        "zero",
        "nothing_else_weighted",
    ],
)
def test_a_tests_component_that_cannot_be_dropped_for_gain_loads(old, new):
    text = DROPPABLE.replace(old, new, 1)
    assert text != DROPPABLE
    assert parse_rubric(text, source="r.yaml").name == "codegen"


def test_all_zero_weights_are_rejected():
    issues = issues_of(GOOD.replace("weight: 0.7", "weight: 0").replace("weight: 0.3", "weight: 0"))
    assert any("at least one component with a weight above 0" in i for i in issues)


def test_reserved_component_name_is_rejected():
    issues = issues_of(GOOD.replace("  cost:\n", "  max:\n"))
    assert any("components.max" in i and "reserved" in i for i in issues)


@pytest.mark.parametrize("text", ["", "- a\n- b\n", "name: [unclosed\n"])
def test_documents_that_are_not_rubrics(text):
    issues = issues_of(text)
    assert issues and all(i.startswith("r.yaml") for i in issues)


def test_identity_ignores_comments_key_order_quoting_and_spelled_out_defaults():
    base = parse_rubric(GOOD).sha256
    reordered = """\
# a comment that changes nothing
version: 2
name: "demo"
description: a rubric
clip: [-1, 1]
penalties: [{penalty: 1, violation: early_exit, per_occurrence: false}]
gates: [{cap: 0.4, when: "speed < 0.5"}]
components:
  speed: {config: {max_turns: 8}, weight: 0.7, grader: efficiency, required: false}
  cost:
    weight: 0.3
    grader: efficiency
    config:
      max_completion_tokens: {target: 512, limit: 4096}  # trailing comment
      shape: linear
on_missing: abstain
"""
    assert parse_rubric(reordered).sha256 == base


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("weight: 0.7", "weight: 0.71"),
        ("{max_turns: 8}", "{max_turns: 9}"),
        ("cap: 0.4", "cap: 0.5"),
    ],
)
def test_identity_changes_when_the_reward_can(old, new):
    assert parse_rubric(GOOD.replace(old, new)).sha256 != parse_rubric(GOOD).sha256


@pytest.mark.parametrize("path", LIBRARY, ids=lambda p: p.name)
def test_library_rubrics_load(path):
    rubric = load_rubric(path)
    assert rubric.name and rubric.components


def test_library_is_not_empty():
    assert any(p.name == "efficiency.yaml" for p in LIBRARY)


def _yaml(path: Path) -> object:
    return YAML(typ="safe", pure=True).load(path.read_text())


@pytest.mark.parametrize("path", LIBRARY, ids=lambda p: p.name)
def test_json_schema_accepts_library_rubrics(path):
    schema = rubric_json_schema()
    jsonschema.Draft7Validator.check_schema(schema)
    jsonschema.Draft7Validator(schema).validate(_yaml(path))


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("    weight: 0.7\n", "    wieght: 0.7\n"),
        ("{max_turns: 8}", "{max_turn: 8}"),
        ("grader: efficiency", "grader: efficency"),
        ("version: 2", "version: two"),
        ("early_exit", "early_exti"),
        ("weight: 0.7", 'weight: "0.7"'),
        ("version: 2", 'version: "2"'),
        ("cap: 0.4", 'cap: "0.4"'),
        ("clip: [-1.0, 1.0]", "clip: [-1.0, 1.0]\nreview: {stratify_by: [decile]}"),
        ("clip: [-1.0, 1.0]", 'clip: [-1.0, 1.0]\nreview: {show_scores: "yes"}'),
        ("{max_turns: 8}", '{max_turns: "8"}'),
    ],
)
def test_json_schema_rejects_what_the_loader_rejects(old, new):
    with pytest.raises(RubricError):
        parse_rubric(GOOD.replace(old, new, 1), source="r.yaml")
    doc = YAML(typ="safe", pure=True).load(GOOD.replace(old, new, 1))
    validator = jsonschema.Draft7Validator(rubric_json_schema())
    assert list(validator.iter_errors(doc))
    assert not list(validator.iter_errors(YAML(typ="safe", pure=True).load(GOOD)))


def test_committed_schema_file_is_current():
    committed = json.loads((REPO / "rubric.schema.json").read_text())
    assert committed == rubric_json_schema(), (
        "regenerate: arbiter rubric schema -o rubric.schema.json"
    )


def test_identity_is_the_same_in_every_process():
    # Grader configs hold sets (process, violations); dumped in iteration order
    # they made the sha256 depend on PYTHONHASHSEED.
    import os
    import subprocess
    import sys

    script = (
        "import sys; from rubrics import load_rubric; "
        "print([load_rubric(p).sha256 for p in sys.argv[1:]])"
    )
    paths = [str(p) for p in LIBRARY]
    runs = {
        subprocess.run(
            [sys.executable, "-c", script, *paths],
            env={**os.environ, "PYTHONHASHSEED": seed},
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        for seed in ("1", "2", "3")
    }
    assert len(runs) == 1


def test_a_string_where_the_schema_says_number_is_an_error():
    (issue,) = issues_of(GOOD.replace("weight: 0.7", 'weight: "0.1"'))
    assert issue.startswith("r.yaml:7:13: components.speed.weight: expected a valid number")
    assert issue.endswith("found value '0.1'")


def test_a_misspelled_key_does_not_hide_the_same_components_config_errors():
    text = GOOD.replace("    weight: 0.7\n", "    wieght: 0.7\n").replace(
        "{max_turns: 8}", "{max_turn: 8}"
    )
    issues = issues_of(text)
    assert len(issues) == 2, issues
    assert issues[0].startswith("r.yaml:7:5: components.speed.wieght: unknown key 'wieght'")
    assert issues[1].startswith("r.yaml:8:14: components.speed.config.max_turn: unknown key")


def test_a_tab_is_reported_at_its_line_and_the_rest_is_still_checked():
    text = GOOD.replace("    weight: 0.3\n", "\t\tweight: 0.3\n").replace(
        "{max_turns: 8}", "{max_turn: 8}"
    )
    assert text.splitlines()[10] == "\t\tweight: 0.3"
    issues = issues_of(text)
    assert len(issues) == 2, issues
    assert issues[0].startswith("r.yaml:8:14: components.speed.config.max_turn: unknown key")
    assert issues[1].startswith("r.yaml:11:1: (document): a tab character in the indentation")


def test_a_tab_alone_is_still_an_error():
    (issue,) = issues_of(GOOD.replace("    weight: 0.3\n", "\t\tweight: 0.3\n"))
    assert issue.startswith("r.yaml:11:1:") and "tab" in issue


def test_review_strata_are_checked_with_a_suggestion():
    text = GOOD + "review: {sample_rate: 0.1, stratify_by: [reward_decile, disagrement]}\n"
    (issue,) = issues_of(text)
    assert issue.startswith("r.yaml:18:")
    assert "review.stratify_by[1]: expected one of: reward_decile, disagreement" in issue
    assert "did you mean 'disagreement'?" in issue


def test_review_may_choose_blind_or_open_review():
    rubric = parse_rubric(GOOD + "review: {show_scores: true}\n", source="r.yaml")
    assert rubric.spec.review.show_scores is True
    assert parse_rubric(GOOD, source="r.yaml").spec.review.show_scores is None


def _laughs(levels: int) -> str:
    lines = ["l0: &l0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"l{i}: &l{i} [" + ", ".join([f"*l{i - 1}"] * 10) + "]" for i in range(1, levels)]
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize(
    ("tail", "match"),
    [
        (_laughs(9), "once aliases are expanded"),
        ("x: " + "[" * 5_000 + "]" * 5_000 + "\n", "line 5 has 10,003 characters"),
        ("x: " + "[" * 33 + "]" * 33 + "\n", "nested deeper than 32"),
        ("x:\n" + "".join("  " * (i + 1) + f"k{i}:\n" for i in range(40)), "nested deeper than 32"),
        ("".join(f"a{i}: &a{i} 1\nb{i}: *a{i}\n" for i in range(101)), "more than 100 aliases"),
        # An integer past Python's 4,300 digits: a line past the limit before that.
        ("x: " + "9" * 5_000 + "\n", "the limit is 4,000"),
        # Refused on its size alone, before the YAML reader spends seconds on it.
        ("x: " + " + ".join(["0.0001 * tests"] * 20_000) + "\n", "the limit is 65,536"),
        ("".join(f"k{i}: 1\n" for i in range(6_000)), "more than 2000 values"),
    ],
)
def test_documents_over_the_budget_are_a_rubric_error(tail, match):
    text = "name: big\nversion: 1\ncomponents:\n  e: {grader: efficiency}\n" + tail
    with pytest.raises(RubricError, match=match):
        parse_rubric(text)


def test_a_version_beyond_32_bits_is_refused():
    text = "name: big\nversion: 2147483648\ncomponents:\n  e: {grader: efficiency}\n"
    with pytest.raises(RubricError, match="less than or equal to 2147483647"):
        parse_rubric(text)
