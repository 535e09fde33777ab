"""The sandbox when Arbiter itself runs as an ordinary user (a user namespace replaces setuid)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

from tests.strictness import unavailable

REPO = Path(__file__).resolve().parents[3]

SCRIPT = """
import json, os
from arbiter.graders.sandbox import PoolConfig, SandboxPool
from arbiter.graders.types import IOCase, Sample, TaskSpec
from arbiter.graders.unit_tests import UnitTestsConfig, UnitTestsGrader

out = {"uid": os.getuid()}
with SandboxPool(PoolConfig(slots=1)) as pool:
    grader = UnitTestsGrader(pool)
    out["layers"] = pool.layers()
    square = TaskSpec(
        kind="python_function", tests="def check(c):\\n    assert c(3) == 9\\n", entry_point="f"
    )

    def score(code, task=square, **config):
        sample = Sample(id="x", response=code, task=task)
        return grader.grade_sync(sample, UnitTestsConfig(**config)).score

    out["right"] = score("def f(x):\\n    return x * x\\n")
    out["wrong"] = score("def f(x):\\n    return x\\n")
    out["reads_passwd"] = score(
        "def f(x):\\n    return 9 if open('/etc/passwd').read() else 0\\n"
    )
    out["fork_bomb"] = score(
        "import os\\ndef f(x):\\n    while True:\\n        try:\\n            os.fork()\\n"
        "        except OSError:\\n            pass\\n",
        timeout_s=2,
    )
    out["stdio"] = score(
        "print(int(input()) ** 2)",
        TaskSpec(kind="stdin_stdout", tests=[IOCase(input="3", output="9")]),
    )
    out["cpp_stdio"] = score(
        "#include <iostream>\\nint main() { long x; std::cin >> x; std::cout << x * x; }\\n",
        TaskSpec(kind="stdin_stdout", language="cpp", tests=[IOCase(input="3", output="9")]),
    )
print(json.dumps(out))
"""


def test_grading_as_an_ordinary_user() -> None:
    if os.getuid() != 0:
        unavailable("already unprivileged: the rest of the suite runs the sandbox this way")
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        unavailable("setpriv (util-linux) is not installed")
    # The venv's interpreter may sit under /root (mode 700): use the system one of the
    # same version, with the venv's packages on its path.
    version = f"{sys.version_info.major}.{sys.version_info.minor}"
    python = Path(f"/usr/bin/python{version}")
    if not python.exists():
        unavailable(f"no system python{version} that an ordinary user can run")
    packages = sysconfig.get_paths()["purelib"]
    done = subprocess.run(
        [
            setpriv,
            "--reuid",
            "65534",
            "--regid",
            "65534",
            "--clear-groups",
            str(python),
            "-c",
            SCRIPT,
        ],
        env={
            "PYTHONPATH": f"{REPO}{os.pathsep}{packages}",
            "HOME": "/tmp",
            "PATH": "/usr/bin:/bin",
        },
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    if done.returncode != 0 and "ModuleNotFoundError" in done.stderr:
        unavailable(
            f"the project's packages are not readable by an ordinary user: {done.stderr[-300:]}"
        )
    assert done.returncode == 0, done.stderr[-2000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["uid"] == 65534
    assert out["right"] == 1.0 and out["stdio"] == 1.0
    # A compiled program: built and run confined, as an ordinary user too.
    assert out["cpp_stdio"] == 1.0
    assert out["wrong"] == 0.0
    assert out["reads_passwd"] == 0.0  # Landlock, since file permissions would allow it
    assert out["fork_bomb"] in (None, 0.0)
    assert out["layers"]["namespaces"] == "active"
    # The run directory's bounded tmpfs, mounted inside the user namespace.
    assert out["layers"]["run_dir_limits"] == "active"
