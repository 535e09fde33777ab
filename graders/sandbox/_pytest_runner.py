"""Run a pytest suite inside the confined child and write a one-line report to fd 3.

This code shares its process with the candidate (the tests import it), so its
report is a claim, not a verdict: the trusted side cross-checks it (every
expected test id present, the exit status the zygote observed equal to the one
claimed, exactly one well-formed line) and treats any mismatch as tampering.
Before the candidate is imported, the runner notes the identity of the pytest
internals that in-process attacks patch; after the run it compares them, so a
patch that the attacker did not also undo is caught here as well.
"""

from __future__ import annotations

import builtins
import json
import os
import sys
from typing import Any

import _pytest.main
import _pytest.python
import _pytest.reports
import _pytest.runner
import pytest

REPORT_FD = 3

#: Hardened flags: no conftest, no ini file, no cache, no plugin autoload (env),
#: nothing above the tests directory is consulted.
FLAGS = (
    "-q",
    "-p",
    "no:cacheprovider",
    "-p",
    "no:unraisableexception",
    "-p",
    "no:threadexception",
    "--noconftest",
    "-c",
    "/dev/null",
    "--color=no",
)


def _watched() -> dict[str, Any]:
    return {
        "Function.runtest": _pytest.python.Function.runtest,
        "runner.call_and_report": _pytest.runner.call_and_report,
        "runner.pytest_runtest_call": _pytest.runner.pytest_runtest_call,
        "runner.runtestprotocol": _pytest.runner.runtestprotocol,
        "TestReport.from_item_and_call": _pytest.reports.TestReport.__dict__["from_item_and_call"],
        "main.pytest_runtestloop": _pytest.main.pytest_runtestloop,
        "pytest.main": pytest.main,
        "builtins.AssertionError": builtins.AssertionError,
        "sys.exit": sys.exit,
        "os._exit": os._exit,
    }


class Collector:
    """A plugin that records each test's outcome by node id."""

    def __init__(self) -> None:
        self.outcomes: dict[str, str] = {}
        self.collect_errors: list[str] = []
        self.collected = 0

    def pytest_collectreport(self, report: Any) -> None:
        if report.failed:
            self.collect_errors.append(str(report.nodeid))

    def pytest_collection_modifyitems(self, items: list[Any]) -> None:
        self.collected = len(items)

    def pytest_runtest_logreport(self, report: Any) -> None:
        nodeid = str(report.nodeid)
        previous = self.outcomes.get(nodeid)
        if report.failed:
            self.outcomes[nodeid] = "failed"
        elif report.skipped and previous is None:
            self.outcomes[nodeid] = "skipped"
        elif report.when == "call" and report.passed and previous is None:
            self.outcomes[nodeid] = "passed"


def main(tests_dir: str, work_dir: str, nonce: str) -> int:
    """Run the suite; return pytest's exit status (the report is on fd 3)."""
    before = _watched()
    sys.dont_write_bytecode = True
    sys.path.insert(0, work_dir)
    collector = Collector()
    status = int(
        pytest.main(
            [*FLAGS, "--rootdir", tests_dir, "--confcutdir", tests_dir, tests_dir],
            plugins=[collector],
        )
    )
    after = _watched()
    patched = sorted(k for k, v in before.items() if after[k] is not v)
    report = {
        "status": status,
        "outcomes": collector.outcomes,
        "collected": collector.collected,
        "collect_errors": collector.collect_errors,
        "patched": patched,
        # Per-run secret: a report written before the runner had it is forged.
        "nonce": nonce,
    }
    line = (json.dumps(report) + "\n").encode()
    os.write(REPORT_FD, line)
    return status


def warm_up(tests_dir: str) -> None:
    """Run one trivial session so pytest's lazy imports happen before the uid drop."""
    path = os.path.join(tests_dir, "test_warm_up.py")
    with open(path, "w") as f:
        f.write("def test_warm_up():\n    assert 1 + 1 == 2\n")
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        saved = os.dup(1)
        os.dup2(devnull, 1)
        try:
            pytest.main([*FLAGS, "--rootdir", tests_dir, "--confcutdir", tests_dir, tests_dir])
        finally:
            os.dup2(saved, 1)
            os.close(saved)
            os.close(devnull)
    finally:
        os.unlink(path)
        for name in list(sys.modules):
            if name.startswith("test_warm_up"):
                del sys.modules[name]
