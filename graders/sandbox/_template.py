"""The template: a pristine confined interpreter that forks one child per run.

One module, one job: the process every run forks from. Forking, waiting for,
sweeping and reporting a run are its loop, and whatever it loads every run inherits,
so it is one file that loads little.

The confiner (:mod:`arbiter.graders.sandbox._zygote`) applies the layers that need
system calls Python has no binding for (namespaces, the run directory's
tmpfs, Landlock, no_new_privs, seccomp) and then replaces itself with a fresh
interpreter running this module, so that what a run inherits is a process
that never loaded ``ctypes`` and never held any run's code, inputs or outputs:

* the control messages it reads carry only a sequence number, a mode and
  limits; the candidate's code reaches the run's own child over the run's
  channel, and its stdin, stdout and stderr are descriptors of the trusted
  side's, which this process hands on without reading;
* each run's child is forked from this process, so it starts from the same
  state as every other run; the run directory is emptied after each run by a
  loop that cannot recurse, on a tmpfs whose inodes are bounded.

Start-up, in order: load the sandbox's own modules from the boot descriptor
(their sources, read by the confiner; the project's directory is not readable
here), pre-import the modules candidates commonly use and read the compiled
code of the lazy ones, report ready. Run as root, the template keeps its uid
(confined by Landlock, seccomp, no_new_privs and its namespaces) so that each
run can import the standard modules it names before dropping to the slot's
unprivileged uid: a run cannot signal or trace a template of another uid.

Only the standard library and the sandbox's stdlib-only modules (``_codec``,
``_frames``, ``_remote``) are used, and none of them imports ``ctypes``.
"""

from __future__ import annotations

import base64
import contextlib
import errno
import gc
import importlib
import importlib.machinery
import importlib.util
import math
import os
import re
import resource
import select
import signal
import socket
import stat
import sys
import time
import traceback
import types
from typing import Any

from arbiter.graders.sandbox import _remote
from arbiter.graders.sandbox._frames import (
    CONTROL_MAX_BYTES,
    FrameReader,
    recv_frame,
    recv_frame_with_fds,
    send_frame,
)

_CHANNEL_FD = 3
#: Each run's directory, under the slot's runs/: made empty for every run.
_RUN_DIR = "run"
#: Descriptors a run request carries: channel, stdin, stdout, stderr.
_RUN_FDS = 4
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC


def _set_limits(limits: dict[str, Any]) -> None:
    cpu_s = max(1, math.ceil(float(limits["cpu_s"])))
    memory = int(limits["memory_mb"]) << 20
    output = int(limits["max_output_bytes"])
    for which, value in (
        (resource.RLIMIT_CORE, (0, 0)),
        (resource.RLIMIT_CPU, (cpu_s, cpu_s + 1)),
        (resource.RLIMIT_AS, (memory, memory)),
        (resource.RLIMIT_FSIZE, (output, output)),
        (resource.RLIMIT_NOFILE, (int(limits["max_open_files"]),) * 2),
        # The template itself counts against the per-uid limit.
        (resource.RLIMIT_NPROC, (int(limits["max_processes"]) + 1,) * 2),
    ):
        resource.setrlimit(which, value)


def _module(name: str) -> dict[str, Any]:
    """Return the namespace of a fresh module registered under ``name``.

    Registered, because library code looks a class's module up by name
    (``dataclasses`` resolving string annotations, ``typing.get_type_hints``,
    ``pickle``): a namespace no module holds made an honest ``@dataclass`` fail.
    """
    module = types.ModuleType(name)
    module.__dict__["__builtins__"] = __builtins__
    sys.modules[name] = module
    return module.__dict__


def _compiled(code: str) -> types.CodeType:
    # dont_inherit: this module's own ``from __future__ import annotations`` must
    # not become the candidate's (its annotations would turn into strings).
    return compile(code, "solution.py", "exec", dont_inherit=True)


