"""Programs in other languages: compiled once in the sandbox, judged by a trusted harness.

One module, one job: programs in other languages, from toolchain to verdict. The
toolchains, the single-flight compile cache and the bridged session share one cache
directory and one set of build limits.

For a ``test_program`` or a non-Python ``stdin_stdout`` task the unit-test grader
asks this module for three things:

* **the toolchain** of the task's language (:meth:`Programs.toolchain`): found
  on this host once, and prepared once (a language's shared libraries, built
  on the trusted side into the cache directory); ``None`` when a tool is
  missing, which the grader reports as ``toolchain_missing``;
* **the candidate's artifact** (:meth:`Programs.artifact`): the build is
  compiled *in the sandbox* (the compiler reads the candidate's code, so it is
  confined like a run), and what it produced comes back as bytes, kept in
  memory by a hash of the sources, commands, language and toolchain version.
  Every test case of a ``stdin_stdout`` task and every repeat of a completion
  in a GRPO group runs on that one artifact; concurrent requests for the same
  key compile it once;
* **a bridged session** (:meth:`Programs.session`): the candidate's program
  runs in a sandbox slot with the run's channel as its descriptor 3; the
  task's harness (its tests, the prompt's helpers, one stub per declared
  function) runs on the trusted side, compiled here once per task; this
  thread relays each call from the harness to the candidate and each reply
  back, frame by frame (:mod:`arbiter.graders.languages.wire`). The time the
  harness works between calls is credited to the candidate's deadline, as the
  Python tests' is.

The verdict is what the harness reports. The candidate's process can print,
exit, or answer anything; only its replies reach the harness, as data.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import logging
import math
import os
import select
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from arbiter.graders.credit import ours
from arbiter.graders.languages import LANGUAGES, local, wire
from arbiter.graders.languages import language as language_named
from arbiter.graders.languages.base import Build, Language, Toolchain
from arbiter.graders.sandbox.clock import RunDeadline
from arbiter.graders.sandbox.errors import SandboxError
from arbiter.graders.sandbox.pool import Limits, RunReport, SandboxPool, toolchain_cache

__all__ = [
    "Artifact",
    "CompileFailed",
    "Programs",
    "SessionOutcome",
]

log = logging.getLogger("arbiter.graders.programs")

#: Bytes of compiled artifacts kept in memory (least recently used out first).
ARTIFACT_CACHE_BYTES = 512 << 20
#: Compiled harnesses kept on disk (one per task and language).
HARNESS_CACHE = 512
#: How long a harness may run, all told, on the trusted side.
HARNESS_WALL_S = 300.0
#: A compile's output cap: the run directory's own size.
COMPILE_OUTPUT_BYTES = 64 << 20
#: A failed compile that used this share of its CPU-time limit (whole seconds, as
#: RLIMIT_CPU counts; the accounting lags the kernel's check) ran out of it.
_CPU_SPENT = 0.9
#: The compiler's diagnostics kept as a failure's evidence.
DIAGNOSTICS_CHARS = 4000


@dataclass(frozen=True, slots=True)
class Artifact:
    """A compiled build, as the files a run is given."""

    key: str
    files: list[list[Any]]
    size: int
    compile_s: float


@dataclass(frozen=True, slots=True)
class CompileFailed:
    """A build that did not compile: the compiler's diagnostics, and how it ended."""

    diagnostics: str
    #: ``error`` (the compiler said no), ``timeout`` or ``killed`` (a limit stopped it).
    ended: str
    report: RunReport | None = None


@dataclass
class SessionOutcome:
    """A bridged session: the harness's run and the candidate's."""

    harness_exit: int | None
    harness_stdout: str
    harness_stderr: str
    calls: int
    #: Why the candidate's side stopped answering, or ``None`` if it answered every call.
    candidate_ended: str | None
    report: RunReport | None
    harness_s: float
    #: Each call the harness made and the candidate's reply (when asked to record).
    exchanges: list[tuple[bytes, bytes]] = field(default_factory=list)
    #: The candidate's reply to each hidden call, ``None`` where it gave none.
    hidden_replies: list[bytes | None] = field(default_factory=list)


