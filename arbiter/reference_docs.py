"""The documentation site's reference pages, generated from the code at every build.

One module, one job: the reference pages. Each page renders one source of truth, and
they share one way of writing tables, anchors and links so that the strict build can
check them.

Each page is rendered from what the program itself reads, never copied by hand:
the CLI from the typer app's click command tree, the HTTP API from the app's
OpenAPI document, the service's settings from their model, the rubric and
models-file keys from their JSON Schemas, the graders from the registry and
their config models, failure kinds and violation types from their enums.
``docs/hooks.py`` adds the pages to the site when ``make docs`` builds it; none
is committed. ``python -m arbiter.reference_docs -o DIR`` writes them to a
folder, to read them without building the site.
"""

from __future__ import annotations

import argparse
import ast
import inspect
import re
import tempfile
import textwrap
import typing
from collections.abc import Callable, Iterator
from enum import StrEnum
from pathlib import Path
from typing import Any

from arbiter.graders.sandbox.syntax import parse_module

__all__ = [
    "PAGES",
    "api_page",
    "cli_page",
    "cli_parameters",
    "failures_page",
    "graders_page",
    "models_page",
    "openapi_document",
    "rubric_page",
    "settings_page",
]

_GENERATED = (
    "<!-- Generated at build time by arbiter/reference_docs.py from {source}; "
    "edit the code, not this page. -->"
)


# -- markdown helpers ---------------------------------------------------------------


def _plain(text: str | None) -> str:
    """Text from a docstring or a description: reST's ``code`` as `code`, HTML escaped."""
    if not text:
        return ""
    text = re.sub(r":[a-z:]+:`~?([^`]+)`", r"`\1`", text)
    text = re.sub(r"``([^`]+)``", r"`\1`", text)
    # An angle bracket would open an HTML tag; inside a code span it is shown as it is.
    parts = re.split(r"(`[^`]*`)", text)
    return "".join(p if p.startswith("`") else p.replace("<", "&lt;") for p in parts)


def _cell(text: str | None) -> str:
    """A table cell: one line, its pipes escaped."""
    return " ".join(_plain(text).split()).replace("|", "\\|")


def _code(text: str) -> str:
    """A code span, whatever backticks ``text`` holds (a pipe in it never splits a cell)."""
    return f"`` {text} ``" if "`" in text else f"`{text}`"


def _paragraphs(text: str | None) -> list[str]:
    """A docstring as markdown paragraphs (a block click keeps as it is stays so)."""
    out: list[str] = []
    for block in textwrap.dedent(_plain(text)).strip().split("\n\n"):
        if block.startswith("\b"):
            out += ["```text", block.lstrip("\b\n"), "```", ""]
        elif block.strip():
            out += [" ".join(block.split()), ""]
    return out


def _anchor(*parts: str) -> str:
    """An explicit heading id, stable whatever the heading's text."""
    return re.sub(r"[^a-z0-9]+", "-", "-".join(parts).lower()).strip("-")


# -- the CLI ------------------------------------------------------------------------


# typer builds its commands on a click of its own (``typer._click``), so the tree is
# walked by what click's objects do rather than by the installed click's classes.


def _commands(command: Any, ctx: Any) -> Iterator[tuple[Any, Any]]:
    """Every command of the tree, depth first, each with its own context."""
    yield command, ctx
    if hasattr(command, "list_commands"):
        for name in command.list_commands(ctx):
            sub = command.get_command(ctx, name)
            if sub is not None:
                child = sub.context_class(sub, info_name=name, parent=ctx)
                yield from _commands(sub, child)


def _cli_tree() -> list[tuple[Any, Any]]:
    """The ``arbiter`` command and every command below it, as click objects with contexts."""
    import typer.main

    from arbiter.cli import app

    root = typer.main.get_command(app)
    return list(_commands(root, root.context_class(root, info_name="arbiter")))


