"""Reward-model batching on CPU at three model sizes: one at a time, arrival order, the batcher.

Random-init Llama-shaped sequence-classification models (float32, SDPA, right
padding without a mask) of three sizes — hidden 128 / 2 layers, 256 / 4 and
512 / 8 by default — score the same requests of uniformly mixed lengths
(16-1024 tokens, 512 requests), three ways each, in one run:

(a) one request at a time;
(b) the peers' way: fixed batches of 32 in arrival order, each padded to its
    longest row;
(c) Arbiter's :class:`~arbiter.reward_models.batcher.DynamicBatcher`: every request
    submitted concurrently, cut into length-sorted batches within a token
    budget, run on the batcher's worker thread.

The requests are cut into chunks (``--chunk``, 128 by default) and the three
ways take turns on each chunk, in a rotating order, so a slow spell of this
shared machine falls on all three alike; each way's time is its sum over the
chunks (and the batcher batches within a chunk).

Each prints real tokens per second (padding not counted) and padding
efficiency (real / padded tokens); (b)'s and (c)'s scores are checked against
(a)'s (max |difference| below 1e-4). A summary per size follows with the
targets — padding efficiency of (c) >= 0.9, (c)/(a) >= 0.9, (c)/(b) >= 1.8 —
and the ratio (c)/(b) comes last. A CPU gains little from batching a
compute-bound model, so (c)/(a) near 1 is expected here; on a GPU batching is
where the throughput is (see :mod:`bench.gpu_judge`).

The pieces (tokenizer, requests, the three ways of running them) are shared
with :mod:`bench.gpu_judge`.

Run: ``.venv/bin/python -m bench.judge [--sizes 128x2,256x4,512x8] [--requests N] [--chunk N]``;
a size may carry its own request count, as in ``512x8:128``. Exits 1 when a
score differs from (a)'s by more than the limit (a correctness failure); a
missed speed target is reported, not an error.

One module: one benchmark, whose pieces :mod:`bench.gpu_judge` reuses.
"""

from __future__ import annotations

import asyncio
import dataclasses
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Annotated

import torch
import typer
from tokenizers import Regex, Tokenizer, models, pre_tokenizers
from transformers import AutoModelForSequenceClassification, LlamaConfig, PreTrainedTokenizerFast

from arbiter.reward_models.batcher import BatcherConfig, BatchStats, DynamicBatcher
from arbiter.reward_models.chat import EncodedInput
from arbiter.reward_models.hf import HFRewardModel, HFRewardModelSpec

SPECIALS = ["<unk>", "<s>", "</s>", "<|user|>", "<|assistant|>", "<|end|>"]
CHARS = [chr(i) for i in range(32, 127)]

#: The peers' fixed batch size for (b).
ARRIVAL_BATCH = 32
#: Targets from the issue: (c)'s padding efficiency, (c)/(a), (c)/(b).
TARGET_PADDING = 0.9
TARGET_VS_SINGLE = 0.9
TARGET_VS_ARRIVAL = 1.8
#: Largest |score difference| against one-at-a-time allowed in float32.
SCORE_LIMIT = 1e-4


def build_tokenizer() -> PreTrainedTokenizerFast:
    """Build a character-level tokenizer with a chat template, locally (no download)."""
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
    return tokenizer


def build_cpu_model(hidden: int, layers: int, *, seed: int = 0) -> HFRewardModel:
    """Build a random-init float32 Llama seq-cls reward model and check its scoring contract."""
    tokenizer = build_tokenizer()
    torch.manual_seed(seed)
    heads = max(2, hidden // 64)
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=hidden,
        intermediate_size=hidden * 4,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        num_key_value_heads=heads,
        max_position_embeddings=2048,
        num_labels=1,  # type: ignore[call-arg]  # a PreTrainedConfig kwarg
    )
    model = AutoModelForSequenceClassification.from_config(  # type: ignore[no-untyped-call]
        config, attn_implementation="sdpa"
    )
    with torch.no_grad():
        # The default init gives scores near 0, where any score tolerance passes;
        # this scale gives scores of order 1, so the 1e-4 check means something.
        model.score.weight.normal_(0.0, hidden**-0.5)
    rm = HFRewardModel(model.eval(), tokenizer, HFRewardModelSpec(path="<memory>"))
    rm.check_contract()
    return rm


def make_requests(
    n: int,
    *,
    min_length: int,
    max_length: int,
    vocab_size: int,
    pad_id: int,
    seed: int,
) -> list[EncodedInput]:
    """Return ``n`` inputs of uniform random length and random ids, never the pad id.

    The stream is deterministic per seed, so a shorter run scores a prefix of a
    longer one.
    """
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        length = rng.randint(min_length, max_length)
        ids: list[int] = []
        while len(ids) < length:
            token = rng.randrange(len(SPECIALS), vocab_size)
            if token != pad_id:
                ids.append(token)
        out.append(EncodedInput(tuple(ids)))
    return out


