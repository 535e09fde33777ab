"""The verdict of one repository run, made on the trusted side from what crossed (pure).

What crosses is the reporter's lines (written beside the candidate's code, so
believed only where they agree with everything else) and the supervisor's
own observations (the runner's exit status, signal, CPU time, how the run
ended), which the candidate's code cannot write. A run is believed only if:

- it started and ended: a ``start`` line, an ``end`` line, and an exit status
  that agrees with the end line and with the tests (pytest exits 1 whenever a
  test failed; the must-fail tripwires always fail, so an honest run's status
  is 1: a 0 is a forged exit);
- every tripwire is where it must be: a must-fail one failed (never passed,
  skipped, xfailed or missing), a must-pass one run (never skipped, xfailed or
  missing), unless its file failed to collect;
- no test is reported twice.

Otherwise it is a forgery: score 0 and a ``verdict_forgery`` violation. A
fail-to-pass test that is missing, skipped, xfailed, errors or crashes has
failed; so has a pass-to-pass test that no longer passes.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from arbiter.graders.repository.tripwires import Tripwire

__all__ = ["Reported", "Verdict", "decide", "read_results", "score_repository"]

#: Outcomes the reporter may send; anything else is read as garbled.
_OUTCOMES = frozenset({"passed", "failed", "error", "skipped", "xfailed", "xpassed", "crashed"})
#: The most lines read from a run (the supervisor caps the bytes as well).
_MAX_LINES = 200_000


@dataclass
class Reported:
    """What the reporter's lines say, read strictly."""

    started: bool = False
    end_exit: int | None = None
    tests: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    collect_errors: dict[str, str | None] = field(default_factory=dict)
    garbled: int = 0


def read_results(text: str) -> Reported:
    """Read the reporter's JSON lines; what does not fit its grammar is counted, not believed."""
    out = Reported()
    for n, line in enumerate(text.splitlines()):
        if n >= _MAX_LINES:
            out.garbled += 1
            break
        try:
            item = json.loads(line)
        except ValueError:
            out.garbled += 1
            continue
        if not isinstance(item, dict):
            out.garbled += 1
            continue
        kind = item.get("t")
        if kind == "start":
            out.started = True
        elif kind == "end" and type(item.get("exit")) is int:
            out.end_exit = item["exit"]
        elif (
            kind == "test" and isinstance(item.get("id"), str) and item.get("outcome") in _OUTCOMES
        ):
            error = item.get("error")
            out.tests.setdefault(item["id"], []).append(
                {
                    "outcome": item["outcome"],
                    "error": error[:200] if isinstance(error, str) else None,
                    "duration_s": float(item["duration_s"])
                    if isinstance(item.get("duration_s"), int | float)
                    else 0.0,
                }
            )
        elif kind == "collect_error" and isinstance(item.get("id"), str):
            error = item.get("error")
            out.collect_errors[item["id"]] = error[:200] if isinstance(error, str) else None
        else:
            out.garbled += 1
    return out


def _file_of(nodeid: str) -> str:
    return nodeid.split("::", 1)[0]


def score_repository(
    f2p_passed: int, f2p_total: int, p2p_broken: int, *, partial_credit: bool
) -> float:
    """Score a run (pure): 1.0 when everything passes; partial credit is the fail-to-pass fraction.

    Any broken pass-to-pass test scores 0 either way: a fix that breaks what
    worked is not partly a fix.
    """
    if f2p_total <= 0 or p2p_broken > 0:
        return 0.0
    if partial_credit:
        return f2p_passed / f2p_total
    return 1.0 if f2p_passed == f2p_total else 0.0


@dataclass(frozen=True)
class Verdict:
    """The trusted side's reading of one run."""

    score: float
    #: The candidate's failure, when the run itself failed (None: the tests decided).
    failure_kind: str | None
    message: str
    #: Each fail-to-pass and pass-to-pass test: its outcome and its error's type.
    outcomes: dict[str, dict[str, Any]]
    forgery: tuple[str, ...] = ()
    resolved: bool = False
    tests_s: float = 0.0


def _outcome(nodeid: str, reported: Reported) -> dict[str, Any]:
    seen = reported.tests.get(nodeid)
    if seen:
        return dict(seen[-1])
    if _file_of(nodeid) in reported.collect_errors or any(
        nodeid.startswith(k + "::") for k in reported.collect_errors
    ):
        return {"outcome": "collect_error", "error": reported.collect_errors.get(_file_of(nodeid))}
    return {"outcome": "missing", "error": None}


