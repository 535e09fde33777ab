"""The zygote: a clean interpreter that confines itself once and forks one child per run.

Started by :mod:`graders.sandbox.pool` as ``python -s -c BOOT FD`` with an empty
environment, where the boot code enters ``graders`` and ``graders.sandbox`` as
bare packages (their ``__init__`` never runs here) and calls :func:`main` on
the control socket ``FD``. It never sees a task's tests or any secret of the
trusted process: it gets only candidate code and limits. Start-up, in order:

1. pre-import the modules candidates may use (after the uid drop the
   interpreter's files may be unreadable), and read the compiled code of the
   lazy ones, which only a run that imports them executes;
2. unshare PID/NET/IPC/UTS namespaces (plus a user namespace when not root) and
   fork, so that the zygote proper is PID 1 of its PID namespace: the kernel
   drops signals from inside the namespace that PID 1 has no handler for, and
   ``kill(-1)`` from PID 1 sweeps every process the run left behind;
3. drop to the slot's unprivileged uid (RLIMIT_NPROC binds only non-root);
4. no_new_privs, Landlock (the interpreter read-only, ``runs/`` read-write,
   nothing else — not even the slot directory itself, so no run can swap
   ``runs/`` for a symlink — no TCP), seccomp.

Each layer that fails is reported as unavailable in the ready message, never
skipped silently. Per run, the forked child starts a new session, asks for
SIGKILL when the zygote dies, enters a nested Landlock domain that scopes
signals (it cannot signal the zygote), sets rlimits, and runs the code.

One module by necessity: it is what a bare interpreter loads before it
confines itself, so it imports only the standard library and the sandbox's
stdlib-only helpers, and the order of confinement steps must be read whole.
"""

from __future__ import annotations

import contextlib
import gc
import importlib
import importlib.machinery
import importlib.util
import math
import os
import resource
import select
import shutil
import signal
import socket
import sys
import time
import traceback
import types
from typing import Any

from graders.sandbox import _linux as kernel
from graders.sandbox import _remote, codec
from graders.sandbox.frames import (
    CONTROL_MAX_BYTES,
    FrameReader,
    recv_frame,
    recv_frame_with_fds,
    send_frame,
)

_CHANNEL_FD = 3
#: A run in the long lane runs at the lowest CPU priority, behind every short one.
_LONG_NICE = 19
#: Each run's directory, under the slot's runs/: made empty for every run.
_RUN_DIR = "run"
#: The zygote's pid in its own namespace, set once it has entered it.
_ZYGOTE_PID = 0


#: Layers the pool's configuration leaves out (the escape suite's controls).
_DISABLED: set[str] = set()


def _try(layers: dict[str, str], name: str, action: Any) -> bool:
    """Apply one layer, recording ``active`` or why it is not."""
    if name in _DISABLED:
        layers[name] = "unavailable: disabled by the pool's configuration"
        return False
    try:
        action()
    except (OSError, ValueError) as e:
        layers[name] = f"unavailable: {e}"
        return False
    layers[name] = "active"
    return True


def _enter_namespaces(layers: dict[str, str]) -> None:
    """Unshare namespaces; fork so that the zygote proper is PID 1 of the new one."""
    flags = kernel.CLONE_NEWPID | kernel.CLONE_NEWNET | kernel.CLONE_NEWIPC | kernel.CLONE_NEWUTS
    uid, gid = os.getuid(), os.getgid()
    if uid != 0:
        # An ordinary user may create the others only inside a user namespace it owns.
        flags |= kernel.CLONE_NEWUSER
    if not _try(layers, "namespaces", lambda: kernel.unshare(flags)):
        return
    if uid != 0:
        with open("/proc/self/setgroups", "w") as f:
            f.write("deny")
        with open("/proc/self/uid_map", "w") as f:
            f.write(f"{uid} {uid} 1")
        with open("/proc/self/gid_map", "w") as f:
            f.write(f"{gid} {gid} 1")
    pid = os.fork()
    if pid:
        # The outer process only waits: it is what the pool's Popen sees, and its
        # death (the pool killed it) takes PID 1, hence every run, with it.
        _, status = os.waitpid(pid, 0)
        os._exit(os.waitstatus_to_exitcode(status) & 0xFF)
    kernel.set_pdeathsig(signal.SIGKILL)
    with contextlib.suppress(OSError):
        kernel.sethostname("sandbox")


