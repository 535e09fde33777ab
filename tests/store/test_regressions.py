"""Regression cases on SQLite and PostgreSQL: labels make them, edits retract them, dismissals."""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from sqlalchemy import inspect

from arbiter.store.db import _MIGRATIONS, RewardRow, Store
from arbiter.store.regressions import (
    CaseNotFoundError,
    CaseNotOpenError,
    RegressionCases,
    fooled_components,
)
from arbiter.store.review import EnqueueItem, Label, LeaseLostError, ReviewQueue
from arbiter.store.tables import metadata

THRESHOLDS = {"unit_tests": 1.0, "violations": 1.0, "efficiency": 0.5}


def threshold(grader: str) -> float:
    return THRESHOLDS.get(grader, 0.5)


def record(reward: float, tests: float | None, hacks: float, flagged: list[str]) -> dict[str, Any]:
    return {
        "reward": reward,
        "components": {
            "tests": {"grader": "unit_tests", "score": tests, "violations": []},
            "hacks": {
                "grader": "violations",
                "score": hacks,
                "violations": [{"type": t} for t in flagged],
            },
        },
    }


def queue_items(
    store: Store, queue: ReviewQueue, records: list[Any], *, rubric: str = "r", sample: bool = True
) -> None:
    request_id = uuid.uuid4().hex
    rows = [
        RewardRow(
            position=i,
            sample_id=f"s{i}",
            group_id=None,
            reward=rec["reward"] if isinstance(rec, dict) else None,
            raw_reward=rec["reward"] if isinstance(rec, dict) else None,
            record=json.dumps(rec) if isinstance(rec, dict) else rec,
            sample=json.dumps({"id": f"s{i}", "response": f"answer {i}", "metrics": {"turns": i}})
            if sample
            else None,
            sample_sha256="0" * 64,
            latency_s=0.0,
        )
        for i, rec in enumerate(records)
    ]
    store.record_request(
        request_id=request_id,
        client="trainer",
        idempotency_key=None,
        endpoint="rewards",
        rubric_name=rubric,
        rubric_version=1,
        rubric_sha256="a" * 64,
        envelope="{}",
        rows=rows,
    )
    items = [
        EnqueueItem(request_id, i, f"s{i}", rubric, "a" * 64, 0.5, "uniform")
        for i in range(len(records))
    ]
    assert queue.enqueue(items) == len(records)


def label_next(queue: ReviewQueue, reviewer: str, label: Label, rubric: str = "r") -> int:
    item = queue.claim(reviewer, rubric=rubric)
    assert item is not None
    queue.submit(item.id, item.lease_token, reviewer, label)
    return item.id


def test_the_migration_creates_exactly_the_regression_tables_declared(store: Store) -> None:
    with store.engine.connect() as conn:
        diff = compare_metadata(MigrationContext.configure(conn), metadata)
    assert [d for d in diff if "regression_" in repr(d)] == []


def test_the_migration_goes_down_to_0005_and_up_again(store: Store) -> None:
    config = Config()
    config.set_main_option("script_location", str(_MIGRATIONS))
    with store.engine.begin() as conn:
        config.attributes["connection"] = conn
        command.downgrade(config, "0005")
    with store.engine.connect() as conn:
        tables = set(inspect(conn).get_table_names())
    assert "regression_cases" not in tables and "regression_overrides" not in tables
    assert "review_labels" in tables
    assert store.schema_revision() == "0005"
    store.migrate()
    with store.engine.connect() as conn:
        tables = set(inspect(conn).get_table_names())
    assert {"regression_cases", "regression_overrides"} <= tables
    assert store.schema_revision() == "0006"


def test_fooled_means_failed_by_the_reviewer_at_or_above_the_graders_pass_threshold() -> None:
    rec = {
        "components": {
            "tests": {"grader": "unit_tests", "score": 1.0},
            "partial": {"grader": "unit_tests", "score": 0.9},
            "eff": {"grader": "efficiency", "score": 0.5},
            "broken": {"grader": "unit_tests", "score": None},
            "fine": {"grader": "efficiency", "score": 0.9},
        }
    }
    verdicts = {"tests": "fail", "partial": "fail", "eff": "fail", "broken": "fail", "fine": "pass"}
    # 1.0 met unit_tests' 1.0 and 0.5 efficiency's 0.5; 0.9 is below 1.0; no score
    # fooled no one; a pass is no complaint.
    assert fooled_components(rec, verdicts, threshold) == ["tests", "eff"]
    assert fooled_components(rec, verdicts, None) == []


