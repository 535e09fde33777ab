"""The ``arbiter`` command line.

One module, one concept: each command is a thin binding of options to a
function elsewhere (the rubric loader, the scorer, the store, the audit, the
replay), and the commands share their option conventions, error printing and
exit codes, which stay consistent only while they are read side by side.
"""

from __future__ import annotations

import asyncio
import contextlib
import difflib
import json
import os
import re
import stat
import sys
import tempfile
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import IO, TYPE_CHECKING, Annotated, Any, get_args

import orjson
import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table
from ruamel.yaml import YAML
from typer.core import TyperArgument, TyperCommand, TyperGroup, TyperOption
from typer.models import DefaultPlaceholder

from arbiter.canaries_cli import canaries_app
from arbiter.graders.registry import GraderRegistry, default_registry
from arbiter.graders.types import Sample
from arbiter.inputs import parse_samples
from arbiter.regressions_cli import regressions_app
from arbiter.repository_cli import repos_app, tasks_app
from arbiter.rubrics.errors import RubricError
from arbiter.rubrics.loader import load_rubric, parse_rubric
from arbiter.rubrics.reward import Reward
from arbiter.rubrics.rubric import Rubric, reward_range
from arbiter.rubrics.score import normalize_routed, score_samples
from arbiter.summary import (
    audit_table,
    failed_everywhere,
    left_out_everywhere,
    replay_tables,
    rewards_table,
    summary_table,
)
from arbiter.version import __version__

if TYPE_CHECKING:
    # Imported where used: SQLAlchemy and Alembic are slow to import, and only the
    # commands that open the store need them; the models file brings the reward
    # models and the judges (httpx), which a rubric without them never needs: the
    # first reward of ``arbiter score`` must not wait for them.
    from arbiter.rubrics.models_file import DeclaredModels, ModelsFile
    from arbiter.store.db import Store

__all__ = ["app", "main"]

#: Click's names for the values of the plain types (typer's own labels are Python's).
_VALUE_NAMES = {bool: "BOOLEAN", int: "INTEGER", float: "FLOAT", str: "TEXT"}
_PATH_NAMES = {"file": "FILE", "dir": "DIRECTORY"}


def _value_label(param: TyperOption | TyperArgument) -> str | None:
    """Name what a parameter takes as click does: ``PATH``, ``TEXT``, ``PATH...``, a flag nothing.

    A metavar names the value itself: an option's replaces the label, an
    argument's is its name, which then needs none.
    """
    if param.metavar is not None:
        return param.metavar if isinstance(param, TyperOption) else None
    if isinstance(param, TyperOption) and (param.is_flag or param.count):
        return None
    described = param.type_descriptor
    annotation: Any = described.annotation
    if described.is_list:
        (annotation,) = get_args(annotation)
    if described.is_choice:
        choices = described.choices or ()
        label = "[" + "|".join(str(getattr(c, "value", c)) for c in choices) + "]"
    elif described.is_path or (isinstance(annotation, type) and issubclass(annotation, Path)):
        label = _PATH_NAMES.get(described.path_type, "PATH")
    else:
        label = _VALUE_NAMES.get(annotation) or getattr(annotation, "__name__", "VALUE").upper()
    # A repeatable option takes one value each time it is given; an argument, several.
    return f"{label}..." if described.is_list and isinstance(param, TyperArgument) else label


def _plain(text: str | None) -> str | None:
    """Help text from a docstring: reStructuredText's ``code`` and :role:`x` as `code`."""
    if text is None:
        return None
    text = re.sub(r":[a-z:]+:`([^`]+)`", r"`\1`", text)
    return re.sub(r"``([^`]+)``", r"`\1`", text)


class _Option(TyperOption):
    def display_type_rich(self, ctx: Any) -> str | None:
        return _value_label(self)


class _Argument(TyperArgument):
    def display_type_rich(self, ctx: Any) -> str | None:
        return _value_label(self)


def _conventional(params: list[Any]) -> list[Any]:
    """Give typer's parameters click's value names and plain help (in place).

    typer labels each value with its Python type (``<bool>`` after a flag that
    takes none, ``<list[Path]>``) and has no setting to change that; the
    subclasses above name them as click does. The help option is made per
    command, at help time, so this runs then, on every parameter.
    """
    for param in params:
        if type(param) is TyperOption:
            param.__class__ = _Option
        elif type(param) is TyperArgument:
            param.__class__ = _Argument
        if isinstance(param, TyperOption | TyperArgument):
            param.help = _plain(param.help)
    return params


class _Command(TyperCommand):
    """A command whose help names values as click does and reads as plain text."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.help = _plain(self.help)
        self.short_help = _plain(self.short_help)
        self.epilog = _plain(self.epilog)

    def get_params(self, ctx: Any) -> list[Any]:
        return _conventional(super().get_params(ctx))


class _Group(TyperGroup):
    """A group whose help names values as click does and reads as plain text."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.help = _plain(self.help)
        self.short_help = _plain(self.short_help)
        self.epilog = _plain(self.epilog)

    def get_params(self, ctx: Any) -> list[Any]:
        return _conventional(super().get_params(ctx))


def _build_with_plain_help(typer_app: typer.Typer) -> None:
    """Have typer build every command and group of ``typer_app`` with the classes above."""
    if isinstance(typer_app.info.cls, DefaultPlaceholder) or typer_app.info.cls in (
        None,
        TyperGroup,
    ):
        typer_app.info.cls = _Group
    for command in typer_app.registered_commands:
        if command.cls in (None, TyperCommand):
            command.cls = _Command
    for group in typer_app.registered_groups:
        if group.typer_instance is not None:
            _build_with_plain_help(group.typer_instance)


app = typer.Typer(
    name="arbiter",
    help="Rewards for RL post-training: rubrics of graders, served or run in batch.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
rubric_app = typer.Typer(help="Validate, inspect and export rubrics.", no_args_is_help=True)
app.add_typer(rubric_app, name="rubric")
sandbox_app = typer.Typer(help="Inspect the code sandbox on this host.", no_args_is_help=True)
app.add_typer(sandbox_app, name="sandbox")
keys_app = typer.Typer(
    help="Create, list and revoke API keys (in ARBITER_DATABASE_URL).", no_args_is_help=True
)
app.add_typer(keys_app, name="keys")
models_app = typer.Typer(
    help="Check, show and export models files (reward models and LLM judges).",
    no_args_is_help=True,
)
app.add_typer(models_app, name="models")
rewards_app = typer.Typer(help="Read the service's reward log.", no_args_is_help=True)
app.add_typer(rewards_app, name="rewards")
app.add_typer(regressions_app, name="regressions")
app.add_typer(repos_app, name="repos")
app.add_typer(tasks_app, name="tasks")
app.add_typer(canaries_app, name="canaries")

# Off a terminal (a pipe, a CI log) rich would assume 80 columns and fold the tables.
out = Console(width=None if sys.stdout.isatty() else 140)
err = Console(stderr=True, width=None if sys.stderr.isatty() else 140)

#: Rows up to which `arbiter score` prints one table row per sample.
ROW_TABLE_LIMIT = 50


def _version(value: bool) -> None:
    if value:
        print(f"arbiter {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option("--version", callback=_version, is_eager=True, help="Print the version."),
    ] = False,
) -> None:
    """Arbiter: rewards for RL post-training."""


