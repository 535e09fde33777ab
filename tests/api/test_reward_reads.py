"""Reading logged rewards back: by request, by sample id and time, and as a JSONL export.

Issue 27: nothing read back the logged rewards except SQL on the store. A trainer
reads its own, never another tenant's (another key's request reads as none).
"""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime
from typing import Any

import pytest
from typer.testing import CliRunner

from arbiter.cli import app
from tests.api.conftest import Server


def grade(server: Server, role: str, ids: list[str]) -> dict[str, Any]:
    samples = [{"id": i, "response": "done", "metrics": {"turns": 3}} for i in ids]
    with server.client(role) as http:
        response = http.post("/v1/rewards", json={"rubric": "efficiency-only", "samples": samples})
    assert response.status_code == 200, response.text
    answer: dict[str, Any] = response.json()
    return answer


def iso(at: float) -> str:
    return datetime.fromtimestamp(at, UTC).isoformat()


@pytest.fixture(scope="module")
def logged(server: Server) -> dict[str, Any]:
    before = time.time()
    mine = grade(server, "trainer", ["read-a", "read-b", "shared-id"])
    # The first request was logged before its answer, the second after this.
    between = time.time()
    later = grade(server, "trainer", ["read-c"])
    theirs = grade(server, "trainer2", ["shared-id", "theirs-only"])
    return {"mine": mine, "later": later, "theirs": theirs, "before": before, "between": between}


def test_a_request_reads_back_as_it_was_answered(server: Server, logged: dict[str, Any]) -> None:
    mine = logged["mine"]
    with server.client("trainer") as http:
        read = http.get(f"/v1/rewards/{mine['request_id']}")
    assert read.status_code == 200, read.text
    rewards = read.json()["rewards"]
    assert [r["reward"] for r in rewards] == mine["rewards"]  # exactly as returned
    assert [r["position"] for r in rewards] == [0, 1, 2]
    assert rewards[0]["rubric"]["name"] == "efficiency-only"
    assert rewards[0]["logged_at"].endswith("Z")
    assert datetime.fromisoformat(rewards[0]["logged_at"]).timestamp() >= logged["before"] - 1


def test_another_tenants_rewards_are_not_visible(server: Server, logged: dict[str, Any]) -> None:
    with server.client("trainer2") as http:
        theirs = http.get(f"/v1/rewards/{logged['mine']['request_id']}")
        by_sample = http.get("/v1/rewards", params={"sample_id": "shared-id"}).json()["rewards"]
        everything = http.get("/v1/rewards", params={"limit": 1000}).json()["rewards"]
    assert theirs.status_code == 404 and theirs.json()["code"] == "request_not_found"
    assert [r["request_id"] for r in by_sample] == [logged["theirs"]["request_id"]]
    assert {r["request_id"] for r in everything} == {logged["theirs"]["request_id"]}
    with server.client("trainer") as http:
        mine = http.get("/v1/rewards", params={"sample_id": "shared-id"}).json()["rewards"]
        unknown = http.get("/v1/rewards/" + "f" * 32)
    assert [r["request_id"] for r in mine] == [logged["mine"]["request_id"]]
    assert unknown.status_code == 404
    with server.client("reviewer") as http:
        assert http.get("/v1/rewards").status_code == 403


def test_a_time_range_and_pages(server: Server, logged: dict[str, Any]) -> None:
    with server.client("trainer") as http:
        early = http.get(
            "/v1/rewards",
            params={"since": iso(logged["before"] - 1), "until": iso(logged["between"])},
        ).json()["rewards"]
        late = http.get("/v1/rewards", params={"since": iso(logged["between"])}).json()["rewards"]
        first = http.get("/v1/rewards", params={"limit": 2}).json()
        rest = http.get(
            "/v1/rewards", params={"after_id": first["next_after_id"], "limit": 1000}
        ).json()
        typo = http.get("/v1/rewards", params={"sample": "read-a"})
    assert {r["sample_id"] for r in early} == {"read-a", "read-b", "shared-id"}
    assert {r["sample_id"] for r in late} == {"read-c"}
    assert len(first["rewards"]) == 2 and first["next_after_id"] == first["rewards"][-1]["log_id"]
    assert rest["next_after_id"] is None
    ids = [r["log_id"] for r in first["rewards"] + rest["rewards"]]
    assert ids == sorted(ids) and len(set(ids)) == len(ids)
    assert {r["sample_id"] for r in first["rewards"] + rest["rewards"]} >= {"read-a", "read-c"}
    assert typo.status_code == 422 and typo.json()["code"] == "unknown_query_parameter"


def test_rewards_export_writes_jsonl(server: Server, logged: dict[str, Any], tmp_path: Any) -> None:
    out = tmp_path / "rewards.jsonl"
    client = server.keys["trainer"].split("_")[1]  # the key's id
    result = CliRunner().invoke(
        app,
        ["rewards", "export", "-o", str(out), "--database-url", server.db_url, "--client", client],
    )
    assert result.exit_code == 0, result.output
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert [line["sample_id"] for line in lines][:4] == ["read-a", "read-b", "shared-id", "read-c"]
    assert {line["request_id"] for line in lines} >= {
        logged["mine"]["request_id"],
        logged["later"]["request_id"],
    }
    assert logged["theirs"]["request_id"] not in {line["request_id"] for line in lines}
    assert lines[0]["reward"] == logged["mine"]["rewards"][0]
