"""What replicas on one store rely on: key claims, the drift leader's lock, the log's gaps."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest
from sqlalchemy import insert

from arbiter.store.db import RewardRow, Store
from arbiter.store.drift_log import GAP_GRACE_S, DriftLog, LeaderLock, LogCursor
from arbiter.store.idempotency import IdempotencyClaims
from arbiter.store.tables import requests, rewards
from tests.store.conftest import log_request


@pytest.fixture
def pg_store(postgres_url: str) -> Iterator[Store]:
    store = Store(postgres_url)
    store.migrate()
    yield store
    store.close()


def test_one_owner_claims_a_key_the_other_waits_then_replays(store: Store) -> None:
    claims = IdempotencyClaims(store)
    assert claims.claim("c", "k", "a", lease_s=60).claimed
    held = claims.claim("c", "k", "b", lease_s=60)
    assert not held.claimed and held.holder == "a" and held.stored is None
    log_request(
        store, "req1", 2, key="k", client="c"
    )  # the response is logged and the claim goes with it
    done = claims.claim("c", "k", "b", lease_s=60)
    assert not done.claimed and done.stored is not None and done.stored.id == "req1"


def test_a_key_freed_by_the_winners_log_between_look_and_insert_replays(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Two replicas graded one key twice: b looked (nothing stored), a then logged
    # its response and dropped its claim in one transaction, and b's insert found
    # the key free. The interleaving is forced here by running a's log inside b's
    # first look.
    claims = IdempotencyClaims(store)
    assert claims.claim("c", "k", "a", lease_s=60).claimed
    real = store.find_request
    looks: list[str] = []

    def look_then_winner_logs(client: str, key: str):  # type: ignore[no-untyped-def]
        found = real(client, key)
        looks.append(key)
        if len(looks) == 1:
            log_request(store, "req1", 2, key="k", client="c")
        return found

    monkeypatch.setattr(store, "find_request", look_then_winner_logs)
    late = claims.claim("c", "k", "b", lease_s=60)
    assert not late.claimed, "b would grade a key whose response is already stored"
    assert late.stored is not None and late.stored.id == "req1"
    # b's claim went with it: the next caller replays too.
    again = claims.claim("c", "k", "x", lease_s=60)
    assert not again.claimed and again.stored is not None


def test_a_released_or_expired_claim_can_be_taken(store: Store) -> None:
    claims = IdempotencyClaims(store)
    assert claims.claim("c", "k", "a", lease_s=60).claimed
    claims.release("c", "k", "b")  # not b's: stays
    assert claims.claim("c", "k", "b", lease_s=60).holder == "a"
    claims.release("c", "k", "a")
    assert claims.claim("c", "k", "b", lease_s=-1).claimed  # b's claim has expired already
    assert claims.claim("c", "k", "a", lease_s=60).claimed  # so a takes it over
    assert claims.claim("c", "k", "b", lease_s=60).holder == "a"


def test_the_log_reads_rows_past_the_cursor_with_response_lengths(store: Store) -> None:
    log_request(store, "req1", 3)
    drift_log = DriftLog(store)
    cursor = LogCursor()
    read = drift_log.read(cursor, limit=2)
    assert [r.response_length for r in read] == [1, 2]
    cursor.advance([r.id for r in read], now=0.0)
    rest = drift_log.read(cursor, limit=10)
    assert [(r.request_id, r.response_length) for r in rest] == [("req1", 3)]


def test_the_cursor_remembers_missing_ids_for_a_while() -> None:
    cursor = LogCursor()
    cursor.advance([1, 2, 5], now=100.0)
    assert (cursor.newest, set(cursor.gaps)) == (5, {3, 4})
    cursor.advance([3], now=101.0)
    assert set(cursor.gaps) == {4}
    again = LogCursor.from_json(cursor.to_json())
    assert (again.newest, again.gaps) == (5, {4: 100.0})
    again.advance([], now=100.0 + GAP_GRACE_S + 1)  # a rolled-back batch's ids: given up
    assert again.gaps == {}


@pytest.mark.postgres
def test_a_batch_committed_late_below_the_newest_id_is_still_read(pg_store: Store) -> None:
    slow = pg_store.engine.connect()
    transaction = slow.begin()
    slow.execute(
        insert(requests),
        {
            "id": "slow",
            "client": "c",
            "endpoint": "rewards",
            "rubric_sha256": "f" * 64,
            "n_samples": 1,
            "envelope": "{}",
            "created_at": 0.0,
        },
    )
    slow.execute(
        insert(rewards),
        {
            "request_id": "slow",
            "position": 0,
            "sample_id": "late",
            "rubric_name": "r",
            "rubric_version": 1,
            "rubric_sha256": "f" * 64,
            "abstained": False,
            "record": "{}",
            "sample_sha256": "0" * 64,
            "latency_s": 0.0,
            "client": "c",
            "created_at": 0.0,
        },
    )  # its id is taken now, its row visible only at commit
    log_request(pg_store, "fast", 2)
    drift_log = DriftLog(pg_store)
    cursor = LogCursor()
    first = drift_log.read(cursor, limit=100)
    assert [r.request_id for r in first] == ["fast", "fast"]
    cursor.advance([r.id for r in first], now=0.0)
    assert len(cursor.gaps) == 1
    transaction.commit()
    slow.close()
    late = drift_log.read(cursor, limit=100)
    assert [r.request_id for r in late] == ["slow"]
    cursor.advance([r.id for r in late], now=1.0)
    assert cursor.gaps == {}


@pytest.mark.postgres
def test_one_leader_per_schema(pg_store: Store, postgres_url: str) -> None:
    other = Store(postgres_url)
    try:
        first, second = LeaderLock(pg_store, "drift"), LeaderLock(other, "drift")
        assert first.acquire()
        assert not second.acquire()
        assert first.check()
        first.release()  # or its process dies: the lock goes with the connection
        assert second.acquire()
        second.release()
    finally:
        other.close()


@pytest.mark.postgres
def test_replicas_started_together_migrate_one_at_a_time(postgres_url: str) -> None:
    stores = [Store(postgres_url) for _ in range(3)]
    errors: list[BaseException] = []
    start = threading.Barrier(len(stores))

    def migrate(store: Store) -> None:
        start.wait()
        try:
            store.migrate()
        except BaseException as e:  # collected and asserted on below
            errors.append(e)

    threads = [threading.Thread(target=migrate, args=(s,)) for s in stores]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    try:
        assert errors == []
        log_request(stores[0], "after", 1)
        assert stores[1].count_rewards() == 1
    finally:
        for s in stores:
            s.close()


@pytest.mark.postgres
def test_replicas_sample_review_by_the_same_reward_deciles(postgres_url: str) -> None:
    import asyncio

    from arbiter.api.review_sampler import ReviewSampler
    from arbiter.api.settings import Settings
    from arbiter.graders.types import Sample
    from arbiter.rubrics import build_rubric, score_samples

    rubric = build_rubric(
        {
            "name": "deciles",
            "version": 1,
            "components": {"eff": {"grader": "efficiency", "config": {"max_turns": 100}}},
            "review": {"sample_rate": 0.1, "stratify_by": ["reward_decile"]},
        }
    )
    stores = [Store(postgres_url) for _ in range(2)]
    stores[0].migrate()
    try:
        samplers = [ReviewSampler(s, Settings(database_url=postgres_url)) for s in stores]

        def graded(prefix: str, turns: range) -> list:
            samples = [
                Sample.model_validate(
                    {"id": f"{prefix}{t}", "response": "r", "metrics": {"turns": t}}
                )
                for t in turns
            ]
            return asyncio.run(score_samples(rubric, samples))

        # Replica 0 served the low rewards, replica 1 the high ones: in memory
        # each would know only its own half and cut deciles differently.
        for i, (store, turns) in enumerate(
            zip(stores, (range(0, 60), range(40, 100)), strict=True)
        ):
            rewards = graded(f"r{i}-", turns)
            store.record_request(
                request_id=f"req{i}",
                client="c",
                idempotency_key=None,
                endpoint="rewards",
                rubric_name=rubric.name,
                rubric_version=rubric.version,
                rubric_sha256=rubric.sha256,
                envelope="{}",
                rows=[
                    RewardRow(
                        p,
                        r.id,
                        None,
                        r.reward,
                        r.raw_reward,
                        r.model_dump_json(),
                        None,
                        "0" * 64,
                        0.0,
                    )
                    for p, r in enumerate(rewards)
                ],
            )
        probe = graded("probe-", range(0, 100, 7))
        decisions = [s.decide(rubric, probe) for s in samplers]
        edges = [s._deciles[rubric.sha256].edges() for s in samplers]
        assert edges[0] is not None and edges[0] == edges[1]
        assert [d.inclusion_probability for d in decisions[0]] == [
            d.inclusion_probability for d in decisions[1]
        ]
        assert [d.sampled for d in decisions[0]] == [d.sampled for d in decisions[1]]
    finally:
        for s in stores:
            s.close()


# -- claims die with their claimant (issue 24) ---------------------------------------


def test_a_claim_renewed_by_its_owner_holds_and_one_left_alone_is_taken_over(
    store: Store,
) -> None:
    claims = IdempotencyClaims(store)
    assert claims.claim("c", "k", "a", lease_s=1.0).claimed
    assert claims.renew("a", [("c", "k")], lease_s=60.0) == 1  # a is alive and grading
    held = claims.claim("c", "k", "b", lease_s=60.0)
    assert not held.claimed and held.holder == "a"
    # a dies: nobody renews its claim; once the lease has run out, b takes the key.
    assert claims.renew("a", [("c", "k")], lease_s=-1.0) == 1
    assert claims.claim("c", "k", "b", lease_s=60.0).claimed
    # a's late renewal does not take the key back from b.
    assert claims.renew("a", [("c", "k")], lease_s=60.0) == 0
    assert claims.claim("c", "k", "a", lease_s=60.0).holder == "b"


def test_a_claimants_own_leftover_claim_is_its_own_again(store: Store) -> None:
    # A release that failed (the store was down) leaves the claim behind; the
    # same replica's retry of the key must not wait for its own leftover.
    claims = IdempotencyClaims(store)
    assert claims.claim("c", "k", "a", lease_s=60.0).claimed
    assert claims.claim("c", "k", "a", lease_s=60.0).claimed
    assert claims.claim("c", "k", "b", lease_s=60.0).holder == "a"


def test_renewal_touches_only_the_owners_listed_keys_and_release_all_drops_the_rest(
    store: Store,
) -> None:
    claims = IdempotencyClaims(store)
    for key in ("k1", "k2", "k3"):
        assert claims.claim("c", key, "a", lease_s=60.0).claimed
    assert claims.claim("c", "other", "b", lease_s=60.0).claimed
    assert claims.renew("a", [("c", "k1"), ("c", "k2"), ("c", "other"), ("c", "gone")]) == 2
    assert claims.release_all("a") == 3
    assert claims.claim("c", "k3", "b", lease_s=60.0).claimed
    assert claims.claim("c", "other", "x", lease_s=60.0).holder == "b"


def test_leases_are_stamped_with_the_databases_clock(store: Store) -> None:
    from sqlalchemy import select

    from arbiter.store.tables import idempotency_claims

    before = time.time()
    with store.engine.connect() as conn:
        now = conn.execute(select(store.clock())).scalar_one()
    IdempotencyClaims(store).claim("c", "k", "a", lease_s=5.0)
    with store.engine.connect() as conn:
        row = conn.execute(select(idempotency_claims)).one()
    # The database runs on this host in the tests: its clock and ours agree.
    assert before - 1 <= now <= time.time() + 1
    assert row.expires_at - row.claimed_at == pytest.approx(5.0, abs=0.01)
