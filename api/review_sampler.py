"""The reward path's hook into human review: offer each logged batch to the sampler.

The rubric's ``review`` section becomes a :class:`~arbiter.monitoring.sampling.SamplingPolicy`
(cached by rubric sha256). A rubric that samples nothing costs one dictionary look-up
per batch; otherwise the decisions and the one insert of the chosen items run in a
worker thread after the rewards are committed, so only acknowledged rewards are queued.

Several replicas on one store sample together at the rubric's rate: each draw is
a hash of the sample (the same on every replica), the drift boost follows the
shared drift monitor's flags, and the reward deciles are read from the shared
reward log (refreshed every ``DECILE_REFRESH_S``) rather than learnt from the
fraction of the traffic one replica sees.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Sequence

from arbiter.api.settings import Settings
from arbiter.monitoring.agreement import pass_threshold
from arbiter.monitoring.sampling import (
    ReviewCandidate,
    RewardDeciles,
    SamplingDecision,
    SamplingPolicy,
    decide,
)
from arbiter.rubrics.reward import Reward
from arbiter.rubrics.rubric import Rubric
from arbiter.store.db import Store
from arbiter.store.review import EnqueueItem, ReviewQueue

__all__ = ["ReviewSampler"]

logger = logging.getLogger("arbiter.review")

#: How often replicas on a shared store re-read a rubric's reward deciles.
DECILE_REFRESH_S = 10.0


class ReviewSampler:
    """Choose logged rewards for review and queue them."""

    def __init__(self, store: Store, settings: Settings) -> None:
        # A label's fail on a component its grader passed (at the threshold the review
        # page states) marks it fooled: a regression case, as a ticked hack is.
        self.queue = ReviewQueue(
            store, lease_s=settings.review_lease_s, pass_threshold=pass_threshold
        )
        self.required_reviews = settings.review_required_reviews
        # After a drift alert, the rubric's rates are multiplied by this (capped at 1).
        self.drift_boost = settings.review_drift_boost
        self._policies: dict[str, SamplingPolicy] = {}
        self._deciles: dict[str, RewardDeciles] = {}
        # The embedded file serves one process: its own rewards are all of them.
        self._shared = not store.is_sqlite
        self._read_at: dict[str, float] = {}

    def policy(self, rubric: Rubric) -> SamplingPolicy:
        """Return the rubric's sampling policy (built once per rubric version)."""
        policy = self._policies.get(rubric.sha256)
        if policy is None:
            spec = rubric.spec.review
            try:
                policy = SamplingPolicy.from_review_spec(
                    spec.sample_rate,
                    spec.stratify_by,
                    boost_factor=self.drift_boost,
                    required_reviews=self.required_reviews,
                )
            except ValueError as e:
                # The rubric schema names the strata, so this is a rubric built
                # around the loader: keep the uniform rate rather than drop review.
                logger.error("rubric %s: review section ignored in part: %s", rubric.name, e)
                policy = SamplingPolicy.from_review_spec(
                    spec.sample_rate,
                    boost_factor=self.drift_boost,
                    required_reviews=self.required_reviews,
                )
            self._policies[rubric.sha256] = policy
        return policy

    def decide(self, rubric: Rubric, rewards: Sequence[Reward]) -> list[SamplingDecision]:
        """Decide for each reward of a batch (and learn the batch's rewards for deciles).

        Under a rubric with routes each route's rewards have deciles of their own
        (a math route's 0.1 is not a code route's), and its own rubric name in
        the decision; the queued item keeps the rubric the request named.
        """
        policy = self.policy(rubric)
        by_route: dict[str | None, list[int]] = {}
        for i, reward in enumerate(rewards):
            by_route.setdefault(reward.route if rubric.routes else None, []).append(i)
        decisions: list[SamplingDecision | None] = [None] * len(rewards)
        for route, indexes in by_route.items():
            key = rubric.sha256 if route is None else f"{rubric.sha256}:{route}"
            deciles = self._deciles.setdefault(key, RewardDeciles())
            if self._shared and policy.needs_deciles and route is None:
                deciles = self._shared_deciles(rubric.sha256, deciles)
            edges = deciles.edges()
            name = rubric.name if route is None else f"{rubric.name}.{route}"
            for i in indexes:
                reward = rewards[i]
                candidate = ReviewCandidate(
                    sample_id=reward.id,
                    reward=reward.raw_reward,
                    component_scores={n: c.score for n, c in reward.components.items()},
                    violations=[v.type for c in reward.components.values() for v in c.violations],
                    drift_alert=any(flag.startswith("drift") for flag in reward.flags),
                )
                decisions[i] = decide(policy, name, candidate, edges)
            if not self._shared or route is not None:
                deciles.add(rewards[i].raw_reward for i in indexes)
        return [d for d in decisions if d is not None]

    def _shared_deciles(self, sha256: str, current: RewardDeciles) -> RewardDeciles:
        now = time.monotonic()
        if now - self._read_at.get(sha256, -DECILE_REFRESH_S) < DECILE_REFRESH_S:
            return current
        fresh = RewardDeciles(window=current.window, min_count=current.min_count)
        fresh.add(self.queue.recent_raw_rewards(sha256, current.window))
        self._deciles[sha256] = fresh
        self._read_at[sha256] = now
        return fresh

    def _enqueue(self, rubric: Rubric, request_id: str, rewards: Sequence[Reward]) -> int:
        chosen = [
            EnqueueItem(
                request_id=request_id,
                position=position,
                sample_id=d.sample_id,
                rubric_name=rubric.name,
                rubric_sha256=rubric.sha256,
                inclusion_probability=d.inclusion_probability,
                reason=d.reason,
                required_reviews=d.required_reviews,
            )
            for position, d in enumerate(self.decide(rubric, rewards))
            if d.sampled
        ]
        return self.queue.enqueue(chosen) if chosen else 0

    async def offer(self, rubric: Rubric, request_id: str, rewards: Sequence[Reward]) -> None:
        """Queue the batch's sampled rewards; never fail the batch, which is already logged."""
        if not rewards or not self.policy(rubric).active:
            return
        try:
            await asyncio.to_thread(self._enqueue, rubric, request_id, rewards)
        except Exception:
            # The rewards are committed and about to be returned: a review queue
            # that is down costs review coverage (logged), never the trainer's batch.
            logger.exception("could not queue %d rewards for review", len(rewards))
