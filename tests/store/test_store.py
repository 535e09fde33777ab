"""The store on SQLite and on PostgreSQL: migrations, the reward log, keys, rubric versions."""

from __future__ import annotations

import time

import pytest

from arbiter.store.db import _ROWS_PER_INSERT, DuplicateRequestError, Store
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


# -- start-up and store faults (issue 24) ---------------------------------------------


def test_the_head_revision_read_from_the_files_is_alembics() -> None:
    from alembic.config import Config
    from alembic.script import ScriptDirectory

    from arbiter.store.db import _MIGRATIONS, head_revision

    config = Config()
    config.set_main_option("script_location", str(_MIGRATIONS))
    assert head_revision() == ScriptDirectory.from_config(config).get_current_head()


def test_a_current_schema_is_not_migrated_again_and_alembic_is_not_loaded(
    store: Store, store_url: str
) -> None:
    import subprocess
    import sys

    from arbiter.store.db import head_revision

    assert store.schema_revision() == head_revision()
    check = (
        "import sys; from store.db import Store; s = Store(sys.argv[1]); s.migrate(); "
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'alembic'))"
    )
    done = subprocess.run(
        [sys.executable, "-c", check, store_url], capture_output=True, text=True, check=True
    )
    assert done.stdout.strip() == "[]", done.stdout + done.stderr


@pytest.mark.postgres
def test_a_lock_held_on_the_rewards_fails_a_write_and_the_probe_within_the_lock_timeout(
    postgres_url: str,
) -> None:
    from sqlalchemy import create_engine, text
    from sqlalchemy.exc import OperationalError

    store = Store(postgres_url)
    store.migrate()
    holder = create_engine(postgres_url)
    try:
        with holder.connect() as conn:
            conn.execute(text("LOCK TABLE rewards IN ACCESS EXCLUSIVE MODE"))
            for attempt in (lambda: log_request(store, "locked", 3), store.probe_write):
                started = time.monotonic()
                with pytest.raises(OperationalError, match="lock timeout"):
                    attempt()
                # The bound: the same 2 s as SQLite's busy timeout, within 3 s.
                assert time.monotonic() - started < 3.0
            conn.rollback()
        log_request(store, "after", 3)
        store.probe_write()  # and it leaves nothing behind
        assert store.count_rewards() == 3
    finally:
        holder.dispose()
        store.close()


@pytest.mark.postgres
def test_a_migration_waits_for_another_replicas_past_the_lock_timeout(postgres_url: str) -> None:
    import hashlib
    import threading

    from sqlalchemy import create_engine, text

    holder = create_engine(postgres_url)
    store = Store(postgres_url)
    try:
        with holder.connect() as conn:
            schema = conn.execute(text("SELECT current_schema()")).scalar_one()
            digest = hashlib.blake2b(f"{schema}\x00arbiter-migrate".encode(), digest_size=8)
            key = int.from_bytes(digest.digest(), "big", signed=True)
            conn.execute(text("SELECT pg_advisory_lock(:k)"), {"k": key})  # "migrating"
            done = threading.Event()
            errors: list[BaseException] = []

            def migrate() -> None:
                try:
                    store.migrate()
                except BaseException as e:  # asserted below
                    errors.append(e)
                done.set()

            thread = threading.Thread(target=migrate)
            thread.start()
            assert not done.wait(3.0), f"migrate did not wait for the lock: {errors}"
            conn.execute(text("SELECT pg_advisory_unlock(:k)"), {"k": key})
            conn.commit()
            thread.join(timeout=60)
        assert errors == []
        log_request(store, "migrated", 1)
    finally:
        holder.dispose()
        store.close()
