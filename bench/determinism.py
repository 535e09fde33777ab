"""Same rollout, same reward, at any load: the reward-flip rate under CPU oversubscription.

Run as ``python -m bench.determinism [--levels 2 4] [--mbpp 100]``. It grades one
fixed set with the ``python-codegen`` rubric, each time cold (a fresh grader
registry, so sandbox zygotes and analysis workers start anew, and every
program is compiled anew):

* HumanEvalPack's 164 canonical and 164 buggy solutions (the prompt as the
  prompt, the body as the response), ``eval_sets/hacks.jsonl``, and the first
  ``--mbpp`` MBPP reference solutions;
* once on a quiet machine (the baseline), then under ``L x cores`` busy
  processes of its own load generator for each level ``L``.

It prints, for each level, the wall time, how many rewards differ at all from
the quiet run's (the flip rate, target 0), how many components differ, the
failures of ours (infrastructure) it met, and how many HumanEvalPack canonical
solutions passed every test with no component failure; the flips are listed by
sample.

``--languages all`` (or some of ``python cpp java go rust javascript``) grades
instead HumanEvalPack's 164 canonical and 164 buggy solutions in each language
named, with a tests-only rubric (``timeout_s: 20``), and prints per language
and level: canonical solutions passing, buggy ones failing, rewards unscored
(abstained), and the flips against the quiet run.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

from arbiter.graders.registry import default_registry
from arbiter.graders.types import INFRASTRUCTURE_FAILURES, Sample, TaskSpec, program_language
from arbiter.load import cpu_load
from arbiter.rubrics.loader import load_rubric, parse_rubric
from arbiter.rubrics.reward import Reward
from arbiter.rubrics.score import score_samples

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"
RUBRIC = ROOT / "rubrics" / "library" / "python-codegen.yaml"
#: Samples scored per call, as ``arbiter audit`` does.
CHUNK = 64


def _rows(name: str) -> list[dict[str, object]]:
    path = DATA / name
    if not path.exists():
        sys.exit(f"{path} is absent: check out ../shared/data beside the repository")
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def the_set(mbpp: int) -> list[Sample]:
    """Return the fixed set every level grades."""
    samples = []
    for row in _rows("humanevalpack_python.jsonl"):
        task = TaskSpec(kind="python_function", tests=row["test"], entry_point=row["entry_point"])
        for which in ("canonical_solution", "buggy_solution"):
            samples.append(
                Sample(
                    id=f"{row['task_id']}/{which}",
                    group_id=str(row["task_id"]),
                    prompt=str(row["prompt"]),
                    response=str(row[which]),
                    task=task,
                )
            )
    hacks = ROOT / "eval_sets" / "hacks.jsonl"
    samples += [
        Sample.model_validate(json.loads(line))
        for line in hacks.read_text().splitlines()
        if line.strip()
    ]
    for row in _rows("mbpp.jsonl")[:mbpp]:
        samples.append(
            Sample(
                id=f"mbpp/{row['task_id']}",
                response=str(row["code"]),
                task=TaskSpec(
                    kind="python_function",
                    tests=row["test_list"],
                    setup_code=str(row["test_setup_code"]) or None,
                ),
            )
        )
    return samples


#: The rubric of ``--languages``: the tests alone, as the multi-language measurements.
TESTS_ONLY = """
name: tests-only
version: 1
components:
  tests:
    grader: unit_tests
    weight: 1.0
    config: {timeout_s: 20}
"""
LANGUAGE_NAMES = ("python", "cpp", "java", "go", "rust", "javascript")


def language_set(names: Sequence[str], rows_per_language: int | None = None) -> list[Sample]:
    """Return HumanEvalPack's canonical and buggy solutions in each language named."""
    from bench.multilang import _rows as language_rows
    from bench.multilang import _sample as language_sample

    samples = []
    for name in names:
        rows = _rows("humanevalpack_python.jsonl") if name == "python" else language_rows(name)
        for row in rows[:rows_per_language]:
            for which in ("canonical_solution", "buggy_solution"):
                sid = f"{row['task_id']}/{which}"
                if name == "python":
                    task = TaskSpec(
                        kind="python_function", tests=row["test"], entry_point=row["entry_point"]
                    )
                    sample = Sample(
                        id=sid, prompt=str(row["prompt"]), response=str(row[which]), task=task
                    )
                else:
                    sample = language_sample(name, row, str(row[which]), sid)
                samples.append(sample)
    return samples


def grade_cold(
    samples: Sequence[Sample], rubric_text: str | None = None
) -> tuple[list[Reward], float]:
    """Grade every sample with a fresh registry (cold pools); return rewards and wall time."""
    rubric = load_rubric(RUBRIC) if rubric_text is None else parse_rubric(rubric_text)

    async def run() -> list[Reward]:
        registry = default_registry()
        try:
            await registry.warm((c.grader for c in rubric.components.values()), samples)
            out: list[Reward] = []
            for start in range(0, len(samples), CHUNK):
                part = list(samples[start : start + CHUNK])
                out += await score_samples(rubric, part, registry=registry, normalize=False)
            return out
        finally:
            registry.close()

    started = time.perf_counter()
    rewards = asyncio.run(run())
    return rewards, time.perf_counter() - started


def _component_scores(reward: Reward) -> dict[str, float | None]:
    return {name: c.score for name, c in reward.components.items()}


def _failure(reward: Reward, name: str) -> str:
    """The failure a component of ``reward`` carries, as ``" (kind: message)"``, or nothing."""
    component = reward.components.get(name)
    failure = None if component is None else component.failure
    if failure is None:
        return ""
    return f" ({failure.kind.value}: {failure.message[:160]})"


