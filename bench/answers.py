"""The answer grader beside math-verify and verl's scorers: accuracy, timeouts, latency.

Run: ``flock /tmp/arbiter-bench.lock .venv/bin/python -m bench.answers [--skip-latency]``.

**Accuracy**, in one run, on the labelled sets ``eval_sets/answers-math-verify.jsonl``
(Math-Verify's own test triples) and ``eval_sets/answers-own.jsonl`` (ours):

- **ours**: the ``answer`` grader, its workers and all;
- **math-verify (TRL)**: TRL's released ``accuracy_reward`` itself, which
  configures math-verify (the gold parsed with the defaults, the completion with
  ``LatexExtractionConfig(units=True, boxed_match_priority=0,
  try_extract_without_anchor=False)``, ``first_match``);
- **verl math_reward** and **verl gsm8k**: verl 0.9.1's ``compute_score``
  (``verl.utils.reward_score.math_reward`` and ``.gsm8k``).

Each peer runs in a killable worker too (a hang there is recorded as the peer's
``hung``, a verdict of "not accepted"), so a peer's hang cannot stop the bench. A
case is "accepted" at a reward of 1.0; an abstention (``None``: TRL's unparseable
gold, our ``invalid_task``) is not accepted and is counted apart. Precision and
recall are over the label; every case where ours disagrees with the label is
listed with what our checker said.

**Timeouts and latency**: one batch of 1,000 ordinary samples plus a power tower and
a 10^6-character answer through ``run_jobs``; the two must end as typed timeouts
within their limit while the 1,000 are graded. p50/p99 per sample (the check's own
run time, and end to end with the queue), beside math-verify called in-process,
TRL's way, on the same 1,000.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from arbiter.eval_sets import eval_set_path
from arbiter.graders.answers.grader import AnswerConfig, AnswerGrader
from arbiter.graders.answers.pool import CheckFailed, CheckPool, CheckTimeout
from arbiter.graders.runner import GraderJob, run_jobs
from arbiter.graders.types import AnswerTask, GradeResult, Sample

SETS = ("answers-math-verify", "answers-own")
PEER_LIMIT_S = 30.0


def load_cases() -> list[dict[str, Any]]:
    """Return every labelled case of both sets."""
    cases: list[dict[str, Any]] = []
    for name in SETS:
        with eval_set_path(name).open(encoding="utf-8") as f:
            cases.extend(json.loads(line) for line in f if line.strip())
    return cases


def sample_of(case: dict[str, Any], index: int) -> Sample:
    """Return the grader's sample for one labelled case."""
    return Sample(
        id=f"{index}",
        prompt=case.get("prompt", ""),
        response=case["response"],
        task=AnswerTask(
            kind="answer",
            answer=case["gold"],
            format=case.get("format", "math"),
            choices=case.get("choices"),
            tolerance=case.get("tolerance"),
        ),
    )


# ---------------------------------------------------------------- the peers


def trl_accuracy(*, gold: str, response: str) -> float | None:
    """TRL's released accuracy_reward on one completion (math-verify as TRL configures it)."""
    from trl.rewards import accuracy_reward  # type: ignore[attr-defined]

    rewards = accuracy_reward(completions=[[{"content": response}]], solution=[gold])
    return rewards[0]


def verl_math(*, gold: str, response: str) -> float:
    """Verl 0.9.1's math_reward.compute_score (MATH's boxed answer, string normalization)."""
    from verl.utils.reward_score import math_reward

    return float(math_reward.compute_score(response, gold))


def verl_gsm8k(*, gold: str, response: str) -> float:
    """Verl 0.9.1's gsm8k.compute_score (the ``#### answer`` line, strict)."""
    from verl.utils.reward_score import gsm8k

    return float(gsm8k.compute_score(response, gold))  # type: ignore[no-untyped-call]


def _quiet_import() -> None:
    import logging

    logging.disable(logging.WARNING)
    import math_verify  # type: ignore[import-untyped]  # noqa: F401
    from trl.rewards import accuracy_reward  # type: ignore[attr-defined]  # noqa: F401
    from verl.utils.reward_score import gsm8k, math_reward  # noqa: F401


PEERS: dict[str, Callable[..., float | None]] = {
    "math-verify (TRL accuracy_reward)": trl_accuracy,
    "verl math_reward": verl_math,
    "verl gsm8k": verl_gsm8k,
}


