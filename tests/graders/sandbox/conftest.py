"""A real sandbox pool shared by the sandbox tests, and host-side witnesses for the attacks."""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import pytest

from arbiter.graders.sandbox import LAYERS, PoolConfig, SandboxPool, require_layers
from arbiter.graders.types import GradeResult, IOCase, Sample, TaskSpec
from arbiter.graders.unit_tests import UnitTestsConfig, UnitTestsGrader
from tests.strictness import unavailable

#: ../shared/data seen from the repository root.
SHARED_DATA = Path(__file__).resolve().parents[3].parent / "shared" / "data"


@pytest.fixture(scope="session")
def pool() -> Iterator[SandboxPool]:
    pool = SandboxPool(PoolConfig(slots=2))
    pool.start()
    yield pool
    pool.close()


@pytest.fixture(scope="session")
def layers(pool: SandboxPool) -> dict[str, str]:
    measured = pool.layers()
    # CI sets this to "all": there a host short of a layer fails every sandbox test
    # at once instead of skipping the attacks that layer stops.
    required = os.environ.get("ARBITER_REQUIRE_SANDBOX_LAYERS", "")
    wanted = {n.strip() for n in required.split(",") if n.strip()}
    if "all" in wanted:
        wanted = (wanted - {"all"}) | set(LAYERS)
    require_layers(measured, wanted)
    return measured


@pytest.fixture(scope="session")
def grader(pool: SandboxPool) -> UnitTestsGrader:
    return UnitTestsGrader(pool)


def require(layers: dict[str, str], *names: str) -> None:
    """Skip (fail in a strict run), saying why, when a layer the attack needs is not active."""
    for name in names:
        state = layers.get(name, "unknown")
        if not state.startswith("active"):
            unavailable(f"sandbox layer {name} is not active on this host: {state}")


def require_any(layers: dict[str, str], *names: str) -> None:
    """Skip (fail in a strict run) unless one of the layers that stop the attack is active."""
    if not any(layers.get(n, "").startswith("active") for n in names):
        states = "; ".join(f"{n}: {layers.get(n, 'unknown')}" for n in names)
        unavailable(f"none of the sandbox layers that stop this attack is active: {states}")


def function_task(tests: str | list[str], entry_point: str | None = "f") -> TaskSpec:
    return TaskSpec(kind="python_function", tests=tests, entry_point=entry_point)


def stdio_task(
    *cases: tuple[str, str], comparison: Literal["exact", "whitespace", "float"] = "whitespace"
) -> TaskSpec:
    return TaskSpec(
        kind="stdin_stdout",
        tests=[IOCase(input=i, output=o) for i, o in cases],
        comparison=comparison,
    )


def grade(grader: UnitTestsGrader, code: str, task: TaskSpec, **config: object) -> GradeResult:
    sample = Sample(id="attack", response=f"```python\n{code}\n```", task=task)
    # Candidate faults come back typed (a timeout, an output flood), not read as 0:
    # these tests are about which fault the sandbox saw.
    settings = {"timeout_s": 3.0, "fail_as_zero": False, **config}
    return grader.grade_sync(sample, UnitTestsConfig.model_validate(settings))


def not_a_pass(result: GradeResult) -> bool:
    """An attack fails when the item did not score full marks (or was not scored at all)."""
    return result.score is None or result.score < 1.0


def sandbox_processes(pool: SandboxPool) -> list[int]:
    """Host pids running under the pool's sandbox uids (runs and what they left).

    Only this test process's descendants count, and anything orphaned to the
    host's init (an escape): another pool elsewhere on the host (an earlier
    test's, a running service's) uses the same uids and is not a stray of ours.
    """
    uids = {str(pool.uids.base + i) for i in range(pool.capacity)}
    owner: dict[int, str] = {}
    parent: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            status = Path(f"/proc/{entry}/status").read_text()
        except OSError:
            continue
        for line in status.splitlines():
            if line.startswith("Uid:"):
                owner[int(entry)] = line.split()[1]
            elif line.startswith("PPid:"):
                parent[int(entry)] = int(line.split()[1])

    def ours(pid: int) -> bool:
        seen = set()
        while pid > 1 and pid not in seen:
            seen.add(pid)
            if pid == os.getpid():
                return True
            pid = parent.get(pid, 0)
        return False

    return [
        pid for pid, uid in owner.items() if uid in uids and (ours(pid) or parent.get(pid) == 1)
    ]


@pytest.fixture
def no_strays(pool: SandboxPool) -> Iterator[None]:
    """Assert that an attack leaves no process behind.

    Run as root, the templates keep their uid and each run drops to its slot's:
    once a run is over, no process of a sandbox uid may be left.
    """
    yield
    if os.getuid() != 0:
        return  # without the uid drop the sandbox's processes are not told apart by uid
    assert sandbox_processes(pool) == []


@dataclass
class Canary:
    """A host directory the sandbox must neither read nor write."""

    root: Path
    secret: str
    secret_file: Path
    before: set[str] = field(default_factory=set)

    def untouched(self) -> bool:
        return (
            self.secret_file.read_text() == self.secret
            and {p.name for p in self.root.iterdir()} == self.before
        )


