"""A multi-node Ray cluster scenario for the executor tests; prints one JSON line.

Run by ``tests/graders/test_ray_executor.py`` as ``python -m tests.graders.ray_scenario``
inside a network namespace with only loopback up (see ``bench.netns``): a head
and two more nodes, each with its own raylet, on this machine.
"""

from __future__ import annotations

import asyncio
import contextlib
import http.server
import json
import os
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
# The machine is shared: Ray's memory monitor would kill workers for what others use.
os.environ.setdefault("RAY_memory_monitor_refresh_ms", "0")

from ray.cluster_utils import Cluster

from arbiter.graders.executor import RemoteGrader, tenant
from arbiter.graders.ray_executor import RayExecutor
from arbiter.graders.registry import default_registry
from arbiter.graders.repository.snapshots import SnapshotStore
from arbiter.graders.types import Sample, TaskSpec
from arbiter.graders.unit_tests import UnitTestsConfig
from bench.serve import free_port, wait_ready
from tests.graders.repository.conftest import BugTask, _bug_task

TESTS = "assert f(2) == 4\nassert f(3) == 9\n"
TASK = TaskSpec(kind="python_function", tests=TESTS, entry_point="f")
# Answers that take a while (a second of wall time, no CPU), so a batch is in
# flight on every actor when one is killed.
SLOW = "import time\ndef f(x):\n    time.sleep(0.3)\n    return x * x\n"
# Two seconds a job: still running when the fault strikes, whatever the machine.
SLOWER = "import time\ndef f(x):\n    time.sleep(1.0)\n    return x * x\n"
CODES = {
    "right": "def f(x):\n    return x * x\n",
    "wrong": "def f(x):\n    return x + x\n",
    "half": "def f(x):\n    return 4 if x == 2 else 0\n",
    "syntax": "def f(x) return x\n",
    "raises": "def f(x):\n    raise ValueError(x)\n",
    "insecure": (
        "import subprocess\ndef f(x):\n    subprocess.call('true', shell=True)\n    return x * x\n"
    ),
}


def sample(name: str, code: str) -> Sample:
    return Sample(id=name, response=f"```python\n{code}\n```", task=TASK)


def summary(result: Any) -> list[Any]:
    """What must agree between the local pool and the cluster (not latencies or pids)."""
    d = result.details
    return [
        result.grader,
        result.score,
        # A candidate's fault read as 0 keeps its kind in the details.
        result.failure.kind.value if result.failure else d.get("failure_kind"),
        d.get("passed"),
        d.get("total"),
        sorted(v.type.value for v in result.violations),
    ]


async def same_as_local(executor: RayExecutor) -> dict[str, Any]:
    registry = default_registry()
    out: dict[str, Any] = {}
    try:
        for grader in ("unit_tests", "bandit", "radon"):
            local = registry.instance(grader)
            remote = RemoteGrader.for_grader(type(local), executor)
            config = registry.get(grader).config_model()
            samples = [sample(name, code) for name, code in CODES.items()]
            here = await asyncio.gather(*(local.grade(s, config) for s in samples))
            there = await asyncio.gather(*(remote.grade(s, config) for s in samples))
            for s, a, b in zip(samples, here, there, strict=True):
                out[f"{grader}/{s.id}"] = {"local": summary(a), "ray": summary(b)}
    finally:
        registry.close()
    return out


class RepositorySource:
    """A snapshot the nodes lack, served by id over HTTP as a service serves it; fetches counted.

    Made before the cluster starts: its nodes (raylets, and the actors they start)
    keep their snapshots in an empty store of their own (``ARBITER_REPOSITORY_STORE``).
    The driver's ``ARBITER_REPOSITORY_SOURCE`` is set after the nodes started, so it
    reaches the actors through the executor alone, after the reward-model stage has
    connected this process to the cluster without it.
    """

    def __init__(self) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="arbiter-ray-repository-"))
        self.source = SnapshotStore(self.root / "source")
        self.bug: BugTask = _bug_task(self.source, self.root, hidden=True)
        self.fetches: list[str] = []
        source = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                parts = self.path.strip("/").split("/")
                if len(parts) != 4 or parts[:2] != ["v1", "repositories"] or parts[3] != "tarball":
                    self.send_error(404)
                    return
                source.fetches.append(parts[2])
                body = source.source.tarball(parts[2])
                self.send_response(200)
                self.send_header("Content-Type", "application/gzip")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        # The nodes' own setting: their raylets, started after this, inherit it.
        self.nodes = SnapshotStore(self.root / "nodes")
        os.environ["ARBITER_REPOSITORY_STORE"] = str(self.nodes.root)
        self.url = f"http://127.0.0.1:{self.server.server_port}"

    def to_the_driver(self) -> None:
        """The driver's setting, made once the nodes run: only the executor can pass it on."""
        os.environ["ARBITER_REPOSITORY_SOURCE"] = self.url

    def close(self) -> None:
        self.server.shutdown()
        shutil.rmtree(self.root, ignore_errors=True)


