"""Statistics within a GRPO group (the samples that share a prompt): standard library only.

A shared module at the root of the namespace: the rubric's ``group_z``
normalization (:mod:`arbiter.rubrics.compose`) and a reward model's ``group``
normalization (:mod:`arbiter.reward_models.normalize`) compute the same z-scores.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

__all__ = ["group_zscores"]


def group_zscores(values: Sequence[float]) -> list[float]:
    """Return each value's z-score within ``values`` (population std; pure).

    A group of one, or of equal values, gets 0.0 for each member.
    """
    n = len(values)
    if n == 0:
        return []
    mean = math.fsum(values) / n
    std = math.sqrt(math.fsum((v - mean) ** 2 for v in values) / n)
    if n < 2 or std <= 1e-12 * max(1.0, abs(mean)):
        return [0.0] * n
    centred = [(v - mean) / std for v in values]
    shift = math.fsum(centred) / n  # remove rounding drift so the mean is 0 to the last bit we can
    return [c - shift for c in centred]
