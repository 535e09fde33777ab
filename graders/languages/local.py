"""Builds carried out as plain subprocesses: the trusted side's own programs.

The harness (the tests, the prompt's helpers and the stubs: no candidate code)
is compiled and run here, on the trusted side, as the Python tests run in the
service's process. A candidate's build never comes here: it is compiled and
run in the sandbox (:mod:`arbiter.graders.programs`).
"""

from __future__ import annotations

import contextlib
import math
import os
import resource
import signal
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from arbiter.graders.languages.base import Build, Toolchain

__all__ = ["CompileOutcome", "compile_build", "resolve", "run_env", "start", "write_files"]

#: What a trusted harness may use: generous, but a runaway test is still stopped.
HARNESS_CPU_S = 120
HARNESS_MEMORY_MB = 8192


@dataclass(frozen=True, slots=True)
class CompileOutcome:
    """How a build's commands ended: ``ok``, or the failing command's diagnostics.

    ``ended`` tells a compiler's own verdict (``error``: it exited with a
    status) from a limit that stopped it (``timeout``: the wall-clock limit;
    ``killed``: a signal, such as SIGXCPU at the CPU limit or the kernel's
    out-of-memory killer). Only an error says something about the sources.
    """

    ok: bool
    diagnostics: str
    seconds: float
    ended: str = "ok"


def _place(word: str, out: str, cache: str, private: str, memory_mb: int) -> str:
    word = word.replace("{out}", out).replace("{cache}", cache)
    return word.replace("{private}", private).replace("{memory_mb}", str(memory_mb))


def resolve(
    argv: Sequence[str],
    toolchain: Toolchain,
    out: str,
    cache: str,
    memory_mb: int = 1024,
    private: str = "",
) -> list[str]:
    """Replace the tool name and the ``{out}``, ``{cache}``, ``{private}``, ``{memory_mb}``.

    ``{private}`` is a directory of the trusted side's own (a harness's build
    cache): never readable by a sandboxed run, so only harness builds use it.
    """
    words = [_place(w, out, cache, private, memory_mb) for w in argv]
    if words and words[0] in toolchain.paths:
        words[0] = toolchain.paths[words[0]]
    return words


def run_env(build: Build, out: str, cache: str, private: str = "") -> dict[str, str]:
    """The environment of a build's commands and run: its own, nothing inherited."""
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": out, "TMPDIR": out, "LANG": "C.UTF-8"}
    env.update({k: _place(v, out, cache, private, 1024) for k, v in build.env.items()})
    return env


def write_files(files: Mapping[str, str], out: str) -> None:
    """Write a build's sources under ``out`` (relative paths only)."""
    for name, text in files.items():
        path = Path(out, name)
        if path.is_absolute() and not path.resolve().is_relative_to(Path(out).resolve()):
            raise ValueError(f"{name!r} is not a path under the build directory")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def _limits(cpu_s: int, memory_mb: int) -> Callable[[], None]:
    def apply() -> None:
        resource.setrlimit(resource.RLIMIT_CPU, (cpu_s, cpu_s + 1))
        resource.setrlimit(resource.RLIMIT_AS, (memory_mb << 20, memory_mb << 20))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))

    return apply


def compile_build(
    build: Build,
    out: str,
    toolchain: Toolchain,
    cache: str,
    *,
    timeout_s: float = 300.0,
    private: str = "",
) -> CompileOutcome:
    """Write the sources and run the compile commands in ``out``, in order."""
    started = time.monotonic()
    write_files(build.files, out)
    env = run_env(build, out, cache, private)
    for command in build.compile:
        argv = resolve(command, toolchain, out, cache, private=private)
        # A session (and process group) of its own: a compiler driver's children
        # (cc1plus, as, ld) go with it when it is stopped, never left running.
        proc = subprocess.Popen(
            argv,
            cwd=out,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
            preexec_fn=_limits(max(1, math.ceil(timeout_s)), HARNESS_MEMORY_MB),
        )
        try:
            stdout, stderr = proc.communicate(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            # The driver is not reaped yet, so its pid is still its group's id.
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
            message = f"{argv[0]} ran past {timeout_s:g} s"
            return CompileOutcome(False, message, _since(started), "timeout")
        if proc.returncode != 0:
            text = (stderr + stdout).decode("utf-8", "replace")
            ended = "killed" if proc.returncode < 0 else "error"
            return CompileOutcome(False, text, _since(started), ended)
    return CompileOutcome(True, "", _since(started))


def start(
    build: Build,
    out: str,
    toolchain: Toolchain,
    cache: str,
    bridge: int | None,
    *,
    stdout: Any = subprocess.PIPE,
    stderr: Any = subprocess.PIPE,
    private: str = "",
) -> subprocess.Popen[bytes]:
    """Start the build's run in ``out``, with ``bridge`` as its descriptor 3 (if given)."""
    argv = resolve(build.run, toolchain, out, cache, private=private)
    env = run_env(build, out, cache, private)
    limits = _limits(HARNESS_CPU_S, HARNESS_MEMORY_MB)

    def setup() -> None:
        limits()
        if bridge == 3:
            os.set_inheritable(3, True)  # dup2(3, 3) would leave it close-on-exec
        elif bridge is not None:
            os.dup2(bridge, 3)  # inheritable; every other descriptor here is close-on-exec

    # close_fds would close descriptor 3 after preexec_fn made it (subprocess keeps
    # only pass_fds by number); the process's own descriptors are all close-on-exec
    # (PEP 446), so without it the harness still inherits only 0-3.
    return subprocess.Popen(
        argv,
        cwd=out,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=stdout,
        stderr=stderr,
        close_fds=bridge is None,
        preexec_fn=setup,
        start_new_session=True,
    )


def _since(started: float) -> float:
    return time.monotonic() - started
