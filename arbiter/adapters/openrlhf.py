"""OpenRLHF (proven on 0.11.2): a ``reward_func`` file for ``--reward.remote_url FILE.py``.

Two ways to use Arbiter from OpenRLHF, both through ``--reward.remote_url``
(the older ``--remote_rm_url`` is rejected by 0.11.2):

* **The service directly:** ``--reward.remote_url http://trainer:KEY@HOST:8000/get_reward``.
  OpenRLHF's client sends no headers; the key rides as the password of HTTP
  Basic, which its HTTP client sends when the URL carries userinfo. The rubric
  is ``?rubric=NAME`` or the service's ``ARBITER_OPENRLHF_RUBRIC``; what an
  abstained reward becomes is ``?abstain=zero|group_mean|raise`` or the
  service's ``ARBITER_OPENRLHF_ABSTAIN``.
* **This file:** ``--reward.remote_url $(python -c 'import arbiter.adapters.openrlhf as m;
  print(m.__file__)')``, with ARBITER_URL, ARBITER_API_KEY, ARBITER_RUBRIC and
  ARBITER_ABSTAIN set. OpenRLHF calls ``reward_func(queries, prompts, labels)``
  once per sample from worker threads; the calls are coalesced into micro-batches
  (:mod:`arbiter.adapters.coalescer`).

Both read rows the same way (:mod:`arbiter.rows`): a left-truncated
prompt is recovered, a query that cannot be split abstains on its own, a task
spec label is the task, the samples of one prompt are one group. ``extra_logs``
carries, per sample, ``abstained``, ``truncated_prompt`` and each component's
score (NaN where it could not score), so OpenRLHF logs them.
"""

from __future__ import annotations

import hashlib
import math
import threading
from typing import Any

from arbiter.adapters._common import AdapterSettings, Graded, grading_coalescer, sample_id
from arbiter.adapters.coalescer import Coalescer
from arbiter.rows import AbstainedError, UnsplittableQuery, parse_label, split_query

__all__ = ["reward_func"]

_lock = threading.Lock()
_state: tuple[Coalescer[Graded], AdapterSettings] | None = None


def _ready() -> tuple[Coalescer[Graded], AdapterSettings]:
    global _state
    with _lock:
        if _state is None:
            settings = AdapterSettings.from_env()
            _state = (grading_coalescer(settings), settings)
        return _state


def _logs(graded: Graded, truncated: bool) -> dict[str, float]:
    logs = {
        "abstained": float(graded.abstained),
        "truncated_prompt": float(truncated),
        "unsplittable": 0.0,
    }
    for name, component in graded.reward.components.items():
        score = component.score
        logs[name] = math.nan if score is None else float(score)
    return logs


def reward_func(queries: list[str], prompts: list[str], labels: list[Any]) -> dict[str, Any]:
    """Grade OpenRLHF's rows; return ``rewards``, ``scores`` and ``extra_logs`` as tensors.

    Raises:
        AbstainedError: a sample abstained and ARBITER_ABSTAIN is ``raise`` (or
            ``group_mean`` without a scored peer in its micro-batch).
    """
    import torch

    coalescer, settings = _ready()
    labels = list(labels) if labels else [None] * len(queries)
    rows: list[tuple[dict[str, Any] | UnsplittableQuery, bool]] = []
    for query, prompt, label in zip(queries, prompts, labels, strict=True):
        try:
            response, truncated = split_query(query, prompt)
        except UnsplittableQuery as e:
            rows.append((e, False))
            continue
        sample = {
            "id": sample_id("openrlhf", prompt, response),
            # The samples of one prompt are one group (OpenRLHF's samples per prompt).
            "group_id": hashlib.sha256(prompt.encode()).hexdigest()[:24],
            "prompt": prompt,
            "response": response,
            **parse_label(label),
        }
        rows.append((sample, truncated))
    graded = iter(
        coalescer.submit_all_sync([s for s, _ in rows if not isinstance(s, UnsplittableQuery)])
    )
    values: list[float] = []
    logs: dict[str, list[float]] = {}
    for item, truncated in rows:
        if isinstance(item, UnsplittableQuery):
            if settings.abstain != "zero":
                # group_mean has no peers to average for a sample never graded.
                raise AbstainedError(f"{item}; ARBITER_ABSTAIN={settings.abstain}") from item
            value, row_logs = 0.0, {"abstained": 1.0, "truncated_prompt": 0.0, "unsplittable": 1.0}
        else:
            result = next(graded)
            if isinstance(result, BaseException):
                raise result
            value, row_logs = result.value, _logs(result, truncated)
        values.append(value)
        for key, logged in row_logs.items():
            logs.setdefault(key, []).append(logged)
    rewards = torch.tensor(values, dtype=torch.float32)
    return {
        "rewards": rewards,
        "scores": rewards,
        "extra_logs": {k: torch.tensor(v, dtype=torch.float32) for k, v in logs.items()},
    }
