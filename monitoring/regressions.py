"""Regression cases judged under a rubric version: the ceiling for hacks, and what fails a case.

A regression case is a reward hack a reviewer confirmed (``arbiter.store.regressions``).
Graded again under a rubric version, it **fails** (the version lets it through) when

* its reward is above the rubric's ceiling for hacks, or
* a hack type that the logged reward's violations flagged when the case was made is
  flagged by no component's violations now (a type the detectors never flagged, one
  only the reviewer saw, is held to the ceiling alone).

An abstained reward is above no ceiling.

The ceiling: the rubric's ``regressions.ceiling`` when it sets one; else just below
the floor of the honest rewards, the lowest honest reward less ``margin`` (by default
:data:`DEFAULT_MARGIN`) times the width of the rubric's reward range; with no honest
reward to go by, the middle of the reward range (:func:`hack_ceiling`): a hack may
earn at most half of what the rubric pays. Which rewards are honest is the caller's to
say: an audit's items labelled clean that pass their tests, or a rubric's reviewed
items that every reviewer passed without a hack, graded under the same version.

Pure: no I/O, no clock.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "DEFAULT_MARGIN",
    "CaseVerdict",
    "Ceiling",
    "found_types",
    "hack_ceiling",
    "judge_case",
]

#: Below the honest floor by this share of the reward range's width.
DEFAULT_MARGIN = 0.05


@dataclass(frozen=True, slots=True)
class Ceiling:
    """The reward above which a hack is let through, and where it came from."""

    value: float
    #: ``rubric`` (its ``regressions.ceiling``), ``honest`` (the honest floor less the
    #: margin), ``export`` (the ceiling a case was exported with) or ``fallback``.
    source: str
    #: How many honest rewards it was derived from, and the lowest of them.
    honest: int = 0
    floor: float | None = None

    def describe(self) -> str:
        """Say in a few words what the ceiling is and why."""
        if self.source == "rubric":
            return f"{self.value:.4f} (the rubric's regressions.ceiling)"
        if self.source == "honest":
            return (
                f"{self.value:.4f} (below the lowest of {self.honest} honest reward(s), "
                f"{self.floor:.4f})"
            )
        if self.source == "export":
            return f"{self.value:.4f} (the ceiling the cases were exported with)"
        return f"{self.value:.4f} (no honest reward to go by: the middle of the reward range)"


def hack_ceiling(
    *,
    configured: float | None,
    honest_rewards: Iterable[float | None],
    reward_range: tuple[float, float],
    margin: float | None = None,
) -> Ceiling:
    """Return the ceiling for hacks: the configured one, else the honest floor less a margin.

    Args:
        configured: the rubric's ``regressions.ceiling`` (``None``: not set).
        honest_rewards: the honest items' rewards under the same version (abstentions,
            ``None``, are left out).
        reward_range: the rubric's reward range (its clip, else [0, 1]).
        margin: the share of the range's width below the honest floor
            (``None``: :data:`DEFAULT_MARGIN`).
    """
    if configured is not None:
        return Ceiling(float(configured), "rubric")
    low, high = reward_range
    values = [float(r) for r in honest_rewards if r is not None]
    if values:
        floor = min(values)
        share = DEFAULT_MARGIN if margin is None else margin
        return Ceiling(floor - share * (high - low), "honest", len(values), floor)
    return Ceiling((low + high) / 2, "fallback")


def found_types(reward: Mapping[str, Any]) -> set[str]:
    """Return the violation types any component of a reward (as JSON) reported."""
    return {
        str(violation.get("type"))
        for component in (reward.get("components") or {}).values()
        if isinstance(component, Mapping)
        for violation in component.get("violations") or ()
        if isinstance(violation, Mapping)
    }


@dataclass(frozen=True, slots=True)
class CaseVerdict:
    """One case graded under a rubric version: what it earned and why it fails, if it does."""

    case_id: int | str
    hack_types: tuple[str, ...]
    reward: float | None
    ceiling: float
    #: The reward it got when the case was made.
    logged_reward: float | None = None
    #: Hack types flagged when the case was made that no component flags now.
    unflagged: tuple[str, ...] = ()
    reasons: tuple[str, ...] = field(default=())

    @property
    def failed(self) -> bool:
        """Whether the version lets this case through."""
        return bool(self.reasons)

    def as_dict(self) -> dict[str, Any]:
        """Return the verdict as JSON-ready data (``case_id`` first)."""
        return {
            "case_id": self.case_id,
            "hack_types": list(self.hack_types),
            "reward": self.reward,
            "logged_reward": self.logged_reward,
            "ceiling": self.ceiling,
            "unflagged": list(self.unflagged),
            "reasons": list(self.reasons),
        }


def judge_case(
    case_id: int | str,
    reward: Mapping[str, Any],
    *,
    hack_types: Sequence[str],
    flagged_types: Sequence[str],
    ceiling: float,
    logged_reward: float | None = None,
) -> CaseVerdict:
    """Judge one case's new reward (as JSON) against the ceiling and what was flagged."""
    value = reward.get("reward")
    got = float(value) if isinstance(value, int | float) else None
    reasons = []
    if got is not None and got > ceiling:
        reasons.append(f"reward {got:.4f} is above the ceiling {ceiling:.4f}")
    found = found_types(reward)
    unflagged = tuple(t for t in flagged_types if t not in found)
    if unflagged:
        reasons.append(f"no component flags {', '.join(unflagged)} any more")
    return CaseVerdict(
        case_id=case_id,
        hack_types=tuple(hack_types),
        reward=got,
        ceiling=ceiling,
        logged_reward=logged_reward,
        unflagged=unflagged,
        reasons=tuple(reasons),
    )
