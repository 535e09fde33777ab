"""Tables for a person at a terminal: a batch of rewards, an audit, a replay."""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from rich.markup import escape
from rich.table import Table

from arbiter.rubrics.reward import Reward

__all__ = [
    "agreement_table",
    "audit_table",
    "failed_everywhere",
    "fmt",
    "left_out_everywhere",
    "replay_tables",
    "rewards_table",
    "summary_table",
    "why",
]


def fmt(value: float | None, missing: str = "—") -> str:
    """Format a score or reward to four decimals (``missing`` for none: abstained, not scored)."""
    return missing if value is None else f"{value:.4f}"


def rewards_table(rewards: Sequence[Reward], title: str) -> Table:
    """One row per reward: id, group, reward, each component's score or failure, and why."""
    # Every component any reward has (a rubric's routes have their own), in first-seen order.
    names = list(dict.fromkeys(name for r in rewards for name in r.components))
    table = Table(title=title, title_justify="left")
    table.add_column("id", overflow="fold")
    table.add_column("group")
    table.add_column("reward", justify="right", style="bold")
    for name in names:
        table.add_column(name, justify="right")
    table.add_column("why: penalties, gates, fills, clip / abstained", overflow="fold")
    for r in rewards:
        cells = []
        for name in names:
            c = r.components.get(name)
            if c is None:
                cells.append("")  # another route's component
                continue
            cells.append(fmt(c.score) if c.failure is None else f"[red]{c.failure.kind.value}[/]")
        notes = escape(why(r))
        if r.reward is None:
            notes = f"[yellow]{notes}[/]"
        table.add_row(r.id, r.group_id or "", fmt(r.reward), *cells, notes)
    return table


def why(reward: Reward) -> str:
    """Say in a line what made a reward other than its weighted scores (pure).

    An abstention's reason; else each penalty, each gate that applied, the
    components left out (not applicable, or without a score under
    ``renormalize``), those read as 0, the clip and the group normalization, as
    the reward's ``flags`` and ``gates`` record them.
    """
    if reward.reward is None:
        return reward.abstain_reason or "abstained"
    parts = [f"{p.violation.value} -{p.penalty:g}" for p in reward.penalties]
    for gate in reward.gates:
        bounds = []
        if gate.cap is not None:
            bounds.append(f"cap {gate.cap:g}")
        if gate.floor is not None:
            bounds.append(f"floor {gate.floor:g}")
        note = "" if gate.reason == "condition holds" else f" ({gate.reason})"
        parts.append(f"{' '.join(bounds)} by {gate.when!r}{note}")
    flags = set(reward.flags)
    unscored = {
        name: c.failure.kind.value for name, c in reward.components.items() if c.failure is not None
    }
    if "missing_read_as_zero" in flags:
        read = [n for n, kind in unscored.items() if kind != "not_applicable"]
        parts.append(f"read as 0: {', '.join(read)}")
    if "renormalized" in flags:
        left = ", ".join(f"{n} ({kind})" for n, kind in unscored.items())
        parts.append(f"renormalized without {left}")
    elif "not_applicable_left_out" in flags:
        left = ", ".join(n for n, kind in unscored.items() if kind == "not_applicable")
        parts.append(f"left out (not applicable): {left}")
    if "clipped" in flags and reward.raw_reward is not None:
        parts.append(f"clipped from {reward.raw_reward:.4f}")
    for flag in reward.flags:
        if flag.startswith("normalized:"):
            parts.append(f"{flag.split(':', 1)[1]} of {fmt(reward.raw_reward)}")
        elif flag == "singleton_group":
            parts.append("alone in its group")
    return "; ".join(parts)


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
            fmt(statistics.fmean(values)) if values else "—",
            fmt(statistics.pstdev(values)) if len(values) > 1 else "—",
            fmt(min(values)) if values else "—",
            fmt(max(values)) if values else "—",
            ", ".join(f"{k} {v}" for k, v in failures.most_common()) or "0",
            f"{1000 * statistics.median(latency):.2f}" if latency else "",
        )

    values = [r.reward for r in rewards if r.reward is not None]
    abstained: Counter[str] = Counter()
    for r in rewards:
        if r.reward is None:
            abstained["abstained"] += 1
    row("reward", values, abstained, [])
    for name in dict.fromkeys(name for r in rewards for name in r.components):
        outcomes = [r.components[name] for r in rewards if name in r.components]
        scores = [o.score for o in outcomes if o.score is not None]
        failures = Counter(o.failure.kind.value for o in outcomes if o.failure is not None)
        row(f"  {name}", scores, failures, [o.latency_s for o in outcomes])
    return table