def _serve_function(code: str, declared: list[str], chan: socket.socket) -> int:
    """Load the candidate module and answer calls until the trusted side hangs up.

    What the candidate printed is flushed before each frame goes out: the run is
    ended when the tests are done, and output still in a buffer then would never
    reach its feedback.
    """
    namespace = _module("__candidate__")
    owner = os.getpid()

    def ours() -> None:
        # A process the candidate forked comes back through here as well, holding the
        # channel: it never speaks for the run (its frames would race the run's own,
        # and what the run is told would hang on timing), so it leaves at once.
        if os.getpid() != owner:
            os._exit(0)

    try:
        exec(_compiled(code), namespace)
    except BaseException as e:
        ours()
        _flush_output()
        send_frame(chan, _remote.load_failure(e))
        return 1
    ours()
    session = _remote.Session(namespace, declared)
    _flush_output()
    send_frame(chan, session.ready())
    requests = FrameReader(chan, max_bytes=CONTROL_MAX_BYTES)
    while True:
        try:
            request = requests.recv()
        except EOFError:
            return 0
        reply = session.reply(request)
        ours()
        _flush_output()
        send_frame(chan, reply)


#: The run's own output streams and their flush, taken before the candidate's code
#: runs (its code may rebind ``sys.stdout`` or a stream's ``flush``: its output only).
_STREAMS = (sys.stdout, sys.stderr)
_FLUSH = type(sys.stdout).flush


def _flush_output() -> None:
    for stream in _STREAMS:
        with contextlib.suppress(BaseException):
            _FLUSH(stream)


def _run_script(code: str) -> int:
    """Run the candidate as ``__main__`` on the stdin/stdout the template wired up."""
    namespace = _module("__main__")
    status = 0
    try:
        exec(_compiled(code), namespace)
    except SystemExit as e:
        status = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    except BaseException:
        traceback.print_exc()
        status = 1
    with contextlib.suppress(BaseException):
        sys.stdout.flush()
    return status


def _write_files(files: list[Any], cwd: str) -> None:
    """Write the run's files (``[relative path, mode, base64]``) under ``cwd``."""
    for name, mode, data in files:
        path = os.path.normpath(os.path.join(cwd, name))
        if not path.startswith(cwd + os.sep):
            raise ValueError(f"{name!r} is not a path under the run directory")
        os.makedirs(os.path.dirname(path), 0o700, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, mode & 0o700)
        with os.fdopen(fd, "wb") as f:
            f.write(base64.b64decode(data))


def _read_files(names: list[str], cwd: str, cap: int) -> list[list[Any]]:
    """Read back what a build made: files, and directories' files, at most ``cap`` bytes."""
    found: list[list[Any]] = []
    total = 0
    for name in names:
        top = os.path.join(cwd, name)
        paths = [top]
        if os.path.isdir(top) and not os.path.islink(top):
            paths = [
                os.path.join(d, f)
                for d, _, fs in os.walk(top)
                for f in sorted(fs)
                if not os.path.islink(os.path.join(d, f))
            ]
        for path in paths:
            st = os.lstat(path)
            if not stat.S_ISREG(st.st_mode):
                continue
            total += st.st_size
            if total > cap:
                raise ValueError(f"the build's artifacts are over {cap} bytes")
            with open(path, "rb") as f:
                data = f.read()
            rel = os.path.relpath(path, cwd)
            found.append([rel, stat.S_IMODE(st.st_mode), base64.b64encode(data).decode()])
    return found


#: What a run's fetched files may hold in all: the rest are reported as not fetched.
FETCH_CAP = 16 << 20


