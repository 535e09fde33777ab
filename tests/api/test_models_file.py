"""``ARBITER_MODELS``: reward models and judges declared in a models file, served (issue 25).

Real servers on loopback (``arbiter serve`` in a subprocess, as a deployment
runs it) and, for the judge, a real OpenAI-compatible server: ``transformers
serve`` over a tiny causal LM built here whose greedy answer is always
``[RESULT] 3`` (see ``tests/reward_models/declared.py``). The same models file
drives ``arbiter score``, and both give the same rewards.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from typer.testing import CliRunner

from arbiter.cli import app
from tests.api.conftest import StartServer
from tests.reward_models.declared import CHAT_SAMPLES, save_rm, save_verdict_lm, write_jsonl
from tests.reward_models.openai_server import transformers_serve

REPO = Path(__file__).resolve().parents[2]
CHAT_RM = REPO / "rubrics" / "library" / "chat-reward-model.yaml"
CHAT_JUDGE = REPO / "rubrics" / "library" / "chat-judge.yaml"
KEY_VARIABLE = "ARBITER_TEST_JUDGE_KEY"
KEY = "sk-test-never-logged-7f3a"
runner = CliRunner()
pytestmark = pytest.mark.slow(seconds=80)


def cli_rewards(rubric: Path, models: Path, samples: Path, out: Path) -> list[dict[str, Any]]:
    result = runner.invoke(
        app,
        ["score", "--rubric", str(rubric), "--models", str(models), str(samples), "-o", str(out)],
    )
    assert result.exit_code == 0, result.output
    return [json.loads(line) for line in out.read_text().splitlines()]


def http_rewards(
    url: str, key: str, rubric: str, samples: list[dict[str, Any]] = CHAT_SAMPLES
) -> list[dict[str, Any]]:
    response = httpx.post(
        f"{url}/v1/rewards",
        json={"rubric": rubric, "samples": samples},
        headers={"Authorization": f"Bearer {key}"},
        timeout=120,
    )
    assert response.status_code == 200, response.text
    return list(response.json()["rewards"])


@pytest.fixture(scope="module")
def rm_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("rm-models")
    save_rm(root / "rm")
    (root / "models.yaml").write_text(
        "reward_models:\n"
        "  default: {backend: transformers, path: rm, device: cpu, dtype: float32}\n"
    )
    (root / "broken.yaml").write_text(
        "reward_models:\n  default: {backend: transformers, path: not-there}\n"
    )
    write_jsonl(root / "chat.jsonl", CHAT_SAMPLES)
    return root


def test_the_server_gives_the_rewards_the_cli_gives(
    rm_root: Path, start_server: StartServer
) -> None:
    offline = cli_rewards(CHAT_RM, rm_root / "models.yaml", rm_root / "chat.jsonl", rm_root / "o")
    server = start_server(models=str(rm_root / "models.yaml"))
    served = http_rewards(server.url, server.keys["trainer"], "chat-reward-model")
    assert [r["id"] for r in served] == [r["id"] for r in offline]
    for a, b in zip(offline, served, strict=True):
        assert a["components"]["reward"]["failure"] is None
        # Batches differ (the CLI grades in pieces): scores agree to float32's batching noise.
        assert b["reward"] == pytest.approx(a["reward"], abs=1e-5)
        assert b["components"]["reward"]["details"]["raw"] == pytest.approx(
            a["components"]["reward"]["details"]["raw"], abs=1e-5
        )
    assert len({round(r["reward"], 4) for r in served}) > 2

    ready = httpx.get(f"{server.url}/readyz", timeout=30).json()
    assert ready["checks"]["model:reward_model:default"] == "ok"
    metrics = httpx.get(f"{server.url}/metrics", timeout=30).text
    labels = 'kind="reward_model",model="default"'
    assert f"arbiter_model_requests_total{{{labels}}} 5.0" in metrics
    assert f'arbiter_model_tokens_total{{direction="in",{labels}}}' in metrics
    assert f"arbiter_model_batch_fill_ratio_count{{{labels}}}" in metrics
    assert f"arbiter_model_request_duration_seconds_count{{{labels}}} 5.0" in metrics


def test_a_model_that_cannot_load_is_unavailable_and_abstains(
    rm_root: Path, start_server: StartServer
) -> None:
    server = start_server(models=str(rm_root / "broken.yaml"))
    ready = httpx.get(f"{server.url}/readyz", timeout=30).json()
    state = ready["checks"]["model:reward_model:default"]
    assert state.startswith("unavailable: reward model 'default' could not be loaded")
    assert "not-there" in state
    for reward in http_rewards(server.url, server.keys["trainer"], "chat-reward-model"):
        assert reward["reward"] is None  # abstains, never 0
        assert reward["components"]["reward"]["failure"]["kind"] == "judge_error"


@pytest.fixture(scope="module")
def judge(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    root = tmp_path_factory.mktemp("judge-models")
    model_dir = save_verdict_lm(root / "verdict-lm", level=3)
    write_jsonl(root / "chat.jsonl", CHAT_SAMPLES)
    os.environ[KEY_VARIABLE] = KEY  # the server subprocess inherits it
    with contextlib.ExitStack() as serving:
        url = serving.enter_context(transformers_serve(model_dir, root / "serve.log"))
        models = root / "judges.yaml"
        models.write_text(
            "judges:\n  default:\n    backend: openai\n"
            f"    base_url: {url}/v1\n    model: {model_dir}\n"
            f"    api_key_env: {KEY_VARIABLE}\n    max_tokens: 8\n"
            "    retries: 1\n    backoff_s: 0.05\n"
        )
        try:
            # "stop" ends the judge's server: what a judge that goes down looks like.
            yield {"root": root, "models": models, "stop": serving.close, "servers": []}
        finally:
            os.environ.pop(KEY_VARIABLE, None)


def judged(rewards: list[dict[str, Any]]) -> None:
    for reward in rewards:
        component = reward["components"]["judge"]
        assert component["failure"] is None, component["failure"]
        # The judge wrote "[RESULT] 3" on every criterion: level 3 is worth 0.5.
        assert reward["reward"] == pytest.approx(0.5)
        assert {c["levels"][0] for c in component["details"]["criteria"].values()} == {3}
        # Its tokens are logged beside the reward.
        assert component["details"]["tokens"]["prompt"] > 0
        assert component["details"]["tokens"]["completion"] == 3 * 8


def test_chat_judge_against_transformers_serve_from_cli_and_server(
    judge: dict[str, Any], start_server: StartServer
) -> None:
    root = judge["root"]
    offline = cli_rewards(CHAT_JUDGE, judge["models"], root / "chat.jsonl", root / "cli.jsonl")
    judged(offline)
    server = start_server(models=str(judge["models"]))
    judge["servers"].append(server)
    served = http_rewards(server.url, server.keys["trainer"], "chat-judge")
    judged(served)
    assert [r["reward"] for r in served] == [r["reward"] for r in offline]
    ready = httpx.get(f"{server.url}/readyz", timeout=30).json()
    assert ready["checks"]["model:judge:default"] == "ok"
    metrics = httpx.get(f"{server.url}/metrics", timeout=30).text
    # 5 samples x 3 criteria x 8 tokens (the models file's ceiling on the rubric's 512).
    assert 'arbiter_model_tokens_total{direction="out",kind="judge",model="default"} 120.0' in (
        metrics
    )
    # The key went to the judge and nowhere else: not the log, not a reward.
    assert KEY not in server.log.read_text()
    assert KEY not in (root / "cli.jsonl").read_text()


def test_with_the_judge_stopped_components_fail_typed_and_abstain(
    judge: dict[str, Any], start_server: StartServer
) -> None:
    server = judge["servers"][0] if judge["servers"] else start_server(models=str(judge["models"]))
    judge["stop"]()
    root = judge["root"]
    result = runner.invoke(
        app,
        [
            "score",
            "--rubric",
            str(CHAT_JUDGE),
            "--models",
            str(judge["models"]),
            str(root / "chat.jsonl"),
            "-o",
            str(root / "stopped.jsonl"),
            "--strict",
        ],
    )
    assert result.exit_code == 1
    assert "component 'judge' failed for every sample (5 of 5)" in result.output
    offline = [json.loads(x) for x in (root / "stopped.jsonl").read_text().splitlines()]
    # New responses: the judge's answers to the earlier ones are rightly cached.
    fresh = [{**s, "id": f"new-{s['id']}", "response": f"{s['response']}!"} for s in CHAT_SAMPLES]
    served = http_rewards(server.url, server.keys["trainer"], "chat-judge", fresh)
    for reward in offline + served:
        assert reward["reward"] is None  # abstains, never 0
        assert reward["abstain_reason"] == "infrastructure failure: judge (judge_error)"
        failure = reward["components"]["judge"]["failure"]
        assert failure["kind"] == "judge_error" and failure["retryable"] is True
        assert "unreachable" in failure["message"]
    metrics = httpx.get(f"{server.url}/metrics", timeout=30).text
    assert 'arbiter_model_errors_total{error="unreachable",kind="judge",model="default"}' in (
        metrics
    )
