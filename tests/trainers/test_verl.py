"""verl's own config and reward loop, scoring through the verl adapter against a live Arbiter."""

from __future__ import annotations

import os
from typing import Any

import numpy as np
import pytest
import torch
import verl
from hydra import compose, initialize_config_dir
from transformers import PreTrainedTokenizerFast
from verl import DataProto
from verl.experimental.reward_loop.reward_loop import RewardLoopWorker

from arbiter.adapters import verl as verl_adapter
from arbiter.client import ArbiterClient
from tests.trainers.conftest import CODEGEN_COMPONENTS, LiveServer, demo_rows, demo_tokenizer

CONFIG_DIR = os.path.join(os.path.dirname(verl.__file__), "trainer", "config")


def _config(overrides: list[str]) -> Any:
    with initialize_config_dir(config_dir=CONFIG_DIR, version_base=None):
        return compose(config_name="ppo_trainer", overrides=overrides)


@pytest.fixture(scope="module")
def tokenizer_dir(tmp_path_factory) -> str:
    """A byte-level BPE saved where verl's worker loads its tokenizer from."""
    path = tmp_path_factory.mktemp("verl-tokenizer")
    demo_tokenizer().save_pretrained(path)
    return str(path)


def _batch(tokenizer_dir: str, rows: list[dict[str, Any]]) -> DataProto:
    """A rollout batch as verl's trainer hands it to the reward loop."""
    tok = PreTrainedTokenizerFast.from_pretrained(tokenizer_dir)
    prompts = [tok(r["prompt"], add_special_tokens=False)["input_ids"] for r in rows]
    responses = [tok(r["response"], add_special_tokens=False)["input_ids"] for r in rows]
    lp, lr = max(map(len, prompts)), max(map(len, responses))
    pad = tok.pad_token_id
    prompt_t = torch.tensor([[pad] * (lp - len(p)) + p for p in prompts])  # left-padded
    response_t = torch.tensor([r + [pad] * (lr - len(r)) for r in responses])  # right-padded
    mask = torch.tensor(
        [
            [0] * (lp - len(p)) + [1] * len(p) + [1] * len(r) + [0] * (lr - len(r))
            for p, r in zip(prompts, responses, strict=True)
        ]
    )
    objects = lambda values: np.array(values, dtype=object)  # noqa: E731
    return DataProto.from_dict(
        tensors={
            "prompts": prompt_t,
            "responses": response_t,
            "attention_mask": mask,
            "input_ids": torch.cat([prompt_t, response_t], dim=1),
        },
        non_tensors={
            "data_source": objects(["codegen"] * len(rows)),
            # A bare task spec as the label, as the TRL adapter accepts it
            "reward_model": objects([{"ground_truth": r["task"]} for r in rows]),
            "extra_info": objects([{"prompt": r["prompt"], "index": r["group_id"]} for r in rows]),
            "uid": objects([r["group_id"] for r in rows]),
        },
    )


@pytest.mark.parametrize("name", ["compute_score_async", "compute_score"])
def test_verl_reward_loop_scores_through_the_adapter(adapter_env: LiveServer, tokenizer_dir, name):
    config = _config(
        [
            "reward.custom_reward_function.path=pkg://arbiter.adapters.verl",
            f"reward.custom_reward_function.name={name}",
            f"actor_rollout_ref.model.path={tokenizer_dir}",
        ]
    )
    verl_adapter.check_config(config)  # the documented key passes
    worker = RewardLoopWorker(config)
    # The composed config made the adapter the scorer verl's reward manager calls.
    assert worker.reward_manager.compute_score.args[0] is getattr(verl_adapter, name)
    rows = demo_rows()
    outputs = worker.loop.run_until_complete(
        worker.compute_score_batch(_batch(tokenizer_dir, rows))
    )

    with ArbiterClient(adapter_env.url, adapter_env.keys["trainer"]) as client:
        direct = client.rewards(
            [
                {
                    "id": r["id"],
                    "prompt": r["prompt"],
                    "response": r["response"],
                    "task": r["task"],
                    "group_id": f"codegen:{r['group_id']}",
                }
                for r in rows
            ],
            "python-codegen",
        )
    scores = [o["reward_score"] for o in outputs]
    expected = [0.0 if v is None else v for v in direct.values()]  # ARBITER_ABSTAIN=zero
    assert scores == pytest.approx(expected)
    extra = [o["reward_extra_info"] for o in outputs]
    assert {k for e in extra for k in e} == {"score", "abstained", *CODEGEN_COMPONENTS}
    by_id = dict(zip([r["id"] for r in rows], scores, strict=True))
    assert by_id["pal-correct-body"] == pytest.approx(
        1.0
    )  # a body-only completion, assembled with its prompt
    assert by_id["pal-hack-exit"] == pytest.approx(-1.0)
    assert by_id["dedupe-buggy-order"] == pytest.approx(0.5)


def test_top_level_custom_reward_function_is_refused_with_the_right_key(tokenizer_dir):
    config = _config(
        [
            "custom_reward_function.path=pkg://arbiter.adapters.verl",
            "custom_reward_function.name=compute_score",
            f"actor_rollout_ref.model.path={tokenizer_dir}",
        ]
    )
    # verl's main_ppo would not read it: its reward loop keeps the default scorer
    assert config.reward.custom_reward_function.path is None
    with pytest.raises(ValueError, match=r"set reward\.custom_reward_function\.path="):
        verl_adapter.check_config(config)


def test_arbiter_reward_manager_passes_uid_and_response_length(
    adapter_env: LiveServer, tokenizer_dir
):
    config = _config(
        [
            "reward.custom_reward_function.path=pkg://arbiter.adapters.verl",
            "reward.custom_reward_function.name=compute_score_async",
            "reward.reward_manager.source=importlib",
            "reward.reward_manager.module.path=pkg://arbiter.adapters.verl_manager",
            "reward.reward_manager.name=ArbiterRewardManager",
            f"actor_rollout_ref.model.path={tokenizer_dir}",
        ]
    )
    worker = RewardLoopWorker(config)
    assert type(worker.reward_manager).__name__ == "ArbiterRewardManager"
    rows = [r for r in demo_rows() if r["group_id"] == "dedupe"]
    data = _batch(tokenizer_dir, rows)
    seen: list[dict[str, Any]] = []
    real = verl_adapter.sample_of

    def recording(*args, **kwargs):
        sample = real(*args, **kwargs)
        seen.append(sample)  # what the adapter sends for verl's call, unchanged
        return sample

    verl_adapter.sample_of = recording  # type: ignore[assignment]
    try:
        worker.loop.run_until_complete(worker.compute_score_batch(data))
    finally:
        verl_adapter.sample_of = real  # type: ignore[assignment]
    tok = PreTrainedTokenizerFast.from_pretrained(tokenizer_dir)
    lengths = {len(tok(r["response"], add_special_tokens=False)["input_ids"]) for r in rows}
    assert {s["group_id"] for s in seen} == {"dedupe"}  # verl's uid is the group
    assert {s["metrics"]["completion_tokens"] for s in seen} == lengths