def cli_parameters() -> dict[str, list[Any]]:
    """Return every command's path (``arbiter rubric show``) and its parameters, help left out.

    A parameter is click's: ``param_type_name`` is ``option`` or ``argument``; an
    option's names are ``opts`` and ``secondary_opts``.
    """
    out: dict[str, list[Any]] = {}
    for command, ctx in _cli_tree():
        help_option = command.get_help_option(ctx)
        out[ctx.command_path] = [
            p for p in command.get_params(ctx) if help_option is None or p.name != help_option.name
        ]
    return out


def _value(param: Any, ctx: Any) -> str:
    display = getattr(param, "display_type_rich", None)  # the CLI's own value names
    label = display(ctx) if callable(display) else param.make_metavar(ctx)
    return _code(label) if label else ""


def _default(param: Any) -> str:
    if param.required:
        return "required"
    default = param.default
    if callable(default) or default is None or default == () or default == []:
        return ""
    if isinstance(default, bool):
        return (
            _code(str(default).lower()) if not getattr(param, "is_flag", False) or default else ""
        )
    if isinstance(default, list | tuple):
        return _code(" ".join(str(d) for d in default))
    return _code(str(default))


def _usage(path: str, command: Any, params: list[Any]) -> str:
    """The command's synopsis: its options, then each argument as it is given."""
    pieces = [path, "[OPTIONS]"] if any(p.param_type_name == "option" for p in params) else [path]
    for arg in (p for p in params if p.param_type_name == "argument"):
        if arg.metavar:  # says itself whether it is optional or repeated
            pieces.append(arg.metavar)
            continue
        name = (arg.name or "").upper() + ("..." if arg.nargs == -1 else "")
        pieces.append(name if arg.required else f"[{name}]")
    if hasattr(command, "list_commands"):
        pieces.append("COMMAND [ARGS]...")
    return " ".join(pieces)


def cli_page() -> str:
    """Return the CLI's reference: every command, its help, each option and argument."""
    tree = _cli_tree()
    lines = [
        "# The `arbiter` command",
        "",
        _GENERATED.format(source="the typer app in arbiter/cli.py"),
        "",
        "Every command of `arbiter`, with its help, and each of its arguments and options "
        "with its value, default and help, as `arbiter COMMAND --help` prints them. Every "
        "command also takes `--help`. The service's settings, which `arbiter serve` reads "
        "from the environment, are listed in [Settings](settings.md).",
        "",
        "| command | what it does |",
        "| --- | --- |",
    ]
    for command, ctx in tree[1:]:
        anchor = _anchor(ctx.command_path)
        lines.append(
            f"| [`{ctx.command_path}`](#{anchor}) | {_cell(command.get_short_help_str(200))} |"
        )
    for command, ctx in tree:
        depth = ctx.command_path.count(" ")
        heading = "#" * min(depth + 1, 3) if depth else "##"
        lines += ["", f"{heading} `{ctx.command_path}` {{#{_anchor(ctx.command_path)}}}", ""]
        lines += _paragraphs(command.help)
        params = cli_parameters()[ctx.command_path]
        lines += ["```text", _usage(ctx.command_path, command, params), "```", ""]
        arguments = [p for p in params if p.param_type_name == "argument"]
        options = [p for p in params if p.param_type_name == "option"]
        if arguments:
            lines += ["| argument | value | | help |", "| --- | --- | --- | --- |"]
            for arg in arguments:
                name = arg.metavar or (arg.name or "").upper()
                lines.append(
                    f"| {_code(name)} | {_value(arg, ctx)} | {_default(arg)} "
                    f"| {_cell(getattr(arg, 'help', ''))} |"
                )
            lines.append("")
        if options:
            lines += ["| option | value | default | help |", "| --- | --- | --- | --- |"]
            for opt in options:
                names = ", ".join(_code(o) for o in [*opt.opts, *opt.secondary_opts])
                help_text = _cell(opt.help)
                if opt.envvar:
                    envvars = [opt.envvar] if isinstance(opt.envvar, str) else opt.envvar
                    help_text += " (environment: " + ", ".join(_code(e) for e in envvars) + ")"
                if opt.hidden:
                    help_text += " (hidden from `--help`)"
                lines.append(f"| {names} | {_value(opt, ctx)} | {_default(opt)} | {help_text} |")
            lines.append("")
        if command.epilog:
            lines += _paragraphs(command.epilog)
    return "\n".join(lines).rstrip() + "\n"


