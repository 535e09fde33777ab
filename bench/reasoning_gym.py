"""The reasoning_gym grader against reasoning-gym's own ``score_answer``, entry by entry.

Run: ``flock /tmp/arbiter-bench.lock .venv/bin/python -m bench.reasoning_gym [--entries 1000]``.

Generates entries over the datasets below (each with its default config and a
fixed seed), gives each one response (the oracle's answer in an answer tag, the
same padded with words, a wrong one, one behind a think block, one without a
tag), and compares two scores:

- **reasoning-gym**: ``get_score_answer_fn(dataset)(answer=extract_answer(response),
  entry=entry)`` on the entry as the package made it, in memory;
- **ours**: the ``reasoning_gym`` grader through ``run_jobs``, on the entry as a
  trainer sends it (JSON, so tuples arrive as lists), its scorer in a worker.

Every difference is printed.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import importlib.metadata
import json
import math
import random
import time
from typing import Any

from arbiter.graders.reasoning_gym import ReasoningGymConfig, ReasoningGymGrader
from arbiter.graders.runner import GraderJob, run_jobs
from arbiter.graders.types import ReasoningGymTask, Sample

#: Datasets that build with their default config (composite needs one; some are slow).
DATASETS = (
    "basic_arithmetic",
    "chain_sum",
    "gcd",
    "lcm",
    "leg_counting",
    "letter_counting",
    "spell_backward",
    "word_sorting",
    "number_sorting",
    "caesar_cipher",
    "base_conversion",
    "fraction_simplification",
    "prime_factorization",
    "count_bits",
    "power_function",
    "simple_equations",
    "polynomial_multiplication",
    "complex_arithmetic",
    "decimal_arithmetic",
    "calendar_arithmetic",
    "time_intervals",
    "family_relationships",
    "knights_knaves",
    "syllogism",
    "propositional_logic",
)


def entries(total: int, seed: int) -> list[dict[str, Any]]:
    """``total`` entries spread over :data:`DATASETS`, in memory as reasoning-gym made them."""
    import reasoning_gym  # type: ignore[import-untyped]

    per = math.ceil(total / len(DATASETS))
    out: list[dict[str, Any]] = []
    for index, name in enumerate(DATASETS):
        dataset = reasoning_gym.create_dataset(name, size=per, seed=seed + index)
        out.extend(dataset[i] for i in range(per))
    return out[:total]


def response_for(entry: dict[str, Any], rng: random.Random) -> str:
    """One response of five kinds: right, padded, wrong, behind thinking, untagged."""
    answer = str(entry["answer"])
    kind = rng.randrange(5)
    if kind == 0:
        return f"Let me think.\n<answer>{answer}</answer>"
    if kind == 1:
        return f"<answer>The answer is {answer} for sure</answer>"
    if kind == 2:
        return "<answer>no idea, really</answer>"
    if kind == 3:
        return f"<think>maybe <answer>wrong</answer></think>\n<answer> {answer} </answer>"
    return answer


def main() -> None:
    """Score every entry both ways and print agreement per dataset and every difference."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entries", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=44)
    args = parser.parse_args()
    import reasoning_gym
    from reasoning_gym.utils import extract_answer  # type: ignore[import-untyped]

    made = entries(args.entries, args.seed)
    rng = random.Random(args.seed)
    responses = [response_for(e, rng) for e in made]
    theirs: list[float | str] = []
    started = time.perf_counter()
    for entry, response in zip(made, responses, strict=True):
        score = reasoning_gym.get_score_answer_fn(entry["metadata"]["source_dataset"])
        try:
            theirs.append(float(score(answer=extract_answer(response), entry=entry)))
        except Exception as e:  # the package's scorer raising on a wrong answer: its bug
            theirs.append(f"raised {type(e).__name__}")
    peer_s = time.perf_counter() - started

    grader = ReasoningGymGrader()
    config = ReasoningGymConfig()
    samples = [
        Sample(
            id=str(i),
            response=response,
            task=ReasoningGymTask(kind="reasoning_gym", entry=json.loads(json.dumps(entry))),
        )
        for i, (entry, response) in enumerate(zip(made, responses, strict=True))
    ]

    async def ours_all() -> tuple[list[Any], float]:
        await grader.warm()
        started = time.perf_counter()
        jobs = [GraderJob(s, "rg", grader, config, grader.default_timeout_s) for s in samples]
        results = await run_jobs(jobs)
        grader.close()
        return results, time.perf_counter() - started

    ours, ours_s = asyncio.run(ours_all())
    agree: collections.Counter[str] = collections.Counter()
    total: collections.Counter[str] = collections.Counter()
    differences = []
    raised = 0
    for entry, response, mine, peer in zip(made, responses, ours, theirs, strict=True):
        name = entry["metadata"]["source_dataset"]
        total[name] += 1
        if isinstance(peer, str):
            # score_answer raised on the candidate's answer: ours is the candidate's 0.
            raised += 1
            if mine.score == 0.0 and mine.details.get("failure_kind") == "grader_error":
                agree[name] += 1
                continue
        elif mine.score is not None and math.isclose(mine.score, peer, abs_tol=1e-12):
            agree[name] += 1
        else:
            said = mine.failure.kind.value if mine.failure else mine.score
            differences.append(
                f"  {name}: ours {said}, reasoning-gym {peer}; response={response[:70]!r}"
            )
    print(
        f"{len(made)} entries over {len(total)} datasets (reasoning-gym "
        f"{importlib.metadata.version('reasoning-gym')})"
    )
    for name in sorted(total):
        print(f"  {name:<28} {agree[name]:>4} / {total[name]}")
    print(f"agree: {sum(agree.values())} / {len(made)}")
    print(
        f"of which score_answer raised on the answer (a crash in a trainer) and ours "
        f"scored the candidate's 0: {raised}"
    )
    print(f"reasoning-gym in-process {peer_s:.2f} s; ours through the workers {ours_s:.2f} s")
    print(f"{len(differences)} differ:")
    print("\n".join(differences) or "  (none)")


if __name__ == "__main__":
    main()
