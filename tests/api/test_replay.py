"""Replay: rewards logged under v1 through the service, re-scored under a v2 moving one weight."""

from __future__ import annotations

import json
import time

import pytest
from typer.testing import CliRunner

from arbiter.cli import app
from arbiter.store.db import Store
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


LABELLED = """\
name: labelled
version: 1
components:
  turns: {grader: efficiency, weight: 0.5, config: {max_turns: 10}}
  tokens: {grader: efficiency, weight: 0.5, config: {max_completion_tokens: 1000}}
review: {sample_rate: 1.0}
"""
# Same components under another name: replayable, so only the default selection keeps it out.
NEIGHBOUR = LABELLED.replace("name: labelled", "name: neighbour")
# The edit: tokens weighs less, and a long run (turns score below 0.5) is capped at 0.1.
EDITED = (
    LABELLED.replace("version: 1", "version: 2")
    .replace("tokens: {grader: efficiency, weight: 0.5", "tokens: {grader: efficiency, weight: 0.3")
    .replace("review:", 'gates: [{when: "turns < 0.5", cap: 0.1}]\nreview:')
)
TURNS = [0, 2, 4, 6, 8, 9, 1, 7]
TOKENS = [0, 250, 500, 1000, 1500, 100, 2000, 999]


def test_replay_defaults_to_its_rubric_names_each_rule_and_compares_agreement(
    start_server: StartServer, tmp_path
):
    server = start_server()
    (server.rubric_dir / "labelled.yaml").write_text(LABELLED)
    (server.rubric_dir / "neighbour.yaml").write_text(NEIGHBOUR)
    samples = [
        {"id": f"l{i}", "response": "x", "metrics": {"turns": t, "completion_tokens": used}}
        for i, (t, used) in enumerate(zip(TURNS, TOKENS, strict=True))
    ]
    with server.client() as http:
        deadline = time.monotonic() + 20
        while not {"labelled", "neighbour"} <= {r["name"] for r in http.get("/v1/rubrics").json()}:
            assert time.monotonic() < deadline, "the rubric files were never loaded"
            time.sleep(0.05)
        logged = http.post("/v1/rewards", json={"rubric": "labelled", "samples": samples}).json()
        neighbours = [{**s, "id": f"n{i}"} for i, s in enumerate(samples)]
        assert (
            http.post(
                "/v1/rewards", json={"rubric": "neighbour", "samples": neighbours}
            ).status_code
            == 200
        )
    old = {r["id"]: r for r in logged["rewards"]}

    # A reviewer labels six of the eight: a long run (more than 5 turns) is worth nothing to
    # them; otherwise they agree with the old reward. The edit's gate should bring the
    # graders closer to them.
    labelled = set()
    with server.client("reviewer") as http:
        while len(labelled) < 6:
            item = http.post("/v1/review/claim", json={"rubric": "labelled"}).json()["item"]
            sample_id = item["sample_id"]
            turns = TURNS[int(sample_id[1:])]
            reward = old[sample_id]
            verdicts = {
                n: "pass" if c["score"] >= 0.5 else "fail" for n, c in reward["components"].items()
            }
            response = http.post(
                f"/v1/review/items/{item['id']}/labels",
                json={
                    "lease_token": item["lease_token"],
                    "verdicts": verdicts,
                    "overall_score": 0.0 if turns > 5 else reward["raw_reward"],
                },
            )
            assert response.status_code == 201, response.text
            labelled.add(sample_id)

    edited = tmp_path / "edited.yaml"
    edited.write_text(EDITED)
    report = tmp_path / "replay"
    result = CliRunner().invoke(
        app,
        [
            "replay",
            "--rubric",
            str(edited),
            "--database-url",
            server.db_url,
            "--report",
            str(report),
            "--min-labels",
            "5",
        ],
    )
    assert result.exit_code == 0, result.output
    # It says what it selected: the rubric's own name, not the neighbour's rewards.
    assert "selected 8 reward(s) logged under rubric name 'labelled'" in result.output
    assert "neighbour" not in result.output
    pairs = [json.loads(line) for line in (report / "pairs.jsonl").read_text().splitlines()]
    assert sorted(p["old"]["id"] for p in pairs) == sorted(old)

    summary = json.loads((report / "summary.json").read_text())
    assert summary["selected"] == {"rubric_name": "labelled", "rubric_sha256": None, "rewards": 8}
    assert summary["moved"], "the edit moved nothing"
    for item in summary["moved"]:
        i = int(item["sample_id"][1:])
        expected = []
        tokens_score = max(0.0, 1 - TOKENS[i] / 1000)
        if tokens_score > 0:
            expected.append("component tokens weight 0.5 -> 0.3")
        if 1 - TURNS[i] / 10 < 0.5:
            expected.append("gate 'turns < 0.5' (cap 0.1) now applies")
        assert item["rules"] == expected, (item, expected)

    # Every item whose reward the edit changes moved, and nothing else.
    def rewards(i: int) -> tuple[float, float]:
        turns, tokens = 1 - TURNS[i] / 10, max(0.0, 1 - TOKENS[i] / 1000)
        new = 0.5 * turns + 0.3 * tokens
        return 0.5 * turns + 0.5 * tokens, min(new, 0.1) if turns < 0.5 else new

    movable = {f"l{i}" for i in range(8) if abs(rewards(i)[0] - rewards(i)[1]) > 1e-9}
    assert {m["sample_id"] for m in summary["moved"]} == movable
    assert summary["moved_by_rule"]["component tokens weight"] == sum(
        1 for i in range(8) if TOKENS[i] < 1000 and f"l{i}" in movable
    )
    # Agreement before and after, on the six labelled items only.
    change = summary["agreement"]
    assert change["labelled"] == 6
    before, after = change["before"]["overall"]["mae"], change["after"]["overall"]["mae"]
    assert before["n"] == after["n"] == 6
    assert before["status"] == after["status"] == "ok"
    assert after["value"] < before["value"]
    # Component scores did not change, so neither did the verdicts they match.
    assert change["verdict_matches"]["turns"] == {"n": 6, "before": 6, "after": 6}
    assert "agreement with reviewers on 6 labelled replayed item(s)" in result.output
    assert "rules that moved it" in (report / "report.html").read_text()
