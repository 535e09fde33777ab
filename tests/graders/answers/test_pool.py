"""The killable workers: the clock starts at the take, a stuck check dies alone."""

from __future__ import annotations

import asyncio
import os
import signal
import time

import pytest

from arbiter.graders.answers.pool import (
    CheckCrashed,
    CheckPool,
    CheckStarved,
    CheckTimeout,
    report_phase,
)


def nap(*, seconds: float) -> int:
    time.sleep(seconds)
    return os.getpid()


def spin(*, phase: str) -> None:
    report_phase(phase)
    while True:
        pass


def burn(*, cpu_s: float) -> float:
    """Use ``cpu_s`` of this process's CPU time, however long the host makes it take."""
    until = time.process_time() + cpu_s
    while time.process_time() < until:
        pass
    return time.process_time()


async def _stopped_for(pid: int, seconds: float) -> None:
    """Keep process ``pid`` off the CPU for ``seconds``, as a saturated host would."""
    os.kill(pid, signal.SIGSTOP)
    try:
        await asyncio.sleep(seconds)
    finally:
        os.kill(pid, signal.SIGCONT)


def explode(*, message: str) -> None:
    raise ValueError(message)


def hoard() -> int:
    block = [bytearray(1 << 20) for _ in range(1 << 14)]  # 16 GiB: past the worker's bound
    return len(block)


def die() -> None:
    os._exit(3)


def test_a_queued_check_is_not_timed_while_it_waits():
    # One worker, six checks of 0.3 s each with a 1 s limit: the last waits 1.5 s in the
    # queue. A clock that started at submission would fail it (verifiers#831).
    async def go():
        pool = CheckPool(1)
        try:
            outcomes = await asyncio.gather(*(pool.run(nap, 1.0, seconds=0.3) for _ in range(6)))
        finally:
            pool.close()
        return outcomes

    outcomes = asyncio.run(go())
    assert len(outcomes) == 6
    assert all(o.run_s < 1.0 for o in outcomes)


def test_a_stuck_check_is_killed_and_the_others_are_graded():
    async def go():
        pool = CheckPool(2)
        try:
            stuck = asyncio.ensure_future(pool.run(spin, 0.5, phase="prediction"))
            others = await asyncio.gather(*(pool.run(nap, 5.0, seconds=0.01) for _ in range(20)))
            with pytest.raises(CheckTimeout) as caught:
                await stuck
            # The pool replaced the killed worker and goes on.
            after = await pool.run(nap, 5.0, seconds=0.0)
        finally:
            pool.close()
        return others, caught.value, after, pool.killed

    others, timeout, after, killed = asyncio.run(go())
    assert len(others) == 20
    assert timeout.phase == "prediction"
    assert "0.5 s limit" in str(timeout)
    assert after.value > 0
    assert killed == 1


def test_a_check_kept_off_the_cpu_past_its_limit_is_not_timed_out():
    # The limit is the check's own CPU time: on a busy host (a make test beside it)
    # a 1 s wall-clock limit had failed checks that needed 0.3 s, the candidate's 0.
    async def go():
        pool = CheckPool(1)
        try:
            pid = (await pool.run(nap, 5.0, seconds=0.0)).value
            check = asyncio.ensure_future(pool.run(burn, 0.5, cpu_s=0.2))
            await asyncio.sleep(0.05)
            await _stopped_for(pid, 1.0)  # twice the limit, with no CPU to use
            return await check
        finally:
            pool.close()

    outcome = asyncio.run(go())
    assert outcome.run_s > 1.0  # past its limit on the wall clock, within it in CPU
    assert outcome.value > 0.2


def test_a_check_the_host_starves_past_its_backstop_is_ours_not_a_timeout():
    async def go():
        pool = CheckPool(1, wall_factor=2.0)
        try:
            pid = (await pool.run(nap, 5.0, seconds=0.0)).value
            check = asyncio.ensure_future(pool.run(spin, 0.5, phase="prediction"))
            await asyncio.sleep(0.05)
            os.kill(pid, signal.SIGSTOP)  # off the CPU until the pool kills it
            with pytest.raises(CheckStarved) as caught:
                await check
            after = await pool.run(nap, 5.0, seconds=0.0)  # a fresh worker took its place
        finally:
            pool.close()
        return caught.value, after, pool.killed

    starved, after, killed = asyncio.run(go())
    assert not isinstance(starved, CheckTimeout)
    assert starved.phase == "prediction"
    assert "kept off the CPU" in str(starved)
    assert after.value > 0 and killed == 1


def test_an_error_is_typed_with_its_phase_and_the_worker_survives():
    async def go():
        pool = CheckPool(1)
        try:
            with pytest.raises(CheckCrashed) as caught:
                await pool.run(explode, 5.0, message="bad input")
            pid = (await pool.run(nap, 5.0, seconds=0.0)).value
            again = (await pool.run(nap, 5.0, seconds=0.0)).value
        finally:
            pool.close()
        return caught.value, pid, again

    error, pid, again = asyncio.run(go())
    assert "ValueError: bad input" in str(error)
    assert pid == again  # an error in the check is not a death of the worker


def test_memory_is_bounded_in_the_worker_not_the_service():
    async def go():
        pool = CheckPool(1, memory_mb=512)
        try:
            with pytest.raises(CheckCrashed) as caught:
                await pool.run(hoard, 30.0)
        finally:
            pool.close()
        return caught.value

    assert "MemoryError" in str(asyncio.run(go()))


def test_a_worker_that_dies_is_replaced():
    async def go():
        pool = CheckPool(1)
        try:
            with pytest.raises(CheckCrashed) as caught:
                await pool.run(die, 5.0)
            after = await pool.run(nap, 5.0, seconds=0.0)
        finally:
            pool.close()
        return caught.value, after

    error, after = asyncio.run(go())
    assert "died" in str(error)
    assert after.value > 0


def test_the_pool_starts_one_worker_and_grows_to_its_size_under_a_burst():
    # A service warms every grader its rubrics name: one process each until samples
    # come, then as many as queue, never more than the pool's size.
    async def go():
        pool = CheckPool(3)
        try:
            await pool.start()
            warm = pool.started
            pids = await asyncio.gather(*(pool.run(nap, 5.0, seconds=0.2) for _ in range(12)))
            idle = await pool.run(nap, 5.0, seconds=0.0)
        finally:
            pool.close()
        return warm, {o.value for o in pids}, idle, pool.started

    warm, pids, idle, started = asyncio.run(go())
    assert warm == 1
    assert started == 3
    assert len(pids) == 3
    assert idle.value in pids
