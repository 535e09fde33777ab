"""``arbiter repos`` and ``arbiter tasks``: register snapshots, make and validate repository tasks.

Registered on the main CLI (:mod:`arbiter.cli`) as two sub-commands. The
snapshots land in the store the service reads (``ARBITER_REPOSITORY_STORE``,
or ``--store``), so a task file made here grades there by id.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

__all__ = ["repos_app", "tasks_app"]

repos_app = typer.Typer(
    help="Register repository snapshots (directories or .tar.gz) by content.",
    no_args_is_help=True,
)
tasks_app = typer.Typer(
    help="Make and validate repository tasks; lint any set's tests.", no_args_is_help=True
)

StoreOption = Annotated[
    Path | None,
    typer.Option(
        "--store",
        help="The snapshot store (default: ARBITER_REPOSITORY_STORE, else the sandbox cache).",
    ),
]


def _store(path: Path | None) -> Any:
    from arbiter.graders.repository.snapshots import SnapshotStore

    return SnapshotStore(path)


@repos_app.command("add")
def repos_add(
    paths: Annotated[list[Path], typer.Argument(help="Directories or .tar.gz files.")],
    store: StoreOption = None,
) -> None:
    """Register each repository; print its snapshot id (the same tree twice: one id)."""
    from arbiter.graders.repository.snapshots import SnapshotError

    snapshots = _store(store)
    failed = False
    for path in paths:
        try:
            snapshot = snapshots.add(path)
        except SnapshotError as e:
            typer.echo(f"{path}: {e}", err=True)
            failed = True
            continue
        typer.echo(f"{snapshot.id}\t{snapshot.files} files\t{snapshot.bytes} bytes\t{path}")
    if failed:
        raise typer.Exit(1)


@repos_app.command("list")
def repos_list(store: StoreOption = None) -> None:
    """List the snapshot ids in the store."""
    for snapshot_id in _store(store).ids():
        typer.echo(snapshot_id)


@tasks_app.command("make-repo")
def tasks_make_repo(
    source: Annotated[Path, typer.Argument(help="A repository folder or sdist (.tar.gz).")],
    output: Annotated[Path, typer.Option("-o", "--output", help="The tasks JSONL to write.")],
    seed: Annotated[int, typer.Option(help="The mutants' seed.")] = 0,
    max_tasks: Annotated[int | None, typer.Option(help="Stop after this many tasks.")] = None,
    max_pass_to_pass: Annotated[int, typer.Option(help="Pass-to-pass tests per task.")] = 30,
    report: Annotated[
        Path | None, typer.Option(help="Write the per-package report (JSON) here.")
    ] = None,
    store: StoreOption = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q")] = False,
) -> None:
    """Turn a repository with a test suite into bug-fix tasks, one mutated function each."""
    from arbiter.graders.repository.tasks import make_tasks, write_rows

    def log(line: str) -> None:
        if not quiet:
            typer.echo(line, err=True)

    rows, made = make_tasks(
        source,
        store=_store(store),
        seed=seed,
        max_tasks=max_tasks,
        max_pass_to_pass=max_pass_to_pass,
        log=log,
    )
    write_rows(output, rows)
    summary = made.as_dict()
    if report is not None:
        report.write_text(json.dumps(summary, indent=2) + "\n")
    typer.echo(json.dumps(summary))


@tasks_app.command("validate")
def tasks_validate(
    path: Annotated[Path, typer.Argument(help="A tasks JSONL (from make-repo).")],
    repeats: Annotated[int, typer.Option(help="Gold runs per task (all must agree).")] = 3,
    workers: Annotated[int, typer.Option(help="Tasks validated at once.")] = 2,
    report: Annotated[
        Path | None, typer.Option(help="Write the report (JSON: each task and the summary).")
    ] = None,
    valid_output: Annotated[
        Path | None, typer.Option("--valid", help="Write the tasks that passed here.")
    ] = None,
    store: StoreOption = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q")] = False,
) -> None:
    """Check every task: the gold patch resolves, no patch resolves nothing, runs agree."""
    from arbiter.graders.repository.grading import RepositoryGrading
    from arbiter.graders.repository.tasks import read_rows, validate_tasks, write_rows

    rows = read_rows(path)
    grading = RepositoryGrading(store=_store(store))

    def log(result: dict[str, Any]) -> None:
        if not quiet:
            mark = "ok" if result["valid"] else "REFUSED " + ",".join(result["refused"])
            typer.echo(f"{result['id']}: {mark}", err=True)

    try:
        validated = validate_tasks(rows, grading, repeats=repeats, workers=workers, log=log)
    finally:
        grading.close()
    summary = validated.summary()
    if report is not None:
        report.write_text(json.dumps({"summary": summary, "tasks": validated.rows}, indent=2))
    if valid_output is not None:
        ok = {r["id"] for r in validated.rows if r["valid"]}
        write_rows(valid_output, [r for r in rows if r["id"] in ok])
    typer.echo(json.dumps(summary))
    if summary["total"]["tasks"] and summary["total"]["valid"] == 0:
        sys.exit(1)


@tasks_app.command("lint")
def tasks_lint(
    path: Annotated[Path, typer.Argument(help="A set of tasks or samples (JSON Lines).")],
    fmt: Annotated[
        str,
        typer.Option(
            "--format", help="jsonl (this project's samples), humaneval, humanevalpack or mbpp."
        ),
    ] = "jsonl",
    report: Annotated[
        Path | None, typer.Option("--report", help="Folder for report.html and report.json.")
    ] = None,
    repeats: Annotated[int, typer.Option(help="Reference runs per task (all must agree).")] = 3,
    mutants: Annotated[int, typer.Option(help="Mutants of the reference per task, at most.")] = 24,
    seed: Annotated[int, typer.Option(help="The mutants' seed.")] = 0,
    limit: Annotated[int | None, typer.Option(help="Lint the first N tasks only.")] = None,
    timeout_s: Annotated[
        float, typer.Option(help="Each grading's limit (a mutant that loops is killed by it).")
    ] = 3.0,
    hidden: Annotated[
        bool,
        typer.Option(
            "--hidden/--no-hidden",
            help="Also grade mutants with hidden cases derived from the reference.",
        ),
    ] = True,
    quiet: Annotated[bool, typer.Option("--quiet", "-q")] = False,
) -> None:
    """Grade each task's tests: reference, trivial candidates, mutants; weak, fine or strong."""
    from arbiter.graders.unit_tests import UnitTestsConfig

    summary = lint_set(
        path,
        fmt,
        config=UnitTestsConfig(timeout_s=timeout_s),
        report=report,
        repeats=repeats,
        mutants=mutants,
        seed=seed,
        limit=limit,
        hidden=hidden,
        quiet=quiet,
    )
    typer.echo(json.dumps({k: v for k, v in summary.items() if k != "weak_tasks"}))
    for task_id, reasons in summary["weak_tasks"].items():
        typer.echo(f"weak: {task_id}: {'; '.join(reasons)}")