def failed_everywhere(rewards: Sequence[Mapping[str, Any]]) -> list[str]:
    """Name each component that failed for every reward, with its commonest failure (pure).

    ``rewards`` are reward dicts (as written out). A component that never
    scored is almost always set-up, not the samples: an undeclared model, a
    judge that is down, a model that could not load. Such a run is worth
    nothing, and says so here rather than as a column of abstentions. A
    component that applies to none of the samples (``not_applicable``: bandit on
    C++, hidden cases without a reference) did not fail: :func:`left_out_everywhere`.
    """
    rewards = _graded(rewards)
    lines = []
    for name, failures in _unscored_everywhere(rewards):
        failed = [f for f in failures if f["kind"] != "not_applicable"]
        if not failed:
            continue
        kinds = Counter((f["kind"], f["message"]) for f in failed)
        (kind, message), count = kinds.most_common(1)[0]
        where = "every sample" if len(failed) == len(rewards) else "every sample it applies to"
        lines.append(
            f"component {name!r} failed for {where} ({len(failed)} of {len(rewards)}); "
            f"{count} with {kind}: {message}"
        )
    return lines


def left_out_everywhere(rewards: Sequence[Mapping[str, Any]]) -> list[str]:
    """Name each component that applies to none of the rewards' samples, and why (pure)."""
    rewards = _graded(rewards)
    lines = []
    for name, failures in _unscored_everywhere(rewards):
        if not all(f["kind"] == "not_applicable" for f in failures):
            continue
        (message, _), *_ = Counter(f["message"] for f in failures).most_common(1)
        lines.append(
            f"component {name!r} applies to none of the {len(rewards)} sample(s) and is left "
            f"out of their rewards: {message}"
        )
    return lines