def _confine(config: dict[str, Any], layers: dict[str, str]) -> dict[str, kernel.LandlockRuleset]:
    """Apply the slot-wide layers; return the per-run ruleset ("run") built."""
    # The ruleset is built before the uid drop: its rules hold O_PATH descriptors,
    # and the new uid may not be able to open the interpreter's directories.
    ruleset: kernel.LandlockRuleset | None = None
    per_run: dict[str, kernel.LandlockRuleset] = {}

    def base(rules: kernel.LandlockRuleset) -> kernel.LandlockRuleset:
        for path in config["read_only"]:
            rules.allow(path, kernel.FS_READ | kernel.FS_EXECUTE)
        rules.allow("/dev/null", kernel.FS_READ_FILE | kernel.FS_WRITE_FILE)
        for path in ("/dev/urandom", "/dev/random"):
            rules.allow(path, kernel.FS_READ_FILE)
        return rules

    def build() -> None:
        nonlocal ruleset
        ruleset = base(kernel.LandlockRuleset())
        slot = config["scratch"]
        ruleset.allow(os.path.join(slot, "runs"), kernel.FS_READ | kernel.FS_WRITE)
        # Nested domain for each run: its run directory only, and, with ABI 6+,
        # no signals out of the domain.
        rules = base(kernel.LandlockRuleset())
        rules.allow(os.path.join(slot, "runs"), kernel.FS_READ | kernel.FS_WRITE)
        per_run["run"] = rules
        layers["landlock_abi"] = str(ruleset.abi)

    built = _try(layers, "landlock", build)
    if os.getuid() == 0:

        def drop() -> None:
            uid, gid = int(config["uid"]), int(config["gid"])
            os.setgroups([])
            os.setresgid(gid, gid, gid)
            os.setresuid(uid, uid, uid)

        _try(layers, "unprivileged_uid", drop)
    else:
        layers["unprivileged_uid"] = f"active (not root: running as uid {os.getuid()})"
    _try(layers, "no_new_privs", kernel.no_new_privs)
    with contextlib.suppress(OSError):
        kernel.set_dumpable(False)
    if built and ruleset is not None:

        def restrict() -> None:
            assert ruleset is not None
            ruleset.restrict_self()
            ruleset.close()

        _try(layers, "landlock", restrict)
        abi = ruleset.abi
        layers["signal_scoping"] = "active" if abi >= 6 else "unavailable: Landlock ABI < 6"
    _try(layers, "seccomp", lambda: kernel.seccomp_install(kernel.seccomp_filter()))
    return per_run


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
        # The zygote itself counts against the per-uid limit.
        (resource.RLIMIT_NPROC, (int(limits["max_processes"]) + 1,) * 2),
    ):
        resource.setrlimit(which, value)


def _kind(value: Any) -> str:
    """Say what a candidate global is: the trusted side proxies functions, imports modules."""
    if isinstance(value, types.ModuleType):
        return f"module:{getattr(value, '__name__', '')}"
    base = _remote.exception_kind(value)
    if base is not None:
        return f"exception:{base}"
    return "callable" if callable(value) else "value"


def _serve_function(code: str) -> int:
    """Load the candidate module and answer calls until the trusted side hangs up."""
    chan = socket.socket(fileno=_CHANNEL_FD)
    namespace: dict[str, Any] = {"__name__": "__candidate__", "__builtins__": __builtins__}
    try:
        exec(compile(code, "solution.py", "exec"), namespace)
    except BaseException as e:
        send_frame(chan, {"ready": False, "type": type(e).__name__, "message": str(e)[:2000]})
        return 1
    names = [[k, _kind(v)] for k, v in list(namespace.items()) if not k.startswith("__")]
    send_frame(chan, {"ready": True, "names": names})
    # Objects with no encoding (instances of the candidate's classes) stay here;
    # the trusted side holds handles it can pass back but never look inside.
    kept: list[Any] = []
    requests = FrameReader(chan, max_bytes=CONTROL_MAX_BYTES)
    while True:
        try:
            request = requests.recv()
        except EOFError:
            return 0
        send_frame(chan, _remote.reply(namespace, request, kept))


