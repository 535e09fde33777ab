"""The store: one narrow interface over SQLite (default) or PostgreSQL.

Every method is synchronous and short; the service calls them from a worker
thread. Each request's rewards are written in one transaction, committed
before the response is sent, so an acknowledged reward survives a crash.

One module, one concept: the store's interface, so that a test or a replica swaps one
URL and nothing else. Each table has one home: keys, rubrics and the reward log here;
the review queue and its leases in :mod:`arbiter.store.review`; the drift tables
(alerts, the monitor's state, resets, silences) in :mod:`arbiter.store.drift_log`;
Idempotency-Key claims in :mod:`arbiter.store.idempotency`.

Every write goes through :meth:`Store.writing`, the one write transaction: on SQLite
it queues this process's writers for the file's one lock; on PostgreSQL it bounds the
transaction's statements (:data:`WRITE_STATEMENT_TIMEOUT_MS`). The exception is
:meth:`Store.migrate`, which waits as long as a migration needs.

What holds on PostgreSQL only (the embedded SQLite file has one process):

* replicas migrate one at a time, under a transaction-scoped advisory lock per schema;
* every session waits at most :data:`LOCK_TIMEOUT_MS` for a lock and is ended after
  :data:`IDLE_IN_TRANSACTION_TIMEOUT_MS` idle inside a transaction;
* an Idempotency-Key is claimed in the store before grading, and the claim is deleted
  in the same transaction that logs the key's response;
* one replica's drift monitor follows the shared log, chosen by a session advisory lock;
* reviewers lease items with ``FOR UPDATE SKIP LOCKED``.
"""

from __future__ import annotations

import hashlib
import logging
import re
import secrets
import sqlite3
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

from sqlalchemy import (
    ColumnElement,
    Connection,
    Engine,
    Float,
    cast,
    create_engine,
    event,
    func,
    insert,
    inspect,
    select,
    text,
    update,
)
from sqlalchemy.exc import IntegrityError

from arbiter.store.tables import (
    api_keys,
    idempotency_claims,
    requests,
    rewards,
    rubric_versions,
)

__all__ = [
    "ROLES",
    "ApiKey",
    "DuplicateRequestError",
    "LastAdminKeyError",
    "RewardRow",
    "Store",
    "StoredRequest",
    "hash_key",
    "reward_filters",
]

ROLES = ("trainer", "reviewer", "admin")
KEY_PREFIX = "arb"

logger = logging.getLogger("arbiter.store")

#: WAL pages after which a committing writer checkpoints by itself. The
#: background checkpointer keeps the WAL far below this; it is the safety net
#: (64 MiB at 4 KiB pages) should the checkpointer fall behind or stop.
WAL_AUTOCHECKPOINT_PAGES = 16384
#: How often the checkpointer looks for new commits to copy into the database.
CHECKPOINT_INTERVAL_S = 0.2


def hash_key(key: str) -> str:
    """Return the stored form of an API key."""
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


class DuplicateRequestError(Exception):
    """A request with this (client, idempotency key) is already stored."""


@dataclass(frozen=True, slots=True)
class ApiKey:
    """An API key's record (never the key itself)."""

    id: str
    name: str
    role: str
    created_at: float
    revoked_at: float | None


class RewardRow(NamedTuple):
    """One reward to log (a tuple: the service builds one per sample, 256 a request)."""

    position: int
    sample_id: str
    group_id: str | None
    reward: float | None
    raw_reward: float | None
    record: str
    sample: str | None
    sample_sha256: str
    latency_s: float


@dataclass(frozen=True, slots=True)
class StoredRequest:
    """A logged request: its envelope and its rewards' records, in order."""

    id: str
    envelope: str
    records: list[str]
    created_at: float


#: How long an SQLite statement waits for a lock another connection holds.
BUSY_TIMEOUT_MS = 2000

