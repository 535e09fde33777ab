"""verl (0.9.1): a reward manager that hands the adapter what ``compute_score`` is not given.

verl's reward loop calls ``compute_score(data_source, solution_str, ground_truth,
extra_info)``: the rollout's ``uid`` (its GRPO group) and the response's token
count are not among the arguments. This manager is verl's own naive manager
with both copied into ``extra_info`` first, where :mod:`arbiter.adapters.verl`
reads them (``uid`` as the group, ``response_length`` as
``metrics.completion_tokens``)::

    reward.reward_manager.source=importlib
    reward.reward_manager.module.path=pkg://arbiter.adapters.verl_manager
    reward.reward_manager.name=ArbiterRewardManager

together with the ``reward.custom_reward_function`` keys of the adapter. Importing
this module imports verl; the adapter itself does not.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from verl.experimental.reward_loop.reward_manager.naive import (
    NaiveRewardManager,
)

__all__ = ["ArbiterRewardManager"]


class ArbiterRewardManager(NaiveRewardManager):
    """verl's naive reward manager, passing ``uid`` and ``response_length`` in ``extra_info``."""

    async def run_single(self, data: Any) -> dict[str, Any]:
        """Score the last sequence of ``data`` as the naive manager does, with the two fields."""
        data = data[-1:]
        item = data[0]
        responses = item.batch["responses"]
        length = int(item.batch["attention_mask"][-responses.shape[-1] :].sum())
        extra = item.non_tensor_batch.get("extra_info")
        if not isinstance(extra, dict):
            # The naive manager reads extra_info from ``data`` again: give it one there.
            extra = {}
            data.non_tensor_batch["extra_info"] = np.array([extra], dtype=object)
        extra["response_length"] = length
        uid = item.non_tensor_batch.get("uid")
        if uid is not None:
            extra["uid"] = str(uid)
        result: dict[str, Any] = await super().run_single(data)
        return result
