"""Mutants: one token in one function, seeded, and the gold patch is its reverse diff (pure)."""

from __future__ import annotations

import ast

from arbiter.graders.repository.mutations import mutants, unified_diff
from arbiter.graders.repository.patch import apply_hunks, parse_patch

SOURCE = '''"""A module."""


def clamp(x, low, high):
    """Clamp x."""  # a comment that must survive
    if x < low and low <= high:
        return low
    return min(x, high) + 0


class Box:
    def size(self, items):
        return len(items) - 1 if not items else len(items)
'''


def test_each_mutant_changes_one_token_of_one_function() -> None:
    found = mutants("m.py", SOURCE, seed=1, per_function=10)
    assert {m.function for m in found} == {"clamp", "Box.size"}
    for m in found:
        assert ast.dump(ast.parse(m.mutated)) != ast.dump(ast.parse(SOURCE))
        assert "# a comment that must survive" in m.mutated
        changed = [
            a for a, b in zip(SOURCE.splitlines(), m.mutated.splitlines(), strict=True) if a != b
        ]
        assert len(changed) == 1, m.operator
    operators = {m.operator.split()[0] for m in found}
    assert {"compare", "boolean", "arithmetic", "constant", "drop"} <= operators


def test_the_seed_decides_the_order_and_nothing_else_does() -> None:
    a = [(m.function, m.operator) for m in mutants("m.py", SOURCE, seed=7)]
    b = [(m.function, m.operator) for m in mutants("m.py", SOURCE, seed=7)]
    c = [(m.function, m.operator) for m in mutants("m.py", SOURCE, seed=8, per_function=10)]
    assert a == b and len(c) >= len(a)


def test_the_reverse_diff_undoes_the_mutant() -> None:
    for m in mutants("pkg/m.py", SOURCE, seed=3):
        (f,) = parse_patch(unified_diff("pkg/m.py", m.mutated, m.original))
        assert apply_hunks(m.mutated, f.hunks) == SOURCE
