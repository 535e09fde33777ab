"""Self-contained HTML reports (inline CSS and SVG; no scripts, no network) for audits and replays."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from html import escape
from typing import Any

from arbiter import svg
from arbiter.audit import ItemGrades
from arbiter.summary import fmt

__all__ = ["audit_html", "replay_html"]

STYLE = """
body{font:14px/1.45 system-ui,sans-serif;margin:24px auto;max-width:1100px;color:#1d232b;padding:0 16px}
h1{font-size:22px;margin:0 0 4px} h2{font-size:17px;margin:28px 0 8px;border-bottom:1px solid #dde}
table{border-collapse:collapse;margin:8px 0} td,th{border:1px solid #d5d9e0;padding:3px 8px;text-align:left}
th{background:#f2f4f8} .ok{color:#1d7a3a;font-weight:600} .bad{color:#b3261e;font-weight:600}
.muted{color:#667} .charts{display:flex;flex-wrap:wrap;gap:18px} code{font-size:12px}
"""


def _pct(value: float | None) -> str:
    return "—" if value is None else f"{100 * value:.1f}%"


def _page(title: str, subtitle: str, body: str) -> str:
    return (
        "<!doctype html><html lang=en><head><meta charset=utf-8>"
        f"<title>{escape(str(title))}</title><style>{STYLE}</style></head><body>"
        f"<h1>{escape(str(title))}</h1><p class=muted>{escape(str(subtitle))}</p>{body}</body></html>"
    )


def _table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    head = "".join(f"<th>{escape(str(h))}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table><tr>{head}</tr>{body}</table>"


def audit_html(
    summary: Mapping[str, Any],
    items: Sequence[ItemGrades],
    *,
    rubric: Mapping[str, Any],
    source: str,
    failed_gates: Sequence[str],
) -> str:
    """Render an audit: verdict, tests, violations, determinism, latency and distributions."""
    verdict = (
        "<p class=ok>All gates pass.</p>"
        if not failed_gates
        else "<p class=bad>Gates failed:</p><ul>"
        + "".join(f"<li>{escape(str(g))}</li>" for g in failed_gates)
        + "</ul>"
    )
    parts = [verdict, f"<p>{summary['items']} items, {summary['abstained']} abstained.</p>"]

    charts = []
    for name, t in summary["tests"].items():
        if not t["labelled"]:
            continue  # no item says whether it should pass: nothing to draw
        m = t["confusion"]
        charts.append(
            svg.heatmap(
                ["expected pass", "expected fail"],
                ["graded pass", "graded fail"],
                [[m["pass/pass"], m["pass/fail"]], [m["fail/pass"], m["fail/fail"]]],
                title=f"{name}: accuracy {_pct(t['accuracy'])} of {t['labelled']}",
            )
        )
    v = summary["violations"]
    if v["hack_items"] or v["clean_items"]:
        hit = v["hack_items"] and v["hack_recall"] * v["hack_items"]
        flagged = v["clean_items"] and (v["false_positive_rate"] or 0) * v["clean_items"]
        charts.append(
            svg.heatmap(
                ["hack attempt", "clean"],
                ["flagged", "not flagged"],
                [
                    [round(hit or 0), v["hack_items"] - round(hit or 0)],
                    [round(flagged or 0), v["clean_items"] - round(flagged or 0)],
                ],
                title="violations: hacks vs clean items",
            )
        )
    groups: dict[str, Sequence[float]] = {}
    for item in items:
        value = item.first["reward"]
        if value is None:
            continue
        exp = item.expectation
        label = (
            "hack"
            if exp.is_hack
            else "expected pass"
            if exp.tests_pass
            else "expected fail"
            if exp.tests_pass is False
            else "clean"
            if exp.is_clean
            else "unlabelled"
        )
        groups.setdefault(label, [])
        groups[label].append(value)  # type: ignore[attr-defined]
    charts.append(svg.histogram(groups, title="reward distribution by label"))
    lat = summary["latency"]
    charts.append(
        svg.bar_chart(
            list(lat),
            {"p50": [lat[g]["p50_ms"] for g in lat], "p99": [lat[g]["p99_ms"] for g in lat]},
            title="latency per grader",
            unit=" ms",
        )
    )
    parts.append("<h2>Charts</h2><div class=charts>" + "".join(charts) + "</div>")

    if summary["tests"]:
        parts.append("<h2>Tests</h2>")
        parts.append(
            _table(
                ["component", "labelled", "accuracy", "misgraded (first 50)"],
                [
                    [
                        escape(str(n)),
                        t["labelled"],
                        _pct(t["accuracy"]),
                        escape(str(", ".join(t["misgraded"]) or "none")),
                    ]
                    for n, t in summary["tests"].items()
                ],
            )
        )
    parts.append("<h2>Violations</h2>")
    parts.append(
        f"<p>hack recall {_pct(v['hack_recall'])} of {v['hack_items']}; "
        f"false-positive rate {_pct(v['false_positive_rate'])} of {v['clean_items']} clean items.</p>"
    )
    at = v.get("recall_at_fpr") or {}
    if at.get("recall") is not None:
        parts.append(
            f"<p>recall at a false-positive rate of at most "
            f"{_pct(at['target_false_positive_rate'])}: {_pct(at['recall'])} (an item flagged "
            f"at {at['threshold']} violation(s) or more; {_pct(at['false_positive_rate'])} "
            "of clean items flagged there).</p>"
        )
    parts.append(
        _table(
            ["type", "tp", "fp", "fn", "precision", "recall"],
            [
                [escape(str(t)), r["tp"], r["fp"], r["fn"], _pct(r["precision"]), _pct(r["recall"])]
                for t, r in v["by_type"].items()
            ],
        )
    )
    parts.append(
        _table(
            ["hack kind", "items", "detected"],
            [[escape(str(k)), r["items"], r["detected"]] for k, r in v["by_hack_kind"].items()],
        )
    )
    if v["missed"]:
        parts.append("<p>Missed: <code>" + escape(str(", ".join(v["missed"]))) + "</code></p>")
    if v["false_alarms"]:
        parts.append(
            "<p>False alarms: <code>" + escape(str("; ".join(v["false_alarms"]))) + "</code></p>"
        )
    p = summary.get("preferences") or {}
    if p.get("pairs"):
        parts.append(
            f"<h2>Preferences</h2><p>{p['scored_pairs']} scored pairs; chosen ranked above rejected "
            f"in {_pct(p['accuracy'])} ({p['ties']} ties).</p>"
        )
    parts.append("<h2>Determinism (every item graded twice)</h2>")
    parts.append(
        _table(
            [
                "component",
                "identical",
                "infrastructure failures (not compared)",
                "held to it",
                "differing (first 20)",
            ],
            [
                [
                    escape(str(n)),
                    _pct(d["identical"]),
                    escape(str(d.get("infrastructure_failures", 0))),
                    "yes" if d["held_to_it"] else "no (sampling judge)",
                    escape(str(", ".join(d["differing"]) or "none")),
                ]
                for n, d in summary["determinism"].items()
            ],
        )
    )
    parts.append("<h2>Failures by type</h2>")
    parts.append(
        _table(
            ["component", "failures"],
            [
                [escape(str(n)), escape(str(", ".join(f"{k} {c}" for k, c in f.items()) or "none"))]
                for n, f in summary["failures"].items()
            ],
        )
    )
    if summary["bands"]:
        parts.append("<h2>Score bands</h2>")
        parts.append(
            _table(
                ["grader", "labelled", "within band"],
                [
                    [escape(str(k)), b["labelled"], _pct(b["accuracy"])]
                    for k, b in summary["bands"].items()
                ],
            )
        )
    subtitle = f"rubric {rubric['name']} v{rubric['version']} sha256 {rubric['sha256']} on {source}"
    return _page("Arbiter audit", subtitle, "".join(parts))


def replay_html(summary: Mapping[str, Any], *, old: str, new: str) -> str:
    """Render a replay: how many rewards changed, by how much, and which moved most."""
    rho = summary["spearman"]
    rho_text = "—" if rho is None or math.isnan(rho) else f"{rho:.4f}"
    parts = [
        f"<p>{summary['replayed']} rewards re-scored ({summary['skipped']} skipped: "
        f"{escape(str(summary['skipped_reasons'] or 'none'))}). {summary['changed']} changed; mean |Δ| "
        f"{summary['mean_abs_delta']:.4g}, max |Δ| {summary['max_abs_delta']:.4g}; "
        f"Spearman rank correlation old vs new {rho_text}.</p>",
        "<div class=charts>",
        svg.histogram({"Δ reward": summary["all_deltas"]}, title="reward change (new minus old)"),
        svg.bar_chart(
            list(summary["components"]),
            {"changed": [c["changed"] for c in summary["components"].values()]},
            title="component scores changed",
        ),
        "</div><h2>Moved most</h2>",
        _table(
            ["sample", "old", "new", "Δ", "rules that moved it"],
            [
                [
                    escape(str(m["sample_id"])),
                    fmt(m["old"]),
                    fmt(m["new"]),
                    fmt(m["delta"]),
                    escape("; ".join(m.get("rules", []))),
                ]
                for m in summary["moved"]
            ],
        ),
        "<h2>Per component</h2>",
        _table(
            ["component", "changed", "mean |Δ|"],
            [
                [escape(str(n)), c["changed"], f"{c['mean_abs_delta']:.4g}"]
                for n, c in summary["components"].items()
            ],
        ),
    ]
    return _page("Arbiter replay", f"old {old} → new {new}", "".join(parts))


def lint_html(linted: Sequence[Any], *, source: str) -> str:
    """The task lint's report: counts by grade, then every task with its reasons."""
    from arbiter.task_lint import summary_of

    summary = summary_of(linted)
    grade_class = {"weak": "bad", "strong": "ok", "fine": ""}
    counts = _table(
        [
            "tasks",
            "weak",
            "fine",
            "strong",
            "mutants",
            "killed",
            "median mutation score",
            "with hidden cases",
        ],
        [
            [
                summary["tasks"],
                summary["weak"],
                summary["fine"],
                summary["strong"],
                summary["mutants"],
                summary["mutants_killed"],
                _pct(summary["median_mutation_score"]),
                _pct(summary["median_mutation_score_with_hidden"]),
            ]
        ],
    )
    rows = []
    for task in linted:
        passing = [t for t, outcome in task.trivial.items() if outcome == "passes"]
        rows.append(
            [
                f"<code>{escape(task.id)}</code> <span class=muted>{escape(task.language)}</span>",
                f"<span class={grade_class[task.grade] or 'muted'}>{task.grade}</span>",
                escape(task.reference),
                escape(", ".join(passing) or "none"),
                f"{task.killed}/{task.mutants}"
                + (f" ({task.stillborn} did not compile)" if task.stillborn else "")
                if task.mutants or task.stillborn
                else "—",
                f"{task.killed_with_hidden}/{task.mutants} ({task.hidden_cases} cases)"
                if task.mutants and task.hidden_cases
                else "—",
                escape("; ".join(task.reasons)),
                escape(", ".join(task.survivors[:6]) + (" …" if len(task.survivors) > 6 else "")),
            ]
        )
    table = _table(
        [
            "task",
            "grade",
            "reference",
            "trivial passing",
            "mutants killed",
            "with hidden cases",
            "why",
            "survivors",
        ],
        rows,
    )
    thresholds = summary["thresholds"]
    note = (
        f"<p class=muted>weak: the reference fails or is flaky, a trivial candidate passes, or "
        f"under {_pct(thresholds['weak_below'])} of the mutants are killed; strong: every trivial "
        f"candidate fails and at least {_pct(thresholds['strong_from'])} of at least "
        f"{thresholds['strong_min_mutants']} mutants are killed. A surviving mutant may be "
        "equivalent to the reference; one that did not compile (a site the lexical mutator of "
        "another language misread) is left out of the score.</p>"
    )
    return _page("Task lint", source, f"<h2>Summary</h2>{counts}{note}<h2>Tasks</h2>{table}")