def lint_set(
    path: Path,
    fmt: str,
    *,
    config: Any,
    report: Path | None = None,
    repeats: int = 3,
    mutants: int = 24,
    seed: int = 0,
    limit: int | None = None,
    hidden: bool = True,
    quiet: bool = False,
) -> dict[str, Any]:
    """Lint the tasks of the set at ``path`` (``tasks lint``, ``rubric publish --lint``).

    Writes the HTML and JSON report to ``report`` when given; returns the summary.
    Exits 2 on a set that does not read.
    """
    from arbiter.eval_loaders import FORMATS, load_items
    from arbiter.graders.unit_tests import UnitTestsGrader
    from arbiter.html_report import lint_html
    from arbiter.inputs import parse_samples
    from arbiter.task_lint import lint_tasks, report_json, summary_of, tasks_of

    if fmt not in FORMATS or fmt == "rewardbench":
        typer.echo(
            f"--format: expected jsonl, humaneval, humanevalpack or mbpp; found {fmt!r}", err=True
        )
        raise typer.Exit(2)
    loaded = load_items(path, fmt)
    if loaded is None:
        with path.open("rb") as f:
            parsed, issues = parse_samples(f, str(path))
        for issue in issues:
            typer.echo(str(issue), err=True)
        if issues:
            raise typer.Exit(2)
        loaded = [sample for _, sample in parsed]
    items = tasks_of(loaded)[:limit]
    grader = UnitTestsGrader()
    grader.expect([s for s in loaded if s.task is not None])

    def log(linted: Any) -> None:
        if not quiet:
            typer.echo(f"{linted.id}: {linted.grade}  {'; '.join(linted.reasons)}", err=True)

    try:
        linted = lint_tasks(
            items,
            grader,
            config=config,
            repeats=repeats,
            max_mutants=mutants,
            seed=seed,
            hidden=hidden,
            log=log,
        )
    finally:
        grader.close()
    if report is not None:
        report.mkdir(parents=True, exist_ok=True)
        (report / "report.json").write_text(report_json(linted), encoding="utf-8")
        (report / "report.html").write_text(lint_html(linted, source=str(path)), encoding="utf-8")
    return summary_of(linted)
