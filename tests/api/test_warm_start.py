"""The first batch after start is graded as the hundredth: graders are warm before /readyz."""

from __future__ import annotations

import json
from pathlib import Path

from arbiter.graders.types import INFRASTRUCTURE_FAILURES
from tests.api.conftest import REPO, StartServer
from tests.api.test_hardening import descendants


def _command_lines(pid: int) -> list[str]:
    """Return the command lines of every process below ``pid``."""
    out = []
    for child in descendants(pid):
        try:
            out.append(Path(f"/proc/{child}/cmdline").read_bytes().replace(b"\0", b" ").decode())
        except OSError:
            continue
    return out


def test_static_analysis_workers_run_before_ready_and_the_first_batch_equals_a_later_one(
    start_server: StartServer,
) -> None:
    server = start_server()
    assert server.process is not None
    # Ready means warm: the analysis workers (bandit, radon) already run, before
    # any request could make a first sample wait for their start.
    workers = [c for c in _command_lines(server.process.pid) if "forkserver" in c]
    assert len(workers) >= 2, _command_lines(server.process.pid)
    demo = REPO / "eval_sets" / "codegen-demo.jsonl"
    samples = [json.loads(line) for line in demo.read_text().splitlines() if line.strip()]
    with server.client() as http:
        first = http.post("/v1/rewards", json={"rubric": "python-codegen", "samples": samples})
        again = http.post("/v1/rewards", json={"rubric": "python-codegen", "samples": samples})
    assert first.status_code == again.status_code == 200, first.text

    def shape(body: dict[str, object]) -> list[object]:
        return [
            (
                r["id"],
                r["reward"],
                {n: (c["score"], c["failure"]) for n, c in r["components"].items()},
            )
            for r in body["rewards"]  # type: ignore[attr-defined]
        ]

    assert shape(first.json()) == shape(again.json())
    ours = {k.value for k in INFRASTRUCTURE_FAILURES}
    failures = [
        (r["id"], n, c["failure"]["kind"])
        for r in first.json()["rewards"]
        for n, c in r["components"].items()
        if c["failure"] and c["failure"]["kind"] in ours
    ]
    assert failures == []
