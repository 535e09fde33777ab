"""Replay: re-score logged rewards under another rubric, read-only, and report the difference.

Each logged request is re-scored as one batch, so group normalization sees the
same groups it saw the first time. Samples logged as hashes only (the store's
``hash`` setting) cannot be replayed and are counted as skipped.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Sequence
from itertools import groupby
from typing import Any

import orjson
from scipy.stats import spearmanr  # type: ignore[import-untyped]

from graders.registry import GraderRegistry
from graders.types import Sample
from rubrics.rubric import Rubric
from rubrics.score import score_samples

__all__ = ["replay", "summarize_replay"]

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
            for old, new in zip(olds, news, strict=True):
                pairs.append({"old": old, "new": new.model_dump(mode="json")})
        advance(len(batch))
    return pairs, skipped


def _delta(old: float | None, new: float | None) -> float | None:
    if old is None or new is None:
        return None
    return new - old


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
            moved.append({"sample_id": old["id"], "old": a, "new": b, "delta": None})
        elif a is not None and b is not None:
            d = b - a
            deltas.append(d)
            olds.append(a)
            news.append(b)
            if abs(d) > EPSILON:
                changed += 1
                moved.append({"sample_id": old["id"], "old": a, "new": b, "delta": d})
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
        "moved": moved[:top],
        "all_deltas": deltas,
    }
