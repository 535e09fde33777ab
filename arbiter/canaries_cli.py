"""``arbiter canaries``: canary tasks, impossible twins of a task set (:mod:`arbiter.canaries`)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

__all__ = ["canaries_app"]

canaries_app = typer.Typer(
    help="Make canary tasks: impossible twins of a task set, for a trainer to mix in.",
    no_args_is_help=True,
)


@canaries_app.command("make")
def canaries_make(
    path: Annotated[
        Path,
        typer.Argument(
            help="Samples (JSON Lines, one Sample a line); each response is its task's reference.",
            exists=True,
            dir_okay=False,
        ),
    ],
    output: Annotated[
        Path, typer.Option("-o", "--output", help="Where to write the canaries (JSON Lines).")
    ],
    max_tries: Annotated[
        int, typer.Option(min=1, help="Flips tried per task before it is left out.")
    ] = 6,
    timeout_s: Annotated[
        float, typer.Option(min=0.1, help="Each grading's CPU-time limit.")
    ] = 10.0,
    workers: Annotated[int, typer.Option(min=1, help="Gradings run at once.")] = 8,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Name no task left out.")] = False,
) -> None:
    """Make one impossible twin per task with tests: one expected value flipped, proven.

    Each sample's response is taken as its task's reference solution. A twin is
    kept only when the reference, graded in the sandbox, passes the original tests
    and fails the flipped ones. Prints, per language, the canaries made and the
    tasks left out with why.
    """
    import orjson

    from arbiter.canaries import KINDS, CanaryOutcome, make_canaries
    from arbiter.graders.types import TaskSpec
    from arbiter.graders.unit_tests import UnitTestsConfig, UnitTestsGrader
    from arbiter.inputs import parse_samples

    with path.open("rb") as lines:
        parsed, issues = parse_samples(lines, str(path))
    for issue in issues:
        typer.echo(f"{issue} (expected one Sample a line: see docs/samples.md)", err=True)
    if issues:
        raise typer.Exit(2)
    samples = [sample for _, sample in parsed]
    if not any(isinstance(s.task, TaskSpec) and s.task.kind in KINDS for s in samples):
        typer.echo(
            f"{path}: no sample has a task with tests (expected a task of kind {', '.join(KINDS)})",
            err=True,
        )
        raise typer.Exit(2)

    def log(outcome: CanaryOutcome) -> None:
        if not quiet and outcome.twin is None:
            typer.echo(f"{outcome.id}: left out: {outcome.reason}", err=True)

    grader = UnitTestsGrader()
    grader.expect(samples)
    try:
        outcomes, summary = make_canaries(
            samples,
            grader,
            config=UnitTestsConfig(timeout_s=timeout_s),
            max_tries=max_tries,
            concurrency=workers,
            log=log,
        )
    finally:
        grader.close()
    with output.open("wb") as sink:
        for outcome in outcomes:
            if outcome.twin is not None:
                sink.write(orjson.dumps(outcome.twin.model_dump(mode="json", exclude_none=True)))
                sink.write(b"\n")
    counts: dict[str, Any] = summary.as_dict()
    for language, row in counts["languages"].items():
        left = row["left_out"]
        why = "; ".join(f"{reason}: {n}" for reason, n in sorted(left.items()))
        typer.echo(
            f"{language}: {row['made']} made, {sum(left.values())} left out"
            + (f" ({why})" if why else "")
        )
    typer.echo(
        f"total: {counts['made']} made, {counts['left_out']} left out, {counts['skipped']} "
        f"skipped (no task with tests), {counts['gradings']} gradings; written to {output}"
    )
    if not counts["made"]:
        raise typer.Exit(1)