@dataclass(frozen=True, slots=True)
class Measured:
    """One way of running the requests: its time, scores and padding."""

    seconds: float
    scores: list[float]
    tokens: int
    padded_tokens: int
    batches: int

    @property
    def tokens_per_s(self) -> float:
        """Return real (unpadded) tokens per second."""
        return self.tokens / self.seconds

    @property
    def padding_efficiency(self) -> float:
        """Return real tokens / padded tokens."""
        return self.tokens / self.padded_tokens

    def max_difference(self, other: Measured) -> float:
        """Return the largest |score difference| against another run of the same requests."""
        return max(abs(x - y) for x, y in zip(self.scores, other.scores, strict=True))

    @staticmethod
    def total(parts: Sequence[Measured]) -> Measured:
        """Return the runs of consecutive chunks as one run of all their requests."""
        return Measured(
            sum(p.seconds for p in parts),
            [s for p in parts for s in p.scores],
            sum(p.tokens for p in parts),
            sum(p.padded_tokens for p in parts),
            sum(p.batches for p in parts),
        )


def timed(
    fn: Callable[[], list[float]], sync: Callable[[], None] | None = None
) -> tuple[float, list[float]]:
    """Return (seconds, fn()); ``sync`` waits for an asynchronous device before each clock read."""
    if sync is not None:
        sync()
    started = time.perf_counter()
    scores = fn()
    if sync is not None:
        sync()
    return time.perf_counter() - started, scores


def run_one_at_a_time(
    rm: HFRewardModel, reqs: Sequence[EncodedInput], sync: Callable[[], None] | None = None
) -> Measured:
    """Score every request alone — (a)."""
    seconds, scores = timed(lambda: [rm.score_batch([r])[0][0] for r in reqs], sync)
    tokens = sum(r.length for r in reqs)
    return Measured(seconds, scores, tokens, tokens, len(reqs))


def arrival_batches(reqs: Sequence[EncodedInput], size: int) -> list[Sequence[EncodedInput]]:
    """Cut requests into fixed batches in arrival order, as peers do."""
    return [reqs[i : i + size] for i in range(0, len(reqs), size)]


def run_arrival_order(
    rm: HFRewardModel,
    reqs: Sequence[EncodedInput],
    size: int = ARRIVAL_BATCH,
    sync: Callable[[], None] | None = None,
) -> Measured:
    """Score fixed batches of ``size`` in arrival order, each padded to its longest — (b)."""
    batches = arrival_batches(reqs, size)

    def go() -> list[float]:
        out: list[float] = []
        for batch in batches:
            out.extend(s[0] for s in rm.score_batch(batch))
        return out

    seconds, scores = timed(go, sync)
    padded = sum(len(b) * max(r.length for r in b) for b in batches)
    return Measured(seconds, scores, sum(r.length for r in reqs), padded, len(batches))


def run_batcher(
    rm: HFRewardModel,
    reqs: Sequence[EncodedInput],
    config: BatcherConfig,
    sync: Callable[[], None] | None = None,
    batcher: DynamicBatcher[EncodedInput, tuple[float, ...]] | None = None,
) -> Measured:
    """Submit every request concurrently to the batcher — (c).

    With ``batcher``, that one is used (and left open), as a service keeps one
    for its life; otherwise a fresh one is made and closed.
    """
    b = batcher or DynamicBatcher(rm.score_batch, config, name="bench-batcher")
    before = dataclasses.replace(b.stats)

    async def go() -> list[float]:
        try:
            results = await asyncio.gather(*(b.submit(r, r.length) for r in reqs))
        finally:
            if batcher is None:
                await b.close()
        return [s[0] for s in results]

    seconds, scores = timed(lambda: asyncio.run(go()), sync)
    stats: BatchStats = b.stats
    return Measured(
        seconds,
        scores,
        stats.tokens - before.tokens,
        stats.padded_tokens - before.padded_tokens,
        stats.batches - before.batches,
    )


def verdict(ok: bool) -> str:
    """Return 'met' or 'missed'."""
    return "met" if ok else "missed"


@dataclass(frozen=True, slots=True)
class Size:
    """A model size and how many requests it scores."""

    hidden: int
    layers: int
    requests: int

    @property
    def label(self) -> str:
        """Return e.g. ``512x8``."""
        return f"{self.hidden}x{self.layers}"


