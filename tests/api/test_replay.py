"""Replay: rewards logged under v1 through the service, re-scored under a v2 moving one weight."""

from __future__ import annotations

import json
import time

import pytest
from typer.testing import CliRunner

from arbiter.cli import app
from store.db import Store
from tests.api.conftest import StartServer

V1 = """\
name: replayed
version: 1
components:
  turns: {grader: efficiency, weight: 0.5, config: {max_turns: 10}}
  tokens: {grader: efficiency, weight: 0.5, config: {max_completion_tokens: 1000}}
"""
V2 = V1.replace("version: 1", "version: 2").replace(
    "tokens: {grader: efficiency, weight: 0.5", "tokens: {grader: efficiency, weight: 0.3"
)


def test_replay_changes_exactly_the_items_it_should_by_the_right_amount(
    start_server: StartServer, tmp_path
):
    server = start_server()
    (server.rubric_dir / "replayed.yaml").write_text(V1)
    # tokens score = 1 - used/1000: items using 1000+ tokens score 0 there, so moving
    # that component's weight cannot change their reward; every other item's must.
    samples = [
        {"id": f"r{i}", "response": "x", "metrics": {"turns": i % 10, "completion_tokens": used}}
        for i, used in enumerate([0, 250, 500, 1000, 1500, 100, 2000, 999])
    ]
    with server.client() as http:
        deadline = time.monotonic() + 20  # the rubric folder is polled every 0.2 s
        while not any(r["name"] == "replayed" for r in http.get("/v1/rubrics").json()):
            assert time.monotonic() < deadline, "the new rubric file was never loaded"
            time.sleep(0.05)
        logged = http.post("/v1/rewards", json={"rubric": "replayed", "samples": samples}).json()
    v1_sha = logged["rubric"]["sha256"]
    new = tmp_path / "v2.yaml"
    new.write_text(V2)
    before = Store(server.db_url).count_rewards()
    report = tmp_path / "replay"
    result = CliRunner().invoke(
        app,
        [
            "replay",
            "--rubric",
            str(new),
            "--database-url",
            server.db_url,
            "--from-sha256",
            v1_sha,
            "--report",
            str(report),
        ],
    )
    assert result.exit_code == 0, result.output
    assert Store(server.db_url).count_rewards() == before  # the log is only read
    pairs = [json.loads(line) for line in (report / "pairs.jsonl").read_text().splitlines()]
    assert [p["old"]["id"] for p in pairs] == [s["id"] for s in samples]
    for pair in pairs:
        tokens = pair["old"]["components"]["tokens"]["score"]
        expected_delta = (0.3 - 0.5) * tokens
        delta = pair["new"]["reward"] - pair["old"]["reward"]
        assert delta == pytest.approx(expected_delta, abs=1e-12)
    should_change = {p["old"]["id"] for p in pairs if p["old"]["components"]["tokens"]["score"] > 0}
    summary = json.loads((report / "summary.json").read_text())
    assert summary["changed"] == len(should_change) == 5
    assert {m["sample_id"] for m in summary["moved"]} == should_change
    assert (
        summary["components"]["tokens"]["changed"] == 0
    )  # scores are the same; only the weight moved
    assert "<svg" in (report / "report.html").read_text()
