"""The workspace host: one confined, copy-on-write workspace per grading, forked on demand.

Started by :mod:`arbiter.graders.repository.workspace` as ``python -s -c BOOT FD``
(the sandbox's bare-package boot: nothing of the service is imported here). It
never reads a job: for each one the trusted side passes a fresh socket, the
host forks, and the child alone reads the job from it, so no grading's tests
or patch are ever in the memory the next one is forked from.

The child (one grading):

1. unshares mount, PID, network, IPC and UTS namespaces (and a user namespace
   when not root) and forks the *supervisor*, PID 1 of the new PID namespace;
2. the supervisor mounts a bounded tmpfs on the workspace mount point and an
   overlay over the read-only snapshot on ``tree/`` (upper and work dirs in
   the tmpfs): creating a workspace is two mounts, destroying it two unmounts,
   whatever the size of the tree;
3. the *applier*, confined by Landlock (the snapshot read-only, the workspace
   read-write) and seccomp, applies the patch component by component without
   following links, puts the snapshot's own copy back over every protected
   file the patch touched and writes the hidden tests;
4. the workspace is remounted read-only, and the *runner*, as the sandbox's
   unprivileged uid with Landlock, seccomp and rlimits, ``execve``s a fresh
   interpreter that runs pytest with the reporter loaded from outside the
   workspace; the reporter writes one line per test on descriptor 3;
5. the supervisor watches the runner's CPU time and its wall clock less its
   wait for a CPU (``/proc/PID/schedstat``), kills everything left in the
   namespace when it ends, unmounts, and sends its observations and the
   reporter's raw lines back. It never interprets them: the verdict is made
   on the trusted side.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import resource
import select
import signal
import socket
import stat
import sys
import time
from typing import Any

from arbiter.graders.repository import patch as patching
from arbiter.graders.sandbox import _linux as kernel
from arbiter.graders.sandbox._frames import CONTROL_MAX_BYTES, recv_frame, send_frame

_libc = ctypes.CDLL(None, use_errno=True)
_libc.mount.argtypes = [
    ctypes.c_char_p,
    ctypes.c_char_p,
    ctypes.c_char_p,
    ctypes.c_ulong,
    ctypes.c_char_p,
]
_libc.umount2.argtypes = [ctypes.c_char_p, ctypes.c_int]

MS_RDONLY = 1
MS_NOSUID = 2
MS_NODEV = 4
MS_NOEXEC = 8
MS_REMOUNT = 32
MS_BIND = 4096
MS_REC = 16384
MS_PRIVATE = 1 << 18
MNT_DETACH = 2

#: How often the supervisor reads the runner's CPU time and wait.
_POLL_S = 0.05
#: The most of the runner's output (never parsed, kept for a reviewer) sent back.
_OUTPUT_TAIL = 8192
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
#: Runs the reporter in the runner's fresh interpreter (``python -I``).
_RUNNER_BOOT = """
import json, os, sys
fd = int(sys.argv[1])
raw = b""
while True:
    chunk = os.read(fd, 1 << 20)
    if not chunk:
        break
    raw += chunk