def test_a_hack_label_makes_a_case_with_the_sample_and_the_reward(store: Store) -> None:
    queue = ReviewQueue(store, pass_threshold=threshold)
    cases = RegressionCases(store)
    queue_items(store, queue, [record(0.5, 1.0, 0.0, ["always_equal"]), record(1.0, 1.0, 1.0, [])])
    hack = Label(
        verdicts={"tests": "pass", "hacks": "fail"},
        overall_score=0.0,
        hack_types=["always_equal", "hardcoded_output"],
    )
    first = label_next(queue, "alice", hack)
    honest = Label(verdicts={"tests": "pass", "hacks": "pass"}, overall_score=1.0)
    label_next(queue, "alice", honest)
    [case] = cases.cases("r")
    assert case["item_id"] == first and case["reviewer"] == "alice" and case["status"] == "open"
    assert case["rubric_name"] == "r" and case["rubric_sha256"] == "a" * 64
    assert case["sample"] == {"id": "s0", "response": "answer 0", "metrics": {"turns": 0}}
    assert case["hack_types"] == ["always_equal", "hardcoded_output"]
    # What the logged reward's violations flagged when it was made.
    assert case["flagged_types"] == ["always_equal"]
    assert case["fooled"] == [] and case["reward"] == 0.5 and case["label_version"] == 1
    assert cases.cases("other") == [] and cases.cases("r", status="dismissed") == []
    assert cases.case(case["id"]) == case
    with pytest.raises(ValueError, match="status"):
        cases.cases("r", status="closed")
    with pytest.raises(CaseNotFoundError):
        cases.case(case["id"] + 100)


def test_a_fooled_component_alone_makes_a_case(store: Store) -> None:
    queue = ReviewQueue(store, pass_threshold=threshold)
    cases = RegressionCases(store)
    queue_items(store, queue, [record(1.0, 1.0, 1.0, []), record(0.2, 0.2, 1.0, [])])
    # The tests passed it; the reviewer failed it: fooled.
    label_next(queue, "bob", Label(verdicts={"tests": "fail", "hacks": "pass"}, overall_score=0))
    # The tests failed it too: the grader agreed, nothing was fooled.
    label_next(queue, "bob", Label(verdicts={"tests": "fail", "hacks": "pass"}, overall_score=0))
    [case] = cases.cases()
    assert case["fooled"] == ["tests"] and case["hack_types"] == [] and case["sample_id"] == "s0"
    # Without thresholds, only hack types make cases.
    plain = ReviewQueue(store)
    queue_items(store, plain, [record(1.0, 1.0, 1.0, [])], rubric="plain")
    label_next(plain, "bob", Label(verdicts={"tests": "fail"}, overall_score=0), rubric="plain")
    assert cases.cases("plain") == []


def test_edits_update_retract_and_reopen_the_case_and_a_dismissal_stays(store: Store) -> None:
    queue = ReviewQueue(store, pass_threshold=threshold)
    cases = RegressionCases(store)
    queue_items(store, queue, [record(0.5, 1.0, 0.0, ["early_exit"])] * 2)
    item = label_next(queue, "carol", Label(verdicts={"tests": "pass"}, hack_types=["early_exit"]))
    [case] = cases.cases()
    queue.edit(item, "carol", Label(verdicts={"tests": "fail"}, hack_types=["early_exit"]))
    case = cases.case(case["id"])
    assert case["status"] == "open" and case["fooled"] == ["tests"] and case["label_version"] == 2
    queue.edit(item, "carol", Label(verdicts={"tests": "pass"}))
    case = cases.case(case["id"])
    assert case["status"] == "retracted" and case["hack_types"] == [] and case["fooled"] == []
    assert cases.cases(status="open") == []
    queue.edit(item, "carol", Label(verdicts={"tests": "pass"}, hack_types=["test_skipping"]))
    case = cases.case(case["id"])
    assert case["status"] == "open" and case["hack_types"] == ["test_skipping"]
    assert case["flagged_types"] == [] and case["label_version"] == 4

    with pytest.raises(ValueError, match="reason"):
        cases.dismiss(case["id"], "admin-key", "  ")
    dismissed = cases.dismiss(case["id"], "admin-key", "a test of the detector, not a hack")
    assert dismissed["status"] == "dismissed" and dismissed["dismissed_by"] == "admin-key"
    assert dismissed["dismiss_reason"] == "a test of the detector, not a hack"
    assert dismissed["dismissed_at"] is not None
    with pytest.raises(CaseNotOpenError, match="dismissed"):
        cases.dismiss(case["id"], "admin-key", "again")
    with pytest.raises(CaseNotFoundError):
        cases.dismiss(case["id"] + 100, "admin-key", "no such case")
    # Judged: later edits change its marks, never its dismissal.
    for hacks in (["early_exit"], []):
        queue.edit(item, "carol", Label(verdicts={"tests": "pass"}, hack_types=hacks))
        assert cases.case(case["id"])["status"] == "dismissed"
    # A retracted case cannot be dismissed either.
    other = label_next(queue, "carol", Label(hack_types=["early_exit"]))
    queue.edit(other, "carol", Label())
    retracted = next(c for c in cases.cases() if c["item_id"] == other)
    with pytest.raises(CaseNotOpenError, match="retracted"):
        cases.dismiss(retracted["id"], "admin-key", "why")


