"""What a judge is asked and what it answers: criteria, sampling, replies, verdicts."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Literal, Protocol

from arbiter.reward_models.errors import ConfigurationError

__all__ = [
    "Criterion",
    "JudgeBackend",
    "JudgeDefaults",
    "JudgeReply",
    "JudgeResult",
    "Level",
    "Messages",
    "PairwiseResult",
    "Preference",
    "SamplingParams",
    "TokenLogprob",
    "Verdict",
]

Messages = list[dict[str, str]]


@dataclass(frozen=True, slots=True)
class Level:
    """One anchor of a criterion's scale."""

    score: int
    description: str
    value: float


@dataclass(frozen=True, slots=True)
class Criterion:
    """What the judge grades, with levels 1..N in order."""

    name: str
    description: str
    levels: tuple[Level, ...]

    def __post_init__(self) -> None:
        if [lv.score for lv in self.levels] != list(range(1, len(self.levels) + 1)):
            raise ConfigurationError(f"criterion {self.name!r}: levels must be 1..N in order")
        if not 2 <= len(self.levels) <= 9:
            raise ConfigurationError(f"criterion {self.name!r}: between 2 and 9 levels")
        if any(not 0.0 <= lv.value <= 1.0 for lv in self.levels):
            raise ConfigurationError(f"criterion {self.name!r}: level values must be in [0, 1]")

    def value_of(self, level: int) -> float:
        """Return the value of level ``level`` (1-based)."""
        return self.levels[level - 1].value


@dataclass(frozen=True, slots=True)
class SamplingParams:
    """How the judge samples; part of the cache key."""

    temperature: float = 0.0
    max_tokens: int = 512
    top_logprobs: int = 20
    seed: int | None = None
    #: The criterion's highest level; a backend that forces the grade token
    #: (a prefilled local model) picks among "1".."max_level".
    max_level: int | None = None
    #: Nucleus sampling; ``None`` leaves it to the server.
    top_p: float | None = None


@dataclass(frozen=True, slots=True)
class JudgeDefaults:
    """A declared judge's sampling, applied where a rubric leaves a setting unset.

    ``max_tokens`` is a ceiling (a deployment's cost limit), applied whatever the
    rubric asks; ``votes`` applies to absolute grading only (pairwise takes one
    verdict per order).
    """

    temperature: float | None = None
    top_p: float | None = None
    seed: int | None = None
    max_tokens: int | None = None
    votes: int | None = None

    def apply(self, params: SamplingParams, explicit: frozenset[str] | set[str]) -> SamplingParams:
        """Return ``params`` with these defaults for the fields not in ``explicit`` (pure)."""
        changes: dict[str, object] = {}
        for name in ("temperature", "top_p", "seed"):
            value = getattr(self, name)
            if value is not None and name not in explicit:
                changes[name] = value
        if self.max_tokens is not None and params.max_tokens > self.max_tokens:
            changes["max_tokens"] = self.max_tokens
        return replace(params, **changes) if changes else params  # type: ignore[arg-type]


@dataclass(frozen=True, slots=True)
class TokenLogprob:
    """One generated token, its logprob, and the top alternatives at its position."""

    token: str
    logprob: float
    top: tuple[tuple[str, float], ...] = ()


@dataclass(frozen=True, slots=True)
class JudgeReply:
    """The judge's answer text and, when the backend gives them, its token logprobs."""

    text: str
    tokens: tuple[TokenLogprob, ...] | None = None
    #: Tokens the judge read and wrote, where the backend reports them.
    prompt_tokens: int | None = None
    completion_tokens: int | None = None


@dataclass(frozen=True, slots=True)
class Verdict:
    """A parsed grade: the level written, and the value it is worth."""

    level: int
    value: float
    method: Literal["logprobs", "pattern"]
    distribution: dict[int, float] | None = None


@dataclass(frozen=True, slots=True)
class Preference:
    """A parsed pairwise verdict, with P(A) when logprobs gave it."""

    winner: Literal["A", "B"]
    p_a: float | None
    method: Literal["logprobs", "pattern"]


@dataclass(frozen=True, slots=True)
class PairwiseResult:
    """The candidate's value against a baseline over both presentation orders.

    ``value`` is 1.0 when the candidate wins in both orders, 0.0 when it loses in
    both, 0.5 (a tie) when the verdict flips with the order — position bias, not
    preference. With logprobs and a consistent verdict it is the mean win
    probability over the two orders. A judge declared without position swap is
    asked in one order only (``candidate_second`` is ``None``).
    """

    value: float
    consistent: bool
    candidate_first: Preference
    candidate_second: Preference | None


@dataclass(frozen=True, slots=True)
class JudgeResult:
    """The aggregated value of one criterion over its votes."""

    value: float
    verdicts: tuple[Verdict, ...]
    cached: int = 0
    #: Tokens the judge read and wrote for this result (cached answers cost none).
    prompt_tokens: int = 0
    completion_tokens: int = 0


class JudgeBackend(Protocol):
    """A chat model that answers a judge prompt."""

    @property
    def model(self) -> str:
        """Name the model (part of the cache key)."""
        ...

    async def complete(self, messages: Messages, params: SamplingParams) -> JudgeReply:
        """Answer the messages.

        Raises:
            JudgeUnavailableError: retryable: unreachable, 429, 5xx.
            JudgeTimeoutError: no answer in time.
            JudgeError: any other refusal or a garbled answer.
        """
        ...
