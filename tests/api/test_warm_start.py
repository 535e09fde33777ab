"""The first batch after start is graded as the hundredth: graders are warm before /readyz."""

from __future__ import annotations

import json
from pathlib import Path

from graders.types import INFRASTRUCTURE_FAILURES
from tests.api.conftest import REPO, StartServer


def _descendants(pid: int) -> list[tuple[int, str]]:
    """Return (pid, command line) of every process below ``pid``."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        parent = int(stat.rsplit(")", 1)[1].split()[1])
        children.setdefault(parent, []).append(int(entry.name))
    out, stack = [], [pid]
    while stack:
        for child in children.get(stack.pop(), []):
            try:
                cmdline = Path(f"/proc/{child}/cmdline").read_bytes().replace(b"\0", b" ")
            except OSError:
                continue
            out.append((child, cmdline.decode(errors="replace")))
            stack.append(child)
    return out


def test_static_analysis_workers_run_before_ready_and_the_first_batch_equals_a_later_one(
    start_server: StartServer,
) -> None:
    server = start_server()
    assert server.process is not None
    # Ready means warm: the analysis workers (bandit, radon) already run, before
    # any request could make a first sample wait for their start.
    workers = [c for _, c in _descendants(server.process.pid) if "forkserver" in c]
    assert len(workers) >= 2, _descendants(server.process.pid)
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
