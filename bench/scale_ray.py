"""The Ray parts of ``bench.scale``; run inside a loopback-only network namespace.

``python -m bench.scale_ray executor``: the Ray executor against the local pool.
``python -m bench.scale_ray workers``: many small simulated workers.
Each prints one JSON line for ``bench.scale`` to read.
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
# A shared machine: Ray's memory monitor must not kill workers for what others use.
os.environ.setdefault("RAY_memory_monitor_refresh_ms", "0")

import ray
from ray.cluster_utils import Cluster

from arbiter.graders.executor import RemoteGrader
from arbiter.graders.ray_executor import RayExecutor, StreamingActor
from arbiter.graders.runner import GraderJob, run_jobs
from arbiter.graders.sandbox import PoolConfig, SandboxPool
from arbiter.graders.types import GradeResult, Sample
from arbiter.graders.unit_tests import UnitTestsConfig, UnitTestsGrader
from bench.api import cpu_seconds
from bench.scale import DATA


def _cluster(num_cpus: int, nodes: int = 1) -> Cluster:
    cluster = Cluster(
        initialize_head=True,
        head_node_args={"num_cpus": num_cpus, "gcs_server_port": 6392, "include_dashboard": False},
    )
    for _ in range(nodes - 1):
        cluster.add_node(num_cpus=num_cpus)
    return cluster


def executor_part() -> dict[str, Any]:
    """Canonical HumanEvalPack solutions, twice over: local pool vs Ray actors, same cores."""
    from arbiter.eval_loaders import load_humanevalpack

    cores = os.cpu_count() or 1
    base = [s for s in load_humanevalpack(DATA) if s.id.endswith("/canonical")]
    samples = [s.model_copy(update={"id": f"{s.id}#{k}"}) for k in range(2) for s in base]
    config = UnitTestsConfig(timeout_s=10)

    def jobs(grader: Any, items: list[Sample]) -> list[GraderJob]:
        return [GraderJob(s, "tests", grader, config, 60.0) for s in items]

    local = UnitTestsGrader(SandboxPool(PoolConfig(slots=cores)))
    local.pool.start()
    asyncio.run(run_jobs(jobs(local, samples[:32])))  # warm: plans, imports
    started = time.perf_counter()
    here = asyncio.run(run_jobs(jobs(local, samples)))
    local_s = time.perf_counter() - started
    local.close()

    cluster = _cluster(cores)
    executor = RayExecutor(cluster.address, actors=cores, cpus_per_actor=1)
    try:
        executor.start()
        remote = RemoteGrader.for_grader(UnitTestsGrader, executor)

        async def on_ray(items: list[Sample]) -> list[GradeResult]:
            return await run_jobs(jobs(remote, items))

        loop = asyncio.new_event_loop()
        loop.run_until_complete(on_ray(samples[:32]))
        started = time.perf_counter()
        there = loop.run_until_complete(on_ray(samples))
        ray_s = time.perf_counter() - started
    finally:
        executor.close()
        ray.shutdown()
        cluster.shutdown()  # type: ignore[no-untyped-call]
    same = [a.score for a in here] == [b.score for b in there]
    return {"items": len(samples), "local_s": local_s, "ray_s": ray_s, "same": same}


class SimWorkers(StreamingActor):
    """``workers`` simulated workers in one actor: each a fast place, plus a long lane.

    A task sleeps for its simulated duration (``sample.metrics.wall_s``); one
    still running after ``long_after_s`` gives its fast place to the next task,
    as a sandbox run does when it moves to the long lane (``lanes=False``: it
    keeps the place to the end).
    """

    def __init__(self, workers: int, long_after_s: float, lanes: bool) -> None:
        self.workers = workers
        self.long_after_s = long_after_s
        self.lanes = lanes
        self._fast: asyncio.Semaphore | None = None

    async def ready(self) -> str:
        """Return this actor's node id."""
        return str(ray.get_runtime_context().get_node_id())

    async def grade(self, grader: str, sample: Sample, config: Any) -> tuple[GradeResult, str]:
        """Sleep for the task's duration, in the fast lane or past it."""
        if self._fast is None:
            self._fast = asyncio.Semaphore(self.workers)
        duration = sample.metrics.wall_s if sample.metrics and sample.metrics.wall_s else 0.0
        await self._fast.acquire()
        held = True
        try:
            if self.lanes and duration > self.long_after_s:
                await asyncio.sleep(self.long_after_s)
                self._fast.release()
                held = False
                duration -= self.long_after_s
            await asyncio.sleep(duration)
        finally:
            if held:
                self._fast.release()
        return GradeResult(grader=grader, grader_version="sim", score=1.0), "sim"


FAST_S, SLOW_S, SLOW_SHARE, LONG_AFTER_S = 0.05, 1.0, 0.1, 0.1
TASKS = 10_000
#: Tasks per open-loop latency phase.
OPEN_LOOP_TASKS = 3_000
ACTORS = 4


def _tasks(count: int, *, fast_only: bool = False) -> list[tuple[Sample, bool]]:
    out = []
    for i in range(count):
        slow = not fast_only and i % round(1 / SLOW_SHARE) == 0
        duration = SLOW_S if slow else FAST_S
        sample = Sample.model_validate(
            {"id": f"t{i}", "response": "", "metrics": {"wall_s": duration}}
        )
        out.append((sample, slow))
    return out


