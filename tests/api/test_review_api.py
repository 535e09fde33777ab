"""The review API on a real server: sampling on the reward path, leases, labels, agreement."""

from __future__ import annotations

import asyncio
import json
import logging
import time
from typing import Any

import httpx
import pytest

from arbiter.api.review_sampler import ReviewSampler
from arbiter.api.routes import review as review_routes
from arbiter.api.settings import Settings
from arbiter.graders.types import Violation, ViolationType
from arbiter.rubrics.loader import parse_rubric
from arbiter.rubrics.reward import ComponentOutcome, Reward
from arbiter.store.db import Store
from arbiter.store.review import ClaimedItem, ReviewQueue
from tests.api.conftest import Server, StartServer

REVIEWED = """\
name: reviewed
version: 1
components:
  eff: {grader: efficiency, weight: 0.5, config: {max_turns: 10}}
  eff2: {grader: efficiency, weight: 0.5, config: {max_turns: 20}}
review: {sample_rate: 1.0}
"""


@pytest.fixture(scope="module")
def server(start_server: StartServer) -> Server:
    server = start_server()
    (server.rubric_dir / "reviewed.yaml").write_text(REVIEWED)
    # The agreement test gets a rubric of its own: only its own labels count there.
    (server.rubric_dir / "agreed.yaml").write_text(REVIEWED.replace("reviewed", "agreed"))
    (server.rubric_dir / "blinded.yaml").write_text(REVIEWED.replace("reviewed", "blinded"))
    deadline = time.monotonic() + 20
    with server.client() as http:
        while time.monotonic() < deadline:
            names = {r["name"] for r in http.get("/v1/rubrics").json()}
            if {"reviewed", "agreed", "blinded"} <= names:
                return server
            time.sleep(0.1)
    raise AssertionError("the review rubrics were never loaded")


def grade(
    server: Server, prefix: str, turns: list[int], rubric: str = "reviewed"
) -> dict[str, Any]:
    samples = [
        {
            "id": f"{prefix}{i}",
            "prompt": "Write f.",
            "response": f"```python\ndef f():\n    return {i}\n```",
            "metrics": {"turns": t},
        }
        for i, t in enumerate(turns)
    ]
    with server.client() as http:
        response = http.post("/v1/rewards", json={"rubric": rubric, "samples": samples})
    assert response.status_code == 200, response.text
    return {r["id"]: r for r in response.json()["rewards"]}


def claim(http: httpx.Client, rubric: str = "reviewed") -> dict[str, Any] | None:
    response = http.post("/v1/review/claim", json={"rubric": rubric})
    assert response.status_code == 200, response.text
    item: dict[str, Any] | None = response.json()["item"]
    return item


def test_roles(server: Server) -> None:
    with server.client("trainer") as http:
        assert http.post("/v1/review/claim", json={}).status_code == 403
        assert http.get("/v1/review/queue").json()["code"] == "forbidden"
    with server.client("") as http:
        assert http.get("/v1/review/export").status_code == 401
    for role in ("reviewer", "admin"):
        with server.client(role) as http:
            assert http.get("/v1/review/queue").status_code == 200


