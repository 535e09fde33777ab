"""A live ``arbiter serve`` with authentication on, for the trainers' own code paths."""

from __future__ import annotations

import json
import os
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import PreTrainedTokenizerFast

from store.db import Store
from tests.api.conftest import REPO, Server

DEMO = REPO / "eval_sets" / "codegen-demo.jsonl"


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


@pytest.fixture(scope="session")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """Start one server for the session: the rubric library, keys required."""
    root = tmp_path_factory.mktemp("trainers")
    rubric_dir = root / "rubrics"
    rubric_dir.mkdir()
    db_url = f"sqlite:///{root / 'arbiter.db'}"
    store = Store(db_url)
    store.migrate()
    keys = {"trainer": store.create_key("trainers-test", "trainer")[1]}
    store.close()
    server = Server.launch(
        root,
        db_url,
        keys,
        {
            "ARBITER_AUTH": "required",
            "ARBITER_OPENRLHF_RUBRIC": "python-codegen",
            "ARBITER_ABSTAIN": "",  # the server's default, whatever this shell says
        },
    )
    yield server
    server.kill(signal.SIGTERM)


@pytest.fixture
def adapter_env(live: Server, monkeypatch: pytest.MonkeyPatch) -> Server:
    """Point the adapters' environment at the live server."""
    monkeypatch.setenv("ARBITER_URL", live.url)
    monkeypatch.setenv("ARBITER_API_KEY", live.keys["trainer"])
    monkeypatch.setenv("ARBITER_RUBRIC", "python-codegen")
    monkeypatch.setenv("ARBITER_ABSTAIN", "zero")
    return live


def score_with_cli(rows: list[dict[str, Any]], tmp: Path) -> list[dict[str, Any]]:
    """Score rows with ``arbiter score`` (the CLI, in a subprocess) under python-codegen."""
    import subprocess
    import sys

    tmp.mkdir(parents=True, exist_ok=True)
    source = tmp / "samples.jsonl"
    source.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp / "rewards.jsonl"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "arbiter",
            "score",
            "--rubric",
            str(REPO / "rubrics" / "library" / "python-codegen.yaml"),
            str(source),
            "-o",
            str(out),
        ],
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        check=True,
        capture_output=True,
        timeout=300,
    )
    return [json.loads(line) for line in out.read_text().splitlines()]