def _fetch(names: Any, cwd: str) -> tuple[dict[str, str], dict[str, str]]:
    """Read files a run left, by relative path, once every process of it is gone.

    The template reads them (the run cannot answer for itself), following no link
    at any step: each directory is opened relative to the one above it. Only a
    regular file the run's own uid owns is read (a hard link to anyone else's
    file is not its output), at most :data:`FETCH_CAP` bytes in all.

    Returns:
        The files read (path -> base64), and why each other one was not.
    """
    found: dict[str, str] = {}
    refused: dict[str, str] = {}
    total = 0
    for name in names if type(names) is list else ():
        if type(name) is not str:
            continue
        parts = name.split("/")
        if not name or any(p in ("", ".", "..") for p in parts):
            refused[name] = "not a relative path of plain names"
            continue
        fd = -1
        try:
            fd = os.open(cwd, _DIR_FLAGS)
            for part in parts[:-1]:
                below = os.open(part, _DIR_FLAGS | os.O_NOFOLLOW, dir_fd=fd)
                os.close(fd)
                fd = below
            leaf = os.open(
                parts[-1], os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=fd
            )
            os.close(fd)
            fd = leaf
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                refused[name] = "not a regular file"
                continue
            if _RUN_AS is not None and st.st_uid != _RUN_AS[0]:
                refused[name] = "not the run's own file"
                continue
            if total + st.st_size > FETCH_CAP:
                refused[name] = f"over {FETCH_CAP >> 20} MiB fetched in all"
                continue
            chunks = []
            while data := os.read(fd, 1 << 20):
                chunks.append(data)
            body = b"".join(chunks)[: FETCH_CAP - total]
            total += len(body)
            found[name] = base64.b64encode(body).decode("ascii")
        except FileNotFoundError:
            refused[name] = "no such file"
        except OSError as e:
            if e.errno == errno.ELOOP:
                refused[name] = "a symbolic link (never followed)"
                continue
            refused[name] = f"cannot be read ({e.strerror or type(e).__name__})"
        finally:
            if fd >= 0:
                os.close(fd)
    return found, refused


def _spawn(argv: list[str], env: dict[str, str]) -> int:
    """Run one command to its end; return its wait status."""
    pid = os.fork()
    if pid == 0:
        try:
            os.execve(argv[0], argv, env)
        except BaseException as e:
            with contextlib.suppress(BaseException):
                os.write(2, f"cannot run {argv[0]}: {e}\n".encode())
        os._exit(127)
    return os.waitpid(pid, 0)[1]


def _exec(spec: dict[str, Any], chan: socket.socket, limits: dict[str, Any], cwd: str) -> int:
    """Run a built program: write its files, then build (``steps``) or become it (``argv``).

    A build runs its steps in order, each to its end, stopping at the first
    that fails, then sends the artifacts back on the channel (the trusted side
    keeps them; the run directory is emptied after the run). A program's run
    replaces this process (``execve``); with ``bridge`` its descriptor 3 is the
    run's channel, where the trusted side sends the harness's calls.
    """
    _write_files(spec.get("files") or [], cwd)

    def here(words: list[str]) -> list[str]:
        return [str(w).replace("{out}", cwd) for w in words]

    env = {str(k): str(v).replace("{out}", cwd) for k, v in (spec.get("env") or {}).items()}
    _set_limits(limits)
    steps = spec.get("steps")
    if steps is not None:
        statuses = []
        for argv in steps:
            status = _spawn(here(argv), env)
            statuses.append(
                [
                    os.WEXITSTATUS(status) if os.WIFEXITED(status) else None,
                    os.WTERMSIG(status) if os.WIFSIGNALED(status) else None,
                ]
            )
            if status != 0:
                break
        files: list[list[Any]] = []
        if all(s == [0, None] for s in statuses):
            files = _read_files(spec.get("collect") or [], cwd, int(spec.get("collect_cap", 0)))
        send_frame(chan, {"steps": statuses, "files": files})
        return 0
    argv = here(spec["argv"])
    if spec.get("bridge"):
        os.set_inheritable(_CHANNEL_FD, True)
    else:
        chan.close()
    os.execve(argv[0], argv, env)
    return 127


#: The standard modules a run imports are imported before its uid drop: after
#: it, an interpreter installed under a private directory (``/root``) cannot
#: read them. These never are (side effects on import).
_NEVER_PREIMPORT = frozenset({"antigravity", "this", "idlelib", "tkinter", "turtle", "turtledemo"})
_IMPORTS = re.compile(r"^[ \t]*(?:from[ \t]+([\w.]+)[ \t]+import|import[ \t]+([\w., \t]+))", re.M)


def _preimport(code: str) -> None:
    """Import the standard modules ``code``'s import statements name, that are not loaded yet."""
    if "import" not in code:
        return
    for match in _IMPORTS.finditer(code):
        listed = match.group(1) or match.group(2) or ""
        for item in listed.split(","):
            words = item.split()
            name = words[0].split(".")[0] if words else ""
            if (
                name in sys.modules
                or name not in sys.stdlib_module_names
                or name in _NEVER_PREIMPORT
            ):
                continue
            with contextlib.suppress(BaseException):
                importlib.import_module(name)


