"""The Python client and the trainer adapters, against fake transports and a real server."""

from __future__ import annotations

import asyncio
import json

import httpx
import pytest
import torch

from arbiter.adapters import openrlhf, trl, verl
from arbiter.client import ArbiterClient, ArbiterError, AsyncArbiterClient, RetryPolicy
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


def test_gives_up_when_the_retry_budget_is_spent_and_raises_the_last_error(monkeypatch):
    monkeypatch.setattr("arbiter.client.time.sleep", lambda _s: None)
    busy = [httpx.Response(429, json={"code": "busy", "message": "full"}) for _ in range(3)]
    transport, seen = scripted(*busy)
    client = ArbiterClient("http://arbiter", transport=transport, retry_budget_s=0)
    with pytest.raises(ArbiterError) as info:
        client.rewards([], "x")
    assert info.value.status == 429 and info.value.code == "busy" and len(seen) == 1


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def failures(policy: RetryPolicy, answer: httpx.Response) -> tuple[list[float], ArbiterError]:
    """Feed ``answer`` to one call until it gives up; return its waits and its error."""
    clock = FakeClock()
    call = policy.start(clock)
    waits: list[float] = []
    with pytest.raises(ArbiterError) as info:
        while True:
            wait = call.wait_before_retry(answer, None)
            assert wait is not None
            waits.append(wait)
            clock.now += wait
    return waits, info.value


def test_waits_grow_exponentially_with_full_jitter_within_the_budget(monkeypatch):
    monkeypatch.setattr("arbiter.client.random.uniform", lambda low, high: high)  # the bounds
    policy = RetryPolicy(budget_s=30.0, backoff_s=0.5, max_backoff_s=4.0)
    down = httpx.Response(503, json={"code": "store_unavailable", "message": "m"})
    waits, error = failures(policy, down)
    assert waits[:5] == [0.5, 1.0, 2.0, 4.0, 4.0]
    assert sum(waits) == pytest.approx(30.0)  # the last wait is cut to the budget's end
    assert error.status == 503
    drawn: list[tuple[float, float]] = []

    def uniform(low: float, high: float) -> float:
        drawn.append((low, high))
        return 0.0

    monkeypatch.setattr("arbiter.client.random.uniform", uniform)
    call = policy.start(FakeClock())
    assert [call.wait_before_retry(down, None) for _ in range(4)] == [0.0] * 4
    assert drawn[:4] == [(0.0, 0.5), (0.0, 1.0), (0.0, 2.0), (0.0, 4.0)]  # full jitter: from 0


def test_retry_after_is_a_floor_and_one_past_the_budget_ends_the_call():
    policy = RetryPolicy(budget_s=10.0, backoff_s=0.01, max_backoff_s=0.01)
    later = httpx.Response(429, json={"code": "busy", "message": "m"}, headers={"Retry-After": "3"})
    waits, error = failures(policy, later)
    assert waits == [3.0, 3.0, 3.0]  # a fourth would start after the budget's end
    assert error.code == "busy"


def test_a_key_in_flight_elsewhere_is_waited_for_as_long_as_a_response():
    policy = RetryPolicy(budget_s=5.0, backoff_s=1.0, max_backoff_s=1.0, in_flight_s=20.0)
    in_flight = httpx.Response(
        409,
        json={"code": "idempotency_key_in_flight", "message": "m"},
        headers={"Retry-After": "1"},
    )
    waits, error = failures(policy, in_flight)
    assert sum(waits) == pytest.approx(20.0) and error.code == "idempotency_key_in_flight"
    other = httpx.Response(409, json={"code": "version_conflict", "message": "m"})
    with pytest.raises(ArbiterError, match="409 version_conflict"):
        policy.start().wait_before_retry(other, None)


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"retry_budget_s": -1}, "budget_s must be a finite number of seconds >= 0"),
        ({"retry_budget_s": float("inf")}, "budget_s must be a finite number"),
        ({"backoff_s": 0}, "backoff_s must be above 0"),
        ({"backoff_s": 2, "max_backoff_s": 1}, "max_backoff_s .1. must be at least backoff_s"),
        ({"timeout_s": 0}, "timeout_s must be a finite number of seconds > 0"),
    ],
)
def test_a_bad_retry_setting_is_a_clear_error(arguments, message):
    with pytest.raises(ValueError, match=message):
        ArbiterClient("http://arbiter", **arguments)


def test_every_attempt_of_a_call_carries_its_one_key_whatever_fails(monkeypatch):
    monkeypatch.setattr("arbiter.client.time.sleep", lambda _s: None)
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        if len(seen) == 1:
            raise httpx.RemoteProtocolError("dropped", request=request)
        if len(seen) == 2:
            return httpx.Response(502, text="bad gateway")
        if len(seen) == 3:
            return httpx.Response(409, json={"code": "idempotency_key_in_flight", "message": "m"})
        return httpx.Response(200, json=OK)

    client = ArbiterClient("http://arbiter", transport=httpx.MockTransport(handler))
    assert client.rewards([{"id": "a", "response": "r"}], "x").request_id == "r"
    assert len(seen) == 4 and len({r.headers["idempotency-key"] for r in seen}) == 1


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
    assert [r.id for r in batch.rewards] == [s["id"] for s in samples]
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