# -- the service's settings ----------------------------------------------------------


def settings_page() -> str:
    """Return every setting the service reads: its variable, default and description."""
    from arbiter.api.settings import Settings

    prefix = Settings.model_config.get("env_prefix", "")
    lines = [
        "# Settings",
        "",
        _GENERATED.format(source="the Settings model in api/settings.py"),
        "",
        "`arbiter serve` and each of its workers read these from the environment; an option "
        "given to `arbiter serve` wins over its variable. A list is comma-separated (rubric "
        "folders colon-separated, like `PATH`).",
        "",
        "| variable | default | values | description |",
        "| --- | --- | --- | --- |",
    ]
    for name, field in Settings.model_fields.items():
        default = field.get_default(call_default_factory=True)
        if default is None or default == []:
            shown = ""
        elif isinstance(default, bool):
            shown = _code(str(default).lower())
        else:
            shown = _code(str(default))
        values = ""
        if typing.get_origin(field.annotation) is typing.Literal:
            values = " \\| ".join(_code(str(a)) for a in typing.get_args(field.annotation))
        lines.append(
            f"| `{prefix}{name.upper()}` | {shown} | {values} | {_cell(field.description)} |"
        )
    return "\n".join(lines) + "\n"


# -- the HTTP API -------------------------------------------------------------------


def _app() -> Any:
    """The service's app as ``arbiter serve`` builds it, over a throw-away SQLite store."""
    from arbiter.api.app import create_app
    from arbiter.api.settings import Settings

    folder = tempfile.mkdtemp(prefix="arbiter-reference-")
    return create_app(Settings(database_url=f"sqlite:///{folder}/reference.db"))


def openapi_document() -> dict[str, Any]:
    """Return the service's OpenAPI document."""
    document: dict[str, Any] = _app().openapi()
    return document


def _routes(app: Any) -> list[tuple[str, frozenset[str], Any, Any]]:
    """Every route of ``app``, flat: its full path, methods, route object and endpoint.

    Recent FastAPI releases keep an included router as one entry of ``app.routes``;
    ``iter_route_contexts`` yields its routes with their prefixes, as the OpenAPI
    document does. Older releases keep ``app.routes`` flat already.
    """
    from fastapi import routing

    iterate = getattr(routing, "iter_route_contexts", None)
    out: list[tuple[str, frozenset[str], Any, Any]] = []
    if iterate is None:
        for route in app.routes:
            path = getattr(route, "path_format", None) or getattr(route, "path", "")
            methods = frozenset(getattr(route, "methods", None) or ())
            out.append((str(path), methods, route, getattr(route, "endpoint", None)))
        return out
    for context in iterate(app.routes):
        route = context.original_route
        methods = frozenset(getattr(route, "methods", None) or ())
        path = context.path_format or getattr(route, "path", "")
        out.append((str(path), methods, route, getattr(route, "endpoint", None)))
    return out


def _who(route: Any, endpoint: Any) -> str:
    """Which key a route needs: read from its dependencies and its ``caller.require(...)``.

    A role checked further down (in the grading pipeline, say) is not seen here:
    such a route reads "a key", and its 403 response says which role it wants.
    """
    from arbiter.api.deps import get_principal

    def needs_key(dependant: Any) -> bool:
        return any(d.call is get_principal or needs_key(d) for d in dependant.dependencies)

    if not needs_key(route.dependant):
        return "no key"
    try:
        tree = parse_module(textwrap.dedent(inspect.getsource(endpoint)))
    except (OSError, TypeError, SyntaxError):
        return "a key"
    roles: list[str] = []
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "require"
        ):
            roles += [
                a.value
                for a in node.args
                if isinstance(a, ast.Constant) and isinstance(a.value, str)
            ]
    if not roles:
        return "a key"
    named = " or ".join(f"`{r}`" for r in dict.fromkeys(roles))
    return f"{named} key" + ("" if "admin" in roles else " (or `admin`)")


