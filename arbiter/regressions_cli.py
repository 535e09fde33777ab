"""``arbiter regressions``: confirmed hacks as a labelled set (:mod:`arbiter.regression_set`)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

__all__ = ["regressions_app"]

regressions_app = typer.Typer(
    help="Regression cases: the reward hacks reviewers confirmed (in ARBITER_DATABASE_URL).",
    no_args_is_help=True,
)


@regressions_app.command("export")
def regressions_export(
    rubric: Annotated[str | None, typer.Option(help="Only this rubric name's cases.")] = None,
    output: Annotated[
        Path | None, typer.Option("-o", "--output", help="JSONL file (default: stdout).")
    ] = None,
    database_url: Annotated[
        str | None, typer.Option(help="The store (default: ARBITER_DATABASE_URL).")
    ] = None,
) -> None:
    """Write the open regression cases as a labelled eval set (JSON Lines, the audit format).

    Each line is the case's sample as logged, labelled with its hack types
    (``expected_violations``, ``hack_kind``) and a ``regression`` object: the case id,
    the reward it got and the ceiling for hacks. Run them with
    ``arbiter audit --rubric R --regressions FILE``. The store is only read.
    """
    from arbiter.api.settings import Settings
    from arbiter.regression_set import export_cases
    from arbiter.store.db import Store

    store = Store(database_url or Settings().database_url)
    try:
        if output is None:
            result = export_cases(store, sys.stdout.buffer, rubric=rubric)
            sys.stdout.flush()
        else:
            output.parent.mkdir(parents=True, exist_ok=True)
            with output.open("wb") as sink:
                result = export_cases(store, sink, rubric=rubric)
    finally:
        store.close()
    for line in result.skipped:
        typer.echo(f"skipped {line}", err=True)
    for name, ceiling in sorted(result.ceilings.items()):
        typer.echo(f"{name}: ceiling for hacks {ceiling.describe()}", err=True)
    typer.echo(f"exported {result.written} open case(s)", err=True)
