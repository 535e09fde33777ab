"""Build ``pytest_suites.jsonl``: pytest modules written from HumanEvalPack and MBPP tasks.

Run as ``python -m eval_sets.pytest_suites`` with ``../shared/data`` beside the
checkout. Each task's literal asserts (``f(args) == expected``, or
``abs(f(args) - expected) < tol``) become the cases of a pytest module that
imports the solution as ``solution``. Four shapes of module rotate, so that the
set uses what real suites use: a fixture handing out the function with
``parametrize`` and ``pytest.raises``; a test class with parametrized methods;
a ``tmp_path`` fixture the cases are read back from; a class-scoped fixture
shared by the methods of a class. Numeric results compare with
``pytest.approx`` (floats within the task's tolerance, integers within 1e-9).

Every module appears twice, labelled: with the canonical solution (all tests
pass) and with a wrong one (some test fails): HumanEvalPack's own buggy
solution, or for MBPP a variant that returns a result of the right type but
the wrong value (a flipped bool, a number off by one, a string or container
with one element too many).
"""

from __future__ import annotations

import ast
import json
import sys
from pathlib import Path
from typing import Any

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"
OUT = Path(__file__).resolve().parent / "pytest_suites.jsonl"

#: How many modules from each source.
HUMANEVAL_MODULES = 32
MBPP_MODULES = 26
#: Tasks left out: buggy solutions that loop forever (the timeout, not the
#: verdict, would end them) or that pass every literal case of their tests.
SKIP = {"Python/10", "Python/156", "Python/160"}

_NOT_LITERAL = object()


def _literal(node: ast.AST) -> Any:
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return _NOT_LITERAL


def _case(test: ast.expr, name: str) -> tuple[tuple[Any, ...], Any, float | None] | None:
    """Return ``(args, expected, tolerance)`` for one literal assert on ``name``, else None."""
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1):
        return None
    left, right = test.left, test.comparators[0]
    tolerance = None
    if (
        isinstance(test.ops[0], ast.Lt)
        and isinstance(left, ast.Call)
        and isinstance(left.func, ast.Name)
        and left.func.id == "abs"
        and len(left.args) == 1
        and isinstance(left.args[0], ast.BinOp)
        and isinstance(left.args[0].op, ast.Sub)
    ):
        assert isinstance(left.args[0], ast.BinOp)
        tolerance = _literal(right)
        if type(tolerance) not in (int, float):
            return None
        difference = left.args[0]
        left, right = difference.left, difference.right
    elif not isinstance(test.ops[0], ast.Eq):
        return None
    if not (isinstance(left, ast.Call) and isinstance(left.func, ast.Name)):
        return None
    if left.func.id != name or left.keywords:
        return None
    args = tuple(_literal(a) for a in left.args)
    expected = _literal(right)
    if _NOT_LITERAL in (*args, expected) or expected is None:
        return None
    return args, expected, tolerance


def _cases(
    statements: list[ast.stmt], name: str
) -> list[tuple[tuple[Any, ...], Any, float | None]]:
    out = []
    for stmt in statements:
        if isinstance(stmt, ast.Assert):
            case = _case(stmt.test, name)
            if case is not None:
                out.append(case)
    return out


def _expected_text(expected: Any, tolerance: float | None) -> str:
    if tolerance is not None or type(expected) is float:
        return f"pytest.approx({expected!r}, abs={tolerance or 1e-6!r})"
    if type(expected) is int:
        # Numbers compare through approx too, tight enough that off by one fails.
        return f"pytest.approx({expected!r}, rel=1e-12, abs=1e-9)"
    return repr(expected)


def _case_list(cases: list[tuple[tuple[Any, ...], Any, float | None]]) -> str:
    rows = [f"    ({args!r}, {_expected_text(e, t)})," for args, e, t in cases]
    return "CASES = [\n" + "\n".join(rows) + "\n]\n"


def module_text(
    name: str, cases: list[tuple[tuple[Any, ...], Any, float | None]], shape: int
) -> str:
    """Write one pytest module for the function ``name`` (shape 0-3, see the module doc)."""
    arity = max(len(a) for a, _, _ in cases)
    head = f'"""Tests for {name}, written from the task\'s literal asserts."""\n\n'
    if shape == 2:
        head += "import ast\n\n"
    head += "import pytest\n\nimport solution\n\n"
    body = _case_list(cases) + "\n\n"
    if shape == 0:
        body += (
            "@pytest.fixture\n"
            "def function():\n"
            f"    return solution.{name}\n\n\n"
            '@pytest.mark.parametrize(("args", "expected"), CASES)\n'
            "def test_case(function, args, expected):\n"
            "    assert function(*args) == expected\n\n\n"
            "def test_too_many_arguments(function):\n"
            "    with pytest.raises(TypeError):\n"
            f"        function(*([0] * {arity + 4}))\n"
        )
    elif shape == 1:
        body += (
            f"class Test{name.title().replace('_', '')}:\n"
            '    @pytest.mark.parametrize(("args", "expected"), CASES)\n'
            "    def test_case(self, args, expected):\n"
            f"        assert solution.{name}(*args) == expected\n\n"
            "    def test_same_answer_twice(self):\n"
            "        args, expected = CASES[0]\n"
            f"        first = solution.{name}(*args)\n"
            f"        assert first == expected\n"
            f"        assert solution.{name}(*args) == first\n"
        )
    elif shape == 2:
        # The cases go through a file in tmp_path (approx does not print back: keep it here).
        plain = [(a, e) for a, e, t in cases]
        approx = [t is not None or type(e) is float for _, e, t in cases]
        body = (
            f"RAW = {plain!r}\nAPPROX = {approx!r}  # approx={any(approx)}\n\n\n"
            "@pytest.fixture\n"
            "def cases(tmp_path):\n"
            '    path = tmp_path / "cases.txt"\n'
            "    path.write_text(repr(RAW))\n"
            "    return ast.literal_eval(path.read_text())\n\n\n"
            "def test_every_case(cases):\n"
            "    for (args, expected), close in zip(cases, APPROX):\n"
            f"        got = solution.{name}(*args)\n"
            "        assert got == (pytest.approx(expected, abs=1e-6) if close else expected)\n\n\n"
            "def test_case_count(cases):\n"
            f"    assert len(cases) == {len(cases)}\n"
        )
    else:
        body += (
            '@pytest.fixture(scope="class")\n'
            "def answers():\n"
            f"    return [solution.{name}(*args) for args, _ in CASES]\n\n\n"
            "class TestAnswers:\n"
            "    def test_first(self, answers):\n"
            "        assert answers[0] == CASES[0][1]\n\n"
            "    def test_all(self, answers):\n"
            "        assert answers == [expected for _, expected in CASES]\n\n"
            '    @pytest.mark.parametrize("index", range(len(CASES)))\n'
            "    def test_each(self, answers, index):\n"
            "        assert answers[index] == CASES[index][1]\n"
        )
    return head + body


