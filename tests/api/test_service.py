"""Every endpoint of a real server: rewards, OpenRLHF, rubrics, keys, health, limits, auth."""

from __future__ import annotations

import concurrent.futures
import json
import signal
import time

import httpx
import pytest

from arbiter.store.db import Store
from tests.api.conftest import Server, StartServer


def wait_in_flight(server: Server, requests: int) -> None:
    """Block until the server has this many requests in flight (read from /metrics)."""
    deadline = time.monotonic() + 20
    with httpx.Client(base_url=server.url) as http:
        while time.monotonic() < deadline:
            for line in http.get("/metrics").text.splitlines():
                if (
                    line.startswith("arbiter_inflight_requests ")
                    and float(line.split()[1]) >= requests
                ):
                    return
            time.sleep(0.02)
    raise AssertionError(f"never saw {requests} request(s) in flight")


def sample(i: int, turns: int = 5, group: str | None = None, **extra: object) -> dict[str, object]:
    row: dict[str, object] = {"id": f"s{i}", "response": "r", "metrics": {"turns": turns}}
    if group is not None:
        row["group_id"] = group
    row.update(extra)
    return row


# -- health -------------------------------------------------------------------


def test_health_ready_and_metrics(server: Server) -> None:
    with server.client(role="") as http:
        assert http.get("/healthz").json() == {"status": "ok"}
        ready = http.get("/readyz").json()
        assert ready["status"] == "ready" and ready["checks"]["store"] == "ok"
        http.post("/v1/rewards", json={})  # a 401, counted
        text = http.get("/metrics").text
    assert 'arbiter_http_requests_total{route="/v1/rewards",status="401"}' in text
    assert "arbiter_inflight_samples" in text


def _metric_series(http: httpx.Client) -> dict[str, float]:
    return {
        line.rsplit(" ", 1)[0]: float(line.rsplit(" ", 1)[1])
        for line in http.get("/metrics").text.splitlines()
        if line and not line.startswith("#")
    }


def test_metrics_histograms_count_every_reward_and_component(server: Server) -> None:
    # The server is shared by the module: compare with what it counted before this
    # batch, so the test holds in any order.
    batch = [sample(i, turns=t) for i, t in enumerate((1, 5, 8, 12, 40))]
    with server.client() as http:
        before = _metric_series(http)
        rewards = http.post(
            "/v1/rewards", json={"rubric": "efficiency-only", "samples": batch}
        ).json()["rewards"]
        after = _metric_series(http)

    def added(name: str) -> float:
        return after[name] - before.get(name, 0.0)

    values = [r["reward"] for r in rewards]
    rubric = 'rubric="efficiency-only"'
    assert added(f"arbiter_reward_count{{{rubric}}}") == 5
    assert added(f"arbiter_reward_sum{{{rubric}}}") == pytest.approx(sum(values))
    # Cumulative buckets, le inclusive: 0.5 counts the values up to and including 0.5.
    below = sum(v <= 0.5 for v in values)
    assert 0 < below < 5  # the batch straddles the bucket edge, so the check can fail
    assert added(f'arbiter_reward_bucket{{le="0.5",{rubric}}}') == below
    assert added(f'arbiter_reward_bucket{{le="+Inf",{rubric}}}') == 5
    component = f'component="efficiency",{rubric}'
    assert added(f"arbiter_component_score_count{{{component}}}") == 5
    assert added('arbiter_grader_duration_seconds_count{grader="efficiency"}') == 5


# -- rewards ------------------------------------------------------------------


def test_rewards_in_input_order_with_provenance(server: Server) -> None:
    batch = [sample(i, turns=i) for i in range(20)]
    with server.client() as http:
        response = http.post("/v1/rewards", json={"rubric": "efficiency-only", "samples": batch})
    assert response.status_code == 200, response.text
    body = response.json()
    assert [r["id"] for r in body["rewards"]] == [f"s{i}" for i in range(20)]
    assert body["rubric"]["name"] == "efficiency-only" and len(body["rubric"]["sha256"]) == 64
    first = body["rewards"][0]
    assert first["graders"] == {"efficiency": "1"}
    assert first["components"]["efficiency"]["score"] == pytest.approx(1.0)
    assert response.headers["x-request-id"]