def _schema_type(schema: dict[str, Any], link: Callable[[str], str]) -> str:
    """A JSON Schema's type as a reader reads it, its named schemas linked."""
    if "$ref" in schema:
        name = schema["$ref"].rsplit("/", 1)[-1]
        return link(name)
    if "const" in schema:
        return _code(repr(schema["const"]).replace("'", '"'))
    if "enum" in schema:
        return " \\| ".join(_code(str(v)) for v in schema["enum"])
    for key in ("anyOf", "oneOf", "allOf"):
        if key in schema:
            return " \\| ".join(_schema_type(s, link) for s in schema[key])
    kind = schema.get("type")
    if isinstance(kind, list):
        return " \\| ".join(_schema_type({**schema, "type": k}, link) for k in kind)
    if kind == "array":
        items = schema.get("items")
        if isinstance(items, list):
            return "[" + ", ".join(_schema_type(i, link) for i in items) + "]"
        return f"list of {_schema_type(items, link)}" if items else "list"
    if kind == "object":
        values = schema.get("additionalProperties")
        patterns = schema.get("patternProperties")
        if isinstance(values, dict) and values:
            return f"map of {_schema_type(values, link)}"
        if isinstance(patterns, dict) and patterns:
            (pattern, values), *_ = patterns.items()
            return f"map (keys {_code(pattern)}) of {_schema_type(values, link)}"
        return "object"
    if kind == "null":
        return "null"
    return str(kind) if kind else "any"


def _properties(
    schema: dict[str, Any], link: Callable[[str], str], *, first: str = "field"
) -> list[str]:
    properties: dict[str, Any] = schema.get("properties", {})
    if not properties:
        return []
    required = set(schema.get("required", ()))
    out = [f"| {first} | type | | description |", "| --- | --- | --- | --- |"]
    for name, prop in properties.items():
        if name in required:
            state = "required"
        elif "default" in prop:
            state = "default " + _code(_json_text(prop["default"]))
        else:
            state = ""
        description = _cell(prop.get("description", ""))
        if prop.get("deprecated"):
            description = ("deprecated. " + description).strip()
        out.append(f"| `{name}` | {_schema_type(prop, link)} | {state} | {description} |")
    return out


def _json_text(value: Any) -> str:
    import json

    return json.dumps(value, ensure_ascii=False)