def parse_sizes(text: str, default_requests: int) -> list[Size]:
    """Parse ``HIDDENxLAYERS[:REQUESTS]`` items separated by commas.

    Raises:
        typer.BadParameter: an item is not of that form.
    """
    sizes = []
    for item in text.split(","):
        spec, _, count = item.strip().partition(":")
        hidden, sep, layers = spec.partition("x")
        try:
            if not sep:
                raise ValueError(spec)
            size = Size(int(hidden), int(layers), int(count) if count else default_requests)
        except ValueError:
            raise typer.BadParameter(
                f"{item!r}: expected HIDDENxLAYERS or HIDDENxLAYERS:REQUESTS, e.g. 512x8:128"
            ) from None
        if size.hidden < 64 or size.layers < 1 or size.requests < 1:
            raise typer.BadParameter(f"{item!r}: hidden >= 64, layers >= 1, requests >= 1")
        sizes.append(size)
    return sizes


@dataclass(frozen=True, slots=True)
class SizeResult:
    """The three runs at one model size."""

    size: Size
    single: Measured
    arrival: Measured
    batcher: Measured

    @property
    def vs_single(self) -> float:
        """Return (c)/(a) in throughput."""
        return self.single.seconds / self.batcher.seconds

    @property
    def vs_arrival(self) -> float:
        """Return (c)/(b) in throughput."""
        return self.arrival.seconds / self.batcher.seconds

    @property
    def worst_difference(self) -> float:
        """Return the largest |score difference| of (b) or (c) against (a)."""
        return max(
            self.arrival.max_difference(self.single), self.batcher.max_difference(self.single)
        )


