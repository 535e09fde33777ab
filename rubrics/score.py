"""Score samples under a rubric: rubric → grader jobs → results → rewards."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence

from arbiter.graders.registry import GraderRegistry, default_registry
from arbiter.graders.runner import GraderJob, run_jobs
from arbiter.graders.types import Sample
from arbiter.rubrics.compose import compose, normalize_rewards
from arbiter.rubrics.reward import Reward
from arbiter.rubrics.rubric import Rubric

__all__ = ["prompt_key", "score_samples"]


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
    try:
        jobs = build_jobs(rubric, samples, registry)
        results = await run_jobs(jobs, deadline=deadline, max_concurrency=max_concurrency)
    finally:
        if owned:
            # A registry made for this call must not leave sandbox or process
            # pools behind; callers that score repeatedly pass their own.
            registry.close()
    names = list(rubric.components)  # build_jobs is sample-major in this order
    width = len(names)
    rewards = []
    for i, sample in enumerate(samples):
        by_component = dict(zip(names, results[i * width : (i + 1) * width], strict=True))
        rewards.append(compose(rubric, by_component, sample_id=sample.id, group_id=sample.group_id))
    if normalize and rubric.spec.normalize != "none":
        rewards = normalize_rewards(
            rewards, rubric.spec.normalize, [prompt_key(s) for s in samples]
        )
    return rewards
