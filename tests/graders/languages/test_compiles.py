"""A compile is ours: its queue and wait never end a grading; its own CPU is the candidate's."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from arbiter.graders.languages import language
from arbiter.graders.languages.base import Build, Toolchain
from arbiter.graders.programs import CompileFailed, Programs
from arbiter.graders.runner import GraderJob, run_jobs
from arbiter.graders.sandbox import Limits, RunReport, SandboxError, SandboxPool
from arbiter.graders.types import FailureKind, IOCase, Sample, TaskSpec
from arbiter.graders.unit_tests import UnitTestsConfig, UnitTestsGrader
from tests.graders.languages.conftest import require_toolchain

# g++ evaluates this at compile time: each loop under its iteration limit, and
# minutes of the compiler's own CPU before its operation limit.
CONSTEXPR_LOOP = """
#include <cstdio>
constexpr long spin() {
    long s = 0;
    for (int i = 0; i < 200000; i++)
        for (int j = 0; j < 200000; j++) s += (i ^ j) & 1;
    return s;
}
static_assert(spin() > 0, "spun");
int main() { std::printf("1\\n"); }
"""
SEVEN = '#include <cstdio>\nint main() {{ std::printf("%d\\n", 7 + {i} * 0); }}\n'


def test_a_compile_that_uses_up_its_own_cpu_is_a_compile_timeout(
    language_grader: UnitTestsGrader,
) -> None:
    require_toolchain(language_grader, "cpp")
    task = TaskSpec(kind="stdin_stdout", language="cpp", tests=[IOCase(input="", output="1")])
    sample = Sample(id="spin", response=f"```cpp\n{CONSTEXPR_LOOP}```", task=task)
    config = UnitTestsConfig(compile_timeout_s=1.0)
    result = language_grader.grade_sync(sample, config)
    assert result.score == 0.0, result
    assert result.details["failure_kind"] == FailureKind.COMPILE_TIMEOUT.value
    # Unscored, it is the candidate's typed fault, never one of ours.
    strict = language_grader.grade_sync(sample, config.model_copy(update={"fail_as_zero": False}))
    assert strict.failure is not None and strict.failure.kind == FailureKind.COMPILE_TIMEOUT


class _WaitedPool:
    """A pool whose compile ran into its wall-clock backstop with its CPU time to spare.

    A stand-in: a real compile that waits without spending CPU (on a host that
    keeps it off every core for its whole backstop) cannot be caused on demand.
    """

    def build_run(self, spec: object, limits: Limits) -> tuple[RunReport, None]:
        report = RunReport(
            exit_code=None,
            signal=9,
            ended_by="deadline",
            wall_s=limits.wall_s,
            cpu_s=0.3,
            maxrss_kb=0,
            strays=0,
            stdout=b"",
            stdout_size=0,
            stderr=b"",
            stderr_size=0,
        )
        return report, None


def test_a_compile_ended_by_its_wall_clock_with_cpu_to_spare_is_ours(
    language_grader: UnitTestsGrader,
) -> None:
    require_toolchain(language_grader, "cpp")
    cpp = language("cpp")
    toolchain = language_grader.programs.toolchain("cpp")
    assert toolchain is not None
    waited = Programs(lambda: _WaitedPool())  # type: ignore[arg-type, return-value]
    build = cpp.program("int main() { return 0; }\n")
    limits = Limits(timeout_s=5.0, wall_factor=2.0)
    with pytest.raises(SandboxError, match="backstop"):
        waited.artifact(cpp, toolchain, build, limits)


def _harness(*commands: str) -> Build:
    return Build(
        files={"harness.txt": "the task's tests\n"},
        compile=tuple(("sh", "-c", c) for c in commands),
        artifacts=("harness.txt",),
        run=("true",),
    )


@pytest.mark.parametrize(
    ("command", "ended"),
    [("kill -KILL $$", "killed"), ("kill -XCPU $$", "killed"), ("sleep 30", "timeout")],
)
def test_a_harness_compile_stopped_by_a_limit_is_ours_and_not_kept(
    tmp_path: Path, command: str, ended: str
) -> None:
    # Go's first harness, cold, beside five languages' compiles under 4x load ran
    # past its limit; kept as "the task's tests do not compile", it made the
    # task's canonical solution abstain. A limit says nothing about the task.
    programs = Programs(lambda: None, cache_dir=str(tmp_path))  # type: ignore[arg-type, return-value]
    programs.HARNESS_COMPILE_S = 0.5
    toolchain = Toolchain(paths={}, version="sh")
    build = _harness("echo compiling", command)
    try:
        for _ in range(2):  # never kept: the next grade compiles it again
            with pytest.raises(SandboxError, match=rf"stopped \({ended}\)") as raised:
                programs.harness(language("cpp"), toolchain, build)
            assert "compiling" not in str(raised.value)  # no diagnostics of the task's
        made = programs.harness(language("cpp"), toolchain, _harness("true"))
        assert isinstance(made, str) and Path(made, "harness.txt").is_file()
    finally:
        programs.close()


def test_a_harness_that_does_not_compile_is_the_tasks_and_kept(tmp_path: Path) -> None:
    programs = Programs(lambda: None, cache_dir=str(tmp_path))  # type: ignore[arg-type, return-value]
    toolchain = Toolchain(paths={}, version="sh")
    build = _harness("echo 'harness.txt:1: no such type' >&2; exit 1")
    try:
        first = programs.harness(language("cpp"), toolchain, build)
        assert isinstance(first, CompileFailed) and first.ended == "error"
        assert "no such type" in first.diagnostics
        assert programs.harness(language("cpp"), toolchain, build) is first
    finally:
        programs.close()


def test_a_burst_of_compiles_waits_for_compile_places_and_never_times_out(
    language_pool: SandboxPool, language_grader: UnitTestsGrader
) -> None:
    # More distinct programs than compile places, each graded under a job
    # timeout shorter than the burst takes: the queue is ours, every one scores.
    require_toolchain(language_grader, "cpp")
    task = TaskSpec(kind="stdin_stdout", language="cpp", tests=[IOCase(input="", output="7")])
    samples = [
        Sample(
            id=f"burst-{i}",
            response=f"```cpp\n{SEVEN.format(i=i)}```",
            task=task,
        )
        for i in range(6)
    ]
    jobs = [
        GraderJob(s, "tests", language_grader, UnitTestsConfig(), timeout_s=1.0) for s in samples
    ]
    results = asyncio.run(run_jobs(jobs))
    assert [r.score for r in results] == [1.0] * 6, [r.failure for r in results]
    assert language_pool.building() == (0, 0)


@pytest.mark.parametrize("name", ["go", "cpp", "rust", "java", "javascript"])
def test_text_no_build_can_hold_is_the_candidates_compile_error(
    language_grader: UnitTestsGrader, name: str
) -> None:
    # A lone surrogate (an import path our reader could not decode made the grade
    # crash, ours, and the reward abstain): the candidate's fault, scored 0.
    require_toolchain(language_grader, name)
    body = {
        "go": 'package main\nimport "\ud800"\nfunc main() {}\n',
        "cpp": 'int main() { const char* s = "\ud800"; return 0; }\n',
        "rust": 'fn main() { let _ = "\ud800"; }\n',
        "java": 'class Main { public static void main(String[] a) { String s = "\ud800"; } }\n',
        "javascript": 'console.log("\ud800");\n',
    }[name]
    task = TaskSpec(kind="stdin_stdout", language=name, tests=[IOCase(input="", output="")])
    sample = Sample(id="surrogate", response=f"```{name}\n{body}```", task=task)
    result = language_grader.grade_sync(sample, UnitTestsConfig())
    assert result.score == 0.0, result
    assert result.details["failure_kind"] == FailureKind.COMPILE_ERROR.value


@pytest.mark.parametrize("name", ["go", "cpp", "rust", "java", "javascript"])
def test_a_task_text_no_build_can_hold_is_the_tasks_and_abstains(
    language_grader: UnitTestsGrader, name: str
) -> None:
    # A lone surrogate in the task's prompt (bench.fuzz_readers: C++'s and Java's
    # builds carried the prompt's text into the candidate's file, and writing it
    # raised, ours). The task's fault: it abstains, and the candidate who continued
    # the prompt is not blamed with a compile error.
    require_toolchain(language_grader, name)
    prompt = {
        "go": "package main\n\n// Add \ud800 two numbers.\nfunc Add(a int, b int) int {\n",
        "cpp": "/* Add \ud800 two numbers. */\nint add(int a, int b){\n",
        "rust": "/* Add \ud800 two numbers. */\nfn add(a: i32, b: i32) -> i32 {\n",
        "java": "class Solution {\n    /* Add \ud800 */\n    public int add(int a, int b) {\n",
        "javascript": "/* Add \ud800 two numbers. */\nconst add = (a, b) => {\n",
    }[name]
    task = TaskSpec(kind="test_program", language=name, tests="")
    sample = Sample(id="surrogate", prompt=prompt, response="    return a + b;\n}\n", task=task)
    result = language_grader.grade_sync(sample, UnitTestsConfig())
    assert result.score is None, result
    assert result.failure is not None
    assert result.failure.kind is FailureKind.COLLECTION_ERROR, result.failure
    assert "not valid Unicode" in result.failure.message


def test_a_local_compile_past_its_limit_leaves_no_process_behind(tmp_path):
    """A stopped compile takes its driver's children with it (cc1plus under g++)."""
    import subprocess as sp

    from arbiter.graders.languages import local as local_builds
    from arbiter.graders.languages.base import Build, Toolchain

    marker = f"arbiter-orphan-{tmp_path.name}"
    build = Build(
        files={},
        compile=(("sh", "-c", f"bash -c 'exec -a {marker} sleep 60' & wait"),),
        artifacts=(),
        run=("true",),
    )
    toolchain = Toolchain(paths={}, version="", roots=())
    done = local_builds.compile_build(build, str(tmp_path), toolchain, str(tmp_path), timeout_s=1)
    assert not done.ok and done.ended == "timeout"
    left = sp.run(["pgrep", "-f", marker], capture_output=True, text=True).stdout.split()
    assert left == [], left