def test_group_normalization_and_penalties_over_the_batch(server: Server) -> None:
    batch = [sample(0, 2, "a"), sample(1, 8, "a"), sample(2, 5, "b")]
    with server.client() as http:
        body = http.post("/v1/rewards", json={"rubric": "grpo", "samples": batch}).json()
    assert [r["reward"] for r in body["rewards"]] == pytest.approx([1.0, -1.0, 0.0])
    assert [r["raw_reward"] for r in body["rewards"]] == pytest.approx([0.8, 0.2, 0.5])


def test_deadline_returns_what_finished_and_times_out_the_rest(server: Server) -> None:
    with server.client() as http:
        body = http.post(
            "/v1/rewards", json={"rubric": "slow", "samples": [sample(0)], "deadline_s": 0.1}
        ).json()
    reward = body["rewards"][0]
    assert reward["components"]["nap"]["failure"]["kind"] == "timeout"
    assert reward["components"]["fast"]["score"] == pytest.approx(0.5)
    assert reward["reward"] == pytest.approx(0.5)  # renormalized over the component that finished


def test_pinned_versions_and_unknown_rubrics(server: Server) -> None:
    with server.client() as http:
        listing = http.get("/v1/rubrics").json()
        sha = next(r["sha256"] for r in listing if r["name"] == "efficiency-only")
        ok = http.post(
            "/v1/rewards",
            json={
                "rubric": "efficiency-only",
                "rubric_version": 1,
                "rubric_sha256": sha,
                "samples": [sample(0)],
            },
        )
        assert ok.status_code == 200
        missing = http.post("/v1/rewards", json={"rubric": "nope", "samples": [sample(0)]})
        assert missing.status_code == 404 and missing.json()["code"] == "rubric_not_found"
        wrong = http.post(
            "/v1/rewards", json={"rubric": "efficiency-only", "rubric_version": 9, "samples": []}
        )
        assert wrong.status_code == 404 and "no version 9" in wrong.json()["message"]


def test_empty_batch_is_fine(server: Server) -> None:
    with server.client() as http:
        body = http.post("/v1/rewards", json={"rubric": "efficiency-only", "samples": []}).json()
    assert body["rewards"] == []


@pytest.mark.parametrize(
    ("payload", "path"),
    [
        (
            {
                "rubric": "efficiency-only",
                "samples": [{"id": "a", "response": "r", "metrics": {"turns": False}}],
            },
            "samples.0.metrics.turns",
        ),
        ({"rubric": "efficiency-only", "samples": [{"id": "a"}]}, "samples.0.response"),
        ({"rubric": "efficiency-only", "samples": "x"}, "samples"),
        ({"rubric": "efficiency-only", "samples": [], "deadline_s": -1}, "deadline_s"),
        ({"rubric": "efficiency-only", "samples": [], "extra": 1}, "extra"),
    ],
)
def test_validation_errors_name_the_field(
    server: Server, payload: dict[str, object], path: str
) -> None:
    with server.client() as http:
        response = http.post("/v1/rewards", json=payload)
    assert response.status_code == 422
    body = response.json()
    assert body["code"] == "invalid_request"
    assert path in [e["path"] for e in body["errors"]]


def test_invalid_json_is_a_422_not_a_500(server: Server) -> None:
    with server.client() as http:
        response = http.post(
            "/v1/rewards", content=b"{not json", headers={"content-type": "application/json"}
        )
    assert response.status_code == 422 and response.json()["code"] == "invalid_request"
    assert response.json()["errors"][0]["message"].startswith("invalid JSON at line 1, column 2: ")