#: The uid and gid a run drops to (as root), or None (not root, or the layer is off).
_RUN_AS: tuple[int, int] | None = None


def _drop_uid() -> None:
    """Become the slot's unprivileged uid; a run never continues as root."""
    if _RUN_AS is None:
        return
    uid, gid = _RUN_AS
    os.setgroups([])
    os.setresgid(gid, gid, gid)
    os.setresuid(uid, uid, uid)
    if os.getuid() != uid or os.geteuid() != uid:
        os._exit(70)


def _child(request: dict[str, Any], cwd: str, fds: list[int]) -> None:
    """Become the confined run; never returns.

    The candidate's code is the first message on the run's channel: it never
    passes through the template. The standard modules it imports are imported
    first (nothing else is loaded that the run did not ask for), then the uid
    is dropped and the limits set. What is the same for every run is set once
    in the template and inherited: SIGINT and SIGXFSZ at their defaults, TMPDIR
    (the run directory's path does not change).
    """
    status = 70
    try:
        os.setsid()
        chan_fd, stdin_fd, out_fd, err_fd = fds
        os.dup2(stdin_fd, 0)
        os.dup2(out_fd, 1)
        os.dup2(err_fd, 2)
        if chan_fd != _CHANNEL_FD:  # dup3 refuses equal descriptors
            os.dup2(chan_fd, _CHANNEL_FD, inheritable=False)
        os.closerange(_CHANNEL_FD + 1, 1 << 16)
        os.chdir(cwd)
        chan = socket.socket(fileno=_CHANNEL_FD)
        first = recv_frame(chan, max_bytes=CONTROL_MAX_BYTES)
        code = first.get("code") if type(first) is dict else None
        declared = first.get("declared") if type(first) is dict else None
        if type(code) is not str:
            raise ValueError("the run's first message carries no code")
        _preimport(code)
        _drop_uid()
        if request["mode"] == "exec":
            spec = first.get("exec")
            if type(spec) is not dict:
                raise ValueError("an exec run's first message carries no program")
            del first
            status = _exec(spec, chan, request["limits"], cwd)
        elif request["mode"] == "function":
            _set_limits(request["limits"])
            names = [n for n in declared or () if type(n) is str]
            status = _serve_function(code, names, chan)
        else:
            extra = first.get("files")
            if extra is not None and type(extra) is not list:
                raise ValueError("a script run's files are not a list")
            _write_files(extra or [], cwd)
            _set_limits(request["limits"])
            chan.close()
            del first, extra
            status = _run_script(code)
    except BaseException:
        with contextlib.suppress(BaseException):
            traceback.print_exc()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(BaseException):
            stream.flush()
    os._exit(status & 0xFF)


def _is_init() -> bool:
    """Whether the template is PID 1 of its own PID namespace (asked here or in a run)."""
    return os.getpid() == 1


def _set_tempdir(path: str) -> None:
    """Point TMPDIR and ``tempfile`` at ``path``: temporary files die with the run."""
    os.environ["TMPDIR"] = path
    tempfile = sys.modules.get("tempfile")
    if tempfile is not None:
        tempfile.tempdir = path  # type: ignore[attr-defined]


def _open_dir(name: str, dir_fd: int) -> int:
    """Open a directory a run left, making it ours to empty first if it is not."""
    try:
        fd = os.open(name, _DIR_FLAGS | os.O_NOFOLLOW, dir_fd=dir_fd)
    except PermissionError:
        # No process of the run is left to swap it for a link: chmod may follow.
        os.chmod(name, 0o700, dir_fd=dir_fd)
        fd = os.open(name, _DIR_FLAGS | os.O_NOFOLLOW, dir_fd=dir_fd)
    if stat.S_IMODE(os.fstat(fd).st_mode) & 0o700 != 0o700:
        os.fchmod(fd, 0o700)
    return fd