def api_page() -> str:
    """Return the HTTP API's reference: every route of the OpenAPI document, and its schemas."""
    app = _app()
    document: dict[str, Any] = app.openapi()
    schemas: dict[str, Any] = document.get("components", {}).get("schemas", {})

    def link(name: str) -> str:
        return f"[`{name}`](#{_anchor('schema', name)})"

    who = {
        (method, path): _who(route, endpoint)
        for path, methods, route, endpoint in _routes(app)
        if hasattr(route, "dependant")
        for method in methods
    }
    lines = [
        "# HTTP API",
        "",
        _GENERATED.format(source="the service's OpenAPI document"),
        "",
        _plain(document["info"].get("description", "")),
        "",
        f"Version {document['info']['version']}. A running service serves the same document at "
        "`/openapi.json`, and renders it at `/docs` (Swagger UI) and `/redoc`. A key is sent as "
        "`Authorization: Bearer KEY`, `X-API-Key: KEY`, or as the password of HTTP Basic; an "
        "`admin` key may do what any role may. Every error is `{code, message, errors?}`.",
        "",
        "| method | path | key | summary |",
        "| --- | --- | --- | --- |",
    ]
    operations: list[tuple[str, str, dict[str, Any]]] = [
        (method.upper(), path, operation)
        for path, item in document["paths"].items()
        for method, operation in item.items()
    ]
    for method, path, operation in operations:
        lines.append(
            f"| {method} | [`{path}`](#{_anchor(method, path)}) | {who.get((method, path), '')} "
            f"| {_cell(operation.get('summary'))} |"
        )
    lines += ["", "## Routes"]
    for method, path, operation in operations:
        lines += ["", f"### `{method} {path}` {{#{_anchor(method, path)}}}", ""]
        lines += [f"**{_cell(operation.get('summary'))}**: {who.get((method, path), '')}.", ""]
        lines += _paragraphs(operation.get("description"))
        parameters = operation.get("parameters", [])
        if parameters:
            lines += [
                "| parameter | in | type | | description |",
                "| --- | --- | --- | --- | --- |",
            ]
            for p in parameters:
                state = "required" if p.get("required") else ""
                lines.append(
                    f"| `{p['name']}` | {p['in']} | {_schema_type(p.get('schema', {}), link)} "
                    f"| {state} | {_cell(p.get('description', ''))} |"
                )
            lines.append("")
        body = operation.get("requestBody")
        if body:
            for media, content in body.get("content", {}).items():
                shown = _schema_type(content.get("schema", {}), link)
                required = " (required)" if body.get("required") else ""
                lines += [f"Request body{required}: `{media}`, {shown}.", ""]
        responses = operation.get("responses", {})
        if responses:
            lines += ["| status | description | body |", "| --- | --- | --- |"]
            for status, response in responses.items():
                shown = ", ".join(
                    f"`{media}` {_schema_type(content.get('schema', {}), link)}".rstrip()
                    for media, content in response.get("content", {}).items()
                )
                lines.append(f"| {status} | {_cell(response.get('description'))} | {shown} |")
            lines.append("")
    outside = _routes_outside_schema(app)
    if outside:
        lines += [
            "## Pages and files",
            "",
            "Served beside the API, outside its OpenAPI document:",
            "",
            "| method | path | key | what |",
            "| --- | --- | --- | --- |",
            *outside,
        ]
    lines += ["", "## Schemas"]
    for name, schema in schemas.items():
        lines += ["", f"### `{name}` {{#{_anchor('schema', name)}}}", ""]
        if schema.get("description"):
            lines += [_cell(schema["description"]), ""]
        table = _properties(schema, link)
        if table:
            lines += [*table, ""]
        elif "properties" not in schema:
            lines += [f"Type: {_schema_type(schema, link)}.", ""]
    return "\n".join(lines).rstrip() + "\n"


def _routes_outside_schema(app: Any) -> list[str]:
    rows = []
    for path, methods, route, endpoint in _routes(app):
        if getattr(route, "include_in_schema", True) and endpoint is not None:
            continue
        shown = ", ".join(sorted(methods - {"HEAD"})) or "GET"
        doc = (inspect.getdoc(endpoint) or "").split("\n\n")[0] if endpoint else "files"
        who = _who(route, endpoint) if hasattr(route, "dependant") else "no key"
        rows.append(f"| {shown} | `{path}` | {who} | {_cell(doc)} |")
    return rows


# -- rubric and models files -----------------------------------------------------------


def _schema_page(
    title: str,
    intro: str,
    source: str,
    schema: dict[str, Any],
    elsewhere: dict[str, str],
) -> str:
    definitions: dict[str, Any] = schema.get("definitions", {})

    def link(name: str) -> str:
        if name in elsewhere:
            return f"[`{name}`]({elsewhere[name]})"
        return f"[`{name}`](#{_anchor(name)})"

    lines = [
        f"# {title}",
        "",
        _GENERATED.format(source=source),
        "",
        intro,
        "",
        "## The file",
        "",
        _cell(schema.get("description", "")),
        "",
        *_properties(schema, link, first="key"),
    ]
    for name, definition in definitions.items():
        if name in elsewhere:
            continue
        lines += ["", f"## `{name}` {{#{_anchor(name)}}}", ""]
        if definition.get("description"):
            lines += [_cell(definition["description"]), ""]
        table = _properties(definition, link, first="key")
        lines += table if table else [f"Type: {_schema_type(definition, link)}."]
    return "\n".join(lines).rstrip() + "\n"


