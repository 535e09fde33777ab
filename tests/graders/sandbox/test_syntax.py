"""Every parse of Python source in the service goes through one lock.

Guards CPython gh-106905: two threads building ASTs at once make ``ast.parse``
raise ``SystemError: AST constructor recursion depth mismatch`` for valid code;
the audit of the project's eval sets once crashed on it under concurrent grading.
"""

from __future__ import annotations

import ast
import threading
from pathlib import Path

import pytest

from arbiter.graders.sandbox import syntax

REPO = Path(__file__).resolve().parents[3]
PACKAGES = ["arbiter", "rubrics", "graders", "reward_models", "monitoring", "store", "api"]


def test_parse_module_and_expression_match_ast_parse():
    assert ast.dump(syntax.parse_module("x = 1\n")) == ast.dump(ast.parse("x = 1\n"))
    expr = syntax.parse_expression("a + 1")
    assert ast.dump(expr) == ast.dump(ast.parse("a + 1", mode="eval"))
    with pytest.raises(SyntaxError):
        syntax.parse_module("def (:\n")


def test_parses_hold_the_lock():
    entered = threading.Event()
    release = threading.Event()
    done: list[ast.Module] = []

    def holder() -> None:
        with syntax._LOCK:
            entered.set()
            release.wait(30)

    def parser() -> None:
        done.append(syntax.parse_module("y = 2\n"))

    t1 = threading.Thread(target=holder)
    t1.start()
    assert entered.wait(30)
    t2 = threading.Thread(target=parser)
    t2.start()
    t2.join(0.2)  # not a timing claim: it only gives the parser a chance to run
    assert done == [], "a parse ran while another held the lock"
    release.set()
    t1.join(30)
    t2.join(30)
    assert len(done) == 1


def test_no_module_calls_ast_parse_directly():
    offenders = []
    for package in PACKAGES:
        for path in (REPO / package).rglob("*.py"):
            if path == REPO / "graders" / "sandbox" / "syntax.py":
                continue
            for node in ast.walk(ast.parse(path.read_text(), str(path))):
                if (
                    isinstance(node, ast.Call)
                    and isinstance(node.func, ast.Attribute)
                    and node.func.attr == "parse"
                    and isinstance(node.func.value, ast.Name)
                    and node.func.value.id == "ast"
                ):
                    offenders.append(f"{path.relative_to(REPO)}:{node.lineno}")
    assert offenders == [], f"use graders.sandbox.syntax instead of ast.parse: {offenders}"
