"""What the review page says of a component: guidance from the rubric, findings in brief."""

from __future__ import annotations

from arbiter.api.review_view import (
    component_summary,
    measured_facts,
    reward_summary,
    rubric_guidance,
)
from arbiter.monitoring.agreement import pass_threshold
from arbiter.rubrics.loader import parse_rubric

RUBRIC = """\
name: viewed
version: 1
components:
  eff:
    grader: efficiency
    config: {max_turns: 8, max_completion_tokens: {limit: 4096, target: 1024}}
  cx: {grader: radon, description: Readable code., config: {max_cyclomatic: 4}}
  odd: {grader: efficiency, config: {max_wall_s: 30}}
"""


def test_guidance_states_the_rubrics_own_thresholds() -> None:
    guidance = rubric_guidance(parse_rubric(RUBRIC))
    assert "turns at most 8" in guidance["eff"]
    assert "completion_tokens at most 4096 (full credit up to 1024)" in guidance["eff"]
    assert guidance["cx"].startswith("Readable code. Pass:")
    assert "fine up to 4, worst at 12" in guidance["cx"]
    assert "wall_s at most 30" in guidance["odd"]


def test_a_tests_summary_counts_passes_and_names_each_failing_test() -> None:
    summary = component_summary(
        {
            "score": 0.5,
            "weight": 0.7,
            "grader": "unit_tests",
            "details": {
                "passed": 1,
                "total": 2,
                "sandbox": {"exit_code": 0},
                "tests": [
                    {"line": 1, "source": "assert f(1) == 1", "outcome": "passed"},
                    {"line": 2, "source": "assert f(2) == 4", "outcome": "failed", "error": "3"},
                ],
            },
        }
    )
    assert summary["facts"] == ["1 of 2 tests passed", "line 2: assert f(2) == 4 -> failed: 3"]
    assert summary["failure"] is None and summary["violations"] == []


def test_findings_and_violations_keep_their_line_and_snippet() -> None:
    summary = component_summary(
        {
            "score": 0.3,
            "weight": 0.1,
            "grader": "bandit",
            "violations": [{"type": "subprocess", "detail": "d", "line": 1, "snippet": "import x"}],
            "details": {
                "findings_total": 1,
                "findings": [
                    {
                        "test_id": "B602",
                        "severity": "HIGH",
                        "text": "shell",
                        "line": 4,
                        "snippet": "call(c, shell=True)",
                    }
                ],
            },
        }
    )
    assert summary["violations"] == [
        {"type": "subprocess", "detail": "d", "line": 1, "snippet": "import x"},
        {"type": "B602 HIGH", "detail": "shell", "line": 4, "snippet": "call(c, shell=True)"},
    ]
    assert summary["facts"] == ["1 finding(s) in the code"]


def test_budget_terms_a_failure_and_an_unknown_grader() -> None:
    terms = component_summary(
        {"score": 0.0, "details": {"terms": {"turns": {"usage": 9, "limit": 5.0, "score": 0.0}}}}
    )
    assert terms["facts"] == ["turns 9 (limit 5) -> 0"]
    failed = component_summary(
        {"score": None, "failure": {"kind": "timeout", "message": "10 s"}, "details": {}}
    )
    assert failed["failure"] == "timeout: 10 s"
    odd = component_summary({"score": 1.0, "details": {"label": "ok", "nested": {"a": 1}}})
    assert odd["facts"] == ["label: ok"]


def test_the_reward_summary_says_why_and_how_it_was_capped() -> None:
    record = {
        "reward": 0.5,
        "raw_reward": 0.5,
        "gates": [{"when": "tests < 1", "cap": 0.5, "floor": None}],
        "penalties": [{"violation": "subprocess", "count": 1, "penalty": 0.25}],
        "components": {},
    }
    summary = reward_summary(record, "disagreement", 0.1)
    assert summary["gates"] == ["tests < 1 -> cap 0.5"]
    assert summary["penalties"] == ["subprocess x1 -> -0.25"]
    assert (summary["reason"], summary["inclusion_probability"]) == ("disagreement", 0.1)


def test_blind_review_still_shows_measured_facts_that_are_not_verdicts() -> None:
    # Issue 27: complexity could not be judged blind without computing radon by hand.
    rubric = parse_rubric(RUBRIC)
    code = "```python\ndef f(x):\n    if x and x > 1:\n        return 1\n    return 0\n```\n"
    sample = {"response": code, "metrics": {"turns": 9, "completion_tokens": 5000}}
    facts = measured_facts(rubric, sample)
    assert "f (line 1): cyclomatic complexity 3" in facts["cx"]
    assert any(f.startswith("maintainability index ") for f in facts["cx"])
    assert facts["eff"] == [
        "turns 9 of 8: over budget",
        "completion_tokens 5000 of 4096: over budget",
    ]
    assert facts["odd"] == ["wall_s: not reported by the rollout (budget 30)"]
    assert measured_facts(rubric, {"response": "no code here", "metrics": {}})["cx"] == [
        "no code in the response"
    ]
    assert measured_facts(rubric, None) == {}
    # Facts, not verdicts: nothing the graders said.
    assert not any("score" in f for fs in facts.values() for f in fs)


def test_guidance_states_the_pass_threshold_agreement_uses() -> None:
    guidance = rubric_guidance(parse_rubric(RUBRIC))
    assert guidance["cx"].endswith("pass only at full marks (1 of 1).")
    assert guidance["eff"].endswith("pass at 0.5 or more (of 1).")
    assert pass_threshold("bandit") == 0.8 and pass_threshold("unit_tests") == 1.0
    assert pass_threshold("some_plugin") == 0.5