def test_a_graded_batch_is_queued_blind_and_labelled(server: Server) -> None:
    # A rubric of its own: other tests' items in the shared queue must not count here.
    grade(server, "blind", [2, 8], rubric="blinded")
    grade(server, "none", [2], rubric="efficiency-only")  # samples nothing
    with server.client("reviewer") as http:
        stats = http.get("/v1/review/queue").json()
        assert "efficiency-only" not in stats["rubrics"]
        assert stats["rubrics"]["blinded"]["open"] == 2
        item = claim(http, "blinded")
        assert item is not None and item["sample_id"] == "blind0"
        assert item["components"] == ["eff", "eff2"]
        assert item["sample"]["response"].startswith("```python")
        # Blind: no scores, no violations, no sampling reason anywhere in the item.
        assert item["grading"] is None
        assert "score" not in json.dumps(item) and "uniform" not in json.dumps(item)

        token = item["lease_token"]
        beat = http.post(f"/v1/review/items/{item['id']}/heartbeat", json={"lease_token": token})
        assert (
            beat.status_code == 200 and beat.json()["lease_expires_at"] >= item["lease_expires_at"]
        )
        wrong = http.post(f"/v1/review/items/{item['id']}/heartbeat", json={"lease_token": "x"})
        assert wrong.status_code == 409 and wrong.json()["code"] == "lease_lost"

        for invalid in (
            {"hack_types": ["not_a_hack"]},
            {"overall_score": False},  # not a number, however lax JSON parsing is
            {"overall_score": 1.5},
            {"verdicts": {"eff": "maybe"}},
        ):
            bad = http.post(
                f"/v1/review/items/{item['id']}/labels", json={"lease_token": token, **invalid}
            )
            assert bad.status_code == 422, invalid
        # Found by schemathesis: a lone surrogate or a 90-bit id was a 500 at the driver.
        surrogate = b'{"lease_token": "t", "comment": "\\udb5c"}'
        bad = http.post(
            f"/v1/review/items/{item['id']}/labels",
            content=surrogate,
            headers={"Content-Type": "application/json"},
        )
        assert bad.status_code == 422, bad.text
        huge = http.post(f"/v1/review/items/{10**26}/heartbeat", json={"lease_token": token})
        assert huge.status_code == 422
        label = {
            "lease_token": token,
            "verdicts": {"eff": "pass", "eff2": "fail"},
            "overall_score": 0.75,
            "hack_types": ["hardcoded_output"],
            "comment": "returns a constant",
        }
        stored = http.post(f"/v1/review/items/{item['id']}/labels", json=label)
        assert stored.status_code == 201, stored.text
        again = http.post(f"/v1/review/items/{item['id']}/labels", json=label)
        assert again.status_code == 409

        second = claim(http, "blinded")
        assert second is not None and second["sample_id"] == "blind1"
        skipped = http.post(
            f"/v1/review/items/{second['id']}/release", json={"lease_token": second["lease_token"]}
        )
        assert skipped.status_code == 204

        export = http.get("/v1/review/export", params={"rubric": "blinded"})
    assert export.headers["content-type"].startswith("application/x-ndjson")
    rows = [json.loads(line) for line in export.text.splitlines()]
    mine = [r for r in rows if r["sample_id"] == "blind0"]
    assert len(mine) == 1
    assert mine[0]["verdicts"] == {"eff": "pass", "eff2": "fail"}
    assert mine[0]["hack_types"] == ["hardcoded_output"] and mine[0]["overall_score"] == 0.75
    assert mine[0]["inclusion_probability"] == 1.0 and mine[0]["reason"] == "uniform"
    # The label is in the store itself, not only in the API's answer.
    store = Store(server.db_url)
    try:
        labels = ReviewQueue(store).labels("blinded")
    finally:
        store.close()
    assert any(r["sample_id"] == "blind0" and r["comment"] == "returns a constant" for r in labels)


def test_agreement_needs_fifty_labels_then_reports(server: Server) -> None:
    with server.client("reviewer") as http:
        early = http.get("/v1/review/agreement", params={"rubric": "agreed"}).json()
    assert early["n_labels"] == 0
    assert early["overall"]["spearman"]["status"] == "insufficient_data"

    rewards = grade(server, "agree", [i % 11 for i in range(60)], rubric="agreed")
    with server.client("reviewer") as http:
        while (item := claim(http, "agreed")) is not None:
            reward = rewards[item["sample_id"]]
            # A reviewer who agrees with the graders exactly.
            verdicts = {
                name: "pass" if c["score"] >= 0.5 else "fail"
                for name, c in reward["components"].items()
            }
            response = http.post(
                f"/v1/review/items/{item['id']}/labels",
                json={
                    "lease_token": item["lease_token"],
                    "verdicts": verdicts,
                    "overall_score": reward["raw_reward"],
                },
            )
            assert response.status_code == 201, response.text
        report = http.get("/v1/review/agreement", params={"rubric": "agreed"}).json()
    assert report["n_labels"] == 60
    eff = report["components"]["eff"]["cohen_kappa"]
    assert eff["status"] == "ok" and eff["value"] == pytest.approx(1.0)
    assert eff["ci_low"] <= eff["value"] <= eff["ci_high"]
    assert report["overall"]["spearman"]["value"] == pytest.approx(1.0)
    assert report["overall"]["mae"]["value"] == pytest.approx(0.0)


