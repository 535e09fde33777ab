"""Candidate calls sent ahead: the same calls, in the same order, with the same outcomes."""

from __future__ import annotations

import socket

import pytest

from arbiter.graders.sandbox import Limits, SandboxPool
from arbiter.graders.sandbox.checks import UnitOutcome, plan_function_tests, run_plan
from arbiter.graders.sandbox.proxy import Channel
from arbiter.graders.types import ViolationType
from arbiter.graders.unit_tests import UnitTestsGrader
from tests.graders.sandbox.conftest import function_task, grade, not_a_pass

#: A candidate with state: each call returns how many calls came before it, plus x.
COUNTER = """
calls = []

def f(x, step=1):
    calls.append(x)
    return len(calls) - 1 + x * step

def slow(x):
    if x == 3:
        while True:
            pass
    return x
"""


def run(
    pool: SandboxPool, code: str, tests: str, timeout_s: float = 5.0
) -> tuple[list[UnitOutcome], Channel]:
    plan = plan_function_tests(tests)
    limits = Limits(timeout_s=timeout_s)
    with pool.function_run(code, limits, sorted(plan.declared | {"f"})) as child:
        channel = Channel(child.channel, child.deadline, max_bytes=1 << 20)
        load = channel.load()
        assert load.ok
        outcomes = run_plan(plan, channel, load, "f")
        channel.check_quiet()
    return outcomes, channel


def test_literal_asserts_go_ahead_in_order(pool: SandboxPool) -> None:
    tests = "def check(candidate):\n" + "".join(
        f"    assert candidate({x}) == {i + x}\n" for i, x in enumerate([5, 0, 7, 2, 2])
    )
    outcomes, channel = run(pool, COUNTER, tests)
    assert [o.outcome for o in outcomes] == ["passed"] * 5
    assert channel.pipelined == 5 and channel.broken is None


def test_the_pipeline_stops_at_a_statement_it_cannot_predict(pool: SandboxPool) -> None:
    # The third statement computes its argument: it and everything after run one at a
    # time, and the stateful candidate still sees the calls in the tests' order.
    tests = (
        "def check(candidate):\n"
        "    assert candidate(10) == 10\n"
        "    assert candidate(10, step=2) == 21\n"
        "    y = candidate(0) + 100\n"
        "    assert y == 102\n"
        "    assert candidate(1) == 4\n"
        "    assert abs(candidate(1) - 5) < 1e-9\n"
    )
    outcomes, channel = run(pool, COUNTER, tests)
    assert [o.outcome for o in outcomes] == ["passed"] * 5
    assert channel.pipelined == 2


def test_calls_free_statements_are_skipped_but_a_rebinding_stops_it(pool: SandboxPool) -> None:
    tests = (
        "def check(candidate):\n"
        "    assert candidate(1) == 1\n"
        "    assert True\n"
        "    assert candidate(1) == 2\n"
        "    candidate = lambda x: -1\n"
        "    assert candidate(1) == -1\n"
    )
    outcomes, channel = run(pool, COUNTER, tests)
    assert [o.outcome for o in outcomes] == ["passed"] * 4
    assert channel.pipelined == 2


def test_failures_and_errors_are_per_unit_as_one_at_a_time(pool: SandboxPool) -> None:
    tests = (
        "def check(candidate):\n"
        "    assert candidate(0) == 0\n"
        "    assert candidate(0) == 99, 'wrong on purpose'\n"
        "    assert candidate('a') == 2\n"
        "    assert candidate(0) == 3\n"
    )
    outcomes, channel = run(pool, COUNTER, tests)
    assert [o.outcome for o in outcomes] == [
        "passed",
        "assertion_failed",
        "runtime_error",  # 'a' * 1 + 2: the candidate raised TypeError
        "passed",
    ]
    assert channel.pipelined == 4


def test_a_timeout_in_the_pipeline_keeps_the_answers_before_it(pool: SandboxPool) -> None:
    tests = "def check(candidate):\n" + "".join(f"    assert slow({x}) == {x}\n" for x in range(6))
    outcomes, _ = run(pool, COUNTER, tests, timeout_s=1.0)
    assert [o.outcome for o in outcomes[:3]] == ["passed"] * 3
    # The stuck call and the rest fail alike: "timeout" when the trusted side's clock
    # fires first, "exited" when the zygote's kill at the same deadline closes the
    # channel first (a race of two equal deadlines, as for calls one at a time).
    rest = {o.outcome for o in outcomes[3:]}
    assert len(outcomes) == 6 and len(rest) == 1 and rest <= {"timeout", "exited"}


@pytest.mark.parametrize("when", ["at load", "during a call"])
def test_forged_replies_are_still_caught(grader: UnitTestsGrader, when: str) -> None:
    # A reply of the candidate's own on the channel (fd 3), with a made-up nonce,
    # among the answers to calls sent ahead: the channel breaks, and it is flagged.
    forge = (
        "import json, os, struct\n"
        "def forge():\n"
        "    body = json.dumps({'id': 1, 'nonce': '0', 'ok': 1}).encode()\n"
        "    os.write(3, struct.pack('>I', len(body)) + body)\n"
    )
    body = "    return 1\n" if when == "at load" else "    forge()\n    return 1\n"
    code = forge + ("forge()\n" if when == "at load" else "") + "def f(x):\n" + body
    tests = "def check(candidate):\n" + "".join(
        f"    assert candidate({x}) == 1\n" for x in range(4)
    )
    result = grade(grader, code, function_task(tests))
    assert not_a_pass(result)
    assert ViolationType.VERDICT_FORGERY in {v.type for v in result.violations}


def test_a_run_gone_before_the_calls_fails_each_unit(pool: SandboxPool) -> None:
    # The candidate leaves right after loading: sending the calls ahead meets a
    # closed socket, and every unit fails as "exited" (not the grader). It exits
    # on the child's first read after the load reply, and the test waits for
    # the channel's end of file before sending anything: no timing involved.
    code = (
        "import os, socket\n"
        "def _gone(*args, **kwargs):\n"
        "    os._exit(0)\n"
        "socket.socket.recv = socket.socket.recv_into = _gone\n"
        "def f(x):\n"
        "    return x\n"
    )
    tests = "def check(candidate):\n    assert candidate(1) == 1\n    assert candidate(2) == 2\n"
    plan = plan_function_tests(tests)
    with pool.function_run(code, Limits(timeout_s=5.0), sorted(plan.declared | {"f"})) as child:
        channel = Channel(child.channel, child.deadline, max_bytes=1 << 20)
        load = channel.load()
        assert load.ok
        child.channel.settimeout(30)
        assert child.channel.recv(1, socket.MSG_PEEK) == b""  # gone
        outcomes = run_plan(plan, channel, load, "f")
    assert [o.outcome for o in outcomes] == ["exited", "exited"]
    assert channel.broken is not None and channel.broken.reason == "exited"
