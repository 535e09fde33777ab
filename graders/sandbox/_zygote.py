"""The confiner: applies the confinement layers once, then becomes the pristine template.

Started by :mod:`arbiter.graders.sandbox.pool` as ``python -s -c BOOT FD`` with an empty
environment, where the boot code enters ``arbiter``, ``arbiter.graders`` and
``arbiter.graders.sandbox`` as bare packages (their ``__init__`` never runs here)
and calls :func:`main` on the control socket ``FD``. It never sees a task's tests,
a candidate's code or any secret of the trusted process. In order:

1. unshare PID/NET/IPC/UTS/mount namespaces (plus a user namespace when not
   root) and fork, so that what follows is PID 1 of its PID namespace: the
   kernel drops signals from inside the namespace that PID 1 has no handler
   for, and ``kill(-1)`` from PID 1 sweeps every process a run left behind;
2. mount a tmpfs on the slot's ``runs/`` with bounded size and inodes (a run
   cannot fill the host's disk, nor build a tree deeper than the inodes allow);
3. no_new_privs, Landlock (the interpreter and the system's compilers and
   runtimes read-only, ``runs/`` read-write and executable,
   nothing else — not even the slot directory itself, so no run can swap
   ``runs/`` for a symlink — no TCP, and with ABI 6 no signal or abstract
   socket out of the domain), seccomp;
4. replace itself (``execve``) with a fresh interpreter running
   :mod:`arbiter.graders.sandbox._template`, whose sources it hands over on a memfd.
   Landlock, seccomp and no_new_privs hold across ``execve``; the template
   drops to the slot's uid itself (``os.setresuid``) after its imports.

Why the ``execve``: these layers need system calls Python has no binding for,
hence ``ctypes``, and a run forked from a process that loaded ``ctypes`` could
read any memory of its own through it without importing anything. The
template that every run is forked from never loads it.

Each layer that fails is reported as unavailable in the ready message, never
skipped silently.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import sys
from pathlib import Path
from typing import Any

from arbiter.graders.sandbox import _linux as kernel
from arbiter.graders.sandbox._frames import CONTROL_MAX_BYTES, recv_frame

#: The sandbox's modules the template runs, in import order; all stdlib-only.
TEMPLATE_MODULES = ("_codec", "_frames", "_remote", "_template")
#: The tmpfs under runs/: bytes and inodes for everything one run may leave.
RUN_DIR_BYTES = 64 << 20
RUN_DIR_INODES = 4096
#: What the template's interpreter runs: the sandbox's modules from the boot memfd.
_TEMPLATE_BOOT = """
import json, os, sys, types
fd = int(sys.argv[2])
raw = b""
while True:
    chunk = os.read(fd, 1 << 20)
    if not chunk:
        break
    raw += chunk
os.close(fd)
boot = json.loads(raw)
del raw
for name in ("arbiter", "arbiter.graders", "arbiter.graders.sandbox"):
    package = types.ModuleType(name)
    package.__path__ = []
    sys.modules[name] = package
for short, source in boot.pop("modules"):
    name = "arbiter.graders.sandbox." + short
    module = types.ModuleType(name)
    module.__file__ = "<sandbox " + short + ">"
    sys.modules[name] = module
    setattr(sys.modules["arbiter.graders.sandbox"], short, module)
    exec(compile(source, module.__file__, "exec"), module.__dict__)
    del source