@dataclass
class Tally:
    """Verdicts of one checker against the labels."""

    tp: int = 0
    fp: int = 0
    fn: int = 0
    tn: int = 0
    abstained: int = 0
    hung: int = 0

    def add(self, label: int, accepted: bool) -> None:
        """Count one verdict."""
        if label and accepted:
            self.tp += 1
        elif accepted:
            self.fp += 1
        elif label:
            self.fn += 1
        else:
            self.tn += 1

    def line(self, name: str) -> str:
        """One row of the table."""
        precision = self.tp / (self.tp + self.fp) if self.tp + self.fp else float("nan")
        recall = self.tp / (self.tp + self.fn) if self.tp + self.fn else float("nan")
        return (
            f"{name:<36} {100 * precision:7.2f}% {100 * recall:7.2f}%  "
            f"tp={self.tp} fp={self.fp} fn={self.fn} tn={self.tn} "
            f"abstained={self.abstained} hung={self.hung}"
        )


async def grade_ours(cases: list[dict[str, Any]], grader: AnswerGrader) -> list[GradeResult]:
    """Grade every case with the answer grader, as the runner does."""
    config = AnswerConfig()
    jobs = [
        GraderJob(sample_of(case, i), "answer", grader, config, grader.default_timeout_s)
        for i, case in enumerate(cases)
    ]
    return await run_jobs(jobs)


async def grade_peer(
    pool: CheckPool, peer: Callable[..., float | None], cases: list[dict[str, Any]]
) -> list[float | str | None]:
    """Grade every case with one peer, each in a killable worker."""

    async def one(case: dict[str, Any]) -> float | str | None:
        try:
            outcome = await pool.run(
                peer, PEER_LIMIT_S, gold=case["gold"], response=case["response"]
            )
        except CheckTimeout:
            return "hung"
        except CheckFailed as e:
            return f"raised: {e}"
        value: float | None = outcome.value
        return value

    return list(await asyncio.gather(*(one(case) for case in cases)))


def accuracy(cases: list[dict[str, Any]]) -> None:
    """Print precision and recall for ours and each peer, and ours' disagreements."""

    async def run() -> tuple[list[GradeResult], dict[str, list[float | str | None]]]:
        grader = AnswerGrader()
        await grader.warm()
        ours = await grade_ours(cases, grader)
        grader.close()
        pool = CheckPool(2, warm_up=_quiet_import, memory_mb=0)
        await pool.start()
        peers = {name: await grade_peer(pool, fn, cases) for name, fn in PEERS.items()}
        pool.close()
        return ours, peers

    ours, peers = asyncio.run(run())
    print(
        f"\n== accuracy on {len(cases)} labelled cases "
        f"({sum(c['label'] for c in cases)} equivalent, "
        f"{sum(1 - c['label'] for c in cases)} not) =="
    )
    print(f"{'checker':<36} {'precision':>8} {'recall':>8}")
    tally = Tally()
    disagreements: list[str] = []
    for case, result in zip(cases, ours, strict=True):
        accepted = result.score == 1.0
        if result.score is None:
            tally.abstained += 1
        tally.add(case["label"], accepted)
        if accepted != bool(case["label"]):
            said = (
                result.failure.kind.value
                if result.failure
                else result.details.get("how") or result.details.get("reason", "")
            )
            disagreements.append(
                f"  {case['id']}: label={case['label']} ours={result.score} ({said}) "
                f"gold={case['gold']!r} response={case['response'][:90]!r} "
                f"answer={str(result.details.get('answer'))[:60]!r}"
            )
    print(tally.line("ours (answer grader)"))
    for name, verdicts in peers.items():
        peer = Tally()
        for case, verdict in zip(cases, verdicts, strict=True):
            if verdict == "hung":
                peer.hung += 1
            elif verdict is None:
                peer.abstained += 1
            peer.add(case["label"], verdict == 1.0)
        print(peer.line(name))
    by_source: dict[str, list[int]] = {}
    for case, result in zip(cases, ours, strict=True):
        counts = by_source.setdefault(case["source"].split("::")[0].split(":")[0], [0, 0])
        counts[0] += 1
        counts[1] += int((result.score == 1.0) == bool(case["label"]))
    print(
        "ours, agreement with the label by set: "
        + ", ".join(f"{k} {v[1]}/{v[0]}" for k, v in by_source.items())
    )
    print(f"\nours disagrees with the label on {len(disagreements)} cases:")
    print("\n".join(disagreements) or "  (none)")


# --------------------------------------------------------------- timeouts


def ordinary_batch(count: int, seed: int = 7) -> list[tuple[str, str]]:
    """Return ``count`` (gold, response) pairs of the usual kind, half right, half wrong."""
    rng = random.Random(seed)
    out: list[tuple[str, str]] = []
    for i in range(count):
        n, d = rng.randint(1, 500), rng.randint(2, 60)
        gold = rf"\frac{{{n}}}{{{d}}}" if i % 3 else str(n)
        if i % 2:
            answer = gold if i % 4 != 1 else f"{n / d:.6f}" if i % 3 else f"{n}.0"
        else:
            answer = rf"\frac{{{n + 1}}}{{{d}}}" if i % 3 else str(n + 1)
        out.append((gold, f"Working it out.\nSo the answer is $\\boxed{{{answer}}}$."))
    return out