def empty_dir(path: str) -> int:
    """Remove everything beneath ``path``, however deep, by a loop; return the entries removed.

    Iterative, with one open directory at a time: a chain of directories as deep
    as the run could make has no recursion to exhaust and no path length to
    overflow (each step is relative to the directory's descriptor, and going up
    is ``..`` of the directory just emptied). Call it only once every process of
    the run is gone (see :func:`_sweep`).
    """
    fd = _open_dir(path, -100)  # AT_FDCWD: path is absolute
    below: list[str] = []
    removed = 0
    try:
        while True:
            sub = None
            with os.scandir(fd) as entries:
                for entry in entries:
                    if entry.is_dir(follow_symlinks=False):
                        sub = entry.name
                        break
                    os.unlink(entry.name, dir_fd=fd)
                    removed += 1
            if sub is not None:
                child = _open_dir(sub, fd)
                os.close(fd)
                fd = child
                below.append(sub)
                continue
            if not below:
                return removed
            parent = os.open("..", _DIR_FLAGS, dir_fd=fd)
            os.close(fd)
            fd = parent
            os.rmdir(below.pop(), dir_fd=fd)
            removed += 1
    finally:
        os.close(fd)


def _sweep() -> int:
    """Kill and reap every process left in the namespace; return how many there were."""
    if not _is_init():
        # Without our own PID namespace kill(-1) would reach the whole uid's processes.
        return 0
    swept = 0
    while True:
        with contextlib.suppress(ProcessLookupError):
            os.kill(-1, signal.SIGKILL)
        try:
            os.waitpid(-1, 0)
        except ChildProcessError:
            return swept
        swept += 1


def _wait(ctrl: socket.socket, request: dict[str, Any], pid: int, started: float) -> str:
    """Wait for the run to exit, its deadline, or the trusted side's "end"; say which.

    The trusted side may move the deadline later ("extend", with the run's new
    backstop): it credits the run with the time its processes waited for a CPU.
    Lanes and priorities are the trusted side's too (it reaches the run's
    processes through the host's /proc, which no process in here can read).
    """
    deadline = started + float(request["limits"]["timeout_s"])
    pidfd = os.pidfd_open(pid)
    poller = select.poll()
    poller.register(pidfd, select.POLLIN)
    poller.register(ctrl, select.POLLIN)
    try:
        while True:
            left_ms = (deadline - time.monotonic()) * 1000
            # Polled even past the deadline: an "extend" sent before it still counts.
            ready = {fd for fd, _ in poller.poll(max(0.0, left_ms))}
            if pidfd in ready:
                return "exit"
            if ctrl.fileno() in ready:
                message = recv_frame(ctrl, max_bytes=CONTROL_MAX_BYTES)
                if message.get("seq") != request["seq"]:
                    continue
                if message.get("op") == "end":
                    return "end"
                if message.get("op") == "extend":
                    deadline = max(deadline, started + float(message["timeout_s"]))
                continue
            if deadline <= time.monotonic():
                return "deadline"
    finally:
        os.close(pidfd)


def _run(ctrl: socket.socket, request: dict[str, Any], fds: list[int], slot: str) -> bool:
    """Fork, watch and sweep one run; report it. Return False when the slot must be retired."""
    runs = os.path.join(slot, "runs")
    item_dir = os.path.join(runs, _RUN_DIR)
    os.mkdir(item_dir, 0o700)
    if _RUN_AS is not None:
        os.chown(item_dir, *_RUN_AS)
    sys.stdout.flush()
    sys.stderr.flush()
    started = time.monotonic()
    pid = os.fork()
    if pid == 0:
        _child(request, item_dir, fds)
    for fd in fds:
        os.close(fd)
    ended_by = _wait(ctrl, request, pid, started)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, signal.SIGKILL)
    _, status, usage = os.wait4(pid, 0)
    wall_s = time.monotonic() - started
    strays = _sweep()
    fetched: dict[str, str] = {}
    refused: dict[str, str] = {}
    if request.get("fetch"):
        # Every process of the run is gone: nothing can swap a file while it is read.
        fetched, refused = _fetch(request["fetch"], item_dir)
    clean = True
    try:
        empty_dir(runs)
    except BaseException as e:
        # Whatever the run left that cannot be removed, the next run must not
        # see: the trusted side retires this template (and its tmpfs).
        clean = False
        with contextlib.suppress(BaseException):
            print(f"run directory not emptied: {type(e).__name__}: {e}", file=sys.stderr)
    send_frame(
        ctrl,
        {
            "op": "done",
            "seq": request["seq"],
            "exit_code": os.WEXITSTATUS(status) if os.WIFEXITED(status) else None,
            "signal": os.WTERMSIG(status) if os.WIFSIGNALED(status) else None,
            "ended_by": ended_by,
            "wall_s": wall_s,
            "cpu_s": usage.ru_utime + usage.ru_stime,
            "maxrss_kb": usage.ru_maxrss,
            "strays": strays,
            "clean": clean,
            "fetched": fetched,
            "not_fetched": refused,
        },
    )
    return clean


