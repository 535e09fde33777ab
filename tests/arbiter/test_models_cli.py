"""Reward models declared in a models file, from the command line (issue 25).

``arbiter score``, ``audit``, ``rubric validate`` and ``models check`` with
``--models FILE``, against a transformers sequence classifier built and saved
here (random weights, fixed seed; never downloaded).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from arbiter.cli import app
from arbiter.reward_models.hf import HFRewardModel, HFRewardModelSpec
from tests.reward_models.declared import CHAT_SAMPLES, rewardbench_rows, save_rm, write_jsonl

REPO = Path(__file__).resolve().parents[2]
CHAT_RM = REPO / "rubrics" / "library" / "chat-reward-model.yaml"
CHAT_JUDGE = REPO / "rubrics" / "library" / "chat-judge.yaml"
runner = CliRunner()

MODELS = """\
reward_models:
  default:
    backend: transformers
    path: rm              # relative to this file
    device: cpu
    dtype: float32
    batch_tokens: 2048
"""


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("models-cli")
    save_rm(root / "rm")
    (root / "models.yaml").write_text(MODELS)
    write_jsonl(root / "chat.jsonl", CHAT_SAMPLES)
    write_jsonl(root / "rewardbench.jsonl", rewardbench_rows())
    return root


def rewards(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_score_scores_every_sample_with_the_declared_reward_model(root: Path) -> None:
    out = root / "rewards.jsonl"
    result = runner.invoke(
        app,
        [
            "score",
            "--rubric",
            str(CHAT_RM),
            "--models",
            str(root / "models.yaml"),
            str(root / "chat.jsonl"),
            "-o",
            str(out),
            "--strict",
        ],
    )
    assert result.exit_code == 0, result.output
    got = rewards(out)
    assert len(got) == len(CHAT_SAMPLES)
    model = HFRewardModel.load(HFRewardModelSpec(path=str(root / "rm"), device="cpu"))
    for reward, sample in zip(got, CHAT_SAMPLES, strict=True):
        component = reward["components"]["reward"]
        assert component["failure"] is None and reward["reward"] is not None
        # The raw score is the declared model's own, not a made-up number.
        conversation = [
            {"role": "user", "content": sample["prompt"]},
            {"role": "assistant", "content": sample["response"]},
        ]
        assert component["details"]["raw"] == pytest.approx(model.score(conversation)[0], abs=1e-5)
    assert len({round(r["reward"], 4) for r in got}) > 2


def test_the_variable_declares_the_models_as_the_option_does(root: Path) -> None:
    out = root / "by-env.jsonl"
    result = runner.invoke(
        app,
        ["score", "--rubric", str(CHAT_RM), str(root / "chat.jsonl"), "-o", str(out)],
        env={"ARBITER_MODELS": str(root / "models.yaml")},
    )
    assert result.exit_code == 0, result.output
    assert all(r["reward"] is not None for r in rewards(out))


def test_without_models_every_sample_abstains_and_strict_says_why(root: Path) -> None:
    out = root / "none.jsonl"
    args = ["score", "--rubric", str(CHAT_RM), str(root / "chat.jsonl"), "-o", str(out)]
    relaxed = runner.invoke(app, args, env={"ARBITER_MODELS": ""})
    assert relaxed.exit_code == 0
    assert "component 'reward' failed for every sample (5 of 5)" in relaxed.output
    assert all(r["reward"] is None for r in rewards(out))  # abstains, never 0
    strict = runner.invoke(app, [*args, "--strict"], env={"ARBITER_MODELS": ""})
    assert strict.exit_code == 1
    assert "no reward model named 'default' is served here" in strict.output


def test_a_model_that_cannot_load_fails_its_components_typed(root: Path) -> None:
    (root / "missing.yaml").write_text(MODELS.replace("path: rm ", "path: nowhere "))
    out = root / "missing.jsonl"
    result = runner.invoke(
        app,
        [
            "score",
            "--rubric",
            str(CHAT_RM),
            "--models",
            str(root / "missing.yaml"),
            str(root / "chat.jsonl"),
            "-o",
            str(out),
            "--strict",
        ],
    )
    assert result.exit_code == 1
    for reward in rewards(out):
        assert reward["reward"] is None
        failure = reward["components"]["reward"]["failure"]
        assert failure["kind"] == "judge_error"
        assert "could not be loaded" in failure["message"] and "nowhere" in failure["message"]


def test_audit_of_the_reward_model_rubric_on_a_rewardbench_set(root: Path) -> None:
    report = root / "audit"
    result = runner.invoke(
        app,
        [
            "audit",
            "--rubric",
            str(CHAT_RM),
            "--format",
            "rewardbench",
            "--models",
            str(root / "models.yaml"),
            str(root / "rewardbench.jsonl"),
            "--report",
            str(report),
            "--strict",
        ],
    )
    assert result.exit_code == 0, result.output
    summary = json.loads((report / "summary.json").read_text())
    assert summary["preferences"]["pairs"] == 4
    assert summary["preferences"]["scored_pairs"] == 4  # every pair scored by the model
    assert summary["determinism"]["reward"]["identical"] == 1.0


def test_audit_without_the_model_fails_under_strict(root: Path) -> None:
    result = runner.invoke(
        app,
        [
            "audit",
            "--rubric",
            str(CHAT_RM),
            "--format",
            "rewardbench",
            str(root / "rewardbench.jsonl"),
            "--strict",
        ],
        env={"ARBITER_MODELS": ""},
    )
    assert result.exit_code == 1
    assert "component 'reward' failed for every sample (8 of 8)" in result.output


def test_rubric_validate_checks_the_names_against_the_models_file(root: Path) -> None:
    ok = runner.invoke(
        app, ["rubric", "validate", str(CHAT_RM), "--models", str(root / "models.yaml")]
    )
    assert ok.exit_code == 0, ok.output
    # chat-judge names judge 'default'; this file declares only a judge 'other'.
    (root / "other-judge.yaml").write_text(
        "judges:\n  other: {backend: openai, base_url: 'http://127.0.0.1:9/v1', model: m}\n"
    )
    missing = runner.invoke(
        app, ["rubric", "validate", str(CHAT_JUDGE), "--models", str(root / "other-judge.yaml")]
    )
    assert missing.exit_code == 1
    # The error points at the rubric's own `judge: default` line and its value.
    lines = CHAT_JUDGE.read_text().splitlines()
    line = next(i for i, text in enumerate(lines, 1) if text.strip() == "judge: default")
    column = lines[line - 1].index("default") + 1
    assert (
        f"{CHAT_JUDGE}:{line}:{column}: components.judge.config.judge: no judge named 'default' in "
        f"{root / 'other-judge.yaml'} (declared: other)" in missing.output
    )
    # 'default' declared, but as a reward model: of the wrong kind.
    wrong = runner.invoke(
        app, ["rubric", "validate", str(CHAT_JUDGE), "--models", str(root / "models.yaml")]
    )
    assert wrong.exit_code == 1
    assert "'default' is declared under reward_models" in wrong.output
    assert "needs one under judges" in wrong.output


def test_rubric_validate_imports_plugins_as_the_server_does(tmp_path: Path) -> None:
    rubric = tmp_path / "sleepy.yaml"
    rubric.write_text(
        "name: s\nversion: 1\ncomponents:\n  nap: {grader: sleepy, config: {delay_s: 0}}\n"
    )
    bare = runner.invoke(
        app, ["rubric", "validate", str(rubric)], env={"ARBITER_GRADER_PLUGINS": ""}
    )
    assert bare.exit_code == 1 and "unknown grader 'sleepy'" in bare.output
    with_plugin = runner.invoke(
        app, ["rubric", "validate", str(rubric), "--plugins", "tests.api.plugin_graders"]
    )
    assert with_plugin.exit_code == 0, with_plugin.output


def test_a_misspelled_key_is_refused_with_file_line_and_column(root: Path) -> None:
    bad = root / "misspelled.yaml"
    bad.write_text(MODELS.replace("    batch_tokens:", "    batch_tokns:"))
    for command in (
        ["models", "check", str(bad)],
        ["score", "--rubric", str(CHAT_RM), "--models", str(bad), str(root / "chat.jsonl")],
        ["rubric", "validate", str(CHAT_RM), "--models", str(bad)],
    ):
        result = runner.invoke(app, command)
        assert result.exit_code == 1, command
        assert f"{bad}:7:5: reward_models.default.batch_tokns: unknown key 'batch_tokns'" in (
            result.output
        )
        assert "did you mean 'batch_tokens'?" in result.output


def test_models_check_reports_a_scored_example_and_typed_failures(root: Path) -> None:
    (root / "check.yaml").write_text(
        MODELS
        + "  two_heads:\n    backend: transformers\n    path: rm\n    objectives: [a, b]\n"
        + "  gone:\n    backend: transformers\n    path: gone\n"
    )
    result = runner.invoke(app, ["models", "check", str(root / "check.yaml"), "--json"])
    assert result.exit_code == 1  # two of three fail
    reports = {
        r["name"]: r for r in (json.loads(line) for line in result.stdout.splitlines() if line)
    }
    good = reports["default"]
    assert good["ok"] and good["reachable"] and good["warm"]
    assert good["example"]["same_twice"] is True
    assert isinstance(good["example"]["scores"]["reward"], float)
    assert good["tokens_in"] > 0 and good["latency_s"] > 0
    assert reports["two_heads"]["failure_kind"] == "wrong_labels"
    assert reports["gone"]["failure_kind"] == "model_missing"
    assert not reports["gone"]["ok"] and not reports["gone"]["reachable"]


def test_models_show_never_shows_a_secret(tmp_path: Path) -> None:
    models = tmp_path / "m.yaml"
    models.write_text(
        "judges:\n  j:\n    backend: openai\n    base_url: 'http://user:hunter2@127.0.0.1:9/v1'\n"
        "    model: m\n    api_key_env: ARBITER_TEST_JUDGE_KEY\n"
    )
    result = runner.invoke(
        app, ["models", "show", str(models)], env={"ARBITER_TEST_JUDGE_KEY": "sk-live-abc"}
    )
    assert result.exit_code == 0, result.output
    assert "hunter2" not in result.output and "sk-live-abc" not in result.output
    assert "http://user:***@127.0.0.1:9/v1" in result.output
    assert "ARBITER_TEST_JUDGE_KEY (set)" in result.output
