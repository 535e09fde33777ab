"""Audit a reward model on preference data in the RewardBench format.

Each row is ``{"prompt", "chosen", "rejected", "subset"?}``. ``chosen`` and
``rejected`` are a string each (a pair) or lists (best-of-N: RewardBench 2's
one correct answer against three rejected ones). A row is right when every
chosen answer scores above every rejected one — ties count as wrong, so a
constant reward model scores 0, not 0.5.

The report gives accuracy per subset; accuracy split by whether the chosen
answer is the longer one (a reward model that has learnt "longer is better"
is right on one side and wrong on the other); and a histogram of margins
(lowest chosen score minus highest rejected score).

HumanEvalPack can be read as pairs: the canonical solution chosen, the buggy
one rejected, the bug type as subset.

Run: ``python -m reward_models.audit MODEL_DIR DATA.jsonl [--humanevalpack]``.
"""

from __future__ import annotations

import asyncio
import json
import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from arbiter.reward_models.client import RewardModelClient

__all__ = [
    "AuditReport",
    "AuditRow",
    "audit",
    "format_report",
    "humanevalpack_rows",
    "read_rows",
    "score_rows",
]


@dataclass(frozen=True, slots=True)
class AuditRow:
    """One prompt with its chosen and rejected answers."""

    prompt: str | tuple[dict[str, str], ...]
    chosen: tuple[str, ...]
    rejected: tuple[str, ...]
    subset: str = "all"


@dataclass(frozen=True, slots=True)
class SplitAccuracy:
    """Right answers out of rows."""

    right: int
    rows: int

    @property
    def accuracy(self) -> float:
        """Return right / rows (NaN for no rows: no evidence, not 0)."""
        return self.right / self.rows if self.rows else math.nan


@dataclass(frozen=True, slots=True)
class AuditReport:
    """Accuracy overall, per subset, by length, and the margin histogram."""

    overall: SplitAccuracy
    subsets: dict[str, SplitAccuracy]
    chosen_longer: SplitAccuracy
    chosen_shorter: SplitAccuracy
    margins: list[float] = field(repr=False)
    histogram: list[tuple[float, float, int]] = field(default_factory=list)


def _as_tuple(value: Any, what: str) -> tuple[str, ...]:
    if isinstance(value, str):
        return (value,)
    if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
        return tuple(value)
    raise ValueError(f"{what} must be a string or a non-empty list of strings")


