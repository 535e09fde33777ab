"""Run code on demand, confined: an agent's "execute code" tool, in SandboxFusion's shape.

A trainer's rollout may run the policy's code before it answers (verl's
``sandbox_fusion`` reward calls one run per test case). :func:`run_code` runs one
program with its stdin in any language the graders read, under the same sandbox,
limits and compile cache as a grading, and answers as SandboxFusion's
``/run_code`` does (``status``; ``compile_result`` and ``run_result``, each with its
own ``status``, ``execution_time``, ``return_code``, ``stdout`` and ``stderr``), so
a trainer configured for SandboxFusion switches by its URL. Its ``files``
(base64, by relative path) are written into the run's directory before the
program starts, and the files ``fetch_files`` names are read back from it once
every process of the run is gone (``files`` in the answer, base64 by path; a file
absent, not a regular file, or over 16 MiB in all is left out, and
``files_not_fetched`` says why). Three fields are ours:
``failure`` types what went wrong (``compile_error``, ``compile_timeout``,
``runtime_error``, ``timeout``, ``memory_limit``, ``output_limit``,
``sandbox_error``), ``memory_mb`` is the run's peak, and ``files_not_fetched``.

Statuses, as SandboxFusion's clients read them: ``Success`` when the program ran
and exited 0; ``Failed`` when the compile failed or timed out, or the run exited
non-zero, was killed, or timed out (``TimeLimitExceeded``); ``SandboxError`` for
a fault of ours (retried once first). A compile of code seen before is served
from the cache, so a call per test case compiles once.
"""

from __future__ import annotations

import base64
import binascii
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from arbiter.graders.languages import language as language_named
from arbiter.graders.languages.base import Language, MalformedProgram
from arbiter.graders.programs import CompileFailed
from arbiter.graders.sandbox import RunReport
from arbiter.graders.sandbox.errors import SandboxError
from arbiter.graders.unit_tests import UnitTestsConfig, UnitTestsGrader, out_of_memory

__all__ = ["LANGUAGES", "RunCodeRequest", "RunRefused", "run_code"]

#: SandboxFusion's language names (and ours) -> the language that runs them.
LANGUAGES = {
    "python": "python",
    "python3": "python",
    "cpp": "cpp",
    "nodejs": "javascript",
    "javascript": "javascript",
    "go": "go",
    "java": "java",
    "rust": "rust",
}
#: Each of stdout and stderr is cut to this many bytes (SandboxFusion keeps 1 MiB too).
MAX_STREAM_BYTES = 1 << 20
MAX_TIMEOUT_S = 60.0


class RunCodeRequest(BaseModel):
    """SandboxFusion's ``/run_code`` request (the fields its clients send)."""

    model_config = ConfigDict(extra="ignore", populate_by_name=True)

    code: str = Field(max_length=1 << 20, description="The program, whole.")
    language: str = Field(description="python, cpp, nodejs (or javascript), go, java or rust.")
    compile_timeout: float = Field(default=10, gt=0, le=MAX_TIMEOUT_S)
    run_timeout: float = Field(default=10, gt=0, le=MAX_TIMEOUT_S, description="CPU seconds.")
    memory_limit_MB: int = Field(default=-1, description="-1: the default (512 MiB).")
    stdin: str | None = Field(default=None, max_length=8 << 20)
    files: dict[str, str | None] = Field(
        default_factory=dict,
        description="Extra files in the run's directory: relative path -> base64 content "
        "(null: empty), at most 64, 16 MiB in all.",
    )
    fetch_files: list[str] = Field(
        default_factory=list,
        description="Files to read back from the run's directory after it ends, by relative "
        "path (at most 64; 16 MiB in all). Answered in 'files' as base64.",
    )


class RunRefused(ValueError):
    """A request this service cannot run as asked (the caller's to fix): what, and why."""


def _text(data: bytes, limit: int = MAX_STREAM_BYTES) -> str:
    return data[:limit].decode("utf-8", "replace")


