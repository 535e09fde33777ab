"""Feedback a policy can revise from: what failed and why, about the visible tests only.

:func:`feedback` turns a ``unit_tests`` grading's details into
``details["feedback"]``, the part of a reward a trainer may show the policy
in its next turn:

- ``passed`` and ``total``: the visible tests;
- ``tests``: each visible test that did not pass, with its ``id`` (``line N``,
  ``case N`` or the test's name), its ``outcome``, the exception's type and the
  first line of its message (a failed comparison's: ``got 3, expected 4``), and
  the test's own source where the task has one;
- ``compile``: a compiled candidate's first diagnostics, the compiler's own
  snippet lines left out (they quote the generated program, not the
  candidate's code);
- ``tests_output``: what a compiled task's own tests printed (a failed
  assertion's text), when no visible test is held out;
- ``stderr_tail``: the end of what the candidate wrote to stderr, with the
  sandbox's own frames left out of a traceback;
- ``summary``: all of it as plain text, cut at ``max_bytes`` (UTF-8). Its
  counts line (``3 of 4 tests failed:``, ``All 4 tests passed.``) comes before
  anything the candidate wrote, and every line the candidate controls is
  indented, so a reader of the summary (the process grader) cannot be handed a
  forged count.

**Hidden stays hidden.** It is built from the visible record alone
(``details["tests"]``, the diagnostics, the candidate's streams): a hidden
case's outcome never enters that record (``details["hidden"]`` holds counts,
and is not read here), a repository's tests are hidden by construction (only
counts are given), and ``named`` held-out visible tests (a rubric's
``feedback_tests``) are counted, never named or quoted.
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ["feedback"]

#: A compiler's snippet and caret lines (``   14 | code`` and ``      |   ^``).
_SNIPPET = re.compile(r"^\s*\d*\s*\|")
#: Frames of the sandbox's own code in a traceback (the template that ran the script).
_OURS = re.compile(r'^\s*File "<sandbox [^">]*>"')
MAX_COMPILE_LINES = 12
MAX_TESTS = 20
TAIL_CHARS = 1000


def _first_line(text: str, limit: int = 300) -> str:
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line[:limit]


#: A frame of the candidate's own code, as the trusted side appends it to an error.
_FRAME = re.compile(r'^  File "solution\.py", line (\d+), in (\S{1,100})$', re.M)


def _error(text: str) -> tuple[str, str]:
    """``Type: message`` as (type, first line of the message)."""
    head = _first_line(text)
    kind, sep, message = head.partition(": ")
    if sep and re.fullmatch(r"[A-Za-z_][\w.]*", kind):
        return kind, message
    return "", head


def _stderr_tail(text: str) -> str:
    lines = text.splitlines()
    kept = []
    skip_next = False
    for line in lines:
        if skip_next and line.startswith("    "):
            skip_next = False
            continue
        skip_next = bool(_OURS.match(line))
        if not skip_next:
            kept.append(line)
    tail = "\n".join(kept)
    return tail[-TAIL_CHARS:]


def _diagnostics(text: str) -> list[str]:
    lines = [line for line in text.splitlines() if line.strip() and not _SNIPPET.match(line)]
    return lines[:MAX_COMPILE_LINES]


#: pytest's short test summary line: ``FAILED tests/test_x.py::test_y - assert 0 == -2``.
_PYTEST_LINE = re.compile(r"^(?:FAILED|ERROR) (?:tests/)?(\S+::\S+)(?: - (.*))?$")


def _pytest_summary(text: object) -> dict[str, str]:
    """Node id -> what pytest's short summary said of its failure (``assert 0 == -2``)."""
    if not isinstance(text, str):
        return {}
    said = {}
    for line in text.splitlines():
        found = _PYTEST_LINE.match(line.strip())
        if found:
            said[found.group(1)] = (found.group(2) or "").strip()
    return said


def _test_id(entry: dict[str, Any], at: int) -> str:
    if isinstance(entry.get("line"), int):
        return f"line {entry['line']}"
    if isinstance(entry.get("case"), int):
        return f"case {entry['case']}"
    for key in ("nodeid", "name", "id"):
        if isinstance(entry.get(key), str):
            return str(entry[key])
    return f"test {at + 1}"