@contextlib.contextmanager
def host_canary() -> Iterator[Canary]:
    """A fresh canary directory, removed afterwards (a control's own target)."""
    # World-readable and world-writable, right under /tmp: only the sandbox's own
    # layers (Landlock), not file permissions, stand in the attack's way.
    root = Path(tempfile.mkdtemp(prefix="arbiter-canary-", dir="/tmp"))
    root.chmod(0o777)
    secret = secrets.token_hex(16)
    secret_file = root / "secret.txt"
    secret_file.write_text(secret)
    secret_file.chmod(0o666)
    try:
        yield Canary(root, secret, secret_file, {"secret.txt"})
    finally:
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def canary() -> Iterator[Canary]:
    with host_canary() as c:
        yield c
        assert c.untouched(), "the host canary directory was changed"


@dataclass
class Listener:
    """TCP and UDP sockets on 127.0.0.1 that count whatever reaches them."""

    tcp_port: int
    udp_port: int
    connections: int = 0
    datagrams: int = 0


@contextlib.contextmanager
def host_listener() -> Iterator[Listener]:
    """Listening sockets on the host that count what reaches them (until closed)."""
    tcp = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    tcp.bind(("127.0.0.1", 0))
    tcp.listen()
    tcp.settimeout(0.1)
    udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    udp.bind(("127.0.0.1", 0))
    udp.settimeout(0.1)
    seen = Listener(tcp.getsockname()[1], udp.getsockname()[1])
    stop = threading.Event()

    def watch() -> None:
        while not stop.is_set():
            try:
                conn, _ = tcp.accept()
                seen.connections += 1
                conn.close()
            except OSError:
                pass
            try:
                udp.recvfrom(4096)
                seen.datagrams += 1
            except OSError:
                pass

    thread = threading.Thread(target=watch, daemon=True)
    thread.start()
    try:
        yield seen
    finally:
        stop.set()
        thread.join()
        # What arrived after the watcher's last look is queued: count it too.
        with contextlib.suppress(OSError):
            tcp.accept()[0].close()
            seen.connections += 1
        with contextlib.suppress(OSError):
            udp.recvfrom(4096)
            seen.datagrams += 1
        tcp.close()
        udp.close()


@pytest.fixture
def listener() -> Iterator[Listener]:
    with host_listener() as seen:
        yield seen
        # Whatever was in flight has been accepted or received once the watcher stops.
    assert seen.connections == 0 and seen.datagrams == 0, "the host listener was reached"


# --- controls: each attack, run without the protection that stops it, must succeed


#: Returns a grader whose pool leaves the named layers out.
Unconfined = Callable[..., UnitTestsGrader]


@pytest.fixture(scope="session")
def unconfined() -> Iterator[Unconfined]:
    """Graders on pools that leave the named layers out: the layer attacks' controls."""
    pools: dict[tuple[str, ...], SandboxPool] = {}

    def make(*disabled: str) -> UnitTestsGrader:
        key = tuple(sorted(disabled))
        if key not in pools:
            pool = SandboxPool(PoolConfig(slots=1, disable_layers=key))
            pool.start()
            left_out = [n for n in key if pool.layers().get(n, "").startswith("active")]
            assert not left_out, f"layers still active: {left_out}"
            pools[key] = pool
        return UnitTestsGrader(pools[key])

    yield make
    for pool in pools.values():
        pool.close()


def naive_pass(
    code: str, task: TaskSpec, root: Path, *, passing_status: tuple[int, ...] = (0,)
) -> bool:
    """Grade the way a naive harness would: candidate and tests in one process, no sandbox.

    The verdict is the exit status (``passing_status``: 0; for a harness that
    reads "nothing failed" as a pass, pytest's 5 too); tests and candidate share a
    writable directory, and a suite is imported once before the run (an import
    check) so what the candidate plants on import is in place when pytest starts.
    This is the control for attacks on the verdict: each must pass here.
    """
    work = root / "work"
    tests = root / "tests"
    work.mkdir(parents=True, exist_ok=True)
    tests.mkdir(exist_ok=True)
    env = {**os.environ, "PYTHONPATH": str(work), "PYTHONDONTWRITEBYTECODE": "1"}
    env.pop("PYTEST_ADDOPTS", None)

    def run(argv: list[str], stdin: str = "") -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            argv, cwd=work, env=env, input=stdin, capture_output=True, text=True, timeout=60
        )

    if task.kind == "pytest":
        (work / f"{task.entry_point or 'solution'}.py").write_text(code)
        (tests / "test_solution.py").write_text(str(task.tests))
        run([sys.executable, "-c", f"import {task.entry_point or 'solution'}"])
        done = run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(tests)])
        ok = done.returncode in passing_status
    elif task.kind == "stdin_stdout":
        (work / "solution.py").write_text(code)
        cases = task.tests if isinstance(task.tests, list) else []
        ok = all(
            isinstance(case, IOCase)
            and run([sys.executable, "solution.py"], case.input).stdout.split()
            == case.output.split()
            for case in cases
        )
    else:
        tests_text = task.tests if isinstance(task.tests, str) else "\n".join(task.tests)
        call = f"\ncheck({task.entry_point})\n" if "def check(" in tests_text else "\n"
        (work / "run.py").write_text(f"{code}\n{tests_text}{call}")
        ok = run([sys.executable, "run.py"]).returncode in passing_status
    return ok