def _result(
    status: str, seconds: float, code: int | None, out: bytes, err: bytes
) -> dict[str, Any]:
    return {
        "status": status,
        "execution_time": round(seconds, 4),
        "return_code": code,
        "stdout": _text(out),
        "stderr": _text(err),
    }


def _run_result(
    report: RunReport, lang: Language | None, memory_mb: int
) -> tuple[dict[str, Any], str | None]:
    """The run's SandboxFusion result, and our failure kind (None: it exited 0).

    Typed by the grader's own rules: a limit the sandbox saw, never words the
    program printed (its runtime's out-of-memory message counts only beside its
    measured peak).
    """
    code = report.exit_code if report.exit_code is not None else -(report.signal or 9)
    status = "Finished"
    failure: str | None = None
    if report.timed_out:
        status, failure = "TimeLimitExceeded", "timeout"
    elif report.output_limited:
        status, failure = "Error", "output_limit"
    elif code != 0 and out_of_memory(lang, report, _text(report.stderr), memory_mb):
        status, failure = "Error", "memory_limit"
    elif code != 0:
        failure = "runtime_error"
    return _result(status, report.wall_s, code, report.stdout, report.stderr), failure


def _config(request: RunCodeRequest) -> UnitTestsConfig:
    memory = request.memory_limit_MB if request.memory_limit_MB > 0 else 512
    if not 64 <= memory <= 8192:
        raise RunRefused(f"memory_limit_MB: expected 64 to 8192 (or -1), found {memory}")
    return UnitTestsConfig(
        timeout_s=request.run_timeout,
        memory_mb=memory,
        compile_timeout_s=request.compile_timeout,
        max_output_bytes=MAX_STREAM_BYTES,
    )


def run_code(grader: UnitTestsGrader, request: RunCodeRequest) -> dict[str, Any]:
    """Run ``request`` in the grader's sandbox; SandboxFusion's response, ``failure`` added.

    Raises :class:`RunRefused` for what cannot be run as asked (an unknown
    language, a file name outside the run's directory, in ``files`` or
    ``fetch_files``, a memory limit out of range). A fault of ours is retried once, then answered as
    ``SandboxError``.
    """
    name = LANGUAGES.get(request.language)
    if name is None:
        raise RunRefused(
            f"language: expected one of {', '.join(sorted(LANGUAGES))}; found {request.language!r}"
        )
    fetch = _fetch_names(request.fetch_files)
    extra = _files(request.files)
    config = _config(request)
    stdin = (request.stdin or "").encode("utf-8", "surrogatepass")
    last = ""
    for _ in range(2):
        try:
            return _once(grader, name, request.code, stdin, config, extra, fetch)
        except SandboxError as e:
            last = str(e)
    return {
        "status": "SandboxError",
        "message": f"the sandbox failed (ours; retry): {last}"[:2000],
        "compile_result": None,
        "run_result": None,
        "files": {},
        "failure": "sandbox_error",
        "files_not_fetched": dict.fromkeys(fetch, "the run did not happen"),
    }


def _answer(
    compiled: dict[str, Any] | None, run: dict[str, Any] | None, failure: str | None, **extra: Any
) -> dict[str, Any]:
    return {
        "status": "Success" if failure is None else "Failed",
        "message": "",
        "compile_result": compiled,
        "run_result": run,
        "files": {},
        "failure": failure,
        "files_not_fetched": {},
        **extra,
    }


MAX_FILES = 64
MAX_FILES_BYTES = 16 << 20


def _plain_path(field: str, name: str) -> None:
    """Refuse a name that is not a relative path of ordinary parts."""
    parts = name.split("/")
    if not name or name.startswith("/") or any(p in ("", ".", "..") for p in parts):
        raise RunRefused(f"{field}[{name!r}]: expected a relative path of plain names")
    if len(name) > 255 or "\x00" in name:
        raise RunRefused(f"{field}[{name!r}]: a name of at most 255 characters, no NUL")


