"""A live ``arbiter serve`` for the HTTP benchmarks: started on a free port, ready, then stopped."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_ready(url: str, server: subprocess.Popen[bytes], timeout_s: float) -> None:
    """Wait until ``url``'s ``/readyz`` answers 200; raise RuntimeError if it exits or times out."""
    import httpx

    deadline = time.monotonic() + timeout_s
    while True:
        if server.poll() is not None:
            raise RuntimeError(f"arbiter serve exited with {server.returncode} before ready")
        try:
            if httpx.get(f"{url}/readyz", timeout=1).status_code == 200:
                return
        except httpx.TransportError:
            pass
        if time.monotonic() > deadline:
            raise RuntimeError(f"arbiter serve was not ready within {timeout_s:g} s")
        time.sleep(0.1)


@contextlib.contextmanager
def arbiter_serve(db_url: str, *args: str) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """Run ``arbiter serve [args]`` on ``db_url`` until the block ends; yield its URL and process.

    Logs at WARNING and with rubric reloading off, so that the server's own
    chatter is not part of what is measured.
    """
    port = free_port()
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO),
        "ARBITER_DATABASE_URL": db_url,
        "ARBITER_PORT": str(port),
        "ARBITER_LOG_LEVEL": "WARNING",
        "ARBITER_RUBRIC_RELOAD_INTERVAL_S": "0",
    }
    url = f"http://127.0.0.1:{port}"
    server = subprocess.Popen(
        [sys.executable, "-m", "arbiter", "serve", *args],
        env=env,
        cwd=REPO,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        # A session of its own, as a service in its own container: where the kernel
        # groups sessions (sched_autogroup), its share is not the benchmark client's.
        start_new_session=True,
    )
    try:
        wait_ready(url, server, 60)
        yield url, server
    finally:
        server.terminate()
        server.wait(timeout=30)


#: A rubric of the tests alone (``timeout_s: 10``), under ``name``.
TESTS_ONLY = """name: {name}
version: 1
components:
  tests:
    grader: unit_tests
    weight: 1.0
    config: {{timeout_s: 10}}
"""


@contextlib.contextmanager
def trainer_server(rubrics: dict[str, str]) -> Iterator[tuple[str, str, str]]:
    """A fresh store with a trainer key and ``rubrics`` (name: YAML) in a folder of its own.

    Yields the server's URL, the trainer key and the store's URL (for ``arbiter replay``).
    """
    import tempfile

    from arbiter.store.db import Store

    with tempfile.TemporaryDirectory() as root:
        folder = Path(root) / "rubrics"
        folder.mkdir()
        for name, text in rubrics.items():
            (folder / f"{name}.yaml").write_text(text)
        db = f"sqlite:///{root}/arbiter.db"
        store = Store(db)
        store.migrate()
        _, key = store.create_key("bench-trainer", "trainer")
        store.close()
        before = os.environ.get("ARBITER_RUBRIC_DIRS")
        os.environ["ARBITER_RUBRIC_DIRS"] = str(folder)
        try:
            with arbiter_serve(db) as (url, _):
                yield url, key, db
        finally:
            if before is None:
                os.environ.pop("ARBITER_RUBRIC_DIRS", None)
            else:
                os.environ["ARBITER_RUBRIC_DIRS"] = before
