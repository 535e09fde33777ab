r"""The documentation's examples, found in its markdown and run as a reader would run them.

A fenced block is an example when the line above its fence (blank lines aside) is
``<!-- run -->``; ``<!-- not run: WHY -->`` says why a block is only shown. Every
``bash``, ``sh``, ``shell``, ``console`` and ``python`` block of the README and of
``docs/`` carries one or the other, so no example is left unchecked by oversight.
The comments render as nothing, on GitHub and on the site.

- A ``bash`` (``sh``, ``shell``) block runs as one script under ``bash -euo
  pipefail``; a ``python`` block runs as a script with the development environment's
  Python. Either passes when it exits 0 (or with the status its marker names:
  ``<!-- run: exit=1 -->``), and, when the next block is marked ``<!-- output -->``
  (a ``text`` block), when what it printed matches that block.
- A ``console`` block is commands after ``$ `` (a line ending in ``\`` goes on) and,
  below each, what it prints: each command runs on its own, as a terminal's shell runs
  it (its status is its pipeline's last command's), and what it printed
  must match the lines shown (none shown: not compared). Every command must exit 0
  but the last, whose status is the marker's ``exit=`` (0 by default).

Matching: output is stdout and stderr together. Each line is compared after its
trailing blanks are dropped and its runs of blanks are made one (a table's column
widths may vary); leading and trailing blank lines are ignored. ``...`` in a shown
line matches any text in that line, and a line that is ``...`` alone matches any
number of lines: timings, paths, hashes and a long table's rows are written so.

The examples of one page run in order, in one fresh folder holding a link to each
top-level entry of the repository (so ``eval_sets/...`` and ``rubrics/...`` resolve,
and what an example writes lands in the folder), with the development environment's
``bin`` first on ``PATH``, no ``ARBITER_*`` variable but ``ARBITER_DATABASE_URL`` (a
SQLite file in that folder), and proxies that point nowhere: an example that
reaches beyond this host fails. ``<!-- run: server -->`` gives the example a
running ``arbiter serve`` (one per test session) as ``ARBITER_URL``, with a trainer
key in ``ARBITER_API_KEY``, an admin key in ``ARBITER_ADMIN_KEY``, and its store as
``ARBITER_DATABASE_URL`` (as a command run on the service's host would have it). Each
example has ``timeout=`` seconds (120 by default).
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[2]

#: The languages whose blocks are examples: each must be run or say why not.
SHELL = {"bash", "sh", "shell"}
LANGUAGES = SHELL | {"console", "python"}

_FENCE = re.compile(r"^(?P<indent>\s*)(?P<fence>`{3,}|~{3,})\s*(?P<info>[^`]*?)\s*$")
_RUN = re.compile(r"^\s*<!--\s*run(?::\s*(?P<options>.*?))?\s*-->\s*$")
_NOT_RUN = re.compile(r"^\s*<!--\s*not run:\s*(?P<why>.+?)\s*-->\s*$")
_OUTPUT = re.compile(r"^\s*<!--\s*output\s*-->\s*$")

DEFAULT_TIMEOUT_S = 120.0


@dataclass
class Block:
    """A fenced block of a markdown file, and the marker above it."""

    path: Path
    line: int  # of the opening fence, 1-based
    language: str
    code: str
    marker: str | None  # "run", "not run", "output" or None
    options: str = ""
    end: int = 0  # the line of the closing fence


@dataclass
class Example:
    """A block to run, with what it must print (``None``: not compared)."""

    block: Block
    expected: str | None = None
    exit_status: int = 0
    timeout_s: float = DEFAULT_TIMEOUT_S
    server: bool = False

    @property
    def where(self) -> str:
        """``file:line`` of the example's fence."""
        try:
            shown = self.block.path.relative_to(ROOT)
        except ValueError:
            shown = self.block.path
        return f"{shown}:{self.block.line}"


def blocks(path: Path) -> list[Block]:
    """Return every fenced block of a markdown file, each with the marker above it."""
    lines = path.read_text(encoding="utf-8").splitlines()
    out: list[Block] = []
    previous = ""  # the last non-blank line outside a block
    i = 0
    while i < len(lines):
        match = _FENCE.match(lines[i])
        if not match:
            if lines[i].strip():
                previous = lines[i]
            i += 1
            continue
        indent, fence = len(match["indent"]), match["fence"]
        language = (match["info"].split() or [""])[0].lower()
        body: list[str] = []
        j = i + 1
        while j < len(lines) and not lines[j].strip().startswith(fence):
            body.append(lines[j][indent:] if lines[j][:indent].strip() == "" else lines[j])
            j += 1
        marker, options = None, ""
        if run := _RUN.match(previous):
            marker, options = "run", run["options"] or ""
        elif _NOT_RUN.match(previous):
            marker = "not run"
        elif _OUTPUT.match(previous):
            marker = "output"
        out.append(Block(path, i + 1, language, "\n".join(body), marker, options, j + 1))
        previous = ""
        i = j + 1
    return out