async def repository_by_id(executor: RayExecutor, repo: RepositorySource) -> dict[str, Any]:
    """A repository task by snapshot id on the cluster: fetched once, then kept."""
    config = UnitTestsConfig()
    gold, task = repo.bug.gold, repo.bug.task

    def patch(name: str, response: str) -> Sample:
        return Sample(id=name, response=response, task=task)

    first = await executor.grade("unit_tests", patch("first", gold), config)
    fetched_first = len(repo.fetches)
    batch = [patch(f"r{i}", gold) for i in range(3)] + [patch("unpatched", "")]
    results = await asyncio.gather(*(executor.grade("unit_tests", s, config) for s in batch))
    return {
        "snapshot": task.repository,
        "first": summary(first),
        "fetches_after_first": fetched_first,
        # Why a grading failed, should one (a failure's message says what the kind cannot).
        "messages": [r.failure.message[:300] if r.failure else None for r in (first, *results)],
        "scores": [r.score for r in results],
        "failure_kinds": [r.details.get("failure_kind") for r in results],
        "fetched": list(repo.fetches),
        "stored": repo.nodes.ids(),
        "source_has_it": task.repository in repo.source.ids(),
    }


async def batch_with_fault(executor: RayExecutor, fault: Any, size: int) -> dict[str, Any]:
    """Grade one quick sample and ``size - 1`` slow ones; once the quick one is in, call ``fault``.

    The slow ones are then all mid-run, so the fault's victims hold jobs that
    cannot finish before it strikes.
    """
    config = UnitTestsConfig(timeout_s=5)
    before = dict(executor.stats())
    codes = [CODES["right"]] + [SLOWER] * (size - 1)
    tasks = [
        asyncio.ensure_future(executor.grade("unit_tests", sample(f"s{i}", code), config))
        for i, code in enumerate(codes)
    ]
    await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
    in_flight = executor.stats()["in_flight"]
    victims = fault()
    held = sum(w.in_flight for w in victims)
    results = await asyncio.gather(*tasks)
    after = executor.stats()
    return {
        "in_flight_at_fault": in_flight,
        "victims_in_flight": held,
        # What the dead actors held, counting jobs sent to them after the fault
        # struck but before the driver saw them die.
        "victims_unanswered": sum(w.sent - w.answered for w in victims),
        "answered": len(results),
        "scores": [r.score for r in results],
        "failures": [r.failure.kind.value if r.failure else None for r in results],
        "done": after.get("done", 0) - before.get("done", 0),
        "retried": after.get("retried", 0) - before.get("retried", 0),
        "failed": after.get("failed", 0) - before.get("failed", 0),
        "deaths": after.get("actor_deaths", 0) - before.get("actor_deaths", 0),
    }


async def raised_and_abandoned(executor: RayExecutor) -> dict[str, Any]:
    """A grader that raises on its actor, alone and in a batch; a caller that stops waiting."""
    config = UnitTestsConfig(timeout_s=5)

    async def outcome(grader: str, s: Sample) -> str:
        try:
            result = await executor.grade(grader, s, config)
        except Exception as e:
            return type(e).__name__
        return f"score {result.score}"

    alone = await outcome("no_such_grader", sample("alone", CODES["right"]))
    calls = executor.stats()["calls"]
    # Three jobs for each of the five actors (three places each): sent as calls
    # of three, each with the raising job between two that grade.
    batch = await asyncio.gather(
        *(
            outcome(grader, sample(f"b{k}-{i}", CODES[code]))
            for k in range(5)
            for i, (grader, code) in enumerate(
                [("unit_tests", "right"), ("no_such_grader", "right"), ("unit_tests", "wrong")]
            )
        )
    )
    calls = executor.stats()["calls"] - calls
    # A caller whose deadline passes: the job's place comes back to the executor.
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(executor.grade("unit_tests", sample("gone", SLOWER), config), 0.2)
    await asyncio.sleep(0.5)
    return {
        "alone": alone,
        "batch": batch,
        "batch_calls": calls,
        "in_flight_after_abandon": executor.stats()["in_flight"],
    }


async def idle_node_kill(executor: RayExecutor, cluster: Any, node: Any) -> dict[str, Any]:
    """Kill a node whose actors hold no job; see how long until the executor knows."""
    while executor.stats()["in_flight"] or executor.stats()["queued"]:
        await asyncio.sleep(0.05)
    on_node = [w for w in executor._workers if w.alive and w.node == node.node_id]
    before = dict(executor.stats())
    cluster.remove_node(node, allow_graceful=False)
    started = time.monotonic()
    marked_s = None
    while time.monotonic() - started < 60:
        if not any(w.alive for w in on_node):
            marked_s = time.monotonic() - started
            break
        await asyncio.sleep(0.1)
    after = executor.stats()
    return {
        "actors": len(on_node),
        "marked_dead_after_s": marked_s,
        "deaths": after["actor_deaths"] - before.get("actor_deaths", 0),
        "failed": after.get("failed", 0) - before.get("failed", 0),
        "retried": after.get("retried", 0) - before.get("retried", 0),
    }