def _graded(rewards: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The rewards of samples the rubric graded: one it does not accept says nothing."""
    return [r for r in rewards if "not_accepted" not in r.get("flags", ())]


def _unscored_everywhere(
    rewards: Sequence[Mapping[str, Any]],
) -> list[tuple[str, list[Mapping[str, Any]]]]:
    if not rewards:
        return []
    out = []
    for name in dict.fromkeys(n for r in rewards for n in r["components"]):
        failures = [r["components"][name]["failure"] for r in rewards if name in r["components"]]
        if len(failures) != len(rewards) or any(f is None for f in failures):
            continue
        out.append((name, failures))
    return out


def audit_table(summary: dict[str, object]) -> Table:
    """Lay out an audit's figures (:func:`arbiter.audit.summarize`), one per row."""
    table = Table(title=f"audit: {summary['items']} items", title_justify="left")
    table.add_column("figure")
    table.add_column("value", justify="right")

    def pct(value: object) -> str:
        return "—" if value is None else f"{100 * float(value):.1f}%"  # type: ignore[arg-type]

    tests = summary.get("tests") or {}
    for name, t in tests.items():  # type: ignore[attr-defined]
        table.add_row(f"tests accuracy ({name}, {t['labelled']} labelled)", pct(t["accuracy"]))
    v: dict[str, object] = summary.get("violations") or {}  # type: ignore[assignment]
    table.add_row(f"hack recall ({v.get('hack_items', 0)} hacks)", pct(v.get("hack_recall")))
    table.add_row(
        f"false-positive rate ({v.get('clean_items', 0)} clean)", pct(v.get("false_positive_rate"))
    )
    at: dict[str, object] = v.get("recall_at_fpr") or {}  # type: ignore[assignment]
    if at.get("recall") is not None:
        table.add_row(
            f"hack recall at {pct(at['target_false_positive_rate'])} false positives "
            f"(>= {at['threshold']} violation(s), {pct(at['false_positive_rate'])} measured)",
            pct(at["recall"]),
        )
    prefs: dict[str, object] = summary.get("preferences") or {}  # type: ignore[assignment]
    if prefs.get("pairs"):
        table.add_row(
            f"preference accuracy ({prefs['scored_pairs']} pairs)", pct(prefs["accuracy"])
        )
    for name, d in (summary.get("determinism") or {}).items():  # type: ignore[attr-defined]
        infra = d.get("infrastructure_failures", 0)
        note = f" ({infra} infrastructure failure(s), not compared)" if infra else ""
        table.add_row(f"determinism ({name})", pct(d["identical"]) + note)
    for grader, lat in (summary.get("latency") or {}).items():  # type: ignore[attr-defined]
        table.add_row(
            f"latency {grader} p50 / p99", f"{lat['p50_ms']:.2f} / {lat['p99_ms']:.2f} ms"
        )
    for name, f in (summary.get("failures") or {}).items():  # type: ignore[attr-defined]
        if f:
            table.add_row(f"failures ({name})", ", ".join(f"{k} {c}" for k, c in f.items()))
    return table


def replay_tables(summary: dict[str, Any], title: str) -> list[Table]:
    """Lay out a replay (:func:`arbiter.replay.summarize_replay`): figures, movers, agreement."""
    table = Table(title=title, title_justify="left")
    table.add_column("figure")
    table.add_column("value", justify="right")
    table.add_row("re-scored", str(summary["replayed"]))
    table.add_row("skipped", f"{summary['skipped']} {summary['skipped_reasons']}".strip())
    table.add_row("changed", str(summary["changed"]))
    table.add_row(
        "mean |delta| / max |delta|",
        f"{summary['mean_abs_delta']:.4g} / {summary['max_abs_delta']:.4g}",
    )
    table.add_row("Spearman rho old vs new", fmt(summary["spearman"]))
    for name, c in summary["components"].items():
        table.add_row(f"component {name} changed", str(c["changed"]))
    for rule, count in summary["moved_by_rule"].items():
        table.add_row(f"moved by {rule}", str(count))
    tables = [table]
    if summary["moved"]:
        moved = Table(title="items that moved most, and why", title_justify="left")
        for column in ("sample", "old", "new", "rules that moved it"):
            moved.add_column(column)
        for item in summary["moved"]:
            moved.add_row(
                item["sample_id"],
                fmt(item["old"], "abstain"),
                fmt(item["new"], "abstain"),
                "; ".join(item["rules"]),
            )
        tables.append(moved)
    turns = summary.get("turns") or {}
    if turns.get("rollouts"):
        # A rollout's test runs graded again: the feedback each turn read, made anew.
        runs = Table(
            title=(
                f"turn by turn: {turns['rollouts']} rollout(s), {turns['runs']} test run(s), "
                f"{turns['same']} with the feedback they read then"
            ),
            title_justify="left",
        )
        for column in ("sample", "turn", "feedback then", "feedback now"):
            runs.add_column(column, overflow="fold")
        for item in turns["differ"]:
            runs.add_row(
                item["sample_id"],
                str(item["turn"]),
                _first_line(item["logged"]),
                _first_line(item["replayed"]),
            )
        tables.append(runs)
    tables.append(agreement_table(summary["agreement"]))
    return tables


def _first_line(text: str | None) -> str:
    return "—" if not text else text.splitlines()[0][:120]


def agreement_table(change: dict[str, Any]) -> Table:
    """Lay out agreement before and after an edit, with the counts behind each figure."""
    table = Table(
        title=f"agreement with reviewers on {change['labelled']} labelled replayed item(s)",
        title_justify="left",
    )
    for column in ("figure", "n", "before", "after"):
        table.add_column(column, justify="left" if column == "figure" else "right")
    for name, m in change["verdict_matches"].items():
        table.add_row(
            f"{name}: grader pass/fail = reviewer", str(m["n"]), str(m["before"]), str(m["after"])
        )

    def stat(entry: dict[str, Any]) -> str:
        return f"{entry['value']:.3f}" if entry["status"] == "ok" else entry["status"]

    before, after = change["before"], change["after"]
    for name in sorted(set(before["components"]) | set(after["components"])):
        for statistic in ("cohen_kappa", "gwet_ac1"):
            b = before["components"].get(name, {}).get(statistic)
            a = after["components"].get(name, {}).get(statistic)
            if b is None or a is None:
                continue
            table.add_row(f"{name} {statistic}", str(b["n"]), stat(b), stat(a))
    for statistic in ("mae", "spearman", "quadratic_weighted_kappa"):
        b, a = before["overall"][statistic], after["overall"][statistic]
        table.add_row(f"overall {statistic}", str(b["n"]), stat(b), stat(a))
    return table
