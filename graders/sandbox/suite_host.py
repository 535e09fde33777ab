"""The trusted side of pytest-kind tasks: a warmed pytest process that forks one child per suite.

The candidate's module is loaded in a confined child of the sandbox pool, as for
function tasks; its channel's descriptor is handed to a child of the suite host
(:mod:`arbiter.graders.sandbox.suite_server`), which runs the task's test files against a
proxy of that module and writes the verdict on a pipe this side reads. The host
is a fresh interpreter started with an empty environment (never a fork of the
service, which holds secrets) and it never runs candidate code, so what it
reports is the verdict itself. A suite that runs past its deadline is killed.
"""

from __future__ import annotations

import atexit
import contextlib
import dataclasses
import json
import os
import select
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass, field
from typing import Any, ClassVar

from arbiter.graders.sandbox._frames import CONTROL_MAX_BYTES, recv_frame, send_frame
from arbiter.graders.sandbox.clock import RunDeadline
from arbiter.graders.sandbox.lanes import RANK_EVERY_S, cpu_time_s
from arbiter.graders.sandbox.pool import (
    REPORT_GRACE_S,
    SandboxError,
    boot_of,
    log_tail,
    spawn_boot,
)

__all__ = ["SuiteHost", "SuiteReport"]

_START_TIMEOUT_S = 60.0
#: How long past the run's deadline a suite may take to write its report.
SUITE_GRACE_S = REPORT_GRACE_S / 5
#: A suite's report: outcomes, evidence and a 2 KB output tail.
_MAX_REPORT_BYTES = 4 << 20
_HOST_BOOT = boot_of("suite_server")


@dataclass(frozen=True, slots=True)
class SuiteReport:
    """What the trusted pytest process concluded (a verdict: no candidate code ran there)."""

    #: Node id (with parameters) → ``passed``, ``failed`` or ``skipped``.
    outcomes: dict[str, str]
    #: pytest's exit status; None when the suite never finished (killed at its deadline).
    status: int | None
    collect_errors: list[str] = field(default_factory=list)
    #: Why the candidate's module did not load ("" when it did).
    load_error: str = ""
    #: After a collection error: whether the files collect with placeholders in
    #: the candidate's place (then the error is the candidate's); None if not asked.
    collects_without_candidate: bool | None = None
    #: After a collection error: whether the files fail with placeholders too, each
    #: file with the same exception (then the task's own); None if not asked.
    fails_alike: bool | None = None
    #: After a collection error: the declared names the candidate's module lacks.
    missing: list[str] = field(default_factory=list)
    #: How the channel to the candidate broke (timeout, exited, garbled, output_limit), if it did.
    broken: str | None = None
    broken_detail: str = ""
    events: list[str] = field(default_factory=list)
    #: Evidence of values built to deceive a comparison (see graders.sandbox._remote).
    flags: list[str] = field(default_factory=list)
    output_tail: str = ""
    timed_out: bool = False
    #: ``cpu`` when the suite's own work ran past the CPU it is given (the tests'
    #: work on what the candidate returned: the candidate's), else None.
    trusted_limit: str | None = None

    @classmethod
    def parse(cls, raw: bytes, *, timed_out: bool) -> SuiteReport:
        """Read the suite child's report; an empty one (killed, crashed) has no outcomes."""
        if not raw:
            return cls({}, None, timed_out=timed_out)
        try:
            data = json.loads(raw)
        except ValueError as e:
            raise SandboxError(f"the trusted suite process wrote a malformed report: {e}") from e
        return cls(
            outcomes={str(k): str(v) for k, v in dict(data.get("outcomes") or {}).items()},
            status=data.get("status"),
            collect_errors=[str(e) for e in data.get("collect_errors") or []],
            load_error=str(data.get("load_error") or ""),
            missing=[str(n) for n in data.get("missing") or []],
            fails_alike=(
                bool(data["fails_alike"]) if data.get("fails_alike") is not None else None
            ),
            collects_without_candidate=(
                bool(data["collects_without_candidate"])
                if data.get("collects_without_candidate") is not None
                else None
            ),
            broken=data.get("broken"),
            broken_detail=str(data.get("broken_detail") or ""),
            events=[str(e) for e in data.get("events") or []],
            flags=[str(f) for f in data.get("flags") or []],
            output_tail=str(data.get("output_tail") or data.get("error") or ""),
            timed_out=timed_out,
        )


