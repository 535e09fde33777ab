"""Build ``answers-math-verify.jsonl`` from Math-Verify's own test cases.

Run as ``python -m eval_sets.answers_math_verify PATH`` with ``PATH`` a checkout of
github.com/huggingface/Math-Verify (its ``tests/`` folder). Each parametrized
``(gold, pred, expected)`` triple of its tests becomes one labelled case:
``gold`` is the task's answer, ``pred`` the response, ``label`` the verdict the
test expects. The tests' non-default options (``precision``, ``strict``,
``allow_set_relation_comp``) ride along in ``options``: a label that holds only
under such an option is still a label of math-verify's, and a disagreement there
is listed, not hidden. Only the literal tables are read (``ast.literal_eval``);
nothing of the repository runs.
"""

from __future__ import annotations

import ast
import json
import sys
from pathlib import Path
from typing import Any

__all__ = ["OUT", "TEST_FILES", "cases_in", "main"]

OUT = Path(__file__).resolve().parent / "answers-math-verify.jsonl"

#: The test files whose tables are (gold, prediction, verdict) triples.
TEST_FILES = (
    "test_all.py",
    "test_boxed.py",
    "test_numina_cases.py",
    "test_open_thoughts.py",
    "test_strict.py",
    "test_yujianll.py",
)

_GOLD = ("gold",)
_PRED = ("pred",)
_LABEL = ("expected", "result")


def _call_options(function: ast.FunctionDef) -> dict[str, Any]:
    """The literal keyword options the test passes to ``compare_strings`` (match types...)."""
    for node in ast.walk(function):
        if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "compare_strings":
            out: dict[str, Any] = {}
            for keyword in node.keywords:
                try:
                    out[str(keyword.arg)] = ast.literal_eval(keyword.value)
                except ValueError:
                    continue
            return out
    return {}


def cases_in(path: Path) -> list[dict[str, Any]]:
    """Return the labelled cases of one of Math-Verify's test files."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    out: list[dict[str, Any]] = []
    for function in tree.body:
        if not isinstance(function, ast.FunctionDef):
            continue
        options = _call_options(function)
        for decorator in function.decorator_list:
            if not (
                isinstance(decorator, ast.Call)
                and getattr(decorator.func, "attr", "") == "parametrize"
            ):
                continue
            names = [n.strip() for n in ast.literal_eval(decorator.args[0]).split(",")]
            if not ({*_GOLD, *_PRED} <= set(names) and set(_LABEL) & set(names)):
                continue
            label_name = next(n for n in _LABEL if n in names)
            rows = decorator.args[1]
            assert isinstance(rows, ast.List | ast.Tuple)
            for index, node in enumerate(rows.elts):
                try:
                    row = ast.literal_eval(node)
                except ValueError:
                    # A row built by code (an f-string) is not a literal: left out, said so.
                    print(f"skipped {path.name}:{node.lineno}: not a literal row", file=sys.stderr)
                    continue
                values = dict(zip(names, row, strict=True))
                case_options = dict(options)
                for extra in ("precision", "strict", "allow_set_relation_comp"):
                    if extra in values:
                        case_options[extra] = values[extra]
                out.append(
                    {
                        "id": f"mv/{path.stem}/{function.name}/{index}",
                        "source": f"math-verify tests/{path.name}::{function.name}",
                        "gold": values["gold"],
                        "response": values["pred"],
                        "label": int(bool(values[label_name])),
                        "format": "math",
                        "options": case_options,
                    }
                )
    return out


def main(argv: list[str] | None = None) -> None:
    """Convert the tests of the Math-Verify checkout named on the command line."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        raise SystemExit("usage: python -m eval_sets.answers_math_verify MATH_VERIFY_CHECKOUT")
    tests = Path(args[0]) / "tests"
    records = [case for name in TEST_FILES for case in cases_in(tests / name)]
    with OUT.open("w", encoding="utf-8") as f:
        for record in records:
            f.write(json.dumps(record, ensure_ascii=False) + "\n")
    print(f"{len(records)} cases -> {OUT}")


if __name__ == "__main__":
    main()