def compare(
    baseline: Sequence[Reward], other: Sequence[Reward]
) -> tuple[list[str], int, Counter[str]]:
    """Return the flipped samples (with what moved), the components moved, failures of ours."""
    flips = []
    components = 0
    ours: Counter[str] = Counter()
    for a, b in zip(baseline, other, strict=True):
        ca, cb = _component_scores(a), _component_scores(b)
        moved = [f"{n} {ca[n]} -> {cb[n]}{_failure(b, n)}" for n in ca if ca[n] != cb[n]]
        if a.reward != b.reward:
            flips.append(f"{a.id} ({'; '.join(moved) or 'no component moved'})")
        components += len(moved)
        for name, component in b.components.items():
            failure = component.failure
            if failure is not None and failure.kind in INFRASTRUCTURE_FAILURES:
                ours[f"{name}:{failure.kind.value}"] += 1
    return flips, components, ours


def canonical(samples: Sequence[Sample], rewards: Sequence[Reward]) -> str:
    """Say how many HumanEvalPack canonical solutions passed every test, and their failures."""
    passed = total = 0
    failures: Counter[str] = Counter()
    for sample, reward in zip(samples, rewards, strict=True):
        if not sample.id.endswith("/canonical_solution"):
            continue
        total += 1
        tests = reward.components.get("tests")
        passed += tests is not None and tests.score == 1.0
        for name, component in reward.components.items():
            if component.failure is not None:
                failures[f"{name}:{component.failure.kind.value}"] += 1
    return f"canonical {passed}/{total} pass, component failures {dict(failures) or 0}"


def by_language(samples: Sequence[Sample], rewards: Sequence[Reward]) -> list[str]:
    """Per language: canonical passing, buggy failing, unscored, of each."""
    lines = []
    for name in dict.fromkeys(program_language(s.task) for s in samples if s.task is not None):
        rows = [
            (s, r)
            for s, r in zip(samples, rewards, strict=True)
            if s.task is not None and program_language(s.task) == name
        ]
        good = [r for s, r in rows if s.id.endswith("/canonical_solution")]
        bad = [r for s, r in rows if s.id.endswith("/buggy_solution")]
        lines.append(
            f"  {name:10s} canonical {sum(r.reward == 1.0 for r in good)}/{len(good)} pass, "
            f"{sum(r.reward is None for r in good)} unscored; buggy "
            f"{sum(r.reward is not None and r.reward < 1.0 for r in bad)}/{len(bad)} fail, "
            f"{sum(r.reward is None for r in bad)} unscored"
        )
    return lines


def languages_main(names: Sequence[str], levels: Sequence[int], rows: int | None) -> None:
    """Grade HumanEvalPack in each language, cold, quiet and under each load level."""
    samples = language_set(names, rows)
    print(f"{len(samples)} rollouts in {', '.join(names)}, tests only, {os.cpu_count()} CPUs")
    baseline, wall = grade_cold(samples, TESTS_ONLY)
    print(f"quiet     : {wall:6.1f} s wall")
    print("\n".join(by_language(samples, baseline)))
    for level in levels:
        with cpu_load(level) as burners:
            rewards, wall = grade_cold(samples, TESTS_ONLY)
        flips, components, ours = compare(baseline, rewards)
        print(
            f"{level}x load ({burners:2d} busy processes): {wall:6.1f} s wall; "
            f"reward flips {len(flips)}/{len(samples)}; components differing {components}; "
            f"failures of ours {dict(ours) or 0}"
        )
        print("\n".join(by_language(samples, rewards)))
        for flip in flips[:40]:
            print(f"  flipped: {flip}")


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--levels", type=int, nargs="+", default=[2, 4], help="oversubscription")
    parser.add_argument("--mbpp", type=int, default=100, help="MBPP items in the set")
    parser.add_argument(
        "--languages", nargs="+", default=None, help="all, or some of " + " ".join(LANGUAGE_NAMES)
    )
    parser.add_argument(
        "--rows", type=int, default=None, help="with --languages: the first N tasks of each"
    )
    args = parser.parse_args(argv)
    if args.languages is not None:
        names = LANGUAGE_NAMES if args.languages == ["all"] else tuple(args.languages)
        unknown = sorted(set(names) - set(LANGUAGE_NAMES))
        if unknown:
            parser.error(f"unknown languages {unknown}; expected {', '.join(LANGUAGE_NAMES)}")
        languages_main(names, args.levels, args.rows)
        return
    samples = the_set(args.mbpp)
    print(f"{len(samples)} rollouts, rubric python-codegen, {os.cpu_count()} CPUs")
    baseline, wall = grade_cold(samples)
    abstained = sum(r.reward is None for r in baseline)
    print(f"quiet     : {wall:6.1f} s wall; {abstained} abstained; {canonical(samples, baseline)}")
    for level in args.levels:
        with cpu_load(level) as burners:
            rewards, wall = grade_cold(samples)
        flips, components, ours = compare(baseline, rewards)
        rate = len(flips) / len(samples)
        print(
            f"{level}x load ({burners:2d} busy processes): {wall:6.1f} s wall; "
            f"reward flips {len(flips)}/{len(samples)} = {rate:.2%}; "
            f"components differing {components}; failures of ours {dict(ours) or 0}; "
            f"{canonical(samples, rewards)}"
        )
        for flip in flips[:20]:
            print(f"  flipped: {flip}")


if __name__ == "__main__":
    main()
