"""A real Arbiter server (uvicorn in a subprocess on 127.0.0.1) for the API tests."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest

from arbiter.store.db import Store
from bench.serve import wait_ready

REPO = Path(__file__).resolve().parents[2]

SLOW_RUBRIC = """\
name: slow
version: 1
components:
  fast: {grader: efficiency, weight: 0.5, config: {max_turns: 10}}
  nap: {grader: sleepy, weight: 0.5, config: {delay_s: 1.5}}
on_missing: renormalize
"""

GRPO_RUBRIC = """\
name: grpo
version: 1
components:
  eff: {grader: efficiency, config: {max_turns: 10}}
normalize: group_z
penalties: [{violation: early_exit, penalty: 0.5}]
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Server:
    url: str
    db_url: str
    rubric_dir: Path
    keys: dict[str, str]
    env: dict[str, str]
    log: Path
    process: subprocess.Popen[bytes] | None = None
    extra: dict[str, str] = field(default_factory=dict)

    @classmethod
    def launch(
        cls, root: Path, db_url: str, keys: dict[str, str], settings: dict[str, str]
    ) -> Server:
        """Start ``arbiter serve`` on a free port over ``root / "rubrics"``, with ``settings``.

        ``settings`` are environment variables on top of this process's own; one
        set to ``""`` is removed.
        """
        port = free_port()
        env = {
            **os.environ,
            "PYTHONPATH": str(REPO),
            "ARBITER_DATABASE_URL": db_url,
            "ARBITER_PORT": str(port),
            "ARBITER_RUBRIC_DIRS": str(root / "rubrics"),
        }
        for name, value in settings.items():
            if value:
                env[name] = value
            else:
                env.pop(name, None)
        server = cls(
            url=f"http://127.0.0.1:{port}",
            db_url=db_url,
            rubric_dir=root / "rubrics",
            keys=keys,
            env=env,
            log=root / "server.log",
        )
        server.start()
        return server

    def start(self) -> None:
        with self.log.open("ab") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "arbiter", "serve", "--graceful-s", "2"],
                env=self.env,
                cwd=REPO,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        # Start-up takes seconds, and far longer on a loaded machine.
        try:
            wait_ready(self.url, self.process, 180)
        except RuntimeError as e:
            self.kill()  # not left running behind a failed test
            raise RuntimeError(f"{e}: {self.log.read_text()[-3000:]}") from None

    def kill(self, sig: int = signal.SIGKILL) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(sig)
            self.process.wait(timeout=30)

    def client(self, role: str = "trainer", **kwargs: object) -> httpx.Client:
        headers = {"Authorization": f"Bearer {self.keys[role]}"} if role else {}
        return httpx.Client(base_url=self.url, headers=headers, timeout=60, **kwargs)  # type: ignore[arg-type]


StartServer = Callable[..., Server]


@pytest.fixture(scope="module")
def start_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StartServer]:
    servers: list[Server] = []

    def start(
        database_url: str | None = None, rubrics: dict[str, str] | None = None, **settings: str
    ) -> Server:
        """Start a server; ``rubrics`` (name: YAML) are in its folder from the start."""
        root = tmp_path_factory.mktemp("server")
        rubric_dir = root / "rubrics"
        rubric_dir.mkdir()
        (rubric_dir / "slow.yaml").write_text(SLOW_RUBRIC)
        (rubric_dir / "grpo.yaml").write_text(GRPO_RUBRIC)
        for name, text in (rubrics or {}).items():
            (rubric_dir / f"{name}.yaml").write_text(text)
        db_url = database_url or f"sqlite:///{root / 'arbiter.db'}"
        store = Store(db_url)
        store.migrate()
        keys = {
            role: store.create_key(f"test-{role}", role)[1]
            for role in ("trainer", "reviewer", "admin")
        }
        keys["trainer2"] = store.create_key("test-trainer-2", "trainer")[1]
        store.close()
        server = Server.launch(
            root,
            db_url,
            keys,
            {
                "ARBITER_GRADER_PLUGINS": "tests.api.plugin_graders",
                "ARBITER_RUBRIC_RELOAD_INTERVAL_S": "0.2",
                "ARBITER_OPENRLHF_RUBRIC": "efficiency-only",
                **{f"ARBITER_{k.upper()}": v for k, v in settings.items()},
            },
        )
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.kill(signal.SIGTERM)


@pytest.fixture(scope="module")
def server(start_server: StartServer) -> Server:
    return start_server()