def test_the_queue_names_the_rubrics_that_send_rewards_for_review(server: Server) -> None:
    with server.client("reviewer") as http:
        stats = http.get("/v1/review/queue").json()
        other = http.get("/v1/review/queue", params={"rubric": "efficiency-only"}).json()
    assert {"reviewed", "agreed", "blinded"} <= set(stats["review_rubrics"])
    assert "efficiency-only" not in stats["review_rubrics"] and stats["hint"] is None
    # Filtered to a rubric without a review section: the hint names it.
    assert other["review_rubrics"] == []
    assert "'efficiency-only'" in other["hint"] and "review:" in other["hint"]


def test_an_empty_queue_says_why_and_a_claim_needs_no_body(start_server: StartServer) -> None:
    # The library's rubrics and the suite's own: none has a review section.
    bare = start_server()
    with bare.client("reviewer") as http:
        stats = http.get("/v1/review/queue").json()
        claimed = http.post("/v1/review/claim")  # no body at all: every field has a default
    assert stats["items"] == 0 and stats["review_rubrics"] == []
    hint = stats["hint"]
    assert hint.startswith("No loaded rubric sends rewards for review")
    for key in ("review:", "sample_rate", "stratify_by", "show_scores", "disagreement"):
        assert key in hint, key
    assert claimed.status_code == 200, claimed.text
    assert claimed.json() == {"item": None}


def test_the_page_is_served_with_the_taxonomy_and_a_strict_policy(server: Server) -> None:
    page = httpx.get(f"{server.url}/review")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assert "default-src 'none'" in page.headers["content-security-policy"]
    assert '"test_tampering"' in page.text and "/*HACK_TYPES*/" not in page.text
    assert "<script src" not in page.text  # nothing fetched from anywhere


# -- the reward path's hook, in process ------------------------------------------------


def reward(i: int, raw: float, flags: tuple[str, ...] = (), hack: bool = False) -> Reward:
    rubric = parse_rubric(REVIEWED)
    violations = (Violation(type=ViolationType.EARLY_EXIT),) if hack else ()
    components = {
        name: ComponentOutcome(
            score=raw,
            weight=0.5,
            required=False,
            grader="efficiency",
            grader_version="1",
            violations=violations if name == "eff" else (),
        )
        for name in ("eff", "eff2")
    }
    return Reward(
        id=f"s{i}",
        reward=raw,
        raw_reward=raw,
        components=components,
        rubric=rubric.identity,
        graders={"efficiency": "1"},
        flags=flags,
    )


def test_the_sampler_follows_the_rubric_and_a_drift_flag(tmp_path) -> None:
    store = Store(f"sqlite:///{tmp_path / 'a.db'}")
    sampler = ReviewSampler(store, Settings())
    low = parse_rubric(REVIEWED.replace("sample_rate: 1.0", "sample_rate: 0.01"))
    assert sampler.policy(low).uniform_rate == 0.01
    assert sampler.policy(low).required_reviews == 1
    plain, flagged = sampler.decide(low, [reward(1, 0.5), reward(1, 0.5, ("drift:eff",))])
    assert plain.inclusion_probability == pytest.approx(0.01)
    assert flagged.inclusion_probability == pytest.approx(0.05)  # boosted 5x
    assert flagged.reason == "uniform+drift_boost"
    targeted = parse_rubric(
        REVIEWED.replace(
            "sample_rate: 1.0", "sample_rate: 0.05, stratify_by: [high_reward_violation]"
        )
    )
    # "High" is the top decile of what this rubric produced: learned from the batches.
    assert not sampler.decide(targeted, [reward(0, 0.99, hack=True)])[0].reason.startswith("high")
    sampler.decide(targeted, [reward(i, i / 200) for i in range(200)])
    hacked, honest = sampler.decide(targeted, [reward(0, 0.99, hack=True), reward(1, 0.99)])
    assert (hacked.reason, hacked.inclusion_probability) == ("high_reward_violation", 0.5)
    assert (honest.reason, honest.inclusion_probability) == ("uniform", 0.05)
    off = parse_rubric(REVIEWED.replace("sample_rate: 1.0", "sample_rate: 0.0"))
    assert not sampler.policy(off).active
    store.close()