def _run_script(code: str) -> int:
    """Run the candidate as ``__main__`` on the stdin/stdout the zygote wired up."""
    namespace: dict[str, Any] = {"__name__": "__main__", "__builtins__": __builtins__}
    status = 0
    try:
        exec(compile(code, "solution.py", "exec"), namespace)
    except SystemExit as e:
        status = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    except BaseException:
        traceback.print_exc()
        status = 1
    with contextlib.suppress(BaseException):
        sys.stdout.flush()
    return status


def _child(
    request: dict[str, Any],
    cwd: str,
    fds: tuple[int, int, int, int],
    ruleset: kernel.LandlockRuleset | None,
) -> None:
    """Become the confined run; never returns.

    What is the same for every run is set once in the zygote and inherited:
    SIGINT and SIGXFSZ at their defaults, TMPDIR (the run directory's path does
    not change). Each line here costs the run its own page faults.
    """
    status = 70
    try:
        os.setsid()
        if not _is_init():
            # A zygote that is PID 1 takes its runs with it when it dies (the
            # kernel kills a PID namespace with its init); otherwise they ask to.
            kernel.set_pdeathsig(signal.SIGKILL)
        if ruleset is not None:
            ruleset.restrict_self()
        stdin_fd, out_fd, err_fd, chan_fd = fds
        os.dup2(stdin_fd, 0)
        os.dup2(out_fd, 1)
        os.dup2(err_fd, 2)
        if chan_fd >= 0:
            if chan_fd != _CHANNEL_FD:  # dup3 refuses equal descriptors
                os.dup2(chan_fd, _CHANNEL_FD, inheritable=False)
            os.closerange(_CHANNEL_FD + 1, 1 << 16)
        else:
            os.closerange(_CHANNEL_FD, 1 << 16)
        os.chdir(cwd)
        _set_limits(request["limits"])
        if request["mode"] == "function":
            status = _serve_function(request["code"])
        else:
            status = _run_script(request["code"])
    except BaseException:
        with contextlib.suppress(BaseException):
            traceback.print_exc()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(BaseException):
            stream.flush()
    os._exit(status & 0xFF)


def _is_init() -> bool:
    """Whether the zygote is PID 1 of its own PID namespace (asked in the zygote or a run)."""
    return _ZYGOTE_PID == 1


def _set_tempdir(path: str) -> None:
    """Point TMPDIR and ``tempfile`` at ``path``: temporary files die with the run."""
    os.environ["TMPDIR"] = path
    tempfile = sys.modules.get("tempfile")
    if tempfile is not None:
        tempfile.tempdir = path  # type: ignore[attr-defined]


def _wipe(path: str) -> None:
    def retry(func: Any, target: str, _exc: Any) -> None:
        # A run may leave directories without write or search permission.
        with contextlib.suppress(OSError):
            os.chmod(os.path.dirname(target), 0o700)
            os.chmod(target, 0o700)
            func(target)

    if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path, onerror=retry)
    else:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)


def _remove_run_dir(path: str) -> None:
    """Remove a run's directory: the files the zygote made, then whatever the run left."""
    for name in (".stdout", ".stderr", ".stdin"):
        # The run may have put anything in their place (a directory, say): rmtree's job.
        with contextlib.suppress(OSError):
            os.unlink(os.path.join(path, name))
    try:
        os.rmdir(path)  # the common case: the run wrote nothing of its own here
    except OSError:
        _wipe(path)


def _read_head(fd: int, cap: int) -> tuple[bytes, int]:
    size = os.fstat(fd).st_size
    return os.pread(fd, min(size, cap), 0), size


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


