"""What the drift monitor takes: a batch of rewards as columns, or reward objects read structurally.

``monitoring`` may not import ``rubrics``, so a reward is read through the
:class:`RewardLike` protocol, which ``arbiter.rubrics.reward.Reward`` satisfies as it is.
Columns rather than objects: a window is a few hundred scores, and a benchmark
or a replay feeds millions, so the monitor works on arrays from the start.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from arbiter.graders.types import ViolationType
from arbiter.monitoring.hack_rates import CANARY_STREAM, GROUP_STREAM, HACK_PREFIX

__all__ = [
    "ComponentLike",
    "ComponentScores",
    "RewardBatch",
    "RewardLike",
    "RubricLike",
    "ViolationLike",
    "batch_from_rewards",
]

Floats = npt.NDArray[np.float64]

# Outcomes that mean a test was not executed at all (the candidate skipped it or
# the run ended first): falling "tests executed" is a reward-hacking sign.
_NOT_EXECUTED = frozenset({"skipped", "not_run", "deselected"})


def _column(values: npt.ArrayLike | Sequence[float | None], size: int | None, name: str) -> Floats:
    """Return ``values`` as a float column, ``None`` read as NaN, checked to hold ``size``."""
    array = np.array(
        [math.nan if v is None else v for v in values] if isinstance(values, Sequence) else values,
        dtype=np.float64,
    )
    if array.ndim != 1 or (size is not None and array.shape != (size,)):
        raise ValueError(f"{name}: expected {size} values, got shape {array.shape}")
    return array


class ComponentScores:
    """One component's scores in a batch, all from one grader version.

    ``None`` or NaN marks a sample the grader could not score: it is left out
    of the stream rather than counted as a zero.
    """

    __slots__ = ("grader_version", "scores")

    def __init__(self, grader_version: str, scores: npt.ArrayLike | Sequence[float | None]) -> None:
        self.grader_version = grader_version
        self.scores = _column(scores, None, "scores")


class RewardBatch:
    """Rewards of one rubric version as columns, one entry per rollout.

    Args:
        rubric: The rubric's name.
        rubric_version: What identifies the rubric's content (its sha256 is best):
            the rubric-level stream restarts when it changes.
        rewards: The composed reward, ``None``/NaN where the rubric abstained.
        components: Component name → its scores.
        passed: 1 where every test passed, 0 where not, NaN where no tests ran.
        tests_executed: How many tests ran for each rollout.
        runtime_s: How long the tests ran.
        response_length: The response's length (characters or tokens, consistently).
        rates: Rate stream name → its 0/1 observations (``hack:<type>`` per reward,
            ``groups:zero_variance`` per group, ``canary`` per reward), each column
            as long as it needs (see :mod:`arbiter.monitoring.hack_rates`).
    """

    __slots__ = (
        "components",
        "passed",
        "rates",
        "response_length",
        "rewards",
        "rubric",
        "rubric_version",
        "runtime_s",
        "size",
        "tests_executed",
    )

    def __init__(
        self,
        rubric: str,
        rubric_version: str,
        rewards: npt.ArrayLike | Sequence[float | None],
        components: Mapping[str, ComponentScores],
        *,
        passed: npt.ArrayLike | Sequence[float | None] | None = None,
        tests_executed: npt.ArrayLike | Sequence[float | None] | None = None,
        runtime_s: npt.ArrayLike | Sequence[float | None] | None = None,
        response_length: npt.ArrayLike | Sequence[float | None] | None = None,
        rates: Mapping[str, npt.ArrayLike | Sequence[float | None]] | None = None,
    ) -> None:
        self.rubric = rubric
        self.rubric_version = rubric_version
        self.rewards = _column(rewards, None, "rewards")
        self.size = self.rewards.shape[0]
        for name, component in components.items():
            if component.scores.shape != (self.size,):
                raise ValueError(
                    f"component {name!r}: expected {self.size} scores, "
                    f"got {component.scores.shape[0]}"
                )
        self.components = dict(components)
        missing = np.full(self.size, math.nan)
        self.passed = missing if passed is None else _column(passed, self.size, "passed")
        self.tests_executed = (
            missing
            if tests_executed is None
            else _column(tests_executed, self.size, "tests_executed")
        )
        self.runtime_s = (
            missing if runtime_s is None else _column(runtime_s, self.size, "runtime_s")
        )
        self.response_length = (
            missing
            if response_length is None
            else _column(response_length, self.size, "response_length")
        )
        self.rates = {name: _column(v, None, name) for name, v in (rates or {}).items()}


class RubricLike(Protocol):
    """The rubric identity a reward carries."""

    @property
    def name(self) -> str: ...  # noqa: D102

    @property
    def version(self) -> int: ...  # noqa: D102

    @property
    def sha256(self) -> str: ...  # noqa: D102


class ViolationLike(Protocol):
    """A violation a component reported: its type is what the rate streams count."""

    @property
    def type(self) -> str: ...  # noqa: D102


class ComponentLike(Protocol):
    """One component's outcome inside a reward."""

    @property
    def score(self) -> float | None: ...  # noqa: D102

    @property
    def grader(self) -> str: ...  # noqa: D102

    @property
    def grader_version(self) -> str: ...  # noqa: D102

    @property
    def details(self) -> Mapping[str, Any]: ...  # noqa: D102

    @property
    def latency_s(self) -> float: ...  # noqa: D102

    @property
    def violations(self) -> Sequence[ViolationLike]: ...  # noqa: D102