def rubric_page() -> str:
    """Return every key of a rubric file, from the rubric JSON Schema."""
    from arbiter.graders.registry import default_registry
    from arbiter.rubrics.json_schema import rubric_json_schema

    registry = default_registry()
    try:
        configs = {
            g.config_model.__name__: f"graders.md#{_anchor(g.name)}"
            for g in registry
            if g.config_model.__name__ not in ("GraderConfig",)
        }
        schema = rubric_json_schema(registry)
    finally:
        registry.close()
    return _schema_page(
        "Rubric files",
        "Every key of a rubric file, from the JSON Schema that `arbiter rubric schema` prints "
        "(the repository keeps a copy in `rubric.schema.json`). A component's `config` is its "
        "grader's: see [Graders](graders.md). The schema and `arbiter rubric validate` agree: "
        "values are checked as JSON, strictly, and an unknown key is an error.",
        "rubrics/json_schema.py",
        schema,
        configs,
    )


def models_page() -> str:
    """Return every key of a models file, from its JSON Schema."""
    from arbiter.rubrics.models_file import models_json_schema

    return _schema_page(
        "Models files",
        "Every key of a models file, which declares the reward models and LLM judges that "
        "rubrics name, from the JSON Schema that `arbiter models schema` prints (the repository "
        "keeps a copy in `models.schema.json`). See "
        "[Declare models and judges](../how-to/models.md) for a complete file.",
        "rubrics/models_file.py",
        models_json_schema(),
        {},
    )


# -- graders -------------------------------------------------------------------------


def graders_page() -> str:
    """Return every built-in grader: version, what it measures, its config keys."""
    from arbiter.grader_configs import config_keys
    from arbiter.graders.executor import REMOTE_GRADERS
    from arbiter.graders.registry import default_registry
    from arbiter.monitoring.agreement import DEFAULT_PASS_THRESHOLD, PASS_THRESHOLDS

    lines = [
        "# Graders",
        "",
        _GENERATED.format(source="the grader registry and each grader's config model"),
        "",
        "The graders a rubric can name under `grader:`, with what each measures and every key "
        "of its `config:` (type, default, description), as `arbiter rubric graders -v` lists "
        "them. A grader's version moves whenever its scores can change; rewards, replays and "
        "drift streams record it. *Pass at* is the score at or above which a reviewer's verdict "
        "and the grader's are compared as a pass (the review page states it beside each "
        "component).",
        "",
        "| grader | version | pass at | on Ray | measures |",
        "| --- | --- | --- | --- | --- |",
    ]
    registry = default_registry()
    try:
        graders = sorted(registry, key=lambda g: g.name)
        for g in graders:
            threshold = PASS_THRESHOLDS.get(g.name, DEFAULT_PASS_THRESHOLD)
            remote = "yes" if g.name in REMOTE_GRADERS else ""
            lines.append(
                f"| [`{g.name}`](#{_anchor(g.name)}) | {g.version} | {threshold} | {remote} "
                f"| {_cell(g.description)} |"
            )
        lines += [
            "",
            f"A plugin's grader passes at {DEFAULT_PASS_THRESHOLD}. *On Ray*: the graders that "
            "run on a Ray cluster's actors when one is given; every other grader runs in the "
            "process that grades.",
        ]
        for g in graders:
            lines += ["", f"## `{g.name}` {{#{_anchor(g.name)}}}", ""]
            lines += [f"Version {g.version}: {_cell(g.description)}.", ""]
            doc = inspect.getdoc(g.config_model)
            if doc and g.config_model.__module__.startswith("arbiter."):
                lines += _paragraphs(doc)
            keys = config_keys(g.config_model)
            if keys:
                lines += ["| key | type | default | description |", "| --- | --- | --- | --- |"]
                for key in keys:
                    lines.append(
                        f"| `{key.name}` | {_code(key.type)} | {_code(key.default)} "
                        f"| {_cell(key.description)} |"
                    )
            else:
                lines.append("No config keys.")
    finally:
        registry.close()
    return "\n".join(lines).rstrip() + "\n"


