"""Run an audit: grade every item twice, resumably, then summarise and write the reports."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import orjson

from arbiter.audit import ItemGrades, expectation_of
from arbiter.graders.registry import GraderRegistry
from arbiter.graders.types import Sample
from arbiter.rubrics.rubric import Rubric
from arbiter.rubrics.score import score_samples

__all__ = ["grade_items"]

ITEMS_FILE = "items.jsonl"


def _load_done(path: Path, sha256: str) -> dict[str, dict[str, Any]]:
    """Read the rows a previous run of the same rubric finished (others are ignored)."""
    done: dict[str, dict[str, Any]] = {}
    if not path.is_file():
        return done
    with path.open("rb") as f:
        for line in f:
            try:
                row = orjson.loads(line)
            except orjson.JSONDecodeError:
                break  # a torn last line from an interrupted run: re-grade from here
            if row.get("rubric_sha256") == sha256:
                done[row["id"]] = row
    return done


async def grade_items(
    rubric: Rubric,
    samples: Sequence[Sample],
    registry: GraderRegistry,
    *,
    report_dir: Path | None,
    resume: bool,
    chunk: int = 64,
    advance: Callable[[int], None] = lambda _n: None,
) -> list[ItemGrades]:
    """Grade each sample twice under ``rubric``; with ``resume``, reuse finished rows.

    Rows are appended to ``report_dir/items.jsonl`` as they finish, so an
    interrupted audit of a large set continues where it stopped.
    """
    expectations = {s.id: expectation_of(s) for s in samples}
    items_path = report_dir / ITEMS_FILE if report_dir else None
    done = _load_done(items_path, rubric.sha256) if (items_path and resume) else {}
    sink = None
    if items_path is not None:
        items_path.parent.mkdir(parents=True, exist_ok=True)
        if not resume and items_path.exists():
            items_path.unlink()
        sink = items_path.open("ab")
    results: dict[str, ItemGrades] = {}
    # Warm before the first job: no item's deadline pays for a worker's start.
    await registry.warm(c.grader for r in rubric.route_rubrics() for c in r.components.values())
    try:
        for sample in samples:
            row = done.get(sample.id)
            if row is not None:
                results[sample.id] = ItemGrades(
                    sample.id, expectations[sample.id], row["first"], row["second"]
                )
        advance(len(results))
        todo = [s for s in samples if s.id not in results]
        for start in range(0, len(todo), chunk):
            part = todo[start : start + chunk]
            first = await score_samples(rubric, part, registry=registry, normalize=False)
            second = await score_samples(rubric, part, registry=registry, normalize=False)
            for sample, a, b in zip(part, first, second, strict=True):
                item = ItemGrades(
                    sample.id,
                    expectations[sample.id],
                    a.model_dump(mode="json"),
                    b.model_dump(mode="json"),
                )
                results[sample.id] = item
                if sink is not None:
                    sink.write(
                        orjson.dumps(
                            {
                                "id": sample.id,
                                "rubric_sha256": rubric.sha256,
                                "first": item.first,
                                "second": item.second,
                            }
                        )
                        + b"\n"
                    )
            if sink is not None:
                sink.flush()
            advance(len(part))
    finally:
        if sink is not None:
            sink.close()
    return [results[s.id] for s in samples]


def write_reports(report_dir: Path, summary: dict[str, Any], page: str) -> None:
    """Write ``summary.json`` and ``report.html`` beside the item rows."""
    report_dir.mkdir(parents=True, exist_ok=True)
    (report_dir / "summary.json").write_text(json.dumps(summary, indent=2, sort_keys=True) + "\n")
    (report_dir / "report.html").write_text(page, encoding="utf-8")