def test_samples_are_logged_as_sent_and_replay_from_the_log(server: Server) -> None:
    # Key order, an integer beyond 64 bits (orjson refuses it, json takes it) in
    # free-form labels: what is logged is the sample as sent, and it reads back.
    sent = {"response": "r", "id": "big", "labels": {"n": 2**70}, "metrics": {"turns": 3}}
    with server.client() as http:
        response = http.post("/v1/rewards", json={"rubric": "efficiency-only", "samples": [sent]})
    assert response.status_code == 200, response.text
    store = Store(server.db_url)
    try:
        with store.engine.connect() as conn:
            logged = conn.exec_driver_sql(
                "SELECT sample FROM rewards WHERE sample_id = 'big'"
            ).scalar_one()
    finally:
        store.close()
    assert json.loads(logged) == sent
    assert list(json.loads(logged)) == list(sent)


def test_idempotency_key_returns_the_stored_response_unchanged(server: Server) -> None:
    payload = {"rubric": "efficiency-only", "samples": [sample(i) for i in range(5)]}
    headers = {"Idempotency-Key": "step-17-batch-3"}
    with server.client() as http:
        first = http.post("/v1/rewards", json=payload, headers=headers)
        before = Store(server.db_url).count_rewards()
        second = http.post("/v1/rewards", json=payload, headers=headers)
        after = Store(server.db_url).count_rewards()
        # The key belongs to its client: another key grading the same batch is new work.
    with server.client("trainer2") as other:
        third = other.post("/v1/rewards", json=payload, headers=headers)
    assert first.status_code == second.status_code == 200
    assert second.content == first.content
    assert second.headers["idempotent-replayed"] == "true"
    assert "idempotent-replayed" not in first.headers
    assert after == before
    assert third.json()["request_id"] != first.json()["request_id"]


# -- auth ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("role", "method", "path", "payload", "status"),
    [
        ("", "post", "/v1/rewards", {"rubric": "efficiency-only", "samples": []}, 401),
        ("reviewer", "post", "/v1/rewards", {"rubric": "efficiency-only", "samples": []}, 403),
        ("admin", "post", "/v1/rewards", {"rubric": "efficiency-only", "samples": []}, 200),
        ("trainer", "post", "/v1/keys", {"name": "x", "role": "admin"}, 403),
        ("trainer", "get", "/v1/keys", None, 403),
        ("trainer", "post", "/v1/rubrics", {"yaml": "name: x"}, 403),
        ("reviewer", "get", "/v1/rubrics", None, 200),
    ],
)
def test_roles(
    server: Server, role: str, method: str, path: str, payload: object, status: int
) -> None:
    with server.client(role) as http:
        response = http.request(method, path, json=payload)
    assert response.status_code == status, response.text
    if status >= 400:
        assert {"code", "message"} <= response.json().keys()


def test_unknown_key_and_x_api_key_header(server: Server) -> None:
    with httpx.Client(base_url=server.url) as http:
        bad = http.get("/v1/rubrics", headers={"Authorization": "Bearer arb_nope_nope"})
        good = http.get("/v1/rubrics", headers={"X-API-Key": server.keys["reviewer"]})
    assert bad.status_code == 401 and bad.json()["code"] == "unauthorized"
    assert good.status_code == 200


def test_keys_are_never_logged(server: Server) -> None:
    with server.client() as http:
        http.post("/v1/rewards", json={"rubric": "efficiency-only", "samples": [sample(0)]})
    log = server.log.read_text()
    assert all(key not in log for key in server.keys.values())
    lines = [json.loads(line) for line in log.splitlines() if line.startswith("{")]
    access = [line for line in lines if line["logger"] == "arbiter.access"]
    assert access and all("request_id" in line for line in access)


def test_key_lifecycle(server: Server) -> None:
    with server.client("admin") as admin:
        created = admin.post("/v1/keys", json={"name": "ci", "role": "trainer"})
        assert created.status_code == 201
        key = created.json()["key"]
        assert key not in admin.get("/v1/keys").text
        with httpx.Client(base_url=server.url, headers={"X-API-Key": key}) as http:
            assert (
                http.post(
                    "/v1/rewards", json={"rubric": "efficiency-only", "samples": []}
                ).status_code
                == 200
            )
            assert admin.delete(f"/v1/keys/{created.json()['id']}").status_code == 204
            assert (
                http.post(
                    "/v1/rewards", json={"rubric": "efficiency-only", "samples": []}
                ).status_code
                == 401
            )


