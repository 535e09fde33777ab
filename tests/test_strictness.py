"""A strict run fails on any skip or xfail outside the allow-list, and lists each one."""

from __future__ import annotations

import pytest

from tests.strictness import ALLOWED_SKIPS, allowed

pytest_plugins = ["pytester"]

CONFTEST = """
from tests.strictness import StrictRun

def pytest_configure(config):
    config.pluginmanager.register(StrictRun(), "arbiter-strict")
"""


def run(pytester: pytest.Pytester, body: str) -> pytest.RunResult:
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_it=body)
    return pytester.runpytest("-p", "no:randomly", "-p", "no:cacheprovider")


@pytest.mark.parametrize(
    ("body", "listed"),
    [
        ("import pytest\ndef test_a():\n    pytest.skip('no database')\n", "no database"),
        ("import pytest\n@pytest.mark.skip(reason='later')\ndef test_a():\n    pass\n", "later"),
        (
            "import pytest\n@pytest.mark.xfail(reason='known')\ndef test_a():\n    assert 0\n",
            "xfail",
        ),
        ("import pytest\n@pytest.mark.xfail(reason='known')\ndef test_a():\n    pass\n", "xpass"),
        ("import pytest\npytest.skip('whole module', allow_module_level=True)\n", "whole module"),
        (
            "import pytest\ndef test_a():\n    pytest.importorskip('no_such_module_here')\n",
            "no_such",
        ),
    ],
)
def test_a_skip_or_xfail_outside_the_allow_list_fails_the_run(pytester, body, listed):
    result = run(pytester, body + "def test_ok():\n    pass\n")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["*1 not allowed, 0 allowed*", f"NOT ALLOWED *{listed}*"])


def test_the_same_run_passes_without_a_skip(pytester):
    result = run(pytester, "def test_ok():\n    pass\n")
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(["*0 not allowed, 0 allowed*"])


def test_an_allowed_skip_is_listed_with_why_and_passes(pytester):
    result = run(pytester, "import pytest\ndef test_a():\n    pytest.skip('needs a CUDA device')\n")
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(["*0 not allowed, 1 allowed*", "allowed *needs a CUDA device*"])


def test_a_failing_run_stays_failed(pytester):
    result = run(
        pytester,
        "import pytest\ndef test_a():\n    pytest.skip('x')\ndef test_b():\n    assert 0\n",
    )
    assert result.ret == pytest.ExitCode.TESTS_FAILED


def test_allow_list_entries_each_say_why():
    assert all(entry.why and entry.reason for entry in ALLOWED_SKIPS)
    assert allowed("tests/x.py::test_y", "no PostgreSQL") is None


def test_unavailable_fails_under_the_strict_flag(pytester, monkeypatch):
    monkeypatch.setenv("ARBITER_STRICT_TESTS", "1")
    pytester.makepyfile(
        test_it="from tests.strictness import unavailable\n"
        "def test_a():\n    unavailable('no chromium')\n"
    )
    result = pytester.runpytest("-p", "no:randomly")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*strict run: no chromium*"])
    monkeypatch.setenv("ARBITER_STRICT_TESTS", "0")
    result = pytester.runpytest("-p", "no:randomly")
    result.assert_outcomes(skipped=1)
