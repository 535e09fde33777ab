"""The remote backends against real servers and what real servers answered.

- The LLM judge's OpenAI-compatible backend against ``transformers serve`` (a
  released OpenAI-compatible server that runs on CPU) over a tiny local model,
  and against its answer recorded in ``recordings/`` (with where it came from).
- The vLLM reward backend against vLLM's documented response shapes (no vLLM
  server runs on CPU here; the file says so).
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from arbiter.graders.llm_judge import LLMJudgeConfig, LLMJudgeGrader
from arbiter.graders.types import FailureKind, Sample
from arbiter.reward_models.judge import JudgeClient, OpenAIChatBackend, SamplingParams
from arbiter.reward_models.vllm import VLLMRewardBackend
from tests.reward_models.openai_server import (
    JUDGE_MESSAGES,
    judge_request,
    save_tiny_lm,
    transformers_serve,
)
from tests.reward_models.tiny import build_tokenizer

RECORDINGS = Path(__file__).parent / "recordings"
CONFIG = LLMJudgeConfig(
    criteria=[
        {
            "name": "correctness",
            "description": "Is it right?",
            "levels": [
                {"score": i, "description": f"level {i}", "value": (i - 1) / 4} for i in range(1, 6)
            ],
        }
    ]
)


def recording(name: str) -> dict[str, Any]:
    return json.loads((RECORDINGS / name).read_text())


def shape(value: Any) -> Any:
    """The keys and types of a JSON value, recursively (values themselves vary)."""
    if isinstance(value, dict):
        return {k: shape(v) for k, v in sorted(value.items())}
    if isinstance(value, list):
        return [shape(value[0])] if value else []
    return type(value).__name__


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory):
    root = tmp_path_factory.mktemp("transformers-serve")
    model_dir = save_tiny_lm(root / "tiny-llama")
    with transformers_serve(model_dir, root / "serve.log") as url:
        yield url, str(model_dir)


def test_the_judge_backend_reads_a_real_servers_answer(served) -> None:
    url, model = served
    backend = OpenAIChatBackend(url, model)
    reply = asyncio.run(backend.complete(JUDGE_MESSAGES, SamplingParams(max_tokens=16)))
    assert isinstance(reply.text, str) and reply.text.strip()
    # This server ignores the logprobs request: the backend reports none, and the
    # verdict falls back to the text.
    assert reply.tokens is None


def test_a_real_servers_answer_keeps_the_recorded_shape(served) -> None:
    url, model = served
    live = httpx.post(f"{url}/v1/chat/completions", json=judge_request(model), timeout=120)
    recorded = recording("transformers_serve_chat.json")
    assert live.status_code == recorded["status"] == 200
    assert shape(live.json()) == shape(recorded["response"])


def test_a_random_model_as_judge_is_a_typed_parse_failure_not_a_score(served) -> None:
    # The tiny model's characters never spell a verdict: no score, never a default.
    url, model = served
    grader = LLMJudgeGrader(judges={"default": JudgeClient(OpenAIChatBackend(url, model))})
    sample = Sample(id="s", prompt="What is six times seven?", response="It is 42.")
    result = asyncio.run(grader.grade(sample, CONFIG))
    assert result.score is None and result.failure is not None
    assert result.failure.kind == FailureKind.JUDGE_PARSE_ERROR


def test_the_recorded_transformers_serve_answer_parses() -> None:
    recorded = recording("transformers_serve_chat.json")

    def answer(request: httpx.Request) -> httpx.Response:
        sent = json.loads(request.content)
        assert sent["messages"] == recorded["request"]["messages"]
        return httpx.Response(recorded["status"], json=recorded["response"])

    backend = OpenAIChatBackend("http://judge.test", "tiny", transport=httpx.MockTransport(answer))
    reply = asyncio.run(backend.complete(JUDGE_MESSAGES, SamplingParams(max_tokens=16)))
    assert reply.text == recorded["response"]["choices"][0]["message"]["content"]
    assert reply.tokens is None


@pytest.mark.parametrize("endpoint", ["classify", "pooling"])
def test_the_vllm_backend_reads_vllms_documented_shapes(endpoint: str) -> None:
    documented = recording("vllm_pooling_shapes.json")[endpoint]

    def answer(request: httpx.Request) -> httpx.Response:
        assert request.url.path == f"/{endpoint}"
        assert len(json.loads(request.content)["input"]) == 2
        return httpx.Response(200, json=documented)

    backend = VLLMRewardBackend(
        "http://vllm.test",
        "rm",
        build_tokenizer(),
        endpoint=endpoint,  # type: ignore[arg-type]
        transport=httpx.MockTransport(answer),
    )
    convs = [[{"role": "user", "content": "a"}], [{"role": "user", "content": "b"}]]
    scores = backend.score_batch([backend.encode(c) for c in convs])
    # By index, not position: the documented rows come out of order.
    assert scores == [(0.75,), (-1.25,)]
