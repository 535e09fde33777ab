"""Compiled languages: compile once per completion against the peers' two ways, per language.

Run as ``python -m bench.multilang [--languages cpp,go] [--runs 3]``. In the same run, per
language:

**stdin/stdout, 10 cases** (a program that sums the numbers of its input line;
each completion differs by a comment, so none is a repeat):

(a) Arbiter: the ``unit_tests`` grader, the program compiled once in the sandbox
    and its artifact run once per case, confined;
(b) compile per test case, as SandboxFusion (one HTTP call per case from verl)
    and Piston do: the same sandbox, the same compile and run, but a fresh
    compile before every case;
(c) subprocess per problem, as bigcode-evaluation-harness: compiled once, each
    case a plain subprocess, no confinement at all.

**A GRPO-shaped ``test_program`` batch**: HumanEvalPack prompts, 8 completions
each (canonical and buggy solutions, repeats among them), graded by (a) and by
(c) (the candidate and the tests as one program, compiled and run per
completion); the compile cache's hit rate on the batch is printed.

With ``--humanevalpack`` it instead grades every HumanEvalPack row of each
language, canonical and buggy, and prints how many hold both ways and every
row that does not, with why.

Each line prints items/s (median over ``--runs``); ratios come last.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from arbiter.graders.languages import LANGUAGES, language
from arbiter.graders.languages import local as local_builds
from arbiter.graders.languages.base import ProgramParts
from arbiter.graders.programs import Artifact
from arbiter.graders.sandbox import PoolConfig, SandboxPool
from arbiter.graders.types import IOCase, Sample, TaskSpec
from arbiter.graders.unit_tests import UnitTestsConfig, UnitTestsGrader

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"
FILES = {
    "cpp": "cpp",
    "java": "java",
    "go": "go",
    "rust": "rust",
    "javascript": "js",
}

#: A program per language that prints the sum of the integers on its input line.
SUM_PROGRAMS = {
    "cpp": (
        "#include <iostream>\n#include <sstream>\n#include <string>\n// variant {n}\n"
        "int main() {{ std::string line; std::getline(std::cin, line);\n"
        "  std::istringstream in(line); long long x, s = 0; while (in >> x) s += x;\n"
        '  std::cout << s << "\\n"; }}\n'
    ),
    "java": (
        "import java.util.*;\n// variant {n}\npublic class Main {{\n"
        "  public static void main(String[] a) {{ Scanner in = new Scanner(System.in);\n"
        "    long s = 0; while (in.hasNextLong()) s += in.nextLong();\n"
        "    System.out.println(s); }} }}\n"
    ),
    "go": (
        'package main\n\nimport (\n\t"bufio"\n\t"fmt"\n\t"os"\n)\n\n// variant {n}\n'
        "func main() {{\n\tin := bufio.NewScanner(os.Stdin)\n\tin.Split(bufio.ScanWords)\n"
        "\tvar s int64\n\tfor in.Scan() {{\n\t\tvar x int64\n"
        "\t\tfmt.Sscan(in.Text(), &x)\n\t\ts += x\n\t}}\n\tfmt.Println(s)\n}}\n"
    ),
    "rust": (
        "use std::io::Read;\n// variant {n}\nfn main() {{ let mut t = String::new();\n"
        "  std::io::stdin().read_to_string(&mut t).unwrap();\n"
        "  let s: i64 = t.split_whitespace().map(|w| w.parse::<i64>().unwrap()).sum();\n"
        '  println!("{{}}", s); }}\n'
    ),
    "javascript": (
        "// variant {n}\nconst t = require('fs').readFileSync(0, 'utf8');\n"
        "console.log(t.split(/\\s+/).filter(Boolean).reduce((a, b) => a + Number(b), 0));\n"
    ),
}

CASES = [
    IOCase(input=" ".join(str(i * k) for k in range(1, 6)), output=str(i * 15)) for i in range(10)
]


def _median_rate(items: int, runs: list[float]) -> float:
    return items / statistics.median(runs)


def _line(name: str, items: int, runs: list[float], note: str = "") -> float:
    rate = _median_rate(items, runs)
    spread = f"(runs: {', '.join(f'{items / r:.2f}' for r in runs)})"
    print(f"  {name:<40} {items:>4} items  {rate:8.2f} items/s  {spread} {note}")
    return rate


def _timed(fn: Callable[[], Any]) -> float:
    started = time.perf_counter()
    fn()
    return time.perf_counter() - started


def stdio(grader: UnitTestsGrader, pool: SandboxPool, name: str, items: int, runs: int) -> None:
    """Section 1: stdin/stdout with 10 cases, (a) against (b) and (c)."""
    lang = language(name)
    toolchain = grader.programs.toolchain(name)
    if toolchain is None:
        print(f"  {name}: no toolchain on this host")
        return
    config = UnitTestsConfig(timeout_s=10)
    run_limits, build_limits = config.language_limits_for(lang)
    task = TaskSpec(kind="stdin_stdout", language=name, tests=CASES)
    counter = iter(range(10**9))

    def sources() -> list[str]:
        return [SUM_PROGRAMS[name].format(n=next(counter)) for _ in range(items)]

    def ours() -> None:
        for code in sources():
            result = grader.grade_sync(Sample(id="s", response=code, task=task), config)
            assert result.score == 1.0, (result.failure, result.details)

    def per_case() -> None:
        for code in sources():
            build = lang.program(code)
            for case in CASES:
                made, _ = grader.programs.artifact(lang, toolchain, build, build_limits)
                assert isinstance(made, Artifact), made
                grader.programs.forget(made.key)
                spec = grader.programs.run_spec(lang, toolchain, build, made, config.memory_mb)
                report = pool.program_run(spec, case.input.encode(), run_limits)
                assert report.stdout.split() == case.output.encode().split(), report

    cache = grader.programs.language_cache(name)

    def per_problem() -> None:
        for code in sources():
            build = lang.program(code)
            with tempfile.TemporaryDirectory() as out:
                done = local_builds.compile_build(build, out, toolchain, cache)
                assert done.ok, done.diagnostics
                argv = local_builds.resolve(build.run, toolchain, out, cache, config.memory_mb)
                env = local_builds.run_env(build, out, cache)
                for case in CASES:
                    ran = subprocess.run(
                        argv,
                        cwd=out,
                        env=env,
                        input=case.input.encode(),
                        capture_output=True,
                        timeout=30,
                        check=False,
                    )
                    assert ran.stdout.split() == case.output.encode().split(), ran

    ours()  # warm: the toolchain prepared, the pool's slots started
    timings: dict[str, list[float]] = {"a": [], "b": [], "c": []}
    for _ in range(runs):
        timings["a"].append(_timed(ours))
        timings["b"].append(_timed(per_case))
        timings["c"].append(_timed(per_problem))
    a = _line("(a) arbiter: compile once, confined", items, timings["a"])
    b = _line("(b) compile per test case, confined", items, timings["b"])
    c = _line("(c) subprocess per problem, unconfined", items, timings["c"])
    print(f"  ratio (a)/(b) {a / b:.2f}x   (a)/(c) {a / c:.2f}x")
    # What compiling once can win at most: with a compile of C and a run of R, (b) spends
    # n(C + R) per completion of n cases and (a) C + nR.
    build = lang.program(SUM_PROGRAMS[name].format(n=next(counter)))
    compiles, case_runs = [], []
    for _ in range(5):
        started = time.perf_counter()
        made, _ = grader.programs.artifact(lang, toolchain, build, build_limits)
        compiles.append(time.perf_counter() - started)
        assert isinstance(made, Artifact), made
        grader.programs.forget(made.key)
        spec = grader.programs.run_spec(lang, toolchain, build, made, config.memory_mb)
        started = time.perf_counter()
        pool.program_run(spec, CASES[1].input.encode(), run_limits)
        case_runs.append(time.perf_counter() - started)
    compile_s, run_s = statistics.median(compiles), statistics.median(case_runs)
    n = len(CASES)
    print(
        f"  one compile {compile_s * 1000:.0f} ms, one run {run_s * 1000:.0f} ms (confined,"
        f" medians of 5): compiling once wins at most n(C+R)/(C+nR) ="
        f" {n * (compile_s + run_s) / (compile_s + n * run_s):.2f}x over (b)"
    )


def _rows(name: str) -> list[dict[str, Any]]:
    path = DATA / f"humanevalpack_{FILES[name]}.jsonl"
    return [json.loads(line) for line in path.open()]


def _sample(name: str, row: dict[str, Any], response: str, sid: str) -> Sample:
    task = TaskSpec(
        kind="test_program",
        language=name,
        tests=row["test"],
        setup_code=row.get("test_setup"),
    )
    return Sample(id=sid, prompt=row["prompt"], response=response, task=task)


def grpo(grader: UnitTestsGrader, name: str, prompts: int, runs: int) -> None:
    """Section 2: a GRPO-shaped test_program batch, (a) against (c), and the cache's hit rate."""
    lang = language(name)
    toolchain = grader.programs.toolchain(name)
    if toolchain is None:
        print(f"  {name}: no toolchain on this host")
        return
    rows = _rows(name)[:prompts]
    batch: list[tuple[dict[str, Any], str, bool]] = []
    for row in rows:
        good, bad = row["canonical_solution"], row["buggy_solution"]
        # 8 completions: repeats of both, as a policy's samples at low temperature are.
        for response, passes in (
            (good, True),
            (good, True),
            (bad, False),
            (good, True),
            (bad, False),
            (good + "\n", True),
            (bad, False),
            (good, True),
        ):
            batch.append((row, response, passes))
    config = UnitTestsConfig(timeout_s=20)
    cache = grader.programs.language_cache(name)

    def ours() -> None:
        grader.programs.clear()
        for i, (row, response, passes) in enumerate(batch):
            result = grader.grade_sync(_sample(name, row, response, str(i)), config)
            assert (result.score == 1.0) == passes, (row["task_id"], passes, result)

    def per_problem() -> None:
        for row, response, passes in batch:
            parts = ProgramParts(
                prompt=row["prompt"],
                code=row["prompt"] + response,
                tests=row["test"],
                setup_code=row.get("test_setup") or "",
            )
            build = lang.naive(parts)
            with tempfile.TemporaryDirectory() as out:
                done = local_builds.compile_build(build, out, toolchain, cache)
                ok = False
                if done.ok:
                    proc = local_builds.start(build, out, toolchain, cache, None)
                    try:
                        proc.communicate(timeout=60)
                    except subprocess.TimeoutExpired:
                        proc.kill()
                        proc.communicate()
                    ok = proc.returncode == 0
                assert ok == passes or not passes, (row["task_id"], done.diagnostics[-500:])

    timings: dict[str, list[float]] = {"a": [], "c": []}
    hit_rates = []
    for _ in range(runs):
        before = (grader.programs.hits, grader.programs.misses)
        timings["a"].append(_timed(ours))
        hits = grader.programs.hits - before[0]
        misses = grader.programs.misses - before[1]
        hit_rates.append(hits / max(1, hits + misses))
        timings["c"].append(_timed(per_problem))
    a = _line("(a) arbiter: bridged, compile once", len(batch), timings["a"])
    c = _line("(c) candidate+tests per problem, unconfined", len(batch), timings["c"])
    print(
        f"  compile-cache hit rate on the batch: {statistics.median(hit_rates):.0%} "
        f"({len(rows)} prompts x 8 completions)   ratio (a)/(c) {a / c:.2f}x"
    )


