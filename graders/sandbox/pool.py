"""The trusted side of the sandbox: a pool of confined zygotes, one per slot.

Each slot is a fresh interpreter (never a fork of this process, which may hold
secrets and other tasks' tests) that confines itself once and then forks one
confined child per run (see :mod:`arbiter.graders.sandbox._zygote`). The pool hands a
slot to one run at a time; a slot whose zygote stops answering is killed and
started again, and the run gets a :class:`SandboxError`, an infrastructure
fault that is never the candidate's.

One concept: the protocol with the zygote. The limits and
reports that cross to it, a slot's start, request, report and sweep, and the
pool's admission of runs to slots change together, and each half is read
against the other. What does not cross it lives apart: scheduling between the
lanes in :mod:`arbiter.graders.sandbox.lanes`, uid ownership in
:mod:`arbiter.graders.sandbox.uids`, the zygote itself in :mod:`arbiter.graders.sandbox._zygote`.
"""

from __future__ import annotations

import atexit
import base64
import concurrent.futures
import contextlib
import logging
import os
import queue
import shutil
import signal
import socket
import stat
import subprocess
import sys
import sysconfig
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NoReturn, TypeVar

import arbiter
from arbiter.graders.credit import ours
from arbiter.graders.sandbox._frames import (
    CONTROL_MAX_BYTES,
    ChannelClosed,
    ChannelTimeout,
    recv_frame,
    send_frame,
)
from arbiter.graders.sandbox.clock import Moving, RunDeadline
from arbiter.graders.sandbox.errors import SandboxError
from arbiter.graders.sandbox.lanes import (
    IdleGroup,
    Lanes,
    LeastAttained,
    Timers,
    busy_ticks,
    can_raise_priority,
    demote,
    outside_wait_s,
    trusted_process,
)
from arbiter.graders.sandbox.uids import DEFAULT_UID_BASE, UidRange

logger = logging.getLogger("arbiter.graders.sandbox.pool")

__all__ = [
    "DEFAULT_LAZY",
    "DEFAULT_LONG_AFTER_S",
    "DEFAULT_PRELOAD",
    "DEFAULT_UID_BASE",
    "DEFAULT_WALL_FACTOR",
    "LONG_LANE_PER_SLOT",
    "REPORT_GRACE_S",
    "FunctionRun",
    "Limits",
    "PoolConfig",
    "RunReport",
    "SandboxError",
    "SandboxPool",
]

#: Modules imported by the zygote before it loses read access to the interpreter.
DEFAULT_PRELOAD: tuple[str, ...] = (
    "abc",
    "array",
    "ast",
    "base64",
    "binascii",
    "contextlib",
    "csv",
    "difflib",
    "errno",
    "fnmatch",
    "glob",
    "pathlib",
    "pprint",
    "secrets",
    "shutil",
    "tempfile",
    "unittest",
    "uuid",
    "weakref",
    "zlib",
    # C halves of the lazy modules below.
    "_queue",
    # Codecs are looked up lazily (str.encode("latin-1"), socket's idna).
    "encodings.ascii",
    "encodings.cp1252",
    "encodings.hex_codec",
    "encodings.idna",
    "encodings.latin_1",
    "encodings.raw_unicode_escape",
    "encodings.unicode_escape",
    "encodings.utf_16",
    "encodings.utf_32",
    "encodings.utf_8_sig",
    "bisect",
    "calendar",
    "cmath",
    "collections",
    "collections.abc",
    "copy",
    "dataclasses",
    "datetime",
    "decimal",
    "enum",
    "fractions",
    "functools",
    "hashlib",
    "heapq",
    "io",
    "itertools",
    "json",
    "math",
    "numbers",
    "operator",
    "random",
    "re",
    "statistics",
    "string",
    "struct",
    "textwrap",
    "time",
    "traceback",
    "types",
    "typing",
    "unicodedata",
)

#: Modules a run may import but the zygote does not execute: their compiled code
#: is kept in memory and run only in a child that imports them. ``threading``
#: registers an at-fork handler when imported, and every fork of a zygote that
#: had imported it would pay for that handler.
DEFAULT_LAZY: tuple[str, ...] = ("threading", "queue")

#: A run's wall-clock backstop, as a multiple of its CPU-time limit.
DEFAULT_WALL_FACTOR = 1.25
#: A run's credited wait for a CPU is at most this many times its backstop: a run
#: kept off the CPU longer was starved by the host, a failure of ours (a
#: ``SandboxError``), not a candidate's timeout. The time it waits for the tests
#: (the trusted side's work between calls) is credited up to as much: tests
#: still working then are stuck, and the run's deadline passes.
MAX_CREDIT_FACTOR = 8.0
#: Wall seconds after which a run leaves the fast lane (and drops to the lowest CPU priority).
DEFAULT_LONG_AFTER_S = 0.1
#: Long-lane places per fast slot (their zygotes start only when a run first needs one).
LONG_LANE_PER_SLOT = 8

#: The folder that holds the ``arbiter`` package (a checkout, or site-packages).
_PROJECT_ROOT = str(Path(arbiter.__file__).resolve().parents[1])