@dataclass
class _Flight:
    done: threading.Event = field(default_factory=threading.Event)
    value: Any = None


def _key(language: Language, toolchain: Toolchain, build: Build) -> str:
    blob = json.dumps(
        [
            language.name,
            toolchain.version,
            sorted(build.files.items()),
            build.compile,
            build.artifacts,
            build.run,
            sorted(build.env.items()),
            build.flags,
        ]
    )
    return hashlib.sha256(blob.encode()).hexdigest()


def _spent(report: RunReport, limits: Limits) -> bool:
    """Whether a compile used up its CPU time (the limit is whole seconds)."""
    return report.cpu_s >= _CPU_SPENT * max(1, math.ceil(limits.timeout_s))


def _files_message(files: dict[str, str]) -> list[list[Any]]:
    return [[n, 0o600, base64.b64encode(t.encode()).decode()] for n, t in sorted(files.items())]


class Programs:
    """Toolchains, compiled artifacts and harnesses for one grader; thread-safe."""

    #: The wall-clock limit of a harness's compile (ours, on the trusted side).
    HARNESS_COMPILE_S = 300.0

    def __init__(self, pool: Callable[[], SandboxPool], cache_dir: str | None = None) -> None:
        self._pool = pool
        self._cache_dir = cache_dir
        self._lock = threading.Lock()
        self._toolchains: dict[str, Toolchain | None] = {}
        self._toolchain_locks: dict[str, threading.Lock] = {}
        #: Language -> why its toolchain is missing ("" when it is there).
        self.missing: dict[str, str] = {}
        self._artifacts: OrderedDict[str, Artifact] = OrderedDict()
        self._artifact_bytes = 0
        self._harnesses: OrderedDict[str, str | CompileFailed] = OrderedDict()
        self._flights: dict[str, _Flight] = {}
        self._harness_root: str | None = None
        #: Artifact look-ups answered from the cache, and compiles made.
        self.hits = 0
        self.misses = 0

    # --- toolchains -----------------------------------------------------------

    def cache_dir(self) -> str:
        """The root of prepared libraries (created on first use)."""
        if self._cache_dir is None:
            self._cache_dir = toolchain_cache()
        return self._cache_dir

    def language_cache(self, name: str) -> str:
        """The directory ``{cache}`` stands for in a language's commands."""
        path = os.path.join(self.cache_dir(), name)
        os.makedirs(path, 0o755, exist_ok=True)
        return path

    def toolchain(self, name: str) -> Toolchain | None:
        """Return the language's prepared toolchain, or ``None`` when this host lacks it."""
        with self._lock:
            if name in self._toolchains:
                return self._toolchains[name]
            lock = self._toolchain_locks.setdefault(name, threading.Lock())
        with lock:
            with self._lock:
                if name in self._toolchains:
                    return self._toolchains[name]
            lang = language_named(name)
            found = lang.find_toolchain()
            why = f"it needs {', '.join(lang.tools)}"
            if found is not None:
                try:
                    found = lang.prepare(found, self.language_cache(name))
                except (OSError, RuntimeError, subprocess.SubprocessError) as e:
                    found, why = None, f"preparing it failed: {e}"
                    log.warning("the %s toolchain cannot be prepared: %s", name, e)
            with self._lock:
                self._toolchains[name] = found
                self.missing[name] = why if found is None else ""
            return found

    def prepare_all(self) -> dict[str, bool]:
        """Find and prepare every language's toolchain (the grader's warm-up); say which exist."""
        return {name: self.toolchain(name) is not None for name in LANGUAGES}

    # --- the candidate's artifact ---------------------------------------------

    def artifact(
        self, lang: Language, toolchain: Toolchain, build: Build, limits: Limits
    ) -> tuple[Artifact | CompileFailed, bool]:
        """Compile ``build`` in the sandbox once per key; return it and whether it was cached.

        The compile, and the wait for it, are ours: the grading job's deadline
        moves with them (:func:`arbiter.graders.credit.ours`). Raises
        :class:`SandboxError` for a fault of the sandbox's own.
        """
        with ours():
            return self._artifact(lang, toolchain, build, limits)

    def _artifact(
        self, lang: Language, toolchain: Toolchain, build: Build, limits: Limits
    ) -> tuple[Artifact | CompileFailed, bool]:
        key = _key(lang, toolchain, build)
        while True:
            with self._lock:
                cached = self._artifacts.get(key)
                if cached is not None:
                    self._artifacts.move_to_end(key)
                    self.hits += 1
                    return cached, True
                flight = self._flights.get(key)
                if flight is None:
                    flight = self._flights[key] = _Flight()
                    mine = True
                else:
                    mine = False
            if not mine:
                flight.done.wait()
                if isinstance(flight.value, CompileFailed):
                    with self._lock:
                        self.hits += 1
                    return flight.value, True
                continue  # compiled (look it up) or the compile raised (try ourselves)
            try:
                made = self._compile(key, lang, toolchain, build, limits)
                flight.value = made
                with self._lock:
                    self.misses += 1
                    if isinstance(made, Artifact):
                        self._remember(made)
                return made, False
            finally:
                with self._lock:
                    self._flights.pop(key, None)
                flight.done.set()

    def forget(self, key: str) -> None:
        """Drop one artifact (a benchmark's compile-per-case baseline compiles it afresh)."""
        with self._lock:
            old = self._artifacts.pop(key, None)
            if old is not None:
                self._artifact_bytes -= old.size

    def clear(self) -> None:
        """Forget every artifact and harness (a benchmark measuring first sight uses it)."""
        with self._lock:
            self._artifacts.clear()
            self._artifact_bytes = 0
            dirs = [d for d in self._harnesses.values() if isinstance(d, str)]
            self._harnesses.clear()
        for d in dirs:
            shutil.rmtree(d, ignore_errors=True)

    def _remember(self, made: Artifact) -> None:
        self._artifacts[made.key] = made
        self._artifact_bytes += made.size
        while self._artifact_bytes > ARTIFACT_CACHE_BYTES and len(self._artifacts) > 1:
            _, old = self._artifacts.popitem(last=False)
            self._artifact_bytes -= old.size

    def _compile(
        self, key: str, lang: Language, toolchain: Toolchain, build: Build, limits: Limits
    ) -> Artifact | CompileFailed:
        cache = self.language_cache(lang.name)
        steps = [
            local.resolve(c, toolchain, "{out}", cache, limits.memory_mb) for c in build.compile
        ]
        spec = {
            "files": _files_message(build.files),
            "steps": steps,
            "env": _env(build, cache),
            "collect": list(build.artifacts),
            "collect_cap": COMPILE_OUTPUT_BYTES,
        }
        started = time.monotonic()
        report, sent = self._pool().build_run(spec, limits)
        seconds = time.monotonic() - started
        diagnostics = (report.stderr + report.stdout).decode("utf-8", "replace")
        if sent is None:
            if report.cpu_limited or _spent(report, limits):
                return CompileFailed(
                    f"the compiler used up its {limits.timeout_s:g} s of CPU time",
                    "timeout",
                    report,
                )
            if report.timed_out:
                # Its wall-clock backstop passed with its CPU time to spare: the
                # compile waited (for a CPU, for a busy host), and waiting is ours.
                raise SandboxError(
                    f"a compile ran past its {limits.wall_s:g} s backstop having used "
                    f"{report.cpu_s:.1f} s of its {limits.timeout_s:g} s of CPU time"
                )
            if report.exit_code not in (0, None) and not report.signal:
                # The build's own process failed (its artifacts over the cap, say).
                return CompileFailed(diagnostics[-DIAGNOSTICS_CHARS:], "error", report)
            raise SandboxError(
                f"the build run ended without a result (exit {report.exit_code}, signal "
                f"{report.signal}): {diagnostics[-500:]}"
            )
        statuses = sent.get("steps") or []
        if len(statuses) < len(steps) or any(s != [0, None] for s in statuses):
            last = statuses[-1] if statuses else [None, None]
            ended = "error" if last[1] is None else "killed"
            # SIGXCPU, or a compiler driver reporting its compiler's (g++ exits with
            # "CPU time limit exceeded signal terminated program cc1plus"): the
            # compile's own CPU time ran out.
            if last[1] == signal.SIGXCPU or _spent(report, limits):
                ended = "timeout"
            return CompileFailed(diagnostics[-DIAGNOSTICS_CHARS:], ended, report)
        files = sent.get("files") or []
        size = sum(len(f[2]) for f in files)
        if build.artifacts and not files:
            return CompileFailed("the build produced none of its artifacts", "error", report)
        return Artifact(key=key, files=files, size=size, compile_s=seconds)

    # --- the harness ----------------------------------------------------------

    def harness(self, lang: Language, toolchain: Toolchain, build: Build) -> str | CompileFailed:
        """Compile the task's harness on the trusted side once; return its directory.

        A compiler's error is the task's (its tests do not compile) and is kept;
        a compile that a limit stopped (a busy host, a cold build cache) says
        nothing about the task: :class:`SandboxError`, ours to retry, never kept.
        """
        with ours():
            return self._harness(lang, toolchain, build)

    def _harness(self, lang: Language, toolchain: Toolchain, build: Build) -> str | CompileFailed:
        key = _key(lang, toolchain, build)
        with self._lock:
            if self._harness_root is None:
                self._harness_root = tempfile.mkdtemp(prefix="arbiter-harness-")
            found = self._harnesses.get(key)
            if found is not None:
                self._harnesses.move_to_end(key)
                return found
            lock = self._toolchain_locks.setdefault("harness:" + key, threading.Lock())
        with lock:
            with self._lock:
                found = self._harnesses.get(key)
                if found is not None:
                    return found
            out = os.path.join(self._harness_root, key[:32])
            shutil.rmtree(out, ignore_errors=True)
            os.makedirs(out)
            done = local.compile_build(
                build,
                out,
                toolchain,
                self.language_cache(lang.name),
                timeout_s=self.HARNESS_COMPILE_S,
                private=self.private_dir(lang.name),
            )
            if not done.ok and done.ended != "error":
                # Not kept (the next grading compiles again, under the same lock), and
                # its diagnostics stay out: the harness holds the task's tests.
                shutil.rmtree(out, ignore_errors=True)
                raise SandboxError(
                    f"the task's harness compile was stopped ({done.ended}) "
                    f"after {done.seconds:.1f} s"
                )
            result: str | CompileFailed = (
                out if done.ok else CompileFailed(done.diagnostics[-DIAGNOSTICS_CHARS:], "error")
            )
            with self._lock:
                self._harnesses[key] = result
                self._toolchain_locks.pop("harness:" + key, None)
                while len(self._harnesses) > HARNESS_CACHE:
                    _, old = self._harnesses.popitem(last=False)
                    if isinstance(old, str):
                        shutil.rmtree(old, ignore_errors=True)
            return result

    def private_dir(self, name: str) -> str:
        """The trusted side's own build cache for a language's harnesses (``{private}``)."""
        with self._lock:
            if self._harness_root is None:
                self._harness_root = tempfile.mkdtemp(prefix="arbiter-harness-")
            path = os.path.join(self._harness_root, f"private-{name}")
            lock = self._toolchain_locks.setdefault("private:" + name, threading.Lock())
        with lock:
            if not os.path.isdir(path):
                os.makedirs(path, 0o700)
                try:
                    language_named(name).seed_private(self.language_cache(name), path)
                except OSError as e:  # a cold cache: slower, never wrong
                    log.warning("the %s harness cache was not seeded: %s", name, e)
        return path

    def close(self) -> None:
        """Remove the compiled harnesses."""
        with self._lock:
            root, self._harness_root = self._harness_root, None
            self._harnesses.clear()
        if root is not None:
            shutil.rmtree(root, ignore_errors=True)

    # --- runs -----------------------------------------------------------------

    def run_spec(
        self, lang: Language, toolchain: Toolchain, build: Build, artifact: Artifact, memory_mb: int
    ) -> dict[str, Any]:
        """The template's message for a run of ``artifact`` (its ``{memory_mb}``: the heap)."""
        cache = self.language_cache(lang.name)
        return {
            "files": artifact.files,
            "argv": local.resolve(build.run, toolchain, "{out}", cache, memory_mb),
            "env": _env(build, cache),
        }

    def session(
        self,
        spec: dict[str, Any],
        limits: Limits,
        lang: Language,
        toolchain: Toolchain,
        harness_build: Build,
        harness_dir: str,
        *,
        record: bool = False,
        hidden: Sequence[bytes] = (),
    ) -> SessionOutcome:
        """Run the candidate's program against the harness, relaying every call.

        ``record`` keeps every call and reply in the outcome's ``exchanges``; the
        ``hidden`` calls (request payloads) follow the harness's in the same run
        (see :func:`_relay`).
        """
        exchanges: list[tuple[bytes, bytes]] = []
        hidden_replies: list[bytes | None] = []
        cache = self.language_cache(lang.name)
        with (
            self._pool().bridge_run(spec, limits) as run,
            tempfile.TemporaryFile() as out,
            tempfile.TemporaryFile() as err,
        ):
            ours, theirs = socket.socketpair()
            started = time.monotonic()
            run.deadline.working()  # the harness starts: the trusted side's time
            try:
                proc = local.start(
                    harness_build,
                    harness_dir,
                    toolchain,
                    cache,
                    theirs.fileno(),
                    stdout=out,
                    stderr=err,
                    private=self.private_dir(lang.name),
                )
            except OSError as e:
                ours.close()
                theirs.close()
                raise SandboxError(f"the harness did not start: {e}") from e
            theirs.close()
            try:
                calls, ended = _relay(
                    ours,
                    run.channel,
                    run.deadline,
                    started + HARNESS_WALL_S,
                    exchanges if record else None,
                    hidden,
                    hidden_replies,
                )
            finally:
                ours.close()
                with contextlib.suppress(subprocess.TimeoutExpired):
                    proc.wait(timeout=max(0.1, started + HARNESS_WALL_S - time.monotonic()))
                if proc.poll() is None:
                    with contextlib.suppress(ProcessLookupError):
                        os.killpg(proc.pid, 9)
                    proc.wait()
                run.deadline.waiting()
            harness_s = time.monotonic() - started
            out.seek(0)
            err.seek(0)
            harness_out = out.read(1 << 20).decode("utf-8", "replace")
            harness_err = err.read(1 << 20).decode("utf-8", "replace")
        return SessionOutcome(
            harness_exit=proc.returncode if proc.returncode >= 0 else None,
            harness_stdout=harness_out,
            harness_stderr=harness_err,
            calls=calls,
            candidate_ended=ended,
            report=run.report,
            harness_s=harness_s,
            exchanges=exchanges,
            hidden_replies=hidden_replies,
        )

    def calls(
        self, spec: dict[str, Any], limits: Limits, requests: Sequence[bytes]
    ) -> list[bytes | None]:
        """Run a program and make ``requests`` of it directly, with no harness.

        Returns each reply (``None`` from the first the program did not answer
        on). For a reference's answers to hidden cases.
        """
        replies: list[bytes | None] = []
        with self._pool().bridge_run(spec, limits) as run:
            reader = _Reader(run.channel, run.deadline.at)
            for request in requests:
                if replies and replies[-1] is None:
                    replies.append(None)  # it stopped answering
                    continue
                run.deadline.waiting()
                reply, _ = _ask(run.channel, reader, request)
                run.deadline.working()
                replies.append(reply)
        return replies


