"""A reward model declared with ``replicas`` in a models file runs on Ray actors (issue 25).

One scenario (``ray_models_scenario.py``) on a real Ray cluster inside a
loopback-only network namespace: ``arbiter score --ray-address --models`` with
the model declared ``replicas: 2`` gives the rewards the same model gives in
process, and the replicas answered the batches.
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

if importlib.util.find_spec("ray") is None:  # in the dev extra: missing is an error, not a skip
    raise ImportError("ray is not installed: pip install -e '.[dev]'")

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow(seconds=90)


@pytest.fixture(scope="module")
def scenario() -> dict[str, Any]:
    if not netns_available():
        unavailable("needs unshare and ip to keep the cluster on loopback")
    proc = subprocess.run(
        netns_command([sys.executable, "-m", "tests.reward_models.ray_models_scenario"]),
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=480,
        check=False,
    )
    if proc.returncode != 0 and "Operation not permitted" in proc.stderr:
        unavailable(f"network namespaces are not allowed here: {proc.stderr[-300:]}")
    assert proc.returncode == 0, proc.stderr[-4000:]
    return dict(json.loads(proc.stdout.strip().splitlines()[-1]))


def test_replicas_declared_in_the_models_file_score_like_the_local_model(
    scenario: dict[str, Any],
) -> None:
    local, ray = scenario["local"], scenario["ray"]
    assert [r["id"] for r in ray] == [r["id"] for r in local]
    for a, b in zip(local, ray, strict=True):
        assert a["components"]["reward"]["failure"] is None
        assert b["components"]["reward"]["failure"] is None
        assert b["reward"] == pytest.approx(a["reward"], abs=1e-5)
    # Not vacuous: the samples' rewards differ.
    assert len({round(r["reward"], 4) for r in local}) > 2


def test_the_declared_replicas_are_the_ones_that_answered(scenario: dict[str, Any]) -> None:
    seen = scenario["in_process"]
    assert seen["replicas"] == 2
    assert seen["batches"] >= 1
    assert seen["usage"]["requests"] == 5 and seen["usage"]["errors"] == {}
    assert all(r is not None for r in seen["rewards"])


def test_replicas_without_a_cluster_fail_typed_and_strict_exits_1(
    scenario: dict[str, Any],
) -> None:
    # replicas: 2 with no --ray-address: the model is unavailable, every sample's
    # component fails typed, and --strict turns that into exit 1.
    assert scenario["no_cluster"] == 1
