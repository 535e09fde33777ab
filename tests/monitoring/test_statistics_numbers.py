"""The statistics give the same numbers since they moved onto scipy (fixed inputs, exact values).

The expected values were printed by the hand-written versions these replaced
(Benjamini-Hochberg's step-up, the tie-averaged group ranks, the two z-scores),
so a change of library that moved a result by one bit fails here.
"""

from __future__ import annotations

import numpy as np
import pytest

from arbiter.groups import group_zscores
from arbiter.monitoring.drift_statistics import benjamini_hochberg, holm, ks_two_sample
from arbiter.rubrics.compose import normalize_values

PVALUES = [
    ([0.001, 0.01, 0.02, 0.03, 0.04, 0.2], [1, 1, 0, 0, 0, 0], [1, 1, 1, 1, 1, 0]),
    ([0.05, 0.05, 0.05], [0, 0, 0], [1, 1, 1]),
    ([0.5, 0.0125, 0.025, 0.0375, 0.05], [0, 0, 0, 0, 0], [0, 0, 0, 0, 0]),
    ([0.01, 0.02, 0.03, 0.04, 0.05], [1, 0, 0, 0, 0], [1, 1, 1, 1, 1]),
    ([], [], []),
    ([0.2], [0], [0]),
    ([0.049, 0.051, 0.001, 0.9, 0.0100001, 0.025], [0, 0, 1, 0, 0, 0], [0, 0, 1, 0, 1, 1]),
]


@pytest.mark.parametrize(("pvalues", "by_holm", "by_bh"), PVALUES)
def test_multiple_testing_corrections_reject_as_before(pvalues, by_holm, by_bh):
    assert holm(pvalues, 0.05).tolist() == [bool(r) for r in by_holm]
    assert benjamini_hochberg(pvalues, 0.05).tolist() == [bool(r) for r in by_bh]


def test_ks_statistic_and_pvalue_as_before():
    rng = np.random.default_rng(7)
    expected = {
        (50, 400): (0.145, 0.28597067738864324),
        (200, 2000): (0.1605, 0.00015072463342280046),
        (30, 30): (0.2, 0.5940706297759378),
    }
    for (n1, n2), want in expected.items():
        window, reference = rng.beta(2, 5, n1), rng.beta(2, 4, n2)
        assert ks_two_sample(window, reference) == want
        assert ks_two_sample(window, reference) == want  # the cached lattice point too


GROUPS = [
    (
        [0.3, 0.1, 0.1, 0.9, 0.5],
        [0.0, -0.75, -0.75, 1.0, 0.5],
        [
            -0.2672612419124244,
            -0.9354143466934853,
            -0.9354143466934853,
            1.7371980724307585,
            0.40089186286863654,
        ],
    ),
    ([1.0, 1.0, 1.0], [0.0, 0.0, 0.0], [0.0, 0.0, 0.0]),
    ([0.2, 0.7], [-1.0, 1.0], [-1.0, 1.0]),
    (
        [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8],
        [
            -1.0,
            -0.7142857142857143,
            -0.4285714285714286,
            -0.1428571428571429,
            0.1428571428571428,
            0.4285714285714286,
            0.7142857142857142,
            1.0,
        ],
        [
            -1.5275252316519465,
            -1.0910894511799618,
            -0.6546536707079772,
            -0.2182178902359923,
            0.21821789023599236,
            0.654653670707977,
            1.0910894511799616,
            1.5275252316519468,
        ],
    ),
]


@pytest.mark.parametrize(("values", "ranks", "zscores"), GROUPS)
def test_group_ranks_and_zscores_as_before(values, ranks, zscores):
    groups = ["g"] * len(values)
    assert normalize_values(values, groups, "group_rank") == ranks
    assert normalize_values(values, groups, "group_z") == zscores
    # One z-score for the rubric and the reward model's normalizer alike.
    assert group_zscores(values) == zscores