class SuiteHost:
    """One trusted pytest host process; thread-safe, started on first use, restarted if it dies."""

    _shared: ClassVar[SuiteHost | None] = None
    _shared_lock: ClassVar[threading.Lock] = threading.Lock()

    @classmethod
    def shared(cls) -> SuiteHost:
        """Return the process-wide host (stopped at exit; it dies with this process anyway)."""
        with cls._shared_lock:
            if cls._shared is None:
                cls._shared = cls()
                atexit.register(cls._shared.close)
            return cls._shared

    def __init__(self) -> None:
        self._proc: subprocess.Popen[bytes] | None = None
        self._ctrl: socket.socket | None = None
        self._lock = threading.Lock()
        self._scratch = ""

    def _start(self) -> None:
        self._stop()
        self._scratch = tempfile.mkdtemp(prefix="arbiter-suites-")
        self._proc, ours = spawn_boot(
            _HOST_BOOT,
            pythonpath=os.environ.get("PYTHONPATH", ""),
            home=self._scratch,
            cwd=self._scratch,
            log_path=os.path.join(self._scratch, "host.log"),
        )
        self._ctrl = ours
        try:
            ready = recv_frame(
                ours, max_bytes=CONTROL_MAX_BYTES, deadline=time.monotonic() + _START_TIMEOUT_S
            )
        except (OSError, EOFError, ValueError) as e:
            # Its own last words (an import error, say) say more than the closed channel.
            said = log_tail(os.path.join(self._scratch, "host.log"))
            self._stop()
            raise SandboxError(
                f"the trusted pytest host did not start: {e}" + (f": {said}" if said else "")
            ) from e
        if ready.get("op") != "ready":
            self._stop()
            raise SandboxError(f"the trusted pytest host said {ready!r} on start")

    def _stop(self) -> None:
        if self._proc is not None:
            with contextlib.suppress(ProcessLookupError):
                self._proc.kill()
            self._proc.wait()
            self._proc = None
        if self._ctrl is not None:
            self._ctrl.close()
            self._ctrl = None
        if self._scratch:
            shutil.rmtree(self._scratch, ignore_errors=True)
            self._scratch = ""

    def close(self) -> None:
        """Stop the host (its suites die with it)."""
        with self._lock:
            self._stop()

    def start(self) -> None:
        """Start the host now if it is not running (it is otherwise started on first use).

        Its start (an interpreter importing pytest) is ours: a grading starts the
        host before the candidate's run, so that no run waits for it.
        """
        with self._lock:
            if not self.alive:
                self._start()

    @property
    def alive(self) -> bool:
        """Whether the host process is running."""
        return self._proc is not None and self._proc.poll() is None

    def _begin(self, request: dict[str, Any], fds: list[int]) -> int:
        with self._lock:
            if not self.alive:
                self._start()
            assert self._ctrl is not None
            try:
                send_frame(self._ctrl, request, fds)
                answer = recv_frame(
                    self._ctrl,
                    max_bytes=CONTROL_MAX_BYTES,
                    deadline=time.monotonic() + _START_TIMEOUT_S,
                )
            except (OSError, EOFError, ValueError) as e:
                self._stop()
                raise SandboxError(f"the trusted pytest host failed: {e}") from e
        if answer.get("op") != "started" or type(answer.get("pid")) is not int:
            raise SandboxError(f"the trusted pytest host refused a suite: {answer!r}")
        return int(answer["pid"])

    def run(
        self,
        sources: dict[str, str],
        module: str,
        channel: socket.socket,
        deadline: RunDeadline,
        *,
        max_bytes: int,
        declared: list[str] | None = None,
        classes: frozenset[str] = frozenset(),
        cpu_s: float | None = None,
        memory_mb: int | None = None,
    ) -> SuiteReport:
        """Run ``sources`` (file name → text) against the candidate loaded behind ``channel``.

        ``deadline`` (the run's) bounds every wait on the candidate, and the
        suite's process reads it as it moves (shared memory); the suite itself
        is killed ``SUITE_GRACE_S`` after it, well inside the grace the
        sandbox's own report has (``REPORT_GRACE_S``). ``cpu_s`` and
        ``memory_mb`` bound the suite's own work (the kernel's limits in its
        process; past ``cpu_s`` this side also kills it): a suite that used up
        its CPU is reported so (``trusted_limit``), one that died otherwise is
        a failure of ours (:class:`SandboxError`).
        """
        read_end, write_end = os.pipe()
        try:
            request = {
                "op": "run",
                "sources": sources,
                "module": module,
                "declared": list(declared or []),
                "classes": sorted(classes),
                "max_bytes": max_bytes,
                "cpu_s": cpu_s,
                "memory_mb": memory_mb,
            }
            try:
                pid = self._begin(request, [channel.fileno(), write_end, deadline.fd()])
            finally:
                os.close(write_end)
            watch = _CpuWatch(pid, cpu_s)
            raw, complete = _read_until_eof(read_end, deadline, SUITE_GRACE_S, watch)
            if not complete:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
        finally:
            os.close(read_end)
        if watch.over or (complete and not raw and watch.spent):
            report = SuiteReport.parse(b"", timed_out=False)
            return dataclasses.replace(report, trusted_limit="cpu")
        if complete and not raw:
            raise SandboxError("the trusted suite process died without a report")
        return SuiteReport.parse(raw if complete else b"", timed_out=not complete)