def _options(block: Block) -> dict[str, str]:
    out: dict[str, str] = {}
    for word in block.options.split():
        name, _, value = word.partition("=")
        if name not in ("exit", "timeout", "server"):
            raise ValueError(f"{block.path}:{block.line}: unknown run option {name!r}")
        out[name] = value
    return out


def examples(path: Path) -> list[Example]:
    """Return the examples of a markdown file, in order, each with its shown output."""
    found: list[Example] = []
    for block in blocks(path):
        if block.marker == "output":
            if not found or found[-1].expected is not None or found[-1].block.end + 1 > block.line:
                raise ValueError(f"{path}:{block.line}: an output block follows no example")
            between = path.read_text(encoding="utf-8").splitlines()[
                found[-1].block.end : block.line - 1
            ]
            if any(line.strip() and not _OUTPUT.match(line) for line in between):
                raise ValueError(f"{path}:{block.line}: text between an example and its output")
            found[-1].expected = block.code
        elif block.marker == "run":
            options = _options(block)
            found.append(
                Example(
                    block,
                    exit_status=int(options.get("exit") or 0),
                    timeout_s=float(options.get("timeout") or DEFAULT_TIMEOUT_S),
                    server="server" in options,
                )
            )
    return found


def unmarked(path: Path) -> list[Block]:
    """Return the example-language blocks of a file that say neither run nor why not."""
    return [b for b in blocks(path) if b.language in LANGUAGES and b.marker is None]


def pages() -> list[Path]:
    """The README and every page of the site's sources."""
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


# -- matching ------------------------------------------------------------------------


def _normal(text: str) -> list[str]:
    lines = [re.sub(r"[ \t]+", " ", line.rstrip()) for line in text.splitlines()]
    while lines and not lines[0]:
        lines.pop(0)
    while lines and not lines[-1]:
        lines.pop()
    return lines


def matches(expected: str, actual: str) -> bool:
    """Whether ``actual`` is what ``expected`` shows, by the module's rule."""
    pattern = []
    for line in _normal(expected):
        if line.strip() == "...":
            pattern.append(r"(?:[^\n]*\n)*?")
        else:
            parts = [re.escape(part) for part in line.split("...")]
            pattern.append("[^\n]*?".join(parts) + r"\n")
    text = "".join(line + "\n" for line in _normal(actual))
    return re.fullmatch("".join(pattern), text) is not None


# -- running -------------------------------------------------------------------------


def environment(folder: Path, extra: Mapping[str, str] = {}) -> dict[str, str]:
    """The environment an example runs in (see the module's docstring)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ARBITER_")}
    nowhere = "http://127.0.0.1:9"
    env.update(
        {
            "PATH": f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}",
            "ARBITER_DATABASE_URL": f"sqlite:///{folder / 'arbiter.db'}",
            "NO_COLOR": "1",
            "COLUMNS": "140",
            "TERM": "dumb",
            "PYTHONUNBUFFERED": "1",
            **dict.fromkeys(("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY"), nowhere),
            **dict.fromkeys(("no_proxy", "NO_PROXY"), "127.0.0.1,localhost"),
            **extra,
        }
    )
    return env


def workspace(folder: Path) -> Path:
    """Fill ``folder`` with a link to each top-level entry of the repository."""
    folder.mkdir(parents=True, exist_ok=True)
    for entry in ROOT.iterdir():
        if entry.name != ".git" and not (folder / entry.name).exists():
            (folder / entry.name).symlink_to(entry)
    return folder


@dataclass
class Failed:
    """An example that did not do what its page says."""

    example: Example
    why: str

    def __str__(self) -> str:
        return f"{self.example.where}: {self.why}"


def _run(
    argv: list[str], folder: Path, env: Mapping[str, str], timeout_s: float
) -> tuple[int, str]:
    """Run a command in its own session; kill the session when it outlasts its time."""
    process = subprocess.Popen(
        argv,
        cwd=folder,
        env=dict(env),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        out, _ = process.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        out, _ = process.communicate()
        return -9, out.decode("utf-8", "replace") + f"\n(killed after {timeout_s:g} s)"
    finally:
        # What the example left running in the background (a server it started).
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
    return process.returncode, out.decode("utf-8", "replace")


def _console(code: str) -> Iterator[tuple[str, str]]:
    """A console block's commands, each with the output shown below it."""
    command: list[str] = []
    shown: list[str] = []
    going_on = False
    for line in code.splitlines():
        if going_on:
            command.append(line)
            going_on = line.endswith("\\")
        elif line.startswith("$ "):
            if command:
                yield "\n".join(command), "\n".join(shown)
            command, shown = [line[2:]], []
            going_on = line.endswith("\\")
        else:
            shown.append(line)
    if command:
        yield "\n".join(command), "\n".join(shown)