#: How long a PostgreSQL statement waits for a lock (``lock_timeout``): the same
#: bound as SQLite's, so a lock held elsewhere fails a write, and the service
#: answers 503 and ``/readyz`` says so, within the same 2 s on either store.
LOCK_TIMEOUT_MS = BUSY_TIMEOUT_MS
#: A PostgreSQL write statement running longer than this (a stalled disk, a
#: server starved of I/O) is cancelled, so a write fails rather than hangs.
#: Set per write transaction: reads (a replay of the whole log) may run longer.
WRITE_STATEMENT_TIMEOUT_MS = 10_000
#: A session of ours idle inside a transaction this long (its process frozen
#: mid-write) is ended by the server, so the locks it holds do not outlive it.
IDLE_IN_TRANSACTION_TIMEOUT_MS = 60_000

#: Bytes the write probe writes (and removes in the same transaction): enough
#: pages that a full disk fails it as it would fail a batch of rewards.
PROBE_BYTES = 256 * 1024


class LastAdminKeyError(Exception):
    """Revoking this key would leave no live admin key."""


def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    cursor = dbapi_connection.cursor()
    # WAL lets readers run beside the writer; NORMAL sync keeps committed
    # transactions across a process crash (only a power loss can drop the
    # last ones), at a fraction of FULL's cost.
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=NORMAL")
    # A lock held elsewhere (another process) fails a write within this bound,
    # so the caller can answer at once rather than queue every request behind it.
    cursor.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute(f"PRAGMA wal_autocheckpoint={WAL_AUTOCHECKPOINT_PAGES}")
    cursor.close()


def _postgres_session(dbapi_connection: Any, _record: Any) -> None:
    # Session defaults, set on every new connection (the URL's own ``options``,
    # such as a search_path, stay as they are).
    with dbapi_connection.cursor() as cursor:
        cursor.execute(f"SET lock_timeout = {LOCK_TIMEOUT_MS}")
        cursor.execute(
            f"SET idle_in_transaction_session_timeout = {IDLE_IN_TRANSACTION_TIMEOUT_MS}"
        )
    dbapi_connection.commit()  # a SET inside a rolled-back transaction would be undone


_MIGRATIONS = Path(__file__).parent / "migrations"
_REVISION = re.compile(r"^revision\s*=\s*[\"']([^\"']+)[\"']", re.M)
_DOWN_REVISION = re.compile(r"^down_revision\s*=\s*[\"']([^\"']+)[\"']", re.M)


def head_revision() -> str:
    """Return the newest migration's revision id, read from the migration files.

    Read as text rather than through Alembic, so that a replica whose schema is
    current loads no Alembic at all (its import and environment cost every start);
    ``tests/store`` checks it against Alembic's own answer.

    Raises:
        RuntimeError: the migrations do not form one line (no head, or several).
    """
    revisions: set[str] = set()
    revised: set[str] = set()
    for path in (_MIGRATIONS / "versions").glob("*.py"):
        source = path.read_text(encoding="utf-8")
        found = _REVISION.search(source)
        if found is None:
            continue
        revisions.add(found.group(1))
        down = _DOWN_REVISION.search(source)
        if down is not None:
            revised.add(down.group(1))
    heads = revisions - revised
    if len(heads) != 1:
        raise RuntimeError(f"{_MIGRATIONS}: expected one head revision, found {sorted(heads)}")
    return heads.pop()


#: The unique constraint of (client, idempotency key), as named in :mod:`arbiter.store.tables`.
IDEMPOTENCY_CONSTRAINT = "uq_requests_client_idempotency_key"

#: Rows per multi-row INSERT on SQLite: 16 columns each stays far below the
#: 32,766 host parameters SQLite allows in one statement.
_ROWS_PER_INSERT = 512

#: The columns ``record_request`` fills in the rewards table, in the order it builds them.
REWARD_COLUMNS = (
    "request_id",
    "position",
    "sample_id",
    "group_id",
    "rubric_name",
    "rubric_version",
    "rubric_sha256",
    "reward",
    "raw_reward",
    "abstained",
    "record",
    "sample",
    "sample_sha256",
    "latency_s",
    "client",
    "created_at",
)


