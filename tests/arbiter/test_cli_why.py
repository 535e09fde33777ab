"""`arbiter score` and `rubric validate` say why: refusals, cautions, components left out."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from arbiter.cli import app

runner = CliRunner()

CPP_SUM = {
    "id": "cpp-sum",
    "response": (
        "```cpp\n#include <iostream>\n"
        'int main() { long long a, b; std::cin >> a >> b; std::cout << a + b << "\\n"; }\n```\n'
    ),
    "task": {
        "kind": "stdin_stdout",
        "language": "cpp",
        "tests": [{"input": "1 2\n", "output": "3\n"}],
    },
}


def test_a_cpp_answer_under_python_codegen_is_refused_and_the_right_rubrics_named(
    tmp_path: Path,
) -> None:
    samples = tmp_path / "samples.jsonl"
    samples.write_text(json.dumps(CPP_SUM) + "\n")
    out = tmp_path / "rewards.jsonl"
    result = runner.invoke(
        app,
        ["score", "--rubric", "python-codegen", str(samples), "-o", str(out)],
        env={"COLUMNS": "240"},
    )
    assert result.exit_code == 0, result.output
    (reward,) = [json.loads(line) for line in out.read_text().splitlines()]
    assert reward["reward"] is None and reward["abstained_by"] == "request"
    assert reward["flags"] == ["not_accepted"]
    assert reward["abstain_reason"] == (
        "rubric 'python-codegen' accepts programs in python; this sample is a stdin_stdout "
        "task in cpp"
    )
    assert (
        "1 of 1 sample(s) not accepted by 'python-codegen' (its accepts: language python), not "
        "graded; library rubrics that accept them: code-tests, competitive-stdio, "
        "cpp-competitive, mixed-rl"
    ) in result.output
    # Not graded is not failed: no component is said to have failed for every sample.
    assert "failed for every sample" not in result.output


def test_validate_prints_the_cautions_of_a_valid_rubric(tmp_path: Path) -> None:
    rubric = tmp_path / "heavy.yaml"
    rubric.write_text(
        "name: heavy\nversion: 1\ncomponents:\n"
        "  a: {grader: efficiency, weight: 0.55, config: {max_turns: 4}}\n"
        "  b: {grader: efficiency, weight: 0.5, config: {max_turns: 8}}\n"
        "clip: [-1.0, 1.0]\n"
    )
    result = runner.invoke(app, ["rubric", "validate", str(rubric)], env={"COLUMNS": "240"})
    assert result.exit_code == 0, result.output
    assert "ok  " in result.stdout
    assert f"caution: {rubric}:3:1: components: weights sum to 1.05, not 1" in result.output
