"""A reward model declared with Ray replicas in a models file, on a real Ray cluster; one JSON line.

Run by ``tests/reward_models/test_ray_models.py`` inside a network namespace
with only loopback up (see ``bench.netns``). The same samples are scored three
ways: ``arbiter score`` without replicas, ``arbiter score --ray-address`` with
the model declared ``replicas: 2``, and in this process through the same loader
(to see the replicas and the batches each answered).
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
# The machine is shared: Ray's memory monitor would kill workers for what others use.
os.environ.setdefault("RAY_memory_monitor_refresh_ms", "0")

from ray.cluster_utils import Cluster

from arbiter.graders.registry import default_registry
from arbiter.graders.types import Sample
from arbiter.rubrics.loader import load_rubric
from arbiter.rubrics.models_file import load_models_file, prepare_registry
from arbiter.rubrics.score import score_samples
from tests.reward_models.declared import CHAT_SAMPLES, save_rm, write_jsonl

RUBRIC = "rubrics/library/chat-reward-model.yaml"
REPLICAS = """\
reward_models:
  default: {backend: transformers, path: rm, device: cpu, dtype: float32,
            replicas: 2, gpus_per_replica: 0, cpus_per_replica: 0, batch_tokens: 256}
"""
LOCAL = """\
reward_models:
  default: {backend: transformers, path: rm, device: cpu, dtype: float32, batch_tokens: 256}
"""


def score_cli(root: Path, models: Path, *extra: str) -> list[dict[str, Any]]:
    out = root / f"{models.stem}.out.jsonl"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "arbiter",
            "score",
            "--rubric",
            RUBRIC,
            "--models",
            str(models),
            "--table",
            "none",
            "--strict",
            str(root / "chat.jsonl"),
            "-o",
            str(out),
            *extra,
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"arbiter score exited {proc.returncode}: {proc.stderr[-3000:]}")
    return [json.loads(line) for line in out.read_text().splitlines()]


def in_process(models: Path, address: str) -> dict[str, Any]:
    registry = default_registry()
    declared = prepare_registry(registry, models=load_models_file(models), ray_address=address)
    assert declared is not None
    rubric = load_rubric(RUBRIC, registry)
    samples = [Sample.model_validate(s) for s in CHAT_SAMPLES]

    async def run() -> list[Any]:
        await registry.warm(["reward_model"])
        return await score_samples(rubric, samples, registry=registry)

    rewards = asyncio.run(run())
    backend: Any = declared.reward_models.load("default").backend
    seen = {
        "replicas": backend.replicas,
        "batches": sum(backend.batches.values()),
        "rewards": [r.reward for r in rewards],
        "usage": declared.usage[("reward_model", "default")].snapshot(),
    }
    registry.close()
    return seen


def main() -> None:
    root = Path(tempfile.mkdtemp(prefix="arbiter-ray-models-"))
    save_rm(root / "rm")
    write_jsonl(root / "chat.jsonl", CHAT_SAMPLES)
    (root / "replicas.yaml").write_text(REPLICAS)
    (root / "local.yaml").write_text(LOCAL)
    cluster = Cluster(
        initialize_head=True,
        head_node_args={"num_cpus": 2, "gcs_server_port": 6393, "include_dashboard": False},
    )
    try:
        result = {
            "local": score_cli(root, root / "local.yaml"),
            "ray": score_cli(root, root / "replicas.yaml", "--ray-address", cluster.address),
            "no_cluster": subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "arbiter",
                    "score",
                    "--rubric",
                    RUBRIC,
                    "--models",
                    str(root / "replicas.yaml"),
                    "--table",
                    "none",
                    "--strict",
                    str(root / "chat.jsonl"),
                    "-o",
                    os.devnull,
                ],
                capture_output=True,
                text=True,
                timeout=300,
                check=False,
            ).returncode,
            "in_process": in_process(root / "replicas.yaml", cluster.address),
        }
    finally:
        import ray

        ray.shutdown()
        cluster.shutdown()
    print(json.dumps(result))


if __name__ == "__main__":
    main()
