"""The reward_model grader over a real tiny transformers model (and a fake vLLM transport)."""

from __future__ import annotations

import asyncio
import math
from pathlib import Path

import httpx
import jsonschema  # type: ignore[import-untyped]
import pytest
from pydantic import ValidationError
from ruamel.yaml import YAML

from arbiter.graders.registry import default_registry
from arbiter.graders.reward_model import RewardModelConfig, RewardModelGrader, squash, to_messages
from arbiter.graders.runner import GraderJob, run_jobs
from arbiter.graders.types import FailureKind, Sample
from arbiter.reward_models.batcher import BatcherConfig
from arbiter.reward_models.client import RewardModelClient
from arbiter.reward_models.hf import HFRewardModel, HFRewardModelSpec
from arbiter.reward_models.vllm import VLLMRewardBackend
from arbiter.rubrics.json_schema import rubric_json_schema
from arbiter.rubrics.loader import load_rubric
from tests.reward_models.tiny import build_tokenizer, llama_config, save_reward_model, text

LIBRARY = Path(__file__).resolve().parents[2] / "rubrics" / "library"


@pytest.fixture(scope="module")
def reward_model(tmp_path_factory):
    path = save_reward_model(tmp_path_factory.mktemp("rm") / "llama", llama_config())
    return HFRewardModel.load(HFRewardModelSpec(path=str(path), max_length=256))


def grader_for(rm, **batching):
    client = RewardModelClient(rm, BatcherConfig(**({"max_wait_ms": 10} | batching)))
    return RewardModelGrader(models={"default": client}), client


def sample(i: int, group: str | None = None) -> Sample:
    return Sample(
        id=str(i), group_id=group, prompt=text(20 + i, i), response=text(10 + 7 * i, 500 + i)
    )


def grade_all(grader, samples, config):
    jobs = [GraderJob(s, "rm", grader, config, 30.0) for s in samples]
    return asyncio.run(run_jobs(jobs))


def test_score_is_the_squashed_raw_score_and_the_raw_is_kept(reward_model):
    grader, client = grader_for(reward_model)
    config = RewardModelConfig(temperature=0.5)
    samples = [sample(i) for i in range(6)]
    results = grade_all(grader, samples, config)
    for s, r in zip(samples, results, strict=True):
        raw = reward_model.score(to_messages(s))[0]
        assert r.failure is None
        assert math.isclose(r.details["raw"], raw, rel_tol=1e-4, abs_tol=1e-5)
        assert math.isclose(r.score, 1 / (1 + math.exp(-raw / 0.5)), rel_tol=1e-4)
    assert client.stats.batches < len(samples)


def test_group_normalization_is_within_each_group(reward_model):
    grader, _ = grader_for(reward_model)
    config = RewardModelConfig(normalize="group", squash="cdf")
    samples = [sample(i, group="a" if i < 4 else "b") for i in range(7)]
    results = grade_all(grader, samples, config)
    for group in ("a", "b"):
        members = [r for s, r in zip(samples, results, strict=True) if s.group_id == group]
        z = [r.details["normalized"] for r in members]
        raws = [r.details["raw"] for r in members]
        assert abs(sum(z)) < 1e-9
        assert sorted(range(len(z)), key=z.__getitem__) == sorted(
            range(len(raws)), key=raws.__getitem__
        )
        for r in members:
            assert math.isclose(
                r.score, 0.5 * (1 + math.erf(r.details["normalized"] / math.sqrt(2)))
            )


def test_group_normalization_needs_a_group_id(reward_model):
    grader, _ = grader_for(reward_model)
    [result] = grade_all(grader, [sample(0)], RewardModelConfig(normalize="group"))
    assert result.score is None and result.failure.kind == FailureKind.MISSING_INPUT


def test_affine_and_running_normalization(reward_model):
    grader, _ = grader_for(reward_model)
    [r] = grade_all(grader, [sample(1)], RewardModelConfig(normalize="affine", mean=1.0, std=2.0))
    assert math.isclose(r.details["normalized"], (r.details["raw"] - 1.0) / 2.0)
    results = grade_all(
        grader,
        [sample(i) for i in range(4)],
        RewardModelConfig(normalize="running", running_min_count=2),
    )
    assert all(r.score is not None for r in results)


def test_affine_without_statistics_is_refused_at_load():
    with pytest.raises(ValidationError, match="mean and std"):
        RewardModelConfig(normalize="affine", mean=0.0)


@pytest.mark.parametrize(
    ("x", "kwargs", "expected"),
    [
        (0.0, {}, 0.5),
        (2.0, {"temperature": 2.0}, 1 / (1 + math.exp(-1))),
        (-1000.0, {}, 0.0),
        (1000.0, {}, 1.0),
        (0.0, {"squash": "cdf"}, 0.5),
        (1.0, {"squash": "cdf", "center": 1.0}, 0.5),
        (0.0, {"squash": "linear", "low": -2.0, "high": 2.0}, 0.5),
        (9.0, {"squash": "linear", "low": -2.0, "high": 2.0}, 1.0),
    ],
)
def test_squash_table(x, kwargs, expected):
    assert squash(x, RewardModelConfig(**kwargs)) == pytest.approx(expected)


def test_an_unknown_model_is_a_judge_error_not_a_score():
    [r] = grade_all(RewardModelGrader(), [sample(0)], RewardModelConfig(model="nope"))
    assert r.score is None and r.failure.kind == FailureKind.JUDGE_ERROR


def test_an_unreachable_vllm_server_is_a_retryable_judge_error():
    def refuse(request):
        raise httpx.ConnectError("refused", request=request)

    backend = VLLMRewardBackend(
        "http://vllm.test", "rm", build_tokenizer(), transport=httpx.MockTransport(refuse)
    )
    grader = RewardModelGrader(
        models={"default": RewardModelClient(backend, BatcherConfig(max_wait_ms=1))}
    )
    results = grade_all(
        grader, [sample(0, "g"), sample(1, "g")], RewardModelConfig(normalize="group")
    )
    for r in results:
        assert r.score is None
        assert r.failure.kind == FailureKind.JUDGE_ERROR and r.failure.retryable


def test_a_full_queue_is_a_retryable_failure_not_a_hang(reward_model):
    grader, _ = grader_for(reward_model, max_queue=2, max_batch_size=1, max_wait_ms=50)
    results = grade_all(grader, [sample(i) for i in range(8)], RewardModelConfig())
    refused = [r for r in results if r.score is None]
    assert refused and all(
        r.failure.retryable and "QueueFullError" in r.failure.message for r in refused
    )
    assert any(r.score is not None for r in results)


def test_library_rubrics_validate_with_the_judge_graders_registered():
    registry = default_registry()
    assert {"reward_model", "llm_judge"} <= set(registry.names())
    for name in ("chat-judge.yaml", "chat-reward-model.yaml"):
        rubric = load_rubric(LIBRARY / name, registry)
        assert rubric.components
        schema = rubric_json_schema(registry)  # the editor schema accepts them too
        jsonschema.Draft7Validator(schema).validate(
            YAML(typ="safe", pure=True).load((LIBRARY / name).read_text())
        )