def bench_size(
    size: Size, budget: int, max_wait_ms: float, chunk: int, index: int, total: int
) -> SizeResult:
    """Build one model, run (a), (b) and (c) on the same requests, print each line."""
    rm = build_cpu_model(size.hidden, size.layers)
    vocab_size = len(rm.tokenizer)
    reqs = make_requests(
        size.requests,
        min_length=16,
        max_length=1024,
        vocab_size=vocab_size,
        pad_id=rm.pad_id,
        seed=1,
    )
    params = sum(p.numel() for p in rm.model.parameters())
    tokens = sum(r.length for r in reqs)
    print(
        f"[{index}/{total}] Llama seq-cls hidden {size.hidden}, {size.layers} layers "
        f"({params / 1e6:.1f}M params), float32; {size.requests} requests, lengths 16-1024, "
        f"{tokens} tokens, in chunks of {chunk}",
        flush=True,
    )
    # Warm up the allocator and kernels on a long single row and a budget-sized batch.
    warm = make_requests(
        4, min_length=1024, max_length=1024, vocab_size=vocab_size, pad_id=rm.pad_id, seed=2
    )
    rm.score_batch(warm[:1])
    rm.score_batch(warm[: max(1, min(4, budget // 1024))])

    config = BatcherConfig(max_batch_tokens=budget, max_batch_size=256, max_wait_ms=max_wait_ms)
    # One batcher for the whole size, as a service keeps one: its worker thread
    # (and that thread's allocator and OpenMP team) warms up once, here.
    batcher: DynamicBatcher[EncodedInput, tuple[float, ...]] = DynamicBatcher(
        rm.score_batch, config, name="bench-batcher"
    )
    run_batcher(rm, warm, config, batcher=batcher)
    ways: dict[str, Callable[[Sequence[EncodedInput]], Measured]] = {
        "a": lambda chunk: run_one_at_a_time(rm, chunk),
        "b": lambda chunk: run_arrival_order(rm, chunk, ARRIVAL_BATCH),
        "c": lambda chunk: run_batcher(rm, chunk, config, batcher=batcher),
    }
    parts: dict[str, list[Measured]] = {key: [] for key in ways}
    order = list(ways)
    for k, start in enumerate(range(0, len(reqs), chunk)):
        part = reqs[start : start + chunk]
        for key in order[k % 3 :] + order[: k % 3]:  # rotate who goes first
            parts[key].append(ways[key](part))
    asyncio.run(batcher.close())
    single, arrival, batched = (Measured.total(parts[key]) for key in order)
    print(
        f"  {'(a) one at a time:':<38}{single.tokens_per_s:9.0f} tokens/s   "
        f"padding efficiency {single.padding_efficiency:.3f}   batches {single.batches}",
        flush=True,
    )
    label = f"(b) arrival order, {ARRIVAL_BATCH}/batch:"
    print(
        f"  {label:<38}{arrival.tokens_per_s:9.0f} tokens/s   "
        f"padding efficiency {arrival.padding_efficiency:.3f}   batches {arrival.batches}",
        flush=True,
    )
    label = f"(c) Arbiter batcher, {budget} tokens:"
    print(
        f"  {label:<38}{batched.tokens_per_s:9.0f} tokens/s   "
        f"padding efficiency {batched.padding_efficiency:.3f}   batches {batched.batches}",
        flush=True,
    )
    result = SizeResult(size, single, arrival, batched)
    worst_b = arrival.max_difference(single)
    worst_c = batched.max_difference(single)
    print(
        f"  max |score difference| vs (a): (b) {worst_b:.2e}, (c) {worst_c:.2e} "
        f"(limit {SCORE_LIMIT:.0e}: {verdict(result.worst_difference < SCORE_LIMIT)})",
        flush=True,
    )
    print(f"  (c)/(a) {result.vs_single:.2f}x   (c)/(b) {result.vs_arrival:.2f}x", flush=True)
    return result


def print_summary(results: Sequence[SizeResult]) -> None:
    """Print one line per measure and size with its target; (c)/(b) last."""
    width = max(14, *(len(r.size.label) + 12 for r in results))
    header = "".join(f"{r.size.label:>{width}}" for r in results)
    print(f"\nsummary {'':<30}{header}   target")

    def row(name: str, values: Sequence[tuple[str, bool | None]], target: str) -> None:
        # ok None: a baseline, shown without a verdict.
        cells = "".join(
            f"{text if ok is None else text + ' ' + verdict(ok):>{width}}" for text, ok in values
        )
        print(f"{name:<38}{cells}   {target}")

    row(
        "max |score difference| vs (a)",
        [(f"{r.worst_difference:.1e}", r.worst_difference < SCORE_LIMIT) for r in results],
        f"< {SCORE_LIMIT:.0e}",
    )
    row(
        "padding efficiency (b)",
        [(f"{r.arrival.padding_efficiency:.3f}", None) for r in results],
        "(baseline)",
    )
    row(
        "padding efficiency (c)",
        [
            (f"{r.batcher.padding_efficiency:.3f}", r.batcher.padding_efficiency >= TARGET_PADDING)
            for r in results
        ],
        f">= {TARGET_PADDING}",
    )
    row(
        "ratio (c)/(a)",
        [(f"{r.vs_single:.2f}x", r.vs_single >= TARGET_VS_SINGLE) for r in results],
        f">= {TARGET_VS_SINGLE}",
    )
    row(
        "ratio (c)/(b)",
        [(f"{r.vs_arrival:.2f}x", r.vs_arrival >= TARGET_VS_ARRIVAL) for r in results],
        f">= {TARGET_VS_ARRIVAL}",
    )


def run(
    sizes: Sequence[Size],
    *,
    budget: int = 4096,
    max_wait_ms: float = 5.0,
    threads: int = 0,
    chunk: int = 128,
) -> list[SizeResult]:
    """Run the benchmark at every size and print the summary; return the results."""
    if threads > 0:
        torch.set_num_threads(threads)
    print(
        f"reward-model batching on CPU: torch {torch.__version__}, "
        f"{torch.get_num_threads()} threads, batcher budget {budget} tokens, "
        f"max_wait_ms {max_wait_ms:g}",
        flush=True,
    )
    started = time.perf_counter()
    results = [
        bench_size(size, budget, max_wait_ms, chunk, i, len(sizes))
        for i, size in enumerate(sizes, 1)
    ]
    print(f"(total {time.perf_counter() - started:.0f} s)")
    print_summary(results)
    return results


def main(
    sizes: Annotated[
        str,
        typer.Option(
            "--sizes",
            help="Model sizes as HIDDENxLAYERS[:REQUESTS], comma-separated.",
        ),
    ] = "128x2,256x4,512x8",
    n_requests: Annotated[
        int, typer.Option("--requests", min=1, help="Requests per size (unless given per size).")
    ] = 512,
    budget: Annotated[int, typer.Option("--budget", min=1, help="max_batch_tokens of (c).")] = 4096,
    max_wait_ms: Annotated[float, typer.Option("--max-wait-ms", min=0.0)] = 5.0,
    threads: Annotated[
        int, typer.Option("--threads", min=0, help="torch threads; 0: torch's default.")
    ] = 0,
    chunk: Annotated[
        int, typer.Option("--chunk", min=1, help="Requests per turn of the three ways.")
    ] = 128,
) -> None:
    """Compare one-at-a-time, arrival-order batches of 32 and the batcher at several sizes."""
    results = run(
        parse_sizes(sizes, n_requests),
        budget=budget,
        max_wait_ms=max_wait_ms,
        threads=threads,
        chunk=chunk,
    )
    if any(r.worst_difference >= SCORE_LIMIT for r in results):
        raise typer.Exit(1)


if __name__ == "__main__":
    typer.run(main)
