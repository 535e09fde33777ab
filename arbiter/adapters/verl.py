"""verl: ``compute_score`` for ``custom_reward_function`` (sync and async).

Point verl's config at this file (``custom_reward_function.path``) with
``name: compute_score`` (or ``compute_score_async``), and set ARBITER_URL,
ARBITER_API_KEY and ARBITER_RUBRIC. Every call returns the same keys — ``score``,
``abstained`` and one per rubric component — because verl stacks them across
the batch. An abstained reward scores ``ARBITER_ABSTAIN_VALUE`` (default 0.0)
with ``abstained = 1.0`` so it can be masked.
"""

from __future__ import annotations

import os
from typing import Any

from arbiter.adapters._common import (
    async_client_from_env,
    client_from_env,
    fetch_rubric,
    parse_label,
    sample_id,
)
from arbiter.client import ArbiterClient, AsyncArbiterClient

__all__ = ["compute_score", "compute_score_async", "score_dict"]

_sync: tuple[ArbiterClient, str, list[str]] | None = None
_async: tuple[AsyncArbiterClient, str, list[str]] | None = None


def _sample(
    data_source: str, solution_str: str, ground_truth: Any, extra_info: Any
) -> dict[str, Any]:
    prompt = ""
    if isinstance(extra_info, dict):
        prompt = str(extra_info.get("prompt") or extra_info.get("question") or "")
    row: dict[str, Any] = {
        "id": sample_id("verl", data_source, prompt, solution_str),
        "prompt": prompt,
        "response": solution_str,
    }
    row.update(parse_label(ground_truth))
    return row


def score_dict(
    reward: dict[str, Any], components: list[str], abstain_value: float
) -> dict[str, float]:
    """Flatten one reward into verl's fixed-key dict."""
    value = reward["reward"]
    out = {
        "score": abstain_value if value is None else float(value),
        "abstained": float(value is None),
    }
    for name in components:
        score = reward["components"][name]["score"]
        out[name] = abstain_value if score is None else float(score)
    return out


def _abstain_value() -> float:
    return float(os.environ.get("ARBITER_ABSTAIN_VALUE", "0.0"))


def compute_score(
    data_source: str, solution_str: str, ground_truth: Any, extra_info: Any = None, **_: Any
) -> dict[str, float]:
    """Grade one response (verl's synchronous reward interface)."""
    global _sync
    if _sync is None:
        client, rubric = client_from_env()
        _sync = (client, rubric, list(fetch_rubric(client, rubric)["components"]))
    client, rubric, components = _sync
    batch = client.rewards([_sample(data_source, solution_str, ground_truth, extra_info)], rubric)
    return score_dict(batch.rewards[0], components, _abstain_value())


async def compute_score_async(
    data_source: str, solution_str: str, ground_truth: Any, extra_info: Any = None, **_: Any
) -> dict[str, float]:
    """Grade one response (verl's asynchronous reward interface)."""
    global _async
    if _async is None:
        sync_client, rubric = client_from_env()
        components = list(fetch_rubric(sync_client, rubric)["components"])
        sync_client.close()
        client, _rubric = async_client_from_env()
        _async = (client, rubric, components)
    client, rubric, components = _async
    batch = await client.rewards(
        [_sample(data_source, solution_str, ground_truth, extra_info)], rubric
    )
    return score_dict(batch.rewards[0], components, _abstain_value())