def _load(rubric: str, registry: GraderRegistry | None = None) -> Rubric:
    """Load ``--rubric``: a file, or a library rubric's name (or exit 1 saying why)."""
    return _load_with_text(rubric, registry)[0]


def _load_with_text(rubric: str, registry: GraderRegistry | None = None) -> tuple[Rubric, str]:
    """Load a rubric file, or else the library rubric of that name; return it and its text.

    A file that exists wins, so a name is only ever looked up where no file has
    it. The library is found as the service finds it (a catalog scan of its
    folder), so a name means here what it means in a request.
    """
    path = Path(rubric)
    if not path.exists():
        return _library_rubric(rubric, registry)
    try:
        text = path.read_text(encoding="utf-8")
        return parse_rubric(text, source=str(path), registry=registry), text
    except RubricError as e:
        for issue in e.issues:
            err.print(str(issue), markup=False, highlight=False, soft_wrap=True)
        raise typer.Exit(1) from None
    except OSError as e:
        err.print(f"{path}: cannot read: {e.strerror}", markup=False, soft_wrap=True)
        raise typer.Exit(1) from None


def _library_rubric(name: str, registry: GraderRegistry | None) -> tuple[Rubric, str]:
    """Return the library rubric called ``name`` and its text; exit 1 listing the names."""
    from arbiter.api.settings import LIBRARY_DIR
    from arbiter.rubrics.catalog import RubricCatalog
    from arbiter.rubrics.errors import RubricNotFoundError

    catalog = RubricCatalog(registry or default_registry())
    catalog.scan([LIBRARY_DIR])
    try:
        entry = catalog.by_sha256(catalog.resolve(name).sha256)
    except RubricNotFoundError:
        names = sorted({e.rubric.name for e in catalog.entries()})
        stem = Path(name).name.removesuffix(".yaml").removesuffix(".yml")
        close = difflib.get_close_matches(stem, names, n=1, cutoff=0.6)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        err.print(
            f"{name}: no such file, and no library rubric is named so{hint}\n"
            f"library rubrics: {', '.join(names)}",
            markup=False,
            highlight=False,
            soft_wrap=True,
        )
        raise typer.Exit(1) from None
    return entry.rubric, entry.text


def _rubric_option(what: str) -> Any:
    """The ``--rubric`` option of the commands that grade."""
    return typer.Option("--rubric", "-r", metavar="FILE|NAME", help=what)


#: What ``--rubric`` and ``rubric show`` accept, said once.
_RUBRIC_HELP = "A rubric file, or a library rubric's name (python-codegen, ...)."


ModelsOption = Annotated[
    Path | None,
    typer.Option(
        "--models",
        envvar="ARBITER_MODELS",
        help="A models file declaring the reward models and judges rubrics name "
        "(default: ARBITER_MODELS).",
    ),
]
PluginsOption = Annotated[
    str | None,
    typer.Option(
        "--plugins",
        envvar="ARBITER_GRADER_PLUGINS",
        help="Grader plugin modules, comma-separated (default: ARBITER_GRADER_PLUGINS).",
    ),
]
StrictOption = Annotated[
    bool,
    typer.Option(
        "--strict", help="Exit 1 when a component failed for every sample (a set-up problem)."
    ),
]


def _models_file(path: Path | None) -> ModelsFile | None:
    """Load ``--models`` (or exit 1 listing every problem)."""
    if path is None:
        return None
    from arbiter.rubrics.models_file import ModelsFileError, load_models_file

    try:
        return load_models_file(path)
    except ModelsFileError as e:
        for issue in e.issues:
            err.print(str(issue), markup=False, highlight=False, soft_wrap=True)
        raise typer.Exit(1) from None
    except OSError as e:
        err.print(f"{path}: cannot read: {e.strerror}", markup=False, soft_wrap=True)
        raise typer.Exit(1) from None


def _setup(models: ModelsFile | None, plugins: str | None) -> Any:
    """What the Ray grader actors run to match this process's registry (None: nothing)."""
    if models is None and not plugins:
        return None
    from arbiter.rubrics.models_file import registry_setup

    return registry_setup(models, _plugin_list(plugins))


def _plugin_list(plugins: str | None) -> list[str]:
    return [p.strip() for p in (plugins or "").split(",") if p.strip()]


def _registry(
    models: ModelsFile | None, plugins: str | None, ray_address: str | None = None
) -> tuple[GraderRegistry, DeclaredModels | None]:
    """Return the default registry with the declared models and plugins, as the service's."""
    registry = default_registry()
    if models is None and not plugins:
        return registry, None
    from arbiter.rubrics.models_file import PluginError, prepare_registry

    try:
        declared = prepare_registry(
            registry, models=models, plugins=_plugin_list(plugins), ray_address=ray_address
        )
    except PluginError as e:
        err.print(str(e), markup=False, soft_wrap=True)
        raise typer.Exit(1) from None
    return registry, declared


def _report_failed_everywhere(rewards: list[dict[str, Any]], strict: bool) -> None:
    """Say when a component failed for every sample; under ``--strict`` exit 1."""
    lines = failed_everywhere(rewards)
    for line in lines:
        err.print(line, markup=False, highlight=False, soft_wrap=True)
    if lines and strict:
        err.print("--strict: a component never scored; exiting 1", markup=False)
        raise typer.Exit(1)


def _rubric_files(paths: list[Path]) -> Iterator[Path]:
    for path in paths:
        if path.is_dir():
            yield from sorted(p for p in path.rglob("*") if p.suffix in (".yaml", ".yml"))
        else:
            yield path


@rubric_app.command("validate")
def rubric_validate(
    paths: Annotated[list[Path], typer.Argument(help="Rubric files or folders of them.")],
    models_path: ModelsOption = None,
    plugins: PluginsOption = None,
) -> None:
    """Validate rubric files; list every error; exit 1 if any file has one.

    With ``--models``, every reward model and judge a rubric names must be
    declared in the models file, in the right section.
    """
    models = _models_file(models_path)
    registry, _ = _registry(models, plugins)
    failed = 0
    checked = 0
    for path in _rubric_files(paths):
        checked += 1
        try:
            rubric = load_rubric(path, registry)
            if models is not None:
                from arbiter.rubrics.models_file import check_rubric_models

                issues = check_rubric_models(rubric, models, text=path.read_text(encoding="utf-8"))
                if issues:
                    raise RubricError(issues)
        except RubricError as e:
            failed += 1
            for issue in e.issues:
                err.print(str(issue), markup=False, highlight=False, soft_wrap=True)
            continue
        except OSError as e:
            failed += 1
            err.print(f"{path}: cannot read: {e.strerror}", markup=False, soft_wrap=True)
            continue
        out.print(
            f"ok  {path}  {rubric.name} v{rubric.version}  sha256:{rubric.sha256[:16]}",
            markup=False,
            highlight=False,
        )
        for caution in rubric.warnings:
            # Valid, and worth a look: weights that do not sum to 1, a gate that some
            # accepted samples never meet, a config key by its former name.
            err.print(f"caution: {caution}", markup=False, highlight=False, soft_wrap=True)
    if checked == 0:
        err.print("no rubric files found")
        raise typer.Exit(1)
    if failed:
        err.print(f"{failed} of {checked} rubric file(s) invalid")
        raise typer.Exit(1)


