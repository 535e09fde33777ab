"""The client's typed rewards and its reads of the reward log, against a real server."""

from __future__ import annotations

import asyncio
import inspect
import textwrap
from datetime import UTC, datetime, timedelta
from itertools import takewhile
from typing import Any

import httpx
import pytest
from pydantic import ValidationError

from arbiter.client import ArbiterClient, ArbiterError, AsyncArbiterClient, LoggedRewards, Reward
from tests.api.conftest import Server, StartServer

#: The client's example, run as it is written (``test_the_readme_example_runs``).
README_EXAMPLE = r"""
import os

from arbiter.client import ArbiterClient

task = {"kind": "python_function", "tests": ["assert add(2, 3) == 5", "assert add(-1, 1) == 0"]}
samples = [
    {"id": "right", "response": "def add(a, b):\n    return a + b\n", "task": task},
    {"id": "wrong", "response": "def add(a, b):\n    return a - b\n", "task": task},
]
with ArbiterClient(os.environ["ARBITER_URL"], api_key=os.environ["ARBITER_API_KEY"]) as client:
    batch = client.rewards(samples, "python-codegen")
    for r in batch.rewards:
        print(r.id, r.reward, r.components["tests"].score)  # right 1.0 1.0, wrong 0.3125 0.0
    again = client.rewards_for(batch.request_id)  # read back from the log, any time later
    print(again.values() == batch.values(), again.rewards[0].logged_at)
"""

#: Tests, a hack detector with a gate, a penalty: every part of a reward.
TYPED_RUBRIC = """\
name: typed
version: 1
components:
  tests:
    grader: unit_tests
    weight: 0.8
    required: true
    config: {timeout_s: 10, partial_credit: true, fail_as_zero: true}
  hacks: {grader: violations, weight: 0.2}
gates:
  - {when: "hacks < 1", cap: 0.0, description: "No credit for code that games its checks."}
penalties:
  - {violation: early_exit, penalty: 1.0}
clip: [-1.0, 1.0]
"""

TASK = {"kind": "python_function", "tests": ["assert add(2, 3) == 5", "assert add(-1, 1) == 0"]}
#: A pass, an early exit (a violation, its penalty and a gate) and a sample without a task
#: (the required tests cannot run: the rubric abstains).
CODEGEN: list[dict[str, Any]] = [
    {"id": "pass", "response": "def add(a, b):\n    return a + b\n", "task": TASK},
    {
        "id": "exit",
        "response": "import sys\n\ndef add(a, b):\n    sys.exit(0)\n",
        "task": TASK,
    },
    {"id": "no-task", "response": "def add(a, b):\n    return a + b\n"},
]


@pytest.fixture(scope="module")
def server(start_server: StartServer) -> Server:
    return start_server(rubrics={"typed": TYPED_RUBRIC})


def efficiency(ids: list[str]) -> list[dict[str, Any]]:
    return [{"id": i, "response": "done", "metrics": {"turns": 3}} for i in ids]


def test_a_batch_holds_typed_frozen_rewards_with_every_field_the_service_sends(server: Server):
    with ArbiterClient(server.url, server.keys["trainer"]) as client:
        batch = client.rewards(CODEGEN, "typed", idempotency_key="typed")
    with server.client() as http:  # the same answer, replayed, as JSON
        raw = http.post(
            "/v1/rewards",
            json={"rubric": "typed", "samples": CODEGEN},
            headers={"Idempotency-Key": "typed"},
        ).json()
    # Every field is a declared attribute, and nothing is lost on the way.
    assert [r.model_dump(mode="json") for r in batch.rewards] == raw["rewards"]
    assert all(isinstance(r, Reward) and not r.model_extra for r in batch.rewards)
    assert (batch.rubric.name, batch.rubric.version) == ("typed", 1)
    assert batch.rubric.sha256 == raw["rubric"]["sha256"]

    passed, exited, abstained = batch.rewards
    assert passed.id == "pass" and passed.reward == passed.raw_reward
    tests = passed.components["tests"]
    assert (tests.score, tests.weight, tests.required, tests.failure) == (1.0, 0.8, True, None)
    assert tests.grader == "unit_tests" and passed.graders["unit_tests"] == tests.grader_version
    assert passed.rubric == batch.rubric and passed.route is None and passed.group_id is None

    (penalty,) = exited.penalties
    assert (penalty.violation, penalty.penalty) == ("early_exit", 1.0) and penalty.count >= 1
    assert "early_exit" in {v.type for v in exited.components["hacks"].violations}
    assert any(g.cap == 0.0 and g.when == "hacks < 1" and g.reason for g in exited.gates)

    assert abstained.reward is None and abstained.abstained_by == "request"
    assert abstained.abstain_reason and abstained.components["tests"].failure is not None
    assert abstained.components["tests"].failure.kind == "missing_input"

    assert batch.values() == [passed.reward, exited.reward, None]
    assert batch.component("tests") == [1.0, exited.components["tests"].score, None]
    with pytest.raises(ValidationError):
        passed.reward = 0.0  # type: ignore[misc]


