"""verl's per-sample reward calls, coalesced, against one batch request of the same samples.

Run: ``.venv/bin/python -m bench.trainers [--samples 1024] [--runs 3] [--rubric efficiency-only]``.

``arbiter serve`` runs in its own process with authentication on and the
default quotas. Baseline: the samples as one ``POST /v1/rewards``. Ours: the
same samples as concurrent ``compute_score_async`` calls through the verl
adapter (as verl's reward loop awaits them, one per sample), which coalesces
them into micro-batches. Each run measures both; the medians are printed, with
the server's 429 count during the concurrent calls (target 0) and the ratio
concurrent / batch last (target <= 2.0).

``--rubric python-codegen`` grades the demo completions in the sandbox instead
of the metrics-only rubric (grading then dominates both sides).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.serve import REPO, arbiter_serve


def verl_calls(n: int, rubric: str) -> list[dict[str, Any]]:
    """Return ``n`` verl calls (keyword arguments of compute_score_async)."""
    if rubric == "python-codegen":
        rows = [
            json.loads(line)
            for line in (REPO / "eval_sets" / "codegen-demo.jsonl").read_text().splitlines()
        ]
        return [
            {
                "data_source": "codegen",
                "solution_str": rows[i % len(rows)]["response"],
                "ground_truth": rows[i % len(rows)]["task"],
                "extra_info": {"prompt": rows[i % len(rows)]["prompt"], "index": i // 8},
            }
            for i in range(n)
        ]
    return [
        {
            "data_source": "bench",
            "solution_str": f"answer {i}",
            "ground_truth": None,
            "extra_info": {"index": i // 8, "num_turns": i % 12 + 1, "response_length": 64 + i},
        }
        for i in range(n)
    ]


def rejections(url: str) -> float:
    """Return the server's count of refused requests (429s), from /metrics."""
    import httpx

    text = httpx.get(f"{url}/metrics", timeout=10).text
    return sum(
        float(m.group(1))
        for m in re.finditer(r"^arbiter_rejections_total\{[^}]*\} ([0-9.e+]+)$", text, re.M)
    )


async def one_batch(url: str, key: str, rubric: str, calls: list[dict[str, Any]]) -> float:
    """Send the calls' samples as one batch request; return seconds."""
    from arbiter.adapters.verl import sample_of
    from arbiter.client import AsyncArbiterClient

    samples = [{**sample_of(**c), "id": f"s{i}"} for i, c in enumerate(calls)]
    async with AsyncArbiterClient(url, key) as client:
        started = time.perf_counter()
        batch = await client.rewards(samples, rubric)
        elapsed = time.perf_counter() - started
    assert len(batch.rewards) == len(calls)
    return elapsed


async def concurrent_calls(calls: list[dict[str, Any]]) -> float:
    """Await one compute_score_async per sample, all at once, as verl does; return seconds."""
    from arbiter.adapters import verl

    verl._state = None  # a fresh adapter each run: its first call fetches the rubric
    verl._ready()
    started = time.perf_counter()
    scores = await asyncio.gather(*(verl.compute_score_async(**c) for c in calls))
    elapsed = time.perf_counter() - started
    assert len(scores) == len(calls)
    return elapsed


def main() -> None:
    """Measure both in each run; print medians, the 429 count, and the ratio last."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--samples", type=int, default=1024)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--rubric", default="efficiency-only")
    args = parser.parse_args()

    from arbiter.store.db import Store

    with tempfile.TemporaryDirectory() as tmp:
        db_url = f"sqlite:///{Path(tmp) / 'bench.db'}"
        store = Store(db_url)
        store.migrate()
        _, key = store.create_key("bench-trainers", "trainer")
        store.close()
        with arbiter_serve(db_url) as (url, _):
            os.environ.update(
                {
                    "ARBITER_URL": url,
                    "ARBITER_API_KEY": key,
                    "ARBITER_RUBRIC": args.rubric,
                    "ARBITER_ABSTAIN": "zero",
                }
            )
            calls = verl_calls(args.samples, args.rubric)
            batch_s: list[float] = []
            concurrent_s: list[float] = []
            refused = 0.0
            for _ in range(args.runs):
                batch_s.append(asyncio.run(one_batch(url, key, args.rubric, calls)))
                before = rejections(url)
                concurrent_s.append(asyncio.run(concurrent_calls(calls)))
                refused += rejections(url) - before
    batch = statistics.median(batch_s)
    concurrent = statistics.median(concurrent_s)
    print(f"rubric {args.rubric}, {args.samples} samples, {args.runs} runs (medians)")
    runs = ", ".join(f"{x:.3f}" for x in batch_s)
    print(f"one batch request: {batch:.3f} s (runs: {runs})")
    runs = ", ".join(f"{x:.3f}" for x in concurrent_s)
    print(f"{args.samples} concurrent verl calls: {concurrent:.3f} s (runs: {runs})")
    print(f"429 answers during the concurrent calls: {int(refused)}")
    print(f"ratio concurrent/batch: {concurrent / batch:.2f}")


if __name__ == "__main__":
    main()
