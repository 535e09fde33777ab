"""OpenRLHF: a ``reward_func`` file for ``--remote_rm_url /path/to/this/file.py``.

OpenRLHF imports the file and calls ``reward_func(queries, prompts, labels)``.
This one forwards the batch to Arbiter's ``/get_reward`` (set ARBITER_URL,
ARBITER_API_KEY, ARBITER_RUBRIC) and returns tensors as OpenRLHF expects. A
retried call is answered from Arbiter's log, not graded twice.
"""

from __future__ import annotations

from typing import Any

from arbiter.adapters._common import client_from_env
from arbiter.client import ArbiterClient

__all__ = ["reward_func"]

_client: tuple[ArbiterClient, str] | None = None


def reward_func(queries: list[str], prompts: list[str], labels: list[Any]) -> dict[str, Any]:
    """Grade a batch; return ``rewards``, ``scores`` and ``extra_logs`` as tensors."""
    import torch

    global _client
    if _client is None:
        _client = client_from_env()
    client, rubric = _client
    response = client.request(
        "POST",
        "/get_reward",
        params={"rubric": rubric},
        json={"query": list(queries), "prompts": list(prompts), "labels": list(labels or [])},
    )
    data = response.json()
    return {
        "rewards": torch.tensor(data["rewards"], dtype=torch.float32),
        "scores": torch.tensor(data["scores"], dtype=torch.float32),
        "extra_logs": {
            k: torch.tensor(v, dtype=torch.float32) for k, v in data["extra_logs"].items()
        },
    }