async def fairness(executor: RayExecutor) -> list[str]:
    """A big tenant queues 20 jobs, then a small one 3: round-robin serves the small one early."""
    config = UnitTestsConfig(timeout_s=5)
    order: list[str] = []

    async def one(who: str, i: int) -> None:
        with tenant(who):
            await executor.grade("unit_tests", sample(f"{who}{i}", SLOW), config)
        order.append(who)

    # Tasks start in the order they were made: the big tenant's jobs queue first.
    big = [asyncio.ensure_future(one("big", i)) for i in range(20)]
    small = [asyncio.ensure_future(one("small", i)) for i in range(3)]
    await asyncio.gather(*big, *small)
    return order


def http_back_pressure(address: str) -> dict[str, Any]:
    """``arbiter serve`` on the cluster with a small queue: a batch over it gets 429."""
    import subprocess
    import tempfile

    import httpx

    port = free_port()
    root = tempfile.mkdtemp(prefix="arbiter-ray-serve-")
    env = {
        **os.environ,
        "ARBITER_DATABASE_URL": f"sqlite:///{root}/arbiter.db",
        "ARBITER_PORT": str(port),
        "ARBITER_AUTH": "disabled",
        "ARBITER_RAY_ADDRESS": address,
        # python-codegen has five components: two samples (10 jobs) fit, five (25) do not.
        "ARBITER_RAY_MAX_QUEUE": "12",
        # Its share of the cluster: one actor, one CPU (the default would take all).
        "ARBITER_RAY_ACTORS": "1",
        "ARBITER_DRIFT_ENABLED": "false",
    }
    log = open(f"{root}/serve.log", "wb")  # noqa: SIM115 - the server's, closed below
    server = subprocess.Popen(
        [sys.executable, "-m", "arbiter", "serve"], env=env, stdout=log, stderr=log
    )
    url = f"http://127.0.0.1:{port}"
    out: dict[str, Any] = {}
    try:
        try:  # readiness of a process we started, not the behaviour under test
            wait_ready(url, server, 90)
        except RuntimeError as e:
            with open(f"{root}/serve.log") as f:
                raise RuntimeError(f"{e}: {f.read()[-3000:]}") from None

        def body(n: int) -> dict[str, Any]:
            samples = [
                {
                    "id": f"h{i}",
                    "response": f"```python\n{CODES['right']}```",
                    "task": {"kind": "python_function", "tests": TESTS, "entry_point": "f"},
                }
                for i in range(n)
            ]
            return {"rubric": "python-codegen", "samples": samples}

        with httpx.Client(base_url=url, timeout=180) as http:
            over = http.post("/v1/rewards", json=body(5))
            fits = http.post("/v1/rewards", json=body(2))
        import ray

        # The server's actors hold what the cluster no longer has free.
        out["server_cpus"] = ray.cluster_resources()["CPU"] - ray.available_resources()["CPU"]
        out["over"] = {
            "status": over.status_code,
            "retry_after": over.headers.get("retry-after"),
            "code": over.json().get("code"),
        }
        rewards = fits.json().get("rewards", []) if fits.status_code == 200 else []
        out["fits"] = {
            "status": fits.status_code,
            "tests": [r["components"]["tests"]["score"] for r in rewards],
            "failures": [r["components"]["tests"].get("failure") for r in rewards],
            "text": fits.text[:500] if fits.status_code != 200 else "",
        }
    finally:
        server.terminate()
        server.wait(timeout=60)
        log.close()
    return out


