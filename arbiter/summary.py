"""Tables that summarise a batch of rewards for a person at a terminal."""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from rich.table import Table

from arbiter.rubrics.reward import Reward

__all__ = ["failed_everywhere", "rewards_table", "summary_table"]


def _fmt(value: float | None) -> str:
    return "—" if value is None else f"{value:+.4f}" if value < 0 else f"{value:.4f}"


def rewards_table(rewards: Sequence[Reward], title: str) -> Table:
    """One row per reward: id, group, reward and each component's score or failure."""
    names = list(rewards[0].components) if rewards else []
    table = Table(title=title, title_justify="left")
    table.add_column("id", overflow="fold")
    table.add_column("group")
    table.add_column("reward", justify="right", style="bold")
    for name in names:
        table.add_column(name, justify="right")
    table.add_column("penalties / why abstained", overflow="fold")
    for r in rewards:
        cells = []
        for name in names:
            c = r.components[name]
            cells.append(_fmt(c.score) if c.failure is None else f"[red]{c.failure.kind.value}[/]")
        notes = ", ".join(f"{p.violation.value} -{p.penalty:g}" for p in r.penalties)
        if r.reward is None:
            notes = f"[yellow]{r.abstain_reason}[/]"
        table.add_row(r.id, r.group_id or "", _fmt(r.reward), *cells, notes)
    return table


def summary_table(rewards: Sequence[Reward], title: str) -> Table:
    """Aggregate figures: reward distribution, then per component means, failures, latency."""
    table = Table(title=title, title_justify="left")
    table.add_column("what")
    table.add_column("n", justify="right")
    table.add_column("mean", justify="right")
    table.add_column("std", justify="right")
    table.add_column("min", justify="right")
    table.add_column("max", justify="right")
    table.add_column("failures / abstentions")
    table.add_column("p50 latency ms", justify="right")

    def row(label: str, values: list[float], failures: Counter[str], latency: list[float]) -> None:
        table.add_row(
            label,
            str(len(values)),
            _fmt(statistics.fmean(values)) if values else "—",
            _fmt(statistics.pstdev(values)) if len(values) > 1 else "—",
            _fmt(min(values)) if values else "—",
            _fmt(max(values)) if values else "—",
            ", ".join(f"{k} {v}" for k, v in failures.most_common()) or "0",
            f"{1000 * statistics.median(latency):.2f}" if latency else "",
        )

    values = [r.reward for r in rewards if r.reward is not None]
    abstained: Counter[str] = Counter()
    for r in rewards:
        if r.reward is None:
            abstained["abstained"] += 1
    row("reward", values, abstained, [])
    for name in rewards[0].components if rewards else []:
        outcomes = [r.components[name] for r in rewards]
        scores = [o.score for o in outcomes if o.score is not None]
        failures = Counter(o.failure.kind.value for o in outcomes if o.failure is not None)
        row(f"  {name}", scores, failures, [o.latency_s for o in outcomes])
    return table


def failed_everywhere(rewards: Sequence[Mapping[str, Any]]) -> list[str]:
    """Name each component that failed for every reward, with its commonest failure (pure).

    ``rewards`` are reward dicts (as written out). A component that never
    scored is almost always set-up, not the samples: an undeclared model, a
    judge that is down, a model that could not load. Such a run is worth
    nothing, and says so here rather than as a column of abstentions.
    """
    if not rewards:
        return []
    lines = []
    for name in rewards[0]["components"]:
        failures = [r["components"][name]["failure"] for r in rewards if name in r["components"]]
        if len(failures) != len(rewards) or any(f is None for f in failures):
            continue
        kinds = Counter((f["kind"], f["message"]) for f in failures)
        (kind, message), count = kinds.most_common(1)[0]
        lines.append(
            f"component {name!r} failed for every sample ({len(rewards)} of {len(rewards)}); "
            f"{count} with {kind}: {message}"
        )
    return lines