def _forgeries(
    reported: Reported, run: Mapping[str, Any], tripwires: Iterable[Tripwire]
) -> list[str]:
    found: list[str] = []
    twice = sorted(k for k, v in reported.tests.items() if len(v) > 1)
    if twice:
        found.append(f"{len(twice)} test(s) reported more than once")
    # A run killed or ended early (a crash, a seccomp kill) lost its tripwires with
    # every other test: that is the candidate's failure, not a forgery. A session
    # that says it ended, or a process that says it succeeded, must account for all.
    completed = reported.end_exit is not None or run.get("exit_code") == 0
    for wire in tripwires:
        got = _outcome(wire.nodeid, reported)["outcome"]
        if got == "collect_error" or (got == "missing" and not completed):
            continue
        if wire.must_pass and got in ("missing", "skipped", "xfailed"):
            # Not run: deselected, skipped or turned into an expected failure. (One
            # that fails or errors ran beside broken code: that is no pass to forge.)
            found.append(f"a must-pass tripwire was reported {got}")
        elif not wire.must_pass and got in ("passed", "xpassed", "missing", "skipped", "xfailed"):
            found.append(f"a must-fail tripwire was reported {got}")
    exit_code = run.get("exit_code")
    if exit_code == 0 and reported.end_exit != 0 and reported.end_exit is not None:
        found.append("the process exited 0 while pytest's session ended with failures")
    if exit_code == 0 and (not reported.started or reported.end_exit is None):
        found.append("the process exited 0 without the session's end")
    if reported.end_exit == 0 and any(not w.must_pass for w in tripwires):
        found.append("the session reported success although tripwires must fail")
    if reported.end_exit is not None and exit_code is not None and reported.end_exit != exit_code:
        found.append(f"pytest said {reported.end_exit} but the process exited {exit_code}")
    return found


def decide(
    reported: Reported,
    run: Mapping[str, Any],
    fail_to_pass: list[str],
    pass_to_pass: list[str],
    tripwires: list[Tripwire],
    *,
    partial_credit: bool,
) -> Verdict:
    """Turn one run into a score, the candidate's failure if any, and each test's outcome."""
    outcomes = {nid: _outcome(nid, reported) for nid in [*fail_to_pass, *pass_to_pass]}
    tests_s = sum(o.get("duration_s", 0.0) for o in outcomes.values())
    ended_by = run.get("ended_by")
    if ended_by == "deadline":
        return Verdict(0.0, "timeout", "the tests ran out of time with the patch", outcomes)
    if ended_by == "result_limit":
        return Verdict(0.0, "output_limit", "the run wrote more results than allowed", outcomes)
    forged = _forgeries(reported, run, tripwires)
    if forged:
        return Verdict(
            0.0, "verdict_forgery", "; ".join(forged), outcomes, tuple(forged), tests_s=tests_s
        )
    if any(o["outcome"] == "collect_error" for nid, o in outcomes.items() if nid in fail_to_pass):
        return Verdict(
            0.0, "collection_error", "the tests did not collect with the patch", outcomes
        )
    if not reported.started or reported.end_exit is None or run.get("exit_code") not in (0, 1):
        how = (
            f"signal {run.get('signal')}"
            if run.get("signal")
            else f"exit status {run.get('exit_code')}"
        )
        return Verdict(
            0.0, "suite_did_not_run", f"the test session did not complete ({how})", outcomes
        )
    f2p_passed = sum(outcomes[n]["outcome"] == "passed" for n in fail_to_pass)
    p2p_broken = sum(outcomes[n]["outcome"] != "passed" for n in pass_to_pass)
    score = score_repository(
        f2p_passed, len(fail_to_pass), p2p_broken, partial_credit=partial_credit
    )
    resolved = f2p_passed == len(fail_to_pass) and p2p_broken == 0
    message = (
        f"{f2p_passed}/{len(fail_to_pass)} fail-to-pass passed, "
        f"{len(pass_to_pass) - p2p_broken}/{len(pass_to_pass)} pass-to-pass still pass"
    )
    return Verdict(score, None, message, outcomes, resolved=resolved, tests_s=tests_s)