# -- limits -------------------------------------------------------------------


def test_body_and_batch_limits_give_413(start_server: StartServer) -> None:
    small = start_server(max_body_bytes="4096", max_batch_samples="3")
    with small.client() as http:
        big_body = http.post(
            "/v1/rewards",
            json={"rubric": "efficiency-only", "samples": [sample(0, response="x" * 8000)]},
        )
        assert big_body.status_code == 413 and big_body.json()["code"] == "body_too_large"
        big_batch = http.post(
            "/v1/rewards",
            json={"rubric": "efficiency-only", "samples": [sample(i) for i in range(4)]},
        )
        assert big_batch.status_code == 413 and big_batch.json()["code"] == "batch_too_large"
        chunked = http.post(
            "/v1/rewards",
            content=iter([b'{"rubric": "efficiency-only", "samples": [', b" " * 5000, b"]}"]),
            headers={"content-type": "application/json"},
        )
        assert chunked.status_code == 413


def test_per_key_quota_gives_429_and_does_not_starve_other_keys(start_server: StartServer) -> None:
    busy = start_server(per_key_max_inflight_requests="1")
    payload = {"rubric": "slow", "samples": [sample(0)]}

    def post(role: str) -> httpx.Response:
        with busy.client(role) as http:
            return http.post("/v1/rewards", json=payload)

    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        first = pool.submit(post, "trainer")
        wait_in_flight(busy, 1)  # the first request is now asleep in its grader
        same_key = pool.submit(post, "trainer")
        other_key = pool.submit(post, "trainer2")
        results = first.result(), same_key.result(), other_key.result()
    assert results[0].status_code == 200
    assert results[1].status_code == 429
    assert results[1].json()["code"] == "key_quota" and results[1].headers["retry-after"] == "1"
    assert results[2].status_code == 200


def test_global_bound_gives_429_with_retry_after(start_server: StartServer) -> None:
    bounded = start_server(max_inflight_samples="2", per_key_max_inflight_requests="10")
    payload = {"rubric": "slow", "samples": [sample(0), sample(1)]}
    with concurrent.futures.ThreadPoolExecutor(2) as pool:

        def post() -> httpx.Response:
            with bounded.client() as http:
                return http.post("/v1/rewards", json=payload)

        first = pool.submit(post)
        wait_in_flight(bounded, 1)
        second = pool.submit(post)
        statuses = sorted([first.result().status_code, second.result().status_code])
        assert statuses == [200, 429]
        assert second.result().json()["code"] == "server_busy"


# -- OpenRLHF -----------------------------------------------------------------


def test_openrlhf_exact_shapes(server: Server) -> None:
    prompts = ["<user>Sort a list</user>", "<user>Reverse a string</user>"]
    responses = ["def f(x): return sorted(x)", "def g(s): return s[::-1]"]
    request = {
        "query": [p + r for p, r in zip(prompts, responses, strict=True)],
        "prompts": prompts,
        "labels": ["a", "b"],
    }
    with server.client() as http:
        response = http.post("/get_reward", json=request, params={"abstain": "zero"})
        refused = http.post("/get_reward", json=request)
    assert response.status_code == 200, response.text
    body = response.json()
    assert set(body) == {"rewards", "scores", "extra_logs"}
    assert len(body["rewards"]) == len(body["scores"]) == 2
    # OpenRLHF sends no usage metrics: efficiency-only abstains; 0.0 only because the
    # caller chose it, and counted
    assert body["rewards"] == [0.0, 0.0] and body["extra_logs"]["abstained"] == [1.0, 1.0]
    # The default fallback is to refuse, never a silent zero
    assert refused.status_code == 422 and refused.json()["code"] == "reward_abstained"


UNSCORED_RUBRIC = """\
name: tests-unscored
version: 1
on_missing: abstain
components:
  tests: {grader: unit_tests, config: {timeout_s: 1, fail_as_zero: false}}
"""


