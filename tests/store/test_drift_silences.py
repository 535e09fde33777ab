"""Drift silences and the reset record in the store: expiry, lifting, newest first."""

from __future__ import annotations

from arbiter.store.db import Store
from arbiter.store.drift_log import DriftLog


def test_a_silence_is_active_until_it_expires_or_is_lifted(store: Store) -> None:
    log = DriftLog(store)
    whole = log.silence("r", None, until=200.0, requested_by="ops (k1)", reason="known", now=100.0)
    one = log.silence("r", "tests", until=150.0, requested_by="ops (k1)", reason="flaky", now=110.0)
    assert [s["id"] for s in log.silences(active_at=120.0)] == [one["id"], whole["id"]]
    # Expired: no longer active, still listed.
    assert [s["id"] for s in log.silences(active_at=160.0)] == [whole["id"]]
    assert len(log.silences()) == 2
    assert not log.lift_silence(one["id"], now=160.0)  # already over
    assert log.lift_silence(whole["id"], now=170.0)
    assert log.silences(active_at=171.0) == []
    assert log.silences(rubric="r")[1]["lifted_at"] == 170.0


def test_resets_are_recorded_with_who_and_why(store: Store) -> None:
    log = DriftLog(store)
    log.log_reset("r", None, None, requested_by="ops (k1)", reason="new policy", closed_alerts=3)
    log.log_reset("r", "tests", "2", requested_by="ops (k1)", reason="grader fix", closed_alerts=1)
    log.log_reset("other", None, None, requested_by="x (k2)", reason="y", closed_alerts=0)
    rows = log.reset_log("r")
    assert [(r["component"], r["reason"], r["closed_alerts"]) for r in rows] == [
        ("tests", "grader fix", 1),
        (None, "new policy", 3),
    ]