def boot_of(module: str, entry: str = "main") -> str:
    """Return the ``python -c`` text that starts ``arbiter.graders.sandbox.<module>.<entry>()``.

    ``arbiter``, ``arbiter.graders`` and ``arbiter.graders.sandbox`` are entered
    as bare packages, so that their ``__init__`` (pydantic, asyncio, the
    graders) never runs there: a zygote holds only the standard library and the
    sandbox's own stdlib-only modules (less memory for every fork to copy,
    nothing else to reach), a trusted host only what its module imports.
    """
    return f"""
import sys, types
for name, path in (("arbiter", ""),
                   ("arbiter.graders", {str(Path(__file__).resolve().parents[1])!r}),
                   ("arbiter.graders.sandbox", {str(Path(__file__).resolve().parent)!r})):
    package = types.ModuleType(name)
    package.__path__ = [path] if path else []
    sys.modules[name] = package
from arbiter.graders.sandbox import {module}
{module}.{entry}()
"""


def log_tail(path: str, limit: int = 1500) -> str:
    """Return the end of a process's log (its last words say more than a closed channel)."""
    try:
        with open(path, "rb") as log:
            log.seek(0, os.SEEK_END)
            log.seek(max(0, log.tell() - limit))
            return log.read().decode(errors="replace").strip()
    except OSError:
        return ""


_ZYGOTE_BOOT = boot_of("_zygote")
#: A zygote's start is ours, never a run's: under a loaded machine (four busy processes
#: per core) its preloads took past 30 s, and the whole pool failed to start.
_START_TIMEOUT_S = 120.0
#: Time the zygote may take beyond a run's own deadline to kill, sweep and report.
REPORT_GRACE_S = 5.0
#: Per slot: the run directories (made and removed by the zygote).
_SLOT_DIRS = ("runs",)


_T = TypeVar("_T")
_spawner_lock = threading.Lock()
_spawner: concurrent.futures.ThreadPoolExecutor | None = None


def _forget_spawner() -> None:
    global _spawner
    _spawner = None


os.register_at_fork(after_in_child=_forget_spawner)


def on_lasting_thread(fn: Callable[[], _T]) -> _T:
    """Call ``fn`` on a thread that lives as long as this process, and return its result.

    Our hosts and zygotes set PR_SET_PDEATHSIG, which fires when the *thread*
    that started them exits, not their parent process. Started from a grading's
    worker thread (an executor shut down after its batch, an event loop's
    default executor), a host was killed under the next job: a fault of ours
    that paid nothing and cost a retry. Started here, a child dies with the
    process, as PDEATHSIG is meant to say.
    """
    global _spawner
    me = threading.current_thread()
    if me is threading.main_thread() or me.name.startswith("arbiter-spawner"):
        return fn()
    with _spawner_lock:
        if _spawner is None:
            _spawner = concurrent.futures.ThreadPoolExecutor(
                1, thread_name_prefix="arbiter-spawner"
            )
        future = _spawner.submit(fn)
    return future.result()


def spawn_boot(
    boot: str, *, pythonpath: str, home: str, cwd: str, log_path: str
) -> tuple[subprocess.Popen[bytes], socket.socket]:
    """Start ``python -s -c BOOT FD`` in a bare environment; return it and our end of FD.

    FD is one end of a new socket pair, the only descriptor the child inherits;
    its stderr goes to ``log_path``. ``home`` is its HOME and TMPDIR.
    """
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    env = {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "PYTHONPATH": pythonpath,
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONNOUSERSITE": "1",
        "LANG": "C.UTF-8",
        "HOME": home,
        "TMPDIR": home,
        "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",
    }
    log = open(log_path, "wb")  # noqa: SIM115 - handed to the child, closed below
    try:
        proc = on_lasting_thread(
            lambda: subprocess.Popen(
                [sys.executable, "-s", "-c", boot, str(theirs.fileno())],
                pass_fds=[theirs.fileno()],
                env=env,
                cwd=cwd,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=log,
            )
        )
    except BaseException:
        ours.close()
        raise
    finally:
        theirs.close()
        log.close()
    # Its CPU is the service's, not the host's other work (see graders.sandbox.lanes).
    trusted_process(proc)
    return proc, ours


@dataclass(frozen=True, slots=True)
class Limits:
    """Per-run limits, enforced in the confined child.

    ``timeout_s`` is CPU time (RLIMIT_CPU, whole seconds): a run that waits for
    a core while others use it is not charged for the wait, so more runs in
    flight than cores do not fail a correct but slow candidate. The wall clock
    stays as a backstop at ``wall_factor`` times that (a run that sleeps or
    blocks uses no CPU), credited with the run's wait for a CPU (see
    :mod:`arbiter.graders.sandbox.clock`). A run still going after ``long_after_s`` of
    its own time (the wall clock less that wait) moves to the long lane: its
    place in the fast lane goes to the next run and
    its processes drop to the lowest CPU priority, so long runners never hold
    up short ones.
    """

    timeout_s: float = 10.0
    memory_mb: int = 512
    #: With no memory cgroup, a run's memory is bounded by max_processes x memory_mb.
    max_processes: int = 8
    max_output_bytes: int = 1 << 20
    max_open_files: int = 64
    wall_factor: float = DEFAULT_WALL_FACTOR
    long_after_s: float = DEFAULT_LONG_AFTER_S

    def __post_init__(self) -> None:
        if not self.timeout_s > 0:
            raise ValueError(f"timeout_s must be > 0, not {self.timeout_s!r}")
        if not self.wall_factor >= 1:
            raise ValueError(f"wall_factor must be >= 1, not {self.wall_factor!r}")
        if not self.long_after_s > 0:
            raise ValueError(f"long_after_s must be > 0, not {self.long_after_s!r}")

    @property
    def wall_s(self) -> float:
        """The wall-clock backstop of one run, in seconds."""
        return self.timeout_s * self.wall_factor

    def message(self) -> dict[str, Any]:
        """Return the limits as the zygote reads them."""
        return {
            "timeout_s": self.wall_s,
            "cpu_s": self.timeout_s,
            "long_after_s": self.long_after_s,
            "memory_mb": self.memory_mb,
            "max_processes": self.max_processes,
            "max_output_bytes": self.max_output_bytes,
            "max_open_files": self.max_open_files,
        }