class RewardLike(Protocol):
    """A reward as ``arbiter.rubrics.reward.Reward`` shapes it."""

    @property
    def reward(self) -> float | None: ...  # noqa: D102

    @property
    def raw_reward(self) -> float | None: ...  # noqa: D102

    @property
    def components(self) -> Mapping[str, ComponentLike]: ...  # noqa: D102

    @property
    def rubric(self) -> RubricLike: ...  # noqa: D102

    @property
    def group_id(self) -> str | None: ...  # noqa: D102


def _tests_component(reward: RewardLike) -> ComponentLike | None:
    """Return the component whose details count tests, preferring the unit-test grader."""
    counted = [
        c
        for c in reward.components.values()
        if isinstance(c.details.get("passed"), int) and isinstance(c.details.get("total"), int)
    ]
    for component in counted:
        if component.grader == "unit_tests":
            return component
    return counted[0] if counted else None


def _executed(details: Mapping[str, Any]) -> int:
    tests = details.get("tests")
    if isinstance(tests, list) and all(isinstance(t, Mapping) for t in tests):
        return sum(t.get("outcome") not in _NOT_EXECUTED for t in tests)
    return int(details["total"])


#: The violation types with a rate stream each (a canary pass has a stream of its own).
HACK_TYPES = tuple(t.value for t in ViolationType if t.value != CANARY_STREAM)


def _rates(rewards: Sequence[RewardLike]) -> dict[str, list[float | None]]:
    """Return the rate streams' observations of these rewards (one rubric version's)."""
    seen = [{str(v.type) for c in r.components.values() for v in c.violations} for r in rewards]
    rates: dict[str, list[float | None]] = {
        HACK_PREFIX + kind: [float(kind in types) for types in seen] for kind in HACK_TYPES
    }
    rates[CANARY_STREAM] = [float(CANARY_STREAM in types) for types in seen]
    groups: dict[str, list[float]] = {}
    unscored: set[str] = set()
    for reward in rewards:
        if reward.group_id is None:
            continue
        value = reward.raw_reward
        if value is None or math.isnan(value):
            unscored.add(reward.group_id)  # an abstention says nothing of the group's spread
        else:
            groups.setdefault(reward.group_id, []).append(value)
    rates[GROUP_STREAM] = [
        float(max(values) - min(values) <= 1e-9)
        for group, values in groups.items()
        if len(values) >= 2 and group not in unscored
    ]
    return rates


def batch_from_rewards(
    rewards: Sequence[RewardLike], response_lengths: Sequence[int | None] | None = None
) -> list[RewardBatch]:
    """Turn reward objects into batches, one per (rubric, rubric sha, grader versions).

    The rubric-level stream watches ``raw_reward`` (before group normalization,
    which would hide any shift of the whole group). Tests come from the
    component whose details carry integer ``passed`` and ``total`` (the
    unit-test grader's); its ``latency_s`` is the runtime.

    Args:
        rewards: Rewards in the order they were made.
        response_lengths: Each rollout's response length, if known.

    Returns:
        The batches, in order of their first reward.
    """
    if response_lengths is not None and len(response_lengths) != len(rewards):
        raise ValueError("response_lengths must have one entry per reward")
    groups: dict[tuple[str, str, tuple[tuple[str, str], ...]], list[int]] = {}
    for i, reward in enumerate(rewards):
        versions = tuple(sorted((n, c.grader_version) for n, c in reward.components.items()))
        groups.setdefault((reward.rubric.name, reward.rubric.sha256, versions), []).append(i)
    batches = []
    for (rubric, sha, versions), indices in groups.items():
        chosen = [rewards[i] for i in indices]
        passed: list[float | None] = []
        executed: list[float | None] = []
        runtime: list[float | None] = []
        for reward in chosen:
            tests = _tests_component(reward)
            if tests is None or tests.score is None:
                passed.append(None)
                executed.append(None)
                runtime.append(None)
                continue
            total = int(tests.details["total"])
            passed.append(float(total > 0 and tests.details["passed"] == total))
            executed.append(float(_executed(tests.details)))
            runtime.append(tests.latency_s)
        lengths = (
            None
            if response_lengths is None
            else [None if (v := response_lengths[i]) is None else float(v) for i in indices]
        )
        batches.append(
            RewardBatch(
                rubric,
                sha,
                [r.raw_reward for r in chosen],
                {
                    name: ComponentScores(version, [r.components[name].score for r in chosen])
                    for name, version in versions
                },
                passed=passed,
                tests_executed=executed,
                runtime_s=runtime,
                response_length=lengths,
                rates=_rates(chosen),
            )
        )
    return batches
