"""Replay: re-score logged rewards under another rubric, read-only, and report the difference.

Each logged request is re-scored as one batch, so group normalization sees the
same groups it saw the first time. Samples logged as hashes only (the store's
``hash`` setting) cannot be replayed and are counted as skipped.

A rollout logged with its trajectory is replayed turn by turn as well
(:func:`replay_turns`): each test run it made (a ``run_tests`` call with its
code) is graded again under the rubric's tests, and the feedback it gets now is
set beside the feedback the policy read then, so a replay shows how each turn's
feedback was made, and whether it still would be.

Every moved item names the rules that moved it (:func:`explain_move`): a
component whose score or weight changed, a gate that began or stopped applying,
a penalty added, removed or resized, an abstention. Where reviewers labelled
replayed items, :func:`agreement_change` compares grader-vs-human agreement
before and after the edit, on the same labelled items.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Callable, Sequence
from itertools import groupby
from typing import Any

import orjson
from scipy.stats import spearmanr  # type: ignore[import-untyped]

from arbiter.graders.registry import GraderRegistry
from arbiter.graders.types import Sample, TaskSpec
from arbiter.monitoring.agreement import MIN_LABELS, agreement_report, labelled_pair, pass_threshold
from arbiter.rubrics.rubric import Rubric
from arbiter.rubrics.score import score_samples

__all__ = ["agreement_change", "explain_move", "replay", "replay_turns", "summarize_replay"]

EPSILON = 1e-12


async def replay(
    rows: Sequence[dict[str, Any]],
    rubric: Rubric,
    registry: GraderRegistry,
    *,
    advance: Callable[[int], None] = lambda _n: None,
) -> tuple[list[dict[str, Any]], Counter[str]]:
    """Re-score logged rows; return (old record, new record) pairs and skip reasons."""
    pairs: list[dict[str, Any]] = []
    skipped: Counter[str] = Counter()
    ordered = sorted(rows, key=lambda r: (r["request_id"], r["position"]))
    for _, group in groupby(ordered, key=lambda r: r["request_id"]):
        batch = list(group)
        samples: list[Sample] = []
        olds: list[dict[str, Any]] = []
        for row in batch:
            if row["sample"] is None:
                skipped["sample not stored (hash-only log)"] += 1
                continue
            samples.append(Sample.model_validate_json(row["sample"]))
            olds.append(orjson.loads(row["record"]))
        if samples:
            news = await score_samples(rubric, samples, registry=registry)
            kept = [row for row in batch if row["sample"] is not None]
            for row, sample, old, new in zip(kept, samples, olds, news, strict=True):
                pair = {"reward_id": row["id"], "old": old, "new": new.model_dump(mode="json")}
                turns = await replay_turns(sample, rubric, registry)
                if turns:
                    pair["turns"] = turns
                pairs.append(pair)
        advance(len(batch))
    return pairs, skipped


#: The tools whose calls are test runs of the code in their ``code`` argument.
TEST_TOOLS = frozenset({"run_tests", "pytest", "test"})


async def replay_turns(
    sample: Sample, rubric: Rubric, registry: GraderRegistry
) -> list[dict[str, Any]]:
    """Grade each test run of a logged rollout again; set its feedback beside the logged one.

    A test run is an assistant's call of a tool in :data:`TEST_TOOLS` whose
    arguments carry ``code``; the tool's result is the feedback the policy read.
    Each run's code is graded under the rubric's first ``unit_tests`` component
    (the route's, for a routed sample), against the sample's task. Returns one
    entry per run: its turn, the call's id, both summaries and whether they agree.
    """
    if not sample.trajectory or not isinstance(sample.task, TaskSpec):
        return []
    _, chosen = rubric.route_for(sample)
    component = next((c for c in chosen.components.values() if c.grader == "unit_tests"), None)
    if component is None:
        return []
    results: dict[str, str] = {}
    for message in sample.trajectory:
        if message.role == "tool" and message.tool_call_id and isinstance(message.content, str):
            results.setdefault(message.tool_call_id, message.content)
    grader = registry.instance("unit_tests")
    fence = "python" if sample.task.language == "python" else sample.task.language
    turns: list[dict[str, Any]] = []
    for message in sample.trajectory:
        calls = message.tool_calls if message.role == "assistant" and message.tool_calls else []
        for call in calls:
            code = _code_of(call.function.get("name"), call.function.get("arguments"))
            if code is None:
                continue
            attempt = sample.model_copy(
                update={
                    "id": f"{sample.id}#{len(turns) + 1}",
                    "response": code if "```" in code else f"```{fence}\n{code}\n```",
                    "trajectory": None,
                }
            )
            result = await grader.grade(attempt, component.config)
            given = result.details.get("feedback") if isinstance(result.details, dict) else None
            now = given.get("summary") if isinstance(given, dict) else None
            logged = results.get(call.id or "")
            turns.append(
                {
                    "turn": len(turns) + 1,
                    "call": call.id,
                    "score": result.score,
                    "logged": logged,
                    "replayed": now,
                    "same": logged is not None and logged == now,
                }
            )
    return turns


def _code_of(name: Any, arguments: Any) -> str | None:
    """The code a test run's call carries, or None when the call is no such run."""
    if name not in TEST_TOOLS or not isinstance(arguments, str) or not arguments:
        return None
    try:
        parsed = json.loads(arguments)
    except ValueError:
        return None
    code = parsed.get("code") if isinstance(parsed, dict) else None
    return code if isinstance(code, str) and code.strip() else None


def _rule_kind(rule: str) -> str:
    words = rule.split(" ")
    if words[0] == "component" and len(words) > 2:
        return " ".join(words[:3])  # component NAME score|weight|added|removed
    if words[0] == "gate":
        return rule.rsplit(" (", 1)[0] + (
            " now applies" if rule.endswith("now applies") else " no longer applies"
        )
    if words[0] == "penalty":
        return " ".join(words[:2])
    return rule.split(":", 1)[0]


def _differs(old: float | None, new: float | None) -> bool:
    if old is None or new is None:
        return (old is None) != (new is None)
    return abs(new - old) > EPSILON


def _delta(old: float | None, new: float | None) -> float | None:
    if old is None or new is None:
        return None
    return new - old


def _num(value: float | None) -> str:
    return "none" if value is None else f"{value:.4g}"


def _gate(gate: dict[str, Any]) -> str:
    bounds = [f"{k} {_num(gate[k])}" for k in ("cap", "floor") if gate.get(k) is not None]
    return f"gate {gate['when']!r} ({', '.join(bounds)})"


def explain_move(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    """Name the rules that moved one reward, as a rubric author reads them (pure).

    Compares two reward records (as logged and as re-scored): abstention, each
    component's score and weight, the gates that applied, the penalties applied.
    When none of those differ but the reward did, the combine formula, the clip or
    the group normalization moved it, and that is what is said.
    """
    rules: list[str] = []
    if (old["reward"] is None) != (new["reward"] is None):
        if new["reward"] is None:
            rules.append(f"abstains now: {new.get('abstain_reason') or 'no reason recorded'}")
        else:
            rules.append(f"no longer abstains (was: {old.get('abstain_reason') or 'unknown'})")
    before, after = old.get("components", {}), new.get("components", {})
    for name in sorted(set(before) | set(after)):
        if name not in after:
            rules.append(f"component {name} removed")
            continue
        if name not in before:
            rules.append(f"component {name} added (score {_num(after[name].get('score'))})")
            continue
        a, b = before[name], after[name]
        if _differs(a.get("score"), b.get("score")):
            rules.append(f"component {name} score {_num(a.get('score'))} -> {_num(b.get('score'))}")
        # A new weight on a zero score moves nothing: name it only where it did.
        if abs(float(a.get("weight", 0.0)) - float(b.get("weight", 0.0))) > EPSILON and (
            a.get("score") or b.get("score")
        ):
            rules.append(f"component {name} weight {_num(a['weight'])} -> {_num(b['weight'])}")
    old_gates = {(g["when"], g.get("cap"), g.get("floor")): g for g in old.get("gates", [])}
    new_gates = {(g["when"], g.get("cap"), g.get("floor")): g for g in new.get("gates", [])}
    for key in old_gates.keys() - new_gates.keys():
        rules.append(f"{_gate(old_gates[key])} no longer applies")
    for key in new_gates.keys() - old_gates.keys():
        rules.append(f"{_gate(new_gates[key])} now applies")
    old_pen = {p["violation"]: p for p in old.get("penalties", [])}
    new_pen = {p["violation"]: p for p in new.get("penalties", [])}
    for violation in sorted(old_pen.keys() | new_pen.keys()):
        a_pen, b_pen = old_pen.get(violation), new_pen.get(violation)
        if b_pen is None:
            rules.append(f"penalty {violation} ({_num(a_pen and a_pen['penalty'])}) removed")
        elif a_pen is None:
            rules.append(f"penalty {violation} ({_num(b_pen['penalty'])}) now applies")
        elif abs(a_pen["penalty"] - b_pen["penalty"]) > EPSILON:
            rules.append(
                f"penalty {violation} {_num(a_pen['penalty'])} -> {_num(b_pen['penalty'])}"
            )
    if not rules and _differs(old["reward"], new["reward"]):
        if not _differs(old.get("raw_reward"), new.get("raw_reward")):
            rules.append("group normalization (the raw reward is unchanged)")
        else:
            rules.append("combine formula or clip (no component, weight, gate or penalty differs)")
    return rules


def agreement_change(
    pairs: Sequence[dict[str, Any]],
    labels: Sequence[dict[str, Any]],
    *,
    old_range: Callable[[str], tuple[float, float]],
    new_range: tuple[float, float],
    min_labels: int = MIN_LABELS,
    n_resamples: int = 1000,
) -> dict[str, Any]:
    """Compare grader-vs-human agreement before and after the edit, on the labelled items.

    Args:
        pairs: what :func:`replay` returned (each with its ``reward_id``).
        labels: review labels (``arbiter.store.review.ReviewQueue.labels``); only those of a
            replayed reward count.
        old_range: the logged rubric's reward range, by its sha256
            (:func:`arbiter.rubrics.rubric.reward_range`).
        new_range: the new rubric's reward range.
        min_labels: below this many labels a statistic is "insufficient data".
        n_resamples: bootstrap resamples per statistic.

    Returns:
        ``labelled`` (how many replayed items have a label), ``before`` and ``after``
        (two agreement reports), and ``verdict_matches``: per component, how many
        reviewer verdicts the grader's pass/fail matched before and after.
    """
    by_reward = {pair["reward_id"]: pair for pair in pairs}
    before, after = [], []
    matches: dict[str, dict[str, int]] = {}
    for label in labels:
        pair = by_reward.get(label["reward_id"])
        if pair is None:
            continue
        common = {
            "inclusion_probability": label["inclusion_probability"],
            "verdicts": label["verdicts"],
            "overall_score": label["overall_score"],
            "hack_types": label["hack_types"],
        }
        old_sha = pair["old"].get("rubric", {}).get("sha256", "")
        before.append(labelled_pair(pair["old"], reward_range=old_range(old_sha), **common))
        after.append(labelled_pair(pair["new"], reward_range=new_range, **common))
        for name, verdict in label["verdicts"].items():
            counts = matches.setdefault(name, {"n": 0, "before": 0, "after": 0})
            counts["n"] += 1
            for side, record in (("before", pair["old"]), ("after", pair["new"])):
                outcome = record.get("components", {}).get(name, {})
                score = outcome.get("score")
                # The grader kind's threshold, as the agreement statistics read it.
                passed = score is not None and score >= pass_threshold(outcome.get("grader"))
                if score is not None and passed == (verdict == "pass"):
                    counts[side] += 1
    return {
        "labelled": len(before),
        "before": agreement_report(before, min_labels=min_labels, n_resamples=n_resamples),
        "after": agreement_report(after, min_labels=min_labels, n_resamples=n_resamples),
        "verdict_matches": dict(sorted(matches.items())),
    }


def summarize_replay(
    pairs: Sequence[dict[str, Any]], skipped: Counter[str], *, top: int = 25
) -> dict[str, Any]:
    """Count what changed, by how much, per component, with the rank correlation (pure)."""
    changed = 0
    deltas: list[float] = []
    moved: list[dict[str, Any]] = []
    abstention_changes = 0
    components: dict[str, dict[str, Any]] = {}
    olds: list[float] = []
    news: list[float] = []
    for pair in pairs:
        old, new = pair["old"], pair["new"]
        a, b = old["reward"], new["reward"]
        if (a is None) != (b is None):
            abstention_changes += 1
            changed += 1
            moved.append(
                {
                    "sample_id": old["id"],
                    "old": a,
                    "new": b,
                    "delta": None,
                    "rules": explain_move(old, new),
                }
            )
        elif a is not None and b is not None:
            d = b - a
            deltas.append(d)
            olds.append(a)
            news.append(b)
            if abs(d) > EPSILON:
                changed += 1
                moved.append(
                    {
                        "sample_id": old["id"],
                        "old": a,
                        "new": b,
                        "delta": d,
                        "rules": explain_move(old, new),
                    }
                )
        for name in set(old["components"]) | set(new["components"]):
            stats = components.setdefault(name, {"changed": 0, "deltas": []})
            before = old["components"].get(name, {}).get("score")
            after = new["components"].get(name, {}).get("score")
            delta = _delta(before, after)
            if (before is None) != (after is None) or (delta is not None and abs(delta) > EPSILON):
                stats["changed"] += 1
            if delta is not None:
                stats["deltas"].append(abs(delta))
    moved.sort(key=lambda m: -abs(m["delta"]) if m["delta"] is not None else -math.inf)
    by_rule: Counter[str] = Counter()
    for item in moved:
        # Count each rule by its kind and subject ("component tests weight"), not by
        # the per-item numbers, so the table says which edits moved how many items.
        by_rule.update({_rule_kind(rule) for rule in item["rules"]})
    rho: float | None = None
    if len(olds) >= 2:
        result = spearmanr(olds, news)
        rho = float(result.statistic)
    return {
        "replayed": len(pairs),
        "skipped": sum(skipped.values()),
        "skipped_reasons": ", ".join(f"{k}: {v}" for k, v in skipped.items()),
        "changed": changed,
        "abstention_changes": abstention_changes,
        "mean_abs_delta": sum(abs(d) for d in deltas) / len(deltas) if deltas else 0.0,
        "max_abs_delta": max((abs(d) for d in deltas), default=0.0),
        "spearman": rho,
        "components": {
            name: {
                "changed": s["changed"],
                "mean_abs_delta": sum(s["deltas"]) / len(s["deltas"]) if s["deltas"] else 0.0,
            }
            for name, s in sorted(components.items())
        },
        "moved_by_rule": dict(by_rule.most_common()),
        "moved": moved[:top],
        "all_deltas": deltas,
        "turns": _turns_summary(pairs, top),
    }


def _turns_summary(pairs: Sequence[dict[str, Any]], top: int) -> dict[str, Any]:
    """Count the rollouts replayed turn by turn, their test runs, and those whose feedback moved."""
    rollouts = [p for p in pairs if p.get("turns")]
    turns = [(p["old"]["id"], t) for p in rollouts for t in p["turns"]]
    differ = [
        {"sample_id": sid, **{k: t[k] for k in ("turn", "logged", "replayed")}}
        for sid, t in turns
        if not t["same"]
    ]
    return {
        "rollouts": len(rollouts),
        "runs": len(turns),
        "same": len(turns) - len(differ),
        "differ": differ[:top],
    }
