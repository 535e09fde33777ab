"""JSON Schema of rubric files, for editors (yaml-language-server) and other tools.

The schema is draft-07 (the dialect yaml-language-server understands best).
Each component's ``config`` is typed by its grader: an ``if grader == X then
config is X's config`` clause per registered grader, so an editor completes and
checks grader configs as well as the rubric's own keys.
"""

from __future__ import annotations

from typing import Any

from pydantic.json_schema import models_json_schema

from arbiter.graders.registry import GraderRegistry, default_registry
from arbiter.rubrics.schema import ComponentSpec, RubricSpec

__all__ = ["rubric_json_schema"]

_REF = "#/definitions/{model}"


def rubric_json_schema(registry: GraderRegistry | None = None) -> dict[str, Any]:
    """Return the JSON Schema of rubric files for the graders in ``registry``."""
    registry = registry or default_registry()
    graders = list(registry)
    models = [(RubricSpec, "validation"), *((g.config_model, "validation") for g in graders)]
    refs, schema = models_json_schema(models, ref_template=_REF)  # type: ignore[arg-type]
    definitions: dict[str, Any] = schema.pop("$defs")

    component_name = ComponentSpec.__name__
    component = definitions[component_name]
    component["properties"]["grader"]["enum"] = [g.name for g in graders]
    component["allOf"] = [
        {
            "if": {"properties": {"grader": {"const": g.name}}, "required": ["grader"]},
            "then": {"properties": {"config": refs[(g.config_model, "validation")]}},
        }
        for g in graders
    ]
    for g in graders:
        definitions[refs[(g.config_model, "validation")]["$ref"].rsplit("/", 1)[-1]].setdefault(
            "description", f"Config of the {g.name!r} grader (version {g.version}). {g.description}"
        )
    root = definitions.pop(RubricSpec.__name__)
    document = {
        "$schema": "http://json-schema.org/draft-07/schema#",
        **root,
        "title": "Arbiter rubric",
        "definitions": definitions,
    }
    return _draft7(document)  # type: ignore[no-any-return]


def _draft7(node: Any) -> Any:
    """Rewrite the few 2020-12 keywords pydantic emits into their draft-07 spelling."""
    if isinstance(node, list):
        return [_draft7(item) for item in node]
    if not isinstance(node, dict):
        return node
    out = {key: _draft7(value) for key, value in node.items()}
    if "prefixItems" in out:
        # A fixed-length tuple: draft-07 says this with an items array.
        out["items"] = out.pop("prefixItems")
        out["additionalItems"] = False
    return out
