"""Scheduling and scale-out: slow candidates, the Ray executor, many small workers.

Run as ``python -m bench.scale [--part 1|2|3] [--runs N]``; each part prints its
baseline and ours, measured in the same run, and the ratio last.

1. **Slow candidates.** HumanEvalPack canonical + buggy solutions cycled to
   1,024 rollouts, tests only, ``timeout_s: 10``, the grader's default
   configuration, one batch. Baseline: the same set without its looping items
   (those that end in a timeout), plus the timeout. Target ratio <= 1.3.
   ``--before`` also runs the old schedule (wall-clock limits, no long lane).
   ``--load L`` (repeatable) repeats the part under ``L x cores`` busy
   processes of the CPU load generator, baseline and ours alike (target
   <= 1.5 at 4x); ``--load 0`` is the quiet machine.
2. **Ray executor against the local pool** on the same cores: the same
   rollouts graded by :class:`arbiter.graders.sandbox.ray_executor.RayExecutor` on a
   one-node cluster and by the local pool; ratio (local wall / Ray wall)
   >= 0.8, with the per-item overhead.
3. **Many small simulated workers.** 10,000 concurrent tasks of mixed
   durations (90% 50 ms, 10% 1 s of simulated work) on a Ray cluster of
   growing numbers of workers: throughput against worker count, both over the
   whole batch and in its steady state (the completions between its 10th and
   90th percentile; the batch's last second is a drain of slow tasks that no
   number of workers shortens). Then the
   p50 latency of the fast tasks under a steady load (open loop, at 0.4 of
   the largest cluster's throughput) with the mix, against the same arrivals
   with only the fast tasks (and, for reference, under the mix with no long
   lane).

The Ray parts start their clusters inside a network namespace with only
loopback up (``unshare --net``), so nothing listens beyond this host.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from arbiter.eval_loaders import load_humanevalpack
from arbiter.graders.registry import default_registry
from arbiter.graders.sandbox import PoolConfig, SandboxPool
from arbiter.graders.types import Sample
from arbiter.graders.unit_tests import UnitTestsGrader
from arbiter.load import cpu_load
from arbiter.rubrics.loader import parse_rubric
from arbiter.rubrics.score import score_samples

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "humanevalpack_python.jsonl"
ROLLOUTS = 1024
TIMEOUT_S = 10.0


def rubric_text(**config: float) -> str:
    """The tests-only rubric, its unit_tests config ``timeout_s`` plus ``config``."""
    settings = ", ".join(f"{k}: {v:g}" for k, v in {"timeout_s": TIMEOUT_S, **config}.items())
    return f"""
name: tests-only
version: 1
components:
  tests:
    grader: unit_tests
    weight: 1.0
    config: {{{settings}}}
combine: weighted_sum
on_missing: renormalize
"""


def rollouts(count: int = ROLLOUTS) -> list[Sample]:
    """HumanEvalPack's canonical and buggy solutions, cycled to ``count`` unique rollouts."""
    if not DATA.exists():
        sys.exit(f"{DATA} is missing: the benchmark needs ../shared/data beside the checkout")
    base = load_humanevalpack(DATA)
    out = []
    for i in range(count):
        s = base[i % len(base)]
        out.append(s.model_copy(update={"id": f"{s.id}#{i // len(base)}"}))
    return out


def _grade(samples: list[Sample], pool_config: PoolConfig | None, **config: float) -> Any:
    registry = default_registry()
    if pool_config is not None:
        registry.add_instance(UnitTestsGrader(SandboxPool(pool_config)))
    rubric = parse_rubric(rubric_text(**config))
    grader = registry.instance("unit_tests")
    assert isinstance(grader, UnitTestsGrader)
    grader.pool.start()
    try:
        started = time.perf_counter()
        rewards = asyncio.run(score_samples(rubric, samples, registry=registry, normalize=False))
        return time.perf_counter() - started, rewards
    finally:
        registry.close()


def _timed_out(component: Any) -> bool:
    if component.failure is not None and component.failure.kind == "timeout":
        return True
    return any(t.get("outcome") == "timeout" for t in component.details.get("tests", ()))


def part1(runs: int, before: bool, load: float = 0.0) -> float:
    """Run part 1 at ``load`` x cores busy processes; print it and return the ratio."""
    if load:
        with cpu_load(load) as burners:
            print(f"-- under {burners} busy processes ({load:g}x the cores)")
            return _part1(runs, before)
    return _part1(runs, before)


