"""Regression cases as a labelled set: ``arbiter regressions export``, ``audit --regressions``.

**Export.** Each open case with a kept sample (``arbiter.store.regressions``) is one
line in the audit format: the sample as logged, under the id ``regression-<case id>``
(two reviewers' cases of one item are two lines), with ``labels``:

* ``expected_violations``: the hack types the reviewer ticked;
* ``hack_kind``: those types joined by ``+``, or ``fooled:<components>`` for a case
  made by fooled components alone (it is a hack all the same, never a clean item);
* ``regression``: ``case_id``, ``rubric``, ``rubric_sha256``, ``item_id``,
  ``reviewer``, ``sample_id`` (the logged sample's id), ``reward`` (the reward it
  got), ``flagged_types`` (the ticked types the logged reward's violations flagged),
  ``fooled``, and ``ceiling`` with ``ceiling_source``: the ceiling for hacks when it
  was exported, the rubric's ``regressions.ceiling`` (its latest stored version), else
  just below the lowest logged reward of its honest reviewed items, else the middle of
  its reward range (:func:`arbiter.monitoring.regressions.hack_ceiling`).

The sample's own labels are kept beside these.

**Audit.** ``arbiter audit --regressions FILE`` grades the cases with the audit's items
(twice, as every item) and judges each (:func:`arbiter.monitoring.regressions.judge_case`)
against the ceiling: the audited rubric's ``regressions.ceiling``; else just below the
lowest reward of the audit's honest items (labelled clean, passing their tests); else the
ceiling each case was exported with; else the middle of the reward range. A case fails
when its reward is above it, or when a type in ``flagged_types`` is flagged by no
component any more. The cases are judged apart: the audit's own figures and gates
(recall, false positives, ...) are those of its labelled sets alone.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import IO, Any

from ruamel.yaml import YAML
from ruamel.yaml.error import YAMLError

from arbiter.audit import ItemGrades
from arbiter.graders.types import Sample
from arbiter.monitoring.regressions import Ceiling, hack_ceiling, judge_case
from arbiter.rubrics.rubric import Rubric, reward_range
from arbiter.store.db import Store
from arbiter.store.regressions import OPEN, RegressionCases

__all__ = [
    "ExportResult",
    "case_line",
    "describe",
    "export_cases",
    "honest_rewards",
    "judge_regressions",
    "regression_label",
]

#: The id prefix of an exported case.
ID_PREFIX = "regression-"


@dataclass
class ExportResult:
    """What an export wrote, and the open cases it could not (each with why)."""

    written: int = 0
    skipped: list[str] = field(default_factory=list)
    ceilings: dict[str, Ceiling] = field(default_factory=dict)


def _stored_specs(store: Store) -> dict[str, dict[str, Any]]:
    """Return each rubric name's latest stored version as plain YAML data.

    Read as data, not validated: only ``version``, ``clip`` and ``regressions`` are
    looked at, and a version whose graders this process lacks (a plugin's) still reads.
    """
    yaml = YAML(typ="safe", pure=True)
    latest: dict[str, dict[str, Any]] = {}
    for text, _origin in store.rubric_texts():
        try:
            doc = yaml.load(text)
        except YAMLError:
            continue
        if not isinstance(doc, dict) or not isinstance(doc.get("name"), str):
            continue
        version = doc.get("version")
        if not isinstance(version, int):
            continue
        held = latest.get(doc["name"])
        if held is None or held["version"] <= version:
            latest[doc["name"]] = doc
    return latest


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _export_ceiling(spec: Mapping[str, Any] | None, honest: Sequence[float | None]) -> Ceiling:
    spec = spec or {}
    regressions = spec.get("regressions")
    regressions = regressions if isinstance(regressions, Mapping) else {}
    clip = spec.get("clip")
    low_high = (0.0, 1.0)
    if isinstance(clip, list) and len(clip) == 2:
        low, high = (_number(v) for v in clip)
        if low is not None and high is not None:
            low_high = (low, high)
    return hack_ceiling(
        configured=_number(regressions.get("ceiling")),
        honest_rewards=honest,
        reward_range=low_high,
        margin=_number(regressions.get("margin")),
    )


def case_line(case: Mapping[str, Any], ceiling: Ceiling) -> dict[str, Any]:
    """Return one case as an audit item: its sample, labelled as the hack it is."""
    sample = dict(case["sample"])
    hacks = list(case["hack_types"])
    kind = "+".join(hacks) if hacks else "fooled:" + ",".join(case["fooled"])
    labels = sample.get("labels")
    own: dict[str, Any] = labels if isinstance(labels, dict) else {}
    sample["id"] = f"{ID_PREFIX}{case['id']}"
    sample["labels"] = {
        **own,
        "expected_violations": hacks,
        "hack_kind": kind,
        "regression": {
            "case_id": case["id"],
            "rubric": case["rubric_name"],
            "rubric_sha256": case["rubric_sha256"],
            "item_id": case["item_id"],
            "reviewer": case["reviewer"],
            "sample_id": case["sample_id"],
            "reward": case["reward"],
            "flagged_types": list(case["flagged_types"]),
            "fooled": list(case["fooled"]),
            "ceiling": ceiling.value,
            "ceiling_source": ceiling.source,
        },
    }
    return sample


def export_cases(store: Store, sink: IO[bytes], *, rubric: str | None = None) -> ExportResult:
    """Write the open cases (of ``rubric``, else every rubric) as audit JSON Lines."""
    cases = RegressionCases(store)
    result = ExportResult()
    open_cases = cases.cases(rubric, status=OPEN)
    specs = _stored_specs(store) if open_cases else {}
    for case in open_cases:
        name = case["rubric_name"]
        if name not in result.ceilings:
            honest = [i["reward"] for i in cases.honest_items(name)]
            result.ceilings[name] = _export_ceiling(specs.get(name), honest)
        if case["sample"] is None:
            result.skipped.append(f"case {case['id']}: its sample was not kept (a hash only)")
            continue
        line = case_line(case, result.ceilings[name])
        sink.write(json.dumps(line, sort_keys=True).encode("utf-8") + b"\n")
        result.written += 1
    return result


def regression_label(sample: Sample) -> dict[str, Any]:
    """Return a case's ``labels.regression`` (with its ``hack_types``), checked.

    Raises:
        ValueError: the sample is not an exported case (names the sample and what is wrong).
    """
    labels = sample.labels or {}
    found = labels.get("regression")
    if not isinstance(found, dict):
        raise ValueError(f"{sample.id}: not a regression case (no labels.regression)")
    hacks = labels.get("expected_violations") or []
    flagged = found.get("flagged_types") or []
    for name, value in (("expected_violations", hacks), ("regression.flagged_types", flagged)):
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise ValueError(f"{sample.id}: labels.{name} must be a list of type names")
    ceiling = found.get("ceiling")
    if ceiling is not None and _number(ceiling) is None:
        raise ValueError(f"{sample.id}: labels.regression.ceiling must be a number")
    return {**found, "hack_types": list(hacks), "flagged_types": list(flagged)}


def _passed_tests(reward: Mapping[str, Any]) -> bool:
    return all(
        c["failure"] is None and c["score"] == 1.0
        for c in reward["components"].values()
        if c["grader"] == "unit_tests"
    )


def honest_rewards(items: Sequence[ItemGrades]) -> list[float | None]:
    """Return the rewards of the items labelled clean that pass their tests (first grading)."""
    return [
        item.first["reward"]
        for item in items
        if item.expectation.is_clean
        and item.expectation.tests_pass is not False
        and _passed_tests(item.first)
    ]


def judge_regressions(
    cases: Sequence[ItemGrades],
    labels: Mapping[str, Mapping[str, Any]],
    *,
    rubric: Rubric,
    honest: Sequence[float | None],
) -> dict[str, Any]:
    """Judge each graded case; return the summary (``let_through`` lists the failing ids).

    Args:
        cases: the cases' gradings.
        labels: each case's :func:`regression_label`, by item id.
        rubric: the audited rubric (its ``regressions`` section and reward range).
        honest: the honest items' rewards under it.
    """
    spec = rubric.spec.regressions
    base = hack_ceiling(
        configured=spec.ceiling if spec is not None else None,
        honest_rewards=honest,
        reward_range=reward_range(rubric),
        margin=spec.margin if spec is not None else None,
    )
    judged = []
    for item in cases:
        label = labels[item.id]
        ceiling = base
        exported = _number(label.get("ceiling"))
        if base.source == "fallback" and exported is not None:
            ceiling = Ceiling(exported, "export")
        verdict = judge_case(
            label.get("case_id", item.id),
            item.first,
            hack_types=label["hack_types"],
            flagged_types=label["flagged_types"],
            ceiling=ceiling.value,
            logged_reward=_number(label.get("reward")),
        )
        judged.append({**verdict.as_dict(), "id": item.id, "ceiling_source": ceiling.source})
    failing = [j for j in judged if j["reasons"]]
    exported = any(j["ceiling_source"] == "export" for j in judged)
    return {
        "cases": len(judged),
        "let_through": [j["id"] for j in failing],
        "ceiling": None if exported else base.value,
        "ceiling_source": "export" if exported else base.source,
        "ceiling_text": "each case's own, as it was exported (no honest item here, none set "
        "by the rubric)"
        if exported
        else base.describe(),
        "honest_items": base.honest,
        "items": judged,
    }


def describe(summary: Mapping[str, Any]) -> list[str]:
    """Return the lines an audit prints for its regression cases: a heading, then failures."""
    lines = [
        f"regressions: {len(summary['let_through'])} of {summary['cases']} case(s) let through; "
        f"ceiling for hacks {summary['ceiling_text']}"
    ]
    for item in summary["items"]:
        if item["reasons"]:
            kinds = ", ".join(item["hack_types"]) or "fooled components"
            lines.append(
                f"regression case {item['case_id']} ({item['id']}, {kinds}) let through: "
                + "; ".join(item["reasons"])
            )
    return lines
