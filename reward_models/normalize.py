"""Normalize raw reward-model scores before they are squashed into [0, 1].

* ``none``: the raw score.
* ``affine``: ``(raw - mean) / std`` with a mean and std fixed in configuration
  (measured on a reference set); using it without them is an error, never a
  silent ``mean=0, std=1``.
* ``running``: a z-score against the running mean and variance of every score
  seen so far (Welford's update). Until ``min_count`` scores have been seen the
  statistics are too noisy to use and the score is reported as 0.0 (the mean).
* ``group``: a z-score within the sample's group (``group_id``: the prompt a
  GRPO group shares). Bradley-Terry scores are only comparable between answers
  to the same prompt, so a group's scores are compared only with each other.

The group z-score needs every member's raw score first. :class:`GroupZScorer`
collects them: each member *joins* its group before its score is computed,
and the group is settled — every member gets its z-score — once all who joined
have a score or failed. A member that joins after the group has settled starts
the next round. A group with one scored member, or whose members are all
equal, gets 0.0: it carries no comparative signal.
"""

from __future__ import annotations

import asyncio
import math
from dataclasses import dataclass, field

from arbiter.groups import group_zscores
from arbiter.reward_models.errors import NormalizationError

__all__ = [
    "AffineNormalizer",
    "GroupZScorer",
    "RunningZNormalizer",
]


@dataclass(frozen=True, slots=True)
class AffineNormalizer:
    """``(raw - mean) / std`` with statistics fixed in configuration."""

    mean: float | None
    std: float | None

    def __post_init__(self) -> None:
        if self.mean is None or self.std is None:
            raise NormalizationError(
                "affine normalization needs both mean and std (measure them on a reference "
                "set); they were never set"
            )
        if not (math.isfinite(self.mean) and math.isfinite(self.std)) or self.std <= 0:
            raise NormalizationError(
                f"affine normalization needs a finite mean and std > 0, got "
                f"mean={self.mean!r}, std={self.std!r}"
            )

    def __call__(self, raw: float) -> float:
        """Return the normalized score."""
        assert self.mean is not None and self.std is not None
        return (raw - self.mean) / self.std


@dataclass(slots=True)
class RunningZNormalizer:
    """A z-score against running statistics of every score seen (Welford)."""

    min_count: int = 16
    count: int = 0
    mean: float = 0.0
    _m2: float = field(default=0.0, repr=False)

    def update(self, raw: float) -> None:
        """Add one raw score to the statistics."""
        if not math.isfinite(raw):
            raise NormalizationError(f"cannot add a non-finite score {raw!r}")
        self.count += 1
        delta = raw - self.mean
        self.mean += delta / self.count
        self._m2 += delta * (raw - self.mean)

    @property
    def std(self) -> float:
        """Return the population standard deviation so far."""
        return math.sqrt(self._m2 / self.count) if self.count else 0.0

    def __call__(self, raw: float) -> float:
        """Add ``raw`` to the statistics, then return its z-score (0.0 while warming up)."""
        self.update(raw)
        std = self.std
        if self.count < self.min_count or std <= 0:
            return 0.0
        return (raw - self.mean) / std


class _Round:
    __slots__ = ("done", "joined", "scores", "settled")

    def __init__(self) -> None:
        self.joined = 0
        self.scores: dict[int, float | None] = {}
        self.settled = False
        self.done: asyncio.Future[dict[int, float]] | None = None


@dataclass(frozen=True, slots=True)
class GroupTicket:
    """A member's place in one round of its group."""

    group: str
    member: int
    round: _Round = field(repr=False)


class GroupZScorer:
    """Collect the raw scores of a group's members and z-score them together.

    Use: ``ticket = scorer.join(group_id)`` before starting the score (no
    ``await`` between the joins of one batch's members), then
    ``await scorer.settle(ticket, raw)`` with the raw score, or ``None`` if it
    failed (a failed member is left out of the statistics).
    """

    def __init__(self) -> None:
        self._open: dict[str, _Round] = {}

    def join(self, group: str) -> GroupTicket:
        """Enter the group's open round and return the ticket for :meth:`settle`."""
        current = self._open.get(group)
        if current is None or current.settled:
            current = _Round()
            self._open[group] = current
        member = current.joined
        current.joined += 1
        return GroupTicket(group, member, current)

    async def settle(self, ticket: GroupTicket, raw: float | None) -> float | None:
        """Report this member's raw score; return its z-score once the round is complete.

        Returns:
            The z-score, or ``None`` for a member reported with ``None``.
        """
        done = self._record(ticket, raw)
        results = await asyncio.shield(done)
        return results.get(ticket.member)

    def abandon(self, ticket: GroupTicket) -> None:
        """Withdraw a member that will never report (cancelled), so the others can settle."""
        if ticket.member not in ticket.round.scores and not ticket.round.settled:
            self._record(ticket, None)

    def _record(self, ticket: GroupTicket, raw: float | None) -> asyncio.Future[dict[int, float]]:
        current = ticket.round
        if current.done is None:
            current.done = asyncio.get_running_loop().create_future()
        current.scores[ticket.member] = raw
        if len(current.scores) == current.joined and not current.settled:
            current.settled = True
            if self._open.get(ticket.group) is current:
                del self._open[ticket.group]
            members = sorted(m for m, v in current.scores.items() if v is not None)
            z = group_zscores([v for m in members if (v := current.scores[m]) is not None])
            current.done.set_result(dict(zip(members, z, strict=True)))
        return current.done
