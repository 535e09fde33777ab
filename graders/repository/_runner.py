"""The runner of a repository workspace: the tests, confined, and the supervisor's watch over them.

Imported by :mod:`arbiter.graders.repository._host` (in the supervisor, PID 1
of a workspace's namespaces). :func:`run` forks the runner, which drops to
the sandbox uid, enters Landlock and seccomp with its rlimits, and
``execve``s a fresh ``python -I`` that loads the reporter from its file and
runs pytest; :func:`watch` reads the reporter's lines and the runner's output,
measures the CPU time and run-queue wait of every process in the namespace,
and ends the run at its limits. Standard library only.
"""

from __future__ import annotations

import contextlib
import json
import os
import resource
import select
import signal
import time
from typing import Any

from arbiter.graders.sandbox import _linux as kernel

__all__ = ["confine", "read_all", "run", "set_limits"]

#: How often the supervisor reads the runner's CPU time and wait.
_POLL_S = 0.05
#: The most of the runner's output (never parsed, kept for a reviewer) sent back.
_OUTPUT_TAIL = 8192
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


def confine(read: list[str], write: list[str]) -> None:
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


def set_limits(limits: dict[str, Any], cpu_s: float, memory_mb: int) -> None:
    cpu = max(1, int(cpu_s + 0.999))
    for which, value in (
        (resource.RLIMIT_CORE, (0, 0)),
        (resource.RLIMIT_CPU, (cpu, cpu + 1)),
        (resource.RLIMIT_AS, (memory_mb << 20, memory_mb << 20)),
        (resource.RLIMIT_FSIZE, (limits["max_file_bytes"],) * 2),
        (resource.RLIMIT_NOFILE, (limits["max_open_files"],) * 2),
    ):
        resource.setrlimit(which, value)


def read_all(fd: int, cap: int) -> bytes:
    out = bytearray()
    while True:
        chunk = os.read(fd, 1 << 16)
        if not chunk:
            break
        if len(out) < cap:
            out += chunk[: cap - len(out)]
    os.close(fd)
    return bytes(out)


def run(job: dict[str, Any], paths: dict[str, str]) -> dict[str, Any]:
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
            rules = (read_only, [tmp, "/dev/shm"])
            if run_as is not None:
                os.setgroups([])
                os.setresgid(run_as[1], run_as[1], run_as[1])
                os.setresuid(run_as[0], run_as[0], run_as[0])
            confine(*rules)
            set_limits(limits, float(limits["cpu_s"]), int(limits["memory_mb"]))
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
            # -B: no bytecode is written. The interpreter's and pytest's own caches
            # are read where they are (a prefix of our own would recompile all of
            # them on every run); the tree has none to read: the snapshot keeps no
            # bytecode, a patch may not add any (protected, and binary is
            # refused), and the tree is read-only while the tests run.
            argv = [
                job["python"],
                "-I",
                "-B",
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
