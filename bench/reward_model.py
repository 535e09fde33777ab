"""Reward-model batching on CPU: one at a time vs fixed arrival-order batches vs the batcher.

One random-init Llama-shaped sequence-classification model (hidden 128, 2
layers by default, float32, right padding without a mask) scores the same 512 requests
of uniformly mixed lengths (16-1024 tokens), three ways, in one run:

(a) one request at a time;
(b) the peers' way: fixed batches of 32 in arrival order, each padded to its
    longest row;
(c) Arbiter's :class:`~reward_models.batcher.DynamicBatcher`: all requests
    submitted concurrently, cut into length-sorted batches within a token
    budget, run on the batcher's worker thread.

Each prints real tokens per second (padding not counted) and padding
efficiency (real / padded tokens); (c)'s scores are checked against (a)'s.
The ratios (c)/(a) and (c)/(b) come last. A CPU gains little from batching a
compute-bound model, so (c)/(a) near 1 is expected here; on a GPU batching is
where the throughput is.

Run: ``.venv/bin/python -m bench.reward_model [--requests N] [--budget TOKENS]``.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Callable, Sequence
from typing import Annotated, Any

import torch
import typer
from tokenizers import Regex, Tokenizer, models, pre_tokenizers
from transformers import AutoModelForSequenceClassification, LlamaConfig, PreTrainedTokenizerFast

from reward_models.batcher import BatcherConfig, DynamicBatcher
from reward_models.chat import EncodedInput
from reward_models.hf import HFRewardModel, HFRewardModelSpec

SPECIALS = ["<unk>", "<s>", "</s>", "<|user|>", "<|assistant|>", "<|end|>"]
CHARS = [chr(i) for i in range(32, 127)]


def build(hidden: int, layers: int) -> HFRewardModel:
    vocab = {t: i for i, t in enumerate(SPECIALS + CHARS)}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Split(Regex(r"[\s\S]"), behavior="isolated")
    tok.add_special_tokens(SPECIALS)
    tokenizer = PreTrainedTokenizerFast(  # type: ignore[no-untyped-call]
        tokenizer_object=tok, bos_token="<s>", eos_token="</s>", unk_token="<unk>"
    )
    tokenizer.chat_template = (
        "{{ bos_token }}{% for m in messages %}<|{{ m['role'] }}|>{{ m['content'] }}<|end|>"
        "{% endfor %}"
    )
    torch.manual_seed(0)
    shape: dict[str, Any] = {
        "vocab_size": len(vocab),
        "hidden_size": hidden,
        "intermediate_size": hidden * 4,
        "num_hidden_layers": layers,
        "num_attention_heads": max(2, hidden // 64),
        "num_key_value_heads": max(2, hidden // 64),
        "max_position_embeddings": 2048,
        "num_labels": 1,
    }
    config = LlamaConfig(**shape)
    model = AutoModelForSequenceClassification.from_config(  # type: ignore[no-untyped-call]
        config, attn_implementation="sdpa"
    )
    rm = HFRewardModel(model.eval(), tokenizer, HFRewardModelSpec(path="<memory>"))
    rm.check_contract()
    return rm


def requests(n: int, vocab_size: int, seed: int) -> list[EncodedInput]:
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        length = rng.randint(16, 1024)
        # Ids of printable characters; never the pad id.
        out.append(EncodedInput(tuple(rng.randrange(10, vocab_size - 1) for _ in range(length))))
    return out


def timed(fn: Callable[[], list[float]]) -> tuple[float, list[float]]:
    started = time.perf_counter()
    scores = fn()
    return time.perf_counter() - started, scores


def one_at_a_time(rm: HFRewardModel, reqs: Sequence[EncodedInput]) -> list[float]:
    return [rm.score_batch([r])[0][0] for r in reqs]


def arrival_order(rm: HFRewardModel, reqs: Sequence[EncodedInput], size: int) -> list[float]:
    out: list[float] = []
    for i in range(0, len(reqs), size):
        out.extend(s[0] for s in rm.score_batch(reqs[i : i + size]))
    return out


def batcher(rm: HFRewardModel, reqs: Sequence[EncodedInput], config: BatcherConfig) -> Any:
    b: DynamicBatcher[EncodedInput, tuple[float, ...]] = DynamicBatcher(rm.score_batch, config)

    async def go() -> list[float]:
        results = await asyncio.gather(*(b.submit(r, r.length) for r in reqs))
        await b.close()
        return [s[0] for s in results]

    return go, b


def main(
    n_requests: Annotated[int, typer.Option("--requests")] = 512,
    budget: Annotated[int, typer.Option("--budget", help="max_batch_tokens")] = 4096,
    hidden: int = 128,
    layers: int = 2,
    threads: int = 2,
) -> None:
    torch.set_num_threads(threads)
    rm = build(hidden, layers)
    reqs = requests(n_requests, len(rm.tokenizer), seed=1)
    tokens = sum(r.length for r in reqs)
    print(
        f"model: Llama seq-cls hidden {hidden}, {layers} layers, float32, {threads} threads; "
        f"{n_requests} requests, lengths 16-1024, {tokens} tokens"
    )
    # Warm up the allocator and kernels on every shape class once.
    arrival_order(rm, requests(64, len(rm.tokenizer), seed=2), 32)

    a_s, a_scores = timed(lambda: one_at_a_time(rm, reqs))
    print(f"(a) one at a time:          {tokens / a_s:10.0f} tokens/s   padding efficiency 1.000")

    padded = sum(
        len(reqs[i : i + 32]) * max(r.length for r in reqs[i : i + 32])
        for i in range(0, len(reqs), 32)
    )
    b_s, b_scores = timed(lambda: arrival_order(rm, reqs, 32))
    print(
        f"(b) arrival order, 32/batch: {tokens / b_s:10.0f} tokens/s   "
        f"padding efficiency {tokens / padded:.3f}"
    )

    config = BatcherConfig(max_batch_tokens=budget, max_batch_size=256, max_wait_ms=5)
    go, b = batcher(rm, reqs, config)
    c_s, c_scores = timed(lambda: asyncio.run(go()))
    print(
        f"(c) Arbiter batcher ({budget} tokens): {tokens / c_s:10.0f} tokens/s   "
        f"padding efficiency {b.stats.padding_efficiency:.3f}   batches {b.stats.batches}"
    )
    worst = max(abs(x - y) for x, y in zip(a_scores, c_scores, strict=True))
    worst_b = max(abs(x - y) for x, y in zip(a_scores, b_scores, strict=True))
    print(f"max |score difference| vs (a): (b) {worst_b:.2e}, (c) {worst:.2e}")
    print(f"ratio (c)/(a): {a_s / c_s:.2f}x")
    print(f"ratio (c)/(b): {b_s / c_s:.2f}x")


if __name__ == "__main__":
    typer.run(main)
