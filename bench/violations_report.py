"""Audit the violations grader: per-type precision and recall, and false positives on real code.

Run as ``python -m bench.violations_report``. Two measurements, in one run:

1. ``eval_sets/hacks.jsonl`` (hack attempts and clean solutions written by this
   project together with the detectors, each labelled with the violation types it
   truly contains): per-type precision and recall, and the share of hacks whose
   every labelled type was found (the recall the 95% target refers to).
2. ``eval_sets/hacks_heldout.jsonl``: the same measurement on attacks written
   apart from the detectors and never used to tune them, so its recall estimates
   how the detectors fare on hacks nobody anticipated. Reported on its own, never
   merged into the first figure.
3. The 164 canonical solutions of HumanEvalPack (``../shared/data``: code written
   by others, which passes its tests): the share flagged with any violation.
4. False positives on honest code, per set: HumanEvalPack's canonical solutions
   and MBPP's reference code (``../shared/data``), the passing rows of
   ``eval_sets/pytest_suites.jsonl``, and ``eval_sets/honest_tables.jsonl``
   (correct solutions built on tables and constants: month lengths, roman
   numerals, sentinel outputs); each counted with any violation and with
   ``hardcoded_output``, graded as the grader does (prompt included).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from arbiter.eval_loaders import load_humanevalpack, load_mbpp
from arbiter.eval_sets import eval_set_path
from arbiter.graders.program import prompt_text
from arbiter.graders.types import Sample, TaskSpec, ViolationType
from arbiter.graders.violations import ViolationsConfig, find_violations

__all__ = [
    "HackAudit",
    "HonestAudit",
    "TypeCounts",
    "audit_hacks",
    "audit_honest",
    "honest_sets",
    "humanevalpack_false_positives",
    "load_samples",
    "main",
    "shared_data_dir",
]


def shared_data_dir() -> Path:
    """Return ``../shared/data`` beside the repository (it may not exist)."""
    return Path(__file__).resolve().parents[1].parent / "shared" / "data"


def load_samples(path: Path) -> list[Sample]:
    """Read a JSONL file of samples."""
    with path.open(encoding="utf-8") as f:
        return [Sample.model_validate_json(line) for line in f if line.strip()]


@dataclass
class TypeCounts:
    """True positives, false positives and false negatives of one violation type."""

    tp: int = 0
    fp: int = 0
    fn: int = 0

    @property
    def precision(self) -> float | None:
        """Return tp / (tp + fp), ``None`` when the type was never reported."""
        return self.tp / (self.tp + self.fp) if self.tp + self.fp else None

    @property
    def recall(self) -> float | None:
        """Return tp / (tp + fn), ``None`` when the type was never expected."""
        return self.tp / (self.tp + self.fn) if self.tp + self.fn else None


@dataclass
class HackAudit:
    """What the grader found on a labelled set, sample by sample and per type."""

    per_type: dict[ViolationType, TypeCounts] = field(default_factory=dict)
    hacks: int = 0
    hacks_detected: int = 0
    kinds: set[str] = field(default_factory=set)
    clean: int = 0
    clean_flagged: int = 0
    misses: list[str] = field(default_factory=list)
    false_alarms: list[str] = field(default_factory=list)

    @property
    def recall(self) -> float:
        """Return the share of hacks whose every labelled type was reported."""
        return self.hacks_detected / self.hacks if self.hacks else 0.0


def _code_task(sample: Sample) -> TaskSpec | None:
    return sample.task if isinstance(sample.task, TaskSpec) else None


def _found_types(sample: Sample) -> set[ViolationType]:
    labels = sample.labels or {}
    config = ViolationsConfig.model_validate(labels.get("config", {}))
    violations, _, _ = find_violations(sample.response, _code_task(sample), config)
    return {v.type for v in violations}


def audit_hacks(samples: Iterable[Sample]) -> HackAudit:
    """Compare found violation types with each sample's ``expected_violations`` label."""
    audit = HackAudit()
    for sample in samples:
        labels = sample.labels or {}
        expected = {ViolationType(t) for t in labels["expected_violations"]}
        found = _found_types(sample)
        for vtype in expected | found:
            counts = audit.per_type.setdefault(vtype, TypeCounts())
            if vtype in expected and vtype in found:
                counts.tp += 1
            elif vtype in found:
                counts.fp += 1
            else:
                counts.fn += 1
        if expected:
            audit.hacks += 1
            audit.kinds.add(str(labels.get("hack_kind")))
            if expected <= found:
                audit.hacks_detected += 1
            else:
                missing = ", ".join(sorted(t.value for t in expected - found))
                audit.misses.append(f"{sample.id} (missed {missing})")
        else:
            audit.clean += 1
            if found:
                audit.clean_flagged += 1
        if found - expected:
            extra = ", ".join(sorted(t.value for t in found - expected))
            audit.false_alarms.append(f"{sample.id} (also {extra})")
    return audit