@dataclass(frozen=True, slots=True)
class RunReport:
    """What the zygote saw of one run; the run's own claims are never in here."""

    exit_code: int | None
    signal: int | None
    ended_by: str
    wall_s: float
    cpu_s: float
    maxrss_kb: int
    strays: int
    stdout: bytes
    stdout_size: int
    stderr: bytes
    stderr_size: int
    #: Whether the run outlived ``long_after_s`` and was moved to the long lane.
    long: bool = False
    #: Seconds the run waited for a CPU that were added to its wall-clock backstop.
    credit_s: float = 0.0
    #: The files the run was asked to leave, read back once it was gone (path -> content).
    fetched: dict[str, bytes] = field(default_factory=dict)
    #: The files asked for that were not read back, and why (absent, a link, too big).
    not_fetched: dict[str, str] = field(default_factory=dict)

    @property
    def timed_out(self) -> bool:
        """Whether the CPU-time limit or the wall-clock backstop ended the run."""
        return self.ended_by == "deadline" or self.cpu_limited

    @property
    def cpu_limited(self) -> bool:
        """Whether the run used up its CPU time (RLIMIT_CPU's soft limit sends SIGXCPU)."""
        return self.signal == signal.SIGXCPU

    @property
    def output_limited(self) -> bool:
        """Whether the run hit the output cap (RLIMIT_FSIZE delivers SIGXFSZ)."""
        return self.signal == signal.SIGXFSZ

    @property
    def seccomp_killed(self) -> bool:
        """Whether the run made a forbidden syscall (seccomp kills with SIGSYS)."""
        return self.signal == signal.SIGSYS

    @classmethod
    def parse(
        cls,
        message: dict[str, Any],
        stdout: int,
        stderr: int,
        cap: int,
        *,
        long: bool = False,
        credit_s: float = 0.0,
    ) -> RunReport:
        """Build a report from the template's ``done`` message and the run's output files."""
        out, out_size = _read_head(stdout, cap)
        err, err_size = _read_head(stderr, 64 << 10)
        return cls(
            exit_code=message["exit_code"],
            signal=message["signal"],
            ended_by=str(message["ended_by"]),
            wall_s=float(message["wall_s"]),
            cpu_s=float(message["cpu_s"]),
            maxrss_kb=int(message["maxrss_kb"]),
            strays=int(message["strays"]),
            stdout=out,
            stdout_size=out_size,
            stderr=err,
            stderr_size=err_size,
            long=long,
            credit_s=credit_s,
            fetched={
                str(k): base64.b64decode(v) for k, v in (message.get("fetched") or {}).items()
            },
            not_fetched={str(k): str(v) for k, v in (message.get("not_fetched") or {}).items()},
        )


def _read_head(fd: int, cap: int) -> tuple[bytes, int]:
    """Return the first ``cap`` bytes of a run's output file, and its whole size."""
    size = os.fstat(fd).st_size
    return os.pread(fd, min(size, cap), 0), size


class _RunFiles:
    """A run's descriptors, made here: the channel's far end, stdin, stdout, stderr.

    The template hands them to the run's child without reading them: the run's
    input and output never pass through the process every run is forked from.
    stdout and stderr are memory files that this side reads after the run.
    """

    def __init__(self, stdin: bytes) -> None:
        self.ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        self.fds: list[int] = [theirs.detach()]
        try:
            for name in ("stdin", "stdout", "stderr"):
                self.fds.append(os.memfd_create(f"arbiter-run-{name}", os.MFD_CLOEXEC))
            if stdin:
                os.write(self.fds[1], stdin)
                os.lseek(self.fds[1], 0, os.SEEK_SET)
        except BaseException:
            self.close()
            raise

    @property
    def stdout(self) -> int:
        return self.fds[2]

    @property
    def stderr(self) -> int:
        return self.fds[3]

    def sent(self) -> None:
        """Close the far end of the channel and stdin, now in the template's hands."""
        for i in (0, 1):
            if self.fds[i] >= 0:
                os.close(self.fds[i])
                self.fds[i] = -1

    def send_code(
        self,
        code: str,
        deadline: RunDeadline,
        declared: list[str] | None,
        program: dict[str, Any] | None = None,
        files: list[list[Any]] | None = None,
    ) -> None:
        """Send the run its code (or its built ``program``), the first message on its channel."""
        message: dict[str, Any] = {"code": code}
        if declared is not None:
            message["declared"] = declared
        if program is not None:
            message["exec"] = program
        if files:
            message["files"] = files
        self.ours.settimeout(max(0.0, deadline.at() - time.monotonic()))
        try:
            send_frame(self.ours, message)
        except OSError as e:
            raise SandboxError(f"the run did not take its code: {e}") from e
        finally:
            self.ours.settimeout(None)

    def close(self) -> None:
        for i, fd in enumerate(self.fds):
            if fd >= 0:
                os.close(fd)
                self.fds[i] = -1
        self.ours.close()