os.close(fd)
cfg = json.loads(raw)
del raw
import importlib.util
spec = importlib.util.spec_from_file_location("arbiter_repository_reporter", cfg["reporter"])
reporter = importlib.util.module_from_spec(spec)
spec.loader.exec_module(reporter)
import pytest
sys.path[0:0] = cfg["python_paths"]
sys.path[len(cfg["python_paths"]):len(cfg["python_paths"])] = cfg["env_paths"]
plugin = reporter.Reporter(3, cfg["isolation"])
code = pytest.main(cfg["args"], plugins=[plugin])
plugin.finish(int(code))
sys.stdout.flush()
os._exit(int(code))
"""


def _mount(source: str | None, target: str, fstype: str | None, flags: int, data: str) -> None:
    result = _libc.mount(
        source.encode() if source else None,
        target.encode(),
        fstype.encode() if fstype else None,
        flags,
        data.encode() if data else None,
    )
    if result < 0:
        err = ctypes.get_errno()
        raise kernel.KernelError(err, f"mount({fstype or source} on {target}): {os.strerror(err)}")


def _umount(target: str) -> None:
    if _libc.umount2(target.encode(), MNT_DETACH) < 0:
        err = ctypes.get_errno()
        raise kernel.KernelError(err, f"umount({target}): {os.strerror(err)}")


# --- the host -----------------------------------------------------------------


def main() -> None:
    """Serve jobs on the control socket ``sys.argv[1]``: one fork per job's socket."""
    kernel.set_pdeathsig(signal.SIGKILL)
    ctrl = socket.socket(fileno=int(sys.argv[1]))
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # the children reap themselves
    send_frame(ctrl, {"ready": os.getpid()})
    while True:
        try:
            head, fds, _flags, _addr = socket.recv_fds(ctrl, 1, 1)
        except OSError:
            os._exit(0)
        if not head:
            os._exit(0)
        for fd in fds:
            pid = os.fork()
            if pid == 0:
                try:
                    ctrl.close()
                    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
                    _job(fd)
                finally:
                    os._exit(0)
            os.close(fd)


def _job(fd: int) -> None:
    """Run one grading on ``fd``: enter namespaces, fork the supervisor, wait for it."""
    sock = socket.socket(fileno=fd)
    job = recv_frame(sock, max_bytes=CONTROL_MAX_BYTES)
    flags = (
        kernel.CLONE_NEWPID
        | kernel.CLONE_NEWNET
        | kernel.CLONE_NEWIPC
        | kernel.CLONE_NEWUTS
        | 0x00020000  # CLONE_NEWNS
    )
    uid, gid = os.getuid(), os.getgid()
    try:
        if uid != 0:
            flags |= kernel.CLONE_NEWUSER
        kernel.unshare(flags)
        if uid != 0:
            for name, text in (
                ("setgroups", "deny"),
                ("uid_map", f"{uid} {uid} 1"),
                ("gid_map", f"{gid} {gid} 1"),
            ):
                with open(f"/proc/self/{name}", "w") as f:
                    f.write(text)
    except OSError as e:
        send_frame(sock, {"error": f"namespaces: {e}"})
        return
    pid = os.fork()
    if pid == 0:
        status = 0
        try:
            _supervise(job, sock)
        except BaseException as e:  # ours: reported, never the candidate's
            with contextlib.suppress(OSError):
                send_frame(sock, {"error": f"{type(e).__name__}: {e}"})
            status = 1
        os._exit(status)
    os.waitpid(pid, 0)


# --- the supervisor -------------------------------------------------------------


def _expose(paths: list[str]) -> None:
    """Make ``paths`` reachable by an unprivileged uid, in this mount namespace only.

    An interpreter under ``/root`` (mode 700) is out of a dropped uid's reach:
    the first ancestor it cannot search is covered by a tmpfs it can, and each
    path is bound back at its own place (its files keep their own modes).
    """
    held: dict[str, list[tuple[str, int]]] = {}
    for path in paths:
        if not os.path.exists(path):
            continue
        ancestor = "/"
        for part in path.strip("/").split("/")[:-1]:
            ancestor = os.path.join(ancestor, part)
            if not os.stat(ancestor).st_mode & stat.S_IXOTH:
                held.setdefault(ancestor, []).append((path, os.open(path, os.O_PATH)))
                break
    for ancestor, items in held.items():
        _mount("tmpfs", ancestor, "tmpfs", MS_NOSUID | MS_NODEV, "size=1m,mode=0755")
        for path, fd in items:
            if os.path.isdir(f"/proc/self/fd/{fd}"):
                os.makedirs(path, exist_ok=True)
            else:
                os.makedirs(os.path.dirname(path), exist_ok=True)
                open(path, "a").close()
            _mount(f"/proc/self/fd/{fd}", path, None, MS_BIND | MS_REC, "")
            os.close(fd)


