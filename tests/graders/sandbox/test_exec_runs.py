"""Built programs in the sandbox: a compile confined like a run, its artifact run many times.

These drive the pool's exec runs directly with a hand-written C program and
the system's gcc, below any language module: what a compiled candidate gets
from the sandbox is the same confinement as a Python run.
"""

from __future__ import annotations

import base64
import shutil
import signal
import socket
from typing import Any

import pytest

from arbiter.graders.languages import wire
from arbiter.graders.sandbox import Limits, SandboxPool
from tests.graders.sandbox.conftest import require
from tests.strictness import unavailable

BUILD = Limits(timeout_s=30, memory_mb=2048, max_processes=32, max_output_bytes=64 << 20)
RUN = Limits(timeout_s=2, memory_mb=256)


def _gcc() -> str:
    found = shutil.which("gcc", path="/usr/bin:/bin")
    if found is None:
        unavailable("gcc is not installed (make tools installs Debian's toolchains)")
    return found


def _files(**sources: str) -> list[list[Any]]:
    return [[n, 0o600, base64.b64encode(t.encode()).decode()] for n, t in sources.items()]


def build(pool: SandboxPool, source: str) -> list[list[Any]]:
    spec = {
        "files": _files(**{"m.c": source}),
        "steps": [[_gcc(), "-O1", "-o", "m", "m.c"]],
        "env": {"PATH": "/usr/bin:/bin", "TMPDIR": "{out}"},
        "collect": ["m"],
        "collect_cap": 64 << 20,
    }
    report, sent = pool.build_run(spec, BUILD)
    assert sent is not None, report.stderr
    assert sent["steps"] == [[0, None]], report.stderr.decode()
    return list(sent["files"])


ADD = """
#include <stdio.h>
int main(void) { long a, b; if (scanf("%ld %ld", &a, &b) != 2) return 3;
  printf("%ld\\n", a + b); return 0; }
"""


def test_one_compile_serves_many_runs(pool: SandboxPool) -> None:
    artifact = build(pool, ADD)
    assert [f[0] for f in artifact] == ["m"]
    spec = {"files": artifact, "argv": ["{out}/m"], "env": {}}
    for i in range(5):
        report = pool.program_run(spec, f"{i} 40\n".encode(), RUN)
        assert report.exit_code == 0, report.stderr
        assert report.stdout == f"{i + 40}\n".encode()


def test_a_compile_error_is_the_compilers_own_diagnostics(pool: SandboxPool) -> None:
    spec = {
        "files": _files(**{"m.c": "int main(void) { return undefined_name; }\n"}),
        "steps": [[_gcc(), "-o", "m", "m.c"]],
        "env": {"PATH": "/usr/bin:/bin", "TMPDIR": "{out}"},
        "collect": ["m"],
        "collect_cap": 1 << 20,
    }
    report, sent = pool.build_run(spec, BUILD)
    assert sent is not None
    assert sent["steps"][0][0] not in (0, None)
    assert sent["files"] == []
    assert b"undefined_name" in report.stderr


def test_the_compiler_reads_no_secret(pool: SandboxPool, layers: dict[str, str]) -> None:
    """`#include "/etc/shadow"` puts a file in the diagnostics: Landlock keeps it unreadable."""
    require(layers, "landlock")
    spec = {
        "files": _files(**{"m.c": '#include "/etc/shadow"\nint main(void) { return 0; }\n'}),
        "steps": [[_gcc(), "-o", "m", "m.c"]],
        "env": {"PATH": "/usr/bin:/bin", "TMPDIR": "{out}"},
        "collect": ["m"],
        "collect_cap": 1 << 20,
    }
    report, sent = pool.build_run(spec, BUILD)
    assert sent is not None and sent["steps"][0][0] != 0
    assert b"root:" not in report.stderr
    assert b"Permission denied" in report.stderr or b"No such file" in report.stderr


def test_a_built_program_meets_the_runs_limits(pool: SandboxPool) -> None:
    loop = build(pool, "int main(void) { for (;;) {} }\n")
    report = pool.program_run({"files": loop, "argv": ["{out}/m"], "env": {}}, b"", RUN)
    assert report.timed_out
    flood = build(pool, '#include <stdio.h>\nint main(void) { for (;;) puts("xxxxxxxx"); }\n')
    limits = Limits(timeout_s=5, max_output_bytes=1 << 16)
    report = pool.program_run({"files": flood, "argv": ["{out}/m"], "env": {}}, b"", limits)
    assert report.output_limited
    assert report.stdout_size <= 1 << 16


def test_a_built_program_cannot_open_a_socket(pool: SandboxPool, layers: dict[str, str]) -> None:
    require(layers, "seccomp")
    net = build(
        pool,
        "#include <sys/socket.h>\nint main(void) { return socket(AF_INET, SOCK_STREAM, 0) < 0; }\n",
    )
    report = pool.program_run({"files": net, "argv": ["{out}/m"], "env": {}}, b"", RUN)
    assert report.signal == signal.SIGSYS


ECHO = r"""
#include <stdio.h>
#include <unistd.h>
int main(void) {
  char buf[4096]; ssize_t n;
  fprintf(stderr, "serving\n");
  while ((n = read(3, buf, sizeof buf)) > 0) { if (write(3, buf, n) != n) return 1; }
  return 0;
}
"""


def test_a_bridged_program_answers_on_descriptor_3(pool: SandboxPool) -> None:
    echo = build(pool, ECHO)
    with pool.bridge_run({"files": echo, "argv": ["{out}/m"], "env": {}}, RUN) as run:
        run.channel.sendall(wire.request("f", [1, "two"]))
        run.channel.settimeout(5)
        reader = run.channel.makefile("rb")
        payload = wire.read_frame(reader.read)
        assert payload is not None
        assert wire.decode(payload) == ["f", [1, "two"]]
        reader.close()
    assert run.report is not None
    assert b"serving" in run.report.stderr


def test_a_program_finds_nothing_of_the_trusted_side_on_other_descriptors(
    pool: SandboxPool,
) -> None:
    """Only 0-2 (and 3 when bridged) are open in a built program."""
    probe = build(
        pool,
        "#include <fcntl.h>\n#include <stdio.h>\nint main(void) { int open_fds = 0;\n"
        "for (int fd = 0; fd < 1024; fd++) if (fcntl(fd, F_GETFD) >= 0) open_fds++;\n"
        'printf("%d\\n", open_fds); return 0; }\n',
    )
    report = pool.program_run({"files": probe, "argv": ["{out}/m"], "env": {}}, b"", RUN)
    assert report.stdout == b"3\n"
    with pool.bridge_run({"files": probe, "argv": ["{out}/m"], "env": {}}, RUN) as run:
        run.channel.settimeout(5)
        with pytest.raises((ConnectionError, OSError, TimeoutError)):
            while run.channel.recv(1):
                pass
            raise ConnectionError("closed")
    assert run.report is not None and run.report.stdout == b"4\n"
    assert isinstance(run.channel, socket.socket)
