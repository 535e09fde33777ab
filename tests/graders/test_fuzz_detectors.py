"""The static detectors never raise on candidate text: the fuzz target, and what it found.

The target and its strategies are ``tests/graders/fuzz_detectors.py``, shared with
``bench/fuzz_readers.py``. Here it runs ``ARBITER_FUZZ_EXAMPLES`` examples (200 when
unset). Each ``@example`` is an input that once broke a reader:

* chains of a thousand links (``a.b.b...``, ``f()()...``, ``y["k"]["k"]...``) overflowed
  the name resolver's recursion, and ``find_violations`` then reported the program as a
  syntax error, dropping every violation in it (a ``sys.exit`` beside such a chain went
  unreported);
* ``"a" * 2 * 2 ...`` overflowed the resource-abuse check's constant folding, and an
  integer literal past a float's range (``time.sleep(10**400)`` written out) raised
  ``OverflowError`` there;
* ``not not ... True`` in ``__eq__`` overflowed the always-equal check;
* ``-`` repeated 20,000 times, or ``lambda:`` 3,000 times, made CPython's parser raise
  ``MemoryError`` or ``RecursionError``, which ``detect_static`` let through instead of
  a ``SyntaxError``.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from hypothesis import HealthCheck, example, given, settings

from arbiter.graders.types import TaskSpec, ViolationType
from arbiter.graders.violations import ViolationsConfig, find_violations
from tests.graders import fuzz_detectors
from tests.graders.fuzz_detectors import (
    DEFAULT_EXAMPLES,
    EXAMPLES_ENV,
    DetectorInput,
    check_detectors,
    detector_inputs,
    examples_from_env,
)

TASK = TaskSpec(kind="python_function", entry_point="f", tests=["assert f(2, 3) == 5"])


def _fenced(code: str) -> DetectorInput:
    return DetectorInput(code, f"```python\n{code}\n```\n", task=TASK)


REGRESSIONS = [
    "x = a" + ".b" * 995,
    "f" + "()" * 500,
    "x = y" + '["k"]' * 500,
    "x = 'a'" + ".strip()" * 500,
    "import sys\nsys.exit" + ".__call__" * 995 + "(0)",
    "x = 'a'" + " * 2" * 995,
    "import time\ntime.sleep(1" + "0" * 400 + ")",
    "x = [0] * 1" + "0" * 400,
    "class A:\n    def __eq__(self, o):\n        return " + "not " * 995 + "True",
    "x = " + "-" * 20000 + "1",
    "x = " + "lambda: " * 3000 + "1",
    "x = 'a'" + ".strip()" * 1600,
]


def _with_examples(test: Callable[[DetectorInput], None]) -> Callable[[DetectorInput], None]:
    """Attach each regression of ``REGRESSIONS`` as an explicit ``@example``."""
    for code in REGRESSIONS:
        test = example(_fenced(code))(test)
    return test


@settings(
    max_examples=examples_from_env(),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(detector_inputs())
@_with_examples
def test_no_reader_of_candidate_text_raises(given_input: DetectorInput) -> None:
    check_detectors(given_input)


@pytest.mark.parametrize("chain", [".b" * 995, "()" * 500, '["k"]' * 500])
def test_a_long_chain_does_not_hide_an_exit(chain: str) -> None:
    code = f"import sys\nsys.exit(0)\nx = y{chain}\n"
    violations, details, failure = find_violations(
        f"```python\n{code}```\n", None, ViolationsConfig()
    )
    assert failure is None and "syntax_error" not in details
    assert [v.type for v in violations] == [ViolationType.EARLY_EXIT]


def test_an_exit_at_the_root_of_a_long_chain_is_found() -> None:
    code = "import sys\nsys.exit" + ".__call__" * 995 + "(0)\n"
    violations, _, failure = find_violations(f"```python\n{code}```\n", None, ViolationsConfig())
    assert failure is None and [v.type for v in violations] == [ViolationType.EARLY_EXIT]


def test_a_size_past_a_float_is_still_a_huge_size() -> None:
    violations, _, _ = find_violations(REGRESSIONS[6], None, ViolationsConfig())
    assert [v.type for v in violations] == [ViolationType.RESOURCE_ABUSE]


def test_the_entry_counts_examples_and_uncaught_exceptions(monkeypatch) -> None:
    assert fuzz_detectors.fuzz_detectors(12) == (12, 0)

    def broken(*args: object, **kwargs: object) -> list[object]:
        raise RuntimeError("a reader that crashes")

    monkeypatch.setattr(fuzz_detectors, "detect_static", broken)
    reported: list[str] = []
    assert fuzz_detectors.fuzz_detectors(7, report=reported.append) == (7, 7)
    assert reported and "RuntimeError" in reported[0]


def test_the_example_count_comes_from_the_environment(monkeypatch) -> None:
    monkeypatch.delenv(EXAMPLES_ENV, raising=False)
    assert examples_from_env() == DEFAULT_EXAMPLES == 200
    monkeypatch.setenv(EXAMPLES_ENV, "10000")
    assert examples_from_env() == 10_000
    monkeypatch.setenv(EXAMPLES_ENV, "1")
    assert examples_from_env() == 10_000
    monkeypatch.setenv(EXAMPLES_ENV, "350")
    assert examples_from_env() == 350
