"""The drift monitor end to end: each detector fires on its change and stays quiet without one."""

from __future__ import annotations

import json
from collections.abc import Callable

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from arbiter.monitoring.drift import DriftMonitor, DriftState
from arbiter.monitoring.drift_alerts import REWARD_STREAM, Alert, Detector, StreamKey
from arbiter.monitoring.drift_config import DriftConfig
from arbiter.monitoring.drift_input import ComponentScores, RewardBatch, batch_from_rewards

N = 100
LEAD = 1 + 6  # warm-up + reference windows of CONFIG
CONFIG = DriftConfig(
    window=N,
    warmup_windows=1,
    reference_windows=6,
    baseline_windows=6,
    bootstrap_resamples=300,
)

# A window's rewards for one rubric: (rng, window index) -> batch.
Feed = Callable[[np.random.Generator, int], RewardBatch]


def batch(
    score: np.ndarray,
    *,
    reward: np.ndarray | None = None,
    passed: np.ndarray | None = None,
    tests: np.ndarray | None = None,
    runtime: np.ndarray | None = None,
    length: np.ndarray | None = None,
    version: str = "1",
) -> RewardBatch:
    return RewardBatch(
        "rubric",
        "sha",
        score if reward is None else reward,
        {"c": ComponentScores(version, score)},
        passed=passed,
        tests_executed=tests,
        runtime_s=runtime,
        response_length=length,
    )


def run(feed: Feed, windows: int, seed: int = 0, monitor: DriftMonitor | None = None):
    monitor = monitor or DriftMonitor(CONFIG)
    rng = np.random.default_rng(seed)
    opened: list[tuple[int, Alert]] = []
    for w in range(windows):
        update = monitor.observe(feed(rng, w))
        opened.extend((w, a) for a in update.opened)
    return monitor, opened


def beta(rng, w):
    return batch(rng.beta(2, 5, N))


def bimodal(rng, w):
    return batch(np.clip(np.where(rng.random(N) < 0.4, 0.2, 0.8) + rng.normal(0, 0.05, N), 0, 1))


def mostly_binary(rng, w):
    u = rng.random(N)
    score = np.where(u < 0.8, 1.0, np.where(u < 0.83, 0.5, 0.0))
    return batch(score, passed=(score == 1.0).astype(float))


def with_aux(rng, w):
    score = rng.beta(2, 5, N)
    return batch(
        score,
        passed=(rng.random(N) < 0.6).astype(float),
        tests=rng.integers(4, 9, N).astype(float),
        runtime=rng.gamma(2.0, 0.5, N),
        length=rng.lognormal(6, 0.5, N),
    )


@pytest.mark.parametrize("feed", [beta, bimodal, mostly_binary, with_aux])
@pytest.mark.parametrize("seed", [1, 2])
def test_quiet_without_drift(feed, seed):
    monitor, opened = run(feed, LEAD + 150, seed)
    assert opened == []
    assert monitor.open_alerts == ()
    assert monitor.flags("rubric") == ()


SHIFT = LEAD + 5
SD = float(np.sqrt(2 * 5 / (7**2 * 8)))  # sd of beta(2, 5)


def after(w: int) -> bool:
    return w >= SHIFT


def mean_shift(rng, w):
    return batch(rng.beta(2, 5, N) + (0.5 * SD if after(w) else 0.0))


def big_shift(rng, w):
    return batch(rng.beta(2, 5, N) - (SD if after(w) else 0.0))


def shape_change(rng, w):
    # Same mean and variance, different shape: only the distribution tests can see it.
    if after(w):
        score = 0.5 + np.where(rng.random(N) < 0.5, -0.1, 0.1) + rng.normal(0, 0.005, N)
    else:
        score = rng.normal(0.5, 0.1, N)
    return batch(score)


def collapse(rng, w):
    score = rng.beta(2, 5, N)
    mean = 2 / 7
    return batch(mean + 0.3 * (score - mean) if after(w) else score)