@dataclass(frozen=True, slots=True)
class PoolConfig:
    """How many slots, which uids, and what the zygotes pre-import."""

    #: Fast-lane places: runs started at once (default: one per core).
    slots: int | None = None
    #: Long-lane places: runs past their ``long_after_s`` that may keep going
    #: beside the fast lane (default: LONG_LANE_PER_SLOT per slot). When the
    #: long lane is full, a long run keeps its fast place until one frees.
    long_slots: int | None = None
    #: Slot i runs as uid ``uid_base + i`` (when started as root): RLIMIT_NPROC
    #: counts per uid across the host, so a fork bomb in one slot must not
    #: starve the others. ``None``: the first range from DEFAULT_UID_BASE up
    #: that no other pool on this host holds (see
    #: :class:`~arbiter.graders.sandbox.uids.UidRange`); a number: exactly that range,
    #: which must be free.
    uid_base: int | None = None
    preload: tuple[str, ...] = DEFAULT_PRELOAD
    lazy: tuple[str, ...] = DEFAULT_LAZY
    scratch_root: str | None = None
    acquire_timeout_s: float = 60.0
    #: Allow ``pytest`` tasks (their suites run in the trusted suite host, the
    #: candidate's module in this pool's confined children, as for functions).
    pytest: bool = True
    #: Layers this pool does not apply, reported as unavailable. For the escape
    #: suite's controls only (each attack, run with the layer that stops it left
    #: out, must succeed); a service never sets it, and ``require_layers`` then
    #: refuses a pool missing what a rubric needs.
    disable_layers: tuple[str, ...] = ()
    #: More directories runs may read and execute (a language's prepared libraries).
    read_only: tuple[str, ...] = ()
    #: Compiles at once, in places of their own (default: one per core, as many as
    #: the machine's memory holds at BUILD_MEMORY_MB each).
    build_slots: int | None = None


#: The system's compilers, runtimes and their headers and data: what a compiled
#: candidate's build and run open (read and execute only; nothing of them is secret).
SYSTEM_TOOL_PATHS = (
    "/usr/bin",
    "/bin",
    "/usr/include",
    "/usr/libexec",
    "/usr/share",
    "/etc/alternatives",
    "/etc/ld.so.cache",
    "/etc/java-17-openjdk",
    "/etc/ssl/openssl.cnf",
)


def toolchain_cache() -> str:
    """The directory of prepared toolchain libraries, which every run may read.

    ``ARBITER_CACHE_DIR`` when set, else ``/var/tmp/arbiter-<uid>``; created on
    first use. What the trusted side prepares there (a language's shared
    libraries, compiled once) is public; nothing of a task or a run is kept
    there. It must be ours and writable by nobody else: a directory another
    user could write could plant libraries into every build.
    """
    root = os.environ.get("ARBITER_CACHE_DIR") or f"/var/tmp/arbiter-{os.geteuid()}"
    os.makedirs(root, 0o755, exist_ok=True)
    st = os.stat(root)
    if st.st_uid != os.geteuid() or st.st_mode & 0o022:
        raise SandboxError(
            f"the toolchain cache {root} must belong to uid {os.geteuid()} and be writable "
            "by it alone"
        )
    if stat.S_IMODE(st.st_mode) & 0o555 != 0o555:
        os.chmod(root, 0o755)  # sandbox uids read the prepared libraries beneath it
    return root


def _read_only_paths(extra: tuple[str, ...] = ()) -> list[str]:
    paths = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix}
    paths.update(v for k, v in sysconfig.get_paths().items() if k != "scripts")
    # System libraries: extension modules imported later may need to map them.
    paths.update(("/usr/lib", "/usr/lib64", "/lib", "/lib64", "/usr/local/lib"))
    paths.update(SYSTEM_TOOL_PATHS)
    paths.add(toolchain_cache())
    paths.update(extra)
    return sorted(p for p in paths if os.path.exists(p))


#: What one compile may hold, for the default number of compiles at once.
BUILD_MEMORY_MB = 2048


