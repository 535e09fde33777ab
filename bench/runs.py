"""Code runs (``POST /run_code``): per-case calls against a batched grading, and health meanwhile.

Run as ``python -m bench.runs [--problems 40] [--flood 1000]``. In the same run,
against one live ``arbiter serve`` (SQLite, a trainer key):

1. **verl's way against ours.** MBPP problems rewritten as stdin programs (their
   reference, the arguments on stdin, the answer's ``repr`` out), each with its
   test cases: (a) one ``/run_code`` call per case, 8 at a time, as verl's
   ``sandbox_fusion`` reward makes them; (b) the same problems as
   ``stdin_stdout`` tasks in one ``POST /v1/rewards`` batch under a tests-only
   rubric. Both agree on which problems pass (printed); cases/s each, and the ratio.
2. **A flood.** ``--flood`` concurrent ``/run_code`` calls while ``/healthz`` is
   probed every 0.2 s from a process of its own: the answers by status, and the
   probes' worst latency against Kubernetes' 1 s timeout.
"""

from __future__ import annotations

import argparse
import ast
import asyncio
import json
import re
import statistics
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx

from bench.serve import TESTS_ONLY, trainer_server

MBPP = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "mbpp.jsonl"
READER = (
    "\n\nimport ast as _ast, sys as _sys\n"
    "print(repr({fn}(*_ast.literal_eval(_sys.stdin.read()))))\n"
)


def stdin_problems(count: int) -> list[dict[str, Any]]:
    """MBPP tasks whose asserts are all ``f(literals) == literal``, as stdin programs."""
    out = []
    for line in MBPP.read_text().splitlines():
        row = json.loads(line)
        cases, fn = [], None
        for test in row["test_list"]:
            node = ast.parse(test).body[0]
            test_node = getattr(node, "test", None)
            call = getattr(test_node, "left", None)
            ops = getattr(test_node, "ops", [None])
            comparators = getattr(test_node, "comparators", [None])
            if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Name)):
                break
            if not isinstance(ops[0], ast.Eq):
                break
            try:
                args = [ast.literal_eval(a) for a in call.args]
                expected = ast.literal_eval(comparators[0])
            except ValueError:
                break
            fn = call.func.id
            cases.append((repr(tuple(args)), repr(expected) + "\n"))
        else:
            if fn is not None and not row.get("test_setup_code"):
                program = row["code"] + READER.format(fn=fn)
                out.append({"id": f"mbpp/{row['task_id']}", "program": program, "cases": cases})
        if len(out) == count:
            break
    return out


SHARED = Path(__file__).resolve().parents[1].parent / "shared" / "data"
#: What each rewritten HumanEvalPack case prints when its assertion holds, and when not.
HOLDS, FAILS = "ok\n", "wrong\n"


def humanevalpack_stdin_problems(
    language: str, count: int, solution: str = "canonical_solution"
) -> list[dict[str, Any]]:
    """HumanEvalPack tasks (``python`` or ``cpp``) rewritten as stdin programs.

    Each assertion of a task's tests becomes a case: the program reads the
    case's number on stdin and prints ``ok`` when that assertion holds of its
    function, ``wrong`` when not (an exception is the program's runtime error).
    Tasks whose tests are anything but assertions are left out. ``solution``
    picks the task's ``canonical_solution`` or its ``buggy_solution``.
    """
    name = {"python": "humanevalpack_python.jsonl", "cpp": "humanevalpack_cpp.jsonl"}[language]
    out = []
    for line in (SHARED / name).read_text().splitlines():
        row = json.loads(line)
        rewrite = _python_cases if language == "python" else _cpp_cases
        made = rewrite(row, row[solution])
        if made is not None:
            program, total = made
            cases = [(f"{k}\n", HOLDS) for k in range(total)]
            out.append({"id": row["task_id"], "program": program, "cases": cases})
        if len(out) == count:
            break
    return out


def _python_cases(row: dict[str, Any], body: str) -> tuple[str, int] | None:
    """The program and its number of cases, or None when ``check`` is not all assertions."""
    tree = ast.parse(row["test"])
    defined = [n for n in tree.body if isinstance(n, ast.FunctionDef)]
    check = next((n for n in defined if n.name == "check"), None)
    if check is None or len(check.args.args) != 1:
        return None
    asserts = [s for s in check.body if isinstance(s, ast.Assert)]
    others = [
        s
        for s in check.body
        if not isinstance(s, ast.Assert)
        and not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))
    ]
    if others or not asserts:
        return None
    helpers = [
        ast.unparse(n)
        for n in tree.body
        if n is not check and not (isinstance(n, ast.Expr) and isinstance(n.value, ast.Call))
    ]
    cases = ",\n    ".join(f"lambda: ({ast.unparse(a.test)})" for a in asserts)
    program = (
        f"{row['prompt']}{body}\n\n"
        + "\n".join(helpers)
        + f"\n{check.args.args[0].arg} = {row['entry_point']}\n"
        + f"_arbiter_cases = [\n    {cases},\n]\n"
        + "import sys as _arbiter_sys\n"
        + "print('ok' if _arbiter_cases[int(_arbiter_sys.stdin.read())]() else 'wrong')\n"
    )
    return program, len(asserts)