def pass_step(rng, w):
    rate = 0.75 if after(w) else 0.5
    return batch(rng.beta(2, 5, N), passed=(rng.random(N) < rate).astype(float))


def hacking(rng, w):
    score = rng.beta(2, 5, N) + (SD if after(w) else 0.0)
    tests = rng.integers(4, 9, N).astype(float) - (3.0 if after(w) else 0.0)
    return batch(score, tests=tests, runtime=rng.gamma(2.0, 0.5, N))


def length_hacking(rng, w):
    length = rng.lognormal(6, 0.5, N)
    score = rng.beta(2, 5, N)
    if after(w):
        # Longer answers get higher rewards; the reward's distribution barely moves.
        score = np.sort(score)[np.argsort(np.argsort(length + rng.normal(0, 150, N)))]
    return batch(score, length=length)


@pytest.mark.parametrize(
    ("feed", "detector", "stream", "within"),
    [
        (mean_shift, Detector.CUSUM, "c", 4),
        (big_shift, Detector.CUSUM, "c", 1),
        (big_shift, Detector.KS, "c", 2),
        (shape_change, Detector.KS, "c", 2),
        (shape_change, Detector.WASSERSTEIN, "c", 4),
        (collapse, Detector.VARIANCE_COLLAPSE, "c", 4),
        (pass_step, Detector.PASS_RATE_STEP, REWARD_STREAM, 4),
        (hacking, Detector.REWARD_UP_TESTS_DOWN, REWARD_STREAM, 2),
        (length_hacking, Detector.LENGTH_CORRELATION, REWARD_STREAM, 2),
    ],
)
@pytest.mark.parametrize("seed", [3, 4])
def test_detector_fires_on_its_change(feed, detector, stream, within, seed):
    _, opened = run(feed, SHIFT + 15, seed)
    before = [a for w, a in opened if w < SHIFT]
    assert before == [], "an alert before the change"
    hits = [w for w, a in opened if a.detector is detector and a.stream.component == stream]
    assert hits, f"{detector} never fired; opened: {[a.id for _, a in opened]}"
    assert hits[0] - SHIFT + 1 <= within


@pytest.mark.parametrize(
    ("feed", "silent"),
    [
        (shape_change, {Detector.CUSUM, Detector.VARIANCE_COLLAPSE}),
        (pass_step, {Detector.CUSUM, Detector.KS, Detector.WASSERSTEIN}),
        (collapse, {Detector.CUSUM}),
    ],
)
def test_detectors_stay_quiet_on_a_change_they_are_not_for(feed, silent):
    _, opened = run(feed, SHIFT + 15, 5)
    assert not {a.detector for _, a in opened} & silent


def test_reward_rising_alone_is_not_reward_hacking():
    def reward_up(rng, w):
        score = rng.beta(2, 5, N) + (SD if after(w) else 0.0)
        return batch(score, tests=rng.integers(4, 9, N).astype(float))

    _, opened = run(reward_up, SHIFT + 10, 6)
    detectors = {a.detector for _, a in opened}
    assert Detector.CUSUM in detectors
    assert Detector.REWARD_UP_TESTS_DOWN not in detectors


def test_alert_carries_its_evidence():
    _, opened = run(mean_shift, SHIFT + 3, 7)
    window, alert = next(
        (w, a) for w, a in opened if a.detector is Detector.CUSUM and a.stream.component == "c"
    )
    assert alert.stream == StreamKey(rubric="rubric", component="c", version="1")
    assert alert.window == window  # one window per call, so call index = window index
    assert alert.statistic > alert.threshold == CONFIG.cusum_h
    assert alert.evidence["z"] > 0
    ref = alert.reference
    assert (ref.first_window, ref.windows, ref.samples) == (1, 6, 600)
    assert ref.mean == pytest.approx(2 / 7, abs=0.02)
    assert ref.wasserstein_threshold > 0
    assert alert.flag == "drift:c:cusum"
    _, opened = run(big_shift, SHIFT + 3, 7)
    ks = next(a for _, a in opened if a.detector is Detector.KS)
    assert ks.statistic <= ks.threshold <= CONFIG.ks_alpha
    assert ks.evidence["correction"] == "holm"
    json.loads(alert.model_dump_json())


