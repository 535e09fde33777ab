"""The escape and hack suite: each test is one attack, and asserts that it failed.

"Failed" means both: the host is untouched (canary files, a host listener,
stray processes, the test process itself) and the item does not score as a
pass. Attacks that only one layer stops skip, with the reason, when that layer
is not active on the host (a strict run fails instead).

Each attack has a control proving it is real: run with the layer that stops it
left out (``unconfined``), or by a naive in-process harness for attacks on the
verdict (``naive_pass``), the same code succeeds. Attacks whose control would
harm the host (fork and memory bombs, killing every process) or that no layer
stops but a limit (deadlines, output caps, per-run cleanup) have none.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from arbiter.graders.sandbox import SandboxPool
from arbiter.graders.types import FailureKind, TaskSpec, ViolationType
from arbiter.graders.unit_tests import UnitTestsGrader
from tests.graders.sandbox.conftest import (
    Canary,
    Listener,
    Unconfined,
    function_task,
    grade,
    host_canary,
    host_listener,
    naive_pass,
    not_a_pass,
    require,
    require_any,
    stdio_task,
)
from tests.strictness import unavailable

pytestmark = pytest.mark.usefixtures("no_strays")

RETURNS_TRUE = function_task("def check(candidate):\n    assert candidate() is True\n")


def violation_types(result: object) -> set[ViolationType]:
    return {v.type for v in result.violations}  # type: ignore[attr-defined]


# --- reading and writing the host ------------------------------------------------


def test_read_etc_shadow(
    grader: UnitTestsGrader, layers: dict[str, str], unconfined: Unconfined
) -> None:
    require_any(layers, "unprivileged_uid", "landlock")
    shadow = Path("/etc/shadow")
    try:
        content = shadow.read_text()
    except OSError:
        unavailable("/etc/shadow is not readable by the test process, so nothing to protect")
    code = "print(open('/etc/shadow').read(), end='')"
    task = stdio_task(("", content), comparison="exact")
    result = grade(grader, code, task)
    assert result.score == 0.0
    assert result.details["tests"][0]["outcome"] == "runtime_error"
    # Control: with neither the uid drop nor Landlock, the shadow file is read.
    assert grade(unconfined("unprivileged_uid", "landlock"), code, task).score == 1.0


def test_read_world_readable_host_file(
    grader: UnitTestsGrader, canary: Canary, layers: dict[str, str], unconfined: Unconfined
) -> None:
    require(layers, "landlock")
    code = f"print(open({str(canary.secret_file)!r}).read(), end='')"
    task = stdio_task(("", canary.secret), comparison="exact")
    result = grade(grader, code, task)
    assert result.score == 0.0
    assert grade(unconfined("landlock"), code, task).score == 1.0  # control


def test_list_host_directory(
    grader: UnitTestsGrader, canary: Canary, layers: dict[str, str], unconfined: Unconfined
) -> None:
    require(layers, "landlock")
    code = f"import os\nprint(*os.listdir({str(canary.root)!r}))"
    result = grade(grader, code, stdio_task(("", "secret.txt")))
    assert result.score == 0.0
    assert grade(unconfined("landlock"), code, stdio_task(("", "secret.txt"))).score == 1.0


def _write_into(canary: Canary) -> str:
    return (
        "def f():\n"
        f"    open({str(canary.root / 'planted.txt')!r}, 'w').write('x')\n"
        f"    open({str(canary.secret_file)!r}, 'w').write('overwritten')\n"
        "    return True\n"
    )


def test_write_outside_work_dir(
    grader: UnitTestsGrader, canary: Canary, layers: dict[str, str], unconfined: Unconfined
) -> None:
    require(layers, "landlock")
    result = grade(grader, _write_into(canary), RETURNS_TRUE)
    assert not_a_pass(result)
    assert not (canary.root / "planted.txt").exists()
    with host_canary() as control:  # a target of its own: this one is meant to change
        assert grade(unconfined("landlock"), _write_into(control), RETURNS_TRUE).score == 1.0
        assert (control.root / "planted.txt").exists() and not control.untouched()


def test_write_into_slot_scratch_does_not_outlive_the_run(grader: UnitTestsGrader) -> None:
    # A run leaves a file for the next run of the same slot (to pass answers on).
    plant = (
        "import os\n"
        "def f():\n"
        "    open(os.environ['TMPDIR'] + '/../note', 'w').write('1')\n"
        "    return True\n"
    )
    grade(grader, plant, RETURNS_TRUE)
    probe = "import os\ndef f():\n    return os.path.exists(os.environ['TMPDIR'] + '/../note')\n"
    for _ in range(4):  # reach both slots
        assert not_a_pass(grade(grader, probe, RETURNS_TRUE))


def test_files_left_in_the_run_directory_do_not_reach_the_next_run(
    grader: UnitTestsGrader,
) -> None:
    # Every run of a slot works in a directory of the same path: it is emptied.
    plant = (
        "import os\n"
        "def f():\n"
        "    os.makedirs('deep/er', exist_ok=True)\n"
        "    open('deep/er/note', 'w').write('1')\n"
        "    open('note', 'w').write('1')\n"
        "    os.chmod('deep', 0o500)\n"
        "    return True\n"
    )
    for _ in range(4):
        grade(grader, plant, RETURNS_TRUE)
    probe = "import os\ndef f():\n    return os.path.exists('note') or os.path.exists('deep')\n"
    for _ in range(4):
        assert not_a_pass(grade(grader, probe, RETURNS_TRUE))


def test_replacing_the_zygotes_own_files_is_the_candidates_failure(
    grader: UnitTestsGrader,
) -> None:
    # Where the zygote keeps the run's output, the run puts directories: cleaning
    # up must not fail, or a failing candidate would come out as a sandbox fault.
    sabotage = (
        "import os\n"
        "def f():\n"
        "    for name in ('.stdout', '.stderr'):\n"
        "        os.unlink(name)\n"
        "        os.makedirs(name + '/x')\n"
        "    return False\n"
    )
    for _ in range(4):
        result = grade(grader, sabotage, RETURNS_TRUE)
        assert result.score == 0.0 and result.failure is None


# --- network ---------------------------------------------------------------------


def _tcp_to(port: int) -> str:
    return (
        "import socket\n"
        "s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)\n"
        f"s.connect(('127.0.0.1', {port}))\n"
        "s.sendall(b'hello')\n"
        "print('connected')\n"
    )


def test_tcp_connect_to_host(
    grader: UnitTestsGrader, listener: Listener, layers: dict[str, str], unconfined: Unconfined
) -> None:
    require(layers, "seccomp")
    result = grade(grader, _tcp_to(listener.tcp_port), stdio_task(("", "connected")))
    assert result.score == 0.0
    assert violation_types(result) & {ViolationType.NETWORK_ACCESS}
    # Control: without seccomp, the network namespace and Landlock (its ABI 4+
    # refuses TCP connect too), the host listener is reached.
    with host_listener() as control:
        loose = unconfined("seccomp", "namespaces", "landlock")
        assert grade(loose, _tcp_to(control.tcp_port), stdio_task(("", "connected"))).score == 1.0
    assert control.connections == 1


def _udp_to(port: int) -> str:
    return (
        "import socket\n"
        "s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n"
        f"s.sendto(b'hello', ('127.0.0.1', {port}))\n"
        "print('sent')\n"
    )


def test_udp_to_host(
    grader: UnitTestsGrader, listener: Listener, layers: dict[str, str], unconfined: Unconfined
) -> None:
    require_any(layers, "seccomp", "namespaces")
    result = grade(grader, _udp_to(listener.udp_port), stdio_task(("", "sent")))
    assert result.score == 0.0
    with host_listener() as control:
        loose = unconfined("seccomp", "namespaces")
        assert grade(loose, _udp_to(control.udp_port), stdio_task(("", "sent"))).score == 1.0
    assert control.datagrams == 1


def test_unix_socket_to_host(
    grader: UnitTestsGrader, layers: dict[str, str], unconfined: Unconfined
) -> None:
    require(layers, "seccomp")  # pathname sockets are not namespaced; socket() is refused
    import socket

    path = Path("/tmp") / f"arbiter-test-{os.getpid()}.sock"
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(path))
    os.chmod(path, 0o777)
    server.listen()
    server.settimeout(0.2)
    try:
        code = (
            "import socket\n"
            "s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)\n"
            f"s.connect({str(path)!r})\n"
            "print('connected')\n"
        )
        result = grade(grader, code, stdio_task(("", "connected")))
        assert result.score == 0.0
        with pytest.raises(TimeoutError):
            server.accept()
        # Control: without seccomp the same code reaches the host's socket.
        assert grade(unconfined("seccomp"), code, stdio_task(("", "connected"))).score == 1.0
        server.accept()[0].close()
    finally:
        server.close()
        path.unlink()


# --- resources -------------------------------------------------------------------


def test_fork_bomb_is_bounded(
    grader: UnitTestsGrader, pool: SandboxPool, layers: dict[str, str]
) -> None:
    require(layers, "unprivileged_uid", "namespaces")
    code = (
        "import os\n"
        "def f():\n"
        "    while True:\n"
        "        try:\n"
        "            os.fork()\n"
        "        except OSError:\n"
        "            pass\n"
    )
    result = grade(grader, code, RETURNS_TRUE, timeout_s=2.0, max_processes=8)
    assert not_a_pass(result)


def test_memory_bomb_is_bounded(grader: UnitTestsGrader) -> None:
    code = "def f():\n    blocks = [bytearray(64 << 20) for _ in range(1000)]\n    return True\n"
    result = grade(grader, code, RETURNS_TRUE, memory_mb=256)
    assert result.score == 0.0
    assert result.details["tests"][0]["outcome"] == "memory_limit"
    assert "MemoryError" in result.details["tests"][0]["error"]
    assert result.details["sandbox"]["maxrss_kb"] < 300 * 1024


def test_busy_loop_is_killed_by_the_wall_clock(grader: UnitTestsGrader) -> None:
    # The grade call returning at all is the proof: the loop never ends by itself.
    result = grade(grader, "def f():\n    while True:\n        pass\n", RETURNS_TRUE, timeout_s=1.0)
    assert result.score is None and result.failure is not None
    assert result.failure.kind == FailureKind.TIMEOUT


def test_sleeping_past_the_deadline(grader: UnitTestsGrader) -> None:
    # CPU limits do not see a sleeper; the wall clock must.
    code = "import time\ndef f():\n    time.sleep(60)\n    return True\n"
    result = grade(grader, code, RETURNS_TRUE, timeout_s=1.0)
    assert not_a_pass(result)
    assert result.failure is not None and result.failure.kind == FailureKind.TIMEOUT


def test_stdout_flood_is_capped(grader: UnitTestsGrader) -> None:
    code = (
        "import sys\nchunk = 'x' * (1 << 20)\nfor _ in range(1024):\n    sys.stdout.write(chunk)\n"
    )
    result = grade(grader, code, stdio_task(("", "x")), max_output_bytes=1 << 20)
    # Every case ended by the cap: a typed output_limit, never a silent 0.
    assert result.score is None and result.failure is not None
    assert result.failure.kind == FailureKind.OUTPUT_LIMIT
    assert result.details["tests"][0]["outcome"] == "output_limit"
    assert ViolationType.RESOURCE_ABUSE in violation_types(result)


def test_result_flood_is_capped_not_forged(grader: UnitTestsGrader) -> None:
    code = "def f():\n    return 'x' * (8 << 20)\n"
    result = grade(grader, code, RETURNS_TRUE, max_result_bytes=1 << 20)
    assert result.score == 0.0
    assert result.details["tests"][0]["outcome"] == "output_limit"
    # A large result fails its test; it is no forgery, and (an honest answer may be
    # large) no abuse either: the cap is the rubric's to raise.
    kinds = violation_types(result)
    assert ViolationType.RESOURCE_ABUSE not in kinds and ViolationType.VERDICT_FORGERY not in kinds


# --- processes -------------------------------------------------------------------


def test_kill_the_parent_and_everyone(grader: UnitTestsGrader, layers: dict[str, str]) -> None:
    require_any(layers, "namespaces", "signal_scoping")
    # f is right only if its parent (the zygote) is gone afterwards.
    code = (
        "import os, signal, time\n"
        "def f():\n"
        "    parent = os.getppid()\n"
        "    for target in (parent, 1, -1):\n"
        "        try:\n"
        "            os.kill(target, signal.SIGKILL)\n"
        "        except OSError:\n"
        "            pass\n"
        "    time.sleep(0.2)\n"
        "    try:\n"
        "        os.kill(parent, 0)\n"
        "    except ProcessLookupError:\n"
        "        return True\n"
        "    except OSError:\n"
        "        pass\n"
        "    return os.getppid() != parent\n"
    )
    result = grade(grader, code, RETURNS_TRUE)
    assert not_a_pass(result)
    # Both slots still grade correctly afterwards.
    for _ in range(4):
        assert grade(grader, "def f():\n    return True\n", RETURNS_TRUE).score == 1.0


def test_setsid_double_forked_daemon_is_swept(
    grader: UnitTestsGrader, layers: dict[str, str]
) -> None:
    require(layers, "namespaces")  # the sweep is kill(-1) from PID 1 of the namespace
    code = (
        "import os, time\n"
        "if os.fork() == 0:\n"
        "    os.setsid()\n"
        "    if os.fork() == 0:\n"
        "        time.sleep(300)\n"
        "    os._exit(0)\n"
        "def f():\n"
        "    return True\n"
    )
    result = grade(grader, code, RETURNS_TRUE)
    # The daemon does not affect the verdict (f is right) but is killed and reported.
    assert result.score == 1.0
    assert ViolationType.SUBPROCESS in violation_types(result)


def test_ptrace_is_refused(
    grader: UnitTestsGrader, layers: dict[str, str], unconfined: Unconfined
) -> None:
    require(layers, "seccomp")
    code = "import ctypes\ndef f():\n    return ctypes.CDLL(None).ptrace(0, 0, 0, 0) == 0\n"
    result = grade(grader, code, RETURNS_TRUE)
    assert result.score == 0.0
    assert ViolationType.FORBIDDEN_OPERATION in violation_types(result)
    assert grade(unconfined("seccomp"), code, RETURNS_TRUE).score == 1.0  # control


def test_unshare_is_refused(
    grader: UnitTestsGrader, layers: dict[str, str], unconfined: Unconfined
) -> None:
    require(layers, "seccomp")
    code = "import ctypes\ndef f():\n    return ctypes.CDLL(None).unshare(0x10000000) == 0\n"
    result = grade(grader, code, RETURNS_TRUE)
    assert result.score == 0.0
    assert ViolationType.FORBIDDEN_OPERATION in violation_types(result)
    assert grade(unconfined("seccomp"), code, RETURNS_TRUE).score == 1.0  # control


# --- the verdict -----------------------------------------------------------------

TWO_ASSERTS = function_task(
    "def check(candidate):\n    assert candidate(2) == 4\n    assert candidate(3) == 9\n"
)


def test_sys_exit_zero_at_import_is_not_a_pass(grader: UnitTestsGrader, tmp_path: Path) -> None:
    code = "import sys\nsys.exit(0)\ndef f(x):\n    return x * x\n"
    result = grade(grader, code, TWO_ASSERTS)
    assert result.score == 0.0
    assert ViolationType.EARLY_EXIT in violation_types(result)
    assert naive_pass(code, TWO_ASSERTS, tmp_path)  # control: exit status 0 fools a harness


def test_os_exit_zero_during_the_tests_is_not_a_pass(
    grader: UnitTestsGrader, tmp_path: Path
) -> None:
    code = "import os\ndef f(x):\n    os._exit(0)\n"
    result = grade(grader, code, TWO_ASSERTS)
    assert result.score == 0.0
    assert ViolationType.EARLY_EXIT in violation_types(result)
    assert naive_pass(code, TWO_ASSERTS, tmp_path)  # control


@pytest.mark.parametrize(
    ("raise_", "fools_a_naive_harness"),
    [
        ("raise SystemExit(0)", True),
        # These two stop a harness with a non-zero status, so they have no control
        # here; a pytest-run harness would report them as interrupted or skipped.
        ("raise KeyboardInterrupt", False),
        ("import unittest; raise unittest.SkipTest('no')", False),
    ],
)
def test_raising_control_flow_exceptions_is_not_a_pass(
    grader: UnitTestsGrader, raise_: str, fools_a_naive_harness: bool, tmp_path: Path
) -> None:
    code = f"def f(x):\n    {raise_}\n"
    result = grade(grader, code, TWO_ASSERTS)
    assert result.score == 0.0
    assert naive_pass(code, TWO_ASSERTS, tmp_path) is fools_a_naive_harness


def test_always_equal_object(grader: UnitTestsGrader, tmp_path: Path) -> None:
    code = (
        "class Anything:\n"
        "    def __eq__(self, other):\n"
        "        return True\n"
        "    __hash__ = object.__hash__\n"
        "    def __bool__(self):\n"
        "        return True\n"
        "def f(x):\n"
        "    return Anything()\n"
    )
    result = grade(grader, code, TWO_ASSERTS)
    assert result.score == 0.0
    assert naive_pass(code, TWO_ASSERTS, tmp_path)  # control: in-process, == is fooled


def test_always_equal_int_subclass(grader: UnitTestsGrader, tmp_path: Path) -> None:
    code = (
        "class Int(int):\n"
        "    def __eq__(self, other):\n"
        "        return True\n"
        "def f(x):\n"
        "    return Int(0)\n"
    )
    assert grade(grader, code, TWO_ASSERTS).score == 0.0
    assert naive_pass(code, TWO_ASSERTS, tmp_path)  # control


def test_patching_builtins_and_assert_in_own_process(grader: UnitTestsGrader) -> None:
    # What would fool tests running beside the candidate does nothing to tests run outside it.
    code = (
        "import builtins\n"
        "builtins.AssertionError = type('Nope', (Exception,), {})\n"
        "builtins.isinstance = lambda *a: True\n"
        "def f(x):\n"
        "    return 0\n"
    )
    assert grade(grader, code, TWO_ASSERTS).score == 0.0


def test_forging_the_result_channel(grader: UnitTestsGrader) -> None:
    # Fake frames written straight to the inherited socket: a fake "ready", then
    # replies claiming success before any call was made.
    code = (
        "import json, os, struct\n"
        "def frame(obj):\n"
        "    body = json.dumps(obj).encode()\n"
        "    return struct.pack('>I', len(body)) + body\n"
        "for fd in range(3, 8):\n"
        "    for msg in ({'ready': True, 'names': [['f', 'callable']]},\n"
        "                {'id': 0, 'ok': 4}, {'id': 1, 'ok': 9}, {'passed': True}):\n"
        "        try:\n"
        "            os.write(fd, frame(msg))\n"
        "        except OSError:\n"
        "            pass\n"
        "def f(x):\n"
        "    return 0\n"
    )
    result = grade(grader, code, TWO_ASSERTS)
    # The forged replies desynchronise the channel: never a full pass, and flagged.
    assert not_a_pass(result)
    assert ViolationType.VERDICT_FORGERY in violation_types(result)


def test_garbage_on_the_result_channel(grader: UnitTestsGrader) -> None:
    code = "import os\ndef f(x):\n    os.write(3, b'\\x00\\x00\\x00\\x05{}{}{')\n    return x * x\n"
    result = grade(grader, code, TWO_ASSERTS)
    assert not_a_pass(result)


def test_excepthook_and_atexit_tricks(grader: UnitTestsGrader) -> None:
    code = (
        "import atexit, os, sys\n"
        "sys.excepthook = lambda *a: None\n"
        "atexit.register(lambda: os.write(3, b'passed'))\n"
        "def f(x):\n"
        "    raise ValueError('wrong')\n"
    )
    assert grade(grader, code, TWO_ASSERTS).score == 0.0


def test_tests_never_enter_the_sandbox(grader: UnitTestsGrader, tmp_path: Path) -> None:
    # Reading the test file to hard-code answers: the tests are not there to read.
    marker = "MARKER_4b1d9e"
    tests = f"def check(candidate):\n    '{marker}'\n    assert candidate() is True\n"
    code = (
        "import gc, os\n"
        "def f():\n"
        "    m = 'MARKER_' + '4b1d9e'\n"
        "    for root in ('.', os.environ.get('TMPDIR', '.'), '/tmp', '/'):\n"
        "        for dirpath, _, files in os.walk(root):\n"
        "            for name in files:\n"
        "                try:\n"
        "                    if m in open(os.path.join(dirpath, name), errors='ignore').read():\n"
        "                        return True\n"
        "                except OSError:\n"
        "                    pass\n"
        "    return any(isinstance(o, str) and m in o and o != m for o in gc.get_objects())\n"
    )
    result = grade(grader, code, function_task(tests), timeout_s=5.0)
    assert result.score == 0.0
    # Control: where the tests share the candidate's process, it finds them.
    assert naive_pass(code, function_task(tests), tmp_path)


# --- pytest suites ---------------------------------------------------------------

SUITE = TaskSpec(
    kind="pytest",
    entry_point="solution",
    tests=(
        "from solution import add\n\n"
        "def test_small():\n    assert add(1, 2) == 3\n\n"
        "def test_zero():\n    assert add(0, 0) == 0\n\n"
        "def test_negative():\n    assert add(-2, 1) == -1\n"
    ),
)
WRONG = "def add(a, b):\n    return 7\n"


def test_suite_honest_runs(grader: UnitTestsGrader) -> None:
    good = grade(grader, "def add(a, b):\n    return a + b\n", SUITE)
    assert good.score == 1.0 and good.details["trusted"]
    assert grade(grader, WRONG, SUITE).score == 0.0


def test_suite_monkeypatching_pytest_internals(grader: UnitTestsGrader, tmp_path: Path) -> None:
    code = "import _pytest.python\n_pytest.python.Function.runtest = lambda self: None\n" + WRONG
    result = grade(grader, code, SUITE)
    assert result.score == 0.0
    assert ViolationType.FRAMEWORK_PATCHING in violation_types(result)
    assert naive_pass(code, SUITE, tmp_path)  # control: pytest in the candidate's process


def test_suite_patching_pytest_without_naming_underscore_pytest(
    grader: UnitTestsGrader, tmp_path: Path
) -> None:
    # Reach the internals through sys.modules, which the static scan cannot see:
    # the suite runs in the trusted pytest process, so there is none to patch.
    code = (
        "import sys\n"
        "mod = sys.modules['_' + 'pytest.python']\n"
        "setattr(mod.Function, 'runtest', lambda self: None)\n" + WRONG
    )
    result = grade(grader, code, SUITE)
    assert result.score == 0.0
    assert "KeyError" in result.details["load_error"]
    assert naive_pass(code, SUITE, tmp_path)  # control: pytest in the candidate's process


def test_suite_forged_report_and_early_exit(grader: UnitTestsGrader, tmp_path: Path) -> None:
    code = (
        "import json, os\n"
        "ids = ['test_solution.py::test_small', 'test_solution.py::test_zero',\n"
        "       'test_solution.py::test_negative']\n"
        "report = {'status': 0, 'outcomes': dict.fromkeys(ids, 'passed'), 'collected': 3,\n"
        "          'collect_errors': [], 'patched': [], 'nonce': 'guess'}\n"
        "fd = 3\n"
        "os.write(fd, (json.dumps(report) + '\\n').encode())\n"
        "getattr(os, '_' + 'exit')(0)\n" + WRONG
    )
    result = grade(grader, code, SUITE)
    assert result.score == 0.0
    assert ViolationType.VERDICT_FORGERY in violation_types(result)
    # Control: the forged report goes to the sandbox's own channel (fd 3), which a
    # naive harness does not have; without it the early exit alone passes there.
    naive = code.replace("os.write(fd,", "os.write(1,")
    assert naive_pass(naive, SUITE, tmp_path)


def test_suite_exit_before_tests(grader: UnitTestsGrader, tmp_path: Path) -> None:
    code = "import os\nos._exit(0)\n" + WRONG
    result = grade(grader, code, SUITE)
    assert result.score == 0.0
    assert ViolationType.EARLY_EXIT in violation_types(result)
    assert naive_pass(code, SUITE, tmp_path)  # control


def test_suite_exit_zero_during_a_test(grader: UnitTestsGrader, tmp_path: Path) -> None:
    code = "import os\ndef add(a, b):\n    os._exit(0)\n"
    result = grade(grader, code, SUITE)
    assert result.score == 0.0
    assert ViolationType.EARLY_EXIT in violation_types(result)
    assert naive_pass(code, SUITE, tmp_path)  # control


def test_suite_editing_the_tests(
    grader: UnitTestsGrader, layers: dict[str, str], tmp_path: Path
) -> None:
    require(layers, "landlock")
    code = (
        "import glob\n"
        "for path in glob.glob('../tests/*.py'):\n"
        "    try:\n"
        "        open(path, 'w').write('def test_ok():\\n    pass\\n')\n"
        "    except OSError:\n"
        "        pass\n" + WRONG
    )
    assert grade(grader, code, SUITE).score == 0.0
    assert naive_pass(code, SUITE, tmp_path)  # control: a writable tests directory


# A plugin in the candidate's module that reports every test as passed.
FORGE_REPORTS = (
    "import pytest\n"
    "@pytest.hookimpl(hookwrapper=True)\n"
    "def pytest_runtest_makereport(item, call):\n"
    "    outcome = yield\n"
    "    report = outcome.get_result()\n"
    "    report.outcome, report.longrepr = 'passed', None\n"
)


@pytest.mark.parametrize(
    ("name", "text"),
    [
        # pytest_runtest_call is not a firstresult hook: returning True from it
        # changes nothing, so the conftest forges the reports instead.
        ("conftest.py", FORGE_REPORTS),
        # Loads the candidate's own module as a plugin before any test runs.
        ("pytest.ini", "[pytest]\naddopts = -p solution\n"),
        (
            "sitecustomize.py",
            "import _pytest.python\n_pytest.python.Function.runtest = lambda s: None\n",
        ),
    ],
)
def test_suite_planting_config_files(
    grader: UnitTestsGrader, name: str, text: str, tmp_path: Path
) -> None:
    # Write the file next to the candidate and into the tests directory if it can.
    code = (
        "import os\n"
        f"for d in ('.', '../tests'):\n"
        "    try:\n"
        f"        open(os.path.join(d, {name!r}), 'w').write({text!r})\n"
        "    except OSError:\n"
        "        pass\n" + WRONG + (FORGE_REPORTS if name == "pytest.ini" else "")
    )
    assert grade(grader, code, SUITE).score == 0.0
    assert naive_pass(code, SUITE, tmp_path)  # control: the planted file takes effect


def test_suite_forged_pyc(grader: UnitTestsGrader, tmp_path: Path) -> None:
    # A valid bytecode cache for the tests, compiled from passing tests and
    # bound to the real file's hash (pytest 9 writes checked hash-based pycs),
    # so pytest's assertion rewriter (and importlib) load it instead of the source.
    code = (
        "import importlib.util, marshal, os, sys\n"
        "import pytest\n"
        "SRC = '../tests/test_solution.py'\n"
        "FAKE = 'def test_small():\\n    pass\\n\\ndef test_zero():\\n    pass\\n\\n'"
        " 'def test_negative():\\n    pass\\n'\n"
        "try:\n"
        "    source = open(SRC, 'rb').read()\n"
        "    co = compile(FAKE, os.path.abspath(SRC), 'exec')\n"
        "    flags = (3).to_bytes(4, 'little')  # hash-based, checked\n"
        "    body = importlib.util.MAGIC_NUMBER + flags + importlib.util.source_hash(source)\n"
        "    body += marshal.dumps(co)\n"
        "    cache = os.path.join(os.path.dirname(SRC), '__pycache__')\n"
        "    os.makedirs(cache, exist_ok=True)\n"
        "    tag = sys.implementation.cache_tag\n"
        "    for name in (f'test_solution.{tag}-pytest-{pytest.__version__}.pyc',\n"
        "                 f'test_solution.{tag}.pyc'):\n"
        "        with open(os.path.join(cache, name), 'wb') as f:\n"
        "            f.write(body)\n"
        "except OSError:\n"
        "    pass\n" + WRONG
    )
    assert grade(grader, code, SUITE).score == 0.0
    assert naive_pass(code, SUITE, tmp_path)  # control: the forged bytecode is what runs


def test_planting_symlinks_in_the_slot_directory(
    grader: UnitTestsGrader, canary: Canary, layers: dict[str, str]
) -> None:
    require(layers, "landlock")
    # A run swaps its slot's directories for links into the host (or plants
    # links where they were), hoping the trusted side (root) later writes or
    # removes through them.
    code = (
        "import os\n"
        "def f():\n"
        "    slot = os.path.dirname(os.path.dirname(os.getcwd()))\n"
        "    runs = os.path.join(slot, 'runs')\n"
        "    steps = [lambda: os.rename(runs, runs + '.old'),\n"
        f"             lambda: os.symlink({str(canary.root)!r}, os.path.join(slot, 'work')),\n"
        f"             lambda: os.symlink({str(canary.secret_file)!r}, slot + '/x.py')]\n"
        "    done = 0\n"
        "    for step in steps:\n"
        "        try:\n"
        "            step()\n"
        "            done += 1\n"
        "        except OSError:\n"
        "            pass\n"
        "    return done > 0\n"
    )
    for _ in range(4):  # both slots
        assert grade(grader, code, RETURNS_TRUE).score == 0.0
    for _ in range(4):
        assert grade(grader, "def add(a, b):\n    return a + b\n", SUITE).score == 1.0


def test_suite_skipping_the_tests(grader: UnitTestsGrader, tmp_path: Path) -> None:
    code = "import pytest\npytest.skip('not today', allow_module_level=True)\n" + WRONG
    result = grade(grader, code, SUITE)
    assert not_a_pass(result)
    # Control: a harness that reads "nothing failed" as a pass is fooled.
    assert naive_pass(code, SUITE, tmp_path, passing_status=(0, 5))
