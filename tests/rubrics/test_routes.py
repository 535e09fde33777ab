"""A rubric with routes: each sample graded by its route's own components, gates, penalties."""

from __future__ import annotations

import asyncio

import pytest

from arbiter.graders.types import AnswerTask, InstructionsTask, Metrics, Sample
from arbiter.monitoring.drift_input import batch_from_rewards
from arbiter.rubrics import RubricError, parse_rubric, score_samples
from arbiter.rubrics.loader import load_rubric
from arbiter.rubrics.rubric import Route

MIXED = """\
name: mixed
version: 3
routes:
  gsm:
    when: {data_source: [openai/gsm8k]}
    components:
      correct: {grader: answer, weight: 1.0}
    clip: [0.0, 1.0]
  answers:
    when: {kind: [answer]}
    components:
      correct: {grader: answer, weight: 0.9, required: true}
      format: {grader: answer, weight: 0.1, config: {measure: format}}
    penalties:
      - {violation: answer_hedging, penalty: 0.5}
    clip: [-1.0, 1.0]
  ifeval:
    when: {kind: [instructions]}
    components:
      followed: {grader: instructions, config: {binary: true}}
    normalize: group_z
components:
  cost: {grader: efficiency, config: {max_turns: 4}}
"""


def answer(response: str, gold: str, *, data_source: str | None = None, id: str = "a") -> Sample:
    return Sample(
        id=id,
        response=response,
        task=AnswerTask(kind="answer", answer=gold),
        data_source=data_source,
    )


def instructions(response: str, id: str, group: str) -> Sample:
    return Sample(
        id=id,
        group_id=group,
        response=response,
        task=InstructionsTask(
            kind="instructions", instruction_id_list=["punctuation:no_comma"], kwargs=[{}]
        ),
    )


def test_routes_compile_as_rubrics_of_their_own():
    rubric = parse_rubric(MIXED)
    assert [r.name for r in rubric.routes] == ["gsm", "answers", "ifeval"]
    gsm, answers, ifeval = rubric.routes
    assert isinstance(gsm, Route) and gsm.data_sources == frozenset({"openai/gsm8k"})
    assert answers.kinds == frozenset({"answer"})
    assert answers.rubric.name == "mixed.answers" and answers.rubric.version == 3
    assert list(answers.rubric.components) == ["correct", "format"]
    assert ifeval.rubric.spec.normalize == "group_z"


def test_the_first_route_that_matches_takes_the_sample():
    rubric = parse_rubric(MIXED)
    assert rubric.route_for(answer("x", "1", data_source="openai/gsm8k"))[0] == "gsm"
    assert rubric.route_for(answer("x", "1"))[0] == "answers"
    assert rubric.route_for(instructions("x", "i", "g"))[0] == "ifeval"
    route, chosen = rubric.route_for(Sample(id="c", response="x"))
    assert route is None and chosen is rubric


def test_a_route_changes_the_rubrics_address_and_its_defaults_do_not():
    base = parse_rubric(MIXED).sha256
    spelled = MIXED.replace(
        "followed: {grader: instructions, config: {binary: true}}",
        "followed: {grader: instructions, config: {binary: true, mode: strict}}",
    )
    changed = MIXED.replace("{binary: true}", "{binary: false}")
    assert parse_rubric(spelled).sha256 == base
    assert parse_rubric(changed).sha256 != base


@pytest.mark.parametrize(
    ("text", "where", "message"),
    [
        (
            "name: b\nversion: 1\ncomponents: {c: {grader: efficiency, config: {max_turns: 2}}}\n"
            "routes:\n  m:\n    when: {kind: [answr]}\n    components: {a: {grader: answer}}\n",
            ":6:",
            "did you mean 'answer'?",
        ),
        (
            "name: b\nversion: 1\ncomponents: {c: {grader: efficiency, config: {max_turns: 2}}}\n"
            "routes:\n  m:\n    when: {kind: [answer]}\n"
            "    components: {a: {grader: answer, config: {check_timeot_s: 1}}}\n",
            ":7:",
            "routes.m.components.a.config.check_timeot_s",
        ),
        (
            "name: b\nversion: 1\ncomponents: {c: {grader: efficiency, config: {max_turns: 2}}}\n"
            "routes:\n  m:\n    when: {kind: [answer]}\n    components: {a: {grader: answer}}\n"
            "    combine: 'a * b'\n",
            ":8:",
            "unknown component 'b'",
        ),
        (
            "name: b\nversion: 1\ncomponents: {c: {grader: efficiency, config: {max_turns: 2}}}\n"
            "routes:\n  m:\n    when: {}\n    components: {a: {grader: answer}}\n",
            ":6:",
            "a route matches by kind, data_source or both",
        ),
    ],
)
def test_route_errors_point_at_the_rubric_line(text, where, message):
    with pytest.raises(RubricError) as caught:
        parse_rubric(text, source="r.yaml")
    shown = str(caught.value)
    assert f"r.yaml{where}" in shown
    assert message in shown


def test_a_mixed_batch_gets_each_routes_reward_and_streams():
    rubric = parse_rubric(MIXED)
    samples = [
        answer(r"so \boxed{72}", "72", data_source="openai/gsm8k", id="gsm"),
        answer(r"so \boxed{\frac{1}{2}}", "0.5", id="right"),
        answer(r"\boxed{1} \boxed{2}", "1", id="hedge"),
        instructions("no commas here", "i1", "g"),
        instructions("a, b", "i2", "g"),
        Sample(id="code", response="x", metrics=Metrics(turns=2)),
    ]
    rewards = asyncio.run(score_samples(rubric, samples))
    by_id = {r.id: r for r in rewards}
    assert [r.route for r in rewards] == ["gsm", "answers", "answers", "ifeval", "ifeval", None]
    assert by_id["gsm"].reward == 1.0 and by_id["gsm"].rubric.name == "mixed.gsm"
    assert by_id["right"].reward == pytest.approx(1.0)
    # The hedge: 0 in both terms and the route's own penalty.
    assert by_id["hedge"].raw_reward == pytest.approx(-0.5)
    # The ifeval route normalizes its own group (z-scores of 1 and 0).
    assert by_id["i1"].reward > 0 > by_id["i2"].reward
    assert by_id["code"].rubric.name == "mixed" and by_id["code"].reward == 0.5  # 2 of 4 turns
    # Drift streams are kept per route: one batch per route rubric.
    streams = {b.rubric for b in batch_from_rewards(rewards)}
    assert streams == {"mixed", "mixed.gsm", "mixed.answers", "mixed.ifeval"}


@pytest.mark.parametrize("name", ["math-answer", "instruction-following", "mixed-rl"])
def test_the_library_rubrics_load(name):
    from pathlib import Path

    import arbiter.rubrics

    library = Path(arbiter.rubrics.__file__).parent / "library"
    rubric = load_rubric(library / f"{name}.yaml")
    assert rubric.name == name