def test_ks_is_corrected_across_the_streams_of_a_round():
    def two_streams(rng, w):
        shifted = rng.beta(2, 5, N) + (SD if after(w) else 0.0)
        return RewardBatch(
            "rubric",
            "sha",
            rng.beta(2, 5, N),
            {"a": ComponentScores("1", shifted), "b": ComponentScores("1", rng.beta(2, 5, N))},
        )

    _, opened = run(two_streams, SHIFT + 2, 8)
    ks = next(a for _, a in opened if a.detector is Detector.KS)
    assert ks.evidence["family_size"] == 3  # @reward, a and b closed a window together
    assert ks.threshold == pytest.approx(CONFIG.ks_alpha / 3)


def test_open_alerts_flag_rewards_and_close_once_the_change_ends():
    def transient(rng, w):
        return batch(rng.beta(2, 5, N) + (SD if SHIFT <= w < SHIFT + 4 else 0.0))

    monitor = DriftMonitor(CONFIG)
    rng = np.random.default_rng(9)
    flags_seen: set[str] = set()
    closed: list[Alert] = []
    for w in range(SHIFT + 25):
        update = monitor.observe(transient(rng, w), at=1000.0 + w)
        closed.extend(update.closed)
        flags_seen.update(monitor.flags("rubric"))
        if w == SHIFT + 1:
            assert "drift:c:cusum" in monitor.flags("rubric")
            assert monitor.flags("another-rubric") == ()
            assert all(a.opened_at is not None for a in monitor.open_alerts)
    assert "drift:c:cusum" in flags_seen
    assert monitor.open_alerts == ()
    assert {a.detector for a in closed} >= {Detector.CUSUM}


def test_a_lasting_shift_keeps_one_alert_open():
    _, opened = run(mean_shift, SHIFT + 30, 10)
    cusum = [a for _, a in opened if a.detector is Detector.CUSUM and a.stream.component == "c"]
    assert len(cusum) == 1


def test_a_new_grader_version_is_a_new_stream_not_drift():
    def upgrade(rng, w):
        if after(w):
            return batch(rng.beta(5, 2, N), version="2")
        return batch(rng.beta(2, 5, N), version="1")

    monitor, opened = run(upgrade, SHIFT + 20, 11)
    components = [a.stream for _, a in opened if a.stream.component == "c"]
    assert components == []
    keys = {k for k in monitor.streams if k.component == "c"}
    assert {k.version for k in keys} == {"1", "2"}
    assert monitor.reference(StreamKey(rubric="rubric", component="c", version="2")) is not None


def test_unscored_samples_are_left_out_not_counted_as_zero():
    def half_failed(rng, w):
        score = rng.beta(2, 5, N)
        score[::2] = np.nan
        return (
            batch(rng.beta(2, 5, N), version="1")
            if w < 0
            else RewardBatch("rubric", "sha", rng.beta(2, 5, N), {"c": ComponentScores("1", score)})
        )

    monitor, opened = run(half_failed, LEAD * 2 + 20, 12)
    assert opened == []
    state = {str(s.key): s for s in monitor.state().streams}
    # The component saw half as many scores, so it closed half as many windows.
    assert state["rubric/c@1"].windows * 2 == state[f"rubric/{REWARD_STREAM}@sha"].windows
    assert state["rubric/c@1"].reference is not None
    assert state["rubric/c@1"].reference.mean == pytest.approx(2 / 7, abs=0.02)