def humanevalpack(grader: UnitTestsGrader, name: str, limit: int | None) -> None:
    """Every row, canonical and buggy: which hold both ways, and why the others do not."""
    rows = _rows(name)[:limit]
    config = UnitTestsConfig(timeout_s=20)
    held = canonical = buggy = 0
    broken: list[str] = []
    started = time.perf_counter()
    for row in rows:
        verdicts = {}
        for variant in ("canonical", "buggy"):
            sample = _sample(name, row, row[f"{variant}_solution"], f"{row['task_id']}/{variant}")
            result = grader.grade_sync(sample, config)
            verdicts[variant] = result
        ok_c = verdicts["canonical"].score == 1.0
        ok_b = verdicts["buggy"].score != 1.0
        canonical += ok_c
        buggy += ok_b
        held += ok_c and ok_b
        for variant, ok in (("canonical", ok_c), ("buggy", ok_b)):
            if not ok:
                r = verdicts[variant]
                why = r.failure.message if r.failure else str(r.details.get("harness_output_tail"))
                broken.append(f"    {row['task_id']} {variant}: score {r.score}: {why[-300:]!r}")
    seconds = time.perf_counter() - started
    print(
        f"  {name}: {held}/{len(rows)} rows hold both ways; canonical passed {canonical}/"
        f"{len(rows)}, buggy failed {buggy}/{len(rows)} ({seconds:.0f} s)"
    )
    for line in broken:
        print(line)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--languages", default=",".join(LANGUAGES))
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--items", type=int, default=6, help="stdin/stdout completions per run")
    parser.add_argument("--prompts", type=int, default=4, help="GRPO batch: prompts x 8")
    parser.add_argument("--humanevalpack", action="store_true")
    parser.add_argument("--rows", type=int, default=None, help="--humanevalpack: first N rows")
    args = parser.parse_args()
    names = [n for n in args.languages.split(",") if n]
    with SandboxPool(PoolConfig()) as pool:
        grader = UnitTestsGrader(pool)
        try:
            active = [k for k, v in pool.layers().items() if v.startswith("active")]
            print(f"sandbox layers: {', '.join(active)}")
            for name in names:
                toolchain = grader.programs.toolchain(name)
                print(
                    f"\n== {name}: {toolchain.version.splitlines()[0] if toolchain else 'missing'}"
                )
                if args.humanevalpack:
                    humanevalpack(grader, name, args.rows)
                    continue
                print(" stdin/stdout, 10 cases per completion")
                stdio(grader, pool, name, args.items, args.runs)
                print(" test_program, GRPO-shaped batch")
                grpo(grader, name, args.prompts, args.runs)
        finally:
            grader.close()


if __name__ == "__main__":
    main()
