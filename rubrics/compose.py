"""Compose grader results into one reward: pure, deterministic, no I/O.

The order of operations is fixed and documented because it changes numbers:

1. **Missing scores.** A component whose failure is ours (an infrastructure
   failure: ``infra_timeout``, ``sandbox_error``, a grader's or a judge's error)
   makes the reward abstain, whatever ``on_missing`` says. A required component
   without a score makes the reward abstain. Any other missing component
   follows ``on_missing``: ``abstain``;
   ``renormalize`` (weighted_sum only: the present weights are scaled up to the
   full total, so with weights summing to 1 the value is the weighted mean of
   the present components); or ``zero`` (the rubric author chose to read a
   failure as 0 — the reward is flagged so it can be found later).
2. **Combine**: the weighted sum, or the formula.
3. **Gates**, in order: when the condition holds, the reward is capped at
   ``cap`` and/or raised to ``floor``. A gate whose condition reads a missing
   component applies: without the evidence, the reward cannot claim more. A
   gate that reads a component left out as not applicable (decided by the task,
   never by the candidate) does not: that component is no part of this reward.
4. **Penalties**: each violation type observed on any component subtracts its
   penalty (once, or per occurrence up to ``max_penalty``). Penalties come after
   gates so a gate can never absorb them.
5. **Clip** to ``clip``.

Each step that moved the value is named in the reward's ``flags``: ``renormalized``
(present weights scaled up over components without a score),
``missing_read_as_zero`` (a fill), ``not_applicable_left_out``, ``capped`` and
``floored`` (a gate bounded it; ``gates`` says which), ``clipped``. ``raw_reward``
is the value before the clip, so a clip that fired can be seen; ``reward`` after it.
A sample the rubric does not accept (its ``accepts``) is ``not_accepted``: it abstains
without any grader having run.

Group normalization (:func:`normalize_rewards`) runs afterwards, over a batch.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Hashable, Mapping, Sequence

from arbiter.graders.types import (
    INFRASTRUCTURE_FAILURES,
    TASK_FAILURES,
    FailureKind,
    GradeResult,
    ViolationType,
    failure_owner,
)
from arbiter.groups import group_zscores
from arbiter.rubrics.formula import FormulaEvalError
from arbiter.rubrics.reward import (
    AbstainOwner,
    AppliedGate,
    AppliedPenalty,
    ComponentOutcome,
    Reward,
)
from arbiter.rubrics.rubric import Rubric

__all__ = ["compose", "group_key", "normalize_rewards", "normalize_values"]


def compose(
    rubric: Rubric,
    results: Mapping[str, GradeResult],
    *,
    sample_id: str,
    group_id: str | None = None,
    refused: str | None = None,
) -> Reward:
    """Combine one sample's grader results into its reward.

    Args:
        rubric: the compiled rubric.
        results: component name → that component's result; every component of
            the rubric must be present (a grader that failed still has a result).
        sample_id: echoed into the reward.
        group_id: echoed into the reward.
        refused: why the rubric does not grade this sample (:meth:`Rubric.refusal`):
            the reward abstains with it, owed to the request.

    Raises:
        ValueError: when ``results`` lacks a component of the rubric (a caller bug,
            not a grading failure).
    """
    absent = [name for name in rubric.components if name not in results]
    if absent:
        raise ValueError(f"no result for components {absent} of rubric {rubric.name!r}")

    outcomes = {
        name: ComponentOutcome.of(results[name], weight=c.weight, required=c.required)
        for name, c in rubric.components.items()
    }
    graders = {o.grader: o.grader_version for o in outcomes.values()}
    if refused is not None:
        penalties: list[AppliedPenalty] = []
        gates: list[AppliedGate] = []
        value, raw, flags = None, None, ["not_accepted"]
        abstention: tuple[str, AbstainOwner] | None = (refused, "request")
    else:
        penalties = _penalties(rubric, results)
        value, raw, abstention, gates, flags = _value(rubric, results, penalties)
    reason, by = abstention if abstention is not None else (None, None)
    return Reward(
        id=sample_id,
        group_id=group_id,
        reward=value,
        raw_reward=raw,
        abstain_reason=reason,
        abstained_by=by,
        components=outcomes,
        penalties=tuple(penalties),
        gates=tuple(gates),
        rubric=rubric.identity,
        graders=graders,
        flags=tuple(flags),
    )


def _value(
    rubric: Rubric, results: Mapping[str, GradeResult], penalties: list[AppliedPenalty]
) -> tuple[
    float | None, float | None, tuple[str, AbstainOwner] | None, list[AppliedGate], list[str]
]:
    """Return the reward (clipped, and before the clip), or why it abstains; gates; flags."""
    spec = rubric.spec
    env: dict[str, float] = {}
    missing: list[str] = []
    for name in rubric.components:
        score = results[name].score
        if score is None:
            missing.append(name)
        else:
            env[name] = score
    flags: list[str] = []
    # A grader that does not apply (a Python analyser on a C++ task) is left out,
    # whatever on_missing says: it is no verdict on the candidate. Unless required.
    skipped = [
        n
        for n in missing
        if (failure := results[n].failure) is not None
        and failure.kind == FailureKind.NOT_APPLICABLE
        and not rubric.components[n].required
    ]
    if skipped:
        flags.append("not_applicable_left_out")
        missing = [n for n in missing if n not in skipped]

    def owner(names: list[str]) -> AbstainOwner:
        """Whose doing the missing scores are: the candidate's if any one is its own."""
        failures = [results[n].failure for n in names]
        owners = {failure_owner(f.kind) if f is not None else "request" for f in failures}
        ranked: tuple[AbstainOwner, ...] = ("candidate", "task", "ours")
        return next((who for who in ranked if who in owners), "request")

    def why(names: list[str]) -> str:
        parts = []
        for name in names:
            failure = results[name].failure
            parts.append(f"{name} ({failure.kind.value if failure else 'no score'})")
        return ", ".join(parts)

    if missing:
        ours = [
            n
            for n in missing
            if (failure := results[n].failure) is not None
            and failure.kind in INFRASTRUCTURE_FAILURES
        ]
        if ours:
            # Not the candidate's doing: neither renormalized away nor read as zero.
            return None, None, (f"infrastructure failure: {why(ours)}", "ours"), [], flags
        tasks = [
            n
            for n in missing
            if (failure := results[n].failure) is not None and failure.kind in TASK_FAILURES
        ]
        if tasks:
            # The task's fault (a gold that does not parse): no verdict on the candidate.
            return None, None, (f"invalid task: {why(tasks)}", "task"), [], flags
        required_missing = [n for n in missing if rubric.components[n].required]
        if required_missing:
            reason = f"required component without a score: {why(required_missing)}"
            return None, None, (reason, owner(required_missing)), [], flags
        if spec.on_missing == "abstain":
            reason = f"component without a score: {why(missing)}"
            return None, None, (reason, owner(missing)), [], flags
        if spec.on_missing == "zero":
            flags.append("missing_read_as_zero")
            env.update(dict.fromkeys(missing, 0.0))

    if rubric.formula is None:
        weights = rubric.weights
        present = sum(weights[name] for name in env)
        if present <= 0:
            reason = f"no weighted component has a score: {why(missing + skipped)}"
            return None, None, (reason, owner(missing + skipped)), [], flags
        value = math.fsum(weights[name] * score for name, score in env.items())
        if (missing and spec.on_missing == "renormalize") or skipped:
            flags.append("renormalized")
            value *= math.fsum(weights.values()) / present
    else:
        try:
            value = rubric.formula.evaluate(env)
        except FormulaEvalError as e:
            return None, None, (f"combine formula has no value: {e}", "rubric"), [], flags

    applied: list[AppliedGate] = []
    for gate in rubric.gates:
        if gate.condition.names & set(skipped):
            # A component left out as not applicable (hidden_tests on a task with
            # no reference) is no part of this reward: a gate over it does not apply.
            continue
        if not gate.condition.names <= env.keys():
            reason = "its condition reads a component without a score"
        else:
            try:
                holds = gate.condition.evaluate(env) != 0.0
            except FormulaEvalError as e:
                holds, reason = True, f"its condition has no value ({e})"
            else:
                reason = "condition holds"
            if not holds:
                continue
        if gate.spec.cap is not None and value > gate.spec.cap:
            value = gate.spec.cap
            _flag(flags, "capped")
        if gate.spec.floor is not None and value < gate.spec.floor:
            value = gate.spec.floor
            _flag(flags, "floored")
        applied.append(
            AppliedGate(
                when=gate.spec.when, cap=gate.spec.cap, floor=gate.spec.floor, reason=reason
            )
        )

    if penalties:
        value -= math.fsum(p.penalty for p in penalties)
    raw = value
    if spec.clip is not None:
        value = min(spec.clip[1], max(spec.clip[0], value))
        if value != raw:
            flags.append("clipped")
    return value, raw, None, applied, flags


