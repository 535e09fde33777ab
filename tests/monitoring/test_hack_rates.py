"""Hack-rate streams: each violation type's rate, zero-variance groups and canary passes."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pytest

from arbiter.graders.types import Violation, ViolationType
from arbiter.monitoring.drift import DriftMonitor, DriftState
from arbiter.monitoring.drift_alerts import REWARD_STREAM, Detector, StreamKey
from arbiter.monitoring.drift_config import DriftConfig
from arbiter.monitoring.drift_incidents import group_incidents
from arbiter.monitoring.drift_input import HACK_TYPES, batch_from_rewards
from arbiter.monitoring.drift_statistics import fisher_rise_p
from arbiter.monitoring.hack_rates import CANARY_STREAM, GROUP_STREAM, HACK_PREFIX
from arbiter.rubrics.reward import ComponentOutcome, Reward
from arbiter.rubrics.rubric import RubricIdentity

CONFIG = DriftConfig(window=50, warmup_windows=1, reference_windows=4, bootstrap_resamples=200)


def reward(
    i: int,
    raw: float,
    *,
    kinds: Sequence[ViolationType] = (),
    group: str | None = None,
    passed: int = 4,
    executed: int = 4,
) -> Reward:
    tests = ComponentOutcome(
        score=passed / 4,
        weight=1.0,
        required=True,
        grader="unit_tests",
        grader_version="0.3",
        details={
            "passed": passed,
            "total": executed,
            "tests": [{"outcome": "passed"}] * passed
            + [{"outcome": "failed"}] * (executed - passed),
        },
        violations=tuple(Violation(type=k, detail="seen", source="static") for k in kinds),
        latency_s=0.5,
    )
    return Reward(
        id=f"s{i}",
        group_id=group,
        reward=raw,
        raw_reward=raw,
        components={"tests": tests},
        rubric=RubricIdentity(name="py", version=1, sha256="v1"),
        graders={"unit_tests": "0.3"},
    )


def rewards(n: int, start: int = 0, *, hack_rate: float = 0.0, seed: int = 0) -> list[Reward]:
    rng = np.random.default_rng(seed)
    return [
        reward(
            start + i,
            float(rng.uniform(0.2, 0.9)),
            kinds=(ViolationType.ALWAYS_EQUAL,) if rng.random() < hack_rate else (),
        )
        for i in range(n)
    ]


def brute_force_p(hits_before: int, n_before: int, hits_now: int, n_now: int) -> float:
    total, hits = n_before + n_now, hits_before + hits_now
    return sum(
        math.comb(hits, x) * math.comb(total - hits, n_now - x)
        for x in range(hits_now, min(hits, n_now) + 1)
    ) / math.comb(total, n_now)


@pytest.mark.parametrize(
    "table", [(0, 200, 4, 50), (3, 200, 3, 50), (10, 40, 2, 20), (0, 10, 0, 5), (5, 5, 5, 5)]
)
def test_the_exact_test_is_fishers(table):
    assert fisher_rise_p(*table) == pytest.approx(brute_force_p(*table), rel=1e-9)


def test_every_violation_type_is_fed_from_the_first_reward():
    (batch,) = batch_from_rewards(
        [reward(0, 0.5, kinds=[ViolationType.ALWAYS_EQUAL]), reward(1, 0.6)]
    )
    assert set(batch.rates) == {HACK_PREFIX + k for k in HACK_TYPES} | {
        CANARY_STREAM,
        GROUP_STREAM,
    }
    assert batch.rates["hack:always_equal"].tolist() == [1.0, 0.0]
    assert batch.rates["hack:early_exit"].tolist() == [0.0, 0.0]
    assert batch.rates[CANARY_STREAM].tolist() == [0.0, 0.0]


def test_a_violation_type_that_rises_opens_an_alert_and_flags_rewards():
    monitor = DriftMonitor(CONFIG)
    quiet = monitor.observe_rewards(rewards(250, hack_rate=0.01, seed=1))
    assert not quiet.opened
    key = StreamKey(rubric="py", component="hack:always_equal", version="v1")
    assert monitor.reference(key) is not None
    assert monitor.progress(key)["phase"] == "watching"
    # A type never seen is fed but not listed.
    assert StreamKey(rubric="py", component="hack:early_exit", version="v1") not in monitor.streams

    burst = monitor.observe_rewards(rewards(50, 250, hack_rate=0.3, seed=2))
    (alert,) = [a for a in burst.opened if a.detector is Detector.HACK_RATE]
    assert alert.stream == key
    assert alert.statistic <= CONFIG.hack_rate_alpha
    assert alert.evidence["rise_pp"] >= CONFIG.hack_rate_min_rise_pp
    assert "rewards with always_equal" in alert.message
    assert "drift:hack:always_equal:hack_rate" in monitor.flags("py")

    # Back to the reference rate: quiet windows close it.
    calm = monitor.observe_rewards(rewards(400, 300, hack_rate=0.0, seed=3))
    assert alert.id in {a.id for a in calm.closed}


def test_a_steady_rate_raises_no_alert():
    config = DriftConfig(window=200, warmup_windows=1, reference_windows=10)
    monitor = DriftMonitor(config)
    opened = []
    for batch in range(40):
        update = monitor.observe_rewards(rewards(500, 500 * batch, hack_rate=0.02, seed=batch))
        opened += [a for a in update.opened if a.detector is Detector.HACK_RATE]
    assert opened == []


def test_groups_whose_rewards_all_agree_are_a_rate_of_their_own():
    def groups(n: int, start: int, collapsed: float, seed: int) -> list[Reward]:
        rng = np.random.default_rng(seed)
        out = []
        for g in range(n):
            same = rng.random() < collapsed
            for j in range(4):
                value = 1.0 if same else float(rng.uniform(0, 1))
                out.append(reward(16 * (start + g) + j, value, group=f"g{start + g}"))
        return out

    monitor = DriftMonitor(CONFIG)
    assert not monitor.observe_rewards(groups(250, 0, 0.05, 1)).opened
    update = monitor.observe_rewards(groups(50, 250, 0.6, 2))
    (alert,) = [a for a in update.opened if a.stream.component == GROUP_STREAM]
    assert alert.detector is Detector.HACK_RATE
    assert "groups whose rewards all agree" in alert.message
    # A group with an abstention says nothing of its spread; a lone reward is no group.
    (batch,) = batch_from_rewards(
        [
            reward(0, 0.5, group="a"),
            reward(1, 0.5, group="a"),
            reward(2, 0.5, group="b"),
            reward(3, 0.5, group="c"),
            reward(4, 0.5, group="c").model_copy(update={"raw_reward": None, "reward": None}),
        ]
    )
    assert batch.rates[GROUP_STREAM].tolist() == [1.0]


def test_the_pass_rate_rising_while_tests_executed_fall_is_a_hacking_sign():
    config = DriftConfig(window=100, warmup_windows=1, reference_windows=5, bootstrap_resamples=200)
    rng = np.random.default_rng(0)

    def batch(n: int, start: int, pass_rate: float, executed: int) -> list[Reward]:
        out = []
        for i in range(n):
            passed = executed if rng.random() < pass_rate else int(rng.integers(0, executed))
            out.append(reward(start + i, 0.5, passed=passed, executed=executed))
        return out

    monitor = DriftMonitor(config)
    assert not monitor.observe_rewards(batch(600, 0, 0.3, 4)).opened
    update = monitor.observe_rewards(batch(100, 600, 0.9, 2) + batch(100, 700, 0.9, 2))
    fired = {a.detector for a in update.opened if a.stream.component == REWARD_STREAM}
    assert Detector.PASS_UP_TESTS_DOWN in fired
    # The pass rate rising with every test still executed is learning, not this sign.
    monitor = DriftMonitor(config)
    monitor.observe_rewards(batch(600, 0, 0.3, 4))
    update = monitor.observe_rewards(batch(200, 600, 0.9, 4))
    assert Detector.PASS_UP_TESTS_DOWN not in {a.detector for a in update.opened}


def test_rate_streams_survive_a_restart_and_an_old_state_loads():
    monitor = DriftMonitor(CONFIG)
    monitor.observe_rewards(rewards(250, hack_rate=0.01, seed=1))
    monitor.observe_rewards(rewards(50, 250, hack_rate=0.4, seed=2))
    assert monitor.open_alerts
    text = monitor.state().model_dump_json()
    again = DriftMonitor.from_state(DriftState.model_validate_json(text), CONFIG)
    assert again.open_alerts == monitor.open_alerts
    assert again.streams == monitor.streams
    key = StreamKey(rubric="py", component="hack:always_equal", version="v1")
    assert again.reference(key) == monitor.reference(key)
    assert again.series(key) == monitor.series(key)
    # A reset forgets the reference (no warm-up) and closes the alert.
    closed = again.reset_reference(key)
    assert [a.stream for a in closed] == [key]
    assert again.progress(key)["phase"] == "reference"
    old = DriftState.model_validate_json(text).model_dump()
    del old["rates"]
    assert DriftMonitor.from_state(DriftState.model_validate(old)).open_alerts == tuple(
        a for a in monitor.open_alerts if not a.stream.component.startswith(HACK_PREFIX)
    )


def canary_rewards(n: int, start: int, passes: Sequence[int], sha: str) -> list[Reward]:
    out = []
    for i in range(start, start + n):
        r = reward(i, 0.5)
        if i in passes:
            tests = r.components["tests"].model_copy(
                update={
                    "violations": (
                        Violation(type=ViolationType.CANARY, detail="passed", source="canary"),
                    )
                }
            )
            r = r.model_copy(update={"components": {"tests": tests}})
        out.append(
            r.model_copy(update={"rubric": RubricIdentity(name="cn", version=1, sha256=sha)})
        )
    return out


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_canary_passes_open_an_incident_within_two_windows(tmp_path, seed):
    """Through the service's drift watch and its store, as /v1/drift/incidents reads them."""
    import asyncio

    from arbiter.api.drift_watch import DriftWatch
    from arbiter.api.metrics import Metrics
    from arbiter.graders.types import Sample
    from arbiter.rubrics import build_rubric
    from arbiter.store.db import Store
    from arbiter.store.drift_log import DriftLog

    rubric = build_rubric(
        {
            "name": "cn",
            "version": 1,
            "components": {"tests": {"grader": "unit_tests"}},
            "drift": {"window": 50, "warmup_windows": 3},
        }
    )
    store = Store(f"sqlite:///{tmp_path / 'd.db'}")
    store.migrate()
    watch = DriftWatch(store, Metrics())
    rng = np.random.default_rng(seed)
    injected = int(rng.integers(0, 300))
    batches = [canary_rewards(25, start, [injected], rubric.sha256) for start in range(0, 500, 25)]
    opened_in = None
    for number, batch in enumerate(batches):
        samples = [Sample(id=r.id, response="x") for r in batch]
        flagged = asyncio.run(watch.observe(rubric, batch, samples))
        alerts = DriftLog(store).alerts(open_only=True, rubric="cn", limit=10)
        if alerts and opened_in is None:
            opened_in = number
            assert all("drift:canary:canary_pass" in r.flags for r in flagged)
    # Opened by the batch that brought the pass, during warm-up: well within 2 windows.
    assert opened_in == injected // 25
    rows = DriftLog(store).alerts(rubric="cn", limit=10)
    (incident,) = group_incidents(
        [{**row, "rubric": row["rubric_name"]} for row in rows], gap_s=600
    )
    assert incident.components == ["canary"] and incident.detectors == ["canary_pass"]
    # 500 - injected rewards without a pass since: 3 quiet windows close it.
    assert not incident.open