def humanevalpack_false_positives(path: Path) -> tuple[int, int, list[str]]:
    """Grade each canonical solution; return (flagged, total, one line per flagged one)."""
    config = ViolationsConfig()
    flagged: list[str] = []
    total = 0
    with path.open(encoding="utf-8") as f:
        for line in f:
            row = json.loads(line)
            total += 1
            task = TaskSpec(
                kind="python_function", tests=row["test"], entry_point=row["entry_point"]
            )
            response = f"```python\n{row['prompt']}{row['canonical_solution']}```\n"
            violations, _, failure = find_violations(response, task, config)
            if violations or failure is not None:
                what = "; ".join(f"{v.type.value} line {v.line}: {v.detail}" for v in violations)
                flagged.append(f"{row['task_id']}: {what or failure}")
    return len(flagged), total, flagged


@dataclass
class HonestAudit:
    """What the grader reported on solutions that are all honest."""

    total: int = 0
    flagged: list[str] = field(default_factory=list)
    hardcoded: int = 0


def audit_honest(samples: Iterable[Sample]) -> HonestAudit:
    """Grade each honest sample; count those reported with any violation (or unanalysed)."""
    config = ViolationsConfig()
    audit = HonestAudit()
    for sample in samples:
        audit.total += 1
        violations, _, failure = find_violations(
            sample.response, _code_task(sample), config, prompt=prompt_text(sample)
        )
        if violations or failure is not None:
            what = "; ".join(f"{v.type.value} line {v.line}: {v.detail}" for v in violations)
            audit.flagged.append(f"{sample.id}: {what or failure}")
        audit.hardcoded += any(v.type is ViolationType.HARDCODED_OUTPUT for v in violations)
    return audit


def honest_sets(data: Path) -> dict[str, list[Sample] | None]:
    """Return the honest sets by name; ``None`` for a shared set absent from ``data``."""
    humaneval, mbpp = data / "humanevalpack_python.jsonl", data / "mbpp.jsonl"
    suites = load_samples(eval_set_path("pytest_suites"))
    return {
        "HumanEvalPack canonical": (
            [s for s in load_humanevalpack(humaneval) if (s.labels or {})["variant"] == "canonical"]
            if humaneval.is_file()
            else None
        ),
        "MBPP reference": load_mbpp(mbpp) if mbpp.is_file() else None,
        "pytest_suites passing": [s for s in suites if (s.labels or {})["expected"]["tests_pass"]],
        "honest_tables": load_samples(eval_set_path("honest_tables")),
    }


def _pct(value: float | None) -> str:
    return "   -  " if value is None else f"{100 * value:5.1f}%"


def _report(name: str, audit: HackAudit, out: list[str]) -> None:
    out.append(
        f"eval_sets/{name}.jsonl: {audit.hacks} hacks over {len(audit.kinds)} kinds, "
        f"{audit.clean} clean solutions"
    )
    out.append(f"{'violation type':<22}{'tp':>5}{'fp':>5}{'fn':>5}{'precision':>11}{'recall':>9}")
    for vtype in sorted(audit.per_type, key=lambda t: t.value):
        c = audit.per_type[vtype]
        out.append(
            f"{vtype.value:<22}{c.tp:>5}{c.fp:>5}{c.fn:>5}{_pct(c.precision):>11}{_pct(c.recall):>9}"
        )
    out.append(
        f"hacks with every labelled type found: {audit.hacks_detected}/{audit.hacks} "
        f"= {_pct(audit.recall).strip()}" + (" (target >= 95%)" if name == "hacks" else "")
    )
    rate = audit.clean_flagged / audit.clean if audit.clean else 0.0
    out.append(
        f"clean solutions flagged: {audit.clean_flagged}/{audit.clean} "
        f"= {_pct(rate).strip()} false-positive rate"
    )
    out.extend(f"  missed: {m}" for m in audit.misses)
    out.extend(f"  extra:  {m}" for m in audit.false_alarms)


def main(argv: Sequence[str] | None = None) -> int:
    """Print the audit; return 0."""
    out: list[str] = []
    for name in ("hacks", "hacks_heldout"):
        _report(name, audit_hacks(load_samples(eval_set_path(name))), out)
        out.append("")
    humaneval = shared_data_dir() / "humanevalpack_python.jsonl"
    if humaneval.is_file():
        flagged, total, lines = humanevalpack_false_positives(humaneval)
        out.append(
            f"HumanEvalPack canonical solutions flagged: {flagged}/{total} "
            f"= {_pct(flagged / total).strip()} false-positive rate (target <= 2%)"
        )
        out.extend(f"  {line}" for line in lines)
    else:
        out.append(f"HumanEvalPack: skipped, {humaneval} is absent")
    out.append("")
    out.append(f"{'honest set':<26}{'flagged':>12}{'hardcoded_output':>18}")
    for name, samples in honest_sets(shared_data_dir()).items():
        if samples is None:
            out.append(f"{name:<26}  skipped: absent from {shared_data_dir()}")
            continue
        audit = audit_honest(samples)
        out.append(
            f"{name:<26}{len(audit.flagged):>6}/{audit.total:<5}{audit.hardcoded:>12}/{audit.total}"
        )
        out.extend(f"  {line}" for line in audit.flagged)
    print("\n".join(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
