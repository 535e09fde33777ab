"""The verdict in every language: HumanEvalPack holds both ways, and no attack forges a pass.

Each attack is a wrong (or absent) solution built to pass. Its control runs it
against the peers' harness (the candidate's code and the tests as one program,
the exit status as the verdict), confined in the same sandbox: there it must
pass, or the attack proves nothing. Through the grader (the candidate's code in
its own process, the tests in the trusted harness) it must not.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from arbiter.graders.languages import LANGUAGES, language
from arbiter.graders.languages.base import ProgramParts
from arbiter.graders.programs import CompileFailed
from arbiter.graders.types import Sample, TaskSpec
from arbiter.graders.unit_tests import UnitTestsConfig, UnitTestsGrader
from tests.graders.languages.conftest import attacks, require_toolchain
from tests.strictness import unavailable

DATA = Path(__file__).resolve().parents[4] / "shared" / "data"
FILES = {"cpp": "cpp", "java": "java", "go": "go", "rust": "rust", "javascript": "js"}
#: A fixed spread of HumanEvalPack rows per language (the benchmark grades all 164);
#: 162 needs a library (md5: JavaScript's js-md5, which ``make tools`` installs).
ROWS = (0, 12, 37, 101, 150, 162)
CONFIG = UnitTestsConfig(timeout_s=20)

ATTACKS = [(name, a) for name in LANGUAGES for a in attacks(name)]


def _task(name: str, tests: str, setup_code: str | None) -> TaskSpec:
    return TaskSpec(kind="test_program", language=name, tests=tests, setup_code=setup_code or None)  # type: ignore[arg-type]


def naive_verdict(grader: UnitTestsGrader, name: str, attack: dict[str, Any]) -> bool:
    """Whether the peers' harness passes the attack, run in the same sandbox."""
    lang = language(name)
    toolchain = grader.programs.toolchain(name)
    assert toolchain is not None
    prompt, response = attack["prompt"], attack["response"]
    bare = ProgramParts(
        prompt=prompt, code="", tests=attack["tests"], setup_code=attack.get("setup_code") or ""
    )
    names = [d.name for d in lang.declared(bare)]
    continued = bool(names) and not any(lang.defines(response, n) for n in names)
    parts = ProgramParts(
        prompt=prompt,
        code=prompt + response if continued else response,
        tests=attack["tests"],
        setup_code=attack.get("setup_code") or "",
        continued=continued,
    )
    build = lang.naive(parts)
    run_limits, build_limits = CONFIG.language_limits_for(lang)
    made, _ = grader.programs.artifact(lang, toolchain, build, build_limits)
    if isinstance(made, CompileFailed):
        return False
    spec = grader.programs.run_spec(lang, toolchain, build, made, CONFIG.memory_mb)
    report = grader.pool.program_run(spec, b"", run_limits)
    return report.exit_code == 0


@pytest.mark.parametrize(("name", "attack"), ATTACKS, ids=[f"{n}-{a['name']}" for n, a in ATTACKS])
def test_no_attack_forges_a_pass(
    language_grader: UnitTestsGrader, name: str, attack: dict[str, Any]
) -> None:
    require_toolchain(language_grader, name)
    assert naive_verdict(language_grader, name, attack), f"the control: {attack['why']}"
    sample = Sample(
        id=attack["name"],
        prompt=attack["prompt"],
        response=attack["response"],
        task=_task(name, attack["tests"], attack.get("setup_code")),
    )
    result = language_grader.grade_sync(sample, CONFIG)
    assert result.score != 1.0, (attack["why"], result.details)


def test_every_language_has_at_least_five_attacks() -> None:
    for name in LANGUAGES:
        assert len(attacks(name)) >= 5, name


@pytest.mark.parametrize("name", LANGUAGES)
def test_humanevalpack_holds_both_ways(language_grader: UnitTestsGrader, name: str) -> None:
    require_toolchain(language_grader, name)
    path = DATA / f"humanevalpack_{FILES[name]}.jsonl"
    if not path.exists():
        unavailable(f"{path} is absent (../shared/data)")
    rows = [json.loads(line) for line in path.open()]
    for i in ROWS:
        row = rows[i]
        task = _task(name, row["test"], row.get("test_setup"))
        for variant, passes in (("canonical", True), ("buggy", False)):
            sample = Sample(
                id=row["task_id"],
                prompt=row["prompt"],
                response=row[f"{variant}_solution"],
                task=task,
            )
            result = language_grader.grade_sync(sample, CONFIG)
            assert (result.score == 1.0) == passes, (
                row["task_id"],
                variant,
                result.failure,
                result.details,
            )
