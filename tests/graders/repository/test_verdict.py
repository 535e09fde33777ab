"""The verdict, from the reporter's lines and the supervisor's observations (pure)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from arbiter.graders.repository.tripwires import Tripwire
from arbiter.graders.repository.verdict import decide, read_results, score_repository

F2P = ["t.py::test_fixed"]
P2P = ["t.py::test_kept"]
WIRES = [Tripwire("t.py::test_a", False), Tripwire("t.py::test_b", True)]


def _lines(*tests: tuple[str, str], end: int | None = 1, start: bool = True) -> str:
    out = [{"t": "start"}] if start else []
    out += [{"t": "test", "id": i, "outcome": o, "error": None} for i, o in tests]
    if end is not None:
        out.append({"t": "end", "exit": end})
    return "\n".join(json.dumps(x) for x in out)


HONEST = (("t.py::test_a", "failed"), ("t.py::test_b", "passed"))


def _decide(text: str, run: dict[str, Any] | None = None, *, partial: bool = True) -> Any:
    run = {"exit_code": 1, "ended_by": "exit", **(run or {})}
    return decide(read_results(text), run, F2P, P2P, WIRES, partial_credit=partial)


def test_an_honest_resolved_run_scores_one() -> None:
    v = _decide(_lines(("t.py::test_fixed", "passed"), ("t.py::test_kept", "passed"), *HONEST))
    assert (v.score, v.failure_kind, v.resolved, v.forgery) == (1.0, None, True, ())


@pytest.mark.parametrize("outcome", ["failed", "skipped", "xfailed", "xpassed", "error", "crashed"])
def test_a_fail_to_pass_test_that_does_not_pass_has_failed(outcome: str) -> None:
    v = _decide(_lines(("t.py::test_fixed", outcome), ("t.py::test_kept", "passed"), *HONEST))
    assert v.score == 0.0 and not v.resolved and v.outcomes[F2P[0]]["outcome"] == outcome


def test_a_missing_fail_to_pass_test_has_failed() -> None:
    v = _decide(_lines(("t.py::test_kept", "passed"), *HONEST))
    assert v.score == 0.0 and v.outcomes[F2P[0]]["outcome"] == "missing"


def test_a_broken_pass_to_pass_test_scores_zero_even_with_partial_credit() -> None:
    v = _decide(_lines(("t.py::test_fixed", "passed"), ("t.py::test_kept", "failed"), *HONEST))
    assert v.score == 0.0


@pytest.mark.parametrize(
    ("text", "run", "why"),
    [
        # A must-fail tripwire reported passed: pytest rewritten from inside.
        (
            _lines(
                ("t.py::test_fixed", "passed"),
                ("t.py::test_kept", "passed"),
                ("t.py::test_a", "passed"),
                ("t.py::test_b", "passed"),
                end=0,
            ),
            {"exit_code": 0},
            "must-fail tripwire was reported passed",
        ),
        # Skipped or xfailed into silence.
        (_lines(("t.py::test_a", "skipped"), ("t.py::test_b", "skipped")), {}, "reported skipped"),
        (_lines(("t.py::test_a", "xfailed"), ("t.py::test_b", "passed")), {}, "reported xfailed"),
        # Deselected.
        (_lines(("t.py::test_fixed", "passed"), ("t.py::test_kept", "passed")), {}, "missing"),
        # os._exit(0) before the session ended.
        (_lines(end=None), {"exit_code": 0}, "exited 0 without the session's end"),
        # The exit status disagrees with the session's own.
        (_lines(*HONEST, end=1), {"exit_code": 0}, "exited 0 while pytest's session ended"),
        # A test reported twice (lines forged on the reporter's descriptor).
        (
            _lines(("t.py::test_fixed", "passed"), ("t.py::test_fixed", "failed"), *HONEST),
            {},
            "more than once",
        ),
    ],
)
def test_forgeries_score_zero_and_are_named(text: str, run: dict[str, Any], why: str) -> None:
    v = _decide(text, run)
    assert v.score == 0.0 and v.failure_kind == "verdict_forgery"
    assert any(why in f for f in v.forgery), v.forgery


def test_a_must_pass_tripwire_failing_beside_broken_code_is_no_forgery() -> None:
    v = _decide(
        _lines(
            ("t.py::test_fixed", "error"),
            ("t.py::test_kept", "error"),
            ("t.py::test_a", "error"),
            ("t.py::test_b", "error"),
        )
    )
    assert v.failure_kind is None and v.score == 0.0


def test_a_collection_error_is_the_candidates() -> None:
    text = "\n".join(
        [
            json.dumps({"t": "start"}),
            json.dumps({"t": "collect_error", "id": "t.py", "error": "SyntaxError"}),
            json.dumps({"t": "end", "exit": 1}),
        ]
    )
    v = _decide(text)
    assert (v.score, v.failure_kind) == (0.0, "collection_error")


def test_a_deadline_is_the_candidates_timeout() -> None:
    v = _decide("", {"ended_by": "deadline", "exit_code": None, "signal": 9})
    assert (v.score, v.failure_kind) == (0.0, "timeout")


def test_garbage_lines_are_counted_not_believed() -> None:
    r = read_results('not json\n[1]\n{"t": "test", "id": 3, "outcome": "passed"}\n{"t": "test"}')
    assert (r.garbled, r.tests) == (4, {})


@pytest.mark.parametrize(
    ("passed", "total", "broken", "partial", "score"),
    [
        (2, 2, 0, True, 1.0),
        (1, 2, 0, True, 0.5),
        (1, 2, 0, False, 0.0),
        (2, 2, 1, True, 0.0),
        (0, 0, 0, True, 0.0),
    ],
)
def test_the_score(passed: int, total: int, broken: int, partial: bool, score: float) -> None:
    assert score_repository(passed, total, broken, partial_credit=partial) == score