def feedback(
    details: dict[str, Any],
    *,
    repository: bool = False,
    named: int | None = None,
    max_bytes: int = 2048,
    message: str = "",
) -> dict[str, Any]:
    """The policy-facing feedback of one grading (see the module docstring).

    ``named``: how many visible tests, in order, may be named and quoted (None:
    all); the rest are held out and counted. ``message``: a failure's own
    message (a syntax error, no code), when the grading ended before any test.
    """
    out: dict[str, Any] = {}
    passed, total = details.get("passed"), details.get("total")
    if isinstance(passed, int) and isinstance(total, int):
        out["passed"], out["total"] = passed, total
    lines: list[str] = []
    if repository:
        # The repository's tests are hidden: how many, never which.
        if isinstance(passed, int) and isinstance(total, int):
            lines.append(f"{total - passed} of {total} hidden tests failed.")
        if message:
            lines.append(_first_line(message))
        return _with_summary(out, lines, max_bytes)
    diagnostics = details.get("diagnostics")
    if isinstance(diagnostics, str) and diagnostics:
        out["compile"] = _diagnostics(diagnostics)
        lines.append("The program does not compile:")
        lines.extend(f"  {line}" for line in out["compile"])
    elif message and not details.get("tests"):
        lines.append(_first_line(message))
    entries = details.get("tests")
    if isinstance(entries, dict):
        # pytest: node id -> outcome, and pytest's own short summary of each failure.
        said = _pytest_summary(details.get("stdout_tail"))
        entries = [
            {"nodeid": nodeid, "outcome": outcome, "error": said.get(nodeid, "")}
            for nodeid, outcome in entries.items()
        ]
    failing: list[dict[str, Any]] = []
    held_out = 0
    if isinstance(entries, list):
        for at, entry in enumerate(entries):
            if not isinstance(entry, dict) or entry.get("outcome") == "passed":
                continue
            if named is not None and at >= named:
                held_out += 1
                continue
            kind, text = _error(str(entry.get("error") or ""))
            item: dict[str, Any] = {"id": _test_id(entry, at), "outcome": entry.get("outcome")}
            frames = _FRAME.findall(str(entry.get("error") or ""))
            if frames:
                # The candidate's own frames the error came through, innermost last.
                item["traceback"] = [f"solution.py, line {n}, in {f}" for n, f in frames][-3:]
            if isinstance(entry.get("source"), str):
                item["test"] = entry["source"][:300]
            stderr = entry.get("stderr_tail")
            if isinstance(stderr, str) and stderr.strip():
                item["stderr_tail"] = _stderr_tail(stderr)[-300:]
                if not kind and not text:
                    # A program's own traceback ends with the exception it died of.
                    kind, text = _error(stderr.strip().splitlines()[-1])
            if kind:
                item["error_type"] = kind
            if text:
                item["message"] = text
            failing.append(item)
    counted = False
    if isinstance(passed, int) and isinstance(total, int) and total > 0:
        # The counts first: a reader of the summary takes the first such line.
        counted = True
        if passed == total:
            lines.append(f"All {total} tests passed.")
        else:
            lines.append(f"{total - passed} of {total} tests failed:")
    if failing or held_out:
        out["tests"] = failing[:MAX_TESTS]
        if not counted:
            lines.append(f"{len(failing) + held_out} tests failed:")
        for item in failing[:MAX_TESTS]:
            what = f"  {item['id']}: {item['outcome']}"
            if "test" in item:
                what += f" in `{item['test']}`"
            parts = [str(item[k]) for k in ("error_type", "message") if item.get(k)]
            if parts:
                what += ": " + ": ".join(parts)
            lines.append(what)
            lines.extend(f"      at {frame}" for frame in item.get("traceback", ()))
        if held_out:
            out["held_out_failed"] = held_out
            lines.append(f"  and {held_out} held-out tests.")
    harness = details.get("harness_output_tail")
    if isinstance(harness, str) and harness.strip():
        if named is None:
            # What a compiled task's own tests printed (a failed assertion's text): they
            # are the visible tests, quoted only when none is held out.
            out["tests_output"] = harness[-TAIL_CHARS:]
            lines.append("The tests said:")
            lines.extend(_indented(out["tests_output"]))
        else:
            # One test program holds every test: what it printed may quote a held-out one.
            out["tests_output_held_back"] = True
            lines.append("  (what the tests printed is held back: some of them are held out)")
    # What the program printed over the whole run: it may quote a held-out test's
    # arguments, so it is shown only when every test may be.
    stdout = details.get("stdout_tail")
    if named is None and isinstance(stdout, str) and stdout.strip() and (failing or message):
        out["stdout_tail"] = stdout[-TAIL_CHARS:]
        lines.append("stdout:")
        lines.extend(_indented(out["stdout_tail"]))
    stderr = details.get("stderr_tail")
    if named is None and isinstance(stderr, str) and stderr.strip():
        out["stderr_tail"] = _stderr_tail(stderr)
        lines.append("stderr:")
        lines.extend(_indented(out["stderr_tail"]))
    return _with_summary(out, lines, max_bytes)


def _indented(text: str) -> list[str]:
    """Indent each line of text the candidate controls.

    None can pass for a line of ours (``All 4 tests passed.`` printed to stderr must not read
    as the verdict).
    """
    return [f"    {line}" for line in text.splitlines()]


def _with_summary(out: dict[str, Any], lines: list[str], max_bytes: int) -> dict[str, Any]:
    text = "\n".join(lines)
    data = text.encode("utf-8")
    if len(data) > max_bytes:
        text = data[: max(0, max_bytes - 4)].decode("utf-8", "ignore") + " ..."
    out["summary"] = text
    return out