# -- failure kinds and violation types ---------------------------------------------------


def _member_comments(enum: type[StrEnum]) -> dict[str, str]:
    """Each member's ``#:`` comment in the enum's source, by member value."""
    comments: dict[str, str] = {}
    pending: list[str] = []
    for line in inspect.getsource(enum).splitlines():
        stripped = line.strip()
        if stripped.startswith("#:"):
            pending.append(stripped[2:].strip())
            continue
        match = re.match(r'^[A-Z_][A-Z0-9_]*\s*=\s*"([^"]+)"', stripped)
        if match and pending:
            comments[match.group(1)] = " ".join(pending)
        pending = []
    return comments


def failures_page() -> str:
    """Return every failure kind (with whose it is) and every violation type."""
    from arbiter.graders.types import FailureKind, ViolationType, failure_owner

    owners = {
        "ours": "retried, and a reward that still meets it abstains whatever the rubric says",
        "candidate": "the candidate's own output: 0 with `fail_as_zero` (the default), else "
        "unscored for the rubric's `on_missing`, and never filled with its group's mean",
        "task": "its tests or gold cannot grade anyone: the reward abstains, no retry helps",
        "request": "the sample lacks what the grader reads, or the grader does not apply to "
        "it (`not_applicable` leaves the component out)",
    }
    failure_notes = _member_comments(FailureKind)
    violation_notes = _member_comments(ViolationType)
    lines = [
        "# Failures and violations",
        "",
        _GENERATED.format(source="the enums in graders/types.py"),
        "",
        "## Failure kinds",
        "",
        "A grader that cannot score returns no score and a typed failure "
        "(`GradeResult.failure.kind`, `details.failure_kind` where a failure was scored 0). "
        "Each kind is owed to exactly one party:",
        "",
        *(f"- **{owner}**: {what}." for owner, what in owners.items()),
        "",
        "| kind | whose | what it means |",
        "| --- | --- | --- |",
    ]
    for kind in FailureKind:
        lines.append(
            f"| `{kind.value}` | {failure_owner(kind)} | {_cell(failure_notes.get(kind.value))} |"
        )
    lines += [
        "",
        "## Violation types",
        "",
        "What the detectors and graders report as evidence, each with its line and snippet; "
        "a rubric's `penalties` name them (`{violation: TYPE, penalty: P}`).",
        "",
        "| type | what it means |",
        "| --- | --- |",
    ]
    for violation in ViolationType:
        lines.append(f"| `{violation.value}` | {_cell(violation_notes.get(violation.value))} |")
    return "\n".join(lines) + "\n"


#: Each generated page: its path in the site, and what renders it.
PAGES: dict[str, Callable[[], str]] = {
    "reference/cli.md": cli_page,
    "reference/api.md": api_page,
    "reference/settings.md": settings_page,
    "reference/rubric.md": rubric_page,
    "reference/models-file.md": models_page,
    "reference/graders.md": graders_page,
    "reference/failures.md": failures_page,
}


def main(argv: list[str] | None = None) -> None:
    """Write every generated page under a folder, as the site lays them out."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-o", "--output", type=Path, required=True, help="The folder to write.")
    args = parser.parse_args(argv)
    for uri, render in PAGES.items():
        path = args.output / uri
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(render(), encoding="utf-8")
        print(path)


if __name__ == "__main__":
    main()