def _actors_cpu() -> float:
    """Return the CPU seconds the simulated workers' actor processes have used so far (Linux)."""
    total = 0.0
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            if proc.joinpath("cmdline").read_bytes().startswith(b"ray::SimWorkers"):
                total += cpu_seconds(int(proc.name))
        except (OSError, ValueError):  # gone meanwhile
            continue
    return total


async def _drive(executor: RayExecutor, tasks: list[tuple[Sample, bool]]) -> dict[str, Any]:
    """Send every task at once; return the batch's rate, its steady rate and the fast p50.

    The batch rate counts the whole batch, so it includes the drain at its end
    (the last slow tasks run their full second while the workers go idle): a
    fixed second that weighs more the more workers there are. The steady rate
    counts the completions between the batch's 10th and 90th percentile, which
    neither the ramp-up nor the drain reaches.
    """
    config = UnitTestsConfig()
    latencies: list[tuple[float, bool]] = []
    finished: list[float] = []

    async def one(sample: Sample, slow: bool) -> None:
        sent = time.perf_counter()
        await executor.grade("sim", sample, config)
        finished.append(time.perf_counter())
        latencies.append((finished[-1] - sent, slow))

    driver_cpu, actors_cpu = time.process_time(), _actors_cpu()
    started = time.perf_counter()
    await asyncio.gather(*(one(s, slow) for s, slow in tasks))
    wall = time.perf_counter() - started
    driver_cpu, actors_cpu = time.process_time() - driver_cpu, _actors_cpu() - actors_cpu
    fast = [t for t, slow in latencies if not slow]
    first, last = len(finished) // 10, len(finished) * 9 // 10
    return {
        "rate": len(tasks) / wall,
        # Every thread of the driver (Ray's own included) and of the actors' processes.
        "driver_cpu_us": 1e6 * driver_cpu / len(tasks),
        "actors_cpu_us": 1e6 * actors_cpu / len(tasks),
        "steady_rate": (last - first) / (finished[last] - finished[first]),
        "fast_p50_ms": 1000 * statistics.median(fast),
    }


async def _drive_at_rate(
    executor: RayExecutor, tasks: list[tuple[Sample, bool]], rate: float
) -> float:
    """Send the tasks at ``rate`` per second (open loop); return the fast ones' p50 in ms.

    Latency counts from each task's scheduled send, so a driver that falls
    behind its schedule is charged for it.
    """
    config = UnitTestsConfig()
    fast: list[float] = []
    started = time.perf_counter()

    async def one(i: int, sample: Sample, slow: bool) -> None:
        due = started + i / rate
        await asyncio.sleep(max(0.0, due - time.perf_counter()))
        await executor.grade("sim", sample, config)
        if not slow:
            fast.append(time.perf_counter() - due)

    await asyncio.gather(*(one(i, s, slow) for i, (s, slow) in enumerate(tasks)))
    return 1000 * statistics.median(fast)


def workers_part() -> dict[str, Any]:
    """Throughput against worker count; the fast tasks' p50 under the mix against alone."""
    counts = [32, 64, 128]
    cluster = _cluster(num_cpus=ACTORS, nodes=2)
    rates: list[float] = []
    steady: list[float] = []
    cpu: list[tuple[float, float]] = []
    out: dict[str, Any] = {"workers": counts}
    try:
        ray.init(address=cluster.address, log_to_driver=False)
        loop = asyncio.new_event_loop()

        def executor_for(n: int, lanes: bool) -> RayExecutor:
            per_actor = n // ACTORS
            executor = RayExecutor(
                actors=ACTORS,
                concurrency=per_actor * 8,
                max_queue=4 * TASKS,
                actor_class=SimWorkers,
                actor_args=(per_actor, LONG_AFTER_S, lanes),
            )
            executor.start()
            return executor

        for n in counts:
            executor = executor_for(n, lanes=True)
            result = loop.run_until_complete(_drive(executor, _tasks(TASKS)))
            rates.append(result["rate"])
            steady.append(result["steady_rate"])
            cpu.append((result["driver_cpu_us"], result["actors_cpu_us"]))
            executor.close()
        # Latency under a steady load below capacity (0.4 of the throughput the
        # most workers reached), the same arrivals with and without the slow
        # tenth, and with no long lane; all at once would measure only the queue.
        rate = 0.4 * rates[-1]
        out["offered_rate"] = rate
        executor = executor_for(counts[-1], lanes=True)
        out["fast_p50_mixed_ms"] = loop.run_until_complete(
            _drive_at_rate(executor, _tasks(OPEN_LOOP_TASKS), rate)
        )
        out["fast_p50_alone_ms"] = loop.run_until_complete(
            _drive_at_rate(executor, _tasks(OPEN_LOOP_TASKS, fast_only=True), rate)
        )
        executor.close()
        executor = executor_for(counts[-1], lanes=False)
        out["fast_p50_mixed_no_lanes_ms"] = loop.run_until_complete(
            _drive_at_rate(executor, _tasks(OPEN_LOOP_TASKS), rate)
        )
        executor.close()
    finally:
        ray.shutdown()
        cluster.shutdown()  # type: ignore[no-untyped-call]
    out["rate"] = rates
    out["steady_rate"] = steady
    out["cpu_us"] = cpu
    return out


def main() -> None:
    mode = sys.argv[1]
    result = executor_part() if mode == "executor" else workers_part()
    print(json.dumps(result))


if __name__ == "__main__":
    main()