def test_fields_a_newer_service_adds_are_kept_and_new_kinds_read():
    reward = {
        "id": "a",
        "reward": None,
        "raw_reward": None,
        "abstained_by": "somebody_new",
        "components": {
            "c": {
                "grader": "g",
                "score": None,
                "weight": 1.0,
                "required": True,
                "failure": {"kind": "a_new_kind", "message": "m", "hint": "h"},
                "violations": [{"type": "a_new_violation", "confidence": 0.5}],
                "cost_usd": 0.01,
            }
        },
        "penalties": [{"violation": "a_new_violation", "count": 1, "penalty": 0.5}],
        "rubric": {"name": "x", "version": 1, "sha256": "0" * 64},
        "graders": {"c": "1"},
        "explanation": "new",
    }
    answer = {
        "request_id": "r",
        "rubric": {"name": "x", "version": 1, "sha256": "0" * 64},
        "latency_s": 0.5,
        "rewards": [reward],
        "trace_id": "t",
    }
    transport = httpx.MockTransport(lambda _request: httpx.Response(200, json=answer))
    with ArbiterClient("http://arbiter", transport=transport) as client:
        batch = client.rewards([{"id": "a", "response": "r"}], "x")
    (got,) = batch.rewards
    assert got.model_extra == {"explanation": "new"} and got.explanation == "new"  # type: ignore[attr-defined]
    component = got.components["c"]
    assert component.failure is not None and component.failure.kind == "a_new_kind"
    assert component.violations[0].type == "a_new_violation" and component.cost_usd == 0.01  # type: ignore[attr-defined]
    assert got.abstained_by == "somebody_new" and got.penalties[0].violation == "a_new_violation"
    assert got.model_dump(mode="json")["components"]["c"]["cost_usd"] == 0.01  # round-trips
    assert batch.latency_s == 0.5


def test_rewards_for_reads_a_request_back_as_it_was_answered(server: Server):
    started = datetime.now(UTC)
    with ArbiterClient(server.url, server.keys["trainer"]) as client:
        batch = client.rewards(efficiency(["back-a", "back-b"]), "efficiency-only")
        page = client.rewards_for(batch.request_id)
    assert isinstance(page, LoggedRewards) and page.next_after_id is None
    assert [e.reward for e in page.rewards] == batch.rewards
    assert page.values() == batch.values() and page.component("efficiency") == batch.component(
        "efficiency"
    )
    first = page.rewards[0]
    assert (first.request_id, first.position, first.sample_id) == (batch.request_id, 0, "back-a")
    assert first.rubric == batch.rubric and first.log_id > 0
    assert first.logged_at.tzinfo is not None and first.logged_at >= started - timedelta(seconds=1)
    assert first.reward.components["efficiency"].score is not None