def test_a_candidate_that_fails_by_its_own_fault_is_never_paid_its_groups_mean(
    server: Server,
) -> None:
    # fail_as_zero: false leaves a timeout unscored and the reward abstains; a
    # trainer's group_mean fill would then pay a looping candidate like its peers.
    task = json.dumps(
        {"task": {"kind": "python_function", "tests": "assert f(1) == 2", "entry_point": "f"}}
    )
    prompt = "<user>Write f(x) = x + 1</user>"
    responses = ["def f(x):\n    return x + 1\n", "def f(x):\n    while True:\n        pass\n"]
    request = {
        "query": [prompt + r for r in responses],
        "prompts": [prompt] * 2,
        "labels": [task] * 2,
    }
    with server.client("admin") as admin:
        assert admin.post("/v1/rubrics", json={"yaml": UNSCORED_RUBRIC}).status_code in (200, 201)
    with server.client() as http:
        params = {"rubric": "tests-unscored", "abstain": "group_mean"}
        answer = http.post("/get_reward", json=request, params=params, timeout=120)
        rewards = http.post(
            "/v1/rewards",
            json={
                "rubric": "tests-unscored",
                "samples": [
                    {"id": f"s{i}", "prompt": prompt, "response": r, **json.loads(task)}
                    for i, r in enumerate(responses)
                ],
            },
            timeout=120,
        )
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert body["rewards"] == [1.0, 0.0]  # not the group's mean, 1.0
    assert body["extra_logs"]["abstained"] == [0.0, 1.0]
    assert body["extra_logs"]["abstained_candidate"] == [0.0, 1.0]
    assert rewards.status_code == 200, rewards.text
    looped = rewards.json()["rewards"][1]
    assert looped["reward"] is None and looped["abstained_by"] == "candidate"
    assert "timeout" in looped["abstain_reason"]


def test_openrlhf_empty_lists(server: Server) -> None:
    with server.client() as http:
        response = http.post("/get_reward", json={"query": [], "prompts": [], "labels": []})
    assert response.status_code == 200
    assert response.json() == {"rewards": [], "scores": [], "extra_logs": {}}


def test_openrlhf_retry_is_answered_from_the_log(server: Server) -> None:
    request = {"query": ["p: once more"], "prompts": ["p: "], "labels": [None]}
    with server.client() as http:
        params = {"rubric": "efficiency-only", "abstain": "zero"}
        first = http.post("/get_reward", json=request, params=params)
        before = Store(server.db_url).count_rewards()
        retry = http.post("/get_reward", json=request, params=params)
        after = Store(server.db_url).count_rewards()
    assert retry.content == first.content
    assert retry.headers.get("idempotent-replayed") == "true"
    assert after == before


def test_openrlhf_bad_shapes(server: Server) -> None:
    with server.client() as http:
        mismatch = http.post("/get_reward", json={"query": ["a", "b"], "prompts": ["a"]})
        prefix = http.post("/get_reward", json={"query": ["xyz"], "prompts": ["abc"]})
    assert mismatch.status_code == 422 and prefix.status_code == 422
    # A query that shares nothing with its prompt abstains on its own (here: refused)
    assert prefix.json()["code"] == "reward_abstained"
    assert "query[0]" in prefix.json()["message"]


# -- rubrics ------------------------------------------------------------------

NEW_RUBRIC = """\
name: registered
version: 1
components:
  eff: {grader: efficiency, config: {max_turns: 4}}
"""


def test_register_list_and_read_rubrics(server: Server) -> None:
    with server.client("admin") as admin:
        created = admin.post("/v1/rubrics", json={"yaml": NEW_RUBRIC})
        assert created.status_code == 201 and created.json()["created"] is True
        sha = created.json()["rubric"]["sha256"]
        again = admin.post("/v1/rubrics", json={"yaml": "# same content\n" + NEW_RUBRIC})
        assert again.status_code == 200 and again.json()["created"] is False
        clash = admin.post(
            "/v1/rubrics", json={"yaml": NEW_RUBRIC.replace("max_turns: 4", "max_turns: 5")}
        )
        assert clash.status_code == 409 and clash.json()["code"] == "version_exists"
        text = admin.get(f"/v1/rubrics/{sha}").json()
        assert text["text"] == NEW_RUBRIC and text["latest"] is True
        assert admin.get(f"/v1/rubrics/{'0' * 64}").status_code == 404
        assert created.json()["warnings"] == []


