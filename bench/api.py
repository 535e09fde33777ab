"""Samples/s through HTTP (logging every sample to SQLite) against in-process scoring.

Run: ``.venv/bin/python -m bench.api [--requests N] [--runs R]``.

The server is ``arbiter serve`` in its own process; the load comes from a
separate client process with 8 concurrent connections sending batches of 256
samples (prompt ~200 and response ~1,000 characters) under the
efficiency-only rubric. The floor is the same batches scored in-process with
``score_samples`` (graders + compose, no HTTP, no storage), in the same run.
Prints samples/s for both, request p50/p99, and the ratio last.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.serve import arbiter_serve

BATCH = 256
CONNECTIONS = 8
RUBRIC = "efficiency-only"


def make_batches(n: int) -> list[bytes]:
    """Return ``n`` request bodies of BATCH samples each, encoded once up front."""
    bodies = []
    for b in range(n):
        samples = [
            {
                "id": f"b{b}-s{i}",
                "group_id": f"b{b}-g{i // 8}",
                "prompt": ("Write a function that parses ISO week dates. " * 5)[:200],
                "response": ("def parse_week(s):\n    year, week = s.split('-W')\n" * 25)[:1000],
                "metrics": {
                    "turns": (b + i) % 12 + 1,
                    "completion_tokens": 200 + 13 * i,
                    "wall_s": 1.5 + i % 30,
                    "tool_calls": i % 9,
                },
            }
            for i in range(BATCH)
        ]
        bodies.append(json.dumps({"rubric": RUBRIC, "samples": samples}).encode())
    return bodies


def client_main(url: str, key: str, n: int, out: str) -> None:
    """Drive the server with CONNECTIONS concurrent connections (run in its own process)."""
    import httpx

    bodies = make_batches(n)
    latencies: list[float] = []
    errors = 0

    async def go() -> float:
        nonlocal errors
        queue: asyncio.Queue[bytes] = asyncio.Queue()
        for body in bodies:
            queue.put_nowait(body)
        headers = {"Authorization": f"Bearer {key}", "content-type": "application/json"}
        limits = httpx.Limits(max_connections=CONNECTIONS, max_keepalive_connections=CONNECTIONS)
        async with httpx.AsyncClient(
            base_url=url, headers=headers, limits=limits, timeout=120
        ) as http:

            async def worker() -> None:
                nonlocal errors
                while not queue.empty():
                    body = queue.get_nowait()
                    started = time.perf_counter()
                    response = await http.post("/v1/rewards", content=body)
                    latencies.append(time.perf_counter() - started)
                    if response.status_code != 200:
                        errors += 1

            started = time.perf_counter()
            await asyncio.gather(*(worker() for _ in range(CONNECTIONS)))
            return time.perf_counter() - started

    cpu_before = time.process_time()
    elapsed = asyncio.run(go())
    cpu = time.process_time() - cpu_before
    Path(out).write_text(
        json.dumps({"elapsed_s": elapsed, "latencies": latencies, "errors": errors, "cpu_s": cpu})
    )


def in_process(n: int) -> float:
    """Return samples/s of score_samples on the same batches, in this process."""
    from arbiter.graders.types import Sample
    from arbiter.rubrics.loader import load_rubric
    from arbiter.rubrics.score import score_samples

    rubric = load_rubric(
        Path(__file__).resolve().parents[1] / "rubrics" / "library" / "efficiency.yaml"
    )
    batches = [
        [Sample.model_validate(s) for s in json.loads(body)["samples"]] for body in make_batches(n)
    ]

    async def go() -> float:
        started = time.perf_counter()
        for batch in batches:
            await score_samples(rubric, batch)
        return time.perf_counter() - started

    return n * BATCH / asyncio.run(go())


def cpu_seconds(pid: int) -> float:
    """Return user+system CPU seconds of a process and its children so far (Linux)."""
    total = 0.0
    ticks = os.sysconf("SC_CLK_TCK")
    pids = [pid]
    children = Path(f"/proc/{pid}/task/{pid}/children")
    if children.exists():
        pids += [int(p) for p in children.read_text().split()]
    for p in pids:
        fields = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()
        total += (int(fields[11]) + int(fields[12])) / ticks
    return total


def through_http(n: int, workdir: Path, workers: int) -> dict[str, Any]:
    """Run the load against a real server; return rate, latencies, errors, CPU and rows logged."""
    from arbiter.store.db import Store

    db_url = f"sqlite:///{workdir / 'bench.db'}"
    store = Store(db_url)
    store.migrate()
    _, key = store.create_key("bench", "trainer")
    try:
        with arbiter_serve(db_url, "--workers", str(workers)) as (url, server):
            out = workdir / "client.json"
            subprocess.run(
                [sys.executable, "-m", "bench.api", "--client", url, key, str(n), str(out)],
                check=True,
            )
            result: dict[str, Any] = json.loads(out.read_text())
            logged = store.count_rewards()
            result["server_cpu_s"] = cpu_seconds(server.pid)
    finally:
        store.close()
    result["rate"] = n * BATCH / result["elapsed_s"]
    result["logged"] = logged
    return result


def main() -> None:
    """Measure both, several runs, and print medians with the ratio last."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument(
        "--requests", type=int, default=120, help="Requests of 256 samples per run."
    )
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--workers", type=int, default=1, help="Server worker processes.")
    parser.add_argument(
        "--client", nargs=4, metavar=("URL", "KEY", "N", "OUT"), help=argparse.SUPPRESS
    )
    args = parser.parse_args()
    if args.client:
        url, key, n, out = args.client
        client_main(url, key, int(n), out)
        return

    http_rates, floor_rates, p50s, p99s = [], [], [], []
    for run in range(args.runs):
        with tempfile.TemporaryDirectory() as tmp:
            result = through_http(args.requests, Path(tmp), args.workers)
        rate, latencies = result["rate"], sorted(result["latencies"])
        errors, logged = result["errors"], result["logged"]
        per_server_cpu = args.requests * BATCH / result["server_cpu_s"]
        floor = in_process(args.requests)
        p50 = statistics.median(latencies)
        p99 = latencies[min(len(latencies) - 1, int(0.99 * len(latencies)))]
        expected = args.requests * BATCH
        print(
            f"run {run + 1}: http {rate:,.0f} samples/s "
            f"(p50 {p50 * 1000:.0f} ms, p99 {p99 * 1000:.0f} ms, {errors} errors, "
            f"{logged}/{expected} logged; server CPU {result['server_cpu_s']:.1f} s = "
            f"{per_server_cpu:,.0f} samples per CPU-second, client CPU {result['cpu_s']:.1f} s); "
            f"in-process {floor:,.0f} samples/s"
        )
        if errors or logged != expected:
            raise SystemExit("lost or failed requests: the figures above are not valid")
        http_rates.append(rate)
        floor_rates.append(floor)
        p50s.append(p50)
        p99s.append(p99)
    http = statistics.median(http_rates)
    floor = statistics.median(floor_rates)
    print(f"in-process score_samples (floor): {floor:,.0f} samples/s (median of {args.runs})")
    print(f"through HTTP, logged to SQLite:  {http:,.0f} samples/s (median of {args.runs})")
    p50, p99 = statistics.median(p50s) * 1000, statistics.median(p99s) * 1000
    print(f"request latency: p50 {p50:.0f} ms, p99 {p99:.0f} ms")
    print(f"ratio http/in-process: {http / floor:.2f}")


if __name__ == "__main__":
    main()
