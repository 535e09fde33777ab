"""The store on SQLite and on PostgreSQL: migrations, the reward log, keys, rubric versions."""

from __future__ import annotations

import time

import pytest

from store.db import _ROWS_PER_INSERT, DuplicateRequestError, Store
from tests.store.conftest import RUBRIC_SHA256, log_request


def test_requests_and_their_rewards_round_trip_in_order(store: Store):
    log_request(store, "req1", 4, key="k1")
    stored = store.find_request("c1", "k1")
    assert stored is not None and stored.id == "req1"
    assert stored.records == [f'{{"id": "s{i}"}}' for i in range(4)]
    assert store.find_request("c2", "k1") is None
    assert store.count_rewards() == 4
    logged = store.reward_records(rubric_sha256=RUBRIC_SHA256, sample_ids=["s1", "s3"])
    assert [r["sample_id"] for r in logged] == ["s1", "s3"]


def test_a_request_larger_than_one_insert_statement_keeps_every_row_in_order(store: Store):
    # SQLite takes the rows in multi-row statements of at most _ROWS_PER_INSERT.
    n = 2 * _ROWS_PER_INSERT + 3
    log_request(store, "req1", n, key="k1")
    stored = store.find_request("c1", "k1")
    assert stored is not None
    assert stored.records == [f'{{"id": "s{i}"}}' for i in range(n)]
    logged = store.reward_records(rubric_sha256=RUBRIC_SHA256, sample_ids=["s0", f"s{n - 1}"])
    assert [(r["sample_id"], r["position"]) for r in logged] == [("s0", 0), (f"s{n - 1}", n - 1)]
    with store.engine.connect() as conn:
        values = conn.exec_driver_sql("SELECT reward FROM rewards ORDER BY position").all()
    assert [v for (v,) in values] == [None] + [pytest.approx(i / 10) for i in range(1, n)]


def test_same_idempotency_key_twice_is_refused_and_writes_nothing(store: Store):
    log_request(store, "req1", key="k1")
    with pytest.raises(DuplicateRequestError):
        log_request(store, "req2", key="k1")
    assert store.count_rewards() == 3
    log_request(store, "req3")
    log_request(store, "req4")  # requests without a key never collide
    assert store.count_rewards() == 9


def test_another_constraint_is_not_read_as_a_reused_key(store: Store):
    # The violated constraint is told by name (PostgreSQL) or by SQLite's error
    # code, not by the message text: a reused request id is not a reused key.
    from sqlalchemy.exc import IntegrityError

    log_request(store, "req1", key="k1")
    with pytest.raises(IntegrityError):
        log_request(store, "req1", key="k2")
    assert store.count_rewards() == 3


def test_keys(store: Store):
    record_, key = store.create_key("ci", "trainer")
    assert store.key_for(key) == record_
    assert store.key_for(key + "x") is None
    assert store.revoke_key(record_.id) and not store.revoke_key(record_.id)
    assert store.key_for(key) is None
    with pytest.raises(ValueError, match="unknown role"):
        store.create_key("x", "root")


def test_rubric_versions(store: Store):
    assert store.save_rubric(sha256="b" * 64, name="r", version=1, text_="name: r", origin="f")
    assert not store.save_rubric(sha256="b" * 64, name="r", version=1, text_="name: r", origin="f")
    assert store.rubric_texts() == [("name: r", "f")]


def test_sqlite_wal_is_checkpointed_off_the_writers_path(tmp_path) -> None:
    store = Store(f"sqlite:///{tmp_path / 'wal.db'}")
    store.migrate()
    for i in range(5):
        log_request(store, f"req{i}", 50)
    checkpointer = store._checkpointer
    assert checkpointer is not None and checkpointer.alive
    deadline = time.monotonic() + 10
    while checkpointer.runs == 0 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert checkpointer.last is not None
    busy, frames, copied = checkpointer.last
    # Nobody else was reading or writing: every committed frame reached the file.
    assert busy == 0 and frames > 0 and copied == frames
    store.close()
    assert not checkpointer.alive
    # Reopened, everything is there (and the WAL bound applies to new connections).
    again = Store(f"sqlite:///{tmp_path / 'wal.db'}")
    assert again.count_rewards() == 250
    with again.engine.connect() as conn:
        assert conn.exec_driver_sql("PRAGMA wal_autocheckpoint").scalar_one() == 16384
    again.close()


def test_in_memory_sqlite_has_no_checkpointer() -> None:
    store = Store("sqlite:///:memory:")
    store.migrate()
    log_request(store, "req")
    assert store._checkpointer is None
    store.close()
