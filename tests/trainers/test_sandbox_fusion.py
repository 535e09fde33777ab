"""verl's released SandboxFusion reward, unchanged, against a live ``arbiter serve``.

``verl.utils.reward_score.sandbox_fusion`` posts one ``/run_code`` per test case
and reads SandboxFusion's answer; pointed at Arbiter's URL (the key as the
URL's password: verl sends no header of its own), it grades through Arbiter's
sandbox. MBPP's functions are rewritten as stdin programs (the arguments on
stdin, the answer's ``repr`` on stdout), and what verl scores is compared with
``arbiter score`` of the same problems as ``stdin_stdout`` tasks.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

from verl.utils.reward_score import sandbox_fusion
from verl.utils.reward_score.sandbox_fusion.utils import check_correctness

from bench.runs import stdin_problems
from tests.trainers.conftest import LiveServer, server_run


def _url(live: LiveServer) -> str:
    key = live.keys["trainer"]
    return live.url.replace("http://", f"http://trainer:{key}@") + "/run_code"


def test_verls_sandbox_fusion_reward_grades_through_arbiter(live: LiveServer, tmp_path: Path):
    problems = stdin_problems(200)
    assert len(problems) == 200
    semaphore = threading.Semaphore(8)
    verl_scores = []
    for p in problems:
        cases = {"inputs": [c[0] for c in p["cases"]], "outputs": [c[1] for c in p["cases"]]}
        score, metadata = sandbox_fusion.compute_score(
            _url(live), semaphore, 512, f"```python\n{p['program']}\n```", cases
        )
        assert all(m["status"] in ("success", "wrong_answer") for m in metadata), metadata
        verl_scores.append(score)
        # A wrong answer, for every problem: the same program answering None.
        wrong, _ = sandbox_fusion.compute_score(
            _url(live), semaphore, 512, "```python\nprint(None)\n```", cases
        )
        assert wrong == 0.0
    # MBPP's references pass their own tests, but for 8 whose answers equal the expected
    # value and print otherwise (240.0 for 240, a Counter for a dict, another key order).
    assert sum(s == 1.0 for s in verl_scores) >= 180
    # The same problems through `arbiter score`, as stdin_stdout tasks: the same scores.
    rows = [
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
    source, out = tmp_path / "stdin.jsonl", tmp_path / "rewards.jsonl"
    source.write_text("".join(json.dumps(r) + "\n" for r in rows))
    rubric = tmp_path / "tests.yaml"
    rubric.write_text(
        "name: tests-only\nversion: 1\ncomponents:\n  tests:\n    grader: unit_tests\n"
        "    weight: 1.0\n    config: {timeout_s: 10}\n"
    )
    server_run("score", "--rubric", str(rubric), str(source), "-o", str(out))
    ours = [
        json.loads(line)["components"]["tests"]["score"] for line in out.read_text().splitlines()
    ]
    assert ours == verl_scores


CPP_SUM = "#include <iostream>\nint main() { long a, b; std::cin >> a >> b; std::cout << a + b; }\n"


def test_verl_reads_each_failures_status_as_it_reads_sandbox_fusions(live: LiveServer):
    inputs, outputs = ["1 2", "5 7"], ["3", "12"]
    cases = {"inputs": inputs, "outputs": outputs}

    def check(code: str, language: str) -> list[Any]:
        results, _ = check_correctness(_url(live), cases, code, timeout=2, language=language)
        return results

    assert check(CPP_SUM, "cpp") == [True, True]
    assert check("int main() { return x; }\n", "cpp") == [-4, -4]  # compile_error
    assert check("while True:\n    pass\n", "python") == [-3, -3]  # timeout
    assert check("raise SystemExit(4)\n", "python") == [-2, -2]  # runtime_error
    assert check("print(sum(map(int, input().split())))\n", "python") == [True, True]
    go = (
        'package main\nimport "fmt"\n'
        "func main() { var a, b int; fmt.Scan(&a, &b); fmt.Print(a + b) }\n"
    )
    assert check(go, "go") == [True, True]
