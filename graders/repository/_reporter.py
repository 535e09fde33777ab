"""The pytest plugin that reports each test of a repository run, one JSON line each.

Loaded by the runner from its file, outside the workspace (never found on the
workspace's path, never by entry point: plugin autoload is off), and handed to
``pytest.main`` as an object. It writes to descriptor 3, a pipe the
supervisor reads; pytest's own output is never read for the verdict.

With ``isolation == "test"`` every test runs in its own child process: the
child runs the test's setup, call and teardown, writes its summary on a pipe
of its own and exits 0; the parent records the child's exit status beside
the summary. A test that exits the process early (``os._exit(0)`` in the
code under test), is killed, or exits with any other status has no summary
and is reported ``crashed``: one test's early exit cannot end the session or
speak for the tests after it.

Standard library and pytest only. Everything here runs beside the candidate's
code and can be rewritten by it: the trusted side believes none of it
unchecked (see :mod:`arbiter.graders.repository.verdict`).
"""

from __future__ import annotations

import json
import os
from typing import Any

import pytest
from _pytest.runner import runtestprotocol

__all__ = ["Reporter", "summarize"]

#: The longest message kept per test (the verdict reads only the exception's type).
_MESSAGE_CHARS = 300


def _error_type(report: Any) -> str | None:
    crash = getattr(getattr(report, "longrepr", None), "reprcrash", None)
    message = getattr(crash, "message", None)
    if isinstance(message, str):
        return message.split(":", 1)[0].strip()[:_MESSAGE_CHARS]
    if report.longrepr is not None:
        return "error"
    return None


def summarize(reports: list[Any]) -> dict[str, Any]:
    """One test's outcome from its phase reports, as pytest's terminal would count it."""
    outcome = "passed"
    error = None
    duration = 0.0
    for rep in reports:
        duration += float(getattr(rep, "duration", 0.0))
        wasxfail = hasattr(rep, "wasxfail")
        if rep.when == "call":
            if rep.passed:
                outcome = "xpassed" if wasxfail else "passed"
            elif rep.skipped:
                outcome = "xfailed" if wasxfail else "skipped"
            else:
                outcome, error = "failed", _error_type(rep)
        elif rep.failed:
            outcome, error = "error", _error_type(rep)
            break
        elif rep.skipped and rep.when == "setup":
            outcome = "xfailed" if wasxfail else "skipped"
            break
    return {"outcome": outcome, "error": error, "duration_s": duration}


def _crash_report(item: Any, code: int) -> Any:
    """A failed call report for a test whose child ended without its reports."""
    from _pytest.reports import TestReport

    how = f"signal {-code}" if code < 0 else f"exit status {code}"
    return TestReport(
        item.nodeid,
        item.location,
        {},
        "failed",
        f"the test's process ended with {how} before reporting",
        "call",
    )


def _failed_part(item: Any, error: str | None) -> Any:
    """A failed call report for a failed part (a subtest) of a test, for pytest's tally."""
    from _pytest.reports import TestReport

    return TestReport(
        item.nodeid, item.location, {}, "failed", f"a subtest failed ({error})", "call"
    )


class Reporter:
    """Writes ``start``, one ``test`` per test, ``collect_error`` and ``end`` lines to ``fd``."""

    def __init__(self, fd: int, isolation: str) -> None:
        self.fd = fd
        self.isolation = isolation
        #: Reports logged while a test runs in this process (None: not capturing).
        self._capture: list[Any] | None = None
        self._send({"t": "start", "pid": os.getpid()})

    def _send(self, message: dict[str, Any]) -> None:
        data = (json.dumps(message) + "\n").encode()
        while data:
            data = data[os.write(self.fd, data) :]

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_protocol(self, item: Any, nextitem: Any) -> bool:
        """Run one test (in a child of its own, with isolation ``test``) and report it."""
        item.ihook.pytest_runtest_logstart(nodeid=item.nodeid, location=item.location)
        if self.isolation == "test":
            reports, failed_parts, status = self._forked(item)
        else:
            reports, extra = self._run_here(item, nextitem)
            failed_parts, status = [_error_type(x) for x in extra if x.failed], 0
        # Logged in this process too, so that pytest's own tally and exit status
        # count them (the verdict checks that they agree).
        for report in [*reports, *(_failed_part(item, e) for e in failed_parts)]:
            item.ihook.pytest_runtest_logreport(report=report)
        item.ihook.pytest_runtest_logfinish(nodeid=item.nodeid, location=item.location)
        result = summarize(reports) if reports else {"outcome": "crashed", "error": None}
        if failed_parts and result["outcome"] in ("passed", "xpassed", "skipped"):
            # A failed subtest (unittest's subTest) fails its test, whatever the
            # test's own call report says.
            result = {**result, "outcome": "failed", "error": failed_parts[0]}
        if status != 0:
            result = {"outcome": "crashed", "error": None, "duration_s": 0.0}
        self._send({"t": "test", "id": item.nodeid, **result, "status": status})
        return True

    def _run_here(self, item: Any, nextitem: Any) -> tuple[list[Any], list[Any]]:
        """Run the test's phases here; return their reports and those logged besides.

        Besides: reports a plugin logs on its own while the test runs, as
        pytest's subtests do for each ``subTest`` that fails.
        """
        self._capture = []
        try:
            reports = runtestprotocol(item, log=False, nextitem=nextitem)
        finally:
            extra, self._capture = self._capture, None
        return reports, extra

    def pytest_runtest_logreport(self, report: Any) -> None:
        """Keep what is logged while a test runs here (its subtests' reports)."""
        if self._capture is not None:
            self._capture.append(report)

    def _forked(self, item: Any) -> tuple[list[Any], list[str | None], int]:
        """Run the test in a child; its phase reports, its failed parts, its exit status."""
        hook = item.config.hook
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(r)
            status = 0
            try:
                reports, extra = self._run_here(item, None)
                data = {
                    "reports": [
                        hook.pytest_report_to_serializable(config=item.config, report=x)
                        for x in reports
                    ],
                    "failed_parts": [_error_type(x) for x in extra if x.failed],
                }
                raw = json.dumps(data).encode()
                while raw:
                    raw = raw[os.write(w, raw) :]
            except BaseException:
                status = 3
            os._exit(status)
        os.close(w)
        chunks = []
        while True:
            chunk = os.read(r, 1 << 16)
            if not chunk:
                break
            chunks.append(chunk)
        os.close(r)
        _, wait_status = os.waitpid(pid, 0)
        code = os.waitstatus_to_exitcode(wait_status)
        failed_parts: list[str | None] = []
        try:
            data = json.loads(b"".join(chunks))
            reports = [
                hook.pytest_report_from_serializable(config=item.config, data=x)
                for x in data["reports"]
            ]
            failed_parts = [e if isinstance(e, str) else None for e in data["failed_parts"]]
        except (ValueError, TypeError, KeyError, AttributeError):
            reports = []
        if code != 0 or not reports:
            reports = [_crash_report(item, code)]
        return reports, failed_parts, code

    def pytest_collectreport(self, report: Any) -> None:
        """Report a file or class that failed to collect."""
        if report.failed:
            self._send({"t": "collect_error", "id": report.nodeid, "error": _error_type(report)})

    def finish(self, exit_code: int) -> None:
        """Say the session ended, with pytest's exit status."""
        self._send({"t": "end", "exit": exit_code})