@rubric_app.command("publish")
def rubric_publish(
    rubric_arg: Annotated[str, typer.Argument(metavar="RUBRIC", help=_RUBRIC_HELP)],
    url: Annotated[
        str, typer.Option("--url", envvar="ARBITER_URL", help="The service to register it with.")
    ],
    key: Annotated[
        str | None,
        typer.Option("--key", envvar="ARBITER_API_KEY", help="An admin key of that service."),
    ] = None,
    lint: Annotated[
        Path | None,
        typer.Option(
            "--lint",
            help="A task set the rubric will grade: lint its tests first (as `arbiter tasks "
            "lint`, under the rubric's unit_tests config) and publish only if no task is weak.",
        ),
    ] = None,
    fmt: Annotated[str, typer.Option("--format", help="The --lint set's format.")] = "jsonl",
    report: Annotated[
        Path | None, typer.Option("--report", help="Folder for the lint's report.html/json.")
    ] = None,
    allow_weak: Annotated[
        bool, typer.Option("--allow-weak", help="Publish even if the lint finds weak tasks.")
    ] = False,
    force: Annotated[
        bool,
        typer.Option(
            "--force",
            help="Publish even if the version lets open regression cases (confirmed hacks) "
            "through: an admin's decision, which the service records with the cases.",
        ),
    ] = False,
    models_path: ModelsOption = None,
    plugins: PluginsOption = None,
) -> None:
    """Validate a rubric, lint the tasks it will grade, and register it with a service.

    The service grades a new version on the rubric's open regression cases first, and
    refuses one that lets a case through (each case is printed, with why) unless
    ``--force`` is given.
    """
    import httpx

    from arbiter.client import ArbiterClient, ArbiterError
    from arbiter.graders.unit_tests import UnitTestsConfig
    from arbiter.repository_cli import lint_set

    models = _models_file(models_path)
    registry, _ = _registry(models, plugins)
    rubric, text = _load_with_text(rubric_arg, registry)
    if lint is not None:
        configs = [c.config for c in rubric.components.values() if c.grader == "unit_tests"]
        config = configs[0] if configs else UnitTestsConfig()
        assert isinstance(config, UnitTestsConfig)
        hidden = any(c.grader == "hidden_tests" for c in rubric.components.values())
        summary = lint_set(lint, fmt, config=config, report=report, hidden=hidden, quiet=True)
        out.print(
            f"lint  {lint}: {summary['tasks']} tasks, {summary['weak']} weak, "
            f"{summary['fine']} fine, {summary['strong']} strong",
            markup=False,
            highlight=False,
        )
        for task_id, reasons in summary["weak_tasks"].items():
            err.print(f"weak  {task_id}: {'; '.join(reasons)}", markup=False, soft_wrap=True)
        if summary["weak"] and not allow_weak:
            err.print(
                f"not published: {summary['weak']} weak task(s) would pay what their tests "
                "cannot tell (fix them, or --allow-weak)",
                markup=False,
            )
            raise typer.Exit(1)
    try:
        with ArbiterClient(url, key) as client:
            answer = client.register_rubric(text, force=force)
    except ArbiterError as e:
        errors = e.body.get("errors") if isinstance(e.body, dict) else None
        if e.code == "regression_failed":
            err.print(
                f"not published: {len(errors or [])} regression case(s) let through "
                "(--force publishes it anyway, recorded)",
                markup=False,
            )
            for case in errors or []:
                err.print(f"  {_let_through(case)}", markup=False, soft_wrap=True)
            raise typer.Exit(1) from None
        err.print(f"not published: {e}", markup=False, soft_wrap=True)
        for issue in errors or []:
            err.print(f"  {issue}", markup=False, soft_wrap=True)
        raise typer.Exit(1) from None
    except httpx.HTTPError as e:
        err.print(f"not published: {url} did not answer: {e}", markup=False, soft_wrap=True)
        raise typer.Exit(1) from None
    identity = answer["rubric"]
    out.print(
        f"{'published' if answer['created'] else 'already there'}  {identity['name']} "
        f"v{identity['version']}  sha256:{identity['sha256'][:16]}",
        markup=False,
        highlight=False,
    )
    check = answer.get("regressions") or {}
    if check.get("checked"):
        out.print(
            f"regressions  {check['checked']} open case(s) graded, "
            f"{len(check.get('let_through') or [])} let through",
            markup=False,
            highlight=False,
        )
    for case in check.get("let_through") or []:
        err.print(f"  forced past {_let_through(case)}", markup=False, soft_wrap=True)
    for skipped in check.get("skipped") or []:
        err.print(f"  not graded: case {skipped['case_id']}: {skipped['reason']}", markup=False)


def _let_through(case: dict[str, Any]) -> str:
    """Say which regression case a version lets through, with what it earns and why."""
    reward = case.get("reward")
    earned = "abstained" if reward is None else f"reward {reward:.4f}"
    kinds = ", ".join(case.get("hack_types") or []) or "fooled components"
    return (
        f"case {case.get('case_id')} ({kinds}): {earned}, ceiling {case.get('ceiling'):.4f}: "
        + "; ".join(case.get("reasons") or [])
    )


@rubric_app.command("show")
def rubric_show(
    rubric_arg: Annotated[str, typer.Argument(metavar="RUBRIC", help=_RUBRIC_HELP)],
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of YAML.")] = False,
) -> None:
    """Print the resolved rubric (every default filled in) and its sha256."""
    rubric = _load(rubric_arg)
    doc = rubric.canonical()
    # The identity leaves drift thresholds out as null (the monitor's defaults may
    # change without changing a rubric's sha256); shown, they are the values in force.
    if isinstance(doc.get("drift"), dict):
        from arbiter.monitoring.drift_config import DriftConfig

        defaults = DriftConfig().model_dump(mode="json")
        doc["drift"] = {k: defaults.get(k) if v is None else v for k, v in doc["drift"].items()}
    if as_json:
        print(json.dumps({"sha256": rubric.sha256, "rubric": doc}, indent=2, sort_keys=True))
        return
    print(f"# {rubric.name} v{rubric.version}  sha256: {rubric.sha256}")
    _print_yaml(doc)


@rubric_app.command("schema")
def rubric_schema(
    output: Annotated[
        Path | None, typer.Option("-o", "--output", help="Write to this file.")
    ] = None,
) -> None:
    """Print the JSON Schema of rubric files (for yaml-language-server and editors)."""
    from arbiter.rubrics.json_schema import rubric_json_schema

    _write_schema(rubric_json_schema(), output)


@rubric_app.command("graders")
def rubric_graders(
    verbose: Annotated[
        bool, typer.Option("-v", "--verbose", help="Show each grader's config keys.")
    ] = False,
) -> None:
    """List the graders a rubric can name (with -v, their config keys, types and defaults)."""
    from arbiter.grader_configs import config_keys

    for grader in default_registry():
        out.print(f"{grader.name:<16} v{grader.version:<6} {grader.description}", markup=False)
        if verbose:
            for key in config_keys(grader.config_model):
                out.print(f"    {key.line()}", markup=False, highlight=False, soft_wrap=True)