class _Checkpointer:
    """Copies committed WAL frames into the SQLite file, off the writers' path.

    With SQLite's default, the commit that pushes the WAL past 1,000 pages
    copies it into the database itself, so one request in a few paid for the
    others' writes (``bench/api.py`` measures the logging path). Here a thread
    of its own does that with a PASSIVE checkpoint, which never blocks a writer
    or a reader, and SQLite runs it
    without holding the GIL. A complete checkpoint lets the next writer
    restart the WAL from its beginning, so the file stays small.
    """

    def __init__(self, path: str) -> None:
        self.path = path
        self._dirty = threading.Event()
        self._stopping = threading.Event()
        #: Checkpoints run (for tests and curiosity); SQLite's (busy, frames, copied) of the last.
        self.runs = 0
        self.last: tuple[int, int, int] | None = None
        self._thread = threading.Thread(target=self._run, name="sqlite-checkpointer", daemon=True)
        self._thread.start()

    def poke(self) -> None:
        """Say a transaction committed: there are frames to copy."""
        self._dirty.set()

    def stop(self) -> None:
        """Stop the thread (SQLite checkpoints what is left when the last connection closes)."""
        self._stopping.set()
        self._thread.join(timeout=30)

    @property
    def alive(self) -> bool:
        """Whether the thread is running."""
        return self._thread.is_alive()

    def _run(self) -> None:
        try:
            conn = sqlite3.connect(self.path, check_same_thread=False)
        except sqlite3.Error:
            logger.exception("cannot open %s to checkpoint it; writers will", self.path)
            return
        try:
            while not self._stopping.wait(CHECKPOINT_INTERVAL_S):
                if not self._dirty.is_set():
                    continue
                self._dirty.clear()
                try:
                    busy, frames, copied = conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
                    self.last = (int(busy), int(frames), int(copied))
                    self.runs += 1
                except sqlite3.Error:
                    logger.exception("WAL checkpoint of %s failed; will retry", self.path)
        finally:
            conn.close()


def reward_filters(
    *,
    client: str | None = None,
    sample_id: str | None = None,
    rubric_name: str | None = None,
    rubric_sha256: str | None = None,
    since: float | None = None,
    until: float | None = None,
) -> list[ColumnElement[bool]]:
    """Return the conditions on logged rewards that the given filters set (``None``: any).

    ``since`` is inclusive and ``until`` exclusive (Unix times of logging).
    """
    wanted: list[ColumnElement[bool]] = []
    for column, value in (
        (rewards.c.client, client),
        (rewards.c.sample_id, sample_id),
        (rewards.c.rubric_name, rubric_name),
        (rewards.c.rubric_sha256, rubric_sha256),
    ):
        if value is not None:
            wanted.append(column == value)
    if since is not None:
        wanted.append(rewards.c.created_at >= since)
    if until is not None:
        wanted.append(rewards.c.created_at < until)
    return wanted