def _env(build: Build, cache: str) -> dict[str, str]:
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": "{out}", "TMPDIR": "{out}"}
    env["LANG"] = "C.UTF-8"
    env.update({k: v.replace("{cache}", cache) for k, v in build.env.items()})
    return env


class _Reader:
    """Reads a socket in pieces, giving up at a deadline that may move."""

    def __init__(self, sock: socket.socket, deadline: Callable[[], float]) -> None:
        self.sock = sock
        self.deadline = deadline
        self.buffer = b""
        self.timed_out = False

    def read(self, n: int) -> bytes:
        while not self.buffer:
            left = self.deadline() - time.monotonic()
            if left <= 0:
                self.timed_out = True
                raise TimeoutError("the deadline passed")
            self.sock.settimeout(min(left, 0.25))
            try:
                chunk = self.sock.recv(1 << 16)
            except TimeoutError:
                continue
            if not chunk:
                return b""
            self.buffer = chunk
        piece, self.buffer = self.buffer[:n], self.buffer[n:]
        return piece


def _pending(sock: socket.socket) -> bool:
    """Whether ``sock`` holds bytes to read now (an end of stream is not bytes)."""
    ready, _, _ = select.select([sock], [], [], 0)
    if not ready:
        return False
    try:
        return bool(sock.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT))
    except (BlockingIOError, OSError):
        return False