def _default_builds(cores: int) -> int:
    """One compile per core, as many as the machine's memory holds at BUILD_MEMORY_MB each."""
    try:
        pages = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError):
        return cores
    return max(1, min(cores, (pages >> 20) // (2 * BUILD_MEMORY_MB)))


def _deadline(limits: Limits) -> RunDeadline:
    """Return the deadline of a run starting now."""
    return RunDeadline(time.monotonic(), limits.wall_s, MAX_CREDIT_FACTOR * limits.wall_s)


@dataclass
class _RunState:
    """One run in a slot, as the lanes see it."""

    seq: int
    #: The pending demotion check (a handle of the pool's timers).
    timer: int | None = None
    long: bool = False
    ended: bool = False


class _Slot:
    """One zygote and its control socket; used by one run at a time."""

    def __init__(self, index: int, pool: SandboxPool) -> None:
        self.index = index
        self.pool = pool
        self.uid = pool.uids.base + index
        self.dir = os.path.join(pool.scratch, f"slot-{index}")
        self.proc: subprocess.Popen[bytes] | None = None
        self.ctrl: socket.socket | None = None
        self.layers: dict[str, str] = {}
        self.missing: list[str] = []
        self.seq = 0
        self.log = self.dir + ".log"
        #: The run in progress, as the lanes see it.
        self._state: _RunState | None = None
        #: The run's place in the pool's lanes (set by the pool for each run).
        self.token = -1
        #: Every send on the control socket: the timer thread sends "extend".
        self._send = threading.Lock()

    def launch(self) -> None:
        """Start the zygote and hand it its configuration; :meth:`wait_ready` waits for it."""
        if os.path.exists(self.dir):
            shutil.rmtree(self.dir, ignore_errors=True)
        # The slot directory stays ours: a run must not rename runs/ or plant
        # anything beside it.
        os.mkdir(self.dir, 0o711)
        for sub in _SLOT_DIRS:
            os.mkdir(os.path.join(self.dir, sub), 0o700)
            if os.getuid() == 0:
                os.chown(os.path.join(self.dir, sub), self.uid, self.uid)
        # The zygote's own stderr (its crashes) goes to a log beside, not inside, its scratch.
        self.log = self.dir + ".log"
        # The project, plus whatever path the trusted process was given (an
        # interpreter outside a virtual environment finds its packages there).
        pythonpath = os.pathsep.join(
            p for p in (_PROJECT_ROOT, os.environ.get("PYTHONPATH", "")) if p
        )
        self.proc, ours = spawn_boot(
            _ZYGOTE_BOOT,
            pythonpath=pythonpath,
            home=os.path.join(self.dir, "runs"),
            cwd=self.dir,
            log_path=self.log,
        )
        self.ctrl = ours
        self.seq = 0
        try:
            send_frame(
                ours,
                {
                    "uid": self.uid,
                    "gid": self.uid,
                    "scratch": self.dir,
                    "read_only": _read_only_paths(self.pool.config.read_only),
                    "preload": list(self.pool.config.preload),
                    "lazy": list(self.pool.config.lazy),
                    "disable_layers": list(self.pool.config.disable_layers),
                },
            )
        except OSError as e:
            self._failed(e)

    def wait_ready(self) -> None:
        """Wait for the zygote :meth:`launch` started to say it is ready."""
        assert self.ctrl is not None
        try:
            ready = recv_frame(
                self.ctrl,
                max_bytes=CONTROL_MAX_BYTES,
                deadline=time.monotonic() + _START_TIMEOUT_S,
            )
        except (OSError, EOFError, ValueError) as e:
            self._failed(e)
        self.layers = dict(ready["layers"])
        self.missing = list(ready["missing"])

    def start(self) -> None:
        """Start the zygote and wait until it is ready."""
        self.launch()
        self.wait_ready()

    def _failed(self, error: Exception) -> NoReturn:
        self.kill()
        raise SandboxError(
            f"sandbox slot {self.index} did not start: {error}; {self.log_tail()}"
        ) from error

    def kill(self) -> None:
        if self.proc is not None:
            # The outer zygote's death SIGKILLs PID 1 (PDEATHSIG), and with it the namespace.
            with contextlib.suppress(ProcessLookupError):
                self.proc.kill()
            self.proc.wait()
            self.proc = None
        if self.ctrl is not None:
            self.ctrl.close()
            self.ctrl = None

    def log_tail(self) -> str:
        try:
            with open(self.log, "rb") as f:
                f.seek(max(0, os.path.getsize(self.log) - 600))
                return "zygote log: " + f.read().decode(errors="replace")
        except OSError:
            return "no zygote log"

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def ensure(self) -> None:
        """Start the zygote again if it died (which empties the slot's directories)."""
        if not self.alive:
            self.kill()
            self.start()

    def begin(self, request: dict[str, Any], files: _RunFiles, deadline: RunDeadline) -> int:
        self.ensure()
        assert self.ctrl is not None
        self.seq += 1
        request["seq"] = self.seq
        try:
            with self._send:
                send_frame(self.ctrl, request, files.fds)
            files.sent()
        except OSError as e:
            self.kill()
            raise SandboxError(f"sandbox slot {self.index} is gone: {e}") from e
        seq = self.seq
        deadline.pusher = lambda timeout_s: self._extend(seq, timeout_s)
        long_after_s = request.get("limits", {}).get("long_after_s")
        if long_after_s is not None and self.proc is not None:
            self._schedule(self.seq, deadline, float(long_after_s), self.proc.pid)
        return self.seq

    def _schedule(self, seq: int, deadline: RunDeadline, long_after_s: float, zygote: int) -> None:
        """Move the run to the long lane once it has had ``long_after_s`` of its own time.

        Its own time is the wall clock less its wait for a CPU (less the wait its
        own other processes caused: :func:`outside_wait_s`): a run that a busy
        host keeps off the CPU is still short, and keeps its fast place and its
        priority; one that forks busy children is not.
        """
        state = self._state = _RunState(seq)
        pool = self.pool
        busy_at_start = busy_ticks()

        def current() -> bool:
            return not state.ended

        def credit(credit_s: float) -> None:
            self._credit(seq, deadline, credit_s)

        def to_the_long_lane() -> None:
            if state.ended:
                return
            now = time.monotonic()
            waited = outside_wait_s(zygote, busy_at_start)
            if waited is None:
                # Its processes are gone: the run is ending, with nothing left to move.
                # Read as no wait at all, a run that a busy host slowed turned long.
                return
            own = now - deadline.started - waited - deadline.trusted_s(now)
            if own < long_after_s:
                state.timer = pool.timers.call_later(long_after_s - own, to_the_long_lane)
                return
            state.long = True
            idle = pool.idle_group
            # A demotion that cannot be undone (no ranking) is not made while the
            # host's other work dominates: the run would starve beside it.
            ranked = pool.least_attained.rank
            if ranked or not pool.least_attained.host.contended():
                demote(zygote, idle)
            pool._lanes.to_long(self.token)
            pool.least_attained.add(self.index, zygote, current, idle, credit, busy_at_start)

        state.timer = pool.timers.call_later(long_after_s, to_the_long_lane)

    def _credit(self, seq: int, deadline: RunDeadline, credit_s: float) -> None:
        """Credit a run with its wait for a CPU (on the timer thread)."""
        if self.seq == seq:
            deadline.credit(credit_s)

    def _extend(self, seq: int, timeout_s: float) -> None:
        """Tell the template a run's new backstop (seconds from its start)."""
        extend = {"op": "extend", "seq": seq, "timeout_s": timeout_s}
        # A late one (the run has ended) is dropped by the template.
        with self._send, contextlib.suppress(OSError):
            if self.ctrl is not None and self.seq == seq:
                send_frame(self.ctrl, extend)

    def finish(
        self, seq: int, deadline: RunDeadline, files: _RunFiles, cap: int, *, end: bool
    ) -> RunReport:
        assert self.ctrl is not None
        try:
            message = self._finish(seq, deadline.later(REPORT_GRACE_S), end=end)
            if message.get("clean") is not True:
                # The run left what could not be removed: the template retires
                # itself, and the next run gets a fresh one.
                logger.warning("sandbox slot %d retired: %s", self.index, self.log_tail())
                self.kill()
            state = self._state
            report = RunReport.parse(
                message,
                files.stdout,
                files.stderr,
                cap,
                long=state is not None and state.seq == seq and state.long,
                credit_s=deadline.credit_s,
            )
        finally:
            if self._state is not None:
                self._state.ended = True
                if self._state.timer is not None:
                    self.pool.timers.cancel(self._state.timer)
                self._state = None
                self.pool.least_attained.discard(self.index)
        # Ended by its deadline (by the template, or by the trusted side once its
        # call went unanswered past it) after the credit stopped: the host's doing.
        ended = report.ended_by == "deadline" or (end and time.monotonic() >= deadline.at())
        if ended and deadline.starved:
            raise SandboxError(
                f"the host kept the run off the CPU for {deadline.credit_s:.1f} s, as much "
                f"as is credited to its {deadline.backstop_s:g} s backstop: "
                "starved, not the candidate's timeout"
            )
        return report

    def _finish(self, seq: int, deadline: Moving, *, end: bool) -> dict[str, Any]:
        assert self.ctrl is not None
        try:
            if end:
                with self._send:
                    send_frame(self.ctrl, {"op": "end", "seq": seq})
            while True:
                message = recv_frame(self.ctrl, max_bytes=CONTROL_MAX_BYTES, deadline=deadline)
                if message.get("op") == "done" and message.get("seq") == seq:
                    return dict(message)
        except (ChannelClosed, ChannelTimeout, OSError, ValueError, KeyError) as e:
            self.kill()
            raise SandboxError(
                f"sandbox slot {self.index} failed during a run: {e}; {self.log_tail()}"
            ) from e


@dataclass
class FunctionRun:
    """A candidate module loaded in a confined child, reachable through ``channel``."""

    channel: socket.socket
    deadline: RunDeadline
    report: RunReport | None = field(default=None)
    #: What ``holding`` gave (see :meth:`SandboxPool.function_run`), if anything.
    held: Any = None


class SandboxPool:
    """Pre-forked confined zygotes, one run per slot at a time; thread-safe."""

    def __init__(self, config: PoolConfig | None = None) -> None:
        self.config = config or PoolConfig()
        self.size = self.config.slots or os.cpu_count() or 1
        self.long_size = (
            LONG_LANE_PER_SLOT * self.size
            if self.config.long_slots is None
            else self.config.long_slots
        )
        self.build_size = (
            _default_builds(self.size)
            if self.config.build_slots is None
            else self.config.build_slots
        )
        #: At most this many runs at once (and as many zygotes of each kind).
        self.capacity = self.size + self.long_size + self.build_size
        self.scratch = ""
        self._slots: list[_Slot] = []
        self._idle: queue.Queue[_Slot] = queue.Queue()
        self._lanes = Lanes(self.size, self.long_size, self.build_size)
        self.timers = Timers()
        #: Where long-lane runs go while this pool is started (``None``: nice 19 only).
        self.idle_group: IdleGroup | None = None
        #: Credits the long lane's runs with their waits; ranks them where this
        #: process may raise a priority back (CAP_SYS_NICE).
        self.least_attained = LeastAttained(self.timers, self.size, rank=can_raise_priority())
        self.least_attained.fast_idle = self._lanes.fast_idle
        self._lock = threading.Lock()
        self._started = False
        #: The uids this pool's slots run as (held while started).
        self.uids = UidRange()

    def start(self) -> None:
        """Start every slot (idempotent)."""
        with self._lock:
            if self._started:
                return
            self.uids.take(self.config.uid_base, self.capacity)
            self.scratch = tempfile.mkdtemp(prefix="arbiter-sandbox-", dir=self.config.scratch_root)
            # Slots run as other uids: they must reach their own directories.
            os.chmod(self.scratch, 0o711)
            try:
                # The fast lane's zygotes now, started side by side (each is a process
                # start: a command's first reward waits for the slowest, not their sum);
                # the long lane's when a run first needs one.
                for i in range(self.size):
                    slot = _Slot(i, self)
                    self._slots.append(slot)
                    slot.launch()
                for slot in self._slots:
                    slot.wait_ready()
                    self._idle.put(slot)
            except BaseException:
                self._close_slots()
                self.uids.release()
                raise
            if os.geteuid() == 0 and self.least_attained.rank:
                # Only where a run can be taken out again: the idle group starves
                # its runs while the host is busy.
                self.idle_group = IdleGroup.create(os.path.basename(self.scratch))
            self._started = True
            # Zygotes die with this process anyway (PDEATHSIG); this also removes scratch.
            atexit.register(self.close)

    def _close_slots(self) -> None:
        for slot in self._slots:
            slot.kill()
        self._slots.clear()
        # A killed zygote may still be exiting (PDEATHSIG is asynchronous): retry.
        for _ in range(20):
            if not self.scratch or not os.path.exists(self.scratch):
                break
            shutil.rmtree(self.scratch, ignore_errors=True)
            time.sleep(0.01)

    def close(self) -> None:
        """Kill every zygote (and so every run) and remove the scratch directories."""
        with self._lock:
            self._close_slots()
            self.timers.stop()
            self.least_attained.clear()
            if self.idle_group is not None:
                self.idle_group.remove()
                self.idle_group = None
            self.uids.release()
            self._idle = queue.Queue()
            if self._started:
                atexit.unregister(self.close)
            self._started = False

    def __enter__(self) -> SandboxPool:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def layers(self) -> dict[str, str]:
        """Return which layers the zygotes reported active (slot 0; they are all alike)."""
        self.start()
        return dict(self._slots[0].layers)

    def health(self) -> str | None:
        """Return what is wrong with a started pool (a zygote that died), or ``None``."""
        with self._lock:
            if not self._started:
                return None
            dead = [
                s.dir.rsplit(os.sep, 1)[-1]
                for s in self._slots
                if s.proc is None or s.proc.poll() is not None
            ]
        if dead:
            return f"sandbox zygote(s) {dead} exited"
        return None

    def utilization(self) -> float:
        """Fraction of fast-lane places running a job now (0.0 before the pool starts)."""
        if not self._started or not self.size:
            return 0.0
        return self._lanes.counts()[0] / self.size

    def lanes(self) -> tuple[int, int]:
        """Return how many runs are in the fast lane and in the long lane now."""
        return self._lanes.counts()

    def building(self) -> tuple[int, int]:
        """Return how many compiles run now, and how many wait for a place."""
        return self._lanes.building()

    def missing_modules(self) -> list[str]:
        """Return preload modules that could not be imported."""
        self.start()
        return list(self._slots[0].missing)

    @contextlib.contextmanager
    def _slot(self, limits: Limits, *, build: bool = False) -> Iterator[_Slot]:
        self.start()
        # The wait for a place is ours, never the grading job's: its deadline moves by
        # it. A build waits as long as the compiles ahead of it take.
        with ours():
            token = self._lanes.enter(None if build else self.config.acquire_timeout_s, build=build)
        # Long runs favoured while the fast lane was empty must not hold this one up.
        self.least_attained.restrain()
        # With a place in either lane in hand, a zygote is idle or may be started:
        # there are at most `capacity` runs, and as many zygotes.
        slot: _Slot | None = None
        try:
            try:
                slot = self._idle.get_nowait()
            except queue.Empty:
                with self._lock:
                    slot = _Slot(len(self._slots), self)
                    self._slots.append(slot)
                # Started here, not in start(): a pool that never sees a long run
                # never pays for a long-lane zygote.
                slot.start()
            slot.token = token
            yield slot
        finally:
            if slot is not None:
                self._idle.put(slot)
            self._lanes.leave(token)

    def run_script(
        self,
        code: str,
        stdin: bytes,
        limits: Limits,
        files: list[list[Any]] | None = None,
        fetch: list[str] | None = None,
    ) -> RunReport:
        """Run ``code`` as ``__main__`` with ``stdin``; the report carries its stdout.

        ``files`` (``[relative path, mode, base64]``, as a built program's) are
        written into the run's directory before the code runs; ``fetch`` names
        files to read back from it once the run is gone (``RunReport.fetched``).
        """
        return self._whole_run("script", code, None, stdin, limits, files, fetch)

    def _whole_run(
        self,
        mode: str,
        code: str,
        program: dict[str, Any] | None,
        stdin: bytes,
        limits: Limits,
        extra: list[list[Any]] | None = None,
        fetch: list[str] | None = None,
    ) -> RunReport:
        """A run that takes its input and ends on its own; nothing is said on its channel."""
        with self._slot(limits) as slot:
            files = _RunFiles(stdin)
            try:
                deadline = _deadline(limits)
                request: dict[str, Any] = {"op": "run", "mode": mode, "limits": limits.message()}
                if fetch:
                    request["fetch"] = list(fetch)
                seq = slot.begin(request, files, deadline)
                # A run that ended before it read its code: its report says how.
                with contextlib.suppress(SandboxError):
                    files.send_code(code, deadline, None, program, extra)
                files.ours.close()
                return slot.finish(seq, deadline, files, limits.max_output_bytes, end=False)
            finally:
                files.close()

    def build_run(
        self, spec: dict[str, Any], limits: Limits
    ) -> tuple[RunReport, dict[str, Any] | None]:
        """Run a build's ``steps`` confined; return the report and what the build sent back.

        ``spec`` is the template's exec message: ``files`` (``[path, mode,
        base64]``), ``steps`` (argv lists, absolute tools), ``env``, ``collect``
        (the paths to send back) and ``collect_cap``. The second value is
        ``{"steps": [[exit, signal], ...], "files": [...]}``, or ``None`` when the
        run ended before it sent one (its report says how).
        """
        with self._slot(limits, build=True) as slot:
            files = _RunFiles(b"")
            deadline = _deadline(limits)
            try:
                # No long_after_s: a compile is never moved to the long lane.
                message = {k: v for k, v in limits.message().items() if k != "long_after_s"}
                request = {"op": "run", "mode": "exec", "limits": message}
                seq = slot.begin(request, files, deadline)
                sent: dict[str, Any] | None = None
                with contextlib.suppress(SandboxError):
                    files.send_code("", deadline, None, spec)
                    with contextlib.suppress(OSError, EOFError, ValueError):
                        got = recv_frame(
                            files.ours,
                            max_bytes=CONTROL_MAX_BYTES,
                            deadline=deadline.later(REPORT_GRACE_S),
                        )
                        sent = got if type(got) is dict else None
                files.ours.close()
                report = slot.finish(seq, deadline, files, limits.max_output_bytes, end=False)
                return report, sent
            finally:
                files.close()
                deadline.close()

    def program_run(
        self, spec: dict[str, Any], stdin: bytes, limits: Limits, fetch: list[str] | None = None
    ) -> RunReport:
        """Run a built program (``argv`` over ``files``) on ``stdin``; the report has its stdout.

        ``fetch`` names files to read back from the run's directory once it is gone.
        """
        return self._whole_run("exec", "", spec, stdin, limits, fetch=fetch)

    @contextlib.contextmanager
    def bridge_run(self, spec: dict[str, Any], limits: Limits) -> Iterator[FunctionRun]:
        """Start a built program whose descriptor 3 is the channel, and yield the channel.

        The program serves the harness's calls there (see
        :mod:`arbiter.graders.languages.wire`). On exit it is killed and swept,
        and ``report`` is set. Raises :class:`SandboxError` when the slot fails.
        """
        with self._channel_run("exec", "", None, {**spec, "bridge": True}, limits) as run:
            yield run

    @contextlib.contextmanager
    def function_run(
        self,
        code: str,
        limits: Limits,
        declared: list[str] | None = None,
        *,
        holding: Callable[[], contextlib.AbstractContextManager[Any]] | None = None,
        start: Callable[[Any, socket.socket, RunDeadline], None] | None = None,
    ) -> Iterator[FunctionRun]:
        """Load ``code`` in a confined child and yield a channel to it.

        ``declared`` names the module's globals the tests may use (see
        :mod:`arbiter.graders.sandbox._remote`); nothing else of it is reachable. On
        exit the child is killed and swept, and ``report`` is set. Raises
        :class:`SandboxError` when the slot fails (not when the candidate does).
        ``holding`` is entered once a place is held and before the run starts
        (what the run's trusted side needs, a checks worker: taken only by runs
        about to start, and never on the run's clock), and left after it ends;
        what it gives is the run's ``held``. ``start(held, channel, deadline)`` is
        called once the run's channel and deadline exist and before its child is
        asked for (the checks worker gets its task then, and is ready by the time
        the child has loaded the candidate's module); it must not write to the
        channel before the child's load report (the child's first frame is its code).
        """
        with self._channel_run(
            "function", code, declared or [], None, limits, holding, start
        ) as run:
            yield run

    @contextlib.contextmanager
    def _channel_run(
        self,
        mode: str,
        code: str,
        declared: list[str] | None,
        program: dict[str, Any] | None,
        limits: Limits,
        holding: Callable[[], contextlib.AbstractContextManager[Any]] | None = None,
        start: Callable[[Any, socket.socket, RunDeadline], None] | None = None,
    ) -> Iterator[FunctionRun]:
        """A run the trusted side talks to on its channel (a module's calls, a program's)."""
        with (
            self._slot(limits) as slot,
            holding() if holding is not None else contextlib.nullcontext() as held,
        ):
            files = _RunFiles(b"")
            deadline = _deadline(limits)
            try:
                if start is not None:
                    start(held, files.ours, deadline)
                request = {"op": "run", "mode": mode, "limits": limits.message()}
                seq = slot.begin(request, files, deadline)
                try:
                    files.send_code(code, deadline, declared, program)
                except SandboxError:
                    files.ours.close()
                    slot.finish(seq, deadline, files, limits.max_output_bytes, end=True)
                    raise
                run = FunctionRun(files.ours, deadline, held=held)
                try:
                    yield run
                finally:
                    files.ours.close()
                    run.report = slot.finish(
                        seq, deadline, files, limits.max_output_bytes, end=True
                    )
            finally:
                files.close()
                deadline.close()