class _CpuWatch:
    """A suite process's CPU time against its share (``/proc/PID/schedstat``), as it runs."""

    def __init__(self, pid: int, cpu_s: float | None) -> None:
        self.pid = pid
        self.cpu_s = cpu_s
        self.seen_s = 0.0
        #: Killed here: past its share by more than the kernel's own limit allows.
        self.over = False

    @property
    def spent(self) -> bool:
        """Whether the last reading had the suite at (or within a tick of) its share."""
        return self.cpu_s is not None and self.seen_s >= self.cpu_s - 2 * RANK_EVERY_S

    def check(self) -> None:
        """Read the suite's CPU time; kill it once it is past its share and the kernel's slack."""
        if self.cpu_s is None:
            return
        seen_s = cpu_time_s(self.pid)
        if seen_s == 0.0:
            return  # gone (or not yet started): the last reading stands
        self.seen_s = seen_s
        if self.seen_s > self.cpu_s + 2.0:
            self.over = True
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGKILL)


def _read_until_eof(
    fd: int, deadline: RunDeadline, grace_s: float, watch: _CpuWatch | None = None
) -> tuple[bytes, bool]:
    """Read ``fd`` to its end; return what came and whether it came ``grace_s`` after ``deadline``.

    Meanwhile the time the pytest host credits to the run (its own work between
    two calls) is taken in every ``RANK_EVERY_S``, so the template's backstop moves too,
    and the suite's CPU time is read against its share.
    """
    chunks: list[bytes] = []
    size = 0
    while True:
        deadline.refresh()
        if watch is not None:
            watch.check()
        left = deadline.at() + grace_s - time.monotonic()
        if left <= 0:
            return b"".join(chunks), False
        if not select.select([fd], [], [], min(left, RANK_EVERY_S))[0]:
            continue
        chunk = os.read(fd, 1 << 16)
        if not chunk:
            return b"".join(chunks), True
        size += len(chunk)
        if size > _MAX_REPORT_BYTES:
            raise SandboxError("the trusted suite process wrote an oversized report")
        chunks.append(chunk)