def test_registering_a_rubric_answers_its_cautions_with_their_lines(server: Server) -> None:
    text = (
        "name: heavy\n"
        "version: 1\n"
        "components:\n"
        "  a: {grader: efficiency, weight: 0.7, config: {max_turns: 4}}\n"
        "  b: {grader: efficiency, weight: 0.5, config: {max_turns: 8}}\n"
        "clip: [0.0, 1.0]\n"
    )
    with server.client("admin") as admin:
        created = admin.post("/v1/rubrics", json={"yaml": text})
    assert created.status_code == 201, created.text
    (warning,) = created.json()["warnings"]
    assert (warning["line"], warning["path"]) == (3, "components")
    assert warning["message"].startswith("weights sum to 1.2, not 1")
    assert "rewards span [0, 1]" in warning["message"]


PUBLISHED_RUBRIC = """\
name: published
version: 1
components:
  tests:
    grader: unit_tests
    config: &run {timeout_s: 5, hidden_cases: true}
  hidden_tests:
    grader: hidden_tests
    weight: 0.2
    config: *run
on_missing: renormalize
"""


def _lint_set(path, weak: bool) -> None:  # type: ignore[no-untyped-def]
    reference = "def sub(a, b):\n    return a - b\n"
    tests = ["assert sub(5, 3) == 2", "assert sub(1, 4) == -3", "assert sub(0, 0) == 0"]
    if weak:  # tests that only say what the answer is not: NaN passes them
        tests = ["assert not sub(1, 0) > 1", "assert sub(4, 2) != 3"]
    row = {
        "id": "sub",
        "response": f"```python\n{reference}```",
        "task": {"kind": "python_function", "tests": tests, "entry_point": "sub"},
        "labels": {"expected": {"tests_pass": True}},
    }
    path.write_text(json.dumps(row) + "\n")


def test_rubric_publish_lints_the_tasks_first_and_registers(server: Server, tmp_path) -> None:  # type: ignore[no-untyped-def]
    from typer.testing import CliRunner

    from arbiter.cli import app

    rubric = tmp_path / "published.yaml"
    rubric.write_text(PUBLISHED_RUBRIC)
    weak, sound = tmp_path / "weak.jsonl", tmp_path / "sound.jsonl"
    _lint_set(weak, weak=True)
    _lint_set(sound, weak=False)
    publish = ["rubric", "publish", str(rubric), "--url", server.url, "--key", server.keys["admin"]]
    runner = CliRunner()

    refused = runner.invoke(app, [*publish, "--lint", str(weak), "--report", str(tmp_path / "r")])
    assert refused.exit_code == 1, refused.output
    assert "not published" in refused.output and "nan" in refused.output
    assert (tmp_path / "r" / "report.html").exists()
    with server.client("admin") as admin:
        names = {r["name"] for r in admin.get("/v1/rubrics").json()}
    assert "published" not in names  # nothing reached the service

    done = runner.invoke(app, [*publish, "--lint", str(sound)])
    assert done.exit_code == 0, done.output
    assert "0 weak" in done.output and "published  published v1" in done.output
    again = runner.invoke(app, publish)
    assert again.exit_code == 0 and "already there" in again.output
    trainer = runner.invoke(app, [*publish[:-1], server.keys["trainer"]])
    assert trainer.exit_code == 1 and "not published: 403" in trainer.output


def test_invalid_rubric_gets_the_cli_errors(server: Server) -> None:
    bad = NEW_RUBRIC.replace("name: registered", "name: broken").replace("config:", "confg:")
    with server.client("admin") as admin:
        response = admin.post("/v1/rubrics", json={"yaml": bad})
    assert response.status_code == 422
    body = response.json()
    assert body["code"] == "invalid_rubric"
    (issue,) = body["errors"]
    assert (issue["line"], issue["column"], issue["path"]) == (4, 29, "components.eff.confg")
    assert "did you mean 'config'?" in issue["message"]