def _run(
    ctrl: socket.socket,
    request: dict[str, Any],
    fds: list[int],
    slot: str,
    per_run: dict[str, kernel.LandlockRuleset],
) -> None:
    runs = os.path.join(slot, "runs")
    for entry in os.listdir(runs):
        # Nothing a previous run left (in TMPDIR, say) may reach this one.
        _wipe(os.path.join(runs, entry))
    item_dir = os.path.join(runs, _RUN_DIR)
    os.mkdir(item_dir, 0o700)
    flags = os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    out_fd = os.open(os.path.join(item_dir, ".stdout"), flags, 0o600)
    err_fd = os.open(os.path.join(item_dir, ".stderr"), flags, 0o600)
    if "stdin" in request:
        stdin_path = os.path.join(item_dir, ".stdin")
        with open(stdin_path, "xb") as f:
            f.write(codec.decode(request["stdin"]))
        stdin_fd = os.open(stdin_path, os.O_RDONLY | os.O_CLOEXEC)
    else:
        stdin_fd = os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC)
    chan_fd = fds[0] if fds else -1
    for extra in fds[1:]:
        os.close(extra)
    cwd = item_dir
    ruleset = per_run.get("run")
    sys.stdout.flush()
    sys.stderr.flush()
    started = time.monotonic()
    pid = os.fork()
    if pid == 0:
        _child(request, cwd, (stdin_fd, out_fd, err_fd, chan_fd), ruleset)
    os.close(stdin_fd)
    if chan_fd >= 0:
        os.close(chan_fd)
    deadline = started + float(request["limits"]["timeout_s"])
    long_at = started + float(request["limits"].get("long_after_s", math.inf))
    long = False
    pidfd = os.pidfd_open(pid)
    ended_by = "exit"
    poller = select.poll()
    poller.register(pidfd, select.POLLIN)
    poller.register(ctrl, select.POLLIN)
    while True:
        now = time.monotonic()
        if not long and now >= long_at:
            # Into the long lane: behind every short run, whose place it gives up.
            long = True
            with contextlib.suppress(OSError):
                os.setpriority(os.PRIO_PGRP, pid, _LONG_NICE)
        left_ms = ((deadline if long else min(deadline, long_at)) - now) * 1000
        if deadline <= now:
            ended_by = "deadline"
            break
        ready = {fd for fd, _ in poller.poll(max(0.0, left_ms))}
        if pidfd in ready:
            break
        if ctrl.fileno() in ready:
            message = recv_frame(ctrl, max_bytes=CONTROL_MAX_BYTES)
            if message.get("op") == "end" and message.get("seq") == request["seq"]:
                ended_by = "end"
                break
    os.close(pidfd)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, signal.SIGKILL)
    _, status, usage = os.wait4(pid, 0)
    wall_s = time.monotonic() - started
    strays = _sweep()
    cap = int(request["limits"]["max_output_bytes"])
    stdout, stdout_size = _read_head(out_fd, cap)
    stderr, stderr_size = _read_head(err_fd, 64 << 10)
    os.close(out_fd)
    os.close(err_fd)
    _remove_run_dir(item_dir)
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
            "long": long,
            "stdout": codec.encode(stdout),
            "stdout_size": stdout_size,
            "stderr": codec.encode(stderr),
            "stderr_size": stderr_size,
        },
    )


class _LazyModules:
    """A meta path finder for modules whose compiled code was read before confinement.

    The code runs only in a child that imports the module: the zygote itself,
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


def main() -> None:
    """Start the zygote on the control socket whose fd is ``sys.argv[1]``."""
    kernel.set_pdeathsig(signal.SIGKILL)
    ctrl = socket.socket(fileno=int(sys.argv[1]))
    config = recv_frame(ctrl, max_bytes=CONTROL_MAX_BYTES)
    missing = []
    for name in config["preload"]:
        try:
            importlib.import_module(name)
        except ImportError:
            missing.append(name)
    lazy = _LazyModules([n for n in config["lazy"] if n not in sys.modules])
    missing += lazy.missing
    sys.meta_path.insert(0, lazy)
    global _ZYGOTE_PID
    _DISABLED.update(config.get("disable_layers", ()))
    layers: dict[str, str] = {}
    _enter_namespaces(layers)
    _ZYGOTE_PID = os.getpid()
    # As PID 1 only signals with a handler get through from inside the namespace:
    # keep SIGINT's default so a run cannot interrupt the zygote. SIGXFSZ back to
    # its default (Python ignores it) so a run over its file-size limit is killed;
    # the zygote itself has no such limit.
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGXFSZ, signal.SIG_DFL)
    # Every function or script run works in the same directory path.
    _set_tempdir(os.path.join(config["scratch"], "runs", _RUN_DIR))
    per_run = _confine(config, layers)
    gc.collect()
    gc.freeze()
    send_frame(ctrl, {"op": "ready", "layers": layers, "missing": missing, "pid": os.getpid()})
    while True:
        try:
            request, fds = recv_frame_with_fds(ctrl, max_bytes=CONTROL_MAX_BYTES)
        except EOFError:
            break
        op = request.get("op")
        if op == "run":
            _run(ctrl, request, fds, config["scratch"], per_run)
        else:
            # A late "end" for a run that had already exited.
            for fd in fds:
                os.close(fd)
    _sweep()
    os._exit(0)


if __name__ == "__main__":
    main()