def _part1(runs: int, before: bool) -> float:
    print(
        f"== 1. {ROLLOUTS} HumanEvalPack rollouts, timeout_s {TIMEOUT_S:g}, {os.cpu_count()} cores"
    )
    samples = rollouts()
    ours, clean, old, loopers = [], [], [], 0
    for r in range(runs):
        wall, rewards = _grade(samples, None)
        # A looper may pass a few asserts before it loops: any unit that timed out.
        timeouts = {rw.id for rw in rewards if _timed_out(rw.components["tests"])}
        loopers = len(timeouts)
        rest = [s for s in samples if s.id not in timeouts]
        clean_wall, _ = _grade(rest, None)
        ours.append(wall)
        clean.append(clean_wall)
        line = f"run {r + 1}: ours {wall:6.1f} s  without the {loopers} loopers {clean_wall:5.1f} s"
        if before:
            # The old schedule: a wall-clock limit, one run per core, no long lane.
            old_wall, _ = _grade(samples, PoolConfig(long_slots=0), wall_factor=1)
            old.append(old_wall)
            line += f"  old schedule {old_wall:6.1f} s"
        print(line, flush=True)
    base = statistics.median(clean) + TIMEOUT_S
    print(f"baseline: without loopers + timeout  {base:6.1f} s (median)")
    if old:
        print(f"old schedule (wall-clock, no lane)   {statistics.median(old):6.1f} s (median)")
    print(f"ours: the whole set                  {statistics.median(ours):6.1f} s (median)")
    ratio: float = statistics.median(ours) / base
    print(f"ratio ours / baseline: {ratio:.2f}  (target <= 1.3 quiet, <= 1.5 at 4x load)")
    return ratio


def _in_netns(module: str, args: list[str]) -> dict[str, Any]:
    """Run ``python -m module args`` in a fresh network namespace; return its JSON line."""
    from bench.netns import netns_command

    proc = subprocess.run(
        netns_command([sys.executable, "-m", module, *args]),
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode != 0:
        sys.exit(f"{module} failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    return dict(json.loads(proc.stdout.strip().splitlines()[-1]))


def part2(runs: int) -> None:
    print(f"== 2. Ray executor against the local pool, {os.cpu_count()} cores")
    walls: list[tuple[float, float]] = []
    for r in range(runs):
        result = _in_netns("bench.scale_ray", ["executor"])
        walls.append((result["local_s"], result["ray_s"]))
        items = result["items"]
        print(
            f"run {r + 1}: local pool {result['local_s']:6.2f} s  Ray {result['ray_s']:6.2f} s  "
            f"({items} items, same results: {result['same']})",
            flush=True,
        )
    local = statistics.median(w[0] for w in walls)
    ray = statistics.median(w[1] for w in walls)
    print(f"per-item overhead of Ray: {1000 * (ray - local) / items:.2f} ms (median)")
    print(f"ratio local / Ray: {local / ray:.2f}  (target >= 0.8)")


def part3(runs: int) -> None:
    print("== 3. 10,000 concurrent tasks of mixed durations on many small simulated workers")
    rows: list[dict[str, Any]] = []
    for r in range(runs):
        result = _in_netns("bench.scale_ray", ["workers"])
        rows.append(result)
        print(f"run {r + 1}: " + json.dumps(result), flush=True)
    counts = rows[0]["workers"]
    rates = [statistics.median(row["rate"][i] for row in rows) for i in range(len(counts))]
    steady = [statistics.median(row["steady_rate"][i] for row in rows) for i in range(len(counts))]
    cpu = [
        [statistics.median(row["cpu_us"][i][side] for row in rows) for side in (0, 1)]
        for i in range(len(counts))
    ]
    print("workers   batch rate (drain included)   steady rate (10th-90th pct.)   CPU a task")
    for n, rate, flow, (driver, actors) in zip(counts, rates, steady, cpu, strict=True):
        batch_linear = rate / rates[0] * counts[0] / n
        linear = flow / steady[0] * counts[0] / n
        print(
            f"{n:>7}   {rate:6.0f} tasks/s ({batch_linear:.2f} of linear)"
            f"       {flow:6.0f} tasks/s ({linear:.2f} of linear)"
            f"   driver {driver:4.0f} us, actors {actors:4.0f} us"
        )
    alone = statistics.median(row["fast_p50_alone_ms"] for row in rows)
    mixed = statistics.median(row["fast_p50_mixed_ms"] for row in rows)
    fifo = statistics.median(row["fast_p50_mixed_no_lanes_ms"] for row in rows)
    offered = statistics.median(row["offered_rate"] for row in rows)
    print(f"open loop at {offered:.0f} tasks/s on {counts[-1]} workers:")
    print(f"fast tasks' p50 alone {alone:.1f} ms, under the mix {mixed:.1f} ms")
    print(f"(under the mix without a long lane: {fifo:.1f} ms, {fifo / alone:.2f}x alone)")
    print(f"ratio p50 mixed / alone: {mixed / alone:.2f}  (target <= 2)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--part", type=int, choices=(1, 2, 3), action="append")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--before", action="store_true", help="part 1: also the old schedule")
    parser.add_argument(
        "--load",
        type=float,
        action="append",
        help="part 1: busy processes per core (repeatable; 0 is quiet; default: quiet only)",
    )
    args = parser.parse_args()
    parts = args.part or [1, 2, 3]
    if 1 in parts:
        ratios = {level: part1(args.runs, args.before, level) for level in args.load or [0.0]}
        if len(ratios) > 1:
            print(
                "part 1 ratios: "
                + ", ".join(
                    f"{'quiet' if not k else f'{k:g}x load'} {v:.2f}" for k, v in ratios.items()
                )
            )
    if 2 in parts:
        part2(args.runs)
    if 3 in parts:
        part3(args.runs)


if __name__ == "__main__":
    main()
