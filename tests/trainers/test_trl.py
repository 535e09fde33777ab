"""TRL's own GRPOTrainer, two steps, rewarded by a live Arbiter through the TRL adapter."""

from __future__ import annotations

import itertools
from collections import defaultdict
from typing import Any

import pytest
from datasets import Dataset
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import PreTrainedTokenizerFast, Qwen2Config, Qwen2ForCausalLM
from trl import GRPOConfig, GRPOTrainer

from arbiter.adapters import trl as trl_adapter
from arbiter.client import ArbiterClient
from tests.trainers.conftest import CODEGEN_COMPONENTS, LiveServer, demo_rows, score_with_cli

GENERATIONS = 4


def _tokenizer(texts: list[str]) -> PreTrainedTokenizerFast:
    """Train a byte-level BPE here: it decodes every completion back to the same text."""
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=400,
        special_tokens=["<pad>", "<eos>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    tok.train_from_iterator(texts, trainer)
    return PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="<pad>", eos_token="<eos>")


def _run_grpo(tmp_path, funcs, weights, tokenizer, prompts, scripted) -> None:
    model = Qwen2ForCausalLM(
        Qwen2Config(
            vocab_size=len(tokenizer),
            hidden_size=32,
            intermediate_size=64,
            num_hidden_layers=2,
            num_attention_heads=2,
            num_key_value_heads=1,
            max_position_embeddings=2048,
            pad_token_id=tokenizer.pad_token_id,
            eos_token_id=tokenizer.eos_token_id,
        )
    )
    turns = {p: itertools.cycle(scripted[p]) for p in scripted}

    def rollout(batch_prompts: list[str], trainer: Any) -> dict[str, Any]:
        # A random model writes no code: script real completions, as TRL allows.
        prompt_ids, completion_ids, logprobs = [], [], []
        for prompt in batch_prompts:
            ids = tokenizer(prompt, add_special_tokens=False)["input_ids"]
            for _ in range(GENERATIONS if len(batch_prompts) < 8 else 1):
                text = next(turns[prompt])
                completion = tokenizer(text, add_special_tokens=False)["input_ids"]
                prompt_ids.append(ids)
                completion_ids.append(completion)
                logprobs.append([0.0] * len(completion))
        return {"prompt_ids": prompt_ids, "completion_ids": completion_ids, "logprobs": logprobs}

    args = GRPOConfig(
        output_dir=str(tmp_path / "grpo"),
        per_device_train_batch_size=2 * GENERATIONS,
        num_generations=GENERATIONS,
        max_steps=2,
        max_completion_length=1024,
        logging_steps=1,
        learning_rate=1e-4,
        report_to="none",
        use_cpu=True,
        save_strategy="no",
        reward_weights=weights,
        seed=0,
    )
    dataset = Dataset.from_list([{"prompt": p, "task": prompts[p]} for p in prompts])
    trainer = GRPOTrainer(
        model=model,
        reward_funcs=funcs,
        args=args,
        train_dataset=dataset,
        processing_class=tokenizer,
        rollout_func=rollout,
    )
    trainer.train()
    assert trainer.state.global_step == 2


def _spy(func, calls: list[dict[str, Any]]):
    """Record what TRL passed and what the adapter returned (TRL's call, unchanged)."""

    def spied(prompts, completions, **kwargs):
        out = func(prompts, completions, **kwargs)
        calls.append(
            {
                "prompts": list(prompts),
                "completions": list(completions),
                "ids": [list(i) for i in kwargs["completion_ids"]],
                "task": list(kwargs["task"]),
                "out": list(out),
            }
        )
        return out

    spied.__name__ = func.__name__
    return spied


def _setup():
    rows = demo_rows()
    prompts: dict[str, dict[str, Any]] = {}
    scripted: dict[str, list[str]] = defaultdict(list)
    for row in rows:
        prompts.setdefault(row["prompt"], row["task"])
        scripted[row["prompt"]].append(row["response"])
    tokenizer = _tokenizer([r["prompt"] for r in rows] + [r["response"] for r in rows])
    return prompts, dict(scripted), tokenizer


def _cli_rows(call: dict[str, Any], step: int) -> list[dict[str, Any]]:
    return [
        {
            "id": f"step{step}-row{i}",
            "prompt": prompt,
            "response": completion,
            "task": {k: v for k, v in task.items() if v is not None},
            "metrics": {"completion_tokens": len(ids)},
        }
        for i, (prompt, completion, ids, task) in enumerate(
            zip(call["prompts"], call["completions"], call["ids"], call["task"], strict=True)
        )
    ]


@pytest.mark.slow
def test_grpo_with_the_composite_reward_matches_arbiter_score(
    live: LiveServer, tmp_path, monkeypatch
):
    monkeypatch.setenv("TRL_EXPERIMENTAL_SILENCE", "1")
    prompts, scripted, tokenizer = _setup()
    calls: list[dict[str, Any]] = []
    with ArbiterClient(live.url, live.keys["trainer"]) as client:
        funcs, weights = trl_adapter.reward_functions(client, "python-codegen", composite=True)
        _run_grpo(tmp_path, [_spy(funcs[0], calls)], weights, tokenizer, prompts, scripted)
    assert len(calls) == 2  # one call per step, each the whole generation batch
    # TRL decoded exactly the scripted texts
    assert {c for call in calls for c in call["completions"]} <= {
        c for cs in scripted.values() for c in cs
    }
    expected = score_with_cli(
        [r for step, c in enumerate(calls) for r in _cli_rows(c, step)], tmp_path / "cli"
    )
    got = [v for call in calls for v in call["out"]]
    assert got == pytest.approx([e["reward"] for e in expected], abs=1e-9)
    # The scripted set has passes, failures and hacks: the rewards tell them apart.
    seen = {v for call in calls for v in call["out"]}
    assert max(seen) == 1.0 and min(seen) == -1.0


@pytest.mark.slow
def test_grpo_with_one_function_per_component_matches_arbiter_score(
    live: LiveServer, tmp_path, monkeypatch
):
    monkeypatch.setenv("TRL_EXPERIMENTAL_SILENCE", "1")
    prompts, scripted, tokenizer = _setup()
    with ArbiterClient(live.url, live.keys["trainer"]) as client:
        funcs, weights = trl_adapter.reward_functions(client, "python-codegen")
        calls = {f.__name__: [] for f in funcs}
        spied = [_spy(f, calls[f.__name__]) for f in funcs]
        _run_grpo(tmp_path, spied, weights, tokenizer, prompts, scripted)
    assert list(calls) == [*CODEGEN_COMPONENTS, "penalties"]
    assert weights[:6] == [0.55, 0.15, 0.1, 0.05, 0.1, 0.05] and weights[6] == 1.0
    assert all(len(c) == 2 for c in calls.values())  # every function, every step
    expected = score_with_cli(
        [r for step, c in enumerate(calls["tests"]) for r in _cli_rows(c, step)], tmp_path / "cli"
    )
    for name in ("tests", "security", "complexity", "hacks", "efficiency"):
        got = [v for call in calls[name] for v in call["out"]]
        assert got == pytest.approx([e["components"][name]["score"] for e in expected]), name
    got = [v for call in calls["penalties"] for v in call["out"]]
    assert got == pytest.approx([-sum(p["penalty"] for p in e["penalties"]) for e in expected])
    # The reward functions saw TRL's completion_ids, and the penalised hacks show
    assert min(got) < 0
