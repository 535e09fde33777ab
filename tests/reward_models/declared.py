"""Models for models-file tests: a seeded reward model and a judge that always writes a verdict.

Both are built locally from configs with random weights and a fixed seed, never
downloaded. The judge is the tiny Llama of :mod:`tests.reward_models.tiny` with
its weights set so that greedy decoding writes one added token, ``[RESULT] k``,
again and again: a real causal LM that a real server (``transformers serve``)
runs, whose verdict is known in advance.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import torch
from tokenizers import AddedToken

from tests.reward_models.tiny import (
    build_causal_lm,
    build_tokenizer,
    llama_config,
    save_reward_model,
)

#: Chat samples in two prompt groups (the chat rubrics need group_ids).
CHAT_SAMPLES = [
    {
        "id": f"s{i}",
        "group_id": f"g{i % 2}",
        "prompt": ["What is 2 + 2?", "Name a prime number."][i % 2],
        "response": ["4", "It is four.", "2 is prime.", "Seven, which is prime.", "5"][i],
        "labels": {"reference_answer": ["4", "2"][i % 2]},
    }
    for i in range(5)
]


def save_verdict_lm(directory: Path, level: int = 3) -> Path:
    """Save a causal LM whose greedy answer is ``[RESULT] <level>`` repeated."""
    tokenizer = build_tokenizer()
    token = f"[RESULT] {level}"
    tokenizer.add_tokens([AddedToken(token, normalized=False, special=False)])
    model = build_causal_lm()
    model.resize_token_embeddings(len(tokenizer), mean_resizing=False)
    verdict = tokenizer.convert_tokens_to_ids(token)
    with torch.no_grad():
        # The residual stream is the embedding alone (every block's output is 0),
        # its first coordinate 1 for every token; the head reads only that
        # coordinate, into the verdict's row: the verdict wins at every position.
        model.get_input_embeddings().weight[:, 0] = 1.0
        for layer in model.model.layers:
            layer.self_attn.o_proj.weight.zero_()
            layer.mlp.down_proj.weight.zero_()
        model.model.norm.weight.zero_()
        model.model.norm.weight[0] = 1.0
        model.lm_head.weight.zero_()
        model.lm_head.weight[verdict, 0] = 10.0
    model.save_pretrained(directory)
    tokenizer.save_pretrained(directory)
    return directory


def save_rm(directory: Path) -> Path:
    """Save the seeded tiny reward model (one objective)."""
    return save_reward_model(directory, llama_config())


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def rewardbench_rows() -> list[dict[str, Any]]:
    """A small RewardBench-format set: prompt, chosen, rejected."""
    return [
        {"id": f"p{i}", "prompt": prompt, "chosen": chosen, "rejected": rejected}
        for i, (prompt, chosen, rejected) in enumerate(
            [
                ("What is 2 + 2?", "2 + 2 = 4.", "5"),
                ("Capital of France?", "Paris.", "Lyon, I think."),
                ("Is 7 prime?", "Yes: its only divisors are 1 and 7.", "No."),
                ("Spell 'cat' backwards.", "tac", "cta"),
            ]
        )
    ]