class _LazyModules:
    """A meta path finder for modules whose compiled code was read before the uid drop.

    The code runs only in a child that imports the module: the template itself,
    forked for every run, never executes it (see ``pool.DEFAULT_LAZY``).
    """

    def __init__(self, names: list[str]) -> None:
        self.code: dict[str, tuple[types.CodeType, str | None]] = {}
        self.missing: list[str] = []
        for name in names:
            try:
                spec = importlib.util.find_spec(name)
            except (ImportError, ValueError):
                spec = None
            code = None
            # Plain modules only: a package would need its submodules served too.
            if spec is not None and spec.submodule_search_locations is None:
                get_code = getattr(spec.loader, "get_code", None)
                with contextlib.suppress(ImportError, OSError, SyntaxError, TypeError):
                    code = get_code(name) if get_code is not None else None
            if spec is None or code is None:
                self.missing.append(name)
            else:
                self.code[name] = (code, spec.origin)

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
        """Return a spec for a lazy module not imported yet, else None."""
        if name not in self.code:
            return None
        loader: Any = self  # a loader by duck typing: importlib.abc would import more
        spec = importlib.machinery.ModuleSpec(name, loader, origin=self.code[name][1])
        spec.has_location = spec.origin is not None
        return spec

    def create_module(self, spec: Any) -> None:
        """Let the import system create the module object."""
        return None

    def exec_module(self, module: types.ModuleType) -> None:
        """Run the module's code in its namespace."""
        exec(self.code[module.__name__][0], module.__dict__)


def _run_as(config: dict[str, Any], layers: dict[str, str]) -> None:
    """Decide the uid every run drops to, and record the layer's state."""
    global _RUN_AS
    if os.getuid() != 0:
        layers["unprivileged_uid"] = f"active (not root: running as uid {os.getuid()})"
        return
    if "unprivileged_uid" in config.get("disable_layers", ()):
        layers["unprivileged_uid"] = "unavailable: disabled by the pool's configuration"
        return
    _RUN_AS = (int(config["uid"]), int(config["gid"]))
    layers["unprivileged_uid"] = "active"


def main(config: dict[str, Any], layers: dict[str, str], ctrl_fd: int) -> None:
    """Serve runs on the control socket ``ctrl_fd``: one fork per run."""
    ctrl = socket.socket(fileno=ctrl_fd)
    missing = []
    for name in config["preload"]:
        try:
            importlib.import_module(name)
        except ImportError:
            missing.append(name)
    lazy = _LazyModules([n for n in config["lazy"] if n not in sys.modules])
    missing += lazy.missing
    sys.meta_path.insert(0, lazy)
    # As PID 1 only signals with a handler get through from inside the namespace:
    # keep SIGINT's default so a run cannot interrupt the template. SIGXFSZ back
    # to its default (Python ignores it) so a run over its file-size limit is
    # killed; the template itself writes no files.
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGXFSZ, signal.SIG_DFL)
    # Honest programs print integers of any size; the run's CPU limit bounds the cost.
    sys.set_int_max_str_digits(0)
    _set_tempdir(os.path.join(config["scratch"], "runs", _RUN_DIR))
    _run_as(config, layers)
    scratch = str(config["scratch"])
    del config
    gc.collect()
    gc.freeze()
    send_frame(ctrl, {"op": "ready", "layers": layers, "missing": missing, "pid": os.getpid()})
    while True:
        try:
            request, fds = recv_frame_with_fds(ctrl, max_bytes=CONTROL_MAX_BYTES)
        except EOFError:
            break
        if request.get("op") != "run" or len(fds) != _RUN_FDS:
            # A late "end" or "extend" for a run that had already exited.
            for fd in fds:
                os.close(fd)
            continue
        if not _run(ctrl, request, fds, scratch):
            break
    _sweep()
    os._exit(0)