def _create(job: dict[str, Any]) -> dict[str, str]:
    """Mount the workspace: a bounded tmpfs, and an overlay of the snapshot on ``tree``."""
    mnt = job["mount"]
    limits = job["limits"]
    options = f"size={limits['tmpfs_mb']}m,nr_inodes={limits['tmpfs_inodes']},mode=0755"
    _mount("tmpfs", mnt, "tmpfs", MS_NOSUID | MS_NODEV, options)
    paths = {name: os.path.join(mnt, name) for name in ("upper", "work", "tree", "tmp")}
    for path in paths.values():
        os.mkdir(path, 0o755)
    lower = job["snapshot"]
    data = f"lowerdir={lower},upperdir={paths['upper']},workdir={paths['work']}"
    _mount("overlay", paths["tree"], "overlay", MS_NOSUID | MS_NODEV, data)
    return paths


def _destroy(job: dict[str, Any], paths: dict[str, str]) -> None:
    _umount(paths["tree"])
    _umount(job["mount"])


def _supervise(job: dict[str, Any], sock: socket.socket) -> None:
    kernel.set_pdeathsig(signal.SIGKILL)
    _mount("none", "/", None, MS_REC | MS_PRIVATE, "")
    _mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, "")
    run_as = job.get("run_as")
    if run_as is not None and os.getuid() == 0:
        _expose(job["expose"])
    if job.get("mode") == "reset":
        send_frame(sock, _resets(job))
        return
    started = time.monotonic()
    paths = _create(job)
    created = time.monotonic()
    applied = _apply(job, paths)
    apply_s = time.monotonic() - created
    report: dict[str, Any] = {"apply": applied, "create_s": created - started, "apply_s": apply_s}
    if applied.get("ok"):
        # The tests run over a tree nobody may write: what the candidate's code
        # does at import cannot plant a conftest, a test or a .pyc for later.
        _mount(paths["tree"], paths["tree"], None, MS_BIND, "")
        _mount(
            None, paths["tree"], None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV, ""
        )
        report["run"] = _run(job, paths)
    with contextlib.suppress(OSError):
        os.kill(-1, signal.SIGKILL)
    # What this workspace held: its tmpfs (the upper dir, the tests' temporary
    # files) and the supervisor itself; the runner's peak is in report["run"].
    fs = os.statvfs(job["mount"])
    report["tmpfs_used_kb"] = (fs.f_blocks - fs.f_bfree) * fs.f_frsize // 1024
    report["supervisor_rss_kb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    gone = time.monotonic()
    _destroy(job, paths)
    report["destroy_s"] = time.monotonic() - gone
    send_frame(sock, report)


def _resets(job: dict[str, Any]) -> dict[str, Any]:
    """Create and destroy the workspace ``job['count']`` times; report each one's seconds."""
    times = []
    for _ in range(int(job["count"])):
        t0 = time.perf_counter()
        paths = _create(job)
        # A write lands in the upper dir, as a grading's would.
        with open(os.path.join(paths["tree"], ".reset-probe"), "w") as f:
            f.write("x")
        _destroy(job, paths)
        times.append(time.perf_counter() - t0)
    return {"resets_s": times}


def _confine(read: list[str], write: list[str]) -> None:
    """No new privileges, Landlock (``read`` read/execute, ``write`` read-write), seccomp."""
    rules = kernel.LandlockRuleset()
    for path in read:
        rules.allow(path, kernel.FS_READ | kernel.FS_EXECUTE)
    for path in write:
        rules.allow(path, kernel.FS_READ | kernel.FS_WRITE | kernel.FS_EXECUTE)
    rules.allow("/dev/null", kernel.FS_READ_FILE | kernel.FS_WRITE_FILE)
    rules.allow("/dev/urandom", kernel.FS_READ_FILE)
    kernel.no_new_privs()
    rules.restrict_self()
    rules.close()
    kernel.seccomp_install(kernel.seccomp_filter())


def _limits(limits: dict[str, Any], cpu_s: float, memory_mb: int) -> None:
    cpu = max(1, int(cpu_s + 0.999))
    for which, value in (
        (resource.RLIMIT_CORE, (0, 0)),
        (resource.RLIMIT_CPU, (cpu, cpu + 1)),
        (resource.RLIMIT_AS, (memory_mb << 20, memory_mb << 20)),
        (resource.RLIMIT_FSIZE, (limits["max_file_bytes"],) * 2),
        (resource.RLIMIT_NOFILE, (limits["max_open_files"],) * 2),
    ):
        resource.setrlimit(which, value)


def _apply(job: dict[str, Any], paths: dict[str, str]) -> dict[str, Any]:
    """Apply the patch, restore protected files and write the tests, in a confined child."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        status = 0
        try:
            _confine([job["snapshot"]], [paths["tree"]])
            _limits(job["limits"], 20.0, 1024)
            out = _apply_here(job, paths["tree"])
        except patching.PatchError as e:
            out = {"ok": False, "kind": e.kind, "message": str(e), "path": e.path}
        except BaseException as e:
            out = {"ok": False, "kind": "ours", "message": f"{type(e).__name__}: {e}"}
            status = 1
        data = json.dumps(out).encode()
        while data:
            data = data[os.write(w, data) :]
        os._exit(status)
    os.close(w)
    raw = _read_all(r, 1 << 20)
    _, status = os.waitpid(pid, 0)
    try:
        out = json.loads(raw)
    except ValueError:
        out = {"ok": False, "kind": "ours", "message": f"the applier ended with status {status}"}
    return out


def _apply_here(job: dict[str, Any], tree: str) -> dict[str, Any]:
    limits = patching.PatchLimits(max_file_bytes=job["limits"]["max_file_bytes"])
    files = [patching.FilePatch.from_json(f) for f in job["patch"]]
    patching.apply_to_tree(tree, files, limits)
    for path in job["restore"]:
        _restore(tree, job["snapshot"], path)
    for path, text in job["tests"].items():
        _put(tree, path, text.encode("utf-8", "surrogateescape"))
    return {"ok": True}


def _place(root: int, path: str) -> tuple[int, str]:
    """Open ``path``'s directory under ``root``, replacing any link or file on the way."""
    parts = path.split("/")
    fd = os.dup(root)
    for part in parts[:-1]:
        try:
            nxt = os.open(part, _DIR_FLAGS, dir_fd=fd)
        except OSError:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(part, dir_fd=fd)
            os.mkdir(part, 0o755, dir_fd=fd)
            nxt = os.open(part, _DIR_FLAGS, dir_fd=fd)
        os.close(fd)
        fd = nxt
    return fd, parts[-1]


def _clear(dfd: int, name: str) -> None:
    try:
        st = os.stat(name, dir_fd=dfd, follow_symlinks=False)
    except FileNotFoundError:
        return
    if stat.S_ISDIR(st.st_mode):
        sub = os.open(name, _DIR_FLAGS, dir_fd=dfd)
        try:
            for entry in os.listdir(sub):
                _clear(sub, entry)
        finally:
            os.close(sub)
        os.rmdir(name, dir_fd=dfd)
    else:
        os.unlink(name, dir_fd=dfd)


def _put(tree: str, path: str, data: bytes) -> None:
    root = os.open(tree, _DIR_FLAGS)
    try:
        dfd, name = _place(root, path)
        try:
            _clear(dfd, name)
            flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
            fd = os.open(name, flags, 0o644, dir_fd=dfd)
            with os.fdopen(fd, "wb") as f:
                f.write(data)
        finally:
            os.close(dfd)
    finally:
        os.close(root)


def _restore(tree: str, snapshot: str, path: str) -> None:
    """Put the snapshot's own ``path`` back (or remove it, if the snapshot has none)."""
    original = os.path.join(snapshot, path)
    try:
        st = os.lstat(original)
    except OSError:
        st = None
    root = os.open(tree, _DIR_FLAGS)
    try:
        dfd, name = _place(root, path)
        try:
            _clear(dfd, name)
            if st is not None and stat.S_ISREG(st.st_mode):
                with open(original, "rb") as src:
                    data = src.read()
                flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
                fd = os.open(name, flags, stat.S_IMODE(st.st_mode), dir_fd=dfd)
                with os.fdopen(fd, "wb") as f:
                    f.write(data)
            elif st is not None and stat.S_ISLNK(st.st_mode):
                os.symlink(os.readlink(original), name, dir_fd=dfd)
        finally:
            os.close(dfd)
    finally:
        os.close(root)


def _read_all(fd: int, cap: int) -> bytes:
    out = bytearray()
    while True:
        chunk = os.read(fd, 1 << 16)
        if not chunk:
            break
        if len(out) < cap:
            out += chunk[: cap - len(out)]
    os.close(fd)
    return bytes(out)


def _run(job: dict[str, Any], paths: dict[str, str]) -> dict[str, Any]:
    """Run the tests as the runner; watch its time; return what was seen and its raw lines."""
    limits = job["limits"]
    tmp = paths["tmp"]
    run_as = job.get("run_as") if os.getuid() == 0 else None
    if run_as is not None:
        os.chown(tmp, run_as[0], run_as[1])
    os.chmod(tmp, 0o700)
    cfg = {
        "reporter": job["reporter"],
        "python_paths": [
            os.path.join(paths["tree"], p) if p else paths["tree"] for p in job["python_paths"]
        ],
        "env_paths": job["env_paths"],
        "isolation": job["isolation"],
        "args": [
            *job["args"],
            "--rootdir",
            paths["tree"],
            "--basetemp",
            os.path.join(tmp, "pytest"),
        ],
    }
    cfg_r, cfg_w = os.pipe()
    res_r, res_w = os.pipe()
    out_r, out_w = os.pipe()
    read_only = [*job["read_only"], paths["tree"]]
    started = time.monotonic()
    pid = os.fork()
    if pid == 0:
        try:
            os.setsid()
            os.dup2(res_w, 3)
            os.dup2(out_w, 1)
            os.dup2(out_w, 2)
            null = os.open("/dev/null", os.O_RDONLY)
            os.dup2(null, 0)
            os.dup2(cfg_r, 4)
            os.closerange(5, 1 << 16)
            os.set_inheritable(3, True)
            os.set_inheritable(4, True)
            os.chdir(paths["tree"])
            rules = (read_only, [tmp])
            if run_as is not None:
                os.setgroups([])
                os.setresgid(run_as[1], run_as[1], run_as[1])
                os.setresuid(run_as[0], run_as[0], run_as[0])
            _confine(*rules)
            _limits(limits, float(limits["cpu_s"]), int(limits["memory_mb"]))
            if run_as is not None:
                nproc = int(limits["max_processes"])
                resource.setrlimit(resource.RLIMIT_NPROC, (nproc, nproc))
            env = {
                "PATH": "/usr/bin:/bin",
                "HOME": tmp,
                "TMPDIR": tmp,
                "LANG": "C.UTF-8",
                "TZ": "UTC",
                "PYTHONHASHSEED": "0",
                "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",
            }
            argv = [
                job["python"],
                "-I",
                "-X",
                f"pycache_prefix={os.path.join(tmp, 'pycache')}",
                "-c",
                _RUNNER_BOOT,
                "4",
            ]
            os.execve(job["python"], argv, env)
        finally:
            os._exit(127)
    for fd in (cfg_r, res_w, out_w):
        os.close(fd)
    data = json.dumps(cfg).encode()
    with contextlib.suppress(BrokenPipeError):
        while data:
            data = data[os.write(cfg_w, data) :]
    os.close(cfg_w)
    return _watch(pid, res_r, out_r, started, limits)


def _ticks() -> tuple[float, float]:
    """CPU seconds and run-queue wait of every process in this namespace but us (PID 1)."""
    hz = os.sysconf("SC_CLK_TCK")
    cpu = wait = 0.0
    for name in os.listdir("/proc"):
        if not name.isdigit() or name == "1":
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                fields = f.read().rsplit(b")", 1)[1].split()
            with open(f"/proc/{name}/schedstat", "rb") as f:
                sched = f.read().split()
        except OSError:
            continue
        # utime, stime, cutime, cstime: fields 14-17 (11-14 after the name).
        cpu += sum(int(x) for x in fields[11:15]) / hz
        wait += int(sched[1]) / 1e9
    return cpu, wait


def _watch(
    pid: int, res_r: int, out_r: int, started: float, limits: dict[str, Any]
) -> dict[str, Any]:
    results = bytearray()
    output = bytearray()
    open_fds = {res_r: results, out_r: output}
    cap = int(limits["max_result_bytes"])
    ended_by = "exit"
    cpu = wait = 0.0
    next_tick = 0.0
    status: int | None = None
    usage = None
    while True:
        done, st, usage = os.wait4(pid, os.WNOHANG)
        if done:
            status = st
            break
        ready, _, _ = select.select(list(open_fds), [], [], _POLL_S) if open_fds else ([], [], [])
        for fd in ready:
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                del open_fds[fd]
                os.close(fd)
                continue
            buf = open_fds[fd]
            if fd == res_r and len(buf) + len(chunk) > cap:
                ended_by = "result_limit"
            buf += chunk
            if fd == out_r and len(buf) > 4 * _OUTPUT_TAIL:
                del buf[: len(buf) - _OUTPUT_TAIL]
        if not open_fds:
            time.sleep(_POLL_S)
        if time.monotonic() < next_tick:
            continue
        next_tick = time.monotonic() + _POLL_S
        now_cpu, now_wait = _ticks()
        cpu = max(cpu, now_cpu)
        wait = max(wait, now_wait)
        own_s = time.monotonic() - started - wait
        if ended_by == "exit":
            if cpu > float(limits["cpu_s"]) or own_s > float(limits["wall_s"]):
                ended_by = "deadline"
            elif time.monotonic() - started > float(limits["backstop_s"]):
                ended_by = "starved"
        if ended_by != "exit":
            with contextlib.suppress(OSError):
                os.kill(-1, signal.SIGKILL)
            _, status, usage = os.wait4(pid, 0)
            break
    wall = time.monotonic() - started
    with contextlib.suppress(OSError):
        os.kill(-1, signal.SIGKILL)
    for fd, buf in list(open_fds.items()):
        while True:
            ready, _, _ = select.select([fd], [], [], 0.2)
            if not ready:
                break
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                break
            if fd != res_r or len(buf) + len(chunk) <= cap:
                buf += chunk
        os.close(fd)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    exit_code = os.waitstatus_to_exitcode(status) if status is not None else None
    return {
        "exit_code": exit_code if exit_code is not None and exit_code >= 0 else None,
        "signal": -exit_code if exit_code is not None and exit_code < 0 else None,
        "ended_by": ended_by,
        "wall_s": wall,
        "wait_s": wait,
        "cpu_s": max(cpu, children.ru_utime + children.ru_stime),
        "maxrss_kb": usage.ru_maxrss if usage is not None else 0,
        "results": results.decode("utf-8", "replace"),
        "output": output[-_OUTPUT_TAIL:].decode("utf-8", "replace"),
    }


if __name__ == "__main__":
    main()