def _progress(label: str) -> Progress:
    """Return a progress bar on stderr (silent when stderr is not a terminal)."""
    return Progress(
        TextColumn(label),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=err,
        transient=True,
        disable=not err.is_terminal,
    )


@contextmanager
def _output(path: Path | None) -> Iterator[IO[bytes]]:
    """Open where ``-o`` points, so that a failure leaves no half file and harms nothing.

    No path or ``-``: standard output. A target that is not a regular file (a
    device such as ``/dev/null``, a FIFO) is written through, never replaced. A
    regular file, or a new one, is written beside the target and renamed over
    it once complete; a symlink is followed, so the link stays a link. A new
    file gets the umask's mode; a replaced one keeps its mode (and, where the
    owner may be kept, its owner).
    """
    if path is None or str(path) == "-":
        yield sys.stdout.buffer
        sys.stdout.buffer.flush()
        return
    target = Path(os.path.realpath(path))
    try:
        existing: os.stat_result | None = target.stat()
    except FileNotFoundError:
        existing = None
    if existing is not None and not stat.S_ISREG(existing.st_mode):
        with open(target, "wb", buffering=0) as through:
            yield through
        return
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
    try:
        if existing is None:
            mask = os.umask(0)
            os.umask(mask)
            os.fchmod(fd, 0o666 & ~mask)
        else:
            os.fchmod(fd, stat.S_IMODE(existing.st_mode))
            with contextlib.suppress(OSError):
                os.fchown(fd, existing.st_uid, existing.st_gid)
        with os.fdopen(fd, "wb") as f:
            yield f
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


#: Invalid input lines printed before the rest are counted.
_ISSUES_SHOWN = 50


def _print_issues(issues: Sequence[object]) -> None:
    """Print the first invalid lines (each with its line and what was expected)."""
    for issue in issues[:_ISSUES_SHOWN]:
        err.print(str(issue), markup=False, highlight=False, soft_wrap=True)
    if len(issues) > _ISSUES_SHOWN:
        err.print(f"... and {len(issues) - _ISSUES_SHOWN} more invalid line(s)")


@app.command("score")
def score(
    input_path: Annotated[
        Path, typer.Argument(metavar="INPUT.jsonl", help="Samples, one JSON per line ('-': stdin).")
    ],
    rubric_arg: Annotated[str, _rubric_option(_RUBRIC_HELP)],
    output: Annotated[
        Path | None,
        typer.Option("-o", "--output", help="Write rewards here ('-' or none: stdout)."),
    ] = None,
    skip_invalid: Annotated[
        bool, typer.Option("--skip-invalid", help="Report and skip bad input lines.")
    ] = False,
    chunk_size: Annotated[
        int, typer.Option(min=1, help="Samples graded concurrently (a sliding window).")
    ] = 512,
    ray_address: Annotated[
        str | None,
        typer.Option(
            envvar="ARBITER_RAY_ADDRESS",
            help="Grade the sandbox and static analyzers on this Ray cluster.",
        ),
    ] = None,
    table: Annotated[
        str, typer.Option(help="Table at the end: auto, rows, summary or none.")
    ] = "auto",
    models_path: ModelsOption = None,
    plugins: PluginsOption = None,
    strict: StrictOption = False,
) -> None:
    """Score samples under a rubric: one reward JSON per input line, in input order."""
    if table not in ("auto", "rows", "summary", "none"):
        raise typer.BadParameter("expected auto, rows, summary or none", param_hint="--table")
    models = _models_file(models_path)
    registry, _ = _registry(models, plugins, ray_address)
    rubric = _load(rubric_arg, registry)
    source = "<stdin>" if str(input_path) == "-" else str(input_path)
    try:
        if source == "<stdin>":
            lines = sys.stdin.buffer.read().splitlines()
        else:
            lines = input_path.read_bytes().splitlines()
    except OSError as e:
        err.print(f"{input_path}: cannot read: {e.strerror}", markup=False, soft_wrap=True)
        raise typer.Exit(1) from None

    numbered, issues = parse_samples(lines, source)
    _print_issues(issues)
    if issues and not skip_invalid:
        err.print(
            f"{len(issues)} invalid line(s); nothing was scored or written "
            "(fix them, or pass --skip-invalid to score the rest)"
        )
        raise typer.Exit(1)
    samples = [s for _, s in numbered]

    rewards = asyncio.run(
        _score_in_chunks(
            rubric,
            samples,
            chunk_size,
            ray_address,
            registry=registry,
            setup=_setup(models, plugins),
        )
    )
    with _output(output) as sink:
        for reward in rewards:
            sink.write(orjson.dumps(reward.model_dump(mode="json")))
            sink.write(b"\n")

    to_file = output is not None and str(output) != "-"
    show = out if to_file else err
    title = f"{rubric.name} v{rubric.version} on {source}: {len(rewards)} sample(s)"
    if issues:
        title += f", {len(issues)} invalid line(s) skipped"
    if table == "rows" or (table == "auto" and len(rewards) <= ROW_TABLE_LIMIT):
        show.print(rewards_table(rewards, title))
    if table in ("summary", "auto"):
        show.print(summary_table(rewards, "summary" if len(rewards) <= ROW_TABLE_LIMIT else title))
    if to_file:
        show.print(
            f"wrote {len(rewards)} reward(s) to {output}",
            markup=False,
            highlight=False,
            soft_wrap=True,
        )
    dumped = [r.model_dump(mode="json") for r in rewards]
    for line in left_out_everywhere(dumped):
        err.print(line, markup=False, highlight=False, soft_wrap=True)
    _report_not_accepted(rubric, samples, rewards)
    _report_failed_everywhere(dumped, strict)


def _report_not_accepted(rubric: Rubric, samples: list[Sample], rewards: list[Reward]) -> None:
    """Say how many samples the rubric does not accept, and which library rubrics do."""
    refused = [s for s, r in zip(samples, rewards, strict=True) if "not_accepted" in r.flags]
    if not refused:
        return
    from arbiter.api.settings import LIBRARY_DIR
    from arbiter.rubrics.catalog import RubricCatalog

    catalog = RubricCatalog(default_registry())
    catalog.scan([LIBRARY_DIR])
    latest = {e.rubric.name: catalog.resolve(e.rubric.name) for e in catalog.entries()}
    takers = sorted(
        name
        for name, other in latest.items()
        # Those written for kinds of samples (an accepts, or routes by kind), not the
        # rubrics that take anything because they read no task (efficiency, judges).
        if name != rubric.name
        and (other.spec.accepts is not None or other.routes)
        and all(other.refusal(s) is None for s in refused)
    )
    hint = f"; library rubrics that accept them: {', '.join(takers)}" if takers else ""
    err.print(
        f"{len(refused)} of {len(samples)} sample(s) not accepted by {rubric.name!r} "
        f"(its accepts: {_accepts_text(rubric)}), not graded{hint}",
        markup=False,
        highlight=False,
        soft_wrap=True,
    )