def _flag(flags: list[str], flag: str) -> None:
    if flag not in flags:
        flags.append(flag)


def _penalties(rubric: Rubric, results: Mapping[str, GradeResult]) -> list[AppliedPenalty]:
    # Two graders may report the same evidence (the violations grader merges
    # what the sandbox saw): count each distinct piece of evidence once.
    if not rubric.penalties:
        return []
    seen: dict[ViolationType, set[tuple[object, ...]]] = defaultdict(set)
    for result in results.values():
        for v in result.violations:
            seen[v.type].add((v.line, v.snippet, v.detail))
    counts = Counter({vtype: len(evidence) for vtype, evidence in seen.items()})
    applied = []
    for vtype, rule in rubric.penalties.items():
        count = counts.get(vtype, 0)
        if count == 0:
            continue
        amount = rule.penalty * (count if rule.per_occurrence else 1)
        if rule.max_penalty is not None:
            amount = min(amount, rule.max_penalty)
        applied.append(AppliedPenalty(violation=vtype, count=count, penalty=amount))
    return applied


def group_key(reward: Reward, prompt_key: str | None = None) -> str:
    """Return the group a reward is normalized in: its group_id, else its prompt."""
    if reward.group_id is not None:
        return f"group:{reward.group_id}"
    if prompt_key is not None:
        return f"prompt:{prompt_key}"
    return f"sample:{reward.id}"


