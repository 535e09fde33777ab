"""The RewardBench-format audit: pure report, and a run on a tiny local model."""

from __future__ import annotations

import json
import math

import pytest

from arbiter.reward_models.audit import AuditRow, audit, humanevalpack_rows, main, read_rows
from tests.reward_models.tiny import llama_config, save_reward_model


def test_report_accuracy_per_subset_length_split_and_margins():
    rows = [
        AuditRow("p", ("long chosen answer",), ("short",), "chat"),
        AuditRow("p", ("a",), ("much longer rejected",), "chat"),
        AuditRow("p", ("right",), ("w1", "w2", "w3"), "best_of_4"),
        AuditRow("p", ("tie",), ("tie2",), "best_of_4"),
    ]
    scores = [([2.0], [1.0]), ([0.0], [1.0]), ([3.0], [1.0, 2.5, 0.0]), ([1.0], [1.0])]
    report = audit(rows, scores, bins=4)
    assert (report.overall.right, report.overall.rows) == (2, 4)
    assert report.subsets["chat"].accuracy == 0.5
    assert report.subsets["best_of_4"].accuracy == 0.5  # a tie is wrong
    # Rows 1 and 3 have the longer answer chosen, and both are right: a length bias shows.
    assert (report.chosen_longer.right, report.chosen_longer.rows) == (2, 2)
    assert (report.chosen_shorter.right, report.chosen_shorter.rows) == (0, 2)
    assert report.margins == [1.0, -1.0, 0.5, 0.0]
    assert sum(c for _, _, c in report.histogram) == 4


def test_empty_split_is_nan_not_zero():
    report = audit([AuditRow("p", ("a",), ("bb",))], [([1.0], [0.0])])
    assert math.isnan(report.chosen_longer.accuracy)


def test_bad_rows_name_their_line(tmp_path):
    path = tmp_path / "rows.jsonl"
    path.write_text(
        json.dumps({"prompt": "p", "chosen": "a", "rejected": "b"})
        + "\n"
        + json.dumps({"prompt": "p"})
    )
    with pytest.raises(ValueError, match=":2:"):
        read_rows(path)


def test_audit_command_runs_on_a_local_model(tmp_path, capsys):
    model = save_reward_model(tmp_path / "rm", llama_config())
    rows = [
        {
            "prompt": "q",
            "chosen": "def f(x):\n    return x",
            "rejected": "def f(x):\n    return -x",
            "subset": "fix",
        },
        {
            "prompt": [{"role": "user", "content": "hi"}],
            "chosen": ["hello"],
            "rejected": ["a", "b", "c"],
            "subset": "bo4",
        },
    ]
    data = tmp_path / "rows.jsonl"
    data.write_text("\n".join(json.dumps(r) for r in rows))
    main(model, data, max_length=256)
    out = capsys.readouterr().out
    assert "overall accuracy" in out and "subset bo4" in out and "chosen longer" in out


def test_humanevalpack_pairs(tmp_path):
    item = {
        "task_id": "Python/0",
        "prompt": "def f(x):\n",
        "instruction": "Write f.",
        "declaration": "def f(x):\n",
        "canonical_solution": "    return x\n",
        "buggy_solution": "    return -x\n",
        "bug_type": "operator misuse",
    }
    path = tmp_path / "hep.jsonl"
    path.write_text(json.dumps(item) + "\n")
    [row] = humanevalpack_rows(path)
    assert row.chosen == ("def f(x):\n    return x\n",) and row.rejected == (
        "def f(x):\n    return -x\n",
    )
    assert row.subset == "operator misuse" and row.prompt == "Write f."
