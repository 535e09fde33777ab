"""The arbiter CLI, driven as a person would: through its commands and files."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest
from ruamel.yaml import YAML
from typer.testing import CliRunner

from arbiter.cli import app
from arbiter.version import __version__

REPO = Path(__file__).resolve().parents[2]
EFFICIENCY = REPO / "rubrics" / "library" / "efficiency.yaml"
DEMO = REPO / "eval_sets" / "demo.jsonl"
runner = CliRunner()

BAD_LINE_7 = """\
name: broken
version: 1
components:
  efficiency:
    grader: efficiency
    weight: 1.0
    requird: true
    config: {max_turns: 8}
"""


def sample_line(i: int, **extra: object) -> str:
    row = {"id": f"s{i}", "group_id": f"g{i // 4}", "response": "r", "metrics": {"turns": i % 13}}
    row.update(extra)
    return json.dumps(row)


def test_version():
    result = runner.invoke(app, ["--version"])
    assert result.exit_code == 0 and result.stdout.strip() == f"arbiter {__version__}"


def test_validate_good_files_and_folders():
    result = runner.invoke(
        app, ["rubric", "validate", str(EFFICIENCY), str(REPO / "rubrics" / "library")]
    )
    assert result.exit_code == 0, result.output
    assert result.stdout.count("ok  ") == 1 + len(
        list((REPO / "rubrics" / "library").glob("*.yaml"))
    )


def test_validate_reports_line_7_path_and_suggestion(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text(BAD_LINE_7)
    result = runner.invoke(app, ["rubric", "validate", str(EFFICIENCY), str(bad)])
    assert result.exit_code == 1
    assert f"{bad}:7:5: components.efficiency.requird: unknown key 'requird'" in result.stderr
    assert "did you mean 'required'?" in result.stderr
    assert "1 of 2 rubric file(s) invalid" in result.stderr


def test_validate_reports_unknown_component_in_formula(tmp_path):
    bad = tmp_path / "formula.yaml"
    bad.write_text(BAD_LINE_7.replace("requird", "required") + "combine: efficiency * speed\n")
    result = runner.invoke(app, ["rubric", "validate", str(bad)])
    assert result.exit_code == 1
    assert (
        f"{bad}:9:23: combine: in formula 'efficiency * speed': unknown component 'speed'"
        in result.stderr
    )


def test_validate_missing_file(tmp_path):
    result = runner.invoke(app, ["rubric", "validate", str(tmp_path / "nope.yaml")])
    assert result.exit_code == 1 and "cannot read" in result.stderr


def test_show_prints_resolved_rubric_and_its_hash():
    from arbiter.rubrics import load_rubric

    rubric = load_rubric(EFFICIENCY)
    result = runner.invoke(app, ["rubric", "show", str(EFFICIENCY), "--json"])
    assert result.exit_code == 0
    shown = json.loads(result.stdout)
    assert shown["sha256"] == rubric.sha256
    assert shown["rubric"]["components"]["efficiency"]["config"]["rate"] == 3.0  # default filled in
    yaml_out = runner.invoke(app, ["rubric", "show", str(EFFICIENCY)]).stdout
    assert rubric.sha256 in yaml_out.splitlines()[0]


def test_schema_is_draft7_json(tmp_path):
    result = runner.invoke(app, ["rubric", "schema"])
    assert result.exit_code == 0
    jsonschema.Draft7Validator.check_schema(json.loads(result.stdout))
    out = tmp_path / "s.json"
    assert runner.invoke(app, ["rubric", "schema", "-o", str(out)]).exit_code == 0
    assert json.loads(out.read_text()) == json.loads(result.stdout)


def test_graders_lists_efficiency():
    assert "efficiency" in runner.invoke(app, ["rubric", "graders"]).stdout


def test_show_fills_in_the_drift_defaults_it_claims_to():
    # Issue 27: every drift threshold left out printed as null.
    from arbiter.monitoring.drift_config import DriftConfig

    shown = json.loads(runner.invoke(app, ["rubric", "show", str(EFFICIENCY), "--json"]).stdout)
    drift = shown["rubric"]["drift"]
    assert None not in drift.values(), drift
    assert drift["cusum_h"] == DriftConfig().cusum_h
    assert drift["reference_windows"] == DriftConfig().reference_windows
    shown_yaml = YAML(typ="safe").load(
        runner.invoke(app, ["rubric", "show", str(EFFICIENCY)]).stdout
    )
    assert shown_yaml["drift"] == drift


def test_graders_verbose_lists_each_config_key_with_type_and_default():
    result = runner.invoke(app, ["rubric", "graders", "--verbose"])
    assert result.exit_code == 0
    lines = result.stdout.splitlines()
    efficiency = lines.index(next(line for line in lines if line.startswith("efficiency ")))
    keys = []
    for line in lines[efficiency + 1 :]:
        if not line.startswith("    "):
            break
        keys.append(line.strip())
    assert any(k.startswith("max_turns: ") and "= null" in k for k in keys), keys
    assert any(k.startswith("missing_metric: Literal['skip', 'fail'] = \"skip\"") for k in keys), (
        keys
    )
    radon = next(line for line in lines if line.strip().startswith("max_cyclomatic: "))
    assert '"ok": 10' in radon and '"worst": 30' in radon, radon


def test_score_demo_set_writes_one_reward_per_line_in_order(tmp_path):
    out = tmp_path / "rewards.jsonl"
    result = runner.invoke(app, ["score", "--rubric", str(EFFICIENCY), str(DEMO), "-o", str(out)])
    assert result.exit_code == 0, result.output
    inputs = [json.loads(line) for line in DEMO.read_text().splitlines() if line.strip()]
    rewards = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["id"] for r in rewards] == [i["id"] for i in inputs]
    first = rewards[0]
    assert {"id", "reward", "components", "penalties", "rubric", "graders"} <= first.keys()
    assert {"score", "failure", "violations", "details"} <= first["components"]["efficiency"].keys()
    assert first["rubric"]["name"] == "efficiency-only" and len(first["rubric"]["sha256"]) == 64
    abstained = next(r for r in rewards if r["id"] == "no-usage")
    assert abstained["reward"] is None
    assert abstained["components"]["efficiency"]["failure"]["kind"] == "missing_input"
    assert "fix-dates-0" in result.stdout and "reward" in result.stdout  # the table


def test_malformed_line_stops_the_run_before_any_output(tmp_path):
    data = tmp_path / "in.jsonl"
    lines = [
        sample_line(0),
        sample_line(1),
        '{"id": "s2", "response": 3}',
        "not json",
        sample_line(4),
    ]
    data.write_text("\n".join(lines) + "\n")
    out = tmp_path / "out.jsonl"
    result = runner.invoke(app, ["score", "--rubric", str(EFFICIENCY), str(data), "-o", str(out)])
    assert result.exit_code == 1
    assert f"{data}:3: response: a valid string; found 3" in result.stderr
    assert f"{data}:4: invalid JSON" in result.stderr
    assert "nothing was scored or written" in result.stderr
    assert not out.exists()
    assert list(tmp_path.iterdir()) == [data]  # no temporary file left behind either


def test_skip_invalid_scores_the_rest(tmp_path):
    data = tmp_path / "in.jsonl"
    data.write_text(
        "\n".join([sample_line(0), '{"id": "s0", "response": "dup"}', "[1]", sample_line(3)]) + "\n"
    )
    out = tmp_path / "out.jsonl"
    result = runner.invoke(
        app, ["score", "--rubric", str(EFFICIENCY), str(data), "-o", str(out), "--skip-invalid"]
    )
    assert result.exit_code == 0
    assert f"{data}:2: id 's0' repeats the sample on line 1" in result.stderr
    assert f"{data}:3: expected a JSON object; found list" in result.stderr
    assert [json.loads(x)["id"] for x in out.read_text().splitlines()] == ["s0", "s3"]
    assert "2 invalid line(s) skipped" in result.stdout


def test_score_reads_stdin_and_writes_stdout():
    text = "\n".join(sample_line(i) for i in range(3)) + "\n"
    result = runner.invoke(
        app, ["score", "--rubric", str(EFFICIENCY), "-", "--table", "none"], input=text
    )
    assert result.exit_code == 0
    assert [json.loads(x)["id"] for x in result.stdout.splitlines()] == ["s0", "s1", "s2"]


def test_bad_rubric_stops_scoring(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text(BAD_LINE_7)
    result = runner.invoke(app, ["score", "--rubric", str(bad), str(DEMO)])
    assert result.exit_code == 1 and ":7:5:" in result.stderr


def test_ten_thousand_samples_through_the_installed_command(tmp_path):
    data = tmp_path / "10k.jsonl"
    data.write_text("\n".join(sample_line(i) for i in range(10_000)) + "\n")
    out = tmp_path / "10k.out.jsonl"
    arbiter = Path(sys.executable).with_name("arbiter")
    command = [str(arbiter)] if arbiter.exists() else [sys.executable, "-m", "arbiter"]
    done = subprocess.run(
        [*command, "score", "--rubric", str(EFFICIENCY), str(data), "-o", str(out)],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "COLUMNS": "120"},
        check=False,
    )
    assert done.returncode == 0, done.stderr
    ids = [json.loads(line)["id"] for line in out.read_text().splitlines()]
    assert ids == [f"s{i}" for i in range(10_000)]
    assert "10000" in done.stdout


@pytest.mark.parametrize("table", ["rows", "summary", "none"])
def test_table_choices(table):
    result = runner.invoke(app, ["score", "--rubric", str(EFFICIENCY), str(DEMO), "--table", table])
    assert result.exit_code == 0
    assert ("fix-dates-0" in result.stderr) == (table == "rows")
