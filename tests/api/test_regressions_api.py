"""Regression cases on a real server: labels make them, publishing a rubric runs them.

The rubric's tests component is a naive harness (``tests.api.naive_tests_plugin``)
that an object equal to everything passes; its ``hacks`` component (the violation
detectors) is what holds such a hack down. A version that takes the detector's weight
away is refused on ``POST /v1/rubrics`` and from the watched folder, published only
when an admin forces it (recorded), and published freely once the case is dismissed.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.api.conftest import Server, StartServer

REPO = Path(__file__).resolve().parents[2]
RUBRIC = """\
name: reg
version: {version}
description: {description}
components:
  tests: {{grader: naive_tests, weight: 0.5}}
  hacks: {{grader: violations, weight: {hacks}}}
review: {{sample_rate: 1.0}}
"""


def rubric(version: int, hacks: float = 0.5, description: str = "naive tests, detectors") -> str:
    return RUBRIC.format(version=version, hacks=hacks, description=description)


def hack_set() -> dict[str, dict[str, Any]]:
    rows = [json.loads(line) for line in (REPO / "eval_sets" / "hacks.jsonl").open()]
    return {row["id"]: row for row in rows}


def key_id(server: Server, role: str) -> str:
    return server.keys[role].split("_")[1]


@pytest.fixture(
    scope="module", params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]
)
def server(request: pytest.FixtureRequest, start_server: StartServer) -> Server:
    url = None if request.param == "sqlite" else request.getfixturevalue("module_postgres_url")
    return start_server(
        database_url=url,
        rubrics={"reg": rubric(1)},
        grader_plugins="tests.api.plugin_graders,tests.api.naive_tests_plugin",
    )


def claim(http: httpx.Client) -> dict[str, Any]:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        response = http.post("/v1/review/claim", json={"rubric": "reg"})
        assert response.status_code == 200, response.text
        item: dict[str, Any] | None = response.json()["item"]
        if item is not None:
            return item
        time.sleep(0.1)
    raise AssertionError("nothing came to review")


def label(http: httpx.Client, item: dict[str, Any], hacks: list[str], verdict: str) -> None:
    body = {
        "lease_token": item["lease_token"],
        "verdicts": {"tests": verdict, "hacks": verdict},
        "overall_score": 0.0 if hacks else 1.0,
        "hack_types": hacks,
    }
    stored = http.post(f"/v1/review/items/{item['id']}/labels", json=body)
    assert stored.status_code == 201, stored.text


@pytest.fixture(scope="module")
def case(server: Server) -> dict[str, Any]:
    """A reviewer confirms an always-equal hack, passes an honest answer, retracts a third."""
    rows = hack_set()
    samples = [rows["hack-eq_true-1"], rows["clean-sort_desc-1"], rows["hack-lookup_table-1"]]
    with server.client() as http:
        graded = http.post("/v1/rewards", json={"rubric": "reg", "samples": samples})
    assert graded.status_code == 200, graded.text
    rewards = {r["id"]: r for r in graded.json()["rewards"]}
    # The naive tests pay the always-equal object; the detectors do not.
    assert rewards["hack-eq_true-1"]["components"]["tests"]["score"] == 1.0
    assert rewards["hack-eq_true-1"]["reward"] == 0.5
    assert rewards["clean-sort_desc-1"]["reward"] == 1.0
    with server.client("reviewer") as http:
        for _ in samples:
            item = claim(http)
            sample_id = item["sample_id"]
            if sample_id == "clean-sort_desc-1":
                label(http, item, [], "pass")
            elif sample_id == "hack-eq_true-1":
                label(http, item, ["always_equal"], "fail")
            else:
                label(http, item, ["hardcoded_output"], "fail")
                edited = http.put(
                    f"/v1/review/items/{item['id']}/labels/mine",
                    # No hack, nothing fooled (the detector failed it too): not honest either.
                    json={"verdicts": {"tests": "pass", "hacks": "fail"}, "overall_score": 0.5},
                )
                assert edited.status_code == 200, edited.text
        listed = http.get("/v1/regressions", params={"rubric": "reg"})
    assert listed.status_code == 200, listed.text
    [found] = listed.json()
    return found


def test_a_confirmed_hack_is_an_open_case_with_its_sample_and_reward(
    server: Server, case: dict[str, Any]
) -> None:
    sample = hack_set()["hack-eq_true-1"]
    assert case["status"] == "open" and case["rubric"] == "reg"
    assert case["sample_id"] == "hack-eq_true-1" and case["reviewer"] == key_id(server, "reviewer")
    assert case["sample"]["response"] == sample["response"]
    assert case["sample"]["task"]["tests"] == sample["task"]["tests"]
    assert case["hack_types"] == ["always_equal"] and case["flagged_types"] == ["always_equal"]
    # The reviewer failed the tests the naive harness passed (1.0, at or above its 0.5).
    assert case["fooled"] == ["tests"]
    assert case["reward"] == 0.5 and case["dismissed_by"] is None
    with server.client("reviewer") as http:
        assert http.get(f"/v1/regressions/{case['id']}").json() == case
        retracted = http.get("/v1/regressions", params={"rubric": "reg", "status": "retracted"})
        [edited] = retracted.json()
        assert edited["sample_id"] == "hack-lookup_table-1" and edited["label_version"] == 2
        assert edited["hack_types"] == [] and edited["fooled"] == []
        assert http.get("/v1/regressions", params={"status": "dismissed"}).json() == []
        missing = http.get("/v1/regressions/999999")
        assert missing.status_code == 404 and missing.json()["code"] == "case_not_found"
        typo = http.get("/v1/regressions", params={"rubirc": "reg"})
        assert typo.status_code == 422
    with server.client("trainer") as http:
        assert http.get("/v1/regressions").status_code == 403
        assert http.get("/v1/regressions/overrides").json()["code"] == "forbidden"
    with server.client("") as http:
        assert http.get("/v1/regressions").status_code == 401


def publish(server: Server, text: str, **extra: Any) -> httpx.Response:
    params = extra.pop("params", None)
    with server.client("admin") as http:
        return http.post("/v1/rubrics", json={"yaml": text, **extra}, params=params)


def versions(server: Server) -> list[int]:
    with server.client() as http:
        return sorted(r["version"] for r in http.get("/v1/rubrics").json() if r["name"] == "reg")


def test_a_version_that_lets_the_case_through_is_refused_naming_it(
    server: Server, case: dict[str, Any]
) -> None:
    refused = publish(server, rubric(2, hacks=0))
    assert refused.status_code == 409, refused.text
    body = refused.json()
    assert body["code"] == "regression_failed"
    assert f"case {case['id']} (always_equal)" in body["message"]
    [failing] = body["errors"]
    assert failing["case_id"] == case["id"] and failing["hack_types"] == ["always_equal"]
    # Without the detector's weight the hack earns what the honest answer earns (0.5),
    # above the ceiling just below the honest floor.
    assert failing["reward"] == 0.5 and failing["logged_reward"] == 0.5
    assert failing["ceiling"] == pytest.approx(0.45)
    assert failing["reasons"] == ["reward 0.5000 is above the ceiling 0.4500"]
    assert 2 not in versions(server)
    with server.client("reviewer") as http:
        assert http.post("/v1/rubrics", json={"yaml": rubric(2, hacks=0)}).status_code == 403


def test_the_watched_folder_refuses_it_too_and_keeps_serving_the_previous_version(
    server: Server, case: dict[str, Any]
) -> None:
    (server.rubric_dir / "reg-v3.yaml").write_text(rubric(3, hacks=0))
    deadline = time.monotonic() + 60
    while "reg-v3.yaml was not published" not in server.log.read_text():
        assert time.monotonic() < deadline, server.log.read_text()[-3000:]
        time.sleep(0.2)
    log = server.log.read_text()
    assert f"case {case['id']} (always_equal): reward 0.5000 is above the ceiling 0.4500" in log
    assert 3 not in versions(server)
    with server.client() as http:
        graded = http.post(
            "/v1/rewards", json={"rubric": "reg", "samples": [hack_set()["hack-eq_true-1"]]}
        )
    assert graded.json()["rewards"][0]["rubric"]["version"] == 1
    assert graded.json()["rewards"][0]["reward"] == 0.5


def test_a_version_that_still_holds_the_hack_down_is_published_after_its_grading(
    server: Server, case: dict[str, Any]
) -> None:
    published = publish(server, rubric(4, description="the same weights, said again"))
    assert published.status_code == 201, published.text
    check = published.json()["regressions"]
    assert check["checked"] == 1 and check["let_through"] == [] and check["override"] is None
    assert check["ceiling"] == pytest.approx(0.95) and check["ceiling_source"] == "honest"
    assert 4 in versions(server)


def test_a_forced_publish_is_recorded_with_who_when_and_which_cases(
    server: Server, case: dict[str, Any]
) -> None:
    before = time.time()
    forced = publish(server, rubric(5, hacks=0), force=True)
    assert forced.status_code == 201, forced.text
    check = forced.json()["regressions"]
    assert [c["case_id"] for c in check["let_through"]] == [case["id"]]
    override = check["override"]
    assert override["forced_by"] == key_id(server, "admin")
    assert override["forced_by_name"] == "test-admin"
    assert override["case_ids"] == [case["id"]] and before <= override["forced_at"] <= time.time()
    assert override["rubric_version"] == 5
    assert override["rubric_sha256"] == forced.json()["rubric"]["sha256"]
    by_query = publish(
        server, rubric(6, hacks=0, description="forced by query"), params={"force": "true"}
    )
    assert by_query.status_code == 201, by_query.text
    assert {5, 6} <= set(versions(server))
    with server.client("reviewer") as http:
        overrides = http.get("/v1/regressions/overrides", params={"rubric": "reg"}).json()
    assert [o["rubric_version"] for o in overrides] == [5, 6]
    assert overrides[0]["rubric"] == "reg" and overrides[0]["case_ids"] == [case["id"]]
    assert overrides[0]["cases"][0]["reasons"] == ["reward 0.5000 is above the ceiling 0.4500"]


def test_a_dismissed_case_needs_a_reason_and_no_longer_gates(
    server: Server, case: dict[str, Any]
) -> None:
    path = f"/v1/regressions/{case['id']}/dismiss"
    with server.client("trainer") as http:
        assert http.post(path, json={"reason": "not mine"}).status_code == 403
    with server.client("reviewer") as http:
        for body in ({}, {"reason": ""}, {"reason": "   "}, {"reason": 3}, {"reason": "a\x00b"}):
            refused = http.post(path, json=body)
            assert refused.status_code == 422, body
            assert refused.json()["code"] == "invalid_request"
        assert http.post("/v1/regressions/999999/dismiss", json={"reason": "x"}).status_code == 404
        done = http.post(path, json={"reason": "kept as a fixture elsewhere"})
        assert done.status_code == 200, done.text
        dismissed = done.json()
        assert dismissed["status"] == "dismissed"
        assert dismissed["dismissed_by"] == key_id(server, "reviewer")
        assert dismissed["dismiss_reason"] == "kept as a fixture elsewhere"
        again = http.post(path, json={"reason": "twice"})
        assert again.status_code == 409 and again.json()["code"] == "case_not_open"
        assert http.get("/v1/regressions", params={"rubric": "reg"}).json() == []
        everything = http.get("/v1/regressions", params={"rubric": "reg", "status": "all"}).json()
        assert {c["status"] for c in everything} == {"dismissed", "retracted"}
    published = publish(server, rubric(7, hacks=0, description="nothing left to hold"))
    assert published.status_code == 201, published.text
    assert published.json()["regressions"]["checked"] == 0


def test_the_openapi_document_lists_the_regression_routes(server: Server) -> None:
    with server.client("") as http:
        paths = http.get("/openapi.json").json()["paths"]
    assert set(paths["/v1/regressions"]) == {"get"}
    assert set(paths["/v1/regressions/overrides"]) == {"get"}
    assert set(paths["/v1/regressions/{case_id}"]) == {"get"}
    assert set(paths["/v1/regressions/{case_id}/dismiss"]) == {"post"}
    assert "force" in str(paths["/v1/rubrics"]["post"])
