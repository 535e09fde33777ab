"""What the adapters share: settings from the environment, the rubric, micro-batched grading.

Every adapter reads the same variables:

* ``ARBITER_URL``, ``ARBITER_API_KEY``, ``ARBITER_RUBRIC``: where, who, what.
* ``ARBITER_ABSTAIN``: what an abstained reward becomes for a trainer that has
  no "no reward" value (verl, OpenRLHF): ``zero``, ``group_mean`` or ``raise``
  (the default: an abstention is never silently a number).
* ``ARBITER_BATCH_WINDOW_MS`` (20) and ``ARBITER_BATCH_MAX`` (256): the
  micro-batch that concurrent per-sample calls are coalesced into.
* ``ARBITER_RETRY_BUDGET_S`` (60): how long a call keeps retrying after its
  first failure (a replica or PostgreSQL restarting); see :mod:`arbiter.client`.
"""

from __future__ import annotations

import hashlib
import math
import os
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, get_args

from arbiter.adapters.coalescer import Coalescer
from arbiter.client import RETRY_BUDGET_S, ArbiterClient, AsyncArbiterClient, Reward
from arbiter.rows import AbstainPolicy, fill_abstained

__all__ = [
    "AdapterSettings",
    "Graded",
    "fetch_rubric",
    "grading_coalescer",
    "sample_id",
    "text_of",
]


def text_of(value: Any) -> str:
    """Return the text of a completion: a string, or the last message's content."""
    if isinstance(value, str):
        return value
    if isinstance(value, list) and value and isinstance(value[-1], dict):
        content = value[-1].get("content")
        return content if isinstance(content, str) else ""
    return str(value)


def sample_id(prefix: str, *parts: str) -> str:
    """Return a stable id for a row from its content."""
    digest = hashlib.sha256("\x00".join(parts).encode("utf-8")).hexdigest()[:20]
    return f"{prefix}-{digest}"


def fetch_rubric(client: ArbiterClient, name: str) -> dict[str, Any]:
    """Return the resolved form of a rubric's latest version, as the service has it.

    The service resolves it (it knows every grader, plugins included); the
    trainer side needs only component names, weights and penalties.
    """
    resolved: dict[str, Any] = client.rubric(name)["resolved"]
    return resolved


def _env(name: str) -> str:
    value = os.environ.get(name)
    if not value:
        raise RuntimeError(f"set {name} to use this adapter")
    return value


@dataclass(frozen=True)
class AdapterSettings:
    """The adapters' settings (see the module docstring for the variables)."""

    url: str
    api_key: str | None
    rubric: str
    abstain: AbstainPolicy = "raise"
    window_s: float = 0.02
    max_samples: int = 256
    retry_budget_s: float = RETRY_BUDGET_S

    @classmethod
    def from_env(cls) -> AdapterSettings:
        """Read the settings from the environment; a retired variable is an error naming its heir.

        Raises:
            RuntimeError: a required variable is unset, a value is invalid, or a
                retired variable is set.
        """
        if "ARBITER_ABSTAIN_VALUE" in os.environ:
            raise RuntimeError(
                "ARBITER_ABSTAIN_VALUE is no longer read: set ARBITER_ABSTAIN to zero, "
                "group_mean or raise (what an abstained reward becomes)"
            )
        abstain = os.environ.get("ARBITER_ABSTAIN", "raise")
        if abstain not in get_args(AbstainPolicy):
            raise RuntimeError(
                f"ARBITER_ABSTAIN={abstain!r}: expected one of zero, group_mean, raise"
            )
        try:
            window_s = float(os.environ.get("ARBITER_BATCH_WINDOW_MS", "20")) / 1000
            max_samples = int(os.environ.get("ARBITER_BATCH_MAX", "256"))
        except ValueError as e:
            raise RuntimeError(f"ARBITER_BATCH_WINDOW_MS / ARBITER_BATCH_MAX: {e}") from e
        budget = os.environ.get("ARBITER_RETRY_BUDGET_S", str(RETRY_BUDGET_S))
        try:
            retry_budget_s = float(budget)
        except ValueError:
            retry_budget_s = math.nan
        if not math.isfinite(retry_budget_s) or retry_budget_s < 0:
            raise RuntimeError(
                f"ARBITER_RETRY_BUDGET_S={budget!r}: expected seconds (a number >= 0) that a "
                "call keeps retrying after its first failure"
            )
        return cls(
            url=_env("ARBITER_URL"),
            api_key=os.environ.get("ARBITER_API_KEY"),
            rubric=_env("ARBITER_RUBRIC"),
            abstain=abstain,  # type: ignore[arg-type]  # checked against the Literal above
            window_s=window_s,
            max_samples=max_samples,
            retry_budget_s=retry_budget_s,
        )

    def client(self) -> ArbiterClient:
        """Return a synchronous client for these settings."""
        return ArbiterClient(self.url, self.api_key, retry_budget_s=self.retry_budget_s)


@dataclass(frozen=True)
class Graded:
    """One sample's answer: its reward as the service sent it, and the value for the trainer.

    ``value`` is the reward, or the abstention fallback's value when the rubric
    abstained (then ``abstained`` is true).
    """

    reward: Reward
    value: float
    abstained: bool


def grading_coalescer(settings: AdapterSettings) -> Coalescer[Graded]:
    """Return a coalescer that grades micro-batches through ``POST /v1/rewards``.

    Each sample gets a position prefix on its id (the same text may be sampled
    twice in one batch); an abstained sample under ``raise`` (or ``group_mean``
    without a scored peer) gets its own :class:`~arbiter.rows.AbstainedError`.
    """

    def make_send() -> Callable[[list[dict[str, Any]]], Awaitable[list[Graded | BaseException]]]:
        client = AsyncArbiterClient(
            settings.url, settings.api_key, retry_budget_s=settings.retry_budget_s
        )

        async def send(samples: list[dict[str, Any]]) -> list[Graded | BaseException]:
            rows = [{**s, "id": f"{i}.{s['id']}"} for i, s in enumerate(samples)]
            batch = await client.rewards(rows, settings.rubric)
            values = batch.values()
            owners = [r.abstained_by for r in batch.rewards]
            groups = [s.get("group_id") for s in rows]
            filled = fill_abstained(values, groups, settings.abstain, owners)
            return [
                f if isinstance(f, BaseException) else Graded(r, f, v is None)
                for r, v, f in zip(batch.rewards, values, filled, strict=True)
            ]

        return send

    return Coalescer(make_send, window_s=settings.window_s, max_samples=settings.max_samples)