def _cpp_cases(row: dict[str, Any], body: str) -> tuple[str, int] | None:
    """The program and its number of cases, or None when ``main`` is not all assertions."""
    test = row["test"]
    at = test.find("int main")
    if at < 0:
        return None
    helpers = test[:at]
    inside = test[test.index("{", at) + 1 : test.rindex("}")]
    statements = [s.strip() for s in inside.split(";") if s.strip()]
    conditions = []
    for statement in statements:
        match = re.fullmatch(r"assert\s*\((.*)\)", statement, re.S)
        if match is None:
            return None
        conditions.append(match.group(1))
    if not conditions:
        return None
    cases = "".join(
        f'        case {k}: std::cout << (({c}) ? "ok" : "wrong") << "\\n"; break;\n'
        for k, c in enumerate(conditions)
    )
    program = (
        f"{row['declaration']}{body}\n{helpers}\n#include <iostream>\n"
        "int main() {\n    int k = -1;\n    std::cin >> k;\n    switch (k) {\n"
        f"{cases}    }}\n}}\n"
    )
    return program, len(conditions)


def per_case(url: str, key: str, problems: list[dict[str, Any]]) -> tuple[float, list[bool]]:
    """(a): one /run_code per case, 8 in flight; (wall, whether each problem passed all)."""
    calls = [(i, inp, out) for i, p in enumerate(problems) for inp, out in p["cases"]]
    passed = [True] * len(problems)
    with httpx.Client(base_url=url, auth=("trainer", key), timeout=120) as client:

        def one(call: tuple[int, str, str]) -> tuple[int, bool]:
            i, stdin, expected = call
            body = {"code": problems[i]["program"], "language": "python", "stdin": stdin}
            answer = client.post("/run_code", json=body).json()
            ok = answer["status"] == "Success" and answer["run_result"]["stdout"].rstrip(
                "\n"
            ) == expected.rstrip("\n")
            return i, ok

        started = time.perf_counter()
        with ThreadPoolExecutor(8) as threads:
            for i, ok in threads.map(one, calls):
                passed[i] = passed[i] and ok
        return time.perf_counter() - started, passed


def batched(url: str, key: str, problems: list[dict[str, Any]]) -> tuple[float, list[bool]]:
    """(b): the problems as stdin_stdout tasks in one /v1/rewards batch."""
    samples = [
        {
            "id": p["id"],
            "response": f"```python\n{p['program']}\n```",
            "task": {
                "kind": "stdin_stdout",
                "tests": [{"input": i, "output": o} for i, o in p["cases"]],
            },
        }
        for p in problems
    ]
    with httpx.Client(base_url=url, auth=("trainer", key), timeout=600) as client:
        started = time.perf_counter()
        answer = client.post("/v1/rewards", json={"rubric": "stdin-tests", "samples": samples})
        wall = time.perf_counter() - started
    answer.raise_for_status()
    rewards = answer.json()["rewards"]
    return wall, [r["components"]["tests"]["score"] == 1.0 for r in rewards]


PROBE = """
import httpx, json, sys, time
url, seconds = sys.argv[1], float(sys.argv[2])
waits = []
with httpx.Client(timeout=30) as client:
    client.get(url + "/healthz")
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        started = time.perf_counter()
        client.get(url + "/healthz").raise_for_status()
        waits.append(time.perf_counter() - started)
        time.sleep(0.2)
print(json.dumps(waits))
"""


def flood(url: str, key: str, count: int) -> None:
    """(2): ``count`` concurrent /run_code calls, /healthz probed from another process."""
    body = {"code": "print(sum(range(1000)))\n", "language": "python"}

    async def send() -> list[int]:
        limits = httpx.Limits(max_connections=count, max_keepalive_connections=0)
        async with httpx.AsyncClient(
            base_url=url, timeout=600, limits=limits, auth=("trainer", key)
        ) as client:
            answers = await asyncio.gather(
                *(client.post("/run_code", json=body) for _ in range(count))
            )
        return [a.status_code for a in answers]

    probe = subprocess.Popen(
        [sys.executable, "-c", PROBE, url, "8"], stdout=subprocess.PIPE, text=True
    )
    time.sleep(0.5)
    started = time.perf_counter()
    codes = asyncio.run(send())
    wall = time.perf_counter() - started
    out, _ = probe.communicate(timeout=120)
    waits = json.loads(out)
    counts = {code: codes.count(code) for code in sorted(set(codes))}
    print(f"== 2. {count} concurrent /run_code calls in {wall:.1f} s: answers {counts}")
    print(
        f"/healthz meanwhile: {len(waits)} probes, p50 {1000 * statistics.median(waits):.0f} ms, "
        f"max {1000 * max(waits):.0f} ms, over 1 s: {sum(w > 1 for w in waits)}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--problems", type=int, default=40)
    parser.add_argument("--flood", type=int, default=1000)
    args = parser.parse_args()
    problems = stdin_problems(args.problems)
    cases = sum(len(p["cases"]) for p in problems)
    rubrics = {"stdin-tests": TESTS_ONLY.format(name="stdin-tests")}
    with trainer_server(rubrics) as (url, key, _):
        batched(url, key, problems[:2])  # warm: the pool, the rubric
        a_wall, a_passed = per_case(url, key, problems)
        b_wall, b_passed = batched(url, key, problems)
        print(f"== 1. {len(problems)} MBPP problems as stdin programs, {cases} cases")
        print(f"(a) one /run_code per case, 8 at a time:  {cases / a_wall:7.1f} cases/s")
        print(f"(b) one /v1/rewards batch:                {cases / b_wall:7.1f} cases/s")
        same = sum(x == y for x, y in zip(a_passed, b_passed, strict=True))
        print(f"same verdict on {same} of {len(problems)} problems; passing {sum(b_passed)}")
        print(f"ratio (b)/(a): {a_wall / b_wall:.2f}")
        flood(url, key, args.flood)


if __name__ == "__main__":
    main()
