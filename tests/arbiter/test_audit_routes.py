"""An audit under a rubric with routes: each route audited, reported and gated on its own."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from arbiter.cli import app

runner = CliRunner()

ROUTED = """\
name: routed-audit
version: 1
components:
  eff: {grader: efficiency, config: {max_turns: 10}}
routes:
  gsm:
    when: {data_source: [openai/gsm8k]}
    components:
      correct: {grader: answer}
"""


def test_each_route_is_audited_on_its_own(tmp_path):
    rubric = tmp_path / "routed.yaml"
    rubric.write_text(ROUTED)
    rows = [
        {
            "id": "e1",
            "response": "r",
            "metrics": {"turns": 2},
            "labels": {"expected": {"bands": {"efficiency": [0.7, 0.9]}}},
        },
        {
            "id": "g1",
            "response": "so\n#### 72",
            "data_source": "openai/gsm8k",
            "task": {"kind": "answer", "answer": "72", "format": "number"},
            "labels": {"expected": {"bands": {"answer": [1.0, 1.0]}}},
        },
        {
            "id": "g2",
            "response": "#### 71",
            "data_source": "openai/gsm8k",
            "task": {"kind": "answer", "answer": "72", "format": "number"},
            "labels": {"expected": {"bands": {"answer": [0.9, 1.0]}}},  # wrong on purpose
        },
    ]
    data = tmp_path / "set.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    report = tmp_path / "report"
    result = runner.invoke(
        app,
        [
            "audit",
            "--rubric",
            str(rubric),
            str(data),
            "--report",
            str(report),
            "--min-band-accuracy",
            "1",
        ],
    )
    assert result.exit_code == 1, result.output
    assert "route gsm: band accuracy of answer 0.5000" in result.stderr
    default = json.loads((report / "summary.json").read_text())
    gsm = json.loads((report / "route-gsm" / "summary.json").read_text())
    assert default["bands"]["efficiency"] == {"labelled": 1, "within": 1, "accuracy": 1.0}
    assert gsm["bands"]["answer"] == {"labelled": 2, "within": 1, "accuracy": 0.5}
