"""What a language gives the unit-test grader: builds of its programs, as plain data.

A language never runs anything. It turns a task (the prompt, the candidate's
code, the tests) into :class:`Build` descriptions that the grader carries out:

* the **candidate's build** (:meth:`Language.candidate`): the candidate's code
  and a *dispatcher* that serves the functions the tests call, one call per
  request on descriptor 3 (see :mod:`arbiter.graders.languages.wire`). It is
  compiled and run in the sandbox, like a Python candidate;
* the **harness build** (:meth:`Language.harness`): the task's tests, the
  prompt's own helpers, and a *stub* in place of each function the candidate
  writes, which sends the call over descriptor 3 and decodes the reply into the
  declared type. It holds no line the candidate wrote, so what it reports (its
  exit status, its test runner's tally) is the verdict: the trusted side, as
  the Python tests are;
* a **standalone program** (:meth:`Language.program`) for ``stdin_stdout``
  tasks: the candidate's code alone, compiled once and run once per case.

A command's first word is a tool name the language declares in ``tools``;
the grader resolves it to the toolchain's absolute path. ``{out}`` in a
command or a run line stands for the directory the build's files and
artifacts live in.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from dataclasses import dataclass, field
from typing import ClassVar

__all__ = [
    "Build",
    "Declared",
    "Language",
    "LanguageLimits",
    "MalformedProgram",
    "ProgramParts",
    "Toolchain",
    "UnsupportedTask",
    "source_text",
    "task_text",
]


class UnsupportedTask(ValueError):
    """The task cannot be built in this language (a declaration the harness cannot stub).

    Raised by a language for a task, never for a candidate: the grader reports it
    as the task's collection error, with this message.
    """


class MalformedProgram(ValueError):
    """The candidate's code cannot be made into a build: the candidate's fault, not the task's.

    Raised by the readers of the candidate's code (:meth:`Language.candidate`,
    :meth:`Language.program`) for text no compiler can be handed: text that is not
    Unicode a file can hold (a lone surrogate has no UTF-8 form). Everything else a
    reader does not understand goes to the compiler, whose diagnostics say why. The
    grader reports it as the candidate's compile error, with this message; it is
    never an :class:`UnsupportedTask`, which blames the task.
    """


def _not_unicode(text: str) -> str | None:
    """Why ``text`` cannot be written to a file as UTF-8 (where and what), or None if it can."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as e:
        line = text.count("\n", 0, e.start) + 1
        bad = text[e.start : e.end].encode("utf-8", "backslashreplace").decode()
        return f"{e.reason} at line {line} ({bad})"
    return None


def source_text(code: str) -> str:
    r"""Return ``code`` when it can be written to a source file as UTF-8.

    Raises:
        MalformedProgram: ``code`` holds a lone surrogate (JSON's ``"\ud800"`` decodes
            to one), which no file holds: writing the build would fail on our side.
    """
    why = _not_unicode(code)
    if why is not None:
        raise MalformedProgram(f"the code is not valid Unicode text: {why}")
    return code


def task_text(*texts: str) -> None:
    r"""Check that the task's own text (prompt, tests, setup) can be written to a file.

    Raises:
        UnsupportedTask: a text holds a lone surrogate (JSON's ``"\ud800"``): the
            task's fault, so the reward abstains; a candidate that continues such a
            prompt is not blamed for it.
    """
    for text in texts:
        why = _not_unicode(text)
        if why is not None:
            raise UnsupportedTask(f"the task's text is not valid Unicode: {why}")


@dataclass(frozen=True, slots=True)
class Declared:
    """A function the candidate writes, as the prompt (or the code) declares it.

    ``header`` is the declaration's text up to its opening brace, as written;
    ``params`` are (name, type) pairs in the language's own spelling, and
    ``returns`` the return type (``""`` where the language declares none).
    """

    name: str
    header: str
    params: tuple[tuple[str, str], ...]
    returns: str


@dataclass(frozen=True, slots=True)
class ProgramParts:
    """A ``test_program`` task with the candidate's code, as the grader hands it over.

    ``code`` is the candidate's whole program: the prompt continued by the
    completion when the completion is a body, or the completion alone when it
    stands on its own (``continued`` says which). ``prompt`` is the prompt's
    text as the task gave it.
    """

    prompt: str
    code: str
    tests: str
    setup_code: str = ""
    entry_point: str | None = None
    continued: bool = True


@dataclass(frozen=True, slots=True)
class Build:
    """One program to compile and run, as data.

    ``files``: relative path → source text, written before compiling.
    ``compile``: commands run in order in ``{out}``; a failing one stops the
    build and its diagnostics are the evidence. ``artifacts``: the relative
    paths the run needs (files or directories), kept after compiling (for an
    interpreted language, the sources themselves). ``run``: the argv of the
    run. ``env``: the environment of both (``PATH`` is never inherited).
    ``flags`` is folded into the artifact's cache key with the sources.
    """

    files: dict[str, str]
    compile: tuple[tuple[str, ...], ...]
    artifacts: tuple[str, ...]
    run: tuple[str, ...]
    env: dict[str, str] = field(default_factory=dict)
    flags: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class LanguageLimits:
    """A language's defaults for one run, where they differ from the task's.

    Runtimes reserve address space and start threads of their own: a JVM or
    V8 under a Python-sized RLIMIT_AS does not start (the memory limit that
    breaks a runtime). ``address_space_mb`` is added to the task's memory limit
    for the run's RLIMIT_AS; the candidate's heap is bounded by the runtime's
    own flag at the task's memory limit, so running out of it is a typed
    ``memory_limit``. ``threads`` is added to the task's process limit
    (RLIMIT_NPROC counts threads).
    """

    address_space_mb: int = 0
    threads: int = 0
    #: Open files per process a run needs at least (a JVM maps its modules).
    open_files: int = 64
    compile_cpu_s: float = 30.0
    compile_memory_mb: int = 2048
    compile_processes: int = 32


