"""The trusted side of the workspaces: the host process, the uids, one job at a time per uid.

:class:`WorkspaceHost` starts :mod:`arbiter.graders.repository._host` once (a
fresh interpreter in a bare environment, never a fork of the service) and
hands it one socket per grading; each grading runs as a uid of its own from
the sandbox's :class:`~arbiter.graders.sandbox.uids.UidRange` (root only), so
RLIMIT_NPROC and signals never reach across gradings. A host that dies, or a
job that reports a failure of its own machinery, is a
:class:`~arbiter.graders.sandbox.errors.SandboxError`: ours, never the candidate's.
"""

from __future__ import annotations

import contextlib
import logging
import os
import queue
import socket
import subprocess
import sys
import sysconfig
import tempfile
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from arbiter.graders.sandbox._frames import (
    CONTROL_MAX_BYTES,
    ChannelClosed,
    ChannelTimeout,
    recv_frame,
    send_frame,
)
from arbiter.graders.sandbox.errors import SandboxError
from arbiter.graders.sandbox.pool import log_tail, spawn_boot, toolchain_cache
from arbiter.graders.sandbox.uids import UidRange

logger = logging.getLogger("arbiter.graders.repository.workspace")

__all__ = ["Job", "WorkspaceHost", "WorkspaceLimits", "system_read_only"]

_HERE = Path(__file__).resolve().parent
_BOOT = f"""
import sys, types
for name, path in (("arbiter", ""),
                   ("arbiter.graders", {str(_HERE.parent)!r}),
                   ("arbiter.graders.sandbox", {str(_HERE.parent / "sandbox")!r}),
                   ("arbiter.graders.repository", {str(_HERE)!r})):
    package = types.ModuleType(name)
    package.__path__ = [path] if path else []
    sys.modules[name] = package
from arbiter.graders.repository import _host
_host.main()
"""
REPORTER = str(_HERE / "_reporter.py")


@dataclass(frozen=True)
class WorkspaceLimits:
    """What one grading's test run may use."""

    #: CPU seconds of the whole test run (every process of it).
    cpu_s: float = 60.0
    #: Its wall clock less its wait for a CPU (a test that sleeps uses no CPU).
    wall_s: float = 120.0
    #: The wall clock itself past which the host starved the run: ours.
    backstop_s: float = 900.0
    memory_mb: int = 4096
    max_processes: int = 64
    max_file_bytes: int = 64 << 20
    max_open_files: int = 1024
    max_result_bytes: int = 16 << 20
    tmpfs_mb: int = 512
    tmpfs_inodes: int = 200_000
    #: The workspace's own /dev/shm (multiprocessing's semaphores).
    shm_mb: int = 64


@dataclass(frozen=True)
class Job:
    """One grading: the snapshot, what to change in it, and what to run."""

    snapshot: str
    python_paths: tuple[str, ...]
    env_paths: tuple[str, ...]
    patch: list[dict[str, Any]]
    restore: list[str]
    tests: dict[str, str]
    args: list[str]
    isolation: str = "test"
    limits: WorkspaceLimits = WorkspaceLimits()


def system_read_only() -> list[str]:
    """What a runner may read and execute: the interpreter, its libraries, the system's."""
    paths = {
        os.path.realpath(sys.base_prefix),
        sys.prefix,
        *(v for k, v in sysconfig.get_paths().items() if k != "scripts"),
        os.path.dirname(os.path.realpath(sys.executable)),
        "/usr/lib",
        "/usr/lib64",
        "/lib",
        "/lib64",
        "/usr/local/lib",
        "/usr/bin",
        "/bin",
        "/etc/ld.so.cache",
        "/etc/localtime",
        "/usr/share/zoneinfo",
        str(_HERE),
    }
    return sorted(p for p in paths if os.path.exists(p))


