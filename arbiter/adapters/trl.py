"""TRL: reward functions for ``GRPOTrainer(reward_funcs=..., args=GRPOConfig(reward_weights=...))``.

``reward_functions(client, "python-codegen")`` returns one callable per rubric
component and the matching weights, so TRL logs every component on its own.
The batch is graded once: the first callable asks the service, the others read
the same answer. A component that could not score gives ``None`` (TRL skips it
in the weighted sum rather than reading 0). When the rubric has penalties, a
``penalties`` callable (weight 1) carries them.

TRL sums ``weight * component``: that equals the rubric's reward for a
``weighted_sum`` rubric without gates, clip or normalization. For any other
rubric use ``composite=True``: one callable returning the rubric's own reward.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import orjson

from arbiter.adapters._common import fetch_rubric, parse_label, sample_id, text_of
from arbiter.client import ArbiterClient, RewardBatch

__all__ = ["RewardFunction", "reward_functions"]

RewardFunction = Callable[..., list[float | None]]
PASSED_COLUMNS = ("task", "metrics", "trajectory", "group_id")


class _OneCallPerBatch:
    """Grade each distinct batch once, however many reward functions read it."""

    def __init__(self, client: ArbiterClient, rubric: str) -> None:
        self.client = client
        self.rubric = rubric
        self._key: bytes | None = None
        self._batch: RewardBatch | None = None

    def batch(
        self, prompts: Sequence[Any], completions: Sequence[Any], kwargs: dict[str, Any]
    ) -> RewardBatch:
        key = orjson.dumps([prompts, completions], default=str)
        if key == self._key and self._batch is not None:
            return self._batch
        samples = []
        for i, (prompt, completion) in enumerate(zip(prompts, completions, strict=True)):
            prompt_text = prompt if isinstance(prompt, str) else orjson.dumps(prompt).decode()
            response = text_of(completion)
            row: dict[str, Any] = {
                "id": sample_id(f"trl{i}", prompt_text, response),
                "prompt": prompt,
                "response": response,
            }
            for column in PASSED_COLUMNS:
                values = kwargs.get(column)
                if isinstance(values, list) and i < len(values) and values[i] is not None:
                    row[column] = values[i]
            answer = kwargs.get("answer") or kwargs.get("solution")
            if isinstance(answer, list) and i < len(answer) and "task" not in row:
                row.update(parse_label(answer[i]))
            samples.append(row)
        self._batch = self.client.rewards(samples, self.rubric)
        self._key = key
        return self._batch


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
            return [-sum(p["penalty"] for p in r["penalties"]) for r in batch.rewards]

        penalties.__name__ = "penalties"
        functions.append(penalties)
        weights.append(1.0)
    return functions, weights


def _component_function(grader: _OneCallPerBatch, name: str) -> RewardFunction:
    def component(
        prompts: Sequence[Any], completions: Sequence[Any], **kwargs: Any
    ) -> list[float | None]:
        return grader.batch(prompts, completions, kwargs).component(name)

    component.__name__ = name  # TRL logs each reward function under its __name__
    return component
