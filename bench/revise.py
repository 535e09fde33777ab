"""A revise loop, end to end: a scripted policy revises from Arbiter's feedback, two turns.

Run as ``python -m bench.revise [--tasks 100]``. Against one live ``arbiter
serve`` (SQLite, a trainer key), for the first ``--tasks`` HumanEvalPack Python
tasks:

1. **Turn 1.** The policy answers with the task's buggy solution; the answer is
   graded (``POST /v1/rewards``, rubric ``revise-tests``) and its
   ``details.feedback.summary`` is the tool result the policy reads.
2. **Turn 2.** The scripted policy (no model): where the feedback names a failing
   test, it answers with the canonical solution; where it does not, it keeps
   its answer. The second answer is graded the same way.
3. **The rollout's reward.** The final answer is sent once more with its whole
   trajectory (the prompt, each attempt as a ``run_tests`` tool call, the
   feedback each got, the final message) under ``revise``: the tests (0.8) and
   the process grader (0.2), whose ``convergence`` reads the feedback summaries
   turn by turn. The server logs it as one record: sample, trajectory, reward.

It prints the fix rate (tasks failing turn 1 that pass turn 2), the mean reward
at each turn and of the rollouts, how many rollouts the process grader saw
converge, then replays the logged rollouts (``arbiter replay``) under the same
rubric: nothing may move, and each turn's test run, graded again, gets the very
feedback the policy read.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

from bench.serve import TESTS_ONLY, trainer_server

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "humanevalpack_python.jsonl"
ROLLOUT_RUBRIC = """name: revise
version: 1
components:
  tests:
    grader: unit_tests
    weight: 0.8
    config: {timeout_s: 10}
  process:
    grader: process
    weight: 0.2
    config:
      weights: {tests_before_finish: 0, honest_finish: 1, self_correction: 0, tool_errors: 0,
                no_loop: 0, convergence: 1}
"""


def _sample(row: dict[str, Any], body: str, suffix: str) -> dict[str, Any]:
    return {
        "id": f"{row['task_id']}/{suffix}",
        "prompt": row["prompt"],
        "response": f"```python\n{row['prompt'] + body}\n```",
        "task": {
            "kind": "python_function",
            "tests": row["test"],
            "entry_point": row["entry_point"],
        },
    }


def _grade(client: httpx.Client, rubric: str, samples: list[dict[str, Any]]) -> list[Any]:
    answer = client.post("/v1/rewards", json={"rubric": rubric, "samples": samples})
    answer.raise_for_status()
    return list(answer.json()["rewards"])


def _call(n: int, code: str) -> dict[str, Any]:
    arguments = json.dumps({"code": code})
    return {
        "id": f"c{n}",
        "type": "function",
        "function": {"name": "run_tests", "arguments": arguments},
    }


def _trajectory(row: dict[str, Any], attempts: list[tuple[str, str]]) -> list[dict[str, Any]]:
    """The rollout as chat messages: each attempt a run_tests call, its feedback the result."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": row["prompt"]}]
    for n, (code, feedback) in enumerate(attempts):
        messages.append({"role": "assistant", "content": "", "tool_calls": [_call(n, code)]})
        messages.append({"role": "tool", "tool_call_id": f"c{n}", "content": feedback})
    last = attempts[-1][1]
    messages.append({"role": "assistant", "content": "Fixed." if "All " in last else "Stuck."})
    return messages


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=100)
    args = parser.parse_args()
    rows = [json.loads(line) for line in DATA.read_text().splitlines()][: args.tasks]
    rubrics = {"revise-tests": TESTS_ONLY.format(name="revise-tests"), "revise": ROLLOUT_RUBRIC}
    with tempfile.TemporaryDirectory() as root, trainer_server(rubrics) as (url, key, db):
        client = httpx.Client(base_url=url, auth=("trainer", key), timeout=600)
        started = time.perf_counter()
        first = _grade(
            client, "revise-tests", [_sample(r, r["buggy_solution"], "t1") for r in rows]
        )
        seconds = []
        for row, reward in zip(rows, first, strict=True):
            feedback = reward["components"]["tests"]["details"]["feedback"]["summary"]
            named = "tests failed" in feedback
            seconds.append(row["canonical_solution"] if named else row["buggy_solution"])
        second = _grade(
            client,
            "revise-tests",
            [_sample(r, b, "t2") for r, b in zip(rows, seconds, strict=True)],
        )
        rollouts = []
        for row, one, two, body in zip(rows, first, second, seconds, strict=True):
            attempts = [
                (
                    row["prompt"] + row["buggy_solution"],
                    one["components"]["tests"]["details"]["feedback"]["summary"],
                ),
                (
                    row["prompt"] + body,
                    two["components"]["tests"]["details"]["feedback"]["summary"],
                ),
            ]
            sample = _sample(row, body, "rollout")
            sample["trajectory"] = _trajectory(row, attempts)
            rollouts.append(sample)
        final = _grade(client, "revise", rollouts)
        wall = time.perf_counter() - started
        client.close()
        failing = [i for i, r in enumerate(first) if r["components"]["tests"]["score"] != 1.0]
        fixed = [i for i in failing if second[i]["components"]["tests"]["score"] == 1.0]
        converged = [
            r
            for r in final
            if r["components"]["process"]["details"]["signals"]["converged"] is True
        ]
        print(f"== {len(rows)} HumanEvalPack tasks, two turns, {wall:.1f} s in all")
        print(f"turn 1: failing {len(failing)} of {len(rows)}; turn 2 fixed {len(fixed)}")
        print(f"fix rate: {len(fixed) / max(1, len(failing)):.2f}")
        for name, rewards in (("turn 1", first), ("turn 2", second), ("rollouts", final)):
            values = [r["reward"] for r in rewards if r["reward"] is not None]
            print(f"mean reward, {name}: {statistics.fmean(values):.3f} ({len(values)} scored)")
        print(f"rollouts the process grader saw converge: {len(converged)} of {len(final)}")
        rubric = Path(root, "revise.yaml")
        rubric.write_text(ROLLOUT_RUBRIC)
        replay = subprocess.run(
            [
                sys.executable,
                "-m",
                "arbiter",
                "replay",
                "--rubric",
                str(rubric),
                "--database-url",
                db,
                "--report",
                f"{root}/replay",
            ],
            capture_output=True,
            text=True,
            check=False,
        )
        summary = (
            json.loads(Path(root, "replay", "summary.json").read_text())
            if replay.returncode == 0
            else {}
        )
        kept = ("replayed", "changed", "abstention_changes", "max_abs_delta")
        moved = {k: summary.get(k) for k in kept}
        print(f"replay of the logged rollouts (rc {replay.returncode}): {moved}")
        turns = summary.get("turns") or {}
        print(
            f"turn by turn: {turns.get('rollouts')} rollouts, {turns.get('runs')} test runs, "
            f"{turns.get('same')} with the feedback the policy read"
        )


if __name__ == "__main__":
    main()
