"""A pytest plugin for ``make-repo``: each test's outcome, time, and the project functions it ran.

Run by :mod:`arbiter.graders.repository.tasks` over the author's own repository
(never a candidate's code): one JSON line per test on descriptor 3, with the
qualified names of the functions of the project's source files that the test
called (``sys.setprofile``), so that a mutant of a function is tried only
against the tests that reach it.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

import pytest

__all__ = ["Tracer"]


class Tracer:
    """Writes ``{"id", "outcome", "error", "duration_s", "calls"}`` per test to ``fd``."""

    def __init__(self, fd: int, sources: list[str], trace: bool) -> None:
        self.fd = fd
        self.sources = {os.path.realpath(s): s for s in sources}
        self.trace = trace
        self._calls: set[str] = set()
        self._seen: dict[object, str | None] = {}

    def _profile(self, frame: Any, event: str, arg: Any) -> None:
        if event != "call":
            return
        code = frame.f_code
        rel = self._seen.get(code, 0)
        if rel == 0:
            path = self.sources.get(os.path.realpath(code.co_filename))
            rel = f"{path}::{code.co_qualname}" if path else None
            self._seen[code] = rel
        if rel is not None:
            self._calls.add(rel)  # type: ignore[arg-type]

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(self, item: Any, nextitem: Any) -> Any:
        """Record the functions the test reaches and its outcome."""
        self._calls = set()
        self._outcome = "passed"
        self._error: str | None = None
        self._duration = 0.0
        if self.trace:
            sys.setprofile(self._profile)
        try:
            yield
        finally:
            sys.setprofile(None)
        line = {
            "id": item.nodeid,
            "outcome": self._outcome,
            "error": self._error,
            "duration_s": self._duration,
            "calls": sorted(self._calls),
        }
        data = (json.dumps(line) + "\n").encode()
        while data:
            data = data[os.write(self.fd, data) :]

    def pytest_runtest_logreport(self, report: Any) -> None:
        """Fold each phase into the test's outcome."""
        self._duration += report.duration
        if report.failed and self._outcome == "passed":
            self._outcome = "failed" if report.when == "call" else "error"
            crash = getattr(report.longrepr, "reprcrash", None)
            message = getattr(crash, "message", "") or ""
            self._error = message.split(":", 1)[0].strip()[:200] or "error"
        elif report.skipped and self._outcome == "passed":
            self._outcome = "skipped"

    def pytest_collectreport(self, report: Any) -> None:
        """Report a file that failed to collect."""
        if report.failed:
            line = {"id": report.nodeid, "outcome": "collect_error", "calls": []}
            data = (json.dumps(line) + "\n").encode()
            while data:
                data = data[os.write(self.fd, data) :]
