"""The models file's loader, schema and secrets handling, and the judge settings it declares."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from arbiter.reward_models.declarations import JudgeSpec, shown
from arbiter.reward_models.errors import (
    BackendUnavailableError,
    JudgeParseError,
    LabelCountError,
    ModelNotFoundError,
    OutputShapeError,
    SecretMissingError,
    error_kind,
)
from arbiter.reward_models.judge import JudgeDefaults, RateLimiter, SamplingParams
from arbiter.reward_models.judge.limits import _Reservation
from arbiter.reward_models.secrets import read_secret, redact_url
from arbiter.rubrics.models_file import ModelsFileError, models_json_schema, parse_models_file

REPO = Path(__file__).resolve().parents[2]


def issues(text: str) -> list[str]:
    with pytest.raises(ModelsFileError) as caught:
        parse_models_file(text, source="m.yaml")
    return [str(i) for i in caught.value.issues]


def test_every_problem_is_listed_at_its_line_with_did_you_mean() -> None:
    found = issues(
        "reward_models:\n"
        "  default:\n"
        "    backend: transformers\n"
        "    pathh: /models/rm\n"
        "judges:\n"
        "  default:\n"
        "    backend: openai\n"
        "    base_url: http://127.0.0.1:8000/v1\n"
        "    model: judge\n"
        "    temprature: 0.2\n"
        "    rpm: '60'\n"
    )
    assert found[0].startswith("m.yaml:4:5: reward_models.default.pathh: unknown key 'pathh'")
    assert found[0].endswith("did you mean 'path'?")
    assert found[1].startswith("m.yaml:10:5: judges.default.temprature: unknown key")
    assert found[1].endswith("did you mean 'temperature'?")
    assert found[2] == "m.yaml:11:10: judges.default.rpm: expected a valid number; found value '60'"
    # 'path' is not reported missing as well: the misspelling says it all.
    assert len(found) == 3


def test_a_key_written_where_its_variables_name_goes_is_never_repeated() -> None:
    [issue] = issues(
        "judges:\n  j: {backend: openai, base_url: 'http://h/v1', model: m,"
        " api_key_env: sk-live-0123456789}\n"
    )
    assert "sk-live" not in issue
    assert "judges.j.api_key_env: expected the name of an environment variable" in issue


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ("{backend: vllm, path: /tok}", "backend vllm needs base_url and model"),
        ("{backend: transformers, path: /m, base_url: 'http://h'}", "base_url unused"),
        ("{backend: vllm, path: /t, base_url: 'http://h', model: m, replicas: 2}", "replicas"),
    ],
)
def test_backends_are_checked_for_what_they_need(entry: str, message: str) -> None:
    [issue] = issues(f"reward_models:\n  rm: {entry}\n")
    assert issue.startswith("m.yaml:2:7: reward_models.rm:") and message in issue


def test_relative_paths_are_read_against_the_files_folder(tmp_path: Path) -> None:
    models = parse_models_file(
        "reward_models:\n  a: {backend: transformers, path: rm, chat_template: t.jinja}\n"
        "  b: {backend: transformers, path: /abs/rm}\n",
        base_dir=tmp_path,
    )
    assert models.spec.reward_models["a"].path == str(tmp_path / "rm")
    assert models.spec.reward_models["a"].chat_template == str(tmp_path / "t.jinja")
    assert models.spec.reward_models["b"].path == "/abs/rm"


def test_the_published_schema_is_the_loaders() -> None:
    published = json.loads((REPO / "models.schema.json").read_text())
    assert published == models_json_schema()
    assert published["additionalProperties"] is False


def test_secrets_come_from_the_named_variable_and_are_never_shown(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("ARBITER_TEST_KEY", raising=False)
    with pytest.raises(SecretMissingError, match="ARBITER_TEST_KEY is not set"):
        read_secret("ARBITER_TEST_KEY")
    monkeypatch.setenv("ARBITER_TEST_KEY", "s3cret")
    assert read_secret("ARBITER_TEST_KEY") == "s3cret"
    spec = JudgeSpec(
        backend="openai",
        base_url="https://u:pw@judge.example:8443/v1",
        model="m",
        api_key_env="ARBITER_TEST_KEY",
    )
    text = json.dumps(shown(spec))
    assert "s3cret" not in text and ":pw@" not in text
    assert shown(spec)["base_url"] == "https://u:***@judge.example:8443/v1"
    assert redact_url("http://127.0.0.1:8000/v1") == "http://127.0.0.1:8000/v1"


def _with_status(error: Exception, status: int) -> Exception:
    error.status_code = status  # type: ignore[attr-defined]
    return error


@pytest.mark.parametrize(
    ("error", "kind"),
    [
        (BackendUnavailableError("down"), "unreachable"),
        (_with_status(BackendUnavailableError("x"), 503), "server_error"),
        (_with_status(OutputShapeError("x"), 401), "unauthorized"),
        (_with_status(OutputShapeError("x"), 404), "model_missing"),
        (ModelNotFoundError("no dir"), "model_missing"),
        (LabelCountError("2 outputs"), "wrong_labels"),
        (OutputShapeError("not classify"), "wrong_output_shape"),
        (JudgeParseError("no [RESULT]"), "no_verdict"),
        (SecretMissingError("unset"), "missing_secret"),
        (ValueError("other"), "error"),
    ],
)
def test_failures_are_typed(error: Exception, kind: str) -> None:
    assert error_kind(error) == kind


def test_a_declared_judges_sampling_fills_what_the_rubric_leaves_unset() -> None:
    defaults = JudgeDefaults(temperature=0.7, top_p=0.9, seed=3, max_tokens=64)
    rubric = SamplingParams(temperature=0.0, max_tokens=512)
    # The rubric set temperature: it stays; top_p and seed come from the declaration;
    # max_tokens is capped whatever the rubric says.
    applied = defaults.apply(rubric, {"temperature", "max_tokens"})
    assert (applied.temperature, applied.top_p, applied.seed, applied.max_tokens) == (
        0.0,
        0.9,
        3,
        64,
    )
    assert defaults.apply(rubric, set()).temperature == 0.7


def test_the_rate_limiter_waits_for_the_oldest_call_to_leave_the_window() -> None:
    limiter = RateLimiter(rpm=2, tpm=1000)
    limiter._window.extend([_at(0.0, 100), _at(10.0, 100)])
    assert limiter._wait_s(20.0, 100) == pytest.approx(40.0)  # rpm: the first leaves at 60
    limiter.rpm = None
    assert limiter._wait_s(20.0, 800) == 0.0  # 1000 tokens fit
    assert limiter._wait_s(20.0, 900) == pytest.approx(40.0)  # 1100 do not
    assert limiter._wait_s(20.0, 5000) == pytest.approx(50.0)  # over the budget: once alone


def _at(at: float, tokens: int) -> _Reservation:
    return _Reservation(at, tokens)
