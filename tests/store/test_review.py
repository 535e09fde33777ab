"""The review queue on SQLite and PostgreSQL: leases, expiry, double review, concurrency."""

from __future__ import annotations

import json
import multiprocessing
import threading
import time
import uuid
from collections import Counter
from typing import Any

import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import event

from arbiter.store.db import RewardRow, Store
from arbiter.store.review import (
    ClaimedItem,
    EnqueueItem,
    Label,
    LabelNotFoundError,
    LeaseLostError,
    ReviewQueue,
)
from arbiter.store.tables import metadata


class FakeClock:
    """Time that moves only when a test says so: leases expire without sleeping."""

    def __init__(self, now: float = 1_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def log_and_enqueue(
    store: Store, queue: ReviewQueue, n: int, *, rubric: str = "r", required: int = 1
) -> str:
    request_id = uuid.uuid4().hex
    rows = [
        RewardRow(
            position=i,
            sample_id=f"s{i}",
            group_id=None,
            reward=i / n,
            raw_reward=i / n,
            record=json.dumps({"id": f"s{i}", "components": {}}),
            sample=json.dumps({"id": f"s{i}", "response": f"answer {i}"}),
            sample_sha256="0" * 64,
            latency_s=0.0,
        )
        for i in range(n)
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
        EnqueueItem(request_id, i, f"s{i}", rubric, "a" * 64, 0.5, "uniform", required)
        for i in range(n)
    ]
    assert queue.enqueue(items) == n
    assert queue.enqueue(items) == 0  # a replayed request does not queue twice
    return request_id


def test_the_migration_creates_exactly_the_review_tables_declared(store: Store) -> None:
    with store.engine.connect() as conn:
        diff = compare_metadata(MigrationContext.configure(conn), metadata)
    # Only the review tables are this test's business; test_store owns the others.
    assert [d for d in diff if "review_" in repr(d)] == []


def test_claim_label_and_export(store: Store) -> None:
    queue = ReviewQueue(store)
    log_and_enqueue(store, queue, 3)
    item = queue.claim("alice")
    assert item is not None and item.sample_id == "s0" and item.label_count == 0
    assert json.loads(item.sample or "")["response"] == "answer 0"
    label = Label(
        verdicts={"tests": "pass"}, overall_score=0.75, hack_types=["early_exit"], comment="hm"
    )
    queue.submit(item.id, item.lease_token, "alice", label)
    with pytest.raises(LeaseLostError):  # the lease ended with the label
        queue.submit(item.id, item.lease_token, "alice", label)
    stats = queue.stats()
    assert (stats["items"], stats["done"], stats["open"], stats["labels"]) == (3, 1, 2, 1)
    lines = list(queue.export_jsonl())
    assert len(lines) == 1
    row = json.loads(lines[0])
    assert row["verdicts"] == {"tests": "pass"} and row["hack_types"] == ["early_exit"]
    assert row["reviewer"] == "alice" and row["inclusion_probability"] == 0.5
    assert row["overall_score"] == 0.75 and row["comment"] == "hm" and "record" not in row


def test_rubric_filter_and_unknown_reward(store: Store) -> None:
    queue = ReviewQueue(store)
    log_and_enqueue(store, queue, 2, rubric="a")
    log_and_enqueue(store, queue, 2, rubric="b")
    item = queue.claim("bob", rubric="b")
    assert item is not None and item.rubric_name == "b"
    assert set(queue.stats()["rubrics"]) == {"a", "b"}
    assert queue.stats("b")["leased"] == 1 and queue.stats("a")["leased"] == 0
    with pytest.raises(KeyError):
        queue.enqueue([EnqueueItem("nope", 0, "x", "a", "a" * 64, 1.0, "uniform")])


def test_expired_lease_returns_the_item_and_heartbeat_keeps_it(store: Store) -> None:
    clock = FakeClock()
    queue = ReviewQueue(store, clock=clock)  # the default lease: 10 minutes
    log_and_enqueue(store, queue, 1)
    first = queue.claim("alice")
    assert first is not None
    clock.now += 599
    assert queue.claim("bob") is None  # still alice's
    assert queue.heartbeat(first.id, first.lease_token, "alice") == clock.now + 600
    clock.now += 599
    assert queue.claim("bob") is None  # the heartbeat extended it
    clock.now += 2
    second = queue.claim("bob")  # expired: it came back
    assert second is not None and second.id == first.id
    assert second.lease_token != first.lease_token
    for attempt in (queue.heartbeat, queue.release):
        with pytest.raises(LeaseLostError):
            attempt(first.id, first.lease_token, "alice")
    with pytest.raises(LeaseLostError):
        queue.submit(first.id, first.lease_token, "alice", Label())
    queue.submit(second.id, second.lease_token, "bob", Label(overall_score=1.0))
    assert [r["reviewer"] for r in queue.labels()] == ["bob"]


def test_release_returns_the_item_at_once(store: Store) -> None:
    queue = ReviewQueue(store)
    log_and_enqueue(store, queue, 1)
    item = queue.claim("alice")
    assert item is not None and queue.claim("bob") is None
    queue.release(item.id, item.lease_token, "alice")
    again = queue.claim("bob")
    assert again is not None and again.id == item.id


def test_double_review_needs_two_different_reviewers(store: Store) -> None:
    queue = ReviewQueue(store)
    log_and_enqueue(store, queue, 1, required=2)
    item = queue.claim("alice")
    assert item is not None
    queue.submit(item.id, item.lease_token, "alice", Label())
    assert queue.claim("alice") is None  # alice labelled it already
    second = queue.claim("bob")
    assert second is not None and second.id == item.id and second.label_count == 1
    queue.submit(second.id, second.lease_token, "bob", Label())
    assert queue.claim("carol") is None
    assert queue.stats()["done"] == 1


def run_reviewers(
    store: Store, n_items: int, n_reviewers: int, required: int, abandon_every: int
) -> list[dict[str, Any]]:
    """Let reviewers work the queue in threads; some walk away from every n-th item.

    Threads share one Store, whose write lock serializes their claims on SQLite:
    this checks leases, double review and abandonment under load, not races on the
    database. Those are the multi-process and interleaved tests at the end.
    """
    clock = FakeClock()
    queue = ReviewQueue(store, clock=clock)
    log_and_enqueue(store, queue, n_items, required=required)
    holders: dict[int, str] = {}
    tokens: list[str] = []
    abandoned: list[int] = []
    guard = threading.Lock()
    errors: list[BaseException] = []

    def reviewer(name: str, start: threading.Barrier, abandon: int) -> None:
        try:
            start.wait()
            claims = 0
            while True:
                item = queue.claim(name)
                if item is None:
                    # Nothing for me right now. Quit only when the queue is quiet: nothing
                    # open and nothing leased but what was walked away from. An item still
                    # in someone's hands may come back needing a label only I can give.
                    stats = queue.stats()
                    with guard:
                        # (abandoned leases have run out by the second round)
                        walked_away = len(abandoned) if abandon else 0
                    quiet = stats["open"] == 0 and stats["leased"] == walked_away
                    if quiet:
                        return
                    time.sleep(0.001)
                    continue
                claims += 1
                with guard:
                    # Witness in memory: nobody else holds what the store just leased us.
                    assert item.id not in holders, f"{item.id} held by {holders[item.id]}"
                    holders[item.id] = name
                    tokens.append(item.lease_token)
                with guard:
                    # Let go before submitting: under double review the next reviewer
                    # may claim the item as soon as our label commits.
                    del holders[item.id]
                if abandon and claims % abandon == 0:
                    with guard:
                        abandoned.append(item.id)  # walked away: the lease runs on
                    continue
                # A lost lease here would mean someone else was handed our item.
                queue.submit(item.id, item.lease_token, name, Label(overall_score=0.5))
        except BaseException as e:
            errors.append(e)

    def work(abandon: int) -> None:
        start = threading.Barrier(n_reviewers)
        threads = [
            threading.Thread(target=reviewer, args=(f"r{i}", start, abandon))
            for i in range(n_reviewers)
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=120)
        assert not any(t.is_alive() for t in threads), "a reviewer hung"
        assert not errors, errors[:3]

    work(abandon_every)
    if abandon_every:
        # The walked-away items are still leased, so nobody could take them...
        assert abandoned and queue.stats()["leased"] == len(abandoned)
        clock.now += queue.lease_s + 1
        # ...until their leases ran out: then they come back, and get labelled.
        assert queue.stats()["leased"] == 0
        work(0)
    assert len(set(tokens)) == len(tokens) == n_items * required + len(abandoned)
    stats = queue.stats()
    assert (stats["done"], stats["open"], stats["leased"]) == (n_items, 0, 0)
    return queue.labels()


@pytest.mark.parametrize(("required", "abandon_every"), [(1, 0), (2, 0), (1, 7)])
def test_twenty_reviewers_label_every_item_exactly_as_often_as_required(
    store: Store, required: int, abandon_every: int
) -> None:
    labels = run_reviewers(store, 500, 20, required=required, abandon_every=abandon_every)
    per_item = Counter(row["item_id"] for row in labels)
    assert len(per_item) == 500  # none lost
    assert set(per_item.values()) == {required}
    pairs = Counter((row["item_id"], row["reviewer"]) for row in labels)
    assert set(pairs.values()) == {1}  # double review is by two different people
    assert len({row["reviewer"] for row in labels}) > 1  # the work was actually shared


# -- races between processes ----------------------------------------------------


def test_a_claim_racing_another_replica_never_shares_an_item(store: Store) -> None:
    queue = ReviewQueue(store)
    log_and_enqueue(store, queue, 3)
    # A second Store on the same database: its own connections and no shared
    # in-process lock, as another API replica has.
    other_store = Store(store.url)
    ours, other = ReviewQueue(store), ReviewQueue(other_store)
    theirs: list[ClaimedItem | None] = []

    def interleave(conn, cursor, statement, parameters, context, executemany) -> None:
        # Once, in the gap between our claim's SELECT and its UPDATE: the other
        # replica claims right then.
        if statement.lstrip().upper().startswith("UPDATE REVIEW_ITEMS") and not theirs:
            theirs.append(other.claim("bob"))

    event.listen(store.engine, "before_cursor_execute", interleave)
    try:
        mine = ours.claim("alice")
    finally:
        event.remove(store.engine, "before_cursor_execute", interleave)
        other_store.close()
    assert mine is not None and theirs and theirs[0] is not None
    if store.is_sqlite:
        # Our SELECT held no snapshot: the other claim leased the oldest item
        # first, our UPDATE changed no row, and we moved on to the next item.
        assert (theirs[0].sample_id, mine.sample_id) == ("s0", "s1")
        assert ours.claim_conflicts == 1
    else:
        # Our SELECT ... FOR UPDATE locked the oldest row, so the other claim
        # skipped it (SKIP LOCKED) instead of colliding with us.
        assert (mine.sample_id, theirs[0].sample_id) == ("s0", "s1")
        assert ours.claim_conflicts == 0 and other.claim_conflicts == 0


def _review_in_a_process(url: str, start: Any, reviewer: str) -> tuple[int, int]:
    """Work the queue from a process of its own until nothing is left to claim."""
    store = Store(url)
    try:
        queue = ReviewQueue(store)
        start.wait()
        labelled = 0
        while (item := queue.claim(reviewer)) is not None:
            queue.submit(item.id, item.lease_token, reviewer, Label(overall_score=0.5))
            labelled += 1
        return labelled, queue.claim_conflicts
    finally:
        store.close()


def test_reviewer_processes_label_every_item_once(store_url: str) -> None:
    # Processes, not threads: the store's in-process write lock does not reach
    # across them, so claims really race on the database.
    url = store_url
    store = Store(url)
    store.migrate()
    try:
        log_and_enqueue(store, ReviewQueue(store), 300)
    finally:
        store.close()
    n = 6
    context = multiprocessing.get_context("spawn")
    with context.Manager() as manager:
        start = manager.Barrier(n)
        with context.Pool(n) as pool:
            jobs = [pool.apply_async(_review_in_a_process, (url, start, f"r{i}")) for i in range(n)]
            results = [job.get(timeout=300) for job in jobs]
    store = Store(url)
    try:
        queue = ReviewQueue(store)
        labels = queue.labels()
        stats = queue.stats()
    finally:
        store.close()
    per_item = Counter(row["item_id"] for row in labels)
    assert len(per_item) == 300 and set(per_item.values()) == {1}
    assert sum(done for done, _ in results) == 300
    assert (stats["done"], stats["open"], stats["leased"]) == (300, 0, 0)
    assert sum(1 for done, _ in results if done) > 1  # the work was shared
    conflicts = sum(c for _, c in results)
    if url.startswith("postgresql"):
        assert conflicts == 0  # SKIP LOCKED: racing claims pass each other by


def test_a_skip_sends_the_item_to_the_back_of_that_reviewers_queue_only(store: Store) -> None:
    # Issue 27: "s" then "n" handed back the same item.
    clock = FakeClock()
    queue = ReviewQueue(store, clock=clock)
    log_and_enqueue(store, queue, 3)
    first = queue.claim("alice")
    assert first is not None and first.sample_id == "s0"
    queue.release(first.id, first.lease_token, "alice")  # a skip
    clock.now += 1
    second = queue.claim("alice")
    assert second is not None and second.sample_id == "s1"
    queue.release(second.id, second.lease_token, "alice")
    clock.now += 1
    # Another reviewer's order is untouched by alice's skips.
    bob = queue.claim("bob")
    assert bob is not None and bob.sample_id == "s0"
    queue.release(bob.id, bob.lease_token, "bob", skip=False)  # a closed page: no skip
    # Alice: the one item she never skipped, then her skips, the oldest skip first.
    order = []
    for _ in range(3):
        item = queue.claim("alice")
        assert item is not None
        order.append(item.sample_id)
        queue.release(item.id, item.lease_token, "alice")
        clock.now += 1
    assert order == ["s2", "s0", "s1"]
    # Bob's page closed (no skip): his next claim is the same oldest item.
    again = queue.claim("bob")
    assert again is not None and again.sample_id == "s0"


def test_an_edit_is_a_new_version_and_the_latest_is_what_counts(store: Store) -> None:
    queue = ReviewQueue(store, clock=FakeClock())
    log_and_enqueue(store, queue, 1)
    item = queue.claim("alice")
    assert item is not None
    queue.submit(item.id, item.lease_token, "alice", Label({"c": "pass"}, 1.0))
    assert queue.edit(item.id, "alice", Label({"c": "fail"}, 0.25, ["early_exit"], "oops")) == 2
    [row] = queue.labels("r")
    assert row["version"] == 2 and row["verdicts"] == {"c": "fail"}
    assert row["overall_score"] == 0.25 and row["hack_types"] == ["early_exit"]
    history = queue.label_versions(item.id, "alice")
    assert [(v["version"], v["verdicts"]) for v in history] == [
        (1, {"c": "pass"}),
        (2, {"c": "fail"}),
    ]
    assert [r["item_id"] for r in queue.recent_labels("alice")] == [item.id]
    claimed, label = queue.labelled_item(item.id, "alice")
    assert claimed.sample_id == "s0" and label["version"] == 2
    # Only its own reviewer edits a label.
    with pytest.raises(LabelNotFoundError):
        queue.edit(item.id, "bob", Label({"c": "pass"}))
    assert queue.stats("r", reviewer="alice")["you"] == {"labelled": 1, "left": 0}
    assert queue.stats("r", reviewer="bob")["you"] == {"labelled": 0, "left": 0}
