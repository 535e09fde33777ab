"""Score normalization: fixed affine, running and per-group z-scores."""

from __future__ import annotations

import asyncio
import math
import statistics

import pytest
from hypothesis import given
from hypothesis import strategies as st

from arbiter.reward_models.errors import NormalizationError
from arbiter.reward_models.normalize import (
    AffineNormalizer,
    GroupZScorer,
    RunningZNormalizer,
    group_zscores,
)

finite = st.floats(-1e6, 1e6, allow_nan=False)


@given(st.lists(finite, min_size=2, max_size=40))
def test_group_zscores_are_centred_and_keep_order(values):
    z = group_zscores(values)
    if statistics.pstdev(values) > 1e-6 * max(1.0, max(abs(v) for v in values)):
        assert abs(math.fsum(z)) < 1e-6 * len(z)
        for a, b, za, zb in zip(values, values[1:], z, z[1:], strict=False):
            if a < b:
                assert za <= zb


@pytest.mark.parametrize(
    ("values", "expected"),
    [([], []), ([3.0], [0.0]), ([2.0, 2.0], [0.0, 0.0]), ([1.0, 3.0], [-1.0, 1.0])],
)
def test_group_zscores_table(values, expected):
    assert group_zscores(values) == pytest.approx(expected)


@pytest.mark.parametrize(
    ("mean", "std"), [(None, 1.0), (0.0, None), (None, None), (0.0, 0.0), (0.0, math.inf)]
)
def test_affine_without_statistics_is_an_error(mean, std):
    with pytest.raises(NormalizationError):
        AffineNormalizer(mean, std)


def test_affine():
    assert AffineNormalizer(2.0, 4.0)(10.0) == 2.0


def test_running_z_warms_up_then_matches_the_statistics():
    norm = RunningZNormalizer(min_count=5)
    values = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0]
    out = [norm(v) for v in values]
    assert out[:4] == [0.0] * 4
    assert norm.mean == pytest.approx(statistics.fmean(values))
    assert norm.std == pytest.approx(statistics.pstdev(values))
    assert out[-1] == pytest.approx((7.0 - 4.0) / statistics.pstdev(values))


def test_group_scorer_z_scores_within_each_group_only():
    scorer = GroupZScorer()
    raws = {("a", 0): 1.0, ("a", 1): 3.0, ("b", 0): 100.0, ("b", 1): 300.0, ("c", 0): 5.0}

    async def member(group, raw, delay):
        ticket = scorer.join(group)
        await asyncio.sleep(delay)
        return await scorer.settle(ticket, raw)

    async def go():
        return await asyncio.gather(
            *(member(g, raw, 0.001 * i) for i, ((g, _), raw) in enumerate(raws.items()))
        )

    assert asyncio.run(go()) == pytest.approx([-1.0, 1.0, -1.0, 1.0, 0.0])


def test_group_scorer_leaves_failed_and_abandoned_members_out():
    scorer = GroupZScorer()

    async def go():
        tickets = [scorer.join("g") for _ in range(4)]
        scorer.abandon(tickets[3])
        return await asyncio.gather(
            scorer.settle(tickets[0], 1.0),
            scorer.settle(tickets[1], None),
            scorer.settle(tickets[2], 3.0),
        )

    assert asyncio.run(go()) == [-1.0, None, 1.0]


def test_a_member_joining_after_settlement_starts_a_new_round():
    scorer = GroupZScorer()

    async def go():
        first = scorer.join("g")
        assert await scorer.settle(first, 5.0) == 0.0
        late = [scorer.join("g"), scorer.join("g")]
        return await asyncio.gather(scorer.settle(late[0], 0.0), scorer.settle(late[1], 2.0))

    assert asyncio.run(go()) == [-1.0, 1.0]
