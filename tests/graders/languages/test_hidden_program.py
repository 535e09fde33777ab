"""Hidden cases for compiled tasks: values carried by the bridge, in the candidate's own run.

The reference runs against the task's harness once; the calls the harness made
of it are the visible inputs, mutated by type and asked of the reference
directly; what it answers (the same twice) is kept. The candidate meets those
calls after the harness's, in the same run, compared on the trusted side.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from arbiter.graders.hidden_cases import (
    HiddenCaseStore,
    derive_wire_cases,
    same_reply,
    wire_inputs,
)
from arbiter.graders.languages import wire
from arbiter.graders.programs import CompileFailed
from arbiter.graders.registry import default_registry
from arbiter.graders.sandbox import PoolConfig, SandboxPool
from arbiter.graders.types import Sample, TaskSpec
from arbiter.graders.unit_tests import UnitTestsConfig, UnitTestsGrader
from arbiter.rubrics.loader import load_rubric
from arbiter.rubrics.score import score_samples
from tests.graders.languages.conftest import require_toolchain
from tests.graders.test_hidden_cases import RUBRIC


def _call(name: str, *args: object) -> bytes:
    return wire.encode([name, list(args)])


def _reply(value: object) -> bytes:
    return b"r" + wire.encode(value)


# ---- the derivation, with a stand-in program


def test_the_visible_inputs_are_the_harness_calls_of_the_entry_point() -> None:
    exchanges = [
        (_call("total", [1, 2], 3), _reply(6)),
        (_call("helper", 5), _reply(10)),
        (_call("total", [4], 1), _reply(5)),
        (_call("total", [1, 2], 3), _reply(6)),  # a repeat is one input
        (_call("total", wire.Char(97), 1), _reply(0)),  # a character is not plain data
    ]
    name, calls = wire_inputs(exchanges, "total")
    assert name == "total"
    assert calls == [(([1, 2], 3), {}), (([4], 1), {})]
    # With no entry point named, the function the harness called most.
    assert wire_inputs(exchanges, None)[0] == "total"
    # Tuples cross as tuples and back (the mutator keeps their shape).
    name, calls = wire_inputs([(_call("f", wire.Tuple((1, "a"))), _reply(1))], "f")
    assert calls == [(((1, "a"),), {})]


def _program(answer, *, ends_on=None, flaky=()):  # type: ignore[no-untyped-def]
    """A stand-in for a run of the reference: answers each request until it ends."""
    runs = []

    def ask(requests):  # type: ignore[no-untyped-def]
        runs.append(len(requests))
        replies = []
        for request in requests:
            _, args = wire.decode(request)
            if ends_on is not None and ends_on(*args):
                return replies + [None] * (len(requests) - len(replies))
            value = answer(*args)
            if value is ValueError:
                replies.append(b"x" + wire.encode("no"))
            elif tuple(args) in flaky:
                replies.append(_reply(len(runs)))
            else:
                replies.append(_reply(value))
        return replies

    return ask, runs


VISIBLE = [(_call("f", a, b), _reply(a + b)) for a, b in ((1, 2), (3, 4), (10, 20), (0, 5))]


def test_kept_cases_are_what_the_reference_answers_the_same_twice() -> None:
    ask, runs = _program(lambda a, b: a + b)
    cases = derive_wire_cases(ask, VISIBLE, entry_point="f", seed="s", max_cases=8)
    assert len(cases.cases) == 8 and cases.entry_point == "f"
    for case in cases.cases:
        name, (a, b) = wire.decode(case.call.encode("latin-1"))
        assert name == "f" and case.expected.encode("latin-1") == _reply(a + b)
        assert (a, b) not in ((1, 2), (3, 4), (10, 20), (0, 5))
    assert len(runs) == 2  # all the inputs once, the kept ones again
    again = derive_wire_cases(ask, VISIBLE, entry_point="f", seed="s", max_cases=8)
    assert again.cases == cases.cases  # seeded by the task


def test_inputs_the_reference_raises_dies_on_or_answers_twice_differently_are_dropped() -> None:
    ask, runs = _program(
        lambda a, b: ValueError if a < 0 else a + b,
        ends_on=lambda a, b: a == 2 * 10,  # value * 2 of a visible 10: a stall
        flaky={(11, 20)},
    )
    cases = derive_wire_cases(ask, VISIBLE, entry_point="f", seed="x", max_cases=64)
    for case in cases.cases:
        _, (a, b) = wire.decode(case.call.encode("latin-1"))
        assert a >= 0 and a != 20 and (a, b) != (11, 20)
    dropped = cases.dropped
    assert sum(dropped.values()) + len(cases.cases) == cases.tried
    assert dropped.get("ended", 0) >= 1  # and the next run went on after it
    assert len(runs) >= 3


def test_a_reply_answers_by_value_never_an_error_or_nothing() -> None:
    assert same_reply(_reply([1.0, 2.0]), _reply([1.0, 2.0]))
    assert same_reply(_reply([1.0, 2.0 + 1e-9]), _reply([1.0, 2.0]))
    assert not same_reply(_reply([1.0, 2.1]), _reply([1.0, 2.0]))
    assert not same_reply(_reply(wire.Tuple((1, 2))), _reply([1, 2]))
    assert not same_reply(b"x" + wire.encode("boom"), _reply(1))
    assert not same_reply(None, _reply(1))
    assert not same_reply(b"r" + b"i1", _reply(1))  # does not decode


# ---- against the sandbox, in C++

PROMPT = """/*
Return the sum of the squares of a and b.
*/
#include<stdio.h>
using namespace std;
long long sum_sq(int a, int b){
"""
REFERENCE = "    return (long long)a*a + (long long)b*b;\n}\n"
TESTS = """#undef NDEBUG
#include<assert.h>
int main(){
    assert (sum_sq(1, 2) == 5);
    assert (sum_sq(3, 4) == 25);
    assert (sum_sq(0, 7) == 49);
    assert (sum_sq(6, 1) == 37);
}
"""
TABLE = """    if (a == 1 && b == 2) return 5;
    if (a == 3 && b == 4) return 25;
    if (a == 0 && b == 7) return 49;
    if (a == 6 && b == 1) return 37;
    return 0;
}
"""
#: Honest for as many calls as the visible tests make, then wrong.
COUNTER = """    static int calls = 0;
    calls += 1;
    if (calls > 4) return -1;
    return (long long)a*a + (long long)b*b;
}
"""
TASK = TaskSpec(
    kind="test_program", language="cpp", tests=TESTS, entry_point="sum_sq", reference=REFERENCE
)
CONFIG = UnitTestsConfig(timeout_s=20, hidden_cases=True)


@pytest.fixture(scope="module")
def hidden_grader(tmp_path_factory: pytest.TempPathFactory) -> Iterator[UnitTestsGrader]:
    # A pool of its own: closing a grader closes its pool.
    grader = UnitTestsGrader(SandboxPool(PoolConfig(slots=2)))
    grader.hidden = HiddenCaseStore(str(tmp_path_factory.mktemp("hidden")))
    yield grader
    grader.close()


def _grade(grader: UnitTestsGrader, body: str, task: TaskSpec = TASK):  # type: ignore[no-untyped-def]
    return grader.grade_sync(Sample(id="s", prompt=PROMPT, response=body, task=task), CONFIG)


def test_the_reference_passes_its_cases_and_a_table_of_the_visible_answers_fails_them(
    hidden_grader: UnitTestsGrader,
) -> None:
    require_toolchain(hidden_grader, "cpp")
    honest = _grade(hidden_grader, REFERENCE)
    assert honest.score == 1.0
    assert honest.details["hidden"]["total"] == 8
    assert honest.details["hidden"]["passed"] == 8
    table = _grade(hidden_grader, TABLE)
    assert table.score == 1.0  # the control: the visible tests pay it all
    assert table.details["hidden"]["failed"] >= 6
    # Counts only: no hidden call or answer is in what the grade carries.
    (cases,) = hidden_grader.hidden._memory.values()
    shown = json.dumps(table.details)
    for case in cases.cases:
        _, (a, b) = wire.decode(case.call.encode("latin-1"))
        assert f"{a}, {b}" not in shown and f"{a},{b}" not in shown


def test_the_hidden_calls_come_in_the_same_run_after_the_harness(
    hidden_grader: UnitTestsGrader,
) -> None:
    require_toolchain(hidden_grader, "cpp")
    result = _grade(hidden_grader, COUNTER)
    assert result.score == 1.0  # its first four answers are the visible tests'
    assert result.details["hidden"]["failed"] == 8  # one process answered them all


def test_a_task_whose_reference_fails_its_tests_gets_no_case(
    hidden_grader: UnitTestsGrader,
) -> None:
    require_toolchain(hidden_grader, "cpp")
    wrong = TASK.model_copy(update={"reference": "    return a + b;\n}\n"})
    result = _grade(hidden_grader, REFERENCE, wrong)
    assert result.score == 1.0
    assert result.details["hidden"] == {
        "total": 0,
        "reason": "the reference fails the task's tests",
    }


def test_the_hidden_tests_term_reads_a_compiled_task(
    hidden_grader: UnitTestsGrader, tmp_path: Path
) -> None:
    require_toolchain(hidden_grader, "cpp")
    registry = default_registry()
    registry.add_instance(hidden_grader)
    path = tmp_path / "rubric.yaml"
    path.write_text(RUBRIC)
    samples = [
        Sample(id="honest", prompt=PROMPT, response=REFERENCE, task=TASK),
        Sample(id="table", prompt=PROMPT, response=TABLE, task=TASK),
    ]
    good, bad = asyncio.run(score_samples(load_rubric(path), samples, registry=registry))
    assert good.reward == 1.0
    assert bad.components["tests"].score == 1.0
    assert bad.components["hidden_tests"].score < 0.5
    assert bad.reward <= 0.5


def test_a_reference_compile_ended_by_a_limit_is_ours_retried_and_not_cached(
    hidden_grader: UnitTestsGrader, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A mock of our own compile's outcome: a limit ending the reference's compile
    # cannot be caused on demand on a quiet host.
    grader = hidden_grader
    require_toolchain(grader, "cpp")
    monkeypatch.setattr(grader, "hidden", HiddenCaseStore(str(tmp_path)))
    artifact = grader.programs.artifact
    ended = []

    def limited(lang, toolchain, build, limits):  # type: ignore[no-untyped-def]
        if "(long long)a*a" in repr(build):  # the reference's build, not the table's
            ended.append(build)
            return CompileFailed("cc1plus: killed", "timeout"), False
        return artifact(lang, toolchain, build, limits)

    monkeypatch.setattr(grader.programs, "artifact", limited)
    result = _grade(grader, TABLE)
    assert result.score is None and result.failure is not None
    assert result.failure.kind == "sandbox_error" and result.failure.retryable
    assert len(ended) == 2  # once more, then typed as ours
    assert not grader.hidden._memory and not list(tmp_path.iterdir())
    monkeypatch.setattr(grader.programs, "artifact", artifact)
    assert _grade(grader, TABLE).details["hidden"]["total"] == 8  # derived once it can