def test_state_round_trips_and_the_restored_monitor_carries_on_identically():
    monitor, _ = run(with_aux, LEAD + 3, 13)
    monitor.observe(with_aux(np.random.default_rng(0), 0))  # leave a part-filled window
    saved = monitor.state().model_dump_json()
    restored = DriftMonitor.from_state(DriftState.model_validate_json(saved))
    assert restored.state().model_dump_json() == saved

    def continued(m):
        rng = np.random.default_rng(14)
        out: list[str] = []
        for w in range(SHIFT, SHIFT + 8):
            out.extend(a.id for a in m.observe(mean_shift(rng, w)).opened)
        return out, m.state().model_dump_json()

    assert continued(monitor) == continued(restored)


CHUNKED = np.random.default_rng(19).beta(2, 5, N * (LEAD + 4) + 17)


@settings(max_examples=10, deadline=None)
@given(st.lists(st.integers(1, 400), min_size=1, max_size=30))
def test_the_state_does_not_depend_on_how_the_rewards_were_batched(sizes):
    one_call = DriftMonitor(CONFIG)
    one_call.observe(batch(CHUNKED))
    chunked = DriftMonitor(CONFIG)
    start = 0
    while start < CHUNKED.size:
        for size in sizes:
            chunked.observe(batch(CHUNKED[start : start + size]))
            start += size
    key = StreamKey(rubric="rubric", component="c", version="1")
    reference = one_call.reference(key)
    assert reference is not None and reference.first_window == 1  # after the one warm-up
    assert one_call.state().model_dump_json() == chunked.state().model_dump_json()


def test_state_keeps_open_alerts():
    monitor, _ = run(mean_shift, SHIFT + 3, 15)
    assert monitor.open_alerts
    restored = DriftMonitor.from_state(
        DriftState.model_validate_json(monitor.state().model_dump_json())
    )
    assert restored.open_alerts == monitor.open_alerts
    assert restored.flags("rubric") == monitor.flags("rubric")


def test_reset_reference_accepts_a_change():
    monitor, _ = run(mean_shift, SHIFT + 3, 16)
    key = StreamKey(rubric="rubric", component="c", version="1")
    closed = monitor.reset_reference(key)
    assert any(a.stream == key for a in closed)
    assert monitor.reference(key) is None
    _, opened = run(lambda rng, w: mean_shift(rng, SHIFT + w), 30, 17, monitor=monitor)
    # The shifted distribution is the new reference, so nothing on "c" fires again.
    later = [a for _, a in opened if a.stream == key]
    assert later == []
    assert monitor.reference(key) is not None


def test_forget_drops_a_retired_stream_with_its_alerts():
    monitor, _ = run(mean_shift, SHIFT + 3, 20)
    key = StreamKey(rubric="rubric", component="c", version="1")
    dropped = monitor.forget(key)
    assert dropped and all(a.stream == key for a in dropped)
    assert key not in monitor.streams
    assert all(a.stream != key for a in monitor.open_alerts)


def test_disabled_rubric_is_not_monitored():
    monitor = DriftMonitor(CONFIG, {"rubric": CONFIG.model_copy(update={"enabled": False})})
    _, opened = run(mean_shift, SHIFT + 5, 18, monitor=monitor)
    assert opened == [] and monitor.streams == ()


def test_config_rejects_nonsense():
    with pytest.raises(ValidationError):
        DriftConfig(window=5)
    with pytest.raises(ValidationError):
        DriftConfig(ks_alpha=0.0)
    with pytest.raises(ValidationError):
        DriftConfig(unknown=1)  # type: ignore[call-arg]


def test_batch_rejects_columns_of_the_wrong_length():
    with pytest.raises(ValueError, match="expected 3"):
        RewardBatch("r", "s", [0.1, 0.2, 0.3], {"c": ComponentScores("1", [0.1, 0.2])})
    with pytest.raises(ValueError, match="passed"):
        RewardBatch("r", "s", [0.1, None], {}, passed=[1.0])


