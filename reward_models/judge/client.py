"""The judge client: a backend with a concurrency limit, deadline, retries, votes and a cache.

Retries (exponential backoff, honouring ``Retry-After``) are for retryable
failures only; the cache is an LRU keyed by (model, prompt hash, sampling
parameters, vote).
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import json
import math
import statistics
import time
from typing import Literal

from cachetools import LRUCache

from reward_models.errors import JudgeTimeoutError, JudgeUnavailableError
from reward_models.judge.types import (
    Criterion,
    JudgeBackend,
    JudgeReply,
    JudgeResult,
    Messages,
    PairwiseResult,
    SamplingParams,
)
from reward_models.judge.verdicts import parse_preference, parse_verdict

__all__ = ["JudgeClient"]


class JudgeClient:
    """A backend with a concurrency limit, retries, votes and a cache."""

    def __init__(
        self,
        backend: JudgeBackend,
        *,
        max_concurrency: int = 8,
        max_retries: int = 2,
        backoff_s: float = 0.5,
        cache_size: int = 4096,
    ) -> None:
        """Wrap a backend."""
        self.backend = backend
        self.max_concurrency = max_concurrency
        self.max_retries = max_retries
        self.backoff_s = backoff_s
        self._cache: LRUCache[str, JudgeReply] = LRUCache(cache_size)
        self._cache_hits = 0
        self._gates: dict[asyncio.AbstractEventLoop, asyncio.Semaphore] = {}
        self.calls = 0

    @property
    def cache_hits(self) -> int:
        """Return how many answers came from the cache."""
        return self._cache_hits

    def _gate(self) -> asyncio.Semaphore:
        loop = asyncio.get_running_loop()
        gate = self._gates.get(loop)
        if gate is None:
            self._gates = {lp: g for lp, g in self._gates.items() if not lp.is_closed()}
            gate = self._gates[loop] = asyncio.Semaphore(self.max_concurrency)
        return gate

    def cache_key(self, messages: Messages, params: SamplingParams, vote: int) -> str:
        """Return the cache key of one vote: (model, prompt hash, sampling params, vote)."""
        prompt = hashlib.sha256(
            json.dumps(messages, sort_keys=True, ensure_ascii=False).encode()
        ).hexdigest()
        return json.dumps([self.backend.model, prompt, dataclasses.astuple(params), vote])

    async def ask(
        self,
        messages: Messages,
        params: SamplingParams,
        *,
        vote: int = 0,
        deadline: float | None = None,
    ) -> tuple[JudgeReply, bool]:
        """Return one answer (and whether it was cached), retrying retryable failures.

        Raises:
            JudgeError: the typed failure of the last attempt.
        """
        key = self.cache_key(messages, params, vote)
        cached = self._cache.get(key)
        if cached is not None:
            self._cache_hits += 1
            return cached, True
        # A greedy judge gives the same answer every time; only sampling makes votes differ.
        seeded = (
            params
            if params.temperature == 0 or params.seed is None
            else dataclasses.replace(params, seed=params.seed + vote)
        )
        attempt = 0
        while True:
            try:
                async with self._gate():
                    remaining = None if deadline is None else deadline - time.monotonic()
                    if remaining is not None and remaining <= 0:
                        raise JudgeTimeoutError("the deadline passed before the judge was asked")
                    self.calls += 1
                    try:
                        async with asyncio.timeout(remaining):
                            reply = await self.backend.complete(messages, seeded)
                    except TimeoutError:
                        raise JudgeTimeoutError(
                            "the judge did not answer before the deadline"
                        ) from None
                if self._cache.maxsize > 0:  # cachetools refuses any entry at size 0
                    self._cache[key] = reply
                return reply, False
            except JudgeUnavailableError as e:
                if attempt >= self.max_retries:
                    raise
                delay = self.backoff_s * 2**attempt
                retry_after = getattr(e, "retry_after_s", None)
                if retry_after is not None:
                    delay = max(delay, retry_after)
                if deadline is not None and time.monotonic() + delay >= deadline:
                    raise
                attempt += 1
                await asyncio.sleep(delay)

    async def judge(
        self,
        messages: Messages,
        criterion: Criterion,
        params: SamplingParams | None = None,
        *,
        votes: int = 1,
        aggregate: Literal["mean", "median"] = "mean",
        use_logprobs: bool = True,
        deadline: float | None = None,
    ) -> JudgeResult:
        """Grade with ``votes`` answers and aggregate their values.

        Raises:
            JudgeError: any vote failed (a partial set of votes is not a verdict).
        """
        params = dataclasses.replace(params or SamplingParams(), max_level=len(criterion.levels))
        answers = await asyncio.gather(
            *(self.ask(messages, params, vote=v, deadline=deadline) for v in range(votes))
        )
        verdicts = tuple(
            parse_verdict(reply, criterion, use_logprobs=use_logprobs) for reply, _ in answers
        )
        values = [v.value for v in verdicts]
        value = (
            statistics.median(values) if aggregate == "median" else math.fsum(values) / len(values)
        )
        return JudgeResult(value, verdicts, cached=sum(1 for _, hit in answers if hit))

    async def compare(
        self,
        candidate_first: Messages,
        candidate_second: Messages,
        params: SamplingParams | None = None,
        *,
        use_logprobs: bool = True,
        deadline: float | None = None,
    ) -> PairwiseResult:
        """Judge candidate vs baseline in both orders; a verdict that flips is a tie.

        Args:
            candidate_first: the prompt with the candidate as response A.
            candidate_second: the same with the candidate as response B.
            params: sampling parameters.
            use_logprobs: weight by P(A) when the backend gives logprobs.
            deadline: absolute ``time.monotonic()`` for both calls.

        Raises:
            JudgeError: either call failed or gave no verdict.
        """
        params = params or SamplingParams()
        (first, _), (second, _) = await asyncio.gather(
            self.ask(candidate_first, params, deadline=deadline),
            self.ask(candidate_second, params, deadline=deadline),
        )
        one = parse_preference(first, use_logprobs=use_logprobs)
        two = parse_preference(second, use_logprobs=use_logprobs)
        wins = (one.winner == "A", two.winner == "B")
        if wins[0] != wins[1]:
            return PairwiseResult(0.5, False, one, two)
        if one.p_a is not None and two.p_a is not None:
            return PairwiseResult((one.p_a + (1.0 - two.p_a)) / 2, True, one, two)
        return PairwiseResult(1.0 if wins[0] else 0.0, True, one, two)
