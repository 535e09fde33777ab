"""The language tests' unconfined runs: a candidate and its harness joined, and the naive harness.

These run the builds as :mod:`arbiter.graders.languages.local` runs the trusted
harness, without the sandbox, so a build's own behaviour is tested apart from
the confinement (``test_verdict.py`` runs the same attacks sandboxed).
"""

from __future__ import annotations

import fcntl
import os
import socket
import subprocess

from arbiter.graders.languages import local
from arbiter.graders.languages.base import Build, Language, ProgramParts, Toolchain


def high_fd(fd: int) -> int:
    """A duplicate of ``fd`` numbered 10 or more (never 3, which the child's bridge becomes)."""
    return fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10)


def start_on(
    build: Build,
    out: str,
    toolchain: Toolchain,
    sock: socket.socket,
    cache: str | None = None,
    private: str = "",
) -> subprocess.Popen[bytes]:
    """Start ``build`` (built in ``out``) with ``sock`` as its descriptor 3."""
    fd = high_fd(sock.fileno())
    try:
        return local.start(build, out, toolchain, cache or out, fd, private=private)
    finally:
        os.close(fd)


def _tail(text: bytes, keep: int) -> str:
    told = text.decode(errors="replace")
    return told if len(told) <= keep else told[: keep // 2] + " ... " + told[-keep // 2 :]


def bridged(
    lang: Language,
    parts: ProgramParts,
    toolchain: Toolchain,
    root: str,
    *,
    cache: str | None = None,
    private: str = "",
    timeout_s: float = 60,
) -> tuple[bool, str]:
    """Compile and run the candidate and the harness joined on descriptor 3: (passed, why).

    ``cache`` is the builds' ``{cache}`` (each build's own directory when None);
    ``private`` is the harness's ``{private}``. The harness must fail on a
    compile error of its own; a candidate's compile error is a failed task.
    """
    cdir, hdir = os.path.join(root, "candidate"), os.path.join(root, "harness")
    os.makedirs(cdir)
    os.makedirs(hdir)
    cb, hb = lang.candidate(parts), lang.harness(parts)
    done = local.compile_build(hb, hdir, toolchain, cache or hdir, private=private)
    assert done.ok, done.diagnostics
    done = local.compile_build(cb, cdir, toolchain, cache or cdir)
    if not done.ok:
        return False, "candidate's compile: " + done.diagnostics
    ours, theirs = socket.socketpair()
    try:
        cp = start_on(cb, cdir, toolchain, ours, cache)
        hp = start_on(hb, hdir, toolchain, theirs, cache, private)
    finally:
        ours.close()
        theirs.close()
    try:
        hout, herr = hp.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:  # a candidate that never answers: the call fails
        hp.kill()
        hp.communicate()
        return False, f"the harness ran past {timeout_s} s"
    finally:
        cp.kill()
        _, cerr = cp.communicate()
    passed, total = lang.harness_passed(hp.returncode, hout.decode(), herr.decode())
    why = (
        f"harness exit {hp.returncode}: {_tail(hout, 600)}{_tail(herr, 600)}"
        f" | candidate: {_tail(cerr, 8000)}"
    )
    return passed == total > 0, why


def naive(
    lang: Language,
    parts: ProgramParts,
    toolchain: Toolchain,
    root: str,
    *,
    cache: str | None = None,
    timeout_s: float = 60,
) -> tuple[bool, str]:
    """The peers' harness: the candidate and the tests as one program; passed = exit status 0."""
    build = lang.naive(parts)
    os.makedirs(root, exist_ok=True)
    done = local.compile_build(build, root, toolchain, cache or root)
    if not done.ok:
        return False, done.diagnostics
    proc = local.start(build, root, toolchain, cache or root, None)
    out, err = proc.communicate(timeout=timeout_s)
    return proc.returncode == 0, f"exit {proc.returncode}: {_tail(out, 300)}{_tail(err, 500)}"
