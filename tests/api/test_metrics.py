"""BatchHistogram exposes what prometheus_client's Histogram would for the same values."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st
from prometheus_client import CollectorRegistry, Histogram, generate_latest

from arbiter.api.metrics import SCORE_BUCKETS, BatchHistogram


def exposition(registry: CollectorRegistry) -> list[str]:
    """Sample lines, without comments and the reference's ``_created`` series."""
    return sorted(
        line
        for line in generate_latest(registry).decode().splitlines()
        if line and not line.startswith("#") and "_created" not in line
    )


@given(
    st.lists(
        st.tuples(
            st.sampled_from(["a", "b"]),
            st.sampled_from([*SCORE_BUCKETS, 0.05, 0.97, 2.0]) | st.floats(0, 1.5),
        ),
        max_size=60,
    )
)
def test_same_lines_as_the_reference_histogram(observations: list[tuple[str, float]]) -> None:
    ours, reference = CollectorRegistry(), CollectorRegistry()
    batch = BatchHistogram("score", "doc", ["component"], SCORE_BUCKETS, ours)
    single = Histogram("score", "doc", ["component"], buckets=SCORE_BUCKETS, registry=reference)
    for name in ("a", "b"):
        values = [v for n, v in observations if n == name]
        if values:
            # Two calls, so series accumulate across batches.
            batch.observe((name,), values[: len(values) // 2])
            batch.observe((name,), values[len(values) // 2 :])
        for v in values:
            single.labels(component=name).observe(v)
    mine, theirs = exposition(ours), exposition(reference)
    # Buckets and counts exactly; sums up to the order of additions.
    assert [x for x in mine if "_sum" not in x] == [x for x in theirs if "_sum" not in x]
    sums = [
        (a.split()[0], float(a.split()[1]), float(b.split()[1]))
        for a, b in zip(
            [x for x in mine if "_sum" in x], [x for x in theirs if "_sum" in x], strict=True
        )
    ]
    assert all(a == pytest.approx(b) for _, a, b in sums)


def test_negative_buckets_still_get_count_and_sum() -> None:
    registry = CollectorRegistry()
    rewards = BatchHistogram("reward", "doc", ["rubric"], (-1, 0, 1), registry)
    rewards.observe(("r",), [-2.0, -1.0, 0.5, 3.0, math.nan])
    lines = exposition(registry)
    assert 'reward_bucket{le="-1.0",rubric="r"} 2.0' in lines
    assert 'reward_bucket{le="+Inf",rubric="r"} 4.0' in lines
    assert 'reward_count{rubric="r"} 4.0' in lines
    assert 'reward_sum{rubric="r"} 0.5' in lines


def test_wrong_labels_and_unsorted_buckets_are_refused() -> None:
    registry = CollectorRegistry()
    h = BatchHistogram("h", "doc", ["a", "b"], (0, 1), registry)
    with pytest.raises(ValueError, match="takes labels"):
        h.observe(("only-one",), [0.5])
    with pytest.raises(ValueError, match="strictly increasing"):
        BatchHistogram("g", "doc", [], (1, 0), registry)
