"""The adapters' own rules: rows, abstentions, caching, coalescing, retired settings."""

from __future__ import annotations

import asyncio

import pytest

from arbiter.adapters import _common, coalescer, trl, verl
from arbiter.adapters._common import AdapterSettings
from arbiter.client import ArbiterClient
from arbiter.rows import (
    AbstainedError,
    UnsplittableQuery,
    fill_abstained,
    parse_label,
    split_query,
)
from tests.trainers.conftest import LiveServer

TASK = {"kind": "python_function", "tests": ["assert f() == 1"], "entry_point": "f"}


@pytest.mark.parametrize(
    ("query", "prompt", "response", "truncated"),
    [
        ("PROMPT: answer", "PROMPT: ", "answer", False),
        ("MPT: answer", "PROMPT: ", "answer", True),  # cut from the left
        ("\ufffdT: answer", "PROMPT: ", "answer", True),  # cut through a character
        (": PROMPT: answer", ": PROMPT: ", "answer", False),
    ],
)
def test_split_query(query, prompt, response, truncated):
    assert split_query(query, prompt) == (response, truncated)


def test_split_query_takes_the_longest_tail():
    # "ab" and "abab" are both tails of the prompt the query starts with: the longer wins
    assert split_query("ababX", "xxabab") == ("X", True)


def test_unsplittable_query():
    with pytest.raises(UnsplittableQuery, match="does not start with its prompt"):
        split_query("zzz", "abc")


@pytest.mark.parametrize(
    ("label", "fields"),
    [
        (TASK, {"task": TASK}),
        ({"task": TASK, "note": 1}, {"task": TASK, "labels": {"note": 1}}),
        ('{"task": {"kind": "pytest", "tests": "t"}}', {"task": {"kind": "pytest", "tests": "t"}}),
        ('{"kind": "pytest", "tests": "t"}', {"task": {"kind": "pytest", "tests": "t"}}),
        ("42", {"labels": {"label": "42"}}),
        (None, {}),
    ],
)
def test_parse_label(label, fields):
    assert parse_label(label) == fields


def test_fill_abstained_policies():
    values, groups = [1.0, None, 0.5, None], ["a", "a", "b", "c"]
    assert fill_abstained(values, groups, "zero") == [1.0, 0.0, 0.5, 0.0]
    mean = fill_abstained(values, groups, "group_mean")
    assert mean[:3] == [1.0, 1.0, 0.5] and isinstance(mean[3], AbstainedError)  # no peer in c
    raised = fill_abstained(values, groups, "raise")
    assert raised[0] == 1.0 and isinstance(raised[1], AbstainedError)


def test_a_candidates_own_failure_is_never_filled_with_its_groups_mean():
    # Sample 1 looped (its rubric left timeouts unscored); sample 3's judge was down.
    values, groups = [1.0, None, 0.5, None, 1.0], ["a", "a", "a", "a", "b"]
    owners = [None, "candidate", None, "ours", None]
    mean = fill_abstained(values, groups, "group_mean", owners)
    assert mean == [1.0, 0.0, 0.5, 0.75, 1.0]
    assert fill_abstained(values, groups, "zero", owners) == [1.0, 0.0, 0.5, 0.0, 1.0]
    raised = fill_abstained(values, groups, "raise", owners)
    assert isinstance(raised[1], AbstainedError) and isinstance(raised[3], AbstainedError)
    # Without owners (a record logged before they were kept), the policy alone decides.
    assert fill_abstained(values, groups, "group_mean")[1] == 0.75


def test_retired_and_invalid_settings_name_the_right_variable(monkeypatch):
    monkeypatch.setenv("ARBITER_URL", "http://127.0.0.1:1")
    monkeypatch.setenv("ARBITER_RUBRIC", "r")
    monkeypatch.setenv("ARBITER_ABSTAIN_VALUE", "0.0")
    with pytest.raises(RuntimeError, match="set ARBITER_ABSTAIN to zero, group_mean or raise"):
        AdapterSettings.from_env()
    monkeypatch.delenv("ARBITER_ABSTAIN_VALUE")
    monkeypatch.setenv("ARBITER_ABSTAIN", "0")
    with pytest.raises(RuntimeError, match="expected one of zero, group_mean, raise"):
        AdapterSettings.from_env()
    monkeypatch.delenv("ARBITER_ABSTAIN")
    assert AdapterSettings.from_env().abstain == "raise"  # never a silent number by default
    assert AdapterSettings.from_env().retry_budget_s == 60.0  # rides out a 30 s restart
    for bad in ("soon", "-5", "nan", "inf"):
        monkeypatch.setenv("ARBITER_RETRY_BUDGET_S", bad)
        with pytest.raises(RuntimeError, match="ARBITER_RETRY_BUDGET_S"):
            AdapterSettings.from_env()
    monkeypatch.setenv("ARBITER_RETRY_BUDGET_S", "120")
    settings = AdapterSettings.from_env()
    assert settings.retry_budget_s == 120.0
    assert settings.client()._policy.budget_s == 120.0


