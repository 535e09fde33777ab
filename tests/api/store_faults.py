"""Real faults of a PostgreSQL store for the crash-safety tests: no mock of the database.

* :class:`CuttingProxy`, a TCP relay between a replica and PostgreSQL that can
  drop a connection at the worst moment, after PostgreSQL committed a batch and
  before the replica hears so (an ambiguous commit), then refuse connections
  for a while, as a store that went away does;
* :class:`PrivatePostgres`, a PostgreSQL server of the test's own in a
  temporary directory, which a test may stop and start (the machine's shared
  one must not be restarted);
* :func:`held_lock`, another session holding a lock on a table.
"""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy import create_engine, make_url, text

from tests.strictness import unavailable

#: What psycopg sends to commit (a simple Query message) and what PostgreSQL
#: answers when it has (CommandComplete).
COMMIT_QUERY = b"Q\x00\x00\x00\x0bCOMMIT\x00"
COMMIT_DONE = b"C\x00\x00\x00\x0bCOMMIT\x00"
#: The statement that starts logging a batch (a Parse message carries it).
LOG_BATCH = b"INSERT INTO requests "


def proxied_url(url: str, port: int) -> str:
    """Return ``url`` pointed at a relay on ``port``, in plain text the relay can read."""
    parsed = make_url(url).set(host="127.0.0.1", port=port)
    parsed = parsed.update_query_dict({"sslmode": "disable", "gssencmode": "disable"})
    return parsed.render_as_string(hide_password=False)


class CuttingProxy:
    """A TCP relay to PostgreSQL that can drop the connection that commits a batch.

    Armed, it watches each connection for the statement that logs a batch
    (``INSERT INTO requests``); at that transaction's ``COMMIT`` it forwards the
    commit, waits for PostgreSQL's answer that it committed, drops that answer
    and closes both sides. Then, for ``outage_s``, it closes every new
    connection at once: the store is gone, so the claim's release fails too.
    """

    def __init__(self, upstream_host: str, upstream_port: int) -> None:
        self.upstream = (upstream_host, upstream_port)
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = int(self.listener.getsockname()[1])
        self.cuts = 0
        self._armed_outage_s: float | None = None
        self._refuse_until = 0.0
        self._lock = threading.Lock()
        self._closed = False
        threading.Thread(target=self._accept, daemon=True).start()

    def arm(self, outage_s: float) -> None:
        """Drop the next connection that commits a batch, then refuse connections for a while."""
        with self._lock:
            self._armed_outage_s = outage_s

    def close(self) -> None:
        self._closed = True
        self.listener.close()

    def _accept(self) -> None:
        while not self._closed:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            if time.monotonic() < self._refuse_until:
                client.close()
                continue
            try:
                server = socket.create_connection(self.upstream)
            except OSError:
                client.close()
                continue
            _Relay(self, client, server).start()

    def _take_arming(self) -> float | None:
        with self._lock:
            outage, self._armed_outage_s = self._armed_outage_s, None
            return outage

    def _cut(self, outage_s: float) -> None:
        with self._lock:
            self.cuts += 1
            self._refuse_until = time.monotonic() + outage_s


class _Relay:
    """One relayed connection: a pump each way."""

    def __init__(self, proxy: CuttingProxy, client: socket.socket, server: socket.socket) -> None:
        self.proxy = proxy
        self.client = client
        self.server = server
        self.logging_batch = False  # this transaction inserted a request
        self.cutting: float | None = None  # the outage to start once PostgreSQL has committed

    def start(self) -> None:
        threading.Thread(target=self._upstream, daemon=True).start()
        threading.Thread(target=self._downstream, daemon=True).start()

    def _close(self) -> None:
        for end in (self.client, self.server):
            with contextlib.suppress(OSError):
                end.shutdown(socket.SHUT_RDWR)
            end.close()

    def _upstream(self) -> None:
        tail = b""
        try:
            while chunk := self.client.recv(65536):
                seen = tail + chunk
                after = seen
                if LOG_BATCH in seen:
                    self.logging_batch = True
                    after = seen[seen.rfind(LOG_BATCH) :]
                if self.logging_batch and COMMIT_QUERY in after:
                    self.logging_batch = False
                    outage = self.proxy._take_arming()
                    if outage is not None:
                        self.cutting = outage
                self.server.sendall(chunk)
                tail = seen[-64:]
        except OSError:
            pass
        self._close()

    def _downstream(self) -> None:
        answer = b""
        try:
            while chunk := self.server.recv(65536):
                if self.cutting is None:
                    self.client.sendall(chunk)
                    continue
                answer += chunk
                if COMMIT_DONE in answer:
                    # Committed in PostgreSQL; the replica never hears it.
                    self.proxy._cut(self.cutting)
                    break
        except OSError:
            pass
        self._close()


