"""The vLLM backend against an in-memory fake of its /classify and /pooling API."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx
import pytest

from arbiter.reward_models.batcher import BatcherConfig
from arbiter.reward_models.client import RewardModelClient
from arbiter.reward_models.errors import BackendError, BackendUnavailableError
from arbiter.reward_models.vllm import VLLMRewardBackend
from tests.reward_models.tiny import build_tokenizer, text


def fake_score(ids: list[int]) -> float:
    # A deterministic function of the whole sequence, so a score returned to the
    # wrong caller or computed on the wrong tokens shows.
    return sum((i + 1) * t for i, t in enumerate(ids)) % 1000 / 100 - 5.0


class FakeVLLM:
    def __init__(self, endpoint: str = "classify") -> None:
        self.endpoint = endpoint
        self.requests: list[dict[str, Any]] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        self.requests.append(body)
        assert request.url.path == f"/{self.endpoint}"
        assert body["activation"] is False  # raw logits, never a sigmoid
        key = "probs" if self.endpoint == "classify" else "data"
        rows = [
            {"index": i, key: [fake_score(ids)] if key == "probs" else [[fake_score(ids)]]}
            for i, ids in enumerate(body["input"])
        ]
        return httpx.Response(200, json={"object": "list", "data": rows[::-1]})


def conv(i: int) -> list[dict[str, str]]:
    return [
        {"role": "user", "content": text(10 + 7 * i, i)},
        {"role": "assistant", "content": text(5 + 13 * i, 100 + i)},
    ]


@pytest.mark.parametrize("endpoint", ["classify", "pooling"])
def test_concurrent_requests_are_batched_into_one_call_with_raw_scores(endpoint):
    fake = FakeVLLM(endpoint)
    backend = VLLMRewardBackend(
        "http://vllm.test",
        "rm",
        build_tokenizer(),
        endpoint=endpoint,
        transport=httpx.MockTransport(fake),
    )
    client = RewardModelClient(backend, BatcherConfig(max_batch_tokens=100_000, max_wait_ms=20))
    convs = [conv(i) for i in range(10)]

    async def go():
        return await asyncio.gather(*(client.score(c) for c in convs))

    outputs = asyncio.run(go())
    assert len(fake.requests) == 1 and len(fake.requests[0]["input"]) == 10
    for c, out in zip(convs, outputs, strict=True):
        assert out.values == (pytest.approx(fake_score(list(backend.encode(c).ids))),)
    # Same encoding as the local backend: one BOS, sent as ids.
    assert all(ids[0] == 1 and ids[1] != 1 for ids in fake.requests[0]["input"])


@pytest.mark.parametrize(
    ("response", "error"),
    [
        (httpx.Response(503, text="overloaded"), BackendUnavailableError),
        (httpx.Response(429, text="slow down"), BackendUnavailableError),
        (httpx.Response(400, text="bad"), BackendError),
        (httpx.Response(200, text="not json"), BackendError),
        (httpx.Response(200, json={"data": [{"index": 0, "probs": [1.0]}]}), BackendError),
        (
            httpx.Response(
                200,
                json={
                    "data": [{"index": 0, "probs": [1.0, 2.0]}, {"index": 1, "probs": [1.0, 2.0]}]
                },
            ),
            BackendError,
        ),
    ],
)
def test_bad_answers_are_typed_errors(response, error):
    backend = VLLMRewardBackend(
        "http://vllm.test",
        "rm",
        build_tokenizer(),
        transport=httpx.MockTransport(lambda r: response),
    )
    with pytest.raises(error) as caught:
        backend.score_batch([backend.encode(conv(0)), backend.encode(conv(1))])
    assert caught.value.retryable is (error is BackendUnavailableError)


def test_unreachable_server_is_retryable():
    def refuse(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("connection refused", request=request)

    backend = VLLMRewardBackend(
        "http://vllm.test", "rm", build_tokenizer(), transport=httpx.MockTransport(refuse)
    )
    with pytest.raises(BackendUnavailableError):
        backend.score_batch([backend.encode(conv(0))])
