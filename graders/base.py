"""The grader protocol: an async callable with a typed, validated configuration."""

from __future__ import annotations

import logging
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Generic, Self, TypeVar

from pydantic import BaseModel, ConfigDict, Field, model_validator

from arbiter.graders.types import FailureKind, GradeResult, Sample, Violation

if TYPE_CHECKING:
    from arbiter.graders.registry import GraderRegistry

__all__ = ["Grader", "GraderConfig", "former_name"]

logger = logging.getLogger("arbiter.graders.config")


class GraderConfig(BaseModel):
    """Base of every grader's configuration: unknown keys are errors, values are frozen."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    #: Keys renamed since rubrics were written with them, former name -> current one.
    #: A subclass keeps each former name as a field of its own, ``None`` by default,
    #: excluded from dumps and marked deprecated (see :func:`former_name`); a rubric
    #: that gives it is read as if it gave the current one, with a warning.
    renamed_keys: ClassVar[Mapping[str, str]] = {}

    @model_validator(mode="after")
    def _read_renamed_keys(self) -> Self:
        """Move each former key's value to its current name; refuse both given at once.

        After validation, not before: a model validator that ran first would see
        the document as Python data, and strict validation would then refuse a
        JSON list where the model holds a tuple or a set.
        """
        for former, current in self.renamed_keys.items():
            given = self.__dict__[former]
            if given is not None:
                if current in self.model_fields_set:
                    raise ValueError(
                        f"{former!r} is the former name of {current!r}: give {current!r} only"
                    )
                logger.warning(
                    "%s: config key %r is deprecated; write %r (the same setting)",
                    type(self).__name__,
                    former,
                    current,
                )
                self.__dict__[current] = given
                self.model_fields_set.add(current)
            # Read under its former name, an attribute still says what is in force.
            self.__dict__[former] = self.__dict__[current]
            self.model_fields_set.discard(former)
        return self


def former_name(current: str) -> Any:
    """Declare a renamed key's former name: a field read only to be moved to ``current``."""
    return Field(
        default=None,
        exclude=True,
        repr=False,
        deprecated=f"renamed {current!r}",
        description=f"The former name of {current}: still read, with a warning.",
    )


ConfigT = TypeVar("ConfigT", bound=GraderConfig)


class Grader(ABC, Generic[ConfigT]):
    """A named, versioned grader.

    Subclasses set ``name``, ``version`` (bump it whenever scores can change, so
    replays and drift streams can tell grader revisions apart), ``config_model``
    and ``description``, and implement :meth:`grade`. A grader never knows what a
    rubric is: it receives only its own config.
    """

    name: ClassVar[str]
    version: ClassVar[str]
    config_model: ClassVar[type[GraderConfig]]
    description: ClassVar[str] = ""
    default_timeout_s: ClassVar[float] = 30.0
    #: A pure grader that answers at once, without I/O, sets this and
    #: implements :meth:`grade_inline`; the runner then calls it directly, with no
    #: task or timer per sample (a deadline could not interrupt it anyway).
    inline: ClassVar[bool] = False
    #: Whether the same sample always gets the same result (audits check it).
    deterministic: ClassVar[bool] = True
    #: The task kinds this grader scores (``none``: a sample without a task); any other
    #: is ``not_applicable``. ``None``: every sample. Rubric validation reads it to warn
    #: of a gate over a component that some accepted samples leave out.
    task_kinds: ClassVar[frozenset[str] | None] = None
    #: The program languages it scores (a task that grades no program has none);
    #: ``None``: any sample, program or not.
    languages: ClassVar[frozenset[str] | None] = None

    @abstractmethod
    async def grade(self, sample: Sample, config: ConfigT) -> GradeResult:
        """Grade one sample; return a failure result rather than raising for bad input."""

    async def readiness(self) -> str | None:
        """Return why this grader cannot serve now (a dead sandbox pool, an unreachable judge).

        ``None`` means ready. The service's ``/readyz`` asks every grader it has
        built; graders without outside dependencies keep this default.
        """
        return None

    async def warm(self) -> None:
        """Start what grading needs (worker processes, sandbox zygotes) before the first job.

        Called before a service says it is ready and before a command's first
        job, so that no sample's deadline pays for a start-up: a reward must not
        depend on whether it came first. The default has nothing to start.
        """

    def expect(self, samples: Sequence[Sample]) -> None:
        """Hear which samples the coming jobs hold, before :meth:`warm` (a command knows them).

        A grader may then start only what they need (the unit-test grader: no
        compilers for a Python batch). A service, which cannot know, never calls
        it, and :meth:`warm` starts everything. The default ignores it.
        """

    def attach(self, registry: GraderRegistry) -> None:
        """Hear which registry built this instance (a grader that reads another's runs).

        The default needs none.
        """

    def close(self) -> None:
        """Release what the grader holds (a process pool, a model); the default holds nothing."""

    def grade_inline(self, sample: Sample, config: ConfigT) -> GradeResult:
        """Grade one sample synchronously (only for graders with ``inline = True``)."""
        raise NotImplementedError(f"grader {self.name!r} has no inline path")

    def scored(
        self,
        score: float,
        *,
        details: dict[str, Any] | None = None,
        violations: tuple[Violation, ...] = (),
    ) -> GradeResult:
        """Build a successful result stamped with this grader's name and version."""
        return GradeResult(
            grader=self.name,
            grader_version=self.version,
            score=score,
            details=details or {},
            violations=violations,
        )

    def failed(
        self,
        kind: FailureKind,
        message: str,
        *,
        details: dict[str, Any] | None = None,
        violations: tuple[Violation, ...] = (),
        retryable: bool = False,
        latency_s: float = 0.0,
    ) -> GradeResult:
        """Build a failure result stamped with this grader's name and version."""
        return GradeResult.failed(
            self.name,
            kind,
            message,
            grader_version=self.version,
            details=details,
            violations=violations,
            retryable=retryable,
            latency_s=latency_s,
        )