@dataclass(frozen=True, slots=True)
class Toolchain:
    """The tools of a language found on this host, by name, and their version text."""

    paths: dict[str, str]
    version: str
    #: Directories the sandbox must let a run read and execute (the toolchain's own trees).
    roots: tuple[str, ...] = ()


class Language:
    """One language: its tools, limits, and builds. Subclasses fill in the three builds."""

    name: ClassVar[str] = ""
    #: Fenced-block tags that mean this language (the first is the canonical one).
    tags: ClassVar[tuple[str, ...]] = ()
    #: Tool names the builds use, in the order they are looked for.
    tools: ClassVar[tuple[str, ...]] = ()
    #: The command whose output is the toolchain's version (its tool name first).
    version_command: ClassVar[tuple[str, ...]] = ()
    #: Extra directories a run reads (libraries, the runtime's own tree).
    extra_roots: ClassVar[tuple[str, ...]] = ()
    limits: ClassVar[LanguageLimits] = LanguageLimits()
    #: Patterns in a run's stderr that mean its runtime ran out of memory.
    out_of_memory: ClassVar[tuple[re.Pattern[str], ...]] = ()

    def find_toolchain(self) -> Toolchain | None:
        """Return this host's toolchain for the language, or ``None`` if a tool is missing."""
        paths: dict[str, str] = {}
        for tool in self.tools:
            found = shutil.which(tool, path="/usr/local/bin:/usr/bin:/bin")
            if found is None:
                return None
            paths[tool] = found
        try:
            argv = [paths[self.version_command[0]], *self.version_command[1:]]
            done = subprocess.run(argv, capture_output=True, timeout=30, check=False, env={})
        except (OSError, subprocess.TimeoutExpired, KeyError, IndexError):
            return None
        version = (done.stdout + done.stderr).decode("utf-8", "replace").strip()
        return Toolchain(paths=paths, version=version, roots=self.extra_roots)

    def defines(self, code: str, name: str) -> bool:
        """Whether ``code`` defines the function ``name`` (so it stands without the prompt).

        ``code`` is the candidate's: this never raises, whatever it holds.
        """
        raise NotImplementedError

    def declared(self, parts: ProgramParts) -> list[Declared]:
        """The functions the candidate writes and the tests call, declared by the prompt.

        Raises :class:`UnsupportedTask` when none can be found, and nothing else.
        """
        raise NotImplementedError

    def candidate(self, parts: ProgramParts) -> Build:
        """The candidate's code with the dispatcher that serves the declared functions.

        Raises :class:`UnsupportedTask` for what the prompt declares (the task's), and
        :class:`MalformedProgram` for the candidate's code; it raises nothing else.
        """
        raise NotImplementedError

    def harness(self, parts: ProgramParts) -> Build:
        """The tests, the prompt's helpers and a stub per declared function: no candidate code.

        Reads the task's text only; raises :class:`UnsupportedTask`, nothing else.
        """
        raise NotImplementedError

    def program(self, code: str) -> Build:
        """The candidate's code as a standalone program (``stdin_stdout``).

        Raises :class:`MalformedProgram` for code no build can hold, nothing else.
        """
        raise NotImplementedError

    def naive(self, parts: ProgramParts) -> Build:
        """The peers' harness: the candidate's code and the tests as one program.

        Its verdict is the exit status alone. It is what the attacks' controls
        run (each attack must pass it) and the benchmark's per-problem baseline;
        the grader never uses it.
        """
        raise NotImplementedError

    def prepare(self, toolchain: Toolchain, cache_dir: str) -> Toolchain:
        """Build once what every run shares (libraries' compiled forms) under ``cache_dir``.

        Runs on the trusted side, before the first build; ``{cache}`` in a
        command stands for ``cache_dir``. Returns the toolchain with the roots
        the sandbox must also let runs read (``cache_dir`` among them if used).
        """
        return toolchain

    def seed_private(self, cache_dir: str, private: str) -> None:
        """Fill a fresh ``{private}``, the harnesses' own build cache, from ``cache_dir``.

        What :meth:`prepare` built there, so the first harness does not compile
        the libraries again. Only our own prepare writes ``cache_dir``.
        """

    def harness_passed(self, exit_code: int | None, stdout: str, stderr: str) -> tuple[int, int]:
        """Read the harness's run: (tests passed, tests run). By default one program, one test.

        Only the harness's own output is read here; it holds no candidate code.
        """
        return (1 if exit_code == 0 else 0), 1
