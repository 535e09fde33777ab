"""An 8B-architecture reward model on one GPU: one request at a time vs the batcher, and MFU.

A random-init sequence-classification model of Llama-3.1-8B's shape (hidden
4096, 32 layers, 32 heads, 8 KV heads, intermediate 14336, vocab 128256) is
built directly on the GPU in bfloat16 with SDPA attention — never materialised
in CPU memory (32 GB in float32) — and wrapped in Arbiter's
:class:`~arbiter.reward_models.hf.HFRewardModel` (dedicated pad token, right padding,
raw logits; its load-time scoring contract is run and reported). The same
requests of ``--length`` tokens (2048 by default; ``--min-length`` for mixed
lengths) are scored:

(a) one request at a time (``--single-requests`` of them, a prefix of the rest);
(c) through Arbiter's :class:`~arbiter.reward_models.batcher.DynamicBatcher` with a
    ``--budget`` of padded tokens per batch.

Each prints real tokens/s and MFU — model FLOPs, 2 x parameters x tokens for a
forward pass (parameters without the input embedding, a lookup rather than a
matmul; attention's own FLOPs are not counted), over the GPU's peak dense
bfloat16 FLOP/s given by ``--peak-tflops`` (989 for an H100/H200 SXM). The
targets — MFU of (c) >= 40 %, (c)/(a) >= 10x — and the ratio (c)/(a) come last.
The default sizes finish in well under 5 minutes on an H100-class GPU,
building the model included; ``--max-seconds`` stops adding work past a time
limit.

Without a CUDA device it prints "no CUDA device: this benchmark needs a GPU"
and exits with code 2.

Run: ``.venv/bin/python -m bench.gpu_judge [--requests N] [--length TOKENS]
[--budget TOKENS] [--peak-tflops T]``.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Annotated, Any

import torch
import typer
from transformers import AutoModelForSequenceClassification, LlamaConfig

from arbiter.reward_models.batcher import BatcherConfig
from arbiter.reward_models.errors import ScoringContractError
from arbiter.reward_models.hf import HFRewardModel, HFRewardModelSpec, tolerance_for
from bench.judge import (
    Measured,
    build_tokenizer,
    make_requests,
    run_batcher,
    run_one_at_a_time,
    verdict,
)

NO_GPU_MESSAGE = "no CUDA device: this benchmark needs a GPU"
#: Exit code when no CUDA device is present (nothing was measured).
NO_GPU_EXIT = 2
#: Targets from the issue.
TARGET_MFU = 0.40
TARGET_VS_SINGLE = 10.0

#: Llama-3.1-8B's shape; the weights are random.
LLAMA_3_1_8B: dict[str, Any] = {
    "vocab_size": 128256,
    "hidden_size": 4096,
    "intermediate_size": 14336,
    "num_hidden_layers": 32,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "max_position_embeddings": 131072,
    "rope_theta": 500000.0,
    "rms_norm_eps": 1e-5,
    "bos_token_id": 128000,
    "eos_token_id": 128001,
}


def build_gpu_model(
    device: torch.device,
    max_length: int,
    *,
    shape: Mapping[str, Any] = LLAMA_3_1_8B,
    dtype: torch.dtype = torch.bfloat16,
    seed: int = 0,
) -> HFRewardModel:
    """Build the seq-cls model (8B shape, bfloat16) on ``device``; wrap it without the contract."""
    tokenizer = build_tokenizer()
    config = LlamaConfig(**shape, num_labels=1)  # type: ignore[call-arg]
    torch.manual_seed(seed)
    # Allocating (and randomly initialising) every weight on the GPU, in bf16, from
    # the start: 16 GB there instead of 32 GB of float32 in CPU memory first.
    with device:
        model = AutoModelForSequenceClassification.from_config(  # type: ignore[no-untyped-call]
            config, dtype=dtype, attn_implementation="sdpa"
        )
    # The tokenizer's few ids (and its added pad token) lie inside the 128256 rows,
    # so HFRewardModel needs no embedding resize.
    spec = HFRewardModelSpec(path="<memory>", max_length=max_length, device=str(device))
    return HFRewardModel(model.eval(), tokenizer, spec)


def matmul_params(model: Any) -> int:
    """Return the parameters that a forward pass multiplies with (all but the input embedding)."""
    total = sum(p.numel() for p in model.parameters())
    return int(total - model.get_input_embeddings().weight.numel())


def mfu(measured: Measured, params: int, peak_tflops: float) -> float:
    """Return model FLOPs utilisation: 2 x params x real tokens / time / peak."""
    return 2 * params * measured.tokens / measured.seconds / (peak_tflops * 1e12)


@dataclass(frozen=True, slots=True)
class Settings:
    """What to measure (the command's options)."""

    requests: int = 128
    single_requests: int = 32
    length: int = 2048
    min_length: int | None = None
    budget: int = 32768
    max_batch_size: int = 64
    peak_tflops: float = 989.0
    max_seconds: float = 270.0


def measure(
    device: torch.device,
    settings: Settings,
    *,
    shape: Mapping[str, Any] = LLAMA_3_1_8B,
    dtype: torch.dtype = torch.bfloat16,
) -> tuple[Measured, Measured]:
    """Build the model on ``device``, run (a) and (c), print every line; return both runs."""
    started = time.perf_counter()
    on_cuda = device.type == "cuda"
    sync: Callable[[], None] | None = torch.cuda.synchronize if on_cuda else None
    s = settings
    length = s.length
    lo = length if s.min_length is None else min(s.min_length, length)
    n_single = min(s.single_requests, s.requests)

    rm = build_gpu_model(device, max_length=length + 64, shape=shape, dtype=dtype)
    if sync is not None:
        sync()
    params = matmul_params(rm.model)
    embedding = int(rm.model.get_input_embeddings().weight.numel())
    name = torch.cuda.get_device_name(device) if on_cuda else str(device)
    print(
        f"device: {name}; torch {torch.__version__}; "
        f"peak {s.peak_tflops:g} TFLOP/s bf16 dense (--peak-tflops)",
        flush=True,
    )
    print(
        f"model: Llama-3.1-8B-shaped seq-cls (hidden {rm.model.config.hidden_size}, "
        f"{rm.model.config.num_hidden_layers} layers), random weights, {dtype}, SDPA, "
        f"right padding; {params / 1e9:.2f}B matmul params + {embedding / 1e9:.2f}B embedding; "
        f"built in {time.perf_counter() - started:.0f} s",
        flush=True,
    )
    try:
        rm.check_contract()
        print("scoring contract: met (single vs padded batch, within the dtype's tolerance)")
    except ScoringContractError as e:
        # Reported, not fatal: the throughput numbers are still worth having.
        print(f"scoring contract: FAILED: {e}")

    vocab = int(rm.model.config.vocab_size)
    reqs = make_requests(
        s.requests, min_length=lo, max_length=length, vocab_size=vocab, pad_id=rm.pad_id, seed=1
    )
    config = BatcherConfig(
        max_batch_tokens=s.budget, max_batch_size=s.max_batch_size, max_wait_ms=5, max_queue=4096
    )
    lengths = f"{length}" if lo == length else f"{lo}-{length}"
    print(
        f"requests: {s.requests} of {lengths} tokens, the first {n_single} also one at a time; "
        f"batcher budget {s.budget} tokens, at most {s.max_batch_size} rows",
        flush=True,
    )

    with torch.inference_mode():
        # Warm-up: kernels, cuBLAS workspaces and the caching allocator at both shapes.
        warm = make_requests(
            2 * max(1, s.budget // length),
            min_length=lo,
            max_length=length,
            vocab_size=vocab,
            pad_id=rm.pad_id,
            seed=2,
        )
        run_one_at_a_time(rm, warm[:2], sync)
        run_batcher(rm, warm, config, sync)
        if on_cuda:
            torch.cuda.reset_peak_memory_stats(device)

        single = run_one_at_a_time(rm, reqs[:n_single], sync)
        print(
            f"{'(a) one at a time:':<38}{single.tokens_per_s:9.0f} tokens/s   "
            f"MFU {mfu(single, params, s.peak_tflops):6.1%}   "
            f"({single.seconds:.1f} s, {single.batches} forwards)",
            flush=True,
        )
        # Batching is no slower per token than (a): at (a)'s speed, what still fits?
        room_s = s.max_seconds - (time.perf_counter() - started)
        fits = max(n_single, int(room_s * single.tokens_per_s / ((lo + length) / 2)))
        if fits < len(reqs):
            reqs = reqs[:fits]
            print(f"(--max-seconds {s.max_seconds:g}: the batcher gets the first {fits} requests)")
        batched = run_batcher(rm, reqs, config, sync)
        label = f"(c) Arbiter batcher, {s.budget} tokens:"
        print(
            f"{label:<38}{batched.tokens_per_s:9.0f} tokens/s   "
            f"MFU {mfu(batched, params, s.peak_tflops):6.1%}   "
            f"({batched.seconds:.1f} s, {batched.batches} batches, "
            f"padding efficiency {batched.padding_efficiency:.3f})",
            flush=True,
        )

    # The first n_single requests were scored both ways, in the same order.
    worst = max(abs(x - y) for x, y in zip(single.scores, batched.scores, strict=False))
    atol, rtol = tolerance_for(dtype)
    print(
        f"max |score difference| (c) vs (a) over {n_single} requests: {worst:.2e} "
        f"({dtype} contract tolerance: atol {atol:g} + rtol {rtol:g})"
    )
    if on_cuda:
        peak_gib = torch.cuda.max_memory_allocated(device) / 2**30
        print(f"peak GPU memory {peak_gib:.1f} GiB")
    print(f"total {time.perf_counter() - started:.0f} s")
    batch_mfu = mfu(batched, params, s.peak_tflops)
    ratio = batched.tokens_per_s / single.tokens_per_s
    print(
        f"MFU (c): {batch_mfu:.1%}   target >= {TARGET_MFU:.0%}: {verdict(batch_mfu >= TARGET_MFU)}"
    )
    print(
        f"ratio (c)/(a): {ratio:.2f}x   target >= {TARGET_VS_SINGLE:g}x: "
        f"{verdict(ratio >= TARGET_VS_SINGLE)}"
    )
    return single, batched


def main(
    n_requests: Annotated[
        int, typer.Option("--requests", min=1, help="Requests scored through the batcher.")
    ] = 128,
    single_requests: Annotated[
        int,
        typer.Option("--single-requests", min=1, help="Of those, how many are scored alone."),
    ] = 32,
    length: Annotated[int, typer.Option("--length", min=16, help="Tokens per request.")] = 2048,
    min_length: Annotated[
        int | None,
        typer.Option("--min-length", min=16, help="Mixed lengths, uniform min..--length."),
    ] = None,
    budget: Annotated[
        int, typer.Option("--budget", min=1, help="max_batch_tokens of the batcher.")
    ] = 32768,
    max_batch_size: Annotated[int, typer.Option("--max-batch-size", min=1)] = 64,
    peak_tflops: Annotated[
        float,
        typer.Option(
            "--peak-tflops",
            min=1.0,
            help="The GPU's peak dense bf16 TFLOP/s (H100/H200 SXM: 989; A100: 312).",
        ),
    ] = 989.0,
    max_seconds: Annotated[
        float,
        typer.Option("--max-seconds", min=1.0, help="Cut the batcher's requests to end by then."),
    ] = 270.0,
) -> None:
    """Measure tokens/s and MFU of one-at-a-time vs the batcher on one CUDA GPU."""
    if not torch.cuda.is_available():
        print(NO_GPU_MESSAGE, file=sys.stderr)
        raise typer.Exit(NO_GPU_EXIT)
    settings = Settings(
        requests=n_requests,
        single_requests=single_requests,
        length=length,
        min_length=min_length,
        budget=budget,
        max_batch_size=max_batch_size,
        peak_tflops=peak_tflops,
        max_seconds=max_seconds,
    )
    measure(torch.device("cuda", torch.cuda.current_device()), settings)


if __name__ == "__main__":
    typer.run(main)
