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