@dataclass
class PrivatePostgres:
    """A PostgreSQL server of the test's own (``fsync`` off: its data is thrown away)."""

    bin_dir: Path
    data: Path
    port: int
    user: str | None  # run as this user (PostgreSQL refuses to run as root)

    @property
    def url(self) -> str:
        return f"postgresql+psycopg://postgres@127.0.0.1:{self.port}/postgres"

    def _run(self, *args: str, timeout_s: float = 120) -> None:
        command = [str(self.bin_dir / args[0]), *args[1:]]
        if self.user is not None:
            command = ["runuser", "-u", self.user, "--", *command]
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout_s)
        if done.returncode != 0:
            raise RuntimeError(f"{' '.join(command)} failed: {done.stdout}{done.stderr}")

    def start(self) -> None:
        options = (
            f"-p {self.port} -c listen_addresses=127.0.0.1 -k {self.data} "
            "-c fsync=off -c synchronous_commit=off -c full_page_writes=off"
        )
        self._run(
            "pg_ctl", "-D", str(self.data / "db"), "-l", str(self.data / "log"), "-w",
            "-o", options, "start",
        )  # fmt: skip

    def stop(self, mode: str = "fast") -> None:
        """Stop the server (``fast``: every session is ended, as by a restart)."""
        self._run("pg_ctl", "-D", str(self.data / "db"), "-m", mode, "-w", "stop")


def _bin_dir() -> Path | None:
    found = shutil.which("pg_ctl")
    if found is not None:
        return Path(found).resolve().parent
    candidates = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"))
    return Path(candidates[-1]).parent if candidates else None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def private_postgres() -> Iterator[PrivatePostgres]:
    """Start a throwaway PostgreSQL server on a free port; stop and remove it afterwards."""
    bin_dir = _bin_dir()
    if bin_dir is None or not (bin_dir / "initdb").exists():
        unavailable("PostgreSQL's server programs (initdb, pg_ctl) are not installed")
    user = None
    if os.geteuid() == 0:
        try:
            pwd.getpwnam("postgres")
        except KeyError:
            unavailable("PostgreSQL cannot run as root, and there is no 'postgres' user")
        user = "postgres"
    data = Path(tempfile.mkdtemp(prefix="arbiter-pg-"))
    if user is not None:
        entry = pwd.getpwnam(user)
        os.chown(data, entry.pw_uid, entry.pw_gid)
    server = PrivatePostgres(bin_dir, data, _free_port(), user)
    try:
        server._run(
            "initdb", "-D", str(data / "db"), "-U", "postgres", "--auth=trust", "--no-sync",
            "-E", "UTF8",
        )  # fmt: skip
        server.start()
        yield server
    finally:
        with contextlib.suppress(Exception):
            server.stop("immediate")
        shutil.rmtree(data, ignore_errors=True)


@contextlib.contextmanager
def held_lock(url: str, table: str, mode: str = "ACCESS EXCLUSIVE") -> Iterator[None]:
    """Hold a lock on ``table`` from another session for the block's duration."""
    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            conn.execute(text(f"LOCK TABLE {table} IN {mode} MODE"))
            yield
            conn.rollback()
    finally:
        engine.dispose()
