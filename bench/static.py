"""Bandit + radon per file: in-process (the graders' analyses) against the CLIs, same run.

Files: the 164 HumanEvalPack canonical solutions (prompt + canonical solution)
and bandit's example files, from ``../shared/data``. For each file the baseline
is what a grader shelling out would pay: ``bandit -f json``, ``radon cc -j`` and
``radon mi -j``, one after the other, from the same virtual environment as this
interpreter. Ours is :func:`arbiter.graders.bandit.analyze_bandit` plus
:func:`arbiter.graders.radon.measure_radon` on the code string, uncached (the
graders' cache would make every repeat free, which is not what is measured).

Both sides run in one process, one file at a time, so the per-file times are
latencies, not throughput. The agreement lines check that both sides found the
same thing: bandit's issue count (the CLI honours ``# nosec``, so ours does here
too) and radon's maintainability index, bit for bit.

Run: ``.venv/bin/python -m bench.static [--limit N]``.
"""

from __future__ import annotations

import io
import json
import logging
import statistics
import subprocess
import sys
import tempfile
import time
import tokenize
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import typer

from arbiter.graders.bandit import BanditSelection, analyze_bandit
from arbiter.graders.radon import RadonOptions, measure_radon

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"
BIN = Path(sys.executable).parent
#: What the bandit CLI does by default: honour ``# nosec``.
SELECTION = BanditSelection(honor_nosec=True)
OPTIONS = RadonOptions()


@dataclass(frozen=True, slots=True)
class Outcome:
    """What one side found in one file, and how long it took (None: it could not tell)."""

    seconds: float
    issues: int | None
    mi: float | None
    declined: bool = False  # the grader refused (a statement too long for radon)


def load_files(limit: int | None, workdir: Path) -> list[tuple[str, Path, str]]:
    """Return (label, path on disk, source) for every file, HumanEvalPack first."""
    humaneval = DATA / "humanevalpack_python.jsonl"
    examples = DATA / "bandit" / "examples"
    if not humaneval.exists() or not examples.is_dir():
        raise SystemExit(f"the shared data is absent: need {humaneval} and {examples}")
    files: list[tuple[str, Path, str]] = []
    rows = [json.loads(line) for line in humaneval.read_text().splitlines() if line.strip()]
    for row in rows[:limit]:
        path = workdir / (row["task_id"].replace("/", "_") + ".py")
        path.write_text(row["prompt"] + row["canonical_solution"])
        files.append(("humanevalpack", path, path.read_text()))
    for path in sorted(examples.rglob("*.py"))[:limit]:
        # As Python decodes it: the latin-1 example declares its encoding.
        files.append(("bandit-example", path, _decode(path.read_bytes())))
    return files


def _decode(raw: bytes) -> str:
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(raw).readline)
        return raw.decode(encoding)
    except (SyntaxError, UnicodeDecodeError):
        # nonsense2.py is gzip data: a model's text never is, but it must not parse.
        return raw.decode("utf-8", "replace")


def in_process(source: str) -> Outcome:
    """Run both analyses on the code string, as the graders do."""
    started = time.perf_counter()
    security = analyze_bandit(source, SELECTION)
    complexity = measure_radon(source, OPTIONS)
    seconds = time.perf_counter() - started
    issues = None if security.syntax_error is not None else len(security.findings)
    measured = complexity.syntax_error is None and complexity.unanalysable is None
    return Outcome(
        seconds,
        issues,
        complexity.maintainability_index if measured else None,
        declined=complexity.unanalysable is not None,
    )


def _run(*argv: str) -> Any:
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    return json.loads(done.stdout) if done.stdout.strip() else None


def with_cli(path: Path) -> Outcome:
    """Run ``bandit -f json``, ``radon cc -j`` and ``radon mi -j`` on the file."""
    started = time.perf_counter()
    bandit = _run(str(BIN / "bandit"), "-f", "json", str(path))
    _run(str(BIN / "radon"), "cc", "-j", str(path))
    mi = _run(str(BIN / "radon"), "mi", "-j", str(path))
    seconds = time.perf_counter() - started
    issues = None if not bandit or bandit.get("errors") else len(bandit["results"])
    mi_value = (mi or {}).get(str(path), {}).get("mi")
    return Outcome(seconds, issues, None if mi_value is None else float(mi_value))


def main(
    limit: Annotated[
        int | None, typer.Option(help="At most this many files from each source.")
    ] = None,
) -> None:
    """Time bandit + radon per file, in-process and through the CLIs, and print the ratio."""
    # bandit warns on stderr for every unknown word after "# nosec"; the CLI pays
    # for that too, but its warnings are not what is measured here.
    logging.getLogger("bandit").setLevel(logging.ERROR)
    with tempfile.TemporaryDirectory(prefix="arbiter-bench-static-") as tmp:
        files = load_files(limit, Path(tmp))
        in_process(files[0][2])  # imports and bandit's test set: paid once per process
        ours = [in_process(source) for _, _, source in files]
        cli = [with_cli(path) for _, path, _ in files]

    counts = {
        label: sum(1 for f in files if f[0] == label)
        for label in ("humanevalpack", "bandit-example")
    }
    same_issues = sum(1 for a, b in zip(ours, cli, strict=True) if a.issues == b.issues)
    both_mi = [
        (a.mi, b.mi)
        for a, b in zip(ours, cli, strict=True)
        if a.mi is not None and b.mi is not None
    ]
    same_mi = sum(1 for a, b in both_mi if a == b)
    cli_unread = sum(1 for a, b in zip(ours, cli, strict=True) if a.mi is not None and b.mi is None)
    declined = sum(1 for o in ours if o.declined)
    unparsed = sum(1 for o in ours if o.issues is None)
    ours_p50 = statistics.median(o.seconds for o in ours) * 1e3
    cli_p50 = statistics.median(o.seconds for o in cli) * 1e3

    typer.echo(
        f"files: {len(files)} ({counts['humanevalpack']} HumanEvalPack canonical solutions, "
        f"{counts['bandit-example']} bandit examples); {unparsed} do not parse"
    )
    typer.echo(
        f"agreement: bandit issue count {same_issues}/{len(files)}; maintainability index "
        f"{same_mi}/{len(both_mi)} (radon's CLI could not read {cli_unread} that the API did; "
        f"the radon grader declined {declined} with a statement too long to analyse in time)"
    )
    typer.echo(
        f"baseline CLIs (bandit -f json + radon cc -j + radon mi -j): "
        f"p50 {cli_p50:.1f} ms/file, total {sum(o.seconds for o in cli):.1f} s"
    )
    typer.echo(
        f"in-process (bandit + radon APIs):                          "
        f"p50 {ours_p50:.2f} ms/file, total {sum(o.seconds for o in ours):.2f} s"
    )
    typer.echo(f"ratio (CLI p50 / in-process p50): {cli_p50 / ours_p50:.1f}x")


if __name__ == "__main__":
    typer.run(main)