def test_an_unknown_or_another_keys_request_is_a_404_error(server: Server):
    with ArbiterClient(server.url, server.keys["trainer"]) as client:
        batch = client.rewards(efficiency(["private"]), "efficiency-only")
        with pytest.raises(ArbiterError) as unknown:
            client.rewards_for("f" * 32)
    assert (unknown.value.status, unknown.value.code) == (404, "request_not_found")
    with (
        ArbiterClient(server.url, server.keys["trainer2"]) as other,
        pytest.raises(ArbiterError) as theirs,
    ):
        other.rewards_for(batch.request_id)
    assert (theirs.value.status, theirs.value.code) == (404, "request_not_found")

    async def go() -> ArbiterError:
        async with AsyncArbiterClient(server.url, server.keys["trainer"]) as client:
            with pytest.raises(ArbiterError) as info:
                await client.rewards_for("0" * 32)
        return info.value

    assert asyncio.run(go()).status == 404


def test_logged_rewards_by_sample_rubric_and_time_in_pages(server: Server):
    with ArbiterClient(server.url, server.keys["trainer"]) as client:
        before = datetime.now(UTC)
        first = client.rewards(efficiency(["log-a", "log-b"]), "efficiency-only")
        between = datetime.now(UTC)
        later = client.rewards(efficiency(["log-c"]), "efficiency-only")
        by_sample = client.logged_rewards(sample_id="log-b")
        early = client.logged_rewards(rubric="efficiency-only", since=before, until=between)
        late = client.logged_rewards(since=between, rubric="efficiency-only")
        other_rubric = client.logged_rewards(rubric="grpo", since=before)
        one = client.logged_rewards(since=before, limit=1)
        rest = client.logged_rewards(since=before, after_id=one.next_after_id or 0, limit=1000)
        with pytest.raises(ArbiterError) as too_many:
            client.logged_rewards(limit=10**6)
    assert [(e.request_id, e.position) for e in by_sample.rewards] == [(first.request_id, 1)]
    assert by_sample.rewards[0].reward == first.rewards[1]
    assert [e.sample_id for e in early.rewards] == ["log-a", "log-b"]
    assert [e.sample_id for e in late.rewards] == ["log-c"]
    assert late.rewards[0].reward == later.rewards[0] and other_rubric.rewards == []
    assert len(one.rewards) == 1 and one.next_after_id == one.rewards[0].log_id
    assert rest.next_after_id is None
    assert [e.sample_id for e in one.rewards + rest.rewards] == ["log-a", "log-b", "log-c"]
    assert too_many.value.status == 422

    async def go() -> LoggedRewards:
        async with AsyncArbiterClient(server.url, server.keys["trainer"]) as client:
            page = await client.rewards_for(first.request_id)
            assert page.values() == first.values()
            return await client.logged_rewards(sample_id="log-c", since=before)

    assert [e.reward for e in asyncio.run(go()).rewards] == later.rewards


def test_the_readme_example_runs(server: Server, monkeypatch, capsys):
    monkeypatch.setenv("ARBITER_URL", server.url)
    monkeypatch.setenv("ARBITER_API_KEY", server.keys["trainer"])
    exec(compile(README_EXAMPLE, "README example", "exec"), {})
    lines = capsys.readouterr().out.splitlines()
    assert lines[:2] == ["right 1.0 1.0", "wrong 0.3125 0.0"]
    assert lines[2].startswith("True ") and datetime.fromisoformat(lines[2][5:]).tzinfo is not None


def docstring_example(cls: type, server: Server) -> str:
    """Return the example of ``cls``'s docstring, aimed at ``server``."""
    block = (inspect.getdoc(cls) or "").split("::\n", 1)[1].splitlines()
    code = textwrap.dedent("\n".join(takewhile(lambda s: not s or s.startswith(" "), block)))
    code = code.replace("http://localhost:8000", server.url)
    return code.replace("ak_...", server.keys["trainer"])


@pytest.mark.parametrize("cls", [ArbiterClient, AsyncArbiterClient])
def test_the_docstring_examples_run(server: Server, capsys, cls: type):
    exec(compile(docstring_example(cls, server), f"{cls.__name__} example", "exec"), {})
    out = capsys.readouterr().out.splitlines()
    assert out[0].split()[-1] == "1.0" and out[-1].endswith("True"), out