def reward_model_replicas(address: str) -> dict[str, Any]:
    """Two replicas of a tiny reward model behind the batcher; one dies halfway."""
    import tempfile
    from pathlib import Path

    from arbiter.reward_models.batcher import BatcherConfig
    from arbiter.reward_models.hf import HFRewardModel, HFRewardModelSpec
    from arbiter.reward_models.ray_replicas import RayRewardModelReplicas
    from tests.reward_models.tiny import llama_config, save_reward_model

    path = save_reward_model(Path(tempfile.mkdtemp(prefix="arbiter-rm-")) / "rm", llama_config())
    spec = HFRewardModelSpec(path=str(path), device="cpu", dtype="float32")
    local = HFRewardModel.load(spec)
    # CPU in tests; a GPU cluster gives each replica num_gpus=1.
    replicas = RayRewardModelReplicas(spec, replicas=2, num_cpus=0, address=address)
    client = replicas.client(BatcherConfig(max_batch_tokens=256, max_batch_size=4, max_wait_ms=1))
    conversations = [
        [
            {"role": "user", "content": f"question {i}"},
            {"role": "assistant", "content": "answer " * (1 + i % 7)},
        ]
        for i in range(48)
    ]

    async def score_all(batch: list[Any]) -> list[float]:
        outs = await asyncio.gather(*(client.score(c) for c in batch))
        return [o.values[0] for o in outs]

    loop = asyncio.new_event_loop()
    first = loop.run_until_complete(score_all(conversations[:24]))
    used_before = sorted(replicas.batches)
    replicas.kill_replica(0)
    second = loop.run_until_complete(score_all(conversations[24:]))
    loop.run_until_complete(client.close())
    loop.close()
    expected = [local.score(c)[0] for c in conversations]
    replicas.close()
    return {
        "answered": len(first) + len(second),
        "max_abs_diff": max(abs(a - b) for a, b in zip(first + second, expected, strict=True)),
        "replicas_used_before_kill": used_before,
        "failovers": replicas.failovers,
        "batches": sum(replicas.batches.values()),
    }


def main() -> None:
    repo = RepositorySource()
    cluster = Cluster(
        initialize_head=True,
        head_node_args={
            "num_cpus": 2,
            "resources": {"head": 4},
            # 6379 is Redis's on these machines (outside this namespace, but keep clear).
            "gcs_server_port": 6391,
            "include_dashboard": False,
            # A node that stops answering is declared dead after ~3 s, not Ray's ~30 s:
            # the node-kill stage waits on that detection.
            "_system_config": {"health_check_period_ms": 500, "health_check_failure_threshold": 6},
        },
    )
    second = cluster.add_node(num_cpus=2, resources={"second": 4})
    # One actor, killed with its node while it holds no job (the idle-node stage).
    third = cluster.add_node(num_cpus=1, resources={"third": 1})
    result: dict[str, Any] = {"nodes": 3}
    executor = RayExecutor(
        cluster.address,
        cpus_per_actor=1,
        long_slots=2,
        resources=[{"head": 1}, {"head": 1}, {"second": 1}, {"second": 1}, {"third": 1}],
        concurrency=3,
        # The executor's default: five actors importing Arbiter and starting their
        # pools took past 30 s beside the parallel suite on a slower host (their
        # start is ours; a replacement that never starts is the only wait it bounds).
        start_timeout_s=120,
    )
    try:
        clock = time.monotonic()
        stages: dict[str, float] = {}
        result["stages_s"] = stages

        def lap(name: str) -> None:
            nonlocal clock
            now = time.monotonic()
            stages[name] = round(now - clock, 1)
            clock = now

        lap("cluster")
        result["reward_model"] = reward_model_replicas(cluster.address)
        lap("reward_model")
        repo.to_the_driver()
        executor.start()
        result["actor_nodes"] = sorted({node for _, node in executor.actors()})
        loop = asyncio.new_event_loop()
        run = loop.run_until_complete
        lap("executor_start")
        result["same"] = run(same_as_local(executor))
        lap("same")
        result["by_node_after_same"] = dict(executor.stats()["by_node"])
        result["repository"] = run(repository_by_id(executor, repo))
        lap("repository")
        result["raised"] = run(raised_and_abandoned(executor))
        lap("raised")

        def kill_one_actor() -> list[Any]:
            import ray

            worker = max(executor._workers, key=lambda w: w.in_flight)
            ray.kill(worker.handle, no_restart=True)
            return [worker]

        result["actor_kill"] = run(batch_with_fault(executor, kill_one_actor, 16))

        def kill_second_node() -> list[Any]:
            on_second = [w for w in executor._workers if w.alive and w.node == second.node_id]
            cluster.remove_node(second, allow_graceful=False)
            return on_second

        result["node_kill"] = run(batch_with_fault(executor, kill_second_node, 16))
        lap("actor_and_node_kill")

        result["live_after_node_kill"] = executor.stats()["live_actors"]
        executor.max_attempts = 1
        result["no_retries_left"] = run(batch_with_fault(executor, kill_one_actor, 12))
        executor.max_attempts = 3
        lap("no_retries_left")
        result["idle_node_kill"] = run(idle_node_kill(executor, cluster, third))
        lap("idle_node_kill")
        executor.concurrency = 1
        result["fair_order"] = run(fairness(executor))
        lap("fairness")
        result["stats"] = executor.stats()
        executor.close()  # its actors' CPUs go to the server's executor
        result["http"] = http_back_pressure(cluster.address)
        lap("http")
    finally:
        import ray

        executor.close()
        ray.shutdown()
        cluster.shutdown()
        repo.close()
    print(json.dumps(result, default=str))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
