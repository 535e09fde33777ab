"""The service's drift watch: the rubric's drift section reaches the monitor."""

from __future__ import annotations

import asyncio

import pytest

from arbiter.api.drift_watch import DriftWatch
from arbiter.api.metrics import Metrics
from arbiter.graders.types import Sample
from arbiter.rubrics import RubricError, build_rubric, score_samples
from arbiter.store.db import Store
from arbiter.store.drift_log import DriftLog


def rubric(drift: dict[str, object]):
    return build_rubric(
        {
            "name": "watched",
            "version": 1,
            "components": {"eff": {"grader": "efficiency", "config": {"max_turns": 10}}},
            "drift": drift,
        }
    )


def test_thresholds_from_the_rubric_reach_the_monitor(tmp_path):
    store = Store(f"sqlite:///{tmp_path / 'd.db'}")
    store.migrate()
    watch = DriftWatch(store, Metrics())
    first = rubric({"window": 10, "cusum_h": 9.0, "ks_correction": "bh"})
    samples = [
        Sample.model_validate({"id": f"s{i}", "response": "r", "metrics": {"turns": i % 10}})
        for i in range(30)
    ]
    rewards = asyncio.run(score_samples(first, samples))
    asyncio.run(watch.observe(first, rewards, samples))
    config = watch.monitor.config_for("watched")
    assert (config.window, config.cusum_h, config.ks_correction) == (10, 9.0, "bh")
    assert config.cusum_k == 1.5  # left out: the monitor's default
    second = rubric({"window": 10, "cusum_h": 7.0})
    asyncio.run(watch.observe(second, rewards, samples))
    assert watch.monitor.config_for("watched").cusum_h == 7.0  # a new version reconfigures
    watch.save()
    assert DriftLog(store).load_state("default")


@pytest.mark.parametrize("bad", [{"cusum_h": -1}, {"ks_alpha": 2}, {"window": 5}, {"cusum_hh": 1}])
def test_bad_drift_thresholds_fail_at_load(bad):
    with pytest.raises(RubricError):
        rubric(bad)


def test_a_shared_monitor_needs_a_server_database():
    from arbiter.api.settings import Settings

    with pytest.raises(ValueError, match="needs a server database"):
        Settings(database_url="sqlite:///a.db", drift_monitor="shared")
    assert not Settings(database_url="sqlite:///a.db").shared_drift
    assert Settings(database_url="postgresql+psycopg://h/db").shared_drift
    assert not Settings(
        database_url="postgresql+psycopg://h/db", drift_monitor="local"
    ).shared_drift