def test_hostile_rubrics_are_refused_at_once_with_where_and_why(server: Server) -> None:
    # What a busy service must not spend seconds on: a rubric over the loader's size,
    # a line longer than any formula, and a body far larger than any rubric.
    formula = " + ".join(["0.0001 * eff"] * 400)
    huge = NEW_RUBRIC + "x:\n" + "".join("  " * (i + 1) + f"k{i}:\n" for i in range(2_000))
    with server.client("admin") as admin:
        long_line = admin.post("/v1/rubrics", json={"yaml": NEW_RUBRIC + f"# {formula}\n"})
        too_big = admin.post("/v1/rubrics", json={"yaml": huge})
    assert long_line.status_code == 422 and long_line.json()["code"] == "invalid_rubric"
    (issue,) = long_line.json()["errors"]
    assert "the limit is 4,000" in issue["message"] and issue["line"] == NEW_RUBRIC.count("\n") + 1
    assert too_big.status_code == 413 and too_big.json()["code"] == "body_too_large"


def test_rubric_folder_is_watched_and_old_versions_stay_addressable(server: Server) -> None:
    path = server.rubric_dir / "watched.yaml"
    path.write_text(NEW_RUBRIC.replace("registered", "watched"))

    def versions() -> dict[int, str]:
        with server.client() as http:
            return {
                r["version"]: r["sha256"]
                for r in http.get("/v1/rubrics").json()
                if r["name"] == "watched"
            }

    deadline = time.monotonic() + 20
    while 1 not in versions() and time.monotonic() < deadline:
        time.sleep(0.1)
    old = versions()[1]
    path.write_text(NEW_RUBRIC.replace("registered", "watched").replace("version: 1", "version: 2"))
    while 2 not in versions() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert set(versions()) == {1, 2}
    with server.client() as http:
        pinned = http.post(
            "/v1/rewards", json={"rubric": "watched", "rubric_sha256": old, "samples": [sample(0)]}
        )
        latest = http.post("/v1/rewards", json={"rubric": "watched", "samples": [sample(0)]})
    assert pinned.json()["rubric"]["version"] == 1
    assert latest.json()["rubric"]["version"] == 2


def test_invalid_rubric_file_is_reported_and_skipped(server: Server) -> None:
    (server.rubric_dir / "broken.yaml").write_text("name: broken\nversion: 1\ncomponents: {}\n")
    deadline = time.monotonic() + 20
    with server.client(role="") as http:
        while time.monotonic() < deadline:
            checks = http.get("/readyz").json()["checks"]
            if "invalid_rubric_files" in checks:
                break
            time.sleep(0.1)
    assert "broken.yaml" in checks["invalid_rubric_files"]


def test_sigterm_drains_in_flight_requests(start_server: StartServer) -> None:
    draining = start_server()
    payload = {"rubric": "slow", "samples": [sample(0)]}
    with concurrent.futures.ThreadPoolExecutor(1) as pool:

        def post() -> httpx.Response:
            with draining.client() as http:
                return http.post("/v1/rewards", json=payload)

        in_flight = pool.submit(post)
        wait_in_flight(draining, 1)
        assert draining.process is not None
        draining.process.send_signal(signal.SIGTERM)
        response = in_flight.result()
    assert response.status_code == 200
    assert response.json()["rewards"][0]["components"]["nap"]["score"] == 1.0
    # uvicorn re-raises the signal once drained, so the exit status reads "terminated".
    assert draining.process.wait(timeout=30) in (0, -signal.SIGTERM)
    assert Store(draining.db_url).count_rewards() == 1


def test_readyz_reports_graders_in_use(server: Server) -> None:
    with server.client() as http:
        http.post("/v1/rewards", json={"rubric": "efficiency-only", "samples": [sample(0)]})
        checks = http.get("/readyz").json()["checks"]
    assert checks["grader:efficiency"] == "ok"
