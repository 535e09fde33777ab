"""verl's released SandboxFusion reward, unchanged, against a live ``arbiter serve``.

``verl.utils.reward_score.sandbox_fusion`` posts one ``/run_code`` per test case
and reads SandboxFusion's answer; pointed at Arbiter's URL (the key as the
URL's password: verl sends no header of its own), it grades through Arbiter's
sandbox. MBPP's functions are rewritten as stdin programs (the arguments on
stdin, the answer's ``repr`` on stdout), HumanEvalPack's Python and C++ tasks as
programs that check one of their assertions per case, and what verl scores is
compared with ``arbiter score`` of the same problems as ``stdin_stdout`` tasks.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

from verl.utils.reward_score import default_compute_score, sandbox_fusion
from verl.utils.reward_score.sandbox_fusion.utils import check_correctness

from bench.runs import humanevalpack_stdin_problems, stdin_problems
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
    # verl's reward manager calls default_compute_score; a code data source with
    # sandbox_fusion_url set sends every case to that URL (continuous: the pass
    # share of the first 10 cases, and no MBPP problem has more).
    routed = [
        default_compute_score(
            "codecontests",
            f"```python\n{p['program']}\n```",
            {"inputs": [c[0] for c in p["cases"]], "outputs": [c[1] for c in p["cases"]]},
            sandbox_fusion_url=_url(live),
            concurrent_semaphore=semaphore,
            memory_limit_mb=512,
        )
        for p in problems
    ]
    assert routed == verl_scores
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
    assert _arbiter_scores(tmp_path, rows) == verl_scores


def _arbiter_scores(tmp_path: Path, rows: list[dict[str, Any]]) -> list[float]:
    """``arbiter score`` of stdin_stdout rows under a tests-only rubric: each one's tests score."""
    source, out = tmp_path / "stdin.jsonl", tmp_path / "rewards.jsonl"
    source.write_text("".join(json.dumps(r) + "\n" for r in rows))
    rubric = tmp_path / "tests.yaml"
    rubric.write_text(
        "name: tests-only\nversion: 1\ncomponents:\n  tests:\n    grader: unit_tests\n"
        "    weight: 1.0\n    config: {timeout_s: 10}\n"
    )
    server_run("score", "--rubric", str(rubric), str(source), "-o", str(out))
    return [
        json.loads(line)["components"]["tests"]["score"] for line in out.read_text().splitlines()
    ]


def test_verl_grades_humanevalpack_rewritten_as_stdin_programs_in_python_and_cpp(
    live: LiveServer, tmp_path: Path
) -> None:
    semaphore = threading.Semaphore(8)
    rows, verl_scores = [], []
    for language, count in (("python", 60), ("cpp", 12)):
        right = humanevalpack_stdin_problems(language, count)
        wrong = humanevalpack_stdin_problems(language, count, "buggy_solution")
        assert [p["id"] for p in right] == [p["id"] for p in wrong]
        scores = []
        for p in right + wrong:
            cases = {"inputs": [c[0] for c in p["cases"]], "outputs": [c[1] for c in p["cases"]]}
            fenced = f"```{language}\n{p['program']}\n```"
            if language == "python":
                score, _ = sandbox_fusion.compute_score(_url(live), semaphore, 512, fenced, cases)
            else:
                # compute_score runs Python alone; verl's own per-case call takes a language.
                results, _ = check_correctness(
                    _url(live), cases, p["program"], timeout=10, language=language
                )
                score = sum(r is True for r in results) / len(results)
            scores.append(score)
            rows.append(
                {
                    "id": f"{p['id']}/{len(rows)}",
                    "response": fenced,
                    "task": {
                        "kind": "stdin_stdout",
                        "language": language,
                        "tests": [{"input": i, "output": o} for i, o in p["cases"]],
                    },
                }
            )
        # HumanEvalPack's canonical solutions pass every assertion; its buggy ones fail one.
        assert scores[:count] == [1.0] * count, (language, scores[:count])
        assert all(s < 1.0 for s in scores[count:]), (language, scores[count:])
        verl_scores += scores
    assert _arbiter_scores(tmp_path, rows) == verl_scores


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
