"""The generated reference names every CLI flag and every API route, and builds strictly."""

from __future__ import annotations

import re

import pytest

from arbiter import reference_docs


@pytest.fixture(scope="module")
def cli_page() -> str:
    return reference_docs.cli_page()


def test_every_command_option_and_argument_is_in_the_cli_reference(cli_page: str) -> None:
    commands = reference_docs.cli_parameters()
    assert len(commands) > 20, sorted(commands)
    missing = []
    for path, params in commands.items():
        # The command's own section, from its heading to the next command's.
        start = cli_page.find(f"`{path}` {{#")
        if start < 0:
            missing.append(path)
            continue
        end = cli_page.find("\n#", start + 1)
        section = cli_page[start : end if end > 0 else None]
        for param in params:
            if param.param_type_name == "option":
                names = [*param.opts, *param.secondary_opts]
            else:
                names = [param.metavar or param.name.upper()]
            missing += [f"{path} {n}" for n in names if f"`{n}`" not in section]
    assert not missing, missing


def test_every_route_of_the_openapi_document_is_in_the_api_reference() -> None:
    document = reference_docs.openapi_document()
    page = reference_docs.api_page()
    routes = [(m.upper(), p) for p, item in document["paths"].items() for m in item]
    assert len(routes) > 30
    missing = [f"{m} {p}" for m, p in routes if f"### `{m} {p}`" not in page]
    assert not missing, missing
    for schema in document["components"]["schemas"]:
        assert f"### `{schema}`" in page, schema


def test_every_failure_kind_violation_type_and_grader_is_in_the_reference() -> None:
    from arbiter.graders.registry import default_registry
    from arbiter.graders.types import FailureKind, ViolationType

    failures = reference_docs.failures_page()
    for member in [*FailureKind, *ViolationType]:
        assert re.search(rf"^\| `{member.value}` \|", failures, re.M), member
    graders = reference_docs.graders_page()
    registry = default_registry()
    try:
        for grader in registry:
            assert f"## `{grader.name}`" in graders, grader.name
    finally:
        registry.close()


def test_the_rubric_and_models_references_name_every_top_level_key() -> None:
    from arbiter.rubrics.json_schema import rubric_json_schema
    from arbiter.rubrics.models_file import models_json_schema

    for page, schema in (
        (reference_docs.rubric_page(), rubric_json_schema()),
        (reference_docs.models_page(), models_json_schema()),
    ):
        for key in schema["properties"]:
            assert f"| `{key}` |" in page, key


def test_the_site_names_every_generated_page() -> None:
    from pathlib import Path

    nav = (Path(__file__).resolve().parents[2] / "mkdocs.yml").read_text(encoding="utf-8")
    for uri in reference_docs.PAGES:
        assert f": {uri}\n" in nav, uri
