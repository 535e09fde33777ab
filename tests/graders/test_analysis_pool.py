"""The shared analysis pool: one grader closing must not stop the workers the other uses."""

from __future__ import annotations

import asyncio

from arbiter.graders.analysis_pool import WorkerPool
from arbiter.graders.bandit import BanditConfig, BanditGrader, analyze_bandit, warm_bandit
from arbiter.graders.radon import RadonConfig, RadonGrader, measure_radon, warm_radon
from arbiter.graders.static_analysis import StaticAnalyzer
from arbiter.graders.types import Sample

CODE = "```python\nimport subprocess\n\ndef f(x):\n    return subprocess.call(x, shell=True)\n```"


def test_closing_one_grader_keeps_the_pool_the_other_shares():
    pool = WorkerPool(1)
    try:
        bandit = BanditGrader(
            StaticAnalyzer(analyze_bandit, pool=pool, offload_at=1, warm_up=warm_bandit)
        )
        radon = RadonGrader(
            StaticAnalyzer(measure_radon, pool=pool, offload_at=1, warm_up=warm_radon)
        )
        assert pool.users == 2
        sample = Sample(id="s", response=CODE)
        first = asyncio.run(bandit.grade(sample, BanditConfig()))
        assert first.score is not None and bandit.analyzer.stats.offloaded == 1
        assert pool.running

        bandit.close()
        bandit.close()  # a second close gives nothing more back
        assert pool.users == 1 and pool.running
        measured = asyncio.run(radon.grade(sample, RadonConfig()))
        assert measured.score is not None and radon.analyzer.stats.offloaded == 1

        radon.close()
        assert pool.users == 0 and not pool.running
    finally:
        pool.close()


def test_the_pool_runs_each_warm_up_once_per_registration():
    pool = WorkerPool(0)
    pool.acquire(warm_radon)
    pool.acquire(warm_radon)
    pool.acquire(warm_bandit)
    assert pool.users == 3
    assert pool.executor() is None  # no workers asked for: the callers analyse inline
    assert pool._warm_ups == [warm_radon, warm_bandit]


def test_warming_starts_every_worker_before_the_first_job():
    # A cold pool's start is ours to pay before any sample: the first batch after
    # start is graded like the hundredth (no worker start inside a job's deadline).
    pool = WorkerPool(2)
    bandit = BanditGrader(StaticAnalyzer(analyze_bandit, pool=pool, warm_up=warm_bandit))
    radon = RadonGrader(StaticAnalyzer(measure_radon, pool=pool, warm_up=warm_radon))
    try:
        assert not pool.running
        asyncio.run(bandit.warm())
        assert pool.running
        assert len(pool.warm()) == 2  # both workers up, each answered
        asyncio.run(radon.warm())
    finally:
        bandit.close()
        radon.close()
    assert not pool.running