sys.modules["arbiter.graders.sandbox._template"].main(
    boot["config"], boot["layers"], int(sys.argv[1])
)
"""

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


def _enter_namespaces(layers: dict[str, str]) -> bool:
    """Unshare namespaces; fork so that what follows is PID 1 of the new one."""
    flags = (
        kernel.CLONE_NEWPID
        | kernel.CLONE_NEWNET
        | kernel.CLONE_NEWIPC
        | kernel.CLONE_NEWUTS
        | kernel.CLONE_NEWNS
    )
    uid, gid = os.getuid(), os.getgid()
    if uid != 0:
        # An ordinary user may create the others only inside a user namespace it owns.
        flags |= kernel.CLONE_NEWUSER
    if not _try(layers, "namespaces", lambda: kernel.unshare(flags)):
        return False
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
    return True


def _limit_run_dir(config: dict[str, Any], layers: dict[str, str], namespaced: bool) -> None:
    """Mount the bounded tmpfs every run works in (needs the mount namespace)."""
    if not namespaced:
        layers["run_dir_limits"] = "unavailable: no mount namespace"
        return
    runs = os.path.join(config["scratch"], "runs")
    owner = f",uid={config['uid']},gid={config['gid']}" if os.getuid() == 0 else ""
    options = f"size={RUN_DIR_BYTES},nr_inodes={RUN_DIR_INODES},mode=0700{owner}"
    _try(layers, "run_dir_limits", lambda: kernel.mount_tmpfs(runs, options))


def _confine(config: dict[str, Any], layers: dict[str, str]) -> None:
    """Apply no_new_privs, Landlock and seccomp, in that order."""
    # The ruleset is built while every path is still reachable: its rules hold
    # O_PATH descriptors.
    ruleset: kernel.LandlockRuleset | None = None

    def build() -> None:
        nonlocal ruleset
        rules = kernel.LandlockRuleset()
        for path in config["read_only"]:
            rules.allow(path, kernel.FS_READ | kernel.FS_EXECUTE)
        rules.allow("/dev/null", kernel.FS_READ_FILE | kernel.FS_WRITE_FILE)
        for path in ("/dev/urandom", "/dev/random"):
            rules.allow(path, kernel.FS_READ_FILE)
        runs = os.path.join(config["scratch"], "runs")
        rules.allow(runs, kernel.FS_READ | kernel.FS_WRITE | kernel.FS_EXECUTE)
        layers["landlock_abi"] = str(rules.abi)
        ruleset = rules

    built = _try(layers, "landlock", build)
    _try(layers, "no_new_privs", kernel.no_new_privs)
    if built and ruleset is not None:

        def restrict() -> None:
            assert ruleset is not None
            ruleset.restrict_self()
            ruleset.close()

        if _try(layers, "landlock", restrict):
            scoped = ruleset.abi >= 6
            layers["signal_scoping"] = "active" if scoped else "unavailable: Landlock ABI < 6"
        else:
            layers["signal_scoping"] = "unavailable: no Landlock domain"
    else:
        layers["signal_scoping"] = "unavailable: no Landlock domain"
    _try(layers, "seccomp", lambda: kernel.seccomp_install(kernel.seccomp_filter()))


def _template_sources() -> list[list[str]]:
    """Read the template's modules (before Landlock: the project is not readable after)."""
    here = Path(__file__).resolve().parent
    return [[m, (here / f"{m}.py").read_text(encoding="utf-8")] for m in TEMPLATE_MODULES]


def _boot_descriptor(
    modules: list[list[str]], config: dict[str, Any], layers: dict[str, str]
) -> int:
    """Write what the template needs (its modules' sources, config, layers) to a memfd."""
    boot = json.dumps({"modules": modules, "config": config, "layers": layers}).encode()
    fd = os.memfd_create("arbiter-template-boot", 0)  # inherited by the template
    os.write(fd, boot)
    os.lseek(fd, 0, os.SEEK_SET)
    return fd


def main() -> None:
    """Confine this process on the control socket ``sys.argv[1]``, then exec the template."""
    kernel.set_pdeathsig(signal.SIGKILL)
    ctrl_fd = int(sys.argv[1])
    ctrl = socket.socket(fileno=ctrl_fd)
    config = recv_frame(ctrl, max_bytes=CONTROL_MAX_BYTES)
    ctrl.detach()
    _DISABLED.update(config.get("disable_layers", ()))
    layers: dict[str, str] = {}
    namespaced = _enter_namespaces(layers)
    _limit_run_dir(config, layers, namespaced)
    modules = _template_sources()
    _confine(config, layers)
    boot_fd = _boot_descriptor(modules, config, layers)
    os.set_inheritable(ctrl_fd, True)
    environment = {"LANG": "C.UTF-8", "PATH": "/usr/bin:/bin"}
    argv = [sys.executable, "-I", "-S", "-c", _TEMPLATE_BOOT, str(ctrl_fd), str(boot_fd)]
    os.execve(sys.executable, argv, environment)


if __name__ == "__main__":
    main()
