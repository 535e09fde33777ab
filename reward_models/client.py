"""The front of a reward model: encode, queue in the batcher, score off the event loop.

The same client serves every backend — the local transformers model and a
remote vLLM server — so batching, deadlines and back-pressure behave the same
either way. Encoding (chat template + truncation) runs on the caller's event
loop: a fast tokenizer's work is small next to scoring, and the batch needs
each request's length before it can be bucketed.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from arbiter.reward_models.batcher import BatcherConfig, BatchStats, DynamicBatcher
from arbiter.reward_models.chat import EncodedInput
from arbiter.reward_models.errors import RewardModelError
from arbiter.reward_models.usage import ModelUsage

__all__ = ["RewardModelClient", "RewardOutput", "ScoringBackend"]


class ScoringBackend(Protocol):
    """What a reward-model backend offers the client."""

    @property
    def objectives(self) -> tuple[str, ...]:
        """Name each output of the model, in order."""
        ...

    def encode(self, messages: Sequence[Mapping[str, Any]]) -> EncodedInput:
        """Encode one conversation whose last message is the response."""
        ...

    def score_batch(self, inputs: Sequence[EncodedInput]) -> list[tuple[float, ...]]:
        """Score a batch synchronously (called on the batcher's thread)."""
        ...


@dataclass(frozen=True, slots=True)
class RewardOutput:
    """A conversation's scores, one per objective, and what truncation did."""

    values: tuple[float, ...]
    objectives: tuple[str, ...]
    tokens: int
    prompt_tokens_cut: int = 0
    response_tokens_cut: int = 0

    def by_objective(self) -> dict[str, float]:
        """Return objective name → score."""
        return dict(zip(self.objectives, self.values, strict=True))


class RewardModelClient:
    """Score conversations through a backend, batched across concurrent callers."""

    def __init__(
        self,
        backend: ScoringBackend,
        batching: BatcherConfig | None = None,
        *,
        name: str = "reward-model",
        concurrency: int = 1,
        usage: ModelUsage | None = None,
    ) -> None:
        """Wrap a backend with its own batcher and worker thread(s).

        ``concurrency``: batches in flight at once (one per replica of a backend
        that spreads batches over several). ``usage``: counters this client
        feeds (requests, tokens, batch fill, latency, errors by kind).
        """
        self.backend = backend
        self.name = name
        self.usage = usage or ModelUsage(name, "reward_model")
        self._budget = (batching or BatcherConfig()).max_batch_tokens
        self._batcher: DynamicBatcher[EncodedInput, tuple[float, ...]] = DynamicBatcher(
            self._score_batch, batching, name=name, concurrency=concurrency
        )

    def _score_batch(self, inputs: Sequence[EncodedInput]) -> list[tuple[float, ...]]:
        if inputs:
            padded = len(inputs) * max(x.length for x in inputs)
            self.usage.observe_batch(padded / self._budget)
        return self.backend.score_batch(inputs)

    @property
    def stats(self) -> BatchStats:
        """Return the batcher's counters."""
        return self._batcher.stats

    async def score(
        self, messages: Sequence[Mapping[str, Any]], *, deadline: float | None = None
    ) -> RewardOutput:
        """Score one conversation (its last message is the response).

        Raises:
            RewardModelError: a typed failure (queue full, deadline, backend).
        """
        started = time.monotonic()
        try:
            encoded = self.backend.encode(messages)
            values = await self._batcher.submit(encoded, encoded.length, deadline=deadline)
        except RewardModelError as e:
            self.usage.observe_error(e)
            raise
        self.usage.observe(time.monotonic() - started, tokens_in=encoded.length)
        return RewardOutput(
            values=values,
            objectives=self.backend.objectives,
            tokens=encoded.length,
            prompt_tokens_cut=encoded.prompt_tokens_cut,
            response_tokens_cut=encoded.response_tokens_cut,
        )

    async def close(self) -> None:
        """Stop the batcher; queued requests fail with BatcherClosedError."""
        await self._batcher.close()
