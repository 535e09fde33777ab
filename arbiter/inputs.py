"""Read samples from JSON Lines, naming the line of every bad one."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import orjson
from pydantic import ValidationError

from arbiter.graders.types import Sample

__all__ = ["InputIssue", "parse_samples"]


@dataclass(frozen=True, slots=True)
class InputIssue:
    """One input line that is not a valid sample."""

    source: str
    line: int
    message: str

    def __str__(self) -> str:
        return f"{self.source}:{self.line}: {self.message}"


def _describe(error: ValidationError) -> str:
    parts = []
    for err in error.errors(include_url=False):
        path = ".".join(str(p) for p in err["loc"]) or "(sample)"
        if err["type"] == "missing":
            parts.append(f"{path}: missing")
        elif err["type"] == "extra_forbidden":
            parts.append(f"{path}: unknown field")
        else:
            found = repr(err.get("input"))
            found = found if len(found) <= 40 else found[:37] + "..."
            parts.append(f"{path}: {err['msg'].removeprefix('Input should be ')}; found {found}")
    return "; ".join(parts)


def parse_samples(
    lines: Iterable[bytes | str], source: str
) -> tuple[list[tuple[int, Sample]], list[InputIssue]]:
    """Parse JSON Lines into samples, keeping each one's line number.

    Blank lines are ignored. Every bad line is reported (not only the first),
    so one run shows everything to fix. A repeated sample id is an error: rewards
    are joined back to rollouts by id.
    """
    samples: list[tuple[int, Sample]] = []
    issues: list[InputIssue] = []
    seen: dict[str, int] = {}
    for number, raw in enumerate(lines, start=1):
        if not raw.strip():
            continue
        try:
            data = orjson.loads(raw)
        except orjson.JSONDecodeError as e:
            issues.append(InputIssue(source, number, f"invalid JSON: {e}"))
            continue
        if not isinstance(data, dict):
            found = type(data).__name__
            issues.append(InputIssue(source, number, f"expected a JSON object; found {found}"))
            continue
        try:
            sample = Sample.model_validate(data)
        except ValidationError as e:
            issues.append(InputIssue(source, number, _describe(e)))
            continue
        if sample.id in seen:
            issues.append(
                InputIssue(
                    source, number, f"id {sample.id!r} repeats the sample on line {seen[sample.id]}"
                )
            )
            continue
        seen[sample.id] = number
        samples.append((number, sample))
    return samples, issues
