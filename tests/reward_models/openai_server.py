"""A real OpenAI-compatible server on loopback: ``transformers serve`` over a tiny local model.

Also the recorder of ``recordings/transformers_serve_chat.json``: run
``python -m tests.reward_models.openai_server recordings/transformers_serve_chat.json``
from the repository root to record the server's answer to the judge's request
again (after a transformers upgrade, say).
"""

from __future__ import annotations

import contextlib
import json
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import transformers

from tests.reward_models.tiny import build_causal_lm, build_tokenizer

#: Starting the server loads torch and the model: generous, but bounded.
START_TIMEOUT_S = 180.0

#: What the judge sends (reward_models.judge.OpenAIChatBackend), minus the model name.
JUDGE_MESSAGES = [
    {"role": "system", "content": "You are a fair judge."},
    {"role": "user", "content": "<<<RESPONSE>>>It is 42.<<<END RESPONSE>>> Grade it 1-5."},
]


def save_tiny_lm(directory: Path) -> Path:
    """Save the seeded tiny Llama and the character tokenizer (with its chat template)."""
    build_causal_lm().save_pretrained(directory)
    build_tokenizer().save_pretrained(directory)
    return directory


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def transformers_serve(model_dir: Path, log: Path) -> Iterator[str]:
    """Run ``transformers serve`` on the model; yield its base URL; stop it afterwards."""
    port = _free_port()
    cli = Path(sys.executable).with_name("transformers")
    with log.open("wb") as out:
        process = subprocess.Popen(
            [str(cli), "serve", str(model_dir), "--host", "127.0.0.1", "--port", str(port)],
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            if process.poll() is not None:
                raise RuntimeError(f"transformers serve exited: {log.read_text()[-2000:]}")
            with contextlib.suppress(httpx.TransportError):
                if httpx.get(f"{url}/health", timeout=2).status_code == 200:
                    break
            if time.monotonic() > deadline:
                raise RuntimeError(f"transformers serve not up: {log.read_text()[-2000:]}")
            time.sleep(0.2)  # polling a starting process; nothing to wait on instead
        yield url
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def judge_request(model: str) -> dict[str, Any]:
    """The body the judge backend sends with default sampling and 16 tokens."""
    return {
        "model": model,
        "messages": JUDGE_MESSAGES,
        "temperature": 0.0,
        "max_tokens": 16,
        "logprobs": True,
        "top_logprobs": 20,
    }


def record(path: Path) -> None:
    """Record the server's raw answer to the judge's request, with where it came from."""
    with tempfile.TemporaryDirectory() as tmp:
        model_dir = save_tiny_lm(Path(tmp) / "tiny-llama")
        with transformers_serve(model_dir, Path(tmp) / "serve.log") as url:
            request = judge_request(str(model_dir))
            response = httpx.post(f"{url}/v1/chat/completions", json=request, timeout=120)
    recording = {
        "source": (
            f"transformers serve (transformers {transformers.__version__}, CPU) on 127.0.0.1, "
            "serving the seeded tiny Llama of tests/reward_models/tiny.py; recorded by "
            "python -m tests.reward_models.openai_server"
        ),
        "request": {**request, "model": "<local tiny-llama directory>"},
        "status": response.status_code,
        "response": response.json(),
    }
    path.write_text(json.dumps(recording, indent=2) + "\n")


if __name__ == "__main__":
    record(Path(sys.argv[1]))
