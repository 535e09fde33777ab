"""Rules keyed by qualified name, and the matcher every family shares.

A rule either names a function or attribute (``sys.exit``: flagged where it is
used, through any alias) or a whole module (``socket``: flagged where it is
imported, statically or through ``__import__``/``importlib``; a use of a module
nobody imported, as in ``sys.modules["socket"]``, is flagged where it is used).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from arbiter.graders.detectors._context import CodeContext, Reference
from arbiter.graders.types import Violation, ViolationType

__all__ = ["NameRule", "match_references", "match_rule"]


@dataclass(frozen=True, slots=True)
class NameRule:
    """What using one qualified name means."""

    type: ViolationType
    why: str
    whole_module: bool = False


def match_rule(qualname: str, rules: Mapping[str, NameRule]) -> tuple[str, NameRule] | None:
    """Return the longest rule key that is ``qualname`` or a dotted prefix of it."""
    parts = qualname.split(".")
    for end in range(len(parts), 0, -1):
        key = ".".join(parts[:end])
        rule = rules.get(key)
        if rule is not None:
            return key, rule
    return None


def _imported(ctx: CodeContext, module: str) -> bool:
    prefix = module + "."
    return any(m == module or m.startswith(prefix) for m in ctx.resolver.imported_modules)


def match_references(ctx: CodeContext, rules: Mapping[str, NameRule]) -> Iterator[Violation]:
    """Yield a violation for each reference the rules flag."""
    for ref in ctx.references:
        found = match_rule(ref.qualname, rules)
        if found is None:
            continue
        key, rule = found
        if _flagged(ctx, ref, key, rule):
            yield ctx.violation(rule.type, ref.node, f"{_verb(ref)} {ref.qualname}: {rule.why}")


def _flagged(ctx: CodeContext, ref: Reference, key: str, rule: NameRule) -> bool:
    if rule.whole_module:
        if ref.usage in ("import", "dynamic_import"):
            return True
        # A use of the module is evidence only when no import line was flagged.
        return ref.usage == "load" and not _imported(ctx, key)
    return ref.usage in ("load", "dynamic_import")


def _verb(ref: Reference) -> str:
    return {"import": "imports", "dynamic_import": "imports"}.get(ref.usage, "uses")
