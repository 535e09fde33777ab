"""What every bridged language does alike, one test a behaviour over :data:`harness.LANGUAGES`.

Each test runs once a language (``[cpp]``), or once a language and a case
(``[cpp-row12]``, ``[go-os_exit_zero_in_init]``): the reference task's builds, whole
sessions through the bridge, the attacks, HumanEvalPack rows both ways, the runtime's
codec against wire.py, and every reader of candidate text under fuzzing. Where the
languages differ the difference is a field of the language's row
(:class:`harness.Lang`); what only one language does is tested in its
``test_<lang>.py``.
"""

from __future__ import annotations

import resource
import subprocess
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import pytest

from arbiter.graders.languages import local, wire
from arbiter.graders.languages.base import ProgramParts
from tests.graders.languages.harness import (
    ATTACK_KEYS,
    LANGUAGES,
    MEMORY_MB,
    Lang,
    Rig,
    fuzz,
    same,
)
from tests.strictness import unavailable

# ``make test`` hands this module out a language at a time (tests/conftest.py's
# SPLIT_BY_FIRST_ID): every test's id starts with its language.

#: A compiled session's mark (the seconds: a language's share of this module on a busy
#: host, C++'s the most, so that each starts first among the units handed out).
SLOW = pytest.mark.slow(seconds=270)


def _languages(
    has: Callable[[Lang], object], slow: Callable[[Lang], bool] = lambda lang: False
) -> list[Any]:
    """The languages with ``has``, each its own test (``[cpp]``), slow where ``slow`` says."""
    return [
        pytest.param(lang, id=lang.name, marks=[SLOW] if slow(lang) else [])
        for lang in LANGUAGES
        if has(lang)
    ]


def _cases(
    cases: Callable[[Lang], Iterable[tuple[str, Any]]],
    slow: Callable[[Lang], bool] = lambda lang: False,
) -> list[Any]:
    """Each language's (id, case) pairs, each its own test (``[cpp-row12]``)."""
    return [
        pytest.param(lang, case, id=f"{lang.name}-{name}", marks=[SLOW] if slow(lang) else [])
        for lang in LANGUAGES
        for name, case in cases(lang)
    ]


def _sessions_slow(lang: Lang) -> bool:
    return lang.slow


@pytest.fixture
def rig(lang: Lang, tmp_path_factory: pytest.TempPathFactory) -> Rig:
    """The language's toolchain, prepared once a session."""
    return lang.rig(tmp_path_factory)


# --- the reference task's builds ----------------------------------------------------------


@pytest.mark.parametrize("lang", _languages(lambda lang: lang.task))
def test_declared_reads_the_open_declaration(lang: Lang) -> None:
    assert lang.task is not None
    bare = ProgramParts(prompt=lang.task.prompt, code="", tests=lang.task.tests)
    [d] = lang.language.declared(bare)
    assert (d.name, d.params, d.returns, d.header) == lang.task.declared


@pytest.mark.parametrize("lang", _languages(lambda lang: lang.task))
def test_the_harness_holds_no_candidate_code(lang: Lang) -> None:
    assert lang.task is not None
    parts = lang.parts()
    assert lang.task.marker not in "\n".join(lang.language.harness(parts).files.values())
    assert lang.task.marker in "\n".join(lang.language.candidate(parts).files.values())


@pytest.mark.parametrize("lang", _languages(lambda lang: lang.task))
def test_harness_of_a_whole_program_answer_is_the_same(lang: Lang) -> None:
    assert lang.task is not None
    parts = lang.parts(body=lang.task.whole)
    assert not parts.continued and parts.code == lang.task.whole
    assert lang.language.harness(parts) == lang.language.harness(lang.parts())


# --- whole sessions through the bridge ----------------------------------------------------


@pytest.mark.parametrize("lang", _languages(lambda lang: lang.task, _sessions_slow))
def test_a_right_answer_passes_and_a_wrong_one_fails(lang: Lang, rig: Rig, tmp_path: Path) -> None:
    assert lang.task is not None
    ok, why = rig.bridged(lang.parts(), str(tmp_path / "right"))
    assert ok, why
    wrong = lang.task.body.replace(*lang.task.wrong)
    assert wrong != lang.task.body
    ok, why = rig.bridged(lang.parts(body=wrong), str(tmp_path / "wrong"))
    assert not ok and lang.task.wrong_says in why, why