class Store:
    """Rewards, requests, API keys and rubric versions."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.is_sqlite = url.startswith("sqlite")
        kwargs: dict[str, Any] = {"pool_pre_ping": not self.is_sqlite}
        if self.is_sqlite:
            kwargs["connect_args"] = {"check_same_thread": False}
            self._ensure_sqlite_dir(url)
        self.engine: Engine = create_engine(url, **kwargs)
        if self.is_sqlite:
            event.listen(self.engine, "connect", _sqlite_pragmas)
        else:
            event.listen(self.engine, "connect", _postgres_session)
        # SQLite has one writer at a time; queueing writers here is cheaper
        # than letting them spin on the file lock.
        self._write_lock = threading.Lock() if self.is_sqlite else None
        self._rewards_insert: tuple[str, list[str] | None] | None = None
        self._checkpointer: _Checkpointer | None = None
        self._sqlite_file = self._sqlite_path(self.engine) if self.is_sqlite else None

    @staticmethod
    def _sqlite_path(engine: Engine) -> str | None:
        """Return the database file, or None for an in-memory or URI-named database."""
        database = engine.url.database
        if not database or database == ":memory:" or database.startswith("file:"):
            return None
        return database

    @staticmethod
    def _ensure_sqlite_dir(url: str) -> None:
        path = url.split("///", 1)[-1] if "///" in url else ""
        if path and path != ":memory:" and not path.startswith("file:"):
            Path(path).expanduser().resolve().parent.mkdir(parents=True, exist_ok=True)

    # -- lifecycle ----------------------------------------------------------------

    def migrate(self) -> None:
        """Bring the schema to the newest Alembic revision.

        A schema already at the newest revision (every start but the first after
        an upgrade) is left alone without loading Alembic at all.
        """
        if self.schema_revision() == head_revision():
            return
        from alembic import command
        from alembic.config import Config

        config = Config()
        config.set_main_option("script_location", str(_MIGRATIONS))
        config.set_main_option("sqlalchemy.url", self.url.replace("%", "%%"))
        with self.engine.begin() as conn:
            if not self.is_sqlite:
                # A migration waits for what it must (another replica's migration,
                # the locks of running queries), not the request path's 2 s.
                conn.execute(text("SET LOCAL lock_timeout = 0"))
                conn.execute(text("SET LOCAL statement_timeout = 0"))
                # Replicas started together migrate one at a time: the others
                # wait here, then find the schema current. Per schema, for the
                # lock is database-wide.
                schema = conn.execute(text("SELECT current_schema()")).scalar_one()
                digest = hashlib.blake2b(f"{schema}\x00arbiter-migrate".encode(), digest_size=8)
                key = int.from_bytes(digest.digest(), "big", signed=True)
                conn.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": key})
            config.attributes["connection"] = conn
            command.upgrade(config, "head")

    def schema_revision(self) -> str | None:
        """Return the schema's Alembic revision, or ``None`` before the first migration."""
        with self.engine.connect() as conn:
            if not inspect(conn).has_table("alembic_version"):
                return None
            version = conn.execute(text("SELECT version_num FROM alembic_version")).scalar()
        return None if version is None else str(version)

    def ping(self) -> None:
        """Raise if the database cannot be reached."""
        with self.engine.connect() as conn:
            conn.execute(text("SELECT 1"))

    def probe_write(self) -> None:
        """Raise if a batch could not be logged now (a lock held elsewhere, a full disk).

        Writes what a batch writes, a request and a reward of :data:`PROBE_BYTES`,
        and deletes both in the same transaction, so nothing stays behind and no
        reader ever sees them. The same tables: on PostgreSQL a lock is taken
        per table, and a lock held on the rewards alone must fail the probe too.
        """
        request_id = f"probe{secrets.token_hex(8)}"
        now = time.time()
        with self.writing() as conn:
            conn.execute(
                insert(requests),
                {
                    "id": request_id,
                    "client": "arbiter:write-probe",
                    "idempotency_key": None,
                    "endpoint": "probe",
                    "rubric_sha256": "0" * 64,
                    "n_samples": 1,
                    "envelope": "{}",
                    "created_at": now,
                },
            )
            conn.execute(
                insert(rewards),
                {
                    "request_id": request_id,
                    "position": 0,
                    "sample_id": "probe",
                    "rubric_name": "probe",
                    "rubric_version": 0,
                    "rubric_sha256": "0" * 64,
                    "abstained": True,
                    "record": "x" * PROBE_BYTES,
                    "sample_sha256": "0" * 64,
                    "latency_s": 0.0,
                    "client": "arbiter:write-probe",
                    "created_at": now,
                },
            )
            conn.execute(rewards.delete().where(rewards.c.request_id == request_id))
            conn.execute(requests.delete().where(requests.c.id == request_id))

    def clock(self) -> ColumnElement[float]:
        """Return the database's clock, in seconds since the epoch, as an SQL expression.

        Leases that replicas on different hosts compare (idempotency claims) are
        stamped and checked with this one clock, so no host's skew moves them.
        """
        if self.is_sqlite:
            # julianday('now') is the statement's time, in days, to the millisecond.
            return cast((func.julianday("now") - 2440587.5) * 86400.0, Float)
        # clock_timestamp(), not now(): the time of the statement, not of its transaction.
        return cast(func.date_part("epoch", func.clock_timestamp()), Float)

    def close(self) -> None:
        """Release every pooled connection (and stop the SQLite checkpointer)."""
        if self._checkpointer is not None:
            self._checkpointer.stop()
            self._checkpointer = None
        self.engine.dispose()

    @contextmanager
    def writing(self) -> Iterator[Connection]:
        """Open a write transaction, committed when the block ends.

        On SQLite, writers of this process queue here for the one file lock. On
        PostgreSQL each statement of the transaction is cancelled after
        :data:`WRITE_STATEMENT_TIMEOUT_MS`, and waits at most
        :data:`LOCK_TIMEOUT_MS` for a lock (a session default).
        """
        if self._write_lock is None:
            with self.engine.begin() as conn:
                conn.exec_driver_sql(f"SET LOCAL statement_timeout = {WRITE_STATEMENT_TIMEOUT_MS}")
                yield conn
            return
        with self._write_lock:
            if self._checkpointer is None and self._sqlite_file is not None:
                self._checkpointer = _Checkpointer(self._sqlite_file)
            with self.engine.begin() as conn:
                yield conn
            if self._checkpointer is not None:
                self._checkpointer.poke()

    # -- rewards ------------------------------------------------------------------

    def record_request(
        self,
        *,
        request_id: str,
        client: str,
        idempotency_key: str | None,
        endpoint: str,
        rubric_name: str,
        rubric_version: int,
        rubric_sha256: str,
        envelope: str,
        rows: Sequence[RewardRow],
        created_at: float | None = None,
    ) -> None:
        """Log a request and all its rewards in one transaction.

        Raises:
            DuplicateRequestError: this client already used this idempotency key.
        """
        now = created_at if created_at is not None else time.time()
        try:
            with self.writing() as conn:
                conn.execute(
                    insert(requests),
                    {
                        "id": request_id,
                        "client": client,
                        "idempotency_key": idempotency_key,
                        "endpoint": endpoint,
                        "rubric_sha256": rubric_sha256,
                        "n_samples": len(rows),
                        "envelope": envelope,
                        "created_at": now,
                    },
                )
                if rows:
                    values = [
                        (
                            request_id,
                            row.position,
                            row.sample_id,
                            row.group_id,
                            rubric_name,
                            rubric_version,
                            rubric_sha256,
                            row.reward,
                            row.raw_reward,
                            row.reward is None,
                            row.record,
                            row.sample,
                            row.sample_sha256,
                            row.latency_s,
                            client,
                            now,
                        )
                        for row in rows
                    ]
                    self._insert_rewards(conn, values)
                if idempotency_key is not None and not self.is_sqlite:
                    # The claim made before grading (replicas on one store) goes
                    # with the commit of its response, never before or after it.
                    conn.execute(
                        idempotency_claims.delete().where(
                            idempotency_claims.c.client == client,
                            idempotency_claims.c.idempotency_key == idempotency_key,
                        )
                    )
        except IntegrityError as e:
            if idempotency_key is not None and self._reused_key(e, client, idempotency_key):
                raise DuplicateRequestError(idempotency_key) from e
            raise

    def _reused_key(self, error: IntegrityError, client: str, idempotency_key: str) -> bool:
        """Whether ``error`` is the (client, idempotency key) constraint, by name where we can.

        PostgreSQL names the violated constraint (psycopg's ``diag.constraint_name``).
        SQLite names only the kind of violation (``sqlite_errorname`` is
        ``SQLITE_CONSTRAINT_UNIQUE`` or ``SQLITE_CONSTRAINT_PRIMARYKEY``, Python's
        documented extended error codes) and the columns in its message text;
        there a unique violation is the key's when the stored request is there.
        """
        diag = getattr(error.orig, "diag", None)
        name = getattr(diag, "constraint_name", None)
        if name is not None:
            return bool(name == IDEMPOTENCY_CONSTRAINT)
        if getattr(error.orig, "sqlite_errorname", None) == "SQLITE_CONSTRAINT_UNIQUE":
            return self.find_request(client, idempotency_key) is not None
        return False

    def _insert_rewards(self, conn: Connection, values: list[tuple[Any, ...]]) -> None:
        # The statement is compiled once per dialect and run with the driver:
        # SQLAlchemy's per-row parameter processing cost more than the insert
        # itself at 256 rows a request. Every column here is a plain
        # str/int/float/bool, which the drivers bind as they are.
        if self._rewards_insert is None:
            compiled = insert(rewards).compile(
                dialect=self.engine.dialect, column_keys=list(REWARD_COLUMNS)
            )
            order = list(compiled.positiontup or ()) if compiled.positional else None
            self._rewards_insert = (str(compiled), order)
        sql, order = self._rewards_insert
        if order is None:  # named parameters (psycopg): one dict per row
            conn.exec_driver_sql(sql, [dict(zip(REWARD_COLUMNS, v, strict=True)) for v in values])
            return
        if order != list(REWARD_COLUMNS):
            index = [REWARD_COLUMNS.index(k) for k in order]
            values = [tuple(v[i] for i in index) for v in values]
        if not self.is_sqlite:
            conn.exec_driver_sql(sql, values)
            return
        # SQLite: many rows per statement, stepped once, instead of executemany's
        # bind-and-step per row. It also holds the GIL only to bind: the driver
        # releases it while it steps. SQLAlchemy's own ways are slower here:
        # ``conn.execute(insert(rewards), rows)`` is executemany, and
        # ``insert(rewards).values(rows)`` is compiled anew for every request.
        head, _, row = sql.partition(" VALUES ")
        for start in range(0, len(values), _ROWS_PER_INSERT):
            chunk = values[start : start + _ROWS_PER_INSERT]
            many = f"{head} VALUES {', '.join([row] * len(chunk))}"
            conn.exec_driver_sql(many, tuple(v for r in chunk for v in r))

    def find_request(self, client: str, idempotency_key: str) -> StoredRequest | None:
        """Return the stored request for (client, key), with its rewards in order."""
        with self.engine.connect() as conn:
            row = conn.execute(
                select(requests.c.id, requests.c.envelope, requests.c.created_at).where(
                    requests.c.client == client, requests.c.idempotency_key == idempotency_key
                )
            ).first()
            if row is None:
                return None
            records = conn.execute(
                select(rewards.c.record)
                .where(rewards.c.request_id == row.id)
                .order_by(rewards.c.position)
            ).scalars()
            return StoredRequest(
                id=row.id, envelope=row.envelope, records=list(records), created_at=row.created_at
            )

    def count_rewards(self) -> int:
        """Return how many rewards are logged."""
        with self.engine.connect() as conn:
            return int(conn.execute(select(func.count()).select_from(rewards)).scalar_one())

    def reward_records(
        self,
        *,
        rubric_sha256: str | None = None,
        rubric_name: str | None = None,
        since: float | None = None,
        until: float | None = None,
        sample_ids: Sequence[str] | None = None,
        limit: int | None = None,
    ) -> list[dict[str, Any]]:
        """Return logged rewards (oldest first) with their sample, for replays and audits."""
        query = select(
            rewards.c.id,
            rewards.c.request_id,
            rewards.c.position,
            rewards.c.sample_id,
            rewards.c.rubric_name,
            rewards.c.rubric_version,
            rewards.c.rubric_sha256,
            rewards.c.record,
            rewards.c.sample,
            rewards.c.client,
            rewards.c.created_at,
        ).order_by(rewards.c.id)
        query = query.where(
            *reward_filters(
                rubric_sha256=rubric_sha256, rubric_name=rubric_name, since=since, until=until
            )
        )
        if sample_ids is not None:
            query = query.where(rewards.c.sample_id.in_(list(sample_ids)))
        if limit is not None:
            query = query.limit(limit)
        with self.engine.connect() as conn:
            return [dict(row._mapping) for row in conn.execute(query)]

    # -- API keys -----------------------------------------------------------------

    def create_key(self, name: str, role: str) -> tuple[ApiKey, str]:
        """Create an API key; return its record and the key, which is shown only now."""
        if role not in ROLES:
            raise ValueError(f"unknown role {role!r}; expected one of {', '.join(ROLES)}")
        key_id = secrets.token_hex(6)
        key = f"{KEY_PREFIX}_{key_id}_{secrets.token_urlsafe(32)}"
        now = time.time()
        with self.writing() as conn:
            conn.execute(
                insert(api_keys),
                {
                    "id": key_id,
                    "name": name,
                    "role": role,
                    "key_hash": hash_key(key),
                    "created_at": now,
                },
            )
        return ApiKey(id=key_id, name=name, role=role, created_at=now, revoked_at=None), key

    def key_for(self, key: str) -> ApiKey | None:
        """Return the live key record matching ``key``, or ``None``."""
        with self.engine.connect() as conn:
            row = conn.execute(
                select(api_keys).where(
                    api_keys.c.key_hash == hash_key(key), api_keys.c.revoked_at.is_(None)
                )
            ).first()
        if row is None:
            return None
        return ApiKey(row.id, row.name, row.role, row.created_at, row.revoked_at)

    def list_keys(self) -> list[ApiKey]:
        """Return every key record (revoked ones too)."""
        with self.engine.connect() as conn:
            rows = conn.execute(select(api_keys).order_by(api_keys.c.created_at)).all()
        return [ApiKey(r.id, r.name, r.role, r.created_at, r.revoked_at) for r in rows]

    def revoke_key(self, key_id: str) -> bool:
        """Revoke a key by id; return whether a live key was revoked.

        Raises:
            LastAdminKeyError: it is the last live admin key (nobody could
                manage keys over the API any more).
        """
        with self.writing() as conn:
            live_admins = conn.execute(
                select(api_keys.c.id).where(
                    api_keys.c.role == "admin", api_keys.c.revoked_at.is_(None)
                )
            ).all()
            if [row.id for row in live_admins] == [key_id]:
                raise LastAdminKeyError(f"{key_id} is the last live admin key")
            result = conn.execute(
                update(api_keys)
                .where(api_keys.c.id == key_id, api_keys.c.revoked_at.is_(None))
                .values(revoked_at=time.time())
            )
        return bool(result.rowcount)

    # -- rubric versions ----------------------------------------------------------

    def save_rubric(self, *, sha256: str, name: str, version: int, text_: str, origin: str) -> bool:
        """Keep a rubric version's text; return whether it was new."""
        with self.engine.connect() as conn:
            exists = conn.execute(
                select(rubric_versions.c.sha256).where(rubric_versions.c.sha256 == sha256)
            ).first()
        if exists is not None:
            return False
        try:
            with self.writing() as conn:
                conn.execute(
                    insert(rubric_versions),
                    {
                        "sha256": sha256,
                        "name": name,
                        "version": version,
                        "text": text_,
                        "origin": origin,
                        "created_at": time.time(),
                    },
                )
        except IntegrityError:
            return False  # another replica saved it first
        return True

    def rubric_texts(self) -> list[tuple[str, str]]:
        """Return (text, origin) of every stored rubric version, oldest first."""
        with self.engine.connect() as conn:
            rows = conn.execute(
                select(rubric_versions.c.text, rubric_versions.c.origin).order_by(
                    rubric_versions.c.created_at
                )
            ).all()
        return [(r.text, r.origin) for r in rows]

    # -- drift --------------------------------------------------------------------
