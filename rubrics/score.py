"""Score samples under a rubric: rubric → grader jobs → results → rewards."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence

from arbiter.graders.registry import GraderRegistry, default_registry
from arbiter.graders.runner import GraderJob, run_jobs
from arbiter.graders.types import FailureKind, GradeResult, Sample, ViolationType
from arbiter.rubrics.compose import compose, normalize_rewards
from arbiter.rubrics.reward import Reward
from arbiter.rubrics.rubric import Rubric

__all__ = ["normalize_routed", "prompt_key", "score_samples"]


def prompt_key(sample: Sample) -> str:
    """Return a stable key for a sample's prompt (GRPO groups share one)."""
    if isinstance(sample.prompt, str):
        text = sample.prompt
    else:
        text = json.dumps([m.model_dump(mode="json") for m in sample.prompt], sort_keys=True)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


def build_jobs(
    rubric: Rubric, samples: Sequence[Sample], registry: GraderRegistry
) -> list[GraderJob]:
    """Return one job per (sample x component), sample-major."""
    graders = {name: registry.instance(c.grader) for name, c in rubric.components.items()}
    jobs = []
    for sample in samples:
        for name, component in rubric.components.items():
            grader = graders[name]
            jobs.append(
                GraderJob(
                    sample=sample,
                    component=name,
                    grader=grader,
                    config=component.config,
                    timeout_s=component.timeout_s or grader.default_timeout_s,
                )
            )
    return jobs


async def score_samples(
    rubric: Rubric,
    samples: Sequence[Sample],
    *,
    registry: GraderRegistry | None = None,
    deadline: float | None = None,
    max_concurrency: int | None = None,
    normalize: bool = True,
) -> list[Reward]:
    """Grade every sample under ``rubric`` and return their rewards in input order.

    Args:
        rubric: the compiled rubric.
        samples: the batch.
        registry: where the rubric's graders come from (default: the built-ins,
            built for this call and closed after it).
        deadline: absolute ``time.monotonic()`` by which every grader must finish;
            later ones come back as ``timeout`` failures.
        max_concurrency: bound on grader jobs in flight.
        normalize: apply the rubric's group normalization across this batch. Turn
            it off when a caller scores a large set in chunks and normalizes at the
            end with :func:`arbiter.rubrics.compose.normalize_rewards`.
    """
    owned = registry is None
    registry = registry or default_registry()
    # Each sample is graded by its route's rubric (the rubric itself when it has no
    # routes, or when no route takes the sample): its components, gates, penalties.
    routed = [rubric.route_for(sample) for sample in samples]
    # A sample the rubric is not written for (its `accepts`) is never graded: it
    # abstains saying so, rather than being scored by graders that do not apply.
    refusals = [
        rubric.refusal(sample) if route is None else None
        for sample, (route, _) in zip(samples, routed, strict=True)
    ]
    try:
        jobs = [
            job
            for sample, (_, chosen), refused in zip(samples, routed, refusals, strict=True)
            if refused is None
            for job in build_jobs(chosen, [sample], registry)
        ]
        results = await run_jobs(jobs, deadline=deadline, max_concurrency=max_concurrency)
        graders = {
            name: registry.instance(c.grader)
            for name, c in rubric.components.items()
            if any(refusals)
        }
    finally:
        if owned:
            # A registry made for this call must not leave sandbox or process
            # pools behind; callers that score repeatedly pass their own.
            registry.close()
    rewards = []
    at = 0
    for sample, (route, chosen), refused in zip(samples, routed, refusals, strict=True):
        names = list(chosen.components)  # build_jobs is sample-major in this order
        by_component: dict[str, GradeResult]
        if refused is not None:
            by_component = {
                name: graders[name].failed(FailureKind.NOT_APPLICABLE, refused) for name in names
            }
        else:
            by_component = dict(zip(names, results[at : at + len(names)], strict=True))
            at += len(names)
        reward = compose(
            chosen,
            by_component,
            sample_id=sample.id,
            group_id=sample.group_id,
            refused=refused,
        )
        reward = _flag_canary(reward)
        rewards.append(reward if route is None else reward.model_copy(update={"route": route}))
    if normalize:
        rewards = normalize_routed(rubric, rewards, samples)
    return rewards


def _flag_canary(reward: Reward) -> Reward:
    """Flag ``hack:canary`` on a reward whose canary task's impossible test passed.

    The penalty is the rubric's own (``penalties: [{violation: canary, ...}]``); the
    flag says, whatever the rubric penalises, that this reward was a proven hack.
    """
    hit = any(
        v.type is ViolationType.CANARY
        for outcome in reward.components.values()
        for v in outcome.violations
    )
    if not hit or "hack:canary" in reward.flags:
        return reward
    return reward.model_copy(update={"flags": (*reward.flags, "hack:canary")})


def normalize_routed(
    rubric: Rubric, rewards: Sequence[Reward], samples: Sequence[Sample]
) -> list[Reward]:
    """Normalize rewards within their groups, each route by its own method.

    A route is a rubric of its own: its samples are normalized among themselves
    (a math group's z-scores never mix with a code group's), with its ``normalize``.
    """
    if not rubric.routes:
        return normalize_rewards(rewards, rubric.spec.normalize, [prompt_key(s) for s in samples])
    out = list(rewards)
    by_route: dict[str | None, list[int]] = {}
    for i, reward in enumerate(rewards):
        by_route.setdefault(reward.route, []).append(i)
    methods = {route.name: route.rubric.spec.normalize for route in rubric.routes}
    for route, indexes in by_route.items():
        method = rubric.spec.normalize if route is None else methods[route]
        done = normalize_rewards(
            [rewards[i] for i in indexes], method, [prompt_key(samples[i]) for i in indexes]
        )
        for i, reward in zip(indexes, done, strict=True):
            out[i] = reward
    return out
