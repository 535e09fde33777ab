"""The judge client: a backend with a concurrency limit, deadline, retries, votes and a cache.

Retries (exponential backoff, honouring ``Retry-After``) are for retryable
failures only; the cache is an LRU keyed by (model, prompt hash, sampling
parameters, vote). Optional rate limits (requests and tokens per minute) hold
calls back before they are sent; every call and failure is counted in the
client's :class:`~arbiter.reward_models.usage.ModelUsage`.
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import json
import math
import statistics
import time
from collections.abc import Awaitable, Callable
from typing import Literal, TypeVar

from cachetools import LRUCache

from arbiter.reward_models.errors import (
    JudgeError,
    JudgeParseError,
    JudgeTimeoutError,
    JudgeUnavailableError,
)
from arbiter.reward_models.judge.limits import RateLimiter, estimate_tokens
from arbiter.reward_models.judge.types import (
    Criterion,
    JudgeBackend,
    JudgeDefaults,
    JudgeReply,
    JudgeResult,
    Messages,
    PairwiseResult,
    Preference,
    SamplingParams,
    Verdict,
)
from arbiter.reward_models.judge.verdicts import parse_preference, parse_verdict
from arbiter.reward_models.usage import ModelUsage

_Parsed = TypeVar("_Parsed", Verdict, Preference)

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
        max_rpm: float | None = None,
        max_tpm: float | None = None,
        defaults: JudgeDefaults | None = None,
        position_swap: bool = True,
        usage: ModelUsage | None = None,
    ) -> None:
        """Wrap a backend.

        Args:
            backend: the chat model.
            max_concurrency: calls in flight at once.
            max_retries: retries of a retryable failure.
            backoff_s: the first retry's wait (doubling, or the server's Retry-After).
            cache_size: answers kept (0: no cache).
            max_rpm: requests per minute (``None``: no limit).
            max_tpm: tokens per minute, prompt and answer (``None``: no limit).
            defaults: sampling where a rubric leaves it unset, and a ceiling on tokens.
            position_swap: ask a pairwise comparison in both orders (a flip is a tie).
            usage: counters this client feeds.
        """
        self.backend = backend
        self.max_concurrency = max_concurrency
        self.max_retries = max_retries
        self.backoff_s = backoff_s
        self.defaults = defaults or JudgeDefaults()
        self.position_swap = position_swap
        self.usage = usage or ModelUsage(backend.model, "judge")
        self.limiter = RateLimiter(max_rpm, max_tpm)
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
        estimate = estimate_tokens(
            sum(len(m.get("content", "")) for m in messages), params.max_tokens
        )
        while True:
            try:
                async with self._gate():
                    reservation = await self.limiter.acquire(estimate)
                    remaining = None if deadline is None else deadline - time.monotonic()
                    if remaining is not None and remaining <= 0:
                        raise JudgeTimeoutError("the deadline passed before the judge was asked")
                    self.calls += 1
                    started = time.monotonic()
                    try:
                        async with asyncio.timeout(remaining):
                            reply = await self.backend.complete(messages, seeded)
                    except TimeoutError:
                        late = JudgeTimeoutError("the judge did not answer before the deadline")
                        self.usage.observe_error(late)
                        raise late from None
                    except JudgeError as e:
                        self.usage.observe_error(e)
                        raise
                    self.usage.observe(
                        time.monotonic() - started,
                        tokens_in=reply.prompt_tokens or 0,
                        tokens_out=reply.completion_tokens or 0,
                    )
                    if reply.prompt_tokens is not None and reply.completion_tokens is not None:
                        self.limiter.settle(
                            reservation, reply.prompt_tokens + reply.completion_tokens
                        )
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
        parse_retries: int = 0,
    ) -> JudgeResult:
        """Grade with ``votes`` answers and aggregate their values.

        An answer without a verdict is asked again, up to ``parse_retries`` times
        per vote (as a vote of its own: a sampling judge draws anew, and the cache
        keeps the answer that failed apart).

        Raises:
            JudgeError: any vote failed (a partial set of votes is not a verdict).
        """
        params = dataclasses.replace(params or SamplingParams(), max_level=len(criterion.levels))

        def verdict(reply: JudgeReply) -> Verdict:
            return parse_verdict(reply, criterion, use_logprobs=use_logprobs)

        def vote(v: int) -> Awaitable[tuple[Verdict, JudgeReply, bool]]:
            return self._parsed(messages, params, verdict, v, votes, parse_retries, deadline)

        answers = await asyncio.gather(*(vote(v) for v in range(votes)))
        verdicts = tuple(found for found, _, _ in answers)
        values = [v.value for v in verdicts]
        value = (
            statistics.median(values) if aggregate == "median" else math.fsum(values) / len(values)
        )
        return JudgeResult(
            value,
            verdicts,
            cached=sum(1 for _, _, hit in answers if hit),
            prompt_tokens=sum(r.prompt_tokens or 0 for _, r, hit in answers if not hit),
            completion_tokens=sum(r.completion_tokens or 0 for _, r, hit in answers if not hit),
        )

    async def compare(
        self,
        candidate_first: Messages,
        candidate_second: Messages,
        params: SamplingParams | None = None,
        *,
        use_logprobs: bool = True,
        deadline: float | None = None,
        parse_retries: int = 0,
    ) -> PairwiseResult:
        """Judge candidate vs baseline in both orders; a verdict that flips is a tie.

        A client built with ``position_swap=False`` asks in the first order only.
        An answer without a verdict is asked again, up to ``parse_retries`` times.

        Args:
            candidate_first: the prompt with the candidate as response A.
            candidate_second: the same with the candidate as response B.
            params: sampling parameters.
            use_logprobs: weight by P(A) when the backend gives logprobs.
            deadline: absolute ``time.monotonic()`` for both calls.
            parse_retries: asks again per order when an answer has no verdict.

        Raises:
            JudgeError: either call failed or gave no verdict.
        """
        params = params or SamplingParams()

        def parsed(reply: JudgeReply) -> Preference:
            return parse_preference(reply, use_logprobs=use_logprobs)

        async def preference(messages: Messages) -> Preference:
            found, _, _ = await self._parsed(
                messages, params, parsed, 0, 1, parse_retries, deadline
            )
            return found

        if not self.position_swap:
            only = await preference(candidate_first)
            value = only.p_a if only.p_a is not None else float(only.winner == "A")
            return PairwiseResult(value, True, only, None)
        one, two = await asyncio.gather(preference(candidate_first), preference(candidate_second))
        wins = (one.winner == "A", two.winner == "B")
        if wins[0] != wins[1]:
            return PairwiseResult(0.5, False, one, two)
        if one.p_a is not None and two.p_a is not None:
            return PairwiseResult((one.p_a + (1.0 - two.p_a)) / 2, True, one, two)
        return PairwiseResult(1.0 if wins[0] else 0.0, True, one, two)

    async def _parsed(
        self,
        messages: Messages,
        params: SamplingParams,
        parse: Callable[[JudgeReply], _Parsed],
        vote: int,
        stride: int,
        retries: int,
        deadline: float | None,
    ) -> tuple[_Parsed, JudgeReply, bool]:
        """Ask and parse; an answer without a verdict is asked again, ``retries`` times at most.

        Each retry is a vote of its own (``vote + stride * attempt``): a sampling judge
        draws anew, and the cache keeps the answer that failed apart.

        Raises:
            JudgeParseError: the last answer had no verdict either (counted once).
        """
        attempt = 0
        while True:
            reply, hit = await self.ask(
                messages, params, vote=vote + stride * attempt, deadline=deadline
            )
            try:
                return parse(reply), reply, hit
            except JudgeParseError as e:
                if attempt >= retries:
                    self.usage.observe_error(e, request=False)
                    raise
            attempt += 1