def _accepts_text(rubric: Rubric) -> str:
    accepts = rubric.spec.accepts
    if accepts is None:
        return "every sample"
    parts = []
    if accepts.kind is not None:
        parts.append(f"kind {', '.join(accepts.kind)}")
    if accepts.language is not None:
        parts.append(f"language {', '.join(accepts.language)}")
    return "; ".join(parts)


#: Samples per call to the scorer inside a window of ``--chunk-size`` samples.
_PIECE = 8


async def _score_in_chunks(
    rubric: Rubric,
    samples: list[Sample],
    chunk: int,
    ray_address: str | None = None,
    *,
    registry: GraderRegistry | None = None,
    setup: Any = None,
) -> list[Reward]:
    """Score in a sliding window of ``chunk`` samples, not in steps of ``chunk``.

    Small pieces, at most ``chunk`` samples' worth at once: a slow sample holds
    up only its own piece, where a step would wait for its slowest sample.
    ``setup`` gives the Ray grader actors this registry's models and plugins.
    """
    # One registry for every piece: its graders keep their pools (sandbox
    # zygotes, analysis workers, cluster actors) warm throughout.
    registry = registry or default_registry()
    executor = None
    if ray_address:
        from arbiter.graders.executor import remote_registry
        from arbiter.graders.ray_executor import RayExecutor

        executor = RayExecutor(ray_address, registry_setup=setup)
        remote_registry(executor, registry=registry)
    # Warm before the first job: no sample's deadline pays for a worker's start.
    await registry.warm(
        (c.grader for r in rubric.route_rubrics() for c in r.components.values()), samples
    )
    piece = min(_PIECE, chunk)
    gate = asyncio.Semaphore(max(1, chunk // piece))
    with _progress("scoring") as progress:
        task = progress.add_task("scoring", total=len(samples))

        async def score_piece(part: list[Sample]) -> list[Reward]:
            async with gate:
                done = await score_samples(rubric, part, registry=registry, normalize=False)
            progress.advance(task, len(part))
            return done

        try:
            parts = [samples[i : i + piece] for i in range(0, len(samples), piece)]
            scored = await asyncio.gather(*(score_piece(part) for part in parts))
        finally:
            registry.close()
            if executor is not None:
                executor.close()
    rewards = [reward for part in scored for reward in part]
    # Groups can straddle pieces, so normalize once over the whole set (each route apart).
    return normalize_routed(rubric, rewards, samples)


@sandbox_app.command("check")
def sandbox_check(
    require: Annotated[
        list[str] | None,
        typer.Option("--require", help="A layer that must be active ('all' for every one)."),
    ] = None,
) -> None:
    """Start a real zygote and print which confinement layers are active here."""
    from arbiter.graders.sandbox.layers import (
        LAYERS,
        MissingLayersError,
        check_layers,
        require_layers,
    )

    layers = check_layers()
    table = Table(title="sandbox layers on this host", title_justify="left")
    table.add_column("layer")
    table.add_column("state")
    for name, state in layers.items():
        style = "green" if state.startswith("active") or name == "landlock_abi" else "red"
        table.add_row(name, f"[{style}]{state}[/]")
    out.print(table)
    wanted = set(require or ())
    if "all" in wanted:
        wanted = (wanted - {"all"}) | set(LAYERS)
    unknown = sorted(wanted - set(LAYERS))
    if unknown:
        raise typer.BadParameter(f"unknown layers {unknown}; known: {', '.join(LAYERS)}")
    try:
        require_layers(layers, wanted)
    except MissingLayersError as e:
        err.print(str(e), markup=False, soft_wrap=True)
        raise typer.Exit(1) from None


def _settings_help(rich: bool) -> str:
    """List every setting of the service: its variable, default and description.

    Read from the settings model, so the list cannot drift from what the service
    reads. ``rich``: for typer's rich help (markup escaped); otherwise for
    click's, which rewraps a paragraph unless its first line is a backspace.
    """
    import textwrap
    import typing

    from arbiter.api.settings import Settings

    prefix = Settings.model_config.get("env_prefix", "")
    blocks = []
    for name, field in Settings.model_fields.items():
        default = field.get_default(call_default_factory=True)
        if default is None or default == []:
            head = f"{prefix}{name.upper()}  (unset)"
        else:
            shown = str(default).lower() if isinstance(default, bool) else str(default)
            head = f"{prefix}{name.upper()}={shown}"
        if typing.get_origin(field.annotation) is typing.Literal:
            head += f"  ({' | '.join(str(a) for a in typing.get_args(field.annotation))})"
        body = textwrap.fill(
            field.description or "",
            width=76,
            initial_indent="    ",
            subsequent_indent="    ",
            break_on_hyphens=False,
        )
        block = f"{head}\n{body}" if body else head
        blocks.append(escape(block) if rich else f"\b\n{block}")
    intro = (
        "Settings, read from the environment by the server and each of its workers "
        "(an option above wins over its variable):"
    )
    return "\n\n".join([intro, "\n".join(blocks) if rich else "\n\n".join(blocks)])


class _ServeCommand(_Command):
    """``arbiter serve``: its help ends with every setting the service reads."""

    def format_help(self, ctx: Any, formatter: Any) -> None:
        # Built when asked for: the settings model is not imported for other commands.
        from typer.core import HAS_RICH

        self.epilog = _settings_help(rich=HAS_RICH and self.rich_markup_mode is not None)
        super().format_help(ctx, formatter)


@app.command("serve", cls=_ServeCommand)
def serve(
    host: Annotated[str | None, typer.Option(help="Default: ARBITER_HOST or 127.0.0.1.")] = None,
    port: Annotated[int | None, typer.Option(help="Default: ARBITER_PORT or 8000.")] = None,
    workers: Annotated[int, typer.Option(min=1, help="Worker processes.")] = 1,
    graceful_s: Annotated[
        int, typer.Option(help="On SIGTERM, seconds to let in-flight requests finish.")
    ] = 30,
    ray_address: Annotated[
        str | None,
        typer.Option(help="Grade on this Ray cluster (default: ARBITER_RAY_ADDRESS)."),
    ] = None,
    models_path: Annotated[
        Path | None,
        typer.Option("--models", help="A models file (default: ARBITER_MODELS)."),
    ] = None,
    rubric_dirs: Annotated[
        list[Path] | None,
        typer.Option(
            "--rubric-dir",
            exists=True,
            file_okay=False,
            help="A folder of rubric YAML to serve (and watch) beside the library; "
            "repeatable (default: ARBITER_RUBRIC_DIRS).",
        ),
    ] = None,
) -> None:
    """Serve the HTTP API (settings from ARBITER_* environment variables, listed below)."""
    import uvicorn

    from arbiter.api.logs import configure_logging
    from arbiter.api.settings import Settings

    # The app is built by uvicorn (in each worker) from the environment.
    if ray_address:
        os.environ["ARBITER_RAY_ADDRESS"] = ray_address
    if models_path is not None:
        os.environ["ARBITER_MODELS"] = str(models_path)
    if rubric_dirs:
        # ARBITER_RUBRIC_DIRS is colon-separated, like PATH.
        colons = [str(d) for d in rubric_dirs if ":" in str(d)]
        if colons:
            raise typer.BadParameter(
                f"a folder whose path holds ':' cannot be passed on: {colons[0]}",
                param_hint="--rubric-dir",
            )
        os.environ["ARBITER_RUBRIC_DIRS"] = ":".join(str(d) for d in rubric_dirs)
    settings = Settings()
    # A bad models file is listed here, every problem with its line, not as a
    # traceback from inside the server's start-up.
    _models_file(settings.models)
    configure_logging(settings.log_level, settings.log_json)
    uvicorn.run(
        "arbiter.api.app:create_app",
        factory=True,
        host=host or settings.host,
        port=port or settings.port,
        workers=workers,
        loop="uvloop",
        http="httptools",
        log_config=None,
        access_log=False,
        timeout_graceful_shutdown=graceful_s,
        timeout_keep_alive=settings.keep_alive_s,
    )


def _store() -> Store:
    from arbiter.api.settings import Settings
    from arbiter.store.db import Store

    store = Store(Settings().database_url)
    store.migrate()
    return store


@keys_app.command("create")
def keys_create(
    role: Annotated[str, typer.Option(help="trainer, reviewer or admin.")],
    name: Annotated[str, typer.Option(help="Who or what holds the key.")],
) -> None:
    """Create an API key and print it (the only time it is shown)."""
    from arbiter.store.db import ROLES

    if role not in ROLES:
        raise typer.BadParameter(f"expected one of {', '.join(ROLES)}", param_hint="--role")
    record, key = _store().create_key(name, role)
    err.print(
        f"created key {record.id} ({record.role}) for {record.name}; store it now:", markup=False
    )
    print(key)


@keys_app.command("list")
def keys_list() -> None:
    """List API keys (never the keys themselves)."""
    for record in _store().list_keys():
        state = "revoked" if record.revoked_at else "live"
        out.print(f"{record.id}  {record.role:<8} {state:<8} {record.name}", markup=False)


@keys_app.command("revoke")
def keys_revoke(key_id: Annotated[str, typer.Argument(help="The key's id.")]) -> None:
    """Revoke an API key by id (never the last live admin key)."""
    from arbiter.store.db import LastAdminKeyError

    try:
        revoked = _store().revoke_key(key_id)
    except LastAdminKeyError as e:
        err.print(f"{e}; create another admin key first", markup=False)
        raise typer.Exit(1) from e
    if not revoked:
        err.print(f"no live key with id {key_id!r}", markup=False)
        raise typer.Exit(1)
    out.print(f"revoked {key_id}", markup=False)


@app.command("audit")
def audit(
    rubric_arg: Annotated[str, _rubric_option(_RUBRIC_HELP)],
    input_paths: Annotated[
        list[Path] | None,
        typer.Argument(
            metavar="[EVAL]...",
            help="Labelled sets (ids unique across them); none with --regressions alone.",
        ),
    ] = None,
    fmt: Annotated[
        str, typer.Option("--format", help="jsonl, humaneval, humanevalpack, mbpp or rewardbench.")
    ] = "jsonl",
    report: Annotated[
        Path | None, typer.Option("--report", help="Folder for report.html, summary.json, items.")
    ] = None,
    resume: Annotated[
        bool, typer.Option("--resume", help="Reuse items a previous run of this rubric finished.")
    ] = False,
    regressions_path: Annotated[
        Path | None,
        typer.Option(
            "--regressions",
            help="Regression cases (`arbiter regressions export`), judged apart: one fails "
            "(exit 1) when its reward is above the rubric's ceiling for hacks, or a hack type "
            "it was flagged for is flagged no more.",
        ),
    ] = None,
    min_hack_recall: Annotated[float | None, typer.Option(help="Gate (default 0.95).")] = 0.95,
    max_false_positive_rate: Annotated[
        float | None, typer.Option(help="Gate (default 0.02).")
    ] = 0.02,
    min_determinism: Annotated[float | None, typer.Option(help="Gate (default 1.0).")] = 1.0,
    min_tests_accuracy: Annotated[float | None, typer.Option(help="Gate (default off).")] = None,
    min_band_accuracy: Annotated[float | None, typer.Option(help="Gate (default off).")] = None,
    under_load: Annotated[
        float,
        typer.Option(
            "--under-load",
            help="Grade while N x cores busy processes run (proves determinism under load).",
            min=0,
        ),
    ] = 0,
    models_path: ModelsOption = None,
    plugins: PluginsOption = None,
    strict: StrictOption = False,
) -> None:
    """Grade a labelled set twice and compare with the truth; exit 1 when a gate fails."""
    from arbiter.audit import AuditThresholds, ItemGrades, check_thresholds, summarize
    from arbiter.audit_run import grade_items, write_reports
    from arbiter.eval_loaders import FORMATS, load_items
    from arbiter.html_report import audit_html

    if fmt not in FORMATS:
        raise typer.BadParameter(f"expected one of {', '.join(FORMATS)}", param_hint="--format")
    input_paths = input_paths or []
    if not input_paths and regressions_path is None:
        raise typer.BadParameter("give a labelled set, or --regressions", param_hint="EVAL")
    models = _models_file(models_path)
    registry, _ = _registry(models, plugins)
    rubric = _load(rubric_arg, registry)
    source = ", ".join(str(p) for p in input_paths)
    loaded: list[Sample] = []
    for input_path in input_paths:
        try:
            found = load_items(input_path, fmt)
            if found is None:
                numbered, issues = parse_samples(
                    input_path.read_bytes().splitlines(), str(input_path)
                )
                _print_issues(issues)
                if issues:
                    err.print(f"{len(issues)} invalid line(s); nothing was audited", markup=False)
                    raise typer.Exit(1)
                found = [s for _, s in numbered]
        except (OSError, ValueError, KeyError) as e:
            err.print(f"{input_path}: cannot load as {fmt}: {e}", markup=False, soft_wrap=True)
            raise typer.Exit(1) from None
        loaded.extend(found)
    cases: dict[str, dict[str, Any]] = {}
    if regressions_path is not None:
        found, cases = _regression_cases(regressions_path)
        loaded.extend(found)
    counts = Counter(s.id for s in loaded)
    repeated = sorted(i for i, n in counts.items() if n > 1)
    if repeated:
        err.print(f"sample ids repeat across the sets: {', '.join(repeated[:20])}", markup=False)
        raise typer.Exit(1)

    from arbiter.load import cpu_load

    with cpu_load(under_load) as burners, _progress("auditing") as progress:
        if burners:
            err.print(f"grading under load: {burners} busy processes", markup=False)
        task = progress.add_task("audit", total=len(loaded))
        try:
            items = asyncio.run(
                grade_items(
                    rubric,
                    loaded,
                    registry,
                    report_dir=report,
                    resume=resume,
                    advance=lambda n: progress.advance(task, n),
                )
            )
        except ValueError as e:  # a malformed label
            err.print(str(e), markup=False, soft_wrap=True)
            raise typer.Exit(1) from None
        finally:
            registry.close()
    limits = AuditThresholds(
        min_hack_recall=min_hack_recall,
        max_false_positive_rate=max_false_positive_rate,
        min_determinism=min_determinism,
        min_tests_accuracy=min_tests_accuracy,
        min_band_accuracy=min_band_accuracy,
    )
    # A rubric with routes is audited route by route: each route is a rubric of its own
    # (its components, its figures, its gates), reported in a folder of its own.
    groups: dict[str | None, list[ItemGrades]] = {}
    for item in items:
        if item.id not in cases:  # regression cases are judged apart, below
            groups.setdefault(item.first.get("route"), []).append(item)
    failed: list[str] = []
    for route, group in groups.items():
        summary = summarize(group, registry)
        failed_here = check_thresholds(summary, limits)
        summary["gates_failed"] = failed_here
        failed += [f"route {route}: {line}" for line in failed_here] if route else failed_here
        where = report if report is None or route is None else report / f"route-{route}"
        if where is not None:
            identity = group[0].first["rubric"] if route else rubric.identity.model_dump()
            page = audit_html(
                summary, group, rubric=identity, source=source, failed_gates=failed_here
            )
            write_reports(where, summary, page)
        table = audit_table(summary)
        if route is not None:
            table.title = f"{table.title} (route {route})"
        out.print(table)
        if where is not None:
            out.print(f"report: {where / 'report.html'}", markup=False, highlight=False)
    if regressions_path is not None:
        failed += _judge_regressions(items, cases, rubric, report)
    for line in failed:
        err.print(f"gate failed: {line}", markup=False, soft_wrap=True)
    _report_failed_everywhere([item.first for item in items], strict)
    if failed:
        raise typer.Exit(1)


def _regression_cases(path: Path) -> tuple[list[Sample], dict[str, dict[str, Any]]]:
    """Read exported regression cases; exit 1 on a line that is not one."""
    from arbiter.regression_set import regression_label

    try:
        numbered, issues = parse_samples(path.read_bytes().splitlines(), str(path))
    except OSError as e:
        err.print(f"{path}: cannot read: {e}", markup=False, soft_wrap=True)
        raise typer.Exit(1) from None
    _print_issues(issues)
    if issues:
        err.print(f"{len(issues)} invalid line(s); nothing was audited", markup=False)
        raise typer.Exit(1)
    try:
        labels = {sample.id: regression_label(sample) for _, sample in numbered}
    except ValueError as e:
        err.print(f"{path}: {e}", markup=False, soft_wrap=True)
        raise typer.Exit(1) from None
    return [s for _, s in numbered], labels


def _judge_regressions(
    items: Sequence[Any], cases: dict[str, dict[str, Any]], rubric: Rubric, report: Path | None
) -> list[str]:
    """Judge the graded regression cases, print each let through; return the failed gates."""
    from arbiter.regression_set import describe, honest_rewards, judge_regressions

    honest = honest_rewards([i for i in items if i.id not in cases])
    judged = judge_regressions(
        [i for i in items if i.id in cases], cases, rubric=rubric, honest=honest
    )
    heading, *let_through = describe(judged)
    out.print(heading, markup=False, highlight=False, soft_wrap=True)
    for line in let_through:
        err.print(line, markup=False, soft_wrap=True)
    if report is not None:
        report.mkdir(parents=True, exist_ok=True)
        (report / "regressions.json").write_text(json.dumps(judged, indent=2) + "\n")
    count = len(judged["let_through"])
    return [f"{count} regression case(s) let through"] if count else []


def _selection(rows: list[dict[str, Any]], name: str | None, sha256: str | None) -> str:
    """Say which logged rewards a replay selected, and how to choose others."""
    versions = Counter((r["rubric_name"], r["rubric_version"], r["rubric_sha256"]) for r in rows)
    if sha256 is not None:
        head = f"selected {len(rows)} reward(s) logged under rubric sha256 {sha256[:12]}"
    elif name is not None:
        head = (
            f"selected {len(rows)} reward(s) logged under rubric name {name!r} "
            "(--from-sha256 for one version, --all-rubrics for every rubric)"
        )
    else:
        head = f"selected {len(rows)} reward(s) logged under any rubric (--all-rubrics)"
    parts = [f"{n} v{v} sha256:{s[:12]}: {count}" for (n, v, s), count in sorted(versions.items())]
    return head + ("" if not parts else "\n  " + "\n  ".join(parts))


def _stored_rubrics(stored: list[tuple[str, str]], registry: GraderRegistry) -> dict[str, Rubric]:
    """Return every stored rubric version that still parses, by sha256."""
    parsed = {}
    for text, origin in stored:
        with contextlib.suppress(RubricError):  # one the current graders no longer accept
            rubric = parse_rubric(text, source=origin, registry=registry)
            parsed[rubric.sha256] = rubric
    return parsed


@rewards_app.command("export")
def rewards_export(
    output: Annotated[
        Path | None, typer.Option("-o", "--output", help="JSONL file (default: stdout).")
    ] = None,
    database_url: Annotated[
        str | None, typer.Option(help="The store (default: ARBITER_DATABASE_URL).")
    ] = None,
    client: Annotated[str | None, typer.Option(help="Only this API key's (its id).")] = None,
    rubric: Annotated[str | None, typer.Option(help="Only this rubric name.")] = None,
    sample_id: Annotated[str | None, typer.Option(help="Only this sample id.")] = None,
    since: Annotated[float | None, typer.Option(help="Logged at or after (Unix seconds).")] = None,
    until: Annotated[float | None, typer.Option(help="Logged before (Unix seconds).")] = None,
) -> None:
    """Export logged rewards as JSON Lines, oldest first (the log is only read)."""
    from arbiter.api.settings import Settings
    from arbiter.reward_export import export_rewards
    from arbiter.store.db import Store
    from arbiter.store.reward_reads import RewardReader

    store = Store(database_url or Settings().database_url)
    try:
        with _output(output) as sink:
            count = export_rewards(
                RewardReader(store),
                sink,
                client=client,
                rubric=rubric,
                sample_id=sample_id,
                since=since,
                until=until,
            )
    finally:
        store.close()
    err.print(f"exported {count} reward(s)", markup=False)


@app.command("replay")
def replay_command(
    rubric_arg: Annotated[str, _rubric_option(f"The rubric to re-score with. {_RUBRIC_HELP}")],
    database_url: Annotated[
        str | None, typer.Option(help="The store (default: ARBITER_DATABASE_URL).")
    ] = None,
    logged_sha256: Annotated[
        str | None, typer.Option("--from-sha256", help="Only rewards logged under this rubric.")
    ] = None,
    since: Annotated[float | None, typer.Option(help="Logged at or after (Unix seconds).")] = None,
    until: Annotated[float | None, typer.Option(help="Logged before (Unix seconds).")] = None,
    sample_ids: Annotated[
        list[str] | None, typer.Option("--sample-id", help="Only these samples (repeatable).")
    ] = None,
    report: Annotated[
        Path | None, typer.Option("--report", help="Folder for report.html, summary.json.")
    ] = None,
    top: Annotated[int, typer.Option(help="How many of the most-moved items to list.")] = 25,
    all_rubrics: Annotated[
        bool,
        typer.Option(
            "--all-rubrics",
            help="Replay rewards logged under any rubric (default: only the new rubric's name).",
        ),
    ] = False,
    min_labels: Annotated[
        int, typer.Option(help="Labels a before/after agreement statistic needs.", min=1)
    ] = 50,
    models_path: ModelsOption = None,
    plugins: PluginsOption = None,
) -> None:
    """Re-score logged rewards under another rubric (the log is only read) and report the change.

    By default only rewards logged under the new rubric's name are replayed (any of
    its versions); ``--from-sha256`` narrows that to one version, ``--all-rubrics``
    widens it to everything in the window. Every moved item names the rules that
    moved it, and where reviewers labelled replayed items, agreement is reported
    before and after the edit.
    """
    import json

    from arbiter.api.settings import Settings
    from arbiter.html_report import replay_html
    from arbiter.replay import agreement_change, replay, summarize_replay
    from arbiter.store.review import ReviewQueue

    models = _models_file(models_path)
    registry, _ = _registry(models, plugins)
    rubric = _load(rubric_arg, registry)
    from arbiter.store.db import Store

    store = Store(database_url or Settings().database_url)
    try:
        by_name = None if all_rubrics or logged_sha256 is not None else rubric.name
        rows = store.reward_records(
            rubric_sha256=logged_sha256,
            rubric_name=by_name,
            since=since,
            until=until,
            sample_ids=sample_ids,
        )
        labels = ReviewQueue(store).labels(None if all_rubrics else rubric.name)
        stored = store.rubric_texts()
    finally:
        store.close()
    err.print(_selection(rows, by_name, logged_sha256), markup=False, highlight=False)
    if not rows:
        raise typer.Exit(1)
    try:
        pairs, skipped = asyncio.run(replay(rows, rubric, registry))
        logged_under = _stored_rubrics(stored, registry)
    finally:
        registry.close()
    summary = summarize_replay(pairs, skipped, top=top)
    summary["selected"] = {
        "rubric_name": by_name,
        "rubric_sha256": logged_sha256,
        "rewards": len(rows),
    }
    summary["agreement"] = agreement_change(
        pairs,
        labels,
        old_range=lambda sha: reward_range(logged_under.get(sha)),
        new_range=reward_range(rubric),
        min_labels=min_labels,
    )
    olds = sorted({r["rubric_sha256"] for r in rows})
    for table in replay_tables(summary, f"replay under {rubric.name} v{rubric.version}"):
        out.print(table)
    if report is not None:
        report.mkdir(parents=True, exist_ok=True)
        page = replay_html(summary, old=", ".join(s[:12] for s in olds), new=rubric.sha256[:12])
        (report / "report.html").write_text(page, encoding="utf-8")
        (report / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
        (report / "pairs.jsonl").write_text("".join(json.dumps(p) + "\n" for p in pairs))
        out.print(f"report: {report / 'report.html'}", markup=False, highlight=False)


@models_app.command("check")
def models_check(
    path: Annotated[Path, typer.Argument(help="A models file.")],
    names: Annotated[
        list[str] | None, typer.Option("--name", help="Only this model or judge (repeatable).")
    ] = None,
    ray_address: Annotated[
        str | None,
        typer.Option(envvar="ARBITER_RAY_ADDRESS", help="The cluster declared replicas run on."),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON lines.")] = False,
) -> None:
    """Load or reach each declared model, score one example twice, and report; exit 1 on failure.

    For each: reachable, warm (a second request answered), the example's score
    or verdict, the warm latency, tokens in and out, and a typed failure
    (unreachable, unauthorized, model_missing, wrong_output_shape,
    wrong_labels, no_verdict, ...).
    """
    from arbiter.reward_models.probe import probe_judge, probe_reward_model

    models = _models_file(path)
    assert models is not None
    wanted = set(names or ())
    unknown = wanted - set(models.spec.reward_models) - set(models.spec.judges)
    if unknown:
        raise typer.BadParameter(f"not declared in {path}: {', '.join(sorted(unknown))}")

    async def probe_all() -> list[Any]:
        reports = []
        for name, rm in models.spec.reward_models.items():
            if not wanted or name in wanted:
                reports.append(await probe_reward_model(name, rm, ray_address=ray_address))
        for name, judge in models.spec.judges.items():
            if not wanted or name in wanted:
                reports.append(await probe_judge(name, judge))
        return reports

    reports = asyncio.run(probe_all())
    if as_json:
        for report in reports:
            print(json.dumps(report.as_dict(), sort_keys=True))
    else:
        table = Table(title=f"models in {path}", title_justify="left")
        for column in ("kind", "name", "backend", "state", "reachable", "warm", "example"):
            table.add_column(column, overflow="fold")
        for column in ("latency", "tokens in/out"):
            table.add_column(column, justify="right")
        for r in reports:
            state = "[green]ok[/]" if r.ok else f"[red]{r.failure_kind}[/]"
            example = json.dumps(r.example, sort_keys=True) if r.example else "—"
            latency = "—" if r.latency_s is None else f"{1000 * r.latency_s:.1f} ms"
            table.add_row(
                r.kind,
                r.name,
                r.backend,
                state,
                "yes" if r.reachable else "no",
                "yes" if r.warm else "no",
                example,
                latency,
                f"{r.tokens_in}/{r.tokens_out}",
            )
        out.print(table)
        for r in reports:
            if r.failure:
                err.print(f"{r.kind} {r.name}: {r.failure_kind}: {r.failure}", markup=False)
    if not reports:
        err.print(f"{path} declares no models", markup=False)
        raise typer.Exit(1)
    if not all(r.ok for r in reports):
        raise typer.Exit(1)


@models_app.command("show")
def models_show(path: Annotated[Path, typer.Argument(help="A models file.")]) -> None:
    """Print the resolved declarations (every default filled in; no secret, URLs redacted)."""
    from arbiter.reward_models.declarations import shown

    models = _models_file(path)
    assert models is not None
    doc = {
        "reward_models": {n: shown(m) for n, m in models.spec.reward_models.items()},
        "judges": {n: shown(m) for n, m in models.spec.judges.items()},
    }
    print(f"# {path}  sha256: {models.sha256}")
    _print_yaml(doc)


@models_app.command("schema")
def models_schema(
    output: Annotated[
        Path | None, typer.Option("-o", "--output", help="Write to this file.")
    ] = None,
) -> None:
    """Print the JSON Schema of models files (for yaml-language-server and editors)."""
    from arbiter.rubrics.models_file import models_json_schema

    _write_schema(models_json_schema(), output)


def _print_yaml(doc: Any) -> None:
    """Print a document as block-style YAML, its keys in their own order."""
    yaml = YAML(typ="safe", pure=True)
    yaml.default_flow_style = False
    yaml.sort_base_mapping_type_on_output = False  # type: ignore[assignment]
    yaml.dump(doc, sys.stdout)


def _write_schema(schema: dict[str, Any], output: Path | None) -> None:
    """Write a JSON Schema to ``output`` (stdout when ``None``)."""
    text = json.dumps(schema, indent=2) + "\n"
    with _output(output) as sink:
        sink.write(text.encode("utf-8"))


_build_with_plain_help(app)


def main() -> None:
    """Run the CLI."""
    app()