def normalize_values(
    values: Sequence[float | None], groups: Sequence[Hashable], method: str
) -> list[float | None]:
    """Normalize values within groups; ``None`` stays ``None`` and is not counted.

    ``group_z``: (v - mean) / std with the population std; ``group_rank``: the
    average rank scaled to [-1, 1]. A group with one scored member, or whose
    scored members are all equal, gets 0.0 for each: it carries no comparative
    signal, and 0.0 (not NaN) keeps a GRPO advantage finite.
    """
    if len(values) != len(groups):
        raise ValueError(f"{len(values)} values but {len(groups)} group keys")
    if method == "none":
        return list(values)
    if method not in ("group_z", "group_rank"):
        raise ValueError(f"unknown normalization {method!r}")
    members: dict[Hashable, list[int]] = defaultdict(list)
    for i, (value, group) in enumerate(zip(values, groups, strict=True)):
        if value is not None:
            members[group].append(i)
    out: list[float | None] = list(values)
    for indices in members.values():
        scored = [float(values[i]) for i in indices]  # type: ignore[arg-type]
        normalized = group_zscores(scored) if method == "group_z" else _ranks(scored)
        for i, v in zip(indices, normalized, strict=True):
            out[i] = v
    return out


def _ranks(values: list[float]) -> list[float]:
    n = len(values)
    if n < 2 or max(values) == min(values):
        return [0.0] * n
    # Average ranks for ties, from 0 to n - 1, scaled to [-1, 1].
    # Imported here: scipy is slow to import, and only group_rank needs it.
    from scipy.stats import rankdata  # type: ignore[import-untyped]

    return [2.0 * (r - 1.0) / (n - 1) - 1.0 for r in rankdata(values, method="average").tolist()]


def normalize_rewards(
    rewards: Sequence[Reward], method: str, prompt_keys: Sequence[str | None] | None = None
) -> list[Reward]:
    """Normalize a batch of rewards within their groups (see :func:`normalize_values`).

    Samples without a ``group_id`` are grouped by their prompt when
    ``prompt_keys`` is given (GRPO groups share a prompt), else each stands alone.
    """
    if method == "none":
        return list(rewards)
    keys = prompt_keys if prompt_keys is not None else [None] * len(rewards)
    groups = [group_key(r, k) for r, k in zip(rewards, keys, strict=True)]
    sizes = Counter(g for g, r in zip(groups, rewards, strict=True) if r.reward is not None)
    # The values the rubric made, clipped (``raw_reward`` is before the clip).
    normalized = normalize_values([r.reward for r in rewards], groups, method)
    out = []
    for reward, group, value in zip(rewards, groups, normalized, strict=True):
        if reward.reward is None:
            out.append(reward)
            continue
        flags = [*reward.flags, f"normalized:{method}"]
        if sizes[group] < 2:
            flags.append("singleton_group")
        out.append(reward.model_copy(update={"reward": value, "flags": tuple(flags)}))
    return out