def test_trl_cache_keys_on_everything_that_changes_the_reward(live: LiveServer):
    """The same text with other metrics is another batch (it used to return the last answer)."""
    with ArbiterClient(live.url, live.keys["trainer"]) as client:
        (efficiency,), _ = trl.reward_functions(client, "efficiency-only")
        short = efficiency(["p"], ["c"], metrics=[{"turns": 4}])
        long = efficiency(["p"], ["c"], metrics=[{"turns": 12}])
        by_ids = efficiency(["p"], ["c"], completion_ids=[[1] * 8192])
    assert short == [1.0] and long == [0.0]
    assert by_ids == [0.0]  # completion_ids became completion_tokens


def test_trl_abstention_is_none_in_every_function(live: LiveServer):
    with ArbiterClient(live.url, live.keys["trainer"]) as client:
        funcs, _ = trl.reward_functions(client, "python-codegen")
        # No task: the required tests component cannot score, the rubric abstains
        outs = {f.__name__: f(["p"], ["```python\nx = 1\n```"]) for f in funcs}
    assert outs == {name: [None] for name in outs}
    assert "penalties" in outs  # penalties abstain too, not 0


def test_verl_abstention_raises_by_default(adapter_env: LiveServer, monkeypatch):
    monkeypatch.setenv("ARBITER_RUBRIC", "efficiency-only")
    monkeypatch.delenv("ARBITER_ABSTAIN")
    monkeypatch.setattr(verl, "_state", None)
    with pytest.raises(AbstainedError, match="abstention fallback is 'raise'"):
        verl.compute_score("src", "answer", None, {"index": 0})  # no metrics: abstains
    monkeypatch.setattr(verl, "_state", None)


def test_concurrent_async_calls_are_coalesced(adapter_env: LiveServer, monkeypatch):
    monkeypatch.setenv("ARBITER_RUBRIC", "efficiency-only")
    monkeypatch.setattr(verl, "_state", None)
    sent: list[int] = []
    real = _common.AsyncArbiterClient.rewards

    async def counting(self, samples, rubric, **kwargs):
        sent.append(len(samples))  # counts the requests; the request itself is real
        return await real(self, samples, rubric, **kwargs)

    monkeypatch.setattr(_common.AsyncArbiterClient, "rewards", counting)

    async def step():
        return await asyncio.gather(
            *(
                verl.compute_score_async("src", f"a{i}", None, {"index": i % 64, "num_turns": 4})
                for i in range(1024)
            )
        )

    scores = asyncio.run(step())
    monkeypatch.setattr(verl, "_state", None)
    assert [s["score"] for s in scores] == [1.0] * 1024
    assert sum(sent) == 1024
    assert len(sent) <= 1024 // 256 + 1  # micro-batches of up to ARBITER_BATCH_MAX, not 1,024


def test_coalescer_rejects_a_bad_window():
    with pytest.raises(ValueError, match="window_s must be >= 0"):
        coalescer.Coalescer(lambda: None, window_s=-1)  # type: ignore[arg-type,return-value]


def test_coalescer_gives_each_caller_its_own_result_or_error():
    batches: list[int] = []

    def make_send():
        async def send(samples):
            batches.append(len(samples))
            return [ValueError(s["id"]) if s["id"] == "bad" else s["id"] for s in samples]

        return send

    pool = coalescer.Coalescer(make_send, window_s=0.01, max_samples=3)
    results = pool.submit_all_sync([{"id": i} for i in ("a", "bad", "c", "d")])
    assert results[0] == "a" and results[2:] == ["c", "d"]
    assert isinstance(results[1], ValueError)
    assert batches == [3, 1]  # the size cap sent the first three at once


def test_coalescer_fails_every_caller_when_the_batch_fails():
    def make_send():
        async def send(samples):
            return []  # a sender that lost its answers: nobody may wait forever

        return send

    pool = coalescer.Coalescer(make_send, window_s=0.0)
    results = pool.submit_all_sync([{"id": "a"}, {"id": "b"}])
    assert all(isinstance(r, RuntimeError) for r in results)
