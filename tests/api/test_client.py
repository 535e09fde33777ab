"""The Python client and the trainer adapters, against fake transports and a real server."""

from __future__ import annotations

import asyncio
import json

import httpx
import pytest
import torch

from arbiter.adapters import openrlhf, trl, verl
from arbiter.client import ArbiterClient, ArbiterError, AsyncArbiterClient
from tests.api.conftest import Server

OK = {
    "request_id": "r",
    "rubric": {"name": "x", "version": 1, "sha256": "0" * 64},
    "latency_s": 0.0,
    "rewards": [],
}


def scripted(*answers: httpx.Response) -> tuple[httpx.MockTransport, list[httpx.Request]]:
    seen: list[httpx.Request] = []
    queue = list(answers)

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return queue.pop(0)

    return httpx.MockTransport(handler), seen


def test_retries_429_and_503_honouring_retry_after_with_one_idempotency_key(monkeypatch):
    waits: list[float] = []
    monkeypatch.setattr("arbiter.client.time.sleep", waits.append)
    transport, seen = scripted(
        httpx.Response(429, json={"code": "busy", "message": "m"}, headers={"Retry-After": "2"}),
        httpx.Response(
            503, json={"code": "store_unavailable", "message": "m"}, headers={"Retry-After": "1"}
        ),
        httpx.Response(200, json=OK),
    )
    client = ArbiterClient("http://arbiter", "k", transport=transport)
    batch = client.rewards([{"id": "a", "response": "r"}], "x")
    assert batch.request_id == "r"
    assert waits == [2.0, 1.0]
    keys = {r.headers["idempotency-key"] for r in seen}
    assert len(keys) == 1 and len(seen) == 3
    assert seen[0].headers["authorization"] == "Bearer k"


def test_gives_up_after_max_retries_and_raises_the_error(monkeypatch):
    monkeypatch.setattr("arbiter.client.time.sleep", lambda _s: None)
    busy = [httpx.Response(429, json={"code": "busy", "message": "full"}) for _ in range(3)]
    transport, seen = scripted(*busy)
    client = ArbiterClient("http://arbiter", transport=transport, max_retries=2)
    with pytest.raises(ArbiterError) as info:
        client.rewards([], "x")
    assert info.value.status == 429 and info.value.code == "busy" and len(seen) == 3


def test_other_errors_are_not_retried():
    transport, seen = scripted(
        httpx.Response(422, json={"code": "invalid_request", "message": "samples"})
    )
    with pytest.raises(ArbiterError, match="422 invalid_request"):
        ArbiterClient("http://arbiter", transport=transport).rewards([], "x")
    assert len(seen) == 1


def test_async_client_retries_transport_errors(monkeypatch):
    calls = 0

    def handler(request: httpx.Request) -> httpx.Response:
        nonlocal calls
        calls += 1
        if calls == 1:
            raise httpx.ConnectError("refused", request=request)
        return httpx.Response(200, json=OK)

    async def no_wait(_s: float) -> None:
        return None

    monkeypatch.setattr("arbiter.client.asyncio.sleep", no_wait)

    async def go() -> None:
        async with AsyncArbiterClient(
            "http://arbiter", transport=httpx.MockTransport(handler)
        ) as client:
            batch = await client.rewards([], "x")
            assert batch.rewards == []

    asyncio.run(go())
    assert calls == 2


# -- against the real server ----------------------------------------------------


def test_sync_and_async_clients_against_the_server(server: Server):
    samples = [{"id": f"c{i}", "response": "r", "metrics": {"turns": i}} for i in range(6)]
    with ArbiterClient(server.url, server.keys["trainer"]) as client:
        batch = client.rewards(samples, "efficiency-only", idempotency_key="client-test")
        again = client.rewards(samples, "efficiency-only", idempotency_key="client-test")
    assert [r["id"] for r in batch.rewards] == [s["id"] for s in samples]
    assert again.replayed and again.rewards == batch.rewards

    async def go() -> list[float | None]:
        async with AsyncArbiterClient(server.url, server.keys["trainer"]) as client:
            return (await client.rewards(samples, "efficiency-only")).values()

    assert asyncio.run(go()) == batch.values()


def test_trl_functions_one_per_component_with_weights(server: Server):
    with ArbiterClient(server.url, server.keys["trainer"]) as client:
        functions, weights = trl.reward_functions(client, "slow")
        assert [f.__name__ for f in functions] == ["fast", "nap"]
        assert weights == [0.5, 0.5]
        prompts = ["p1", "p1"]
        completions = [
            [{"role": "assistant", "content": "a"}],
            [{"role": "assistant", "content": "b"}],
        ]
        metrics = [{"turns": 2}, {"turns": 8}]
        fast = functions[0](prompts, completions, metrics=metrics)
        nap = functions[1](prompts, completions, metrics=metrics)
        assert fast == pytest.approx([0.8, 0.2]) and nap == [1.0, 1.0]
        (composite,), (weight,) = trl.reward_functions(client, "grpo", composite=True)
        values = composite(prompts, ["a", "b"], metrics=metrics)
        assert weight == 1.0 and values == pytest.approx([1.0, -1.0])  # group z-scored by prompt


def test_trl_grades_each_batch_once(server: Server):
    with ArbiterClient(server.url, server.keys["trainer"]) as client:
        functions, _ = trl.reward_functions(client, "slow")
        calls = 0
        real = client.rewards

        def counting(*args, **kwargs):
            nonlocal calls
            calls += 1
            return real(*args, **kwargs)

        client.rewards = counting  # type: ignore[method-assign]
        for function in functions:
            function(["p"], ["c"], metrics=[{"turns": 1}])
        assert calls == 1


def test_verl_compute_score_has_the_same_keys_every_call(server: Server, monkeypatch):
    monkeypatch.setenv("ARBITER_URL", server.url)
    monkeypatch.setenv("ARBITER_API_KEY", server.keys["trainer"])
    monkeypatch.setenv("ARBITER_RUBRIC", "efficiency-only")
    monkeypatch.setenv("ARBITER_ABSTAIN", "zero")
    monkeypatch.setattr(verl, "_state", None)
    first = verl.compute_score("gsm8k", "42", "42", {"prompt": "q"})
    second = asyncio.run(verl.compute_score_async("gsm8k", "43", json.dumps({"label": 1})))
    assert set(first) == set(second) == {"score", "abstained", "efficiency"}
    # no usage metrics in these calls: abstained, 0.0 because ARBITER_ABSTAIN says so
    assert first["abstained"] == 1.0 and first["score"] == 0.0


def test_openrlhf_reward_func_returns_tensors(server: Server, monkeypatch):
    monkeypatch.setenv("ARBITER_URL", server.url)
    monkeypatch.setenv("ARBITER_API_KEY", server.keys["trainer"])
    monkeypatch.setenv("ARBITER_RUBRIC", "efficiency-only")
    monkeypatch.setenv("ARBITER_ABSTAIN", "zero")
    monkeypatch.setattr(openrlhf, "_state", None)
    out = openrlhf.reward_func(["q: a", "q: b"], ["q: ", "q: "], ["x", "y"])
    assert isinstance(out["rewards"], torch.Tensor) and out["rewards"].shape == (2,)
    assert set(out["extra_logs"]) == {"abstained", "truncated_prompt", "unsplittable", "efficiency"}
