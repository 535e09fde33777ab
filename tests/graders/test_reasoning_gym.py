"""The reasoning_gym grader: the package's own scorer per dataset, the entry validated."""

from __future__ import annotations

import asyncio
import json

import pytest
from pydantic import ValidationError

from arbiter.graders.gym_datasets import DATASETS
from arbiter.graders.reasoning_gym import (
    ReasoningGymConfig,
    ReasoningGymGrader,
    extract_gym_answer,
)
from arbiter.graders.types import FailureKind, ReasoningGymTask, Sample, ViolationType

reasoning_gym = pytest.importorskip("reasoning_gym")


def test_the_dataset_list_is_the_pinned_releases():
    from reasoning_gym.factory import DATASETS as REGISTERED

    assert set(REGISTERED) == DATASETS


def entry_of(name: str, index: int = 0, seed: int = 3) -> dict:
    dataset = reasoning_gym.create_dataset(name, size=index + 1, seed=seed)
    # Through JSON, as a trainer sends it.
    return json.loads(json.dumps(dataset[index]))


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ({"answer": "1", "metadata": {"source_dataset": "gcd"}}, "entry.question"),
        ({"question": "q", "metadata": {"source_dataset": "gcd"}}, "entry.answer"),
        ({"question": "q", "answer": "1"}, "entry.metadata"),
        ({"question": "q", "answer": "1", "metadata": {"source_dataset": "gdc"}}, "gdc"),
        ({"question": "q", "answer": "1", "metadata": {}}, "source_dataset"),
    ],
)
def test_a_bad_entry_is_refused_when_the_sample_is_validated(entry, message):
    with pytest.raises(ValidationError) as caught:
        Sample(id="s", response="r", task={"kind": "reasoning_gym", "entry": entry})
    assert message in str(caught.value)


def test_extraction():
    assert extract_gym_answer("<answer> 5 </answer> x <answer>6</answer>", "answer_tag") == "6"
    assert extract_gym_answer("no tag", "answer_tag") is None
    assert extract_gym_answer(r"\boxed{7}", "boxed") == "7"
    assert extract_gym_answer("  8 ", "none") == "8"


@pytest.fixture(scope="module")
def grade():
    # One grader and one loop for the module: each worker imports reasoning-gym once.
    loop = asyncio.new_event_loop()
    grader = ReasoningGymGrader(workers=2)
    loop.run_until_complete(grader.warm())

    def run(samples, config=None):
        async def go():
            return [await grader.grade(s, config or ReasoningGymConfig()) for s in samples]

        return loop.run_until_complete(go())

    yield run
    grader.close()
    loop.close()


def sample(entry: dict, response: str) -> Sample:
    return Sample(
        id="s", response=response, task=ReasoningGymTask(kind="reasoning_gym", entry=entry)
    )


@pytest.mark.parametrize("name", ["gcd", "spell_backward", "basic_arithmetic", "word_sorting"])
def test_scores_equal_the_packages_own(grade, name):
    from reasoning_gym.utils import extract_answer

    entry = entry_of(name)
    responses = [
        f"<answer>{entry['answer']}</answer>",
        f"<answer>it is {entry['answer']} I think</answer>",
        "<answer>nothing</answer>",
        "no tag at all",
    ]
    scorer = reasoning_gym.get_score_answer_fn(name)
    expected = []
    for response in responses:
        try:
            expected.append(float(scorer(answer=extract_answer(response), entry=entry)))
        except ValueError:
            expected.append(0.0)  # the package raises on some wrong answers; ours is the 0
    results = grade([sample(entry, r) for r in responses])
    assert [r.score for r in results] == pytest.approx(expected)
    assert results[0].score == 1.0


def test_binary_turns_padding_credit_off(grade):
    entry = entry_of("spell_backward")
    padded = sample(entry, f"<answer>{entry['answer']} and more words</answer>")
    (partial,) = grade([padded])
    (binary,) = grade([padded], ReasoningGymConfig(binary=True))
    assert 0.0 < partial.score < 1.0  # reasoning-gym's len(oracle) / len(answer)
    assert binary.score == 0.0


def test_an_unclosed_think_block_is_zero_with_its_violation(grade):
    entry = entry_of("gcd")
    (result,) = grade([sample(entry, f"<think><answer>{entry['answer']}</answer>")])
    assert result.score == 0.0
    assert [v.type for v in result.violations] == [ViolationType.UNCLOSED_THINKING]


def test_a_dataset_whose_scorer_cannot_be_built_is_the_tasks(grade):
    # composite needs a config naming its datasets: its scorer cannot be built alone.
    entry = {"question": "q", "answer": "1", "metadata": {"source_dataset": "composite"}}
    (result,) = grade([sample(entry, "<answer>1</answer>")])
    assert result.score is None
    assert result.failure is not None and result.failure.kind == FailureKind.INVALID_TASK
