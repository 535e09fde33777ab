"""What rubric validation notices but does not refuse: a rubric that works, yet may surprise.

Three cautions, each pointing at the key a person would edit:

* **A config key by its former name** (``code_block`` for ``code_blocks``): still read,
  as the same setting.

* **Weights that do not sum to 1** (``weighted_sum``): the reward's range is then
  not [0, 1]; the caution gives the range the rubric's rewards can span, after its
  penalties and its clip. A clip that cuts a reward flags it ``clipped``.
* **A gate over a component some accepted samples leave out.** A grader that does
  not apply to a sample (bandit on C++, the answer grader on code) is left out of
  that sample's reward, and a gate reading it does not apply: ``hacks < 1`` guards
  nothing on a C++ task. Which samples a rubric takes comes from its ``accepts``
  (every sample without one), less those its routes take by kind; which a grader
  scores, from its ``task_kinds`` and ``languages``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator

from arbiter.graders.registry import GraderRegistry, UnknownGraderError
from arbiter.graders.types import LANGUAGES
from arbiter.rubrics.rubric import Rubric
from arbiter.rubrics.schema import TASK_KINDS, Accepts, PenaltySpec

__all__ = ["Caution", "rubric_cautions"]

#: A key path in the rubric document, and what to say there.
Caution = tuple[tuple[str | int, ...], str]

#: Every (task kind, program language) a sample can be: a Python kind is Python, a
#: test_program any language but Python, a task that grades no program has none.
_SAMPLES: tuple[tuple[str, str | None], ...] = (
    ("python_function", "python"),
    ("pytest", "python"),
    *(("stdin_stdout", language) for language in LANGUAGES),
    *(("test_program", language) for language in LANGUAGES if language != "python"),
    ("repository", "python"),
    ("none", "python"),
    ("answer", None),
    ("instructions", None),
    ("reasoning_gym", None),
)
assert {kind for kind, _ in _SAMPLES} == set(TASK_KINDS)


def rubric_cautions(rubric: Rubric, registry: GraderRegistry) -> list[Caution]:
    """Return the cautions for a compiled rubric, its routes' included (pure)."""
    # A sample a route takes by kind alone never reaches the top-level components.
    routed_kinds = {
        kind for route in rubric.routes if route.data_sources is None for kind in route.kinds or ()
    }
    top = [s for s in _accepted(rubric.spec.accepts) if s[0] not in routed_kinds]
    cautions = list(_body_cautions((), rubric, top, registry))
    for route in rubric.routes:
        taken = [s for s in _SAMPLES if route.kinds is None or s[0] in route.kinds]
        cautions.extend(_body_cautions(("routes", route.name), route.rubric, taken, registry))
    return cautions


def _accepted(accepts: Accepts | None) -> list[tuple[str, str | None]]:
    if accepts is None:
        return list(_SAMPLES)
    return [
        (kind, language)
        for kind, language in _SAMPLES
        if (accepts.kind is None or kind in accepts.kind)
        and (accepts.language is None or language in accepts.language)
    ]


def _body_cautions(
    at: tuple[str | int, ...],
    rubric: Rubric,
    samples: list[tuple[str, str | None]],
    registry: GraderRegistry,
) -> Iterator[Caution]:
    spec = rubric.spec
    for name, component in spec.components.items():
        try:
            renamed = registry.get(component.grader).config_model.renamed_keys
        except UnknownGraderError:
            continue
        for key in component.config:
            if key in renamed:
                yield (
                    (*at, "components", name, "config", key),
                    f"{key!r} is the former name of {renamed[key]!r} (the same setting); "
                    f"write {renamed[key]!r}",
                )
    if rubric.formula is None:
        total = math.fsum(rubric.weights.values())
        if not math.isclose(total, 1.0, rel_tol=0, abs_tol=1e-9):
            yield (*at, "components"), _weights_caution(total, spec.penalties, spec.clip)
    # Gates are compiled in order, one per gate of the spec.
    for i, gate in enumerate(rubric.gates):
        for name in (n for n in rubric.components if n in gate.condition.names):
            if rubric.components[name].required:
                continue  # without it the reward abstains: the gate never meets that case
            grader = rubric.components[name].grader
            left_out = _left_out(grader, samples, registry)
            if left_out:
                yield (
                    (*at, "gates", i, "when"),
                    f"gate {gate.spec.when!r} reads {name!r} ({grader}), which does not "
                    f"apply to {_describe(left_out)}: on those samples it is left out of the "
                    "reward and this gate does not apply. Declare what the rubric is for "
                    "with 'accepts' (others then abstain, saying so), or guard those "
                    "samples another way",
                )


def _weights_caution(
    total: float, penalties: list[PenaltySpec], clip: tuple[float, float] | None
) -> str:
    """Say what range rewards span when the weights sum to ``total`` (scores in [0, 1])."""
    most = 0.0
    for p in penalties:
        if p.per_occurrence and p.max_penalty is None:
            most = math.inf
            break
        most += p.max_penalty if p.per_occurrence and p.max_penalty is not None else p.penalty
    low, high = (-most if most else 0.0), total
    message = f"weights sum to {total:g}, not 1: the weighted sum spans [0, {total:g}]"
    if most:
        message += f", and penalties take up to {most:g} off it"
    if clip is not None:
        cut_low, cut_high = max(low, clip[0]), min(high, clip[1])
        message += f"; with clip [{clip[0]:g}, {clip[1]:g}]"
        message += f" rewards span [{cut_low:g}, {cut_high:g}]"
        if high > clip[1]:
            message += f" and any above {clip[1]:g} is cut to it (flagged 'clipped')"
    else:
        message += f"; rewards span [{low:g}, {high:g}] (no clip)"
    return message


def _left_out(
    grader: str, samples: Iterable[tuple[str, str | None]], registry: GraderRegistry
) -> list[tuple[str, str | None]]:
    try:
        cls = registry.get(grader)
    except UnknownGraderError:
        return []
    kinds, languages = cls.task_kinds, cls.languages
    return [
        (kind, language)
        for kind, language in samples
        if (kinds is not None and kind not in kinds)
        or (languages is not None and language not in languages)
    ]


def _describe(samples: list[tuple[str, str | None]]) -> str:
    """Name samples by kind, kinds with the same languages together."""
    languages: dict[str, list[str]] = {}
    for kind, language in samples:
        languages.setdefault(kind, [])
        if language is not None and kind not in ("none", "repository"):
            languages[kind].append(language)
    groups: dict[tuple[str, ...], list[str]] = {}
    for kind, langs in languages.items():
        groups.setdefault(tuple(langs), []).append(kind)
    parts = []
    for shared, kinds in groups.items():
        named = [k for k in kinds if k != "none"]
        if named:
            text = (", ".join(named[:-1]) + " and " if len(named) > 1 else "") + named[-1]
            text += " tasks"
            if shared:
                text += f" in {', '.join(shared)}"
            parts.append(text)
        if "none" in kinds:
            parts.append("samples without a task")
    return "; ".join(parts)
