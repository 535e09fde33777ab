"""A validated, compiled rubric: what scoring uses, and its content address."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from pydantic import BaseModel, ConfigDict
from pydantic_core import to_jsonable_python

from arbiter.graders.base import GraderConfig
from arbiter.graders.types import Sample, ViolationType, program_language
from arbiter.rubrics.errors import RubricIssue
from arbiter.rubrics.formula import Formula
from arbiter.rubrics.schema import GateSpec, PenaltySpec, RubricSpec

__all__ = [
    "Component",
    "Gate",
    "Route",
    "Rubric",
    "RubricIdentity",
    "canonical_sha256",
    "reward_range",
]


class RubricIdentity(BaseModel):
    """Which rubric made a reward: every reward carries one, so it can be replayed."""

    model_config = ConfigDict(frozen=True)

    name: str
    version: int
    sha256: str


@dataclass(frozen=True, slots=True)
class Component:
    """One component, its grader config validated by that grader's own model."""

    name: str
    grader: str
    weight: float
    required: bool
    timeout_s: float | None
    config: GraderConfig


@dataclass(frozen=True, slots=True)
class Gate:
    """A compiled gate: its spec and its condition."""

    spec: GateSpec
    condition: Formula


def canonical_sha256(canonical: Mapping[str, Any]) -> str:
    """Hash a canonical document: sorted keys, no whitespace, UTF-8."""
    text = json.dumps(canonical, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass(frozen=True, slots=True)
class Route:
    """A compiled route: which samples it takes, and the rubric that grades them."""

    name: str
    kinds: frozenset[str] | None
    data_sources: frozenset[str] | None
    rubric: Rubric

    def takes(self, kind: str, data_source: str | None) -> bool:
        """Whether a sample of task ``kind`` from ``data_source`` is this route's."""
        if self.kinds is not None and kind not in self.kinds:
            return False
        return self.data_sources is None or data_source in self.data_sources


@dataclass(frozen=True)
class Rubric:
    """A rubric ready to score with. Build it with :func:`arbiter.rubrics.build_rubric`.

    ``sha256`` hashes the canonical form: the validated document with every
    default filled in, keys sorted. Comments, key order, quoting and spelling
    a default out do not change it; anything that can change a reward does.
    """

    spec: RubricSpec
    components: Mapping[str, Component]
    formula: Formula | None
    gates: tuple[Gate, ...]
    penalties: Mapping[ViolationType, PenaltySpec]
    sha256: str
    source: str
    #: A mixed batch's routes, in order; a sample none takes is graded by this rubric.
    routes: tuple[Route, ...] = ()
    #: What validation noticed but did not refuse (weights that do not sum to 1, a gate
    #: over a component some accepted tasks leave out), each pointing at its line.
    warnings: tuple[RubricIssue, ...] = ()

    def refusal(self, sample: Sample) -> str | None:
        """Why this rubric does not grade ``sample`` (its ``accepts``), or None when it does."""
        accepts = self.spec.accepts
        if accepts is None:
            return None
        task = sample.task
        kind = task.kind if task is not None else "none"
        language = program_language(task)
        if (accepts.kind is None or kind in accepts.kind) and (
            accepts.language is None or language in accepts.language
        ):
            return None
        wanted = []
        if accepts.kind is not None:
            wanted.append(f"task kinds {', '.join(accepts.kind)}")
        if accepts.language is not None:
            wanted.append(f"programs in {', '.join(accepts.language)}")
        what = "a sample without a task" if task is None else f"a {kind} task"
        if task is not None and language is not None:
            what += f" in {language}"
        return f"rubric {self.name!r} accepts {' and '.join(wanted)}; this sample is {what}"

    def route_for(self, sample: Sample) -> tuple[str | None, Rubric]:
        """Return the route that takes ``sample`` (its name, its rubric), or (None, self)."""
        if not self.routes:
            return None, self
        kind = sample.task.kind if sample.task is not None else "none"
        for route in self.routes:
            if route.takes(kind, sample.data_source):
                return route.name, route.rubric
        return None, self

    def route_rubrics(self) -> list[Rubric]:
        """Return this rubric and every route's: all that can grade a sample under it."""
        return [self, *(route.rubric for route in self.routes)]

    @property
    def name(self) -> str:
        """The rubric's name."""
        return self.spec.name

    @property
    def version(self) -> int:
        """The rubric's version."""
        return self.spec.version

    @cached_property
    def weights(self) -> dict[str, float]:
        """Component name → weight, in the rubric's order."""
        return {name: c.weight for name, c in self.components.items()}

    @cached_property
    def identity(self) -> RubricIdentity:
        """Name, version and sha256 together."""
        return RubricIdentity(name=self.name, version=self.version, sha256=self.sha256)

    def canonical(self) -> dict[str, Any]:
        """Return the canonical document the sha256 is computed from."""
        return canonical_document(self.spec, {n: c.config for n, c in self.components.items()})


def _canonical(value: Any) -> Any:
    """Make dumped data order-independent: sets become sorted lists.

    A set's iteration order depends on string hashing, which Python randomizes
    per process: dumped as it iterates, the same rubric would get a different
    sha256 in every process.
    """
    if isinstance(value, dict):
        return {key: _canonical(item) for key, item in value.items()}
    if isinstance(value, set | frozenset):
        items = [_canonical(item) for item in value]
        return sorted(items, key=lambda item: json.dumps(item, sort_keys=True))
    if isinstance(value, list | tuple):
        return [_canonical(item) for item in value]
    return value


def canonical_document(spec: RubricSpec, configs: Mapping[str, GraderConfig]) -> dict[str, Any]:
    """Return the spec as JSON-ready data with each grader config validated and filled in."""
    doc = spec.model_dump(mode="json")
    for optional in ("accepts", "regressions"):
        if doc.get(optional) is None:
            # Absent from rubrics written before it existed: their identity stays as it was.
            doc.pop(optional, None)
    for name, config in configs.items():
        # Dumped in Python mode first so sets are still sets when they are sorted.
        raw = _canonical(config.model_dump(mode="python"))
        doc["components"][name]["config"] = to_jsonable_python(raw)
    return doc


def reward_range(rubric: Rubric | None) -> tuple[float, float]:
    """Return the range a rubric's rewards lie in: its clip, else [0, 1].

    A reward logged under a rubric that is no longer loaded (or no longer
    parses) is read as [0, 1] too: without the rubric its clip is unknown.
    """
    clip = None if rubric is None else rubric.spec.clip
    return (0.0, 1.0) if clip is None else (float(clip[0]), float(clip[1]))
