"""What a grader's config accepts: each key with its type and default, for ``rubric graders -v``.

Read from the grader's own pydantic model (``Grader.config_model``), the same one
that validates a rubric's ``config:``, so the listing cannot drift from what the
loader accepts.
"""

from __future__ import annotations

import json
import re
import types
import typing
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel
from pydantic_core import PydanticUndefined, to_jsonable_python

__all__ = ["ConfigKey", "config_keys"]


@dataclass(frozen=True, slots=True)
class ConfigKey:
    """One key of a grader's config."""

    name: str
    type: str
    default: str
    description: str

    def line(self) -> str:
        """Render as ``name: type = default  description``."""
        text = f"{self.name}: {self.type} = {self.default}"
        return f"{text}  # {self.description}" if self.description else text


def _type_name(annotation: Any) -> str:
    """Name a type as a rubric author reads it: ``int | None``, ``Literal['a', 'b']``."""
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        return _type_name(typing.get_args(annotation)[0])
    if origin in (typing.Union, types.UnionType):
        return " | ".join(_type_name(a) for a in typing.get_args(annotation))
    if origin is typing.Literal:
        return "Literal[" + ", ".join(repr(a) for a in typing.get_args(annotation)) + "]"
    if origin is not None:
        args = ", ".join(_type_name(a) for a in typing.get_args(annotation))
        return f"{getattr(origin, '__name__', str(origin))}[{args}]"
    if annotation is type(None):
        return "None"
    if isinstance(annotation, type):
        return annotation.__name__
    # Anything else (a ForwardRef, a TypeVar): its repr without the module paths.
    return re.sub(r"\b[\w.]+\.(\w+)", r"\1", str(annotation))


def _default(field: Any) -> str:
    if field.default is PydanticUndefined and field.default_factory is None:
        return "(required)"
    value = field.default if field.default_factory is None else field.default_factory()
    return json.dumps(to_jsonable_python(value), sort_keys=True)


def config_keys(model: type[BaseModel]) -> list[ConfigKey]:
    """Return every key of a config model, in declaration order, with type and default."""
    return [
        ConfigKey(
            name=field.alias or name,
            type=_type_name(field.annotation),
            default=_default(field),
            description=(field.description or "").strip(),
        )
        for name, field in model.model_fields.items()
        if not field.deprecated  # a renamed key's former name: read, never to be written
    ]