def _percentiles(values: list[float]) -> str:
    ordered = sorted(values)
    p50 = statistics.median(ordered)
    p99 = ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))]
    return f"p50 {1000 * p50:8.2f} ms   p99 {1000 * p99:8.2f} ms   max {1000 * ordered[-1]:8.2f} ms"


def timeouts(count: int) -> None:
    """Grade the two monsters among ``count`` ordinary samples; print latency beside math-verify."""
    ordinary = ordinary_batch(count)
    tower = ("1", r"\boxed{2^{2^{2^{2^{2^{2^{2^{2}}}}}}}}")
    huge = ("1", "\\boxed{" + "1+" * 500_000 + "1}")
    config = AnswerConfig(check_timeout_s=5.0)

    grader_workers = AnswerGrader().pool.workers

    async def run() -> tuple[list[GradeResult], float]:
        grader = AnswerGrader()
        await grader.warm()
        samples = [
            Sample(id=f"s{i}", response=r, task=AnswerTask(kind="answer", answer=g))
            for i, (g, r) in enumerate([tower, huge, *ordinary])
        ]
        jobs = [GraderJob(s, "answer", grader, config, grader.default_timeout_s) for s in samples]
        started = time.perf_counter()
        results = await run_jobs(jobs)
        wall = time.perf_counter() - started
        grader.close()
        return results, wall

    results, wall = asyncio.run(run())
    print(f"\n== timeouts: a power tower and a 10^6-character answer among {count} others ==")
    for name, result in zip(("power tower", "10^6 characters"), results[:2], strict=True):
        print(
            f"  {name:<16} score={result.score} failure_kind="
            f"{result.details.get('failure_kind')} latency={result.latency_s:.2f} s "
            f"({result.details.get('failure', '')})"
        )
    rest = results[2:]
    failed = [r for r in rest if r.score is None]
    right = sum(1 for (g, r), res in zip(ordinary, rest, strict=True) if res.score is not None)
    print(
        f"  the other {count}: {right} graded, {len(failed)} without a score; batch wall "
        f"{wall:.2f} s ({grader_workers} workers)"
    )
    print(
        "  ours, check run time per sample:      "
        + _percentiles([r.details["check_s"] for r in rest if "check_s" in r.details])
    )
    print("  ours, end to end per sample (queued): " + _percentiles([r.latency_s for r in rest]))

    from latex2sympy2_extended import NormalizationConfig  # type: ignore[import-untyped]
    from math_verify import LatexExtractionConfig, parse, verify

    latencies: list[float] = []
    for gold, response in ordinary:
        started = time.perf_counter()
        gold_parsed = parse(gold, parsing_timeout=10)
        answer = parse(
            response,
            extraction_config=[
                LatexExtractionConfig(
                    normalization_config=NormalizationConfig(units=True),
                    boxed_match_priority=0,
                    try_extract_without_anchor=False,
                )
            ],
            extraction_mode="first_match",
            parsing_timeout=10,
        )
        verify(gold_parsed, answer, timeout_seconds=5)
        latencies.append(time.perf_counter() - started)
    print("  math-verify in-process, per sample:   " + _percentiles(latencies))

    async def monsters() -> list[str]:
        pool = CheckPool(2, warm_up=_quiet_import, memory_mb=0)
        await pool.start()
        out = []
        for gold, response in (tower, huge):
            started = time.perf_counter()
            try:
                value = (await pool.run(trl_accuracy, 60.0, gold=gold, response=response)).value
                out.append(f"returned {value} after {time.perf_counter() - started:.2f} s")
            except CheckTimeout:
                out.append("still running when killed at 60 s")
            except CheckFailed as e:
                out.append(f"raised after {time.perf_counter() - started:.2f} s: {e}")
        pool.close()
        return out

    for name, said in zip(("power tower", "10^6 characters"), asyncio.run(monsters()), strict=True):
        print(f"  math-verify (TRL, main thread, its own 10 s/5 s alarms) on the {name}: {said}")


def main() -> None:
    """Run the accuracy comparison, then the timeout and latency batch."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--skip-latency", action="store_true")
    parser.add_argument("--skip-accuracy", action="store_true")
    parser.add_argument("--samples", type=int, default=1000)
    args = parser.parse_args()
    if not args.skip_accuracy:
        accuracy(load_cases())
    if not args.skip_latency:
        timeouts(args.samples)


if __name__ == "__main__":
    main()