_WRONG_VARIANT = '''


_reference_{name} = {name}


def {name}(*args, **kwargs):
    """A wrong variant: the reference's result, off by a little."""
    result = _reference_{name}(*args, **kwargs)
    if isinstance(result, bool):
        return not result
    if isinstance(result, (int, float)):
        return result + 1
    if isinstance(result, str):
        return result + "?"
    if isinstance(result, list):
        return result + [None]
    if isinstance(result, tuple):
        return result + (None,)
    if isinstance(result, (set, dict)):
        return None
    return 0
'''


_SHAPES = ("fixture+parametrize+raises", "class+parametrize", "tmp_path fixture", "class fixture")


def _record(
    source: str, key: str, prompt: str, tests: str, code: str, passes: bool, shape: int
) -> dict[str, Any]:
    approx = "approx=True" in tests or ("pytest.approx(" in tests and "APPROX" not in tests)
    variant = "canonical" if passes else "wrong"
    return {
        "id": f"pytest-{key}-{variant}",
        "group_id": f"pytest-{key}",
        "prompt": prompt,
        "task": {"kind": "pytest", "tests": tests, "entry_point": "solution"},
        "response": f"```python\n{code}\n```\n",
        "labels": {
            "expected": {"tests_pass": passes},
            "source": source,
            "features": _SHAPES[shape] + (" approx" if approx else ""),
        },
    }


def build(data: Path = DATA) -> list[dict[str, Any]]:
    """Return the eval set's records, canonical and wrong for each module."""
    records: list[dict[str, Any]] = []
    modules = 0
    for line in (data / "humanevalpack_python.jsonl").read_text().splitlines():
        row = json.loads(line)
        if row["task_id"] in SKIP or modules >= HUMANEVAL_MODULES:
            continue
        tree = ast.parse(row["test"])
        check = next(
            (s for s in tree.body if isinstance(s, ast.FunctionDef) and s.name == "check"), None
        )
        if check is None or not check.args.args:
            continue
        cases = _cases(check.body, check.args.args[0].arg)
        if len(cases) < 3:
            continue
        tests = module_text(row["entry_point"], cases, modules % 4)
        key = row["task_id"].replace("/", "-")
        good = row["prompt"] + row["canonical_solution"]
        bad = row["prompt"] + row["buggy_solution"]
        records.append(
            _record("humanevalpack", key, row["instruction"], tests, good, True, modules % 4)
        )
        records.append(
            _record("humanevalpack", key, row["instruction"], tests, bad, False, modules % 4)
        )
        modules += 1
    modules = 0
    for line in (data / "mbpp.jsonl").read_text().splitlines():
        row = json.loads(line)
        if modules >= MBPP_MODULES or row["test_setup_code"]:
            continue
        statements = [s for t in row["test_list"] for s in ast.parse(t).body]
        names = {
            s.test.left.func.id
            for s in statements
            if isinstance(s, ast.Assert)
            and isinstance(s.test, ast.Compare)
            and isinstance(s.test.left, ast.Call)
            and isinstance(s.test.left.func, ast.Name)
        }
        if len(names) != 1:
            continue
        (name,) = names
        cases = _cases(statements, name)
        if len(cases) < 3 or len(cases) != len(statements):
            continue
        shape = (modules + 1) % 4
        tests = module_text(name, cases, shape)
        key = f"MBPP-{row['task_id']}"
        code = row["code"].replace("\r\n", "\n")
        wrong = code + _WRONG_VARIANT.format(name=name)
        records.append(_record("mbpp", key, row["text"], tests, code, True, shape))
        records.append(_record("mbpp", key, row["text"], tests, wrong, False, shape))
        modules += 1
    return records


def main() -> None:
    """Write the eval set next to this module."""
    if not DATA.exists():
        sys.exit(f"{DATA} is absent: check out ../shared/data beside the repository")
    records = build()
    OUT.write_text("".join(json.dumps(r) + "\n" for r in records))
    print(f"wrote {len(records)} records ({len(records) // 2} modules) to {OUT.name}")


if __name__ == "__main__":
    main()