@pytest.mark.parametrize("lang", _languages(lambda lang: lang.exception, _sessions_slow))
def test_a_thrown_exception_reaches_the_harness_as_the_language_means(
    lang: Lang, rig: Rig, tmp_path: Path
) -> None:
    # C++'s harness throws it again for the tests to catch; Java's and JavaScript's
    # fail the run even where the tests would catch it.
    assert lang.exception is not None
    ok, why = rig.bridged(lang.session(lang.exception), str(tmp_path))
    assert ok is lang.exception.passes and lang.exception.says in why, why


@pytest.mark.parametrize("lang", _languages(lambda lang: lang.dies, _sessions_slow))
def test_a_candidate_that_dies_or_breaks_the_bridge_fails(
    lang: Lang, rig: Rig, tmp_path: Path
) -> None:
    for session in lang.dies:
        ok, why = rig.bridged(lang.session(session), str(tmp_path / session.name))
        assert not ok and session.says in why, (session.name, why)


@SLOW
@pytest.mark.parametrize("lang", _languages(lambda lang: lang.hog))
def test_running_out_of_heap_is_told_as_out_of_memory(lang: Lang, rig: Rig, tmp_path: Path) -> None:
    ok, why = rig.bridged(lang.parts(body=lang.hog), str(tmp_path))
    assert not ok
    assert any(p.search(why) for p in lang.language.out_of_memory), why


