"""schemathesis over the OpenAPI schema of a real server: no input makes it fail with a 5xx."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.api.conftest import StartServer
from tests.strictness import unavailable


@pytest.mark.slow(seconds=95)
def test_no_server_errors_under_schema_fuzzing(start_server: StartServer, tmp_path: Path) -> None:
    # A server of its own: the fuzzer may revoke keys it can see.
    server = start_server()
    cli = Path(sys.executable).with_name("schemathesis")
    if not cli.exists() and shutil.which("schemathesis") is None:
        unavailable("schemathesis is not installed (it is in the dev extra)")
    done = subprocess.run(
        [
            str(cli if cli.exists() else "schemathesis"),
            "run",
            f"{server.url}/openapi.json",
            "--header",
            f"Authorization: Bearer {server.keys['admin']}",
            "--checks",
            "not_a_server_error",
            "--max-examples",
            "25",
            "--seed",
            "20261129",
            "--no-color",
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        cwd=tmp_path,  # schemathesis keeps a cache folder in its working directory
    )
    summary = done.stdout[-3000:]
    assert done.returncode == 0, summary
    assert "passed" in summary and "failed" not in summary.split("SUMMARY")[-1].lower(), summary
