"""The C++ stdin/stdout demo under the library rubric, through the CLI as `make demo` runs it."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from arbiter.cli import app
from arbiter.graders.unit_tests import UnitTestsGrader
from tests.graders.languages.conftest import require_toolchain

REPO = Path(__file__).resolve().parents[3]
DEMO = REPO / "eval_sets" / "cpp-stdio-demo.jsonl"
RUBRIC = REPO / "rubrics" / "library" / "cpp-competitive.yaml"


def test_the_cpp_demo_rewards_only_correct_programs(
    language_grader: UnitTestsGrader, tmp_path: Path
) -> None:
    require_toolchain(language_grader, "cpp")
    out = tmp_path / "rewards.jsonl"
    done = CliRunner().invoke(app, ["score", "--rubric", str(RUBRIC), str(DEMO), "-o", str(out)])
    assert done.exit_code == 0, done.output
    samples = {json.loads(line)["id"]: json.loads(line) for line in DEMO.read_text().splitlines()}
    rewards = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(rewards) == len(samples) == 11
    for reward in rewards:
        kind = samples[reward["id"]]["labels"]["kind"]
        tests = reward["components"]["tests"]
        if kind == "correct":
            assert reward["reward"] == 1.0, reward
        else:
            assert reward["reward"] is not None and reward["reward"] <= 0.0, reward
        assert tests["details"]["language"] == "cpp"
    by_id = {r["id"]: r["components"]["tests"]["details"] for r in rewards}
    # Typed, never a silent 0: the rubric reads them as 0 and the kind stays in the details.
    assert by_id["sums-compile-error"]["failure_kind"] == "compile_error"
    assert "expected" in by_id["sums-compile-error"]["diagnostics"]
    assert by_id["maxsub-memory-hog"]["failure_kind"] == "memory_limit"
    assert by_id["maxsub-output-flood"]["failure_kind"] == "output_limit"
    penalties = {r["id"]: [p["violation"] for p in r["penalties"]] for r in rewards}
    assert penalties["maxsub-network"] == ["network_access"]
    assert penalties["maxsub-output-flood"] == ["resource_abuse"]


def test_a_missing_toolchain_is_ours_typed_and_the_reward_abstains(
    language_grader: UnitTestsGrader, monkeypatch
) -> None:
    """A host without the language's compiler: toolchain_missing, never a 0 for the candidate.

    The fault is made by naming a compiler no host has (the language's own tool
    list), since uninstalling g++ is not a test's to do.
    """
    from arbiter.graders.languages import language
    from arbiter.graders.types import INFRASTRUCTURE_FAILURES, FailureKind, Sample
    from arbiter.graders.unit_tests import UnitTestsConfig
    from arbiter.rubrics import compose, load_rubric

    cpp = type(language("cpp"))
    monkeypatch.setattr(cpp, "tools", ("g++-that-no-host-has",))
    grader = UnitTestsGrader(language_grader.pool)
    sample = Sample.model_validate_json(DEMO.read_text().splitlines()[0])
    result = grader.grade_sync(sample, UnitTestsConfig())
    assert result.score is None and result.failure is not None
    assert result.failure.kind == FailureKind.TOOLCHAIN_MISSING
    assert result.failure.kind in INFRASTRUCTURE_FAILURES
    assert "g++-that-no-host-has" in result.failure.message
    reward = compose(load_rubric(RUBRIC), {"tests": result}, sample_id=sample.id)
    assert reward.reward is None
    assert "infrastructure failure" in (reward.abstain_reason or "")


def test_a_runtimes_out_of_memory_words_alone_do_not_type_a_failure(
    language_grader: UnitTestsGrader,
) -> None:
    """The candidate writes its stderr: memory_limit needs the run's own peak memory too."""
    from arbiter.graders.types import FailureKind, IOCase, Sample, TaskSpec
    from arbiter.graders.unit_tests import UnitTestsConfig

    require_toolchain(language_grader, "cpp")
    task = TaskSpec(
        kind="stdin_stdout",
        language="cpp",
        tests=[IOCase(input="1\n", output="1\n"), IOCase(input="2\n", output="2\n")],
    )
    config = UnitTestsConfig(timeout_s=10, fail_as_zero=False)
    forged = (
        "```cpp\n#include <cstdio>\nint main() {\n"
        '    std::fputs("terminate called after throwing an instance of '
        "'std::bad_alloc'\\n  what():  std::bad_alloc\\n\", stderr);\n"
        "    return 134;\n}\n```"
    )
    result = language_grader.grade_sync(Sample(id="forged", response=forged, task=task), config)
    # A plain failure, scored 0: never an unscored memory_limit the fill could read otherwise.
    assert result.score == 0.0, result
    assert {t["outcome"] for t in result.details["tests"]} == {"runtime_error"}
    hog = (
        "```cpp\n#include <vector>\nint main() {\n"
        "    std::vector<std::vector<long long>> t;\n"
        "    for (;;) t.emplace_back(1 << 20, 0);\n}\n```"
    )
    result = language_grader.grade_sync(Sample(id="hog", response=hog, task=task), config)
    assert result.score is None and result.failure is not None
    assert result.failure.kind == FailureKind.MEMORY_LIMIT
