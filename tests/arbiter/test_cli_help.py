"""What a new user reads first: each command's --help; rubrics named as the server names them."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from arbiter.api.settings import LIBRARY_DIR, Settings
from arbiter.cli import app

REPO = Path(__file__).resolve().parents[2]
EFFICIENCY = REPO / "rubrics" / "library" / "efficiency.yaml"
DEMO = REPO / "eval_sets" / "demo.jsonl"
runner = CliRunner()
#: Wide enough that rich folds no line of a help page.
WIDE = {"COLUMNS": "200", "TERMINAL_WIDTH": "200"}


def help_of(*command: str) -> str:
    result = runner.invoke(app, [*command, "--help"], env=WIDE)
    assert result.exit_code == 0, result.output
    return result.stdout


def every_command() -> list[tuple[str, ...]]:
    """Return the path of every command and group of the CLI, the root first."""
    found: list[tuple[str, ...]] = []

    def walk(command: object, path: tuple[str, ...]) -> None:
        found.append(path)
        for name, sub in getattr(command, "commands", {}).items():
            walk(sub, (*path, name))

    walk(typer.main.get_command(app), ())
    return found


def test_serve_help_lists_every_setting_with_its_variable():
    text = help_of("serve")
    for name in Settings.model_fields:
        assert f"ARBITER_{name.upper()}" in text, name
    assert "sqlite:///arbiter.db" in text  # a default
    assert "SQLAlchemy URL" in text  # a description


def test_every_setting_says_what_it_does():
    assert [n for n, f in Settings.model_fields.items() if not f.description] == []


def test_serve_rubric_dir_feeds_the_rubric_dirs_setting(tmp_path, monkeypatch):
    import uvicorn

    import arbiter.api.logs

    first, second = tmp_path / "a", tmp_path / "b"
    first.mkdir()
    second.mkdir()
    monkeypatch.setenv("ARBITER_RUBRIC_DIRS", "/elsewhere")
    seen: list[Settings] = []
    monkeypatch.setattr(uvicorn, "run", lambda *a, **k: seen.append(Settings()))
    monkeypatch.setattr(arbiter.api.logs, "configure_logging", lambda *a: None)
    result = runner.invoke(app, ["serve", "--rubric-dir", str(first), "--rubric-dir", str(second)])
    assert result.exit_code == 0, result.output
    # The workers build their settings from the environment, as ARBITER_RUBRIC_DIRS says.
    assert os.environ["ARBITER_RUBRIC_DIRS"] == f"{first}:{second}"
    assert seen[0].rubric_dirs == [first, second]
    assert seen[0].watched_dirs() == [LIBRARY_DIR, first, second]


def test_serve_refuses_a_rubric_dir_that_is_not_a_folder(tmp_path):
    result = runner.invoke(app, ["serve", "--rubric-dir", str(tmp_path / "missing")], env=WIDE)
    assert result.exit_code == 2
    assert "--rubric-dir" in result.output
    assert "does not exist" in result.output


@pytest.mark.parametrize("command", every_command(), ids=lambda c: " ".join(c) or "arbiter")
def test_help_names_values_without_python_types_or_markup(command):
    text = help_of(*command)
    assert not re.search(r"<[a-z][\w\[\], |.]*>", text), text
    assert "``" not in text, text


def test_flags_take_no_value_and_paths_say_so():
    score = help_of("score")
    assert re.search(r"--skip-invalid +Report and skip", score), score
    assert re.search(r"--output +-o +PATH ", score), score
    assert re.search(r"--chunk-size +INTEGER \[x>=1\]", score), score
    assert re.search(r"--rubric +-r +FILE\|NAME ", score), score
    validate = help_of("rubric", "validate")
    assert re.search(r"paths\.\.\. +PATH\.\.\. ", validate), validate
    assert "With `--models`, every reward model" in validate


def test_a_library_rubric_by_name(tmp_path):
    shown = runner.invoke(app, ["rubric", "show", "efficiency-only"])
    by_path = runner.invoke(app, ["rubric", "show", str(EFFICIENCY)])
    assert shown.exit_code == 0, shown.output
    assert shown.stdout == by_path.stdout
    scored = runner.invoke(
        app, ["score", "--rubric", "efficiency-only", str(DEMO), "-o", str(tmp_path / "r.jsonl")]
    )
    assert scored.exit_code == 0, scored.output
    assert "efficiency-only v1" in scored.stdout


def test_a_file_that_exists_wins_over_a_library_name(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert runner.invoke(app, ["rubric", "show", "efficiency-only"]).exit_code == 0
    text = EFFICIENCY.read_text().replace("name: efficiency-only", "name: mine")
    Path("efficiency-only").write_text(text)
    shown = runner.invoke(app, ["rubric", "show", "efficiency-only"])
    assert shown.exit_code == 0, shown.output
    assert shown.stdout.startswith("# mine v1")


@pytest.mark.parametrize(
    "command",
    [
        ["score", str(DEMO), "--rubric"],
        ["audit", str(DEMO), "--rubric"],
        ["replay", "--rubric"],
        ["rubric", "show"],
        ["rubric", "publish", "--url", "http://127.0.0.1:9", "--"],
    ],
    ids=lambda c: " ".join(w for w in c[:2] if not w.startswith("/")),
)
def test_an_unknown_rubric_name_lists_the_library(command):
    result = runner.invoke(app, [*command, "python-codgen"], env=WIDE)
    assert result.exit_code == 1, result.output
    assert "no such file, and no library rubric is named so" in result.stderr
    assert "did you mean 'python-codegen'?" in result.stderr
    for path in LIBRARY_DIR.glob("*.yaml"):
        name = next(line for line in path.read_text().splitlines() if line.startswith("name:"))
        assert name.split(":", 1)[1].strip() in result.stderr


def test_a_missing_rubric_path_still_says_no_such_file(tmp_path):
    result = runner.invoke(app, ["rubric", "show", str(tmp_path / "gone.yaml")], env=WIDE)
    assert result.exit_code == 1
    assert f"{tmp_path / 'gone.yaml'}: no such file" in result.stderr
