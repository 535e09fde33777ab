"""Tripwires: planted among the tests, shaped like them, each one's outcome known."""

from __future__ import annotations

import ast
import random
import subprocess
import sys
from pathlib import Path

import pytest

from arbiter.graders.repository.tripwires import _SHAPES, _shaped, plant

SOURCE = """import pytest


def test_merge_sorted():
    assert sorted([2, 1]) == [1, 2]


class TestWindows:
    def test_sliding_window(self):
        assert True


@pytest.mark.parametrize("n", [1, 2])
def test_chunked_sizes(n):
    assert n > 0
"""


def test_planted_tests_parse_with_new_names_and_run_as_declared(tmp_path: Path) -> None:
    text, wires = plant("tests/test_x.py", SOURCE, must_fail=2, must_pass=2)
    tree = ast.parse(text)
    top = [n.name for n in tree.body if isinstance(n, ast.FunctionDef)]
    names = [w.nodeid.split("::")[1] for w in wires]
    assert len(set(names)) == 4 and set(names) <= set(top)
    assert {"test_merge_sorted", "test_chunked_sizes"} <= set(top)
    assert sum(w.must_pass for w in wires) == 2
    (tmp_path / "test_x.py").write_text(text)
    for wire in wires:
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "pytest",
                "-q",
                "-p",
                "no:cacheprovider",
                f"test_x.py::{wire.nodeid.split('::')[1]}",
            ],
            cwd=tmp_path,
            capture_output=True,
            check=False,
        )
        assert (done.returncode == 0) == wire.must_pass, done.stdout


def test_each_grading_plants_different_tripwires() -> None:
    first = {w.nodeid for w in plant("t.py", SOURCE)[1]}
    second = {w.nodeid for w in plant("t.py", SOURCE)[1]}
    assert len(first) == 3 and first != second


def test_a_file_that_does_not_parse_gets_none() -> None:
    assert plant("t.py", "def (:\n") == ("def (:\n", [])


@pytest.mark.parametrize("shape", range(len(_SHAPES)))
def test_every_shape_knows_its_outcome_whatever_values_it_draws(shape: int) -> None:
    # A tripwire whose expected value is wrong for some draw misgrades an honest run:
    # a must-pass one fails, a must-fail one can pass (a verdict_forgery). The
    # dict shape once assumed its value was 0, which a repeated first value breaks.
    rng = random.Random(shape)
    for i in range(3_000):
        must_pass = i % 2 == 0
        text = _shaped(_SHAPES[shape], "test_it", must_pass, rng)
        namespace: dict[str, object] = {}
        exec(text, namespace)  # our own shapes, over our own values
        try:
            namespace["test_it"]()  # type: ignore[operator]
        except AssertionError:
            passed = False
        else:
            passed = True
        assert passed == must_pass, text