class WorkspaceHost:
    """Runs gradings in fresh copy-on-write workspaces, ``slots`` at once."""

    def __init__(self, slots: int | None = None, root: str | None = None) -> None:
        self.slots = slots or max(2, 2 * (os.cpu_count() or 1))
        self.root = Path(root or os.path.join(toolchain_cache(), "repository"))
        self._lock = threading.Lock()
        self._proc: subprocess.Popen[bytes] | None = None
        self._ctrl: socket.socket | None = None
        self._uids = UidRange()
        self._free: queue.Queue[int] = queue.Queue()
        self._started = False
        self._log = ""

    @property
    def mount_point(self) -> str:
        """The folder every workspace's tmpfs is mounted on, each in its own namespace."""
        return str(self.root / "mnt")

    def start(self) -> None:
        """Start the host process and take the uids (idempotent)."""
        with self._lock:
            if self._proc is not None and self._proc.poll() is None:
                return
            (self.root / "mnt").mkdir(parents=True, exist_ok=True)
            os.chmod(self.root, 0o755)
            os.chmod(self.root / "mnt", 0o755)
            if not self._started:
                base = self._uids.take(None, self.slots)
                for i in range(self.slots):
                    self._free.put(base + i)
                self._started = True
            home = tempfile.mkdtemp(prefix="arbiter-workspaces-")
            self._log = os.path.join(home, "host.log")
            project = str(_HERE.parents[2])
            proc, ctrl = spawn_boot(
                _BOOT, pythonpath=project, home=home, cwd=home, log_path=self._log
            )
            try:
                ctrl.settimeout(30)
                hello = recv_frame(ctrl, max_bytes=1 << 10)
                ctrl.settimeout(None)
            except (OSError, ChannelClosed, ChannelTimeout) as e:
                proc.kill()
                raise SandboxError(
                    f"the workspace host did not start: {log_tail(self._log)}"
                ) from e
            if not isinstance(hello, dict) or "ready" not in hello:
                proc.kill()
                raise SandboxError("the workspace host did not start")
            self._proc, self._ctrl = proc, ctrl

    def close(self) -> None:
        """Stop the host (every workspace in flight with it) and give the uids back."""
        with self._lock:
            if self._ctrl is not None:
                self._ctrl.close()
                self._ctrl = None
            if self._proc is not None:
                self._proc.kill()
                with contextlib.suppress(subprocess.TimeoutExpired):
                    self._proc.wait(5)
                self._proc = None
            self._uids.release()
            self._started = False
            self._free = queue.Queue()

    def _submit(self, message: dict[str, Any], timeout_s: float) -> dict[str, Any]:
        self.start()
        uid = self._free.get()
        try:
            message = {**message, "run_as": [uid, uid] if os.getuid() == 0 else None}
            ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
            with ours:
                try:
                    with self._lock:
                        if self._ctrl is None:
                            raise SandboxError("the workspace host is not running")
                        socket.send_fds(self._ctrl, [b"j"], [theirs.fileno()])
                finally:
                    theirs.close()
                send_frame(ours, message)
                try:
                    reply = recv_frame(
                        ours, max_bytes=CONTROL_MAX_BYTES, deadline=time.monotonic() + timeout_s
                    )
                except (ChannelClosed, ChannelTimeout, OSError) as e:
                    self._check_alive()
                    raise SandboxError(f"a workspace ended without a report: {e}") from e
        finally:
            self._free.put(uid)
        if not isinstance(reply, dict):
            raise SandboxError("a workspace sent a malformed report")
        if "error" in reply:
            raise SandboxError(f"the workspace failed: {reply['error']}")
        return reply

    def _check_alive(self) -> None:
        with self._lock:
            if self._proc is not None and self._proc.poll() is not None:
                logger.warning("the workspace host died: %s", log_tail(self._log))
                self._proc = None

    def _base(self, snapshot: str) -> dict[str, Any]:
        return {
            "mount": self.mount_point,
            "snapshot": snapshot,
            "expose": [os.path.realpath(sys.base_prefix), sys.prefix],
        }

    def run(self, job: Job) -> dict[str, Any]:
        """Grade in a fresh workspace; return the supervisor's report (see ``_host``)."""
        message = {
            **self._base(job.snapshot),
            "python": sys.executable,
            "reporter": REPORTER,
            "read_only": [*system_read_only(), *job.env_paths],
            "python_paths": list(job.python_paths),
            "env_paths": list(job.env_paths),
            "patch": job.patch,
            "restore": job.restore,
            "tests": job.tests,
            "args": job.args,
            "isolation": job.isolation,
            "limits": asdict(job.limits),
        }
        return self._submit(message, job.limits.backstop_s + 60.0)

    def resets(
        self, snapshot: str, count: int, limits: WorkspaceLimits | None = None
    ) -> list[float]:
        """Create and destroy a workspace over ``snapshot`` ``count`` times; each one's seconds."""
        message = {
            **self._base(snapshot),
            "mode": "reset",
            "count": count,
            "limits": asdict(limits or WorkspaceLimits()),
        }
        reply = self._submit(message, 60.0 + count)
        return [float(t) for t in reply["resets_s"]]