def _ask(candidate: socket.socket, reader: _Reader, request: bytes) -> tuple[bytes | None, str]:
    """Send one call to the candidate and read its reply: ``(reply, "")``, or ``(None, why)``."""
    try:
        if reader.buffer or _pending(candidate):
            # Bytes before the call was sent: replies written blind, not answers.
            return None, "out of turn: the program wrote before it was called"
        candidate.sendall(wire.frame(request))
        reply = wire.read_frame(reader.read)
    except TimeoutError:
        return None, "timeout"
    except wire.WireError as e:
        return None, f"malformed reply: {e}"
    except OSError:
        return None, "closed"
    return (reply, "") if reply is not None else (None, "closed")


def _relay(
    harness: socket.socket,
    candidate: socket.socket,
    deadline: RunDeadline,
    wall: float,
    record: list[tuple[bytes, bytes]] | None = None,
    hidden: Sequence[bytes] = (),
    hidden_replies: list[bytes | None] | None = None,
) -> tuple[int, str | None]:
    """Pass each call from the harness to the candidate and its reply back, one at a time.

    Returns the calls made and why the candidate stopped answering (``None``: it
    answered every call the harness made). The candidate's end closing, its
    deadline passing or a malformed reply all close the harness's end: its stub
    fails the call (a failed test), and the harness goes on or ends.

    ``record`` is given each call and its reply. Once the harness is done, each
    of the ``hidden`` calls is sent as the harness's were (the candidate cannot
    tell them apart but by their order), and its reply, or ``None`` where the
    candidate gave none, goes to ``hidden_replies``.
    """
    from_harness = _Reader(harness, lambda: wall)
    from_candidate = _Reader(candidate, deadline.at)
    calls = 0
    ended: str | None = None
    while True:
        try:
            request = wire.read_frame(from_harness.read)
        except (OSError, wire.WireError, TimeoutError):
            request = None
        if request is None:
            break
        deadline.waiting()
        calls += 1
        reply, why = _ask(candidate, from_candidate, request)
        deadline.working()
        if reply is None:
            with contextlib.suppress(OSError):
                harness.shutdown(socket.SHUT_RDWR)
            ended = why
            break
        if record is not None:
            record.append((request, reply))
        try:
            harness.sendall(wire.frame(reply))
        except OSError:
            break
    if hidden_replies is not None:
        for request in hidden:
            if ended is not None:
                hidden_replies.append(None)
                continue
            deadline.waiting()
            reply, why = _ask(candidate, from_candidate, request)
            deadline.working()
            hidden_replies.append(reply)
            if reply is None:
                ended = why
    return calls, ended
