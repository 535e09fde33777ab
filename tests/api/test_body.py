"""Request bodies: the limits they are held to, and how a refused one is reported.

The limits (``api.body.check_limits``) apply before a body is validated; a real
server reports a body that is not JSON, or does not validate, by line and column
or by field, with what it found there as JSON.
"""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from arbiter.api.body import INT_MAX, INT_MIN, MAX_DEPTH, check_limits
from tests.api.conftest import Server

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


# -- what a refused body reports, over HTTP ------------------------------------------


def post(server: Server, path: str, body: bytes, role: str = "trainer") -> httpx.Response:
    with server.client(role) as http:
        return http.post(path, content=body, headers={"content-type": "application/json"})


def test_a_cut_off_body_names_line_column_and_what_was_expected(server: Server) -> None:
    # The rewards endpoint decodes its own body (orjson).
    response = post(server, "/v1/rewards", b'{"id": 1,')
    assert response.status_code == 422
    body = response.json()
    reason = "invalid JSON at line 1, column 10: unexpected end of data"
    assert body["code"] == "invalid_request"
    assert body["message"] == f"body: {reason}"
    (issue,) = body["errors"]
    assert issue == {
        "in": "body",
        "path": "",
        "line": 1,
        "column": 10,
        "message": reason,
        "found": json.dumps('{"id": 1,'),
    }
    assert json.loads(issue["found"]) == '{"id": 1,'


def test_a_declared_body_reports_json_errors_the_same_way(server: Server) -> None:
    # FastAPI decodes this one (the standard library's json): same shape, its own reason.
    text = '{\n  "rubric": "a",\n  oops\n}'
    response = post(server, "/v1/review/claim", text.encode(), role="reviewer")
    assert response.status_code == 422
    (issue,) = response.json()["errors"]
    assert (issue["in"], issue["path"], issue["line"], issue["column"]) == ("body", "", 3, 3)
    assert issue["message"] == (
        "invalid JSON at line 3, column 3: expecting property name enclosed in double quotes"
    )
    assert response.json()["message"] == f"body: {issue['message']}"
    # The text around the place, as a JSON string; the place itself is in it.
    assert "oops" in json.loads(issue["found"])


def test_a_body_that_is_not_utf8_says_where(server: Server) -> None:
    response = post(server, "/v1/rewards", b'{"rubric":\n "caf\xe9"}')
    assert response.status_code == 422
    (issue,) = response.json()["errors"]
    assert (issue["line"], issue["column"]) == (2, 6)
    assert issue["message"] == "invalid JSON at line 2, column 6: not UTF-8 (byte 0xe9)"


def test_found_is_the_offending_value_as_json(server: Server) -> None:
    long = "x" * 500
    with server.client() as http:
        missing = http.post(
            "/v1/rewards", json={"rubric": "efficiency-only", "samples": [{"id": "a"}]}
        )
        too_long = http.post("/v1/rewards", json={"rubric": "efficiency-only", "samples": long})
    (issue,) = missing.json()["errors"]
    assert issue["path"] == "samples.0.response"
    assert json.loads(issue["found"]) == {"id": "a"}
    (issue,) = too_long.json()["errors"]
    # Cut at 80 characters, the cut marked.
    assert issue["found"] == json.dumps(long)[:79] + "\u2026"
    # A lone surrogate (the standard library's json takes it) comes back escaped.
    lone = post(server, "/v1/review/claim", b'{"rubric": "\\udc80"}', role="reviewer")
    assert lone.status_code == 422
    (issue,) = lone.json()["errors"]
    assert issue["path"] == "rubric" and json.loads(issue["found"]) == "\udc80"
