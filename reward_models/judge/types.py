"""What a judge is asked and what it answers: criteria, sampling, replies, verdicts."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Protocol

from reward_models.errors import ConfigurationError

__all__ = [
    "Criterion",
    "JudgeBackend",
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
    probability over the two orders.
    """

    value: float
    consistent: bool
    candidate_first: Preference
    candidate_second: Preference


@dataclass(frozen=True, slots=True)
class JudgeResult:
    """The aggregated value of one criterion over its votes."""

    value: float
    verdicts: tuple[Verdict, ...]
    cached: int = 0


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