def _fetch_names(names: list[str]) -> list[str]:
    """The files to read back, each name checked (the template checks them again)."""
    if len(names) > MAX_FILES:
        raise RunRefused(f"fetch_files: at most {MAX_FILES}, found {len(names)}")
    for name in names:
        _plain_path("fetch_files", name)
    return list(dict.fromkeys(names))


def _files(files: dict[str, str | None]) -> list[list[Any]]:
    """The request's files as the run's (``[path, mode, base64]``), each name checked here.

    A name is a relative path inside the run's directory, of ordinary parts
    (the template checks it again as it writes, refusing links and repeats).
    """
    if len(files) > MAX_FILES:
        raise RunRefused(f"files: at most {MAX_FILES}, found {len(files)}")
    out, total = [], 0
    for name, content in files.items():
        _plain_path("files", name)
        try:
            data = base64.b64decode(content or "", validate=True)
        except (binascii.Error, ValueError) as e:
            raise RunRefused(f"files[{name!r}]: expected base64 ({e})") from None
        total += len(data)
        if total > MAX_FILES_BYTES:
            raise RunRefused(f"files: over {MAX_FILES_BYTES >> 20} MiB in all")
        out.append([name, 0o600, base64.b64encode(data).decode("ascii")])
    return out


def _once(
    grader: UnitTestsGrader,
    name: str,
    code: str,
    stdin: bytes,
    config: UnitTestsConfig,
    extra: list[list[Any]],
    fetch: list[str],
) -> dict[str, Any]:
    if name == "python":
        report = grader.pool.run_script(code, stdin, config.limits(), extra, fetch)
        run, failure = _run_result(report, None, config.memory_mb)
        return _answer(None, run, failure, **_ran(report, fetch))
    lang = language_named(name)
    toolchain = grader.programs.toolchain(name)
    if toolchain is None:
        raise RunRefused(f"language: this host has no {name} toolchain")
    run_limits, build_limits = config.language_limits_for(lang)
    try:
        build = lang.program(code)
    except MalformedProgram as e:
        failed = _result("Finished", 0.0, 1, b"", str(e).encode())
        return _answer(failed, None, "compile_error", **_not_run(fetch))
    made, _cached = grader.programs.artifact(lang, toolchain, build, build_limits)
    if isinstance(made, CompileFailed):
        if made.ended in ("timeout", "killed"):
            # The candidate's own compile past its limit (ours waiting is never counted).
            failed = _result("TimeLimitExceeded", config.compile_timeout_s or 0.0, None, b"", b"")
            return _answer(failed, None, "compile_timeout", **_not_run(fetch))
        failed = _result("Finished", 0.0, 1, b"", made.diagnostics.encode())
        return _answer(failed, None, "compile_error", **_not_run(fetch))
    compiled = _result("Finished", made.compile_s, 0, b"", b"")
    spec = grader.programs.run_spec(lang, toolchain, build, made, config.memory_mb)
    if extra:
        taken = {str(f[0]) for f in spec["files"]}
        clash = sorted(taken & {str(f[0]) for f in extra})
        if clash:
            raise RunRefused(f"files: {clash} would replace the program's own files")
        spec = {**spec, "files": [*spec["files"], *extra]}
    report = grader.pool.program_run(spec, stdin, run_limits, fetch)
    run, failure = _run_result(report, lang, config.memory_mb)
    return _answer(compiled, run, failure, **_ran(report, fetch))


def _ran(report: RunReport, fetch: list[str]) -> dict[str, Any]:
    """The answer's fields from a run that happened: its peak memory and fetched files."""
    files = {n: base64.b64encode(report.fetched[n]).decode("ascii") for n in report.fetched}
    missing = {n: report.not_fetched.get(n, "not read back") for n in fetch if n not in files}
    return {
        "memory_mb": round(report.maxrss_kb / 1024, 1),
        "files": files,
        "files_not_fetched": missing,
    }


def _not_run(fetch: list[str]) -> dict[str, Any]:
    return {"files_not_fetched": dict.fromkeys(fetch, "the program did not run")}