def read_rows(path: Path) -> list[AuditRow]:
    """Read RewardBench-format JSONL rows.

    Raises:
        ValueError: a row without the fields, with its line number.
    """
    rows = []
    with path.open(encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                data = json.loads(line)
                prompt = data["prompt"]
                if isinstance(prompt, list):
                    prompt = tuple(
                        {"role": str(m["role"]), "content": str(m["content"])} for m in prompt
                    )
                rows.append(
                    AuditRow(
                        prompt=prompt,
                        chosen=_as_tuple(data["chosen"], "chosen"),
                        rejected=_as_tuple(data["rejected"], "rejected"),
                        subset=str(data.get("subset", "all")),
                    )
                )
            except (ValueError, KeyError, TypeError) as e:
                raise ValueError(f"{path}:{number}: not a RewardBench row: {e}") from e
    return rows


def humanevalpack_rows(path: Path) -> list[AuditRow]:
    """Read HumanEvalPack: canonical solution chosen, buggy one rejected, bug type as subset."""
    rows = []
    with path.open(encoding="utf-8") as f:
        for line in f:
            if not line.strip():
                continue
            item = json.loads(line)
            head = item["declaration"]
            rows.append(
                AuditRow(
                    prompt=item.get("instruction") or item["prompt"],
                    chosen=(head + item["canonical_solution"],),
                    rejected=(head + item["buggy_solution"],),
                    subset=str(item.get("bug_type", "all")),
                )
            )
    return rows


def _conversation(prompt: str | tuple[dict[str, str], ...], answer: str) -> list[dict[str, str]]:
    messages = [{"role": "user", "content": prompt}] if isinstance(prompt, str) else list(prompt)
    return [*messages, {"role": "assistant", "content": answer}]


async def score_rows(
    client: RewardModelClient, rows: Sequence[AuditRow], objective: int = 0
) -> list[tuple[list[float], list[float]]]:
    """Score every answer of every row (concurrently, so the batcher can batch them)."""

    async def one(prompt: Any, answer: str) -> float:
        return (await client.score(_conversation(prompt, answer))).values[objective]

    async def row(r: AuditRow) -> tuple[list[float], list[float]]:
        chosen = await asyncio.gather(*(one(r.prompt, a) for a in r.chosen))
        rejected = await asyncio.gather(*(one(r.prompt, a) for a in r.rejected))
        return list(chosen), list(rejected)

    return list(await asyncio.gather(*(row(r) for r in rows)))


def audit(
    rows: Sequence[AuditRow],
    scores: Sequence[tuple[Sequence[float], Sequence[float]]],
    *,
    bins: int = 10,
) -> AuditReport:
    """Compute the report from rows and their (chosen, rejected) scores (pure)."""
    if len(rows) != len(scores):
        raise ValueError(f"{len(rows)} rows but {len(scores)} scored rows")
    per_subset: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    longer, shorter, overall = [0, 0], [0, 0], [0, 0]
    margins = []
    for r, (chosen, rejected) in zip(rows, scores, strict=True):
        margin = min(chosen) - max(rejected)
        right = int(margin > 0)
        margins.append(margin)
        for tally in (overall, per_subset[r.subset]):
            tally[0] += right
            tally[1] += 1
        is_longer = min(len(c) for c in r.chosen) > max(len(x) for x in r.rejected)
        side = longer if is_longer else shorter
        side[0] += right
        side[1] += 1
    histogram: list[tuple[float, float, int]] = []
    if margins:
        counts, edges = np.histogram(np.asarray(margins, dtype=float), bins=bins)
        histogram = [
            (float(edges[i]), float(edges[i + 1]), int(counts[i])) for i in range(len(counts))
        ]
    return AuditReport(
        overall=SplitAccuracy(*overall),
        subsets={name: SplitAccuracy(*t) for name, t in sorted(per_subset.items())},
        chosen_longer=SplitAccuracy(*longer),
        chosen_shorter=SplitAccuracy(*shorter),
        margins=margins,
        histogram=histogram,
    )


def format_report(report: AuditReport) -> str:
    """Render the report as plain text."""
    lines = [f"overall accuracy {report.overall.accuracy:.3f} ({report.overall.rows} rows)"]
    for name, s in report.subsets.items():
        lines.append(f"  subset {name:<24} {s.accuracy:.3f} ({s.rows} rows)")
    lines.append(
        f"chosen longer:  {report.chosen_longer.accuracy:.3f} ({report.chosen_longer.rows} rows)"
    )
    lines.append(
        f"chosen shorter: {report.chosen_shorter.accuracy:.3f} ({report.chosen_shorter.rows} rows)"
    )
    lines.append("margin (min chosen - max rejected) histogram:")
    top = max((c for _, _, c in report.histogram), default=0)
    for low, high, count in report.histogram:
        bar = "#" * (round(40 * count / top) if top else 0)
        lines.append(f"  [{low:+9.3f}, {high:+9.3f}) {count:5d} {bar}")
    return "\n".join(lines)


def main(
    model: Path,
    data: Path,
    humanevalpack: bool = False,
    max_length: int = 4096,
    limit: int | None = None,
) -> None:
    """Audit the local reward model in MODEL on the RewardBench-format rows in DATA.

    With --humanevalpack, DATA is HumanEvalPack JSONL read as pairs.
    """
    from arbiter.reward_models.hf import HFRewardModel, HFRewardModelSpec

    rows = humanevalpack_rows(data) if humanevalpack else read_rows(data)
    rows = rows[:limit] if limit else rows
    rm = HFRewardModel.load(HFRewardModelSpec(path=str(model), max_length=max_length))
    client = RewardModelClient(rm)

    async def run() -> list[tuple[list[float], list[float]]]:
        try:
            return await score_rows(client, rows)
        finally:
            await client.close()

    print(format_report(audit(rows, asyncio.run(run()))))


if __name__ == "__main__":
    import typer

    typer.run(main)
