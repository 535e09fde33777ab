"""Request bodies parsed on the fast path, with FastAPI's errors and OpenAPI entry.

FastAPI decodes a declared body with the standard library's ``json`` and then
validates the objects. For the rewards endpoint (hundreds of samples of a few
kilobytes each) that decoding is a large share of the work outside grading,
and the samples would be serialized again later to be logged. :func:`parse_body`
decodes with orjson, validates the same way FastAPI would, and keeps the
decoded objects so the log can store each sample as it was sent.

The body is held to explicit limits before it is validated (:func:`check_limits`):
whatever passes here can be re-encoded, logged and stored. orjson alone refuses
lone surrogates, invalid UTF-8, NaN and infinities; the limits add nesting depth
and the 64-bit signed integer range (what the store and the encoder take).
"""

from __future__ import annotations

from typing import Any, TypeVar

import orjson
from fastapi.exceptions import RequestValidationError
from pydantic import BaseModel, ValidationError

__all__ = ["DOCUMENTED_BODIES", "MAX_DEPTH", "check_limits", "json_body_openapi", "parse_body"]

M = TypeVar("M", bound=BaseModel)

#: Containers inside containers, the body itself being level 1. orjson encodes
#: at most 254 levels; no request of ours needs more than a handful.
MAX_DEPTH = 32
INT_MIN, INT_MAX = -(2**63), 2**63 - 1

#: Every model a route documents with :func:`json_body_openapi`; the app's
#: OpenAPI builder adds their schemas, since FastAPI never saw them as bodies.
DOCUMENTED_BODIES: list[type[BaseModel]] = []


def parse_body(raw: bytes, model: type[M]) -> tuple[M, Any]:
    """Decode and validate a JSON body; return the model and the decoded JSON.

    Raises:
        RequestValidationError: as FastAPI raises it for a declared body
            (locations start with ``body``), so the 422 reads the same.
    """
    if not raw:
        raise RequestValidationError(
            [{"type": "missing", "loc": ("body",), "msg": "Field required", "input": None}]
        )
    try:
        data = orjson.loads(raw)
    except orjson.JSONDecodeError as e:
        raise _json_invalid(raw, e) from None
    problem = check_limits(data)
    if problem is not None:
        path, message = problem
        raise RequestValidationError(
            [{"type": "value_error", "loc": ("body", *path), "msg": message, "input": None}]
        )
    try:
        return model.model_validate(data), data
    except ValidationError as e:
        errors = e.errors(include_url=False)
        raise RequestValidationError(
            [{**err, "loc": ("body", *err["loc"])} for err in errors]
        ) from None


def _json_invalid(raw: bytes, error: orjson.JSONDecodeError) -> RequestValidationError:
    """Return the error FastAPI raises for a body it cannot decode, for ``raw``.

    The same ``json_invalid`` entry, located at a character offset of the document,
    and the document as the exception's ``body``: the app's handler turns the offset
    into a line and a column. Bytes that are not UTF-8 are located here, where the
    bytes are (orjson places them at the start of an empty document).
    """
    doc, pos, reason = error.doc, error.pos, error.msg
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError as bad:
        doc = raw.decode("utf-8", "replace")
        pos = len(raw[: bad.start].decode("utf-8"))
        reason = f"not UTF-8 (byte 0x{raw[bad.start]:02x})"
    return RequestValidationError(
        [
            {
                "type": "json_invalid",
                "loc": ("body", pos),
                "msg": "JSON decode error",
                "input": {},
                "ctx": {"error": reason},
            }
        ],
        body=doc,
    )


def check_limits(data: Any, max_depth: int = MAX_DEPTH) -> tuple[tuple[str | int, ...], str] | None:
    """Return the path and the problem of the first value over a limit, or ``None``.

    Walks in document order without recursion, so no input can exhaust the
    stack here; a stack of iterators, one per open container, keeps the path
    without building one for every value: the walk visits every value of
    every request, and only a value over a limit needs its path.
    """
    if type(data) is not dict and type(data) is not list:
        return _scalar_problem(data, ())
    if max_depth < 1:
        return (), f"nested deeper than {max_depth} levels"
    path: list[str | int] = []
    stack: list[Any] = [_entries(data)]
    while stack:
        for key, value in stack[-1]:
            kind = type(value)
            if kind is dict or kind is list:
                if len(stack) >= max_depth:
                    return (*path, key), f"nested deeper than {max_depth} levels"
                path.append(key)
                stack.append(_entries(value))
                break
            if kind is int and not INT_MIN <= value <= INT_MAX:
                return (*path, key), _INT_RANGE
        else:
            stack.pop()
            if path:
                path.pop()
    return None


_INT_RANGE = f"integer out of range [{INT_MIN}, {INT_MAX}]"


def _entries(container: dict[str, Any] | list[Any]) -> Any:
    return iter(container.items()) if type(container) is dict else enumerate(container)


def _scalar_problem(
    value: Any, path: tuple[str | int, ...]
) -> tuple[tuple[str | int, ...], str] | None:
    if type(value) is int and not INT_MIN <= value <= INT_MAX:
        return path, _INT_RANGE
    return None


def json_body_openapi(model: type[BaseModel]) -> dict[str, Any]:
    """Return a route's ``openapi_extra`` documenting ``model`` as its required JSON body.

    The app's OpenAPI builder (``arbiter.api.app``) adds the model's schema to the
    components, where this reference points.
    """
    if model not in DOCUMENTED_BODIES:
        DOCUMENTED_BODIES.append(model)
    return {
        "requestBody": {
            "required": True,
            "content": {
                "application/json": {"schema": {"$ref": f"#/components/schemas/{model.__name__}"}}
            },
        }
    }
