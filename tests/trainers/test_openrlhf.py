"""OpenRLHF's own reward paths (remote URL and ``.py`` file) against a live Arbiter."""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest
from openrlhf.utils.agent import SingleTurnAgentExecutor
from transformers import PreTrainedTokenizerFast

from arbiter.adapters import openrlhf as openrlhf_adapter
from arbiter.client import ArbiterClient
from tests.trainers.conftest import LiveServer, demo_rows, demo_tokenizer


@dataclass
class Params:
    """The two fields of vLLM's SamplingParams that OpenRLHF's executor reads."""

    max_tokens: int | None = 512
    logprobs: int | None = None


@dataclass
class Output:
    token_ids: list[int]
    finish_reason: str = "stop"
    logprobs: Any = None


@dataclass
class Generated:
    outputs: list[Output] = field(default_factory=list)


class ScriptedEngine:
    """Stands in for the vLLM engine (no vLLM on CPU): answers each prompt with a real completion.

    Everything after generation (decoding the query, calling the reward) is OpenRLHF's code.
    """

    def __init__(self, tokenizer: PreTrainedTokenizerFast, answers: dict[str, str]) -> None:
        self.tokenizer = tokenizer
        self.answers = {
            tuple(tokenizer(p, add_special_tokens=False)["input_ids"]): a
            for p, a in answers.items()
        }

    async def generate(self, prompt_token_ids, params, multi_modal_data=None):
        ids = tuple(prompt_token_ids)
        answer = next(a for p, a in self.answers.items() if p[len(p) - len(ids) :] == ids)
        return Generated([Output(self.tokenizer(answer, add_special_tokens=False)["input_ids"])])


@pytest.fixture(scope="module")
def tokenizer() -> PreTrainedTokenizerFast:
    return demo_tokenizer()


def _run(executor, tokenizer, rows, max_length=4096) -> list[dict[str, Any]]:
    """Run OpenRLHF's executor over rows concurrently, as its rollout workers do."""

    # The same prompt appears with several answers: one engine per row.
    async def one(row):
        engine = ScriptedEngine(tokenizer, {row["prompt"]: row["response"]})
        label = json.dumps(row["task"])  # a bare task spec, as the dataset's label column
        return await executor.execute(row["prompt"], label, Params(), max_length, tokenizer, engine)

    async def every():
        return await asyncio.gather(*(one(r) for r in rows))

    return asyncio.run(every())


def _direct(server: LiveServer, rows) -> list[float | None]:
    with ArbiterClient(server.url, server.keys["trainer"]) as client:
        batch = client.rewards(
            [
                {"id": r["id"], "prompt": r["prompt"], "response": r["response"], "task": r["task"]}
                for r in rows
            ],
            "python-codegen",
        )
    return batch.values()


def _credentialed(server: LiveServer, key: str) -> str:
    """The documented ``--reward.remote_url`` value: the key as the URL's password."""
    netloc = urlsplit(server.url).netloc
    return f"http://trainer:{key}@{netloc}/get_reward?rubric=python-codegen&abstain=zero"


def test_remote_url_with_a_credential_in_the_url(live: LiveServer, tokenizer):
    key = live.keys["trainer"]
    # As train_ppo_ray passes --reward.remote_url to the executor (comma-separated list)
    executor = SingleTurnAgentExecutor(remote_rm_url=_credentialed(live, key).split(","))
    rows = demo_rows()
    outputs = _run(executor, tokenizer, rows)
    expected = [0.0 if v is None else v for v in _direct(live, rows)]
    assert [o["reward"] for o in outputs] == [pytest.approx([v]) for v in expected]
    logs = [o["extra_logs"] for o in outputs]
    assert all(set(e) >= {"abstained", "truncated_prompt", "tests"} for e in logs)
    assert [e["truncated_prompt"] for e in logs] == [[0.0]] * len(rows)
    # The key is never written to the server's log
    assert key not in live.log.read_text()


def test_remote_url_recovers_a_truncated_prompt(live: LiveServer, tokenizer):
    executor = SingleTurnAgentExecutor(remote_rm_url=[_credentialed(live, live.keys["trainer"])])
    row = next(r for r in demo_rows() if r["id"] == "dedupe-correct")
    prompt_tokens = len(tokenizer(row["prompt"], add_special_tokens=False)["input_ids"])
    # max_length leaves room for only part of the prompt: OpenRLHF cuts it from the left
    [out] = _run(executor, tokenizer, [row], max_length=512 + prompt_tokens // 2)
    assert out["extra_logs"]["truncated_prompt"] == [1.0]
    assert out["reward"] == [pytest.approx(1.0)]


def test_basic_auth_does_not_weaken_the_header_path(live: LiveServer):
    body = {"query": ["p: x"], "prompts": ["p: "], "labels": [None]}
    url = f"{live.url}/get_reward"
    assert httpx.post(url, json=body).status_code == 401
    assert httpx.post(url, json=body, auth=("trainer", "not-a-key")).status_code == 401
    assert httpx.post(url, json=body, auth=(live.keys["trainer"], "")).status_code == 401
    ok = httpx.post(
        url, json=body, auth=("anyone", live.keys["trainer"]), params={"abstain": "zero"}
    )
    assert ok.status_code == 200


def test_reward_func_file_through_the_executor(adapter_env: LiveServer, tokenizer, monkeypatch):
    monkeypatch.setattr(openrlhf_adapter, "_state", None)
    # OpenRLHF loads the file by path and calls reward_func once per sample, from threads
    executor = SingleTurnAgentExecutor(remote_rm_url=[openrlhf_adapter.__file__])
    rows = demo_rows()
    outputs = _run(executor, tokenizer, rows)
    expected = [0.0 if v is None else v for v in _direct(adapter_env, rows)]
    got = [float(o["reward"][0]) for o in outputs]
    assert got == pytest.approx(expected)
    assert all(float(o["extra_logs"]["truncated_prompt"][0]) == 0.0 for o in outputs)


def test_one_unsplittable_query_does_not_fail_its_batch(live: LiveServer):
    row = next(r for r in demo_rows() if r["id"] == "dedupe-correct")
    body = {
        "query": [
            row["prompt"] + row["response"],
            "nothing in common",
            row["prompt"][40:] + row["response"],
        ],
        "prompts": [row["prompt"]] * 3,
        "labels": [json.dumps(row["task"])] * 3,
    }
    auth = ("trainer", live.keys["trainer"])
    url = f"{live.url}/get_reward"
    zero = httpx.post(url, json=body, auth=auth, params={"abstain": "zero"}, timeout=120)
    assert zero.status_code == 200, zero.text
    answer = zero.json()
    assert answer["rewards"] == pytest.approx([1.0, 0.0, 1.0])
    assert answer["extra_logs"]["unsplittable"] == [0.0, 1.0, 0.0]
    assert answer["extra_logs"]["truncated_prompt"] == [0.0, 0.0, 1.0]
    mean = httpx.post(url, json=body, auth=auth, params={"abstain": "group_mean"}, timeout=120)
    assert mean.json()["rewards"] == pytest.approx([1.0, 1.0, 1.0])  # its group's scored mean
    refused = httpx.post(url, json=body, auth=auth, timeout=120)  # the server's default: raise
    assert refused.status_code == 422 and refused.json()["code"] == "reward_abstained"
    assert refused.json()["errors"][0]["path"] == "query.1"