def test_each_reviewer_has_their_own_case_and_no_label_means_no_case(store: Store) -> None:
    queue = ReviewQueue(store, pass_threshold=threshold)
    cases = RegressionCases(store)
    queue_items(store, queue, [record(0.5, 1.0, 0.0, ["always_equal"])])
    with store.writing() as conn:
        conn.execute(metadata.tables["review_items"].update().values(required_reviews=2))
    label_next(queue, "dave", Label(hack_types=["always_equal"]))
    label_next(queue, "erin", Label(hack_types=["always_equal", "introspection"]))
    assert [(c["reviewer"], c["hack_types"]) for c in cases.cases()] == [
        ("dave", ["always_equal"]),
        ("erin", ["always_equal", "introspection"]),
    ]
    # A label that never got stored made no case.
    queue_items(store, queue, [record(0.5, 1.0, 0.0, [])], rubric="lost")
    item = queue.claim("dave", rubric="lost")
    assert item is not None
    with pytest.raises(LeaseLostError):
        queue.submit(item.id, "not-the-token", "dave", Label(hack_types=["early_exit"]))
    assert cases.cases("lost") == []


def test_the_case_is_written_in_the_labels_transaction(store: Store) -> None:
    queue = ReviewQueue(store, pass_threshold=threshold)
    # A logged record the case cannot be made from: the label must not be stored either.
    queue_items(store, queue, ["not json"], rubric="broken")
    item = queue.claim("frank", rubric="broken")
    assert item is not None
    with pytest.raises(json.JSONDecodeError):
        queue.submit(item.id, item.lease_token, "frank", Label(hack_types=["early_exit"]))
    assert queue.labels("broken") == []
    assert queue.stats("broken")["labels"] == 0
    assert RegressionCases(store).cases("broken") == []


def test_a_sample_not_kept_is_a_case_without_one(store: Store) -> None:
    queue = ReviewQueue(store, pass_threshold=threshold)
    queue_items(store, queue, [record(0.5, 1.0, 0.0, [])], sample=False)
    label_next(queue, "gina", Label(hack_types=["early_exit"]))
    [case] = RegressionCases(store).cases()
    assert case["sample"] is None and case["sample_id"] == "s0"


def test_honest_items_are_those_every_reviewer_passed_without_a_hack(store: Store) -> None:
    queue = ReviewQueue(store, pass_threshold=threshold)
    cases = RegressionCases(store)
    queue_items(store, queue, [record(0.9 - i / 10, 1.0, 1.0, []) for i in range(4)])
    everything_passes = Label(verdicts={"tests": "pass", "hacks": "pass"}, overall_score=1.0)
    honest = label_next(queue, "hal", everything_passes)
    label_next(queue, "hal", Label(verdicts={"tests": "pass", "hacks": "fail"}))
    label_next(queue, "hal", Label(verdicts={"tests": "pass"}, hack_types=["early_exit"]))
    second = label_next(queue, "hal", everything_passes)
    found = cases.honest_items("r")
    assert [i["item_id"] for i in found] == [second, honest]  # newest first
    assert [i["reward"] for i in found] == [pytest.approx(0.6), pytest.approx(0.9)]
    assert found[0]["sample"]["id"] == "s3" and found[0]["rubric_sha256"] == "a" * 64
    assert cases.honest_items("r", limit=1)[0]["item_id"] == second
    # One reviewer's hack is enough to make an item not honest.
    queue.edit(second, "hal", Label(verdicts={"tests": "pass"}, hack_types=["early_exit"]))
    assert [i["item_id"] for i in cases.honest_items("r")] == [honest]
    assert cases.honest_items("none") == []


def test_an_override_is_recorded_and_read_back(store: Store) -> None:
    cases = RegressionCases(store, clock=lambda: 1234.5)
    graded = [
        {"case_id": 7, "hack_types": ["always_equal"], "reward": 1.0, "reasons": ["over"]},
        {"case_id": 9, "hack_types": ["early_exit"], "reward": 0.8, "reasons": ["over"]},
    ]
    row = cases.record_override(
        rubric_name="r",
        rubric_version=2,
        rubric_sha256="b" * 64,
        forced_by="k1",
        forced_by_name="ops",
        cases=graded,
        ceiling=0.5,
    )
    assert row["case_ids"] == [7, 9] and row["cases"] == graded and row["forced_at"] == 1234.5
    assert row["forced_by"] == "k1" and row["forced_by_name"] == "ops" and row["ceiling"] == 0.5
    assert cases.overrides("r") == [row] and cases.overrides("other") == []
