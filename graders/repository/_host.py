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
import signal
import socket
import stat
import sys
import time
from typing import Any

from arbiter.graders.repository import _runner
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

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


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
    # POSIX semaphores and shared memory (multiprocessing's locks) live in
    # /dev/shm: this workspace's own, never the host's, which every grading shares.
    shm_mb = int(job["limits"].get("shm_mb", 64))
    _mount("tmpfs", "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV, f"size={shm_mb}m,mode=1777")
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
        report["run"] = _runner.run(job, paths)
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


def _apply(job: dict[str, Any], paths: dict[str, str]) -> dict[str, Any]:
    """Apply the patch, restore protected files and write the tests, in a confined child."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        status = 0
        try:
            _runner.confine([job["snapshot"]], [paths["tree"]])
            _runner.set_limits(job["limits"], 20.0, 1024)
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
    raw = _runner.read_all(r, 1 << 20)
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


if __name__ == "__main__":
    main()
