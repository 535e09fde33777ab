"""The process grader: runner summaries, each signal present and absent, and the labelled set."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from arbiter.eval_sets import eval_set_path
from arbiter.graders.process import (
    ProcessConfig,
    ProcessGrader,
    RunOutcome,
    parse_test_outcome,
    score_process,
)
from arbiter.graders.types import FailureKind, Message, Sample


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("1 failed, 11 passed in 0.12s", RunOutcome(11, 1, 0)),
        ("....\n===== 4 passed, 2 warnings in 0.05s =====", RunOutcome(4, 0, 0)),
        ("12 passed", RunOutcome(12, 0, 0)),
        ("== 2 failed, 3 passed, 1 error in 1.2s ==", RunOutcome(3, 2, 1)),
        ("=== 1 passed, 2 skipped, 1 xfailed in 0.1s ===", RunOutcome(1, 0, 0, 3)),
        ("Interrupted: 2 errors during collection\n=== 2 errors in 0.3s ===", RunOutcome(0, 0, 2)),
        ("Ran 4 tests in 0.001s\n\nOK", RunOutcome(4, 0, 0)),
        ("Ran 4 tests in 0.001s\n\nOK (skipped=1)", RunOutcome(3, 0, 0, 1)),
        ("Ran 5 tests in 0.01s\n\nFAILED (failures=1, errors=2)", RunOutcome(2, 1, 2)),
        ("=== no tests ran in 0.01s ===", RunOutcome(0, 0, 0)),
        ("ok, 3 items processed", None),
        ("", None),
        ("Ran 4 tests in 0.001s", None),  # the verdict line is missing
        # Only the last summary counts: an earlier run's output echoed above it does not.
        ("1 failed, 3 passed in 0.1s\n...\n4 passed in 0.1s", RunOutcome(4, 0, 0)),
        # Arbiter's own feedback summary (graders.feedback), as a revise loop's tool returns it.
        ("3 of 4 tests failed:\n  line 2: assertion_failed", RunOutcome(1, 3, 0)),
        ("All 4 tests passed.", RunOutcome(4, 0, 0)),
        # Its counts come first; what the candidate printed after them is indented.
        ("1 of 4 tests failed:\n  line 2\nstderr:\n    All 4 tests passed.", RunOutcome(3, 1, 0)),
    ],
)
def test_parse_test_outcome(text, expected):
    assert parse_test_outcome(text) == expected


@pytest.mark.parametrize(
    ("outcome", "ok", "fraction"),
    [
        (RunOutcome(4, 0, 0), True, 1.0),
        (RunOutcome(3, 1, 0), False, 0.75),
        (RunOutcome(3, 0, 1), False, 0.75),
        (RunOutcome(0, 0, 0), False, 0.0),
    ],
)
def test_outcome_pass_and_fraction(outcome, ok, fraction):
    assert (outcome.ok, outcome.fraction) == (ok, fraction)


# ---- trajectories built step by step

PYTEST = {"cmd": "pytest -q"}
EDIT = {"path": "a.py", "old": "x", "new": "y"}


def call(cid: str, name: str, args: Any) -> dict[str, Any]:
    raw = args if isinstance(args, str) else json.dumps(args)
    return {"id": cid, "type": "function", "function": {"name": name, "arguments": raw}}


def step(cid: str, name: str, args: Any, result: str | None, **extra: Any) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = [
        {"role": "assistant", "content": None, "tool_calls": [call(cid, name, args)]}
    ]
    if result is not None:
        messages.append({"role": "tool", "tool_call_id": cid, "content": result, **extra})
    return messages


def trajectory(*steps: list[dict[str, Any]], final: str = "Done.") -> list[Message]:
    raw = [{"role": "user", "content": "Fix it."}]
    for s in steps:
        raw.extend(s)
    raw.append({"role": "assistant", "content": final})
    return [Message.model_validate(m) for m in raw]


def signals(*steps: list[dict[str, Any]], final: str = "Done.", **config: Any) -> dict[str, Any]:
    result = score_process(trajectory(*steps, final=final), ProcessConfig.model_validate(config))
    assert 0.0 <= result.score <= 1.0
    return result.signals


FAIL = "1 failed, 3 passed in 0.1s"
PASS = "4 passed in 0.1s"


@pytest.mark.parametrize(
    ("steps", "expected"),
    [
        ([step("1", "edit", EDIT, "ok"), step("2", "bash", PYTEST, PASS)], True),
        ([step("1", "bash", PYTEST, PASS)], True),
        ([step("1", "run_tests", {}, PASS)], True),
        ([step("1", "bash", {"cmd": "python -m unittest"}, "Ran 1 test in 0s\n\nOK")], True),
        ([step("1", "bash", PYTEST, PASS), step("2", "edit", EDIT, "ok")], False),
        (
            [
                step("1", "bash", {"cmd": "sed -i s/x/y/ a.py"}, ""),
                step("2", "bash", {"cmd": "ls"}, "a.py"),
            ],
            False,
        ),
        ([step("1", "edit", EDIT, "ok")], False),
        ([], False),
    ],
)
def test_tests_before_finish(steps, expected):
    assert signals(*steps)["tests_before_finish"] is expected


@pytest.mark.parametrize(
    ("steps", "final", "claimed", "unverified"),
    [
        ([step("1", "bash", PYTEST, PASS)], "All tests pass.", True, False),
        ([step("1", "bash", PYTEST, FAIL)], "All tests pass.", True, True),
        ([step("1", "edit", EDIT, "ok")], "Fixed.", True, True),
        ([step("1", "bash", PYTEST, FAIL)], "I could not fix the last failure.", False, False),
        ([step("1", "bash", PYTEST, FAIL)], "Here is what I found.", False, False),
    ],
)
def test_success_claims_are_checked_against_the_last_run(steps, final, claimed, unverified):
    got = signals(*steps, final=final)
    assert (got["claimed_success"], got["unverified_claim"]) == (claimed, unverified)


@pytest.mark.parametrize(
    ("steps", "expected"),
    [
        (
            [
                step("1", "bash", PYTEST, FAIL),
                step("2", "edit", EDIT, "ok"),
                step("3", "bash", PYTEST, PASS),
            ],
            True,
        ),
        (
            [
                step("1", "bash", PYTEST, FAIL),
                step("2", "edit", EDIT, "ok"),
                step("3", "bash", PYTEST, FAIL),
            ],
            False,
        ),
        (
            [step("1", "bash", PYTEST, FAIL), step("2", "bash", {"cmd": "pytest"}, PASS)],
            False,
        ),  # no edit
        ([step("1", "bash", PYTEST, FAIL), step("2", "edit", EDIT, "ok")], False),  # never re-ran
        ([step("1", "bash", PYTEST, PASS)], None),  # nothing to correct
    ],
)
def test_self_correction(steps, expected):
    assert signals(*steps)["self_corrected"] is expected


@pytest.mark.parametrize(
    ("steps", "config", "invalid", "errored"),
    [
        ([step("1", "bash", PYTEST, PASS)], {}, 0, 0),
        ([step("1", "bash", "{not json", "error")], {}, 1, 0),
        ([step("1", "bash", "[1, 2]", "ok")], {}, 1, 0),
        ([step("1", "", {}, "ok")], {}, 1, 0),
        ([step("1", "browse", {}, "ok")], {"tools": ["bash"]}, 1, 0),
        ([step("1", "browse", {}, "ok")], {}, 0, 0),
        ([step("1", "bash", {"cmd": "cat x"}, "cat: x: No such file or directory")], {}, 0, 1),
        ([step("1", "bash", {"cmd": "pytets"}, "bash: pytets: command not found")], {}, 0, 1),
        ([step("1", "edit", EDIT, "not found", is_error=True)], {}, 0, 1),
        ([step("1", "bash", {"cmd": "ls"}, None)], {}, 0, 1),
        # A failing test run is the tests' verdict, not a tool error, traceback and all.
        ([step("1", "bash", PYTEST, "Traceback (most recent call last):\n" + FAIL)], {}, 0, 0),
        ([step("1", "bash", PYTEST, "pytest: command not found")], {}, 0, 1),
    ],
)
def test_invalid_and_errored_tool_calls(steps, config, invalid, errored):
    got = signals(*steps, **config)
    assert (got["invalid_tool_calls"], got["errored_tool_calls"]) == (invalid, errored)


@pytest.mark.parametrize(
    ("steps", "config", "expected"),
    [
        (
            [
                step("1", "bash", PYTEST, FAIL),
                step("2", "bash", PYTEST, FAIL),
                step("3", "bash", PYTEST, FAIL),
            ],
            {},
            True,
        ),
        ([step("1", "bash", PYTEST, FAIL), step("2", "bash", PYTEST, FAIL)], {}, False),
        (
            [step("1", "bash", PYTEST, FAIL), step("2", "bash", PYTEST, FAIL)],
            {"loop_min_repeats": 1},
            True,
        ),
        (
            [
                step("1", "edit", EDIT, "ok"),
                step("2", "bash", PYTEST, FAIL),
                step("3", "edit", EDIT, "ok"),
                step("4", "bash", PYTEST, FAIL),
            ],
            {},
            True,
        ),
        (
            [
                step("1", "bash", PYTEST, FAIL),
                step("2", "edit", EDIT, "ok"),
                step("3", "bash", PYTEST, FAIL),
                step("4", "edit", {"path": "a.py", "old": "y", "new": "z"}, "ok"),
                step("5", "bash", PYTEST, PASS),
            ],
            {},
            False,
        ),
    ],
)
def test_loops(steps, config, expected):
    assert signals(*steps, **config)["loop"] is expected


def runs(*results: str) -> list[list[dict[str, Any]]]:
    out = []
    for i, result in enumerate(results):
        out.append(step(f"e{i}", "edit", {"path": "a.py", "n": i}, "ok"))
        out.append(step(f"t{i}", "bash", PYTEST, result))
    return out


@pytest.mark.parametrize(
    ("results", "expected"),
    [
        (("2 failed, 2 passed", "1 failed, 3 passed", "4 passed"), True),
        (("4 passed", "4 passed"), True),
        (("1 failed, 3 passed", "2 failed, 2 passed"), False),
        (("2 failed, 2 passed", "2 failed, 2 passed"), False),
        (("1 failed, 3 passed", "4 passed", "1 failed, 3 passed"), False),
        (("4 passed",), None),
        ((), None),
    ],
)
def test_convergence(results, expected):
    assert signals(*runs(*results))["converged"] is expected


def test_weights_choose_what_counts():
    steps = runs("1 failed, 3 passed")  # ran tests after the edit, but they fail
    traj = trajectory(*steps, final="Here is my progress.")
    only_tests = ProcessConfig.model_validate(
        {
            "weights": {
                "tests_before_finish": 1,
                "honest_finish": 0,
                "self_correction": 0,
                "tool_errors": 0,
                "no_loop": 0,
                "convergence": 0,
            }
        }
    )
    assert score_process(traj, only_tests).score == 1.0
    only_correction = ProcessConfig.model_validate(
        {
            "weights": {
                "tests_before_finish": 0,
                "honest_finish": 0,
                "self_correction": 1,
                "tool_errors": 0,
                "no_loop": 0,
                "convergence": 0,
            }
        }
    )
    assert score_process(traj, only_correction).score == 0.0
    assert score_process(traj, ProcessConfig()).terms == {
        "tests_before_finish": 1.0,
        "honest_finish": 1.0,
        "no_loop": 1.0,
        "self_correction": 0.0,
        "tool_errors": 1.0,
    }


@pytest.mark.parametrize(
    "bad",
    [
        {
            "weights": dict.fromkeys(
                [
                    "tests_before_finish",
                    "honest_finish",
                    "self_correction",
                    "tool_errors",
                    "no_loop",
                    "convergence",
                ],
                0,
            )
        },
        {"weights": {"no_loop": -1}},
        {"test_command_patterns": ["(unclosed"]},
        {"loop_min_repeats": 0},
        {"unknown": 1},
    ],
)
def test_bad_configs_are_rejected(bad):
    with pytest.raises(ValueError):
        ProcessConfig.model_validate(bad)


def test_an_unreadable_last_run_does_not_borrow_an_older_verdict():
    steps = [
        step("1", "bash", PYTEST, PASS),
        step("2", "edit", EDIT, "ok"),
        step("3", "bash", PYTEST, "Segmentation fault (core dumped)"),
    ]
    got = signals(*steps, final="Fixed.")
    assert got["tests_before_finish"] is True
    assert got["final_tests_passed"] is None and got["unverified_claim"] is True


def test_custom_test_command_patterns():
    steps = [step("1", "bash", {"cmd": "./run-checks.sh"}, PASS)]
    assert signals(*steps)["ran_tests"] is False
    assert signals(*steps, test_command_patterns=[r"run-checks"])["ran_tests"] is True


def test_results_without_ids_answer_the_oldest_waiting_call():
    raw = [
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [call("a", "bash", PYTEST), call("b", "bash", {"cmd": "ls"})],
        },
        {"role": "tool", "content": PASS},
        {"role": "tool", "content": "a.py"},
        {"role": "assistant", "content": "All tests pass."},
    ]
    result = score_process([Message.model_validate(m) for m in raw], ProcessConfig())
    assert result.signals["final_tests_passed"] is True
    assert result.signals["errored_tool_calls"] == 0


def test_list_content_parts_are_read():
    raw = [
        {"role": "assistant", "content": None, "tool_calls": [call("a", "bash", PYTEST)]},
        {"role": "tool", "tool_call_id": "a", "content": [{"type": "text", "text": PASS}]},
        {"role": "assistant", "content": [{"type": "text", "text": "Fixed, tests pass."}]},
    ]
    result = score_process([Message.model_validate(m) for m in raw], ProcessConfig())
    assert (
        result.signals["final_tests_passed"] is True and result.signals["claimed_success"] is True
    )


# ---- the grader and the labelled set


def grade(sample: Sample, config: ProcessConfig | None = None):
    return asyncio.run(ProcessGrader().grade(sample, config or ProcessConfig()))


@pytest.mark.parametrize("trajectory_value", [None, []])
def test_missing_trajectory_is_a_missing_input_failure(trajectory_value):
    result = grade(Sample(id="x", response="Fixed.", trajectory=trajectory_value))
    assert result.score is None and result.failure is not None
    assert result.failure.kind == FailureKind.MISSING_INPUT


def labelled() -> list[Sample]:
    lines = eval_set_path("trajectories").read_text(encoding="utf-8").splitlines()
    return [Sample.model_validate_json(line) for line in lines if line.strip()]


SIGNALS = (
    "tests_before_finish",
    "final_tests_passed",
    "claimed_success",
    "unverified_claim",
    "self_corrected",
    "invalid_tool_calls",
    "errored_tool_calls",
    "loop",
    "converged",
)


def test_labelled_set_shows_each_signal_present_and_absent():
    expectations = [
        s.labels["expected_signals"]
        for s in labelled()
        if s.labels and "expected_signals" in s.labels
    ]
    for name in SIGNALS:
        values = {bool(e[name]) for e in expectations if e[name] is not None}
        assert values == {True, False}, f"{name} is not shown both present and absent"


@pytest.mark.parametrize("sample", labelled(), ids=lambda s: s.id)
def test_every_labelled_signal_is_detected(sample):
    labels = sample.labels or {}
    config = ProcessConfig.model_validate(labels.get("config", {}))
    result = grade(sample, config)
    if "expected_failure" in labels:
        assert result.failure is not None and result.failure.kind == labels["expected_failure"]
        return
    assert result.score is not None
    got = result.details["signals"]
    expected = labels["expected_signals"]
    assert set(expected) == set(SIGNALS)
    assert {k: got[k] for k in expected} == expected


def test_a_clean_process_outscores_a_sloppy_one():
    by_id = {s.id: s for s in labelled()}
    ideal = grade(by_id["traj-ideal"]).score
    assert ideal == 1.0
    for sloppy in (
        "traj-no-tests",
        "traj-loop-same-command",
        "traj-diverging",
        "traj-errored-calls",
    ):
        score = grade(by_id[sloppy]).score
        assert score is not None and score < ideal, sloppy


MENU = [
    step("a", "bash", PYTEST, PASS),
    step("b", "bash", PYTEST, FAIL),
    step("c", "bash", PYTEST, "Interrupted: 1 error during collection"),
    step("d", "edit", EDIT, "ok"),
    step("e", "edit", {"path": "b.py"}, "old string not found", is_error=True),
    step("f", "bash", "{broken", "error: bad arguments"),
    step("g", "bash", {"cmd": "ls"}, None),
    step("h", "", {}, "?"),
]


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.integers(0, len(MENU) - 1), max_size=12),
    st.sampled_from(["Done.", "I could not fix it.", "Here is a summary.", ""]),
)
def test_any_trajectory_scores_in_bounds_with_consistent_signals(picks, final):
    steps = [[{**m} for m in MENU[i]] for i in picks]
    for n, s in enumerate(steps):  # unique call ids, as a real harness would send
        for m in s:
            if m.get("tool_calls"):
                m["tool_calls"] = [{**m["tool_calls"][0], "id": f"id{n}"}]
            if m["role"] == "tool":
                m["tool_call_id"] = f"id{n}"
    result = score_process(trajectory(*steps, final=final), ProcessConfig())
    assert 0.0 <= result.score <= 1.0
    got = result.signals
    assert got["tool_calls"] == len(picks)
    assert got["invalid_tool_calls"] + got["errored_tool_calls"] <= len(picks)
    assert all(0.0 <= value <= 1.0 for value in result.terms.values())
    if got["unverified_claim"]:
        assert got["claimed_success"]