# --- programs alone -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "lang",
    _languages(
        lambda lang: lang.stdin_program,
        lambda lang: lang.stdin_program is not None and lang.stdin_program.slow,
    ),
)
def test_a_standalone_program_reads_stdin(lang: Lang, rig: Rig, tmp_path: Path) -> None:
    program = lang.stdin_program
    assert program is not None
    build = lang.language.program(program.code)
    out = rig.compile(build, str(tmp_path))
    done = subprocess.run(
        rig.resolve(build, out),
        cwd=out,
        input=program.stdin,
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert (done.returncode, done.stdout) == (0, program.stdout), done.stderr


@pytest.mark.parametrize("lang", _languages(lambda lang: lang.heap))
def test_a_program_starts_within_the_address_space_it_asks_for(
    lang: Lang, rig: Rig, tmp_path: Path
) -> None:
    assert lang.heap is not None
    build = lang.language.program(lang.heap.code)
    out = rig.compile(build, str(tmp_path))
    limit = (MEMORY_MB + lang.language.limits.address_space_mb) << 20
    nofile = lang.language.limits.open_files

    def limits() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
        resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, nofile))

    done = subprocess.run(
        rig.resolve(build, out),
        cwd=out,
        env=local.run_env(build, out, out),
        capture_output=True,
        timeout=60,
        preexec_fn=limits,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    low, high = lang.heap.heap_mb
    assert low <= int(done.stdout) <= high


# --- the runtime's codec against wire.py ----------------------------------------------------


@pytest.mark.parametrize(
    "lang",
    _languages(lambda lang: lang.codec, lambda lang: lang.codec is not None and lang.codec.slow),
)
def test_runtime_codec_round_trips_wire_values(lang: Lang, rig: Rig, tmp_path: Path) -> None:
    codec = lang.codec
    assert codec is not None
    types = (
        [t for t, _ in codec.round_trips]
        + [t for t, _, _ in codec.converted]
        + [t for t, _ in codec.refused]
    )
    payloads = (
        [wire.encode(v) for _, v in codec.round_trips]
        + [p for _, p, _ in codec.converted]
        + [p for _, p in codec.refused]
    )
    replies = codec.echo(rig, str(tmp_path), types, payloads)
    assert len(replies) == len(payloads)
    for (kind, value), sent, got in zip(codec.round_trips, payloads, replies, strict=False):
        assert got == sent, (kind, value, got)
        assert same(wire.decode(got), value), (kind, value, got)
    rest = replies[len(codec.round_trips) :]
    for (kind, payload, expected), got in zip(codec.converted, rest, strict=False):
        assert got == expected, (kind, payload, got)
    for (kind, payload), got in zip(codec.refused, rest[len(codec.converted) :], strict=True):
        assert got.startswith(b"E"), (kind, payload, got)


# --- the attacks: each passes the naive harness and fails the bridged one -------------------


@pytest.mark.parametrize("lang", _languages(lambda lang: True))
def test_attacks_are_well_formed(lang: Lang) -> None:
    found = lang.attacks()
    assert len(found) >= 6
    for attack in found:
        assert ATTACK_KEYS <= set(attack) <= ATTACK_KEYS | lang.attack_keys
        parts = lang.attack_parts(attack)
        assert attack["response"] not in "\n".join(lang.language.harness(parts).files.values())
    assert len({a["name"] for a in found}) == len(found)


@pytest.mark.parametrize(
    ("lang", "attack"),
    _cases(lambda lang: [(a["name"], a) for a in lang.attacks()], _sessions_slow),
)
def test_attack_passes_the_naive_harness_and_fails_the_bridged_one(
    lang: Lang, attack: dict[str, Any], rig: Rig, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    parts = lang.attack_parts(attack)
    passed, why = rig.naive(parts, str(tmp_path / "naive"))
    assert passed, f"the control must pass the naive harness: {why}"
    if attack.get("relay"):
        # Defended by the grader's relay between the processes, which a bare socket
        # pair lacks: judged through the grader (the sandbox, the relay, the harness).
        from arbiter.graders.types import Sample, TaskSpec
        from arbiter.graders.unit_tests import UnitTestsConfig

        grader = request.getfixturevalue("language_grader")
        task = TaskSpec(
            kind="test_program",
            language=lang.name,  # type: ignore[arg-type]
            tests=attack["tests"],
            setup_code=attack["setup_code"],
        )
        sample = Sample(
            id=attack["name"], prompt=attack["prompt"], response=attack["response"], task=task
        )
        result = grader.grade_sync(sample, UnitTestsConfig(timeout_s=20))
        assert result.score == 0.0, (attack["name"], result.details)
        assert "out of turn" in result.details.get("candidate_ended", ""), result.details
        return
    passed, why = rig.bridged(parts, str(tmp_path / "bridged"))
    assert not passed, f"the attack passed the bridged harness ({attack['why']}): {why}"


# --- HumanEvalPack: the canonical solution passes, the buggy one fails ----------------------


@pytest.mark.parametrize(
    ("lang", "row"), _cases(lambda lang: [(f"row{r}", r) for r in lang.rows], _sessions_slow)
)
def test_humanevalpack_rows(lang: Lang, row: int, rig: Rig, tmp_path: Path) -> None:
    data = lang.row(row)
    for need in lang.row_requires:
        if need.marker in data["prompt"] and not Path(need.path).exists():
            unavailable(need.why)
    for variant, expected in (("canonical_solution", True), ("buggy_solution", False)):
        parts = ProgramParts(
            prompt=data["prompt"],
            code=data["prompt"] + data[variant],
            tests=data["test"],
            setup_code=data.get("test_setup", ""),
        )
        ok, why = rig.bridged(parts, str(tmp_path / variant), lang.row_timeout_s)
        assert ok is expected, (row, variant, why)
        if lang.rows_naive:
            ok, why = rig.naive(parts, str(tmp_path / f"naive-{variant}"))
            assert ok is expected, (row, variant, "naive", why)


# --- any text: the readers answer for every prompt and completion ---------------------------
#
# The strategies and checks are tests/graders/reader_fuzz.py's (``<language>.<reader>``):
# mask keeps the offsets of any text; defines answers for any code; declared reads any
# prompt or refuses the task; candidate builds any completion of a HumanEvalPack task or
# blames the candidate; candidate_of_any_task blames the task or the candidate only;
# harness reads any task or refuses it; program builds any code or blames the candidate.
# Each language's examples (harness.py) are inputs that once escaped a reader as a crash
# of ours or took it past the grader's deadline (an infra_timeout, ours, that the
# candidate's text caused).


@pytest.mark.parametrize(
    ("lang", "reader"), _cases(lambda lang: [(reader, reader) for reader in lang.fuzz])
)
def test_a_reader_answers_for_any_text(lang: Lang, reader: str) -> None:
    fuzz(f"{lang.name}.{reader}", lang.fuzz[reader])


@pytest.mark.parametrize(("lang", "read"), _cases(lambda lang: lang.long_reads))
def test_reading_long_text_takes_linear_time(lang: Lang, read: Callable[[], object]) -> None:
    # Each was quadratic or worse: seconds at 50 KB, minutes at a few hundred.
    start = time.process_time()
    read()
    assert time.process_time() - start < 5.0
