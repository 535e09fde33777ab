"""The limits a request body is held to before it is validated (api.body.check_limits)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from arbiter.api.body import INT_MAX, INT_MIN, MAX_DEPTH, check_limits

JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=3)
    | st.integers(min_value=-(2**70), max_value=2**70),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=2), children, max_size=3)
    ),
    max_leaves=40,
)


def problems(value: Any, path: tuple[str | int, ...], max_depth: int) -> list[tuple[Any, ...]]:
    """Every place over a limit, in document order (the definition, written recursively)."""
    if isinstance(value, dict | list):
        if len(path) >= max_depth:
            return [path]
        items = value.items() if isinstance(value, dict) else enumerate(value)
        return [p for k, v in items for p in problems(v, (*path, k), max_depth)]
    if type(value) is int and not INT_MIN <= value <= INT_MAX:
        return [path]
    return []


def at(value: Any, path: tuple[str | int, ...]) -> Any:
    for key in path:
        value = value[key]
    return value


@settings(max_examples=400, deadline=None)
@given(data=JSON, max_depth=st.integers(min_value=1, max_value=4))
def test_the_first_problem_in_document_order_or_none(data: Any, max_depth: int) -> None:
    expected = problems(data, (), max_depth)
    found = check_limits(data, max_depth)
    if not expected:
        assert found is None
        return
    assert found is not None
    path, message = found
    assert path == expected[0]
    if isinstance(at(data, path), dict | list):
        assert message == f"nested deeper than {max_depth} levels"
    else:
        assert "integer out of range" in message


def nested(depth: int) -> Any:
    value: Any = 1
    for level in range(depth):
        value = {"a": value} if level % 2 else [value]
    return value


def test_depth_counts_the_body_as_level_one() -> None:
    assert check_limits(nested(MAX_DEPTH)) is None
    found = check_limits(nested(MAX_DEPTH + 1))
    assert found is not None and len(found[0]) == MAX_DEPTH


@pytest.mark.parametrize(
    ("body", "path"),
    [
        (2**63, ()),
        (
            {"samples": [{"id": "a"}, {"metrics": {"turns": -(2**63) - 1}}]},
            ("samples", 1, "metrics", "turns"),
        ),
        ([True, 1.5e300, "9" * 30, INT_MAX, INT_MIN, [INT_MAX + 1]], (5, 0)),
    ],
)
def test_integers_beyond_64_bits_are_found_where_they_are(body: Any, path: tuple[Any, ...]) -> None:
    found = check_limits(body)
    assert found is not None and found[0] == path


def test_a_million_level_body_is_refused_without_recursion() -> None:
    body: Any = []
    for _ in range(1_000_000):
        body = [body]
    found = check_limits(body)
    assert found is not None and len(found[0]) == MAX_DEPTH