def test_rewards_are_read_as_they_come_from_the_rubric():
    from arbiter.graders.types import Failure, FailureKind
    from arbiter.rubrics.reward import ComponentOutcome, Reward
    from arbiter.rubrics.rubric import RubricIdentity

    def reward(i: int, passed: int, judge: float | None) -> Reward:
        tests = ComponentOutcome(
            score=passed / 4,
            weight=0.5,
            required=True,
            grader="unit_tests",
            grader_version="0.3",
            details={
                "passed": passed,
                "total": 4,
                "tests": [{"outcome": "passed"}] * passed + [{"outcome": "skipped"}] * (4 - passed),
            },
            latency_s=0.25 * (i + 1),
        )
        judged = ComponentOutcome(
            score=judge,
            weight=0.5,
            required=False,
            grader="reward_model",
            grader_version="m1",
            failure=None if judge is not None else Failure(kind=FailureKind.JUDGE_ERROR),
        )
        return Reward(
            id=f"s{i}",
            reward=0.3,
            raw_reward=passed / 8 + (judge or 0) / 2,
            components={"tests": tests, "judge": judged},
            rubric=RubricIdentity(name="py", version=2, sha256="abc"),
            graders={"unit_tests": "0.3", "reward_model": "m1"},
        )

    rewards = [reward(0, 4, 0.8), reward(1, 2, None), reward(2, 0, 0.1)]
    (got,) = batch_from_rewards(rewards, response_lengths=[100, None, 300])
    assert (got.rubric, got.rubric_version, got.size) == ("py", "abc", 3)
    assert got.rewards.tolist() == pytest.approx([0.9, 0.25, 0.05])
    assert got.passed.tolist() == [1.0, 0.0, 0.0]
    assert got.tests_executed.tolist() == [4.0, 2.0, 0.0]
    assert got.runtime_s.tolist() == [0.25, 0.5, 0.75]
    assert got.response_length[0] == 100 and np.isnan(got.response_length[1])
    assert got.components["judge"].grader_version == "m1"
    assert np.isnan(got.components["judge"].scores[1])

    monitor = DriftMonitor(CONFIG)
    update = monitor.observe_rewards(rewards * 40, response_lengths=[100, None, 300] * 40)
    assert update.windows == 0  # still in warm-up and reference
    assert {k.component for k in monitor.streams} == {REWARD_STREAM, "tests", "judge"}


def test_progress_says_what_is_not_watched_yet_and_for_how_long():
    # Issue 27: /v1/drift/streams said "reference: null" for the first
    # window x (warmup + reference) samples, and after a reset, with no progress.
    key = StreamKey(rubric="rubric", component="c", version="1")
    monitor = DriftMonitor(CONFIG)
    rng = np.random.default_rng(0)
    monitor.observe(batch(rng.beta(5, 2, N // 2)))
    assert monitor.progress(key) == {
        "phase": "warmup",
        "samples": N // 2,
        "needed": LEAD * N,
        "fraction": round(0.5 / LEAD, 4),
    }
    for _ in range(3):  # past the warm-up window, into the reference
        monitor.observe(batch(rng.beta(5, 2, N)))
    progress = monitor.progress(key)
    assert progress["phase"] == "reference"
    assert progress["samples"] == 2 * N + N // 2  # two reference windows and a half
    assert progress["needed"] == 6 * N
    for _ in range(LEAD):
        monitor.observe(batch(rng.beta(5, 2, N)))
    assert monitor.progress(key)["phase"] == "watching"
    assert monitor.progress(key)["fraction"] == 1.0
    # Every complete window's mean, for the drift page to draw; saved with the state.
    series = monitor.series(key)
    assert [i for i, _ in series] == list(range(10))
    assert all(0.5 < m < 0.9 for _, m in series)  # Beta(5, 2) has mean 5/7
    restored = DriftMonitor.from_state(
        DriftState.model_validate_json(monitor.state().model_dump_json())
    )
    assert restored.series(key) == series
    monitor.reset_reference(key)
    # After a reset: no warm-up again, a whole new reference to collect; the series goes on.
    after = monitor.progress(key)
    assert after["phase"] == "reference" and after["needed"] == 6 * N
    assert after["samples"] < after["needed"]
    assert monitor.series(key) == series