def _mismatch(expected: str, actual: str) -> str:
    return f"printed\n{textwrap_indent(actual)}\nwhich does not match\n{textwrap_indent(expected)}"


def textwrap_indent(text: str) -> str:
    """Indent text for a failure message."""
    return "\n".join("    " + line for line in text.rstrip().splitlines())


def run(example: Example, folder: Path, env: Mapping[str, str]) -> Failed | None:
    """Run one example in ``folder``; return why it failed, or ``None``."""
    block = example.block
    if block.language == "console":
        commands = list(_console(block.code))
        if not commands:
            return Failed(example, "a console block with no `$ ` command")
        for number, (command, shown) in enumerate(commands, 1):
            wanted = example.exit_status if number == len(commands) else 0
            status, out = _run(["bash", "-c", command], folder, env, example.timeout_s)
            if status != wanted:
                return Failed(example, f"`{command}` exited {status}, not {wanted}:\n{out}")
            if shown.strip() and not matches(shown, out):
                return Failed(example, f"`{command}` " + _mismatch(shown, out))
        return None
    if block.language in SHELL:
        argv = ["bash", "-euo", "pipefail", "-c", block.code]
    elif block.language == "python":
        argv = [sys.executable, "-c", block.code]
    else:
        return Failed(example, f"cannot run a {block.language or 'plain'} block")
    status, out = _run(argv, folder, env, example.timeout_s)
    if status != example.exit_status:
        return Failed(example, f"exited {status}, not {example.exit_status}:\n{out}")
    if example.expected is not None and not matches(example.expected, out):
        return Failed(example, _mismatch(example.expected, out))
    return None


# -- a service for the examples that call one ------------------------------------------


@dataclass
class Service:
    """``arbiter serve`` on a free port over a SQLite store, with a trainer and an admin key."""

    folder: Path
    url: str = ""
    keys: dict[str, str] = field(default_factory=dict)
    process: subprocess.Popen[bytes] | None = None

    def start(self, timeout_s: float = 180.0) -> dict[str, str]:
        """Start the server; return the variables an example gets."""
        workspace(self.folder)
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        env = environment(self.folder, {"ARBITER_PORT": str(port)})
        for role in ("trainer", "admin"):
            made = subprocess.run(
                ["arbiter", "keys", "create", "--role", role, "--name", f"docs-{role}"],
                cwd=self.folder,
                env=env,
                capture_output=True,
                text=True,
                check=True,
            )
            self.keys[role] = made.stdout.strip()
        log = (self.folder / "server.log").open("wb")
        self.process = subprocess.Popen(
            ["arbiter", "serve", "--graceful-s", "2"],
            cwd=self.folder,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        self.url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                break
            try:
                if httpx.get(f"{self.url}/readyz", timeout=2).status_code == 200:
                    return self.variables()
            except httpx.HTTPError:
                pass
            time.sleep(0.5)
        self.stop()
        tail = (self.folder / "server.log").read_text(errors="replace")[-3000:]
        raise RuntimeError(f"arbiter serve did not become ready:\n{tail}")

    def variables(self) -> dict[str, str]:
        """``ARBITER_URL``, the keys, and the service's store as ``ARBITER_DATABASE_URL``."""
        return {
            "ARBITER_URL": self.url,
            "ARBITER_API_KEY": self.keys["trainer"],
            "ARBITER_ADMIN_KEY": self.keys["admin"],
            "ARBITER_DATABASE_URL": f"sqlite:///{self.folder / 'arbiter.db'}",
        }

    def stop(self) -> None:
        """Stop the server (SIGTERM, then SIGKILL)."""
        if self.process is None or self.process.poll() is not None:
            return
        os.killpg(self.process.pid, signal.SIGTERM)
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()


def run_page(path: Path, folder: Path, service: Service | None = None) -> tuple[int, list[Failed]]:
    """Run a page's examples in order in ``folder``; return how many ran, and the first failure.

    The page stops at its first failure: later examples may need what it made.
    """
    workspace(folder)
    ran = 0
    for example in examples(path):
        extra: dict[str, str] = {}
        if example.server:
            if service is None:
                return ran, [Failed(example, "needs a server, and none was given")]
            extra = service.variables() if service.url else service.start()
        failed = run(example, folder, environment(folder, extra))
        ran += 1
        if failed is not None:
            return ran, [failed]
    return ran, []
