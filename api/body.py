"""Request bodies parsed on the fast path, with FastAPI's errors and OpenAPI entry.

FastAPI decodes a declared body with the standard library's ``json`` and then
validates the objects. For the rewards endpoint (hundreds of samples of a few
kilobytes each) that decoding was the largest single cost outside grading, and
the samples were serialized again later to be logged. :func:`parse_body`
decodes with orjson (falling back to ``json`` for what orjson refuses but the
standard library takes, such as integers beyond 64 bits, so what is accepted
does not change), validates the same way FastAPI would, and keeps the decoded
objects so the log can store each sample as it was sent.
"""

from __future__ import annotations

import json
from typing import Any, TypeVar

import orjson
from fastapi.exceptions import RequestValidationError
from pydantic import BaseModel, ValidationError

__all__ = ["DOCUMENTED_BODIES", "json_body_openapi", "parse_body"]

M = TypeVar("M", bound=BaseModel)

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
    except orjson.JSONDecodeError:
        try:
            data = json.loads(raw)
        except (json.JSONDecodeError, UnicodeDecodeError) as e:
            position = getattr(e, "pos", getattr(e, "start", 0))
            reason = getattr(e, "msg", getattr(e, "reason", str(e)))
            raise RequestValidationError(
                [
                    {
                        "type": "json_invalid",
                        "loc": ("body", position),
                        "msg": "JSON decode error",
                        "input": {},
                        "ctx": {"error": reason},
                    }
                ]
            ) from None
    try:
        return model.model_validate(data), data
    except ValidationError as e:
        errors = e.errors(include_url=False)
        raise RequestValidationError(
            [{**err, "loc": ("body", *err["loc"])} for err in errors]
        ) from None


def json_body_openapi(model: type[BaseModel]) -> dict[str, Any]:
    """Return a route's ``openapi_extra`` documenting ``model`` as its required JSON body.

    The app's OpenAPI builder (``api.app``) adds the model's schema to the
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
