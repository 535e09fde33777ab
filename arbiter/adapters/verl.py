"""verl (proven on 0.9.1): ``compute_score`` / ``compute_score_async`` for its reward loop.

Configure ``main_ppo`` with the key it reads (the top-level
``custom_reward_function`` is not read by 0.9.1's ``main_ppo``; see
:func:`check_config`)::

    reward.custom_reward_function.path=pkg://arbiter.adapters.verl
    reward.custom_reward_function.name=compute_score_async   # or compute_score

and set ARBITER_URL, ARBITER_API_KEY, ARBITER_RUBRIC (and ARBITER_ABSTAIN).
verl calls the function once per sample, concurrently: the calls are coalesced
into micro-batches (:mod:`arbiter.adapters.coalescer`), so a step costs a few
batch requests, not one per sample.

What each call sends: the response; the label (``reward_model.ground_truth``: a
task spec becomes the task, see :mod:`arbiter.rows`); from
``extra_info``, the prompt (``prompt`` or ``question``), the group
(``uid`` when present, else ``data_source`` with the dataset ``index``, which all
rollouts of one prompt share), ``num_turns`` (verl fills it) and the response
length (``response_length``) as metrics. verl's own managers pass neither the
``uid`` nor the response length: :mod:`arbiter.adapters.verl_manager` adds both.

Every call returns the same keys, because verl stacks them across the batch
into ``reward_extra_info``: ``score``; ``abstained`` (1.0 where the rubric
abstained: its sum over a step is the abstention count); one key per rubric
component (NaN where it could not score, never a made-up 0.0). An abstained
``score`` is ARBITER_ABSTAIN's fallback, or an :class:`AbstainedError` under
``raise``.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Mapping
from typing import Any

from arbiter.adapters._common import (
    AdapterSettings,
    Graded,
    fetch_rubric,
    grading_coalescer,
    sample_id,
)
from arbiter.adapters.coalescer import Coalescer
from arbiter.rows import parse_label

__all__ = ["check_config", "compute_score", "compute_score_async", "score_dict"]

_lock = threading.Lock()
_state: tuple[Coalescer[Graded], list[str]] | None = None


def check_config(config: Mapping[str, Any]) -> None:
    """Fail when a verl config points its reward at Arbiter through a key verl does not read.

    Raises:
        ValueError: the top-level ``custom_reward_function.path`` is set while
            ``reward.custom_reward_function.path`` is not.
    """
    top = (config.get("custom_reward_function") or {}).get("path")
    reward = config.get("reward") or {}
    inner = (reward.get("custom_reward_function") or {}).get("path")
    if top and not inner:
        raise ValueError(
            f"custom_reward_function.path={top!r} is not read by verl 0.9.1's main_ppo: "
            f"set reward.custom_reward_function.path={top!r} (and .name) instead"
        )


def _number(value: Any) -> int | None:
    try:
        return None if value is None or isinstance(value, bool) else int(value)
    except (TypeError, ValueError):
        return None


def sample_of(
    data_source: str, solution_str: str, ground_truth: Any, extra_info: Any
) -> dict[str, Any]:
    """Build the sample verl's arguments describe (see the module docstring)."""
    info: Mapping[str, Any] = extra_info if isinstance(extra_info, Mapping) else {}
    prompt = info.get("prompt") or info.get("question") or ""
    if not isinstance(prompt, str | list):
        prompt = str(prompt)
    index = info.get("index")
    group = info.get("uid") or (f"{data_source}:{index}" if index is not None else None)
    row: dict[str, Any] = {
        "id": sample_id("verl", str(data_source), str(prompt), solution_str),
        "prompt": prompt,
        "response": solution_str,
    }
    if group is not None:
        row["group_id"] = str(group)
    metrics = {
        "turns": _number(info.get("num_turns")),
        "completion_tokens": _number(info.get("response_length")),
    }
    if any(v is not None for v in metrics.values()):
        row["metrics"] = {k: v for k, v in metrics.items() if v is not None}
    # The data source rides along (a routed rubric picks a route by it); GSM8K's and
    # MATH's bare answers become answer tasks (arbiter.rows.ANSWER_SOURCES).
    row.update(parse_label(ground_truth, str(data_source) if data_source else None))
    return row


def score_dict(graded: Graded, components: list[str]) -> dict[str, float]:
    """Flatten one answer into verl's fixed-key dict."""
    out = {"score": graded.value, "abstained": float(graded.abstained)}
    for name in components:
        score = graded.reward.components[name].score
        out[name] = math.nan if score is None else float(score)
    return out


def _ready() -> tuple[Coalescer[Graded], list[str]]:
    global _state
    with _lock:
        if _state is None:
            settings = AdapterSettings.from_env()
            with settings.client() as client:
                components = list(fetch_rubric(client, settings.rubric)["components"])
            _state = (grading_coalescer(settings), components)
        return _state


def compute_score(
    data_source: str, solution_str: str, ground_truth: Any, extra_info: Any = None, **_: Any
) -> dict[str, float]:
    """Grade one response (verl's synchronous interface; called from executor threads)."""
    coalescer, components = _ready()
    graded = coalescer.submit_sync(sample_of(data_source, solution_str, ground_truth, extra_info))
    return score_dict(graded, components)


async def compute_score_async(
    data_source: str, solution_str: str, ground_truth: Any, extra_info: Any = None, **_: Any
) -> dict[str, float]:
    """Grade one response (verl's asynchronous interface; awaited concurrently)."""
    coalescer, components = _ready()
    graded = await coalescer.submit(sample_of(data_source, solution_str, ground_truth, extra_info))
    return score_dict(graded, components)
