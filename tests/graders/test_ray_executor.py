"""The Ray executor on a real three-node Ray cluster, inside a loopback-only network namespace.

One scenario (``tests/graders/ray_scenario.py``) starts a head and two more
nodes, each with its own raylet, runs every stage and prints what it saw; the
tests below check each stage. The namespace keeps Ray off the host's
interfaces (it binds to them even when told 127.0.0.1).
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from bench.netns import netns_available, netns_command
from tests.strictness import unavailable

#: A three-node cluster on two cores: its heartbeats miss while other tests load the machine.
pytestmark = [pytest.mark.exclusive, pytest.mark.slow]

if importlib.util.find_spec("ray") is None:  # in the dev extra: missing is an error, not a skip
    raise ImportError("ray is not installed: pip install -e '.[dev]'")

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def scenario() -> dict[str, Any]:
    if not netns_available():
        unavailable("needs unshare and ip to keep the cluster on loopback")
    proc = subprocess.run(
        netns_command([sys.executable, "-m", "tests.graders.ray_scenario"]),
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=480,
        check=False,
    )
    if (
        proc.returncode != 0
        and "unshare" in proc.stderr
        and "Operation not permitted" in proc.stderr
    ):
        unavailable(f"network namespaces are not allowed here: {proc.stderr[-300:]}")
    assert proc.returncode == 0, proc.stderr[-4000:]
    return dict(json.loads(proc.stdout.strip().splitlines()[-1]))


def test_actors_run_on_every_node(scenario: dict[str, Any]) -> None:
    assert scenario["nodes"] == 3
    assert len(scenario["actor_nodes"]) == 3
    # Jobs were answered on every node, not just placed there.
    assert len(scenario["by_node_after_same"]) == 3


def test_results_are_those_of_the_local_graders(scenario: dict[str, Any]) -> None:
    same = scenario["same"]
    assert {key.split("/")[0] for key in same} == {"unit_tests", "bandit", "radon"}
    for key, pair in same.items():
        assert pair["local"] == pair["ray"], key
    # The comparison is not vacuous: the cases differ among themselves.
    assert same["unit_tests/right"]["ray"][1] == 1.0
    assert same["unit_tests/syntax"]["ray"][2] == "syntax_error"
    assert same["bandit/insecure"]["ray"][1] < 1.0


def test_a_node_fetches_a_repository_snapshot_by_id_once_and_keeps_it(
    scenario: dict[str, Any],
) -> None:
    # The nodes start with an empty snapshot store; the driver's
    # ARBITER_REPOSITORY_SOURCE reaches the actors, which fetch the snapshot by id
    # from it once, check it against its id and keep it for every later grading.
    repo = scenario["repository"]
    assert repo["first"][1] == 1.0, repo
    assert repo["fetches_after_first"] == 1
    assert repo["scores"] == [1.0, 1.0, 1.0, 0.0], repo
    assert repo["failure_kinds"][-1] == "empty_patch"
    assert repo["fetched"] == [repo["snapshot"]]
    assert repo["stored"] == [repo["snapshot"]] and repo["source_has_it"]


def test_a_grader_that_raises_on_an_actor_raises_here_alone_or_in_a_batch(
    scenario: dict[str, Any],
) -> None:
    raised = scenario["raised"]
    # Sent alone (a plain call) and in a batch (a stream): the error is the
    # grader's, as it would be locally; its batch-mates are graded regardless.
    assert raised["alone"] == "UnknownGraderError"
    assert raised["batch"] == ["score 1.0", "UnknownGraderError", "score 0.5"] * 5
    assert raised["batch_calls"] == 5  # streams of three, not fifteen calls of one
    assert raised["in_flight_after_abandon"] == 0


@pytest.mark.parametrize("stage", ["actor_kill", "node_kill"])
def test_a_dead_actor_or_node_loses_no_sample_and_grades_none_twice(
    scenario: dict[str, Any], stage: str
) -> None:
    seen = scenario[stage]
    # The fault struck while the victims had jobs in flight...
    assert seen["victims_in_flight"] > 0
    # ...every sample was answered, all correctly, and each result arrived once.
    assert seen["answered"] == 16
    assert seen["scores"] == [1.0] * 16
    assert seen["done"] == 16
    # The victims' jobs were retried elsewhere, visibly (a job that finished while
    # its node was going down arrived, and was not retried: done counts it once).
    assert seen["retried"] >= 1
    assert seen["deaths"] >= 1
    assert seen["failed"] == 0


def test_a_dead_nodes_idle_actors_are_found_without_a_failed_call(
    scenario: dict[str, Any],
) -> None:
    seen = scenario["idle_node_kill"]
    # A node whose one actor held no job went down: no call could show it, and
    # the executor took it as dead from the cluster's view of its nodes (health
    # checks of about 3 s here, then at most NODE_CHECK_EVERY_S).
    assert seen["actors"] == 1
    assert seen["marked_dead_after_s"] is not None and seen["marked_dead_after_s"] < 30
    assert seen["deaths"] >= 1
    assert seen["failed"] == 0 and seen["retried"] == 0


def test_after_the_retries_a_sample_fails_typed_never_scored(scenario: dict[str, Any]) -> None:
    seen = scenario["no_retries_left"]
    assert seen["victims_in_flight"] > 0
    assert seen["answered"] == 12
    lost = [f for f in seen["failures"] if f is not None]
    # Exactly what the dead actor held fails: its jobs in flight when it was
    # killed, and any sent to it before the driver saw it die; nothing else.
    assert lost == ["sandbox_error"] * seen["victims_unanswered"]
    assert seen["failed"] == len(lost)
    # Unscored, not zero: an infrastructure fault is never the candidate's.
    assert seen["scores"].count(None) == len(lost)
    assert seen["done"] + seen["failed"] == 12


def test_a_small_tenant_is_not_queued_behind_a_big_one(scenario: dict[str, Any]) -> None:
    order = scenario["fair_order"]
    assert order.count("small") == 3 and order.count("big") == 20
    # Round-robin across tenants: the small tenant's three jobs finish among the
    # first ten, although twenty of the big tenant's were queued before them.
    last_small = max(i for i, who in enumerate(order) if who == "small")
    assert last_small < 10, order


def test_a_full_cluster_queue_reaches_http_as_429_with_retry_after(
    scenario: dict[str, Any],
) -> None:
    http = scenario["http"]
    assert http["over"] == {"status": 429, "retry_after": "1", "code": "cluster_busy"}
    # A batch that fits is graded on the cluster.
    assert http["fits"]["status"] == 200, http["fits"]["text"]
    assert http["fits"]["tests"] == [1.0, 1.0], http["fits"]["failures"]
    # ARBITER_RAY_ACTORS=1: the replica took its share (one actor of one CPU), not the cluster.
    assert http["server_cpus"] == 1.0


def test_reward_model_replicas_as_actors_behind_the_batcher(scenario: dict[str, Any]) -> None:
    seen = scenario["reward_model"]
    assert seen["answered"] == 48
    # The same scores as the model loaded here, whichever replica ran the batch.
    assert seen["max_abs_diff"] < 1e-4
    # Both replicas took batches; after one died its batches failed over.
    assert seen["replicas_used_before_kill"] == [0, 1]
    assert seen["failovers"] >= 1
    # Batched, not one request per call.
    assert seen["batches"] < 48
