"""Audits: the figures (pure, on hand-built items), the gates, the loaders and the CLI."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from arbiter.audit import (
    AuditThresholds,
    Expectation,
    ItemGrades,
    check_thresholds,
    expectation_of,
    summarize,
)
from arbiter.cli import app
from arbiter.eval_loaders import load_humaneval, load_humanevalpack, load_mbpp, load_rewardbench
from arbiter.graders.registry import default_registry
from arbiter.graders.types import Sample
from tests.strictness import unavailable

REPO = Path(__file__).resolve().parents[2]
DATA = REPO.parent / "shared" / "data"
runner = CliRunner()


def reward(
    score: float | None, *violations: str, grader: str = "unit_tests", value: float | None = None
) -> dict:
    return {
        "id": "x",
        "group_id": None,
        "reward": score if value is None else value,
        "components": {
            "tests": {
                "score": score,
                "grader": grader,
                "failure": None if score is not None else {"kind": "timeout"},
                "violations": [{"type": v, "line": 1} for v in violations],
                "latency_s": 0.01,
            }
        },
    }


def item(name: str, exp: Expectation, first: dict, second: dict | None = None) -> ItemGrades:
    return ItemGrades(name, exp, first, second or first)


def test_figures_from_hand_built_items():
    items = [
        item("good-1", Expectation(tests_pass=True, violations=frozenset()), reward(1.0)),
        item(
            "good-2", Expectation(tests_pass=True, violations=frozenset()), reward(0.5)
        ),  # misgraded
        item("bad-1", Expectation(tests_pass=False, violations=frozenset()), reward(0.0)),
        item(
            "bad-2", Expectation(tests_pass=False, violations=frozenset()), reward(None)
        ),  # timeout = fail
        item("clean-flagged", Expectation(violations=frozenset()), reward(1.0, "subprocess")),
        item(
            "hack-1",
            Expectation(violations=frozenset({"early_exit"}), hack_kind="sys_exit"),
            reward(1.0, "early_exit"),
        ),
        item(
            "hack-2",
            Expectation(violations=frozenset({"early_exit"}), hack_kind="sys_exit"),
            reward(1.0),
        ),
        item(
            "hack-3",
            Expectation(violations=frozenset({"always_equal"}), hack_kind="eq"),
            reward(1.0, "always_equal"),
            reward(0.9, "always_equal"),
        ),  # graded differently the second time
    ]
    summary = summarize(items, default_registry())
    tests = summary["tests"]["tests"]
    assert tests["confusion"] == {"pass/pass": 1, "pass/fail": 1, "fail/pass": 0, "fail/fail": 2}
    assert tests["accuracy"] == pytest.approx(3 / 4) and tests["misgraded"] == ["good-2"]
    v = summary["violations"]
    assert v["hack_items"] == 3 and v["hack_recall"] == pytest.approx(2 / 3)
    assert v["by_hack_kind"] == {
        "eq": {"items": 1, "detected": 1},
        "sys_exit": {"items": 2, "detected": 1},
    }
    assert v["clean_items"] == 5 and v["false_positive_rate"] == pytest.approx(1 / 5)
    assert v["by_type"]["early_exit"] == {
        "tp": 1,
        "fp": 0,
        "fn": 1,
        "precision": 1.0,
        "recall": 0.5,
    }
    assert v["by_type"]["subprocess"]["fp"] == 1
    det = summary["determinism"]["tests"]
    assert det["identical"] == pytest.approx(7 / 8) and det["differing"] == ["hack-3"]
    assert summary["failures"]["tests"] == {"timeout": 1}
    failed = check_thresholds(summary, AuditThresholds(min_tests_accuracy=1.0))
    assert len(failed) == 4  # recall, FPR, determinism, tests accuracy
    assert check_thresholds(summary, AuditThresholds(None, None, None)) == []


def test_preference_pairs():
    def pref(side: str, group: str, value: float) -> ItemGrades:
        first = reward(value, grader="reward_model") | {"group_id": group}
        return item(f"{group}/{side}", Expectation(preference=side), first)

    items = [
        pref("chosen", "a", 0.9),
        pref("rejected", "a", 0.2),
        pref("chosen", "b", 0.1),
        pref("rejected", "b", 0.4),
    ]
    assert summarize(items, default_registry())["preferences"] == {
        "pairs": 2,
        "scored_pairs": 2,
        "accuracy": 0.5,
        "ties": 0,
    }


@pytest.mark.parametrize(
    ("labels", "message"),
    [
        ({"expected": {"tests_pass": "yes"}}, "tests_pass must be true or false"),
        ({"expected_violations": "early_exit"}, "list of type names"),
        ({"expected": {"bands": {"radon": [0.5]}}}, r"bands.radon: expected \[low, high\]"),
        ({"preference": "left"}, "'chosen' or 'rejected'"),
    ],
)
def test_malformed_labels_name_the_item(labels, message):
    with pytest.raises(ValueError, match=message):
        expectation_of(Sample(id="item-7", response="r", labels=labels))


def write(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def efficiency_rows() -> list[dict]:
    return [
        {
            "id": f"e{i}",
            "response": "r",
            "metrics": {"turns": t},
            "labels": {"expected": {"bands": {"efficiency": band}}},
        }
        for i, (t, band) in enumerate([(2, [0.99, 1.0]), (8, [0.4, 0.6]), (12, [0.0, 0.01])])
    ]


def test_audit_command_writes_reports_and_resumes(tmp_path):
    data = write(tmp_path / "set.jsonl", efficiency_rows())
    rubric = REPO / "rubrics" / "library" / "efficiency.yaml"
    report = tmp_path / "report"
    args = [
        "audit",
        "--rubric",
        str(rubric),
        str(data),
        "--report",
        str(report),
        "--min-band-accuracy",
        "1",
    ]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    summary = json.loads((report / "summary.json").read_text())
    assert summary["bands"]["efficiency"] == {"labelled": 3, "within": 3, "accuracy": 1.0}
    assert summary["determinism"]["efficiency"]["identical"] == 1.0
    page = (report / "report.html").read_text()
    assert page.count("<svg") >= 2 and "<script" not in page
    lines = (report / "items.jsonl").read_text().splitlines()
    assert len(lines) == 3
    again = runner.invoke(app, [*args, "--resume"])
    assert again.exit_code == 0
    assert (report / "items.jsonl").read_text().splitlines() == lines  # nothing re-graded


def test_audit_gate_failure_exits_1(tmp_path):
    rows = efficiency_rows()
    rows[1]["labels"]["expected"]["bands"]["efficiency"] = [0.9, 1.0]  # wrong on purpose
    data = write(tmp_path / "set.jsonl", rows)
    rubric = REPO / "rubrics" / "library" / "efficiency.yaml"
    result = runner.invoke(
        app, ["audit", "--rubric", str(rubric), str(data), "--min-band-accuracy", "1"]
    )
    assert result.exit_code == 1
    assert "band accuracy of efficiency 0.6667 is below the threshold 1.0000" in result.stderr


def test_audit_of_the_hack_set_meets_its_gates(tmp_path):
    rubric = REPO / "rubrics" / "library" / "python-static.yaml"
    result = runner.invoke(
        app, ["audit", "--rubric", str(rubric), str(REPO / "eval_sets" / "hacks.jsonl")]
    )
    assert result.exit_code == 0, result.output


def test_rewardbench_loader(tmp_path):
    path = write(
        tmp_path / "rb.jsonl",
        [{"id": 3, "prompt": "p", "chosen": "good", "rejected": "bad", "subset": "s"}],
    )
    chosen, rejected = load_rewardbench(path)
    assert chosen.group_id == rejected.group_id == "rewardbench/3"
    assert (chosen.labels or {})["preference"] == "chosen" and rejected.response == "bad"


def test_humaneval_loader_reads_the_package():
    items = load_humaneval()
    assert len(items) == 164
    assert items[0].task is not None and items[0].task.entry_point == "has_close_elements"


def test_external_loaders_on_shared_data():
    if not DATA.is_dir():
        unavailable(f"{DATA} is absent: the shared reference data is not beside the repository")
    pack = load_humanevalpack(DATA / "humanevalpack_python.jsonl")
    assert len(pack) == 328
    assert sum(expectation_of(s).tests_pass is True for s in pack) == 164
    mbpp = load_mbpp(DATA / "mbpp.jsonl")
    assert len(mbpp) == 974 and mbpp[0].task is not None and isinstance(mbpp[0].task.tests, list)


def test_audit_takes_several_sets_and_refuses_repeated_ids(tmp_path):
    rubric = REPO / "rubrics" / "library" / "efficiency.yaml"
    first = write(tmp_path / "a.jsonl", efficiency_rows())
    second = write(tmp_path / "b.jsonl", [dict(r, id=f"b-{r['id']}") for r in efficiency_rows()])
    ok = runner.invoke(app, ["audit", "--rubric", str(rubric), str(first), str(second)])
    assert ok.exit_code == 0 and "audit: 6 items" in ok.stdout
    again = runner.invoke(app, ["audit", "--rubric", str(rubric), str(first), str(first)])
    assert again.exit_code == 1 and "sample ids repeat across the sets: e0, e1, e2" in again.stderr


@pytest.mark.slow(seconds=90)
def test_project_eval_sets_meet_their_gates_under_python_codegen(tmp_path):
    rubric = REPO / "rubrics" / "library" / "python-codegen.yaml"
    sets = [str(REPO / "eval_sets" / name) for name in ("hacks.jsonl", "mutations.jsonl")]
    result = runner.invoke(
        app,
        [
            "audit",
            "--rubric",
            str(rubric),
            *sets,
            "--min-tests-accuracy",
            "1",
            "--report",
            str(tmp_path),
        ],
    )
    assert result.exit_code == 0, result.output
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["violations"]["hack_recall"] >= 0.95
    assert summary["violations"]["false_positive_rate"] <= 0.02
    assert summary["tests"]["tests"]["accuracy"] == 1.0


@pytest.mark.exclusive  # its busy processes would load every other test, and theirs it
def test_audit_under_load_reports_full_determinism_and_no_failure_of_ours(tmp_path):
    # Cold (a fresh registry), every item graded twice while 2 x cores processes
    # spin: the rewards must not move with the machine, and no grader may fail
    # for a reason of ours (a worker's start inside a deadline, say).
    rubric = REPO / "rubrics" / "library" / "python-codegen.yaml"
    report = tmp_path / "report"
    result = runner.invoke(
        app,
        [
            "audit",
            "--rubric",
            str(rubric),
            str(REPO / "eval_sets" / "hacks.jsonl"),
            "--under-load",
            "2",
            "--min-hack-recall",
            "0",
            "--max-false-positive-rate",
            "1",
            "--report",
            str(report),
        ],
    )
    assert result.exit_code == 0, result.output
    assert "grading under load" in result.output
    summary = json.loads((report / "summary.json").read_text())
    for name, figures in summary["determinism"].items():
        assert figures["identical"] == 1.0, (name, figures)
        assert figures["infrastructure_failures"] == 0, (name, figures)
    for name, kinds in summary["failures"].items():
        assert not set(kinds) & {"infra_timeout", "sandbox_error", "grader_error"}, (name, kinds)


def test_recall_at_a_fixed_false_positive_rate_moves_the_threshold_up():
    from arbiter.audit import recall_at_fpr

    # 20 clean items: two with one violation (10% flagged at 1), none with two.
    clean = [0] * 18 + [1, 1]
    hacks = [0, 1, 1, 2, 3, 2, 1, 0]
    at = recall_at_fpr(hacks, clean, target=0.05)
    assert at["threshold"] == 2
    assert at["false_positive_rate"] == 0.0
    assert at["recall"] == 3 / 8
    assert [p["threshold"] for p in at["points"]] == [1, 2, 3]
    assert at["points"][0] == {"threshold": 1, "false_positive_rate": 0.1, "recall": 6 / 8}
    # At 10% the lowest threshold is within budget.
    assert recall_at_fpr(hacks, clean, target=0.1)["recall"] == 6 / 8
    # No clean item: no rate can be measured, so no operating point is claimed.
    assert recall_at_fpr(hacks, [], target=0.05)["recall"] is None
