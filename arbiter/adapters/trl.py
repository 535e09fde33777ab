"""TRL (proven on 1.16.0): reward functions for ``GRPOTrainer``.

``reward_functions(client, rubric, composite=True)`` returns one function that
gives the rubric's own reward: use it for any rubric with gates, a formula,
``on_missing: renormalize``, clipping or normalization (``python-codegen`` has
all of these)::

    funcs, weights = reward_functions(client, "python-codegen", composite=True)
    GRPOTrainer(reward_funcs=funcs, args=GRPOConfig(reward_weights=weights, ...))

Without ``composite``, one function per rubric component (and a ``penalties``
function, weight 1, when the rubric has penalties) lets TRL log every
component; TRL then sums ``weight * component``, which equals the rubric's
reward only for a ``weighted_sum`` rubric without gates, clipping,
renormalization or normalization.

The batch is graded once, however many functions read it. What is sent per
row: the prompt and completion; ``completion_ids`` as
``metrics.completion_tokens`` (so efficiency scores); the dataset's ``task``,
``metrics``, ``trajectory``, ``group_id`` and ``data_source`` columns, or a task spec in its
``answer`` / ``solution`` column; and as ``group_id`` (unless given) the prompt
itself, which TRL repeats for each of its generations. Where the rubric
abstains every function returns ``None`` (TRL's "no reward": the row is left
out of the group baseline); a component that could not score is ``None`` too.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Sequence
from typing import Any

from arbiter.adapters._common import fetch_rubric, sample_id, text_of
from arbiter.client import ArbiterClient, RewardBatch
from arbiter.rows import parse_label

__all__ = ["RewardFunction", "reward_functions"]

RewardFunction = Callable[..., list[float | None]]
PASSED_COLUMNS = ("task", "metrics", "trajectory", "group_id", "data_source")
LABEL_COLUMNS = ("answer", "solution")


def _rows(
    prompts: Sequence[Any], completions: Sequence[Any], kwargs: dict[str, Any]
) -> list[dict[str, Any]]:
    """Build one sample per row from what TRL passes (see the module docstring)."""
    ids = kwargs.get("completion_ids")
    samples = []
    for i, (prompt, completion) in enumerate(zip(prompts, completions, strict=True)):
        prompt_text = (
            prompt
            if isinstance(prompt, str)
            else json.dumps(prompt, separators=(",", ":"), ensure_ascii=False)
        )
        response = text_of(completion)
        row: dict[str, Any] = {
            "id": sample_id(f"trl{i}", prompt_text, response),
            "group_id": sample_id("prompt", prompt_text),
            "prompt": prompt,
            "response": response,
        }
        for column in PASSED_COLUMNS:
            values = kwargs.get(column)
            if isinstance(values, list) and i < len(values) and values[i] is not None:
                row[column] = _task_of(values[i]) if column == "task" else values[i]
        if "task" not in row:
            for column in LABEL_COLUMNS:
                values = kwargs.get(column)
                if isinstance(values, list) and i < len(values):
                    row.update(parse_label(values[i], row.get("data_source")))
                    break
        if isinstance(ids, list) and i < len(ids) and ids[i] is not None:
            metrics = dict(row.get("metrics") or {})
            metrics.setdefault("completion_tokens", len(ids[i]))
            row["metrics"] = metrics
        samples.append(row)
    return samples


def _task_of(value: Any) -> Any:
    """Read a ``task`` cell: JSON text, or a mapping without the nulls of a mixed column.

    A dataset mixing task kinds (code, answers, instructions) stores its task column
    as one Arrow struct with every kind's fields: each row gets ``None`` for the
    fields of the other kinds, which are absent, not values.
    """
    if isinstance(value, str) and value.lstrip().startswith("{"):
        with contextlib.suppress(json.JSONDecodeError):
            return json.loads(value)
    if isinstance(value, dict):
        return {k: v for k, v in value.items() if v is not None}
    return value


class _OneCallPerBatch:
    """Grade each distinct batch once, however many reward functions read it."""

    def __init__(self, client: ArbiterClient, rubric: str) -> None:
        self.client = client
        self.rubric = rubric
        self._key: str | None = None
        self._batch: RewardBatch | None = None

    def batch(
        self, prompts: Sequence[Any], completions: Sequence[Any], kwargs: dict[str, Any]
    ) -> RewardBatch:
        samples = _rows(prompts, completions, kwargs)
        # The key is the whole request: the same text with other metrics, labels or
        # tasks is another batch, never the cached answer of the last one.
        key = json.dumps(samples, default=str, sort_keys=True)
        if key == self._key and self._batch is not None:
            return self._batch
        self._batch = self.client.rewards(samples, self.rubric)
        self._key = key
        return self._batch


def _masked(batch: RewardBatch, values: list[float | None]) -> list[float | None]:
    """Return ``values`` with ``None`` wherever the rubric abstained."""
    return [None if r.reward is None else v for r, v in zip(batch.rewards, values, strict=True)]


def reward_functions(
    client: ArbiterClient, rubric: str, *, composite: bool = False
) -> tuple[list[RewardFunction], list[float]]:
    """Return TRL reward functions for ``rubric`` and their ``reward_weights``."""
    grader = _OneCallPerBatch(client, rubric)
    if composite:

        def reward(
            prompts: Sequence[Any], completions: Sequence[Any], **kwargs: Any
        ) -> list[float | None]:
            return grader.batch(prompts, completions, kwargs).values()

        reward.__name__ = f"arbiter_{rubric}"
        return [reward], [1.0]

    spec = fetch_rubric(client, rubric)
    functions: list[RewardFunction] = []
    weights: list[float] = []
    for name, component in spec["components"].items():
        functions.append(_component_function(grader, name))
        weights.append(float(component["weight"]))
    if spec["penalties"]:

        def penalties(
            prompts: Sequence[Any], completions: Sequence[Any], **kwargs: Any
        ) -> list[float | None]:
            batch = grader.batch(prompts, completions, kwargs)
            totals: list[float | None] = [
                -sum(p.penalty for p in r.penalties) for r in batch.rewards
            ]
            return _masked(batch, totals)

        penalties.__name__ = "penalties"
        functions.append(penalties)
        weights.append(1.0)
    return functions, weights


def _component_function(grader: _OneCallPerBatch, name: str) -> RewardFunction:
    def component(
        prompts: Sequence[Any], completions: Sequence[Any], **kwargs: Any
    ) -> list[float | None]:
        batch = grader.batch(prompts, completions, kwargs)
        return _masked(batch, batch.component(name))

    component.__name__ = name  # TRL logs each reward function under its __name__
    return component