def test_a_failing_queue_never_fails_the_batch(tmp_path, caplog) -> None:
    store = Store(f"sqlite:///{tmp_path / 'never-migrated.db'}")  # no tables at all
    sampler = ReviewSampler(store, Settings())
    rubric = parse_rubric(REVIEWED)
    with caplog.at_level(logging.ERROR, logger="arbiter.review"):
        asyncio.run(sampler.offer(rubric, "req", [reward(0, 0.9)]))
    assert "could not queue 1 rewards for review" in caplog.text
    store.close()


def test_grader_scores_are_shown_only_when_configured() -> None:
    record = {
        "reward": 0.9,
        "raw_reward": 0.9,
        "components": {"tests": {"score": 1.0, "violations": [{"type": "early_exit"}]}},
        "penalties": [],
    }
    claimed = ClaimedItem(
        id=1,
        reward_id=1,
        sample_id="s",
        rubric_name="r",
        rubric_sha256="a" * 64,
        inclusion_probability=0.5,
        reason="high_reward_violation",
        required_reviews=1,
        label_count=0,
        lease_token="t",
        lease_expires_at=0.0,
        record=json.dumps(record),
        sample='{"id": "s", "response": "r"}',
    )
    blind = review_routes._item(claimed, None, default_show=False)
    assert blind.grading is None and blind.components == ["tests"] and blind.blind
    assert "high_reward" not in blind.model_dump_json() and "0.9" not in blind.model_dump_json()
    shown = review_routes._item(claimed, None, default_show=True)
    assert shown.grading is not None and not shown.blind
    assert shown.grading["reason"] == "high_reward_violation" and shown.grading["reward"] == 0.9
    assert shown.grading["components"]["tests"]["violations"] == [
        {"type": "early_exit", "detail": "", "line": None, "snippet": None}
    ]


@pytest.mark.parametrize(
    ("chosen", "default", "blind"), [(True, False, False), (False, True, True)]
)
def test_a_rubric_chooses_blind_review_over_the_server_default(
    chosen: bool, default: bool, blind: bool
) -> None:
    rubric = parse_rubric(
        "name: r\nversion: 1\ncomponents:\n"
        "  eff: {grader: efficiency, description: Fast enough?, config: {max_turns: 10}}\n"
        f"review: {{sample_rate: 1.0, show_scores: {str(chosen).lower()}}}\n"
    )
    record = {"reward": 0.9, "raw_reward": 0.9, "components": {"eff": {"score": 0.9}}}
    claimed = ClaimedItem(
        id=1,
        reward_id=1,
        sample_id="s",
        rubric_name="r",
        rubric_sha256=rubric.sha256,
        inclusion_probability=1.0,
        reason="uniform",
        required_reviews=1,
        label_count=0,
        lease_token="t",
        lease_expires_at=0.0,
        record=json.dumps(record),
        sample='{"id": "s", "response": "r"}',
    )
    item = review_routes._item(claimed, rubric, default_show=default)
    assert item.blind is blind and (item.grading is None) is blind
    # Guidance is the rubric's, blind or not: its description and its budget.
    assert item.guidance["eff"].startswith("Fast enough? Pass:")
    assert "turns at most 10" in item.guidance["eff"]
