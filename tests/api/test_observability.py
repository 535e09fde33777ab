"""What on-call reads: /metrics of a live server, the Grafana dashboard and the alert rules.

Issue 27: ``arbiter_rejections_total`` stayed empty after 9 refused requests,
drift alerts had no ``component`` label and no incident gauge, and no dashboard
or alert rules shipped. Here a real server takes a load that grades, abstains,
fails a grader, is refused, drifts and queues items for review; a real
Prometheus (Debian's ``prometheus``, installed by ``make setup``) scrapes it, and
every query of ``deploy/grafana/arbiter.json`` must return a number. The alert
rules must pass ``promtool check rules`` and evaluate there too.
"""

from __future__ import annotations

import json
import math
import random
import shutil
import subprocess
import threading
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.api.conftest import REPO, Server, StartServer, free_port
from tests.strictness import unavailable

DASHBOARD = REPO / "deploy" / "grafana" / "arbiter.json"
ALERTS = REPO / "deploy" / "prometheus" / "alerts.yml"
#: What Grafana puts for its own variables when it runs a panel's query.
GRAFANA_VARIABLES = {"$__rate_interval": "1m"}

OBSERVED = """\
name: observed
version: 1
components:
  eff:
    grader: efficiency
    required: true
    config: {max_turns: {limit: 40}, missing_metric: fail}
drift: {window: 20, warmup_windows: 1}
review: {sample_rate: 0.05}
"""
MAX_BODY_BYTES = 200_000


def batch(rng: random.Random, start: int, mean_turns: float) -> dict[str, Any]:
    samples: list[dict[str, Any]] = [
        {
            "id": f"o{start + i}",
            "response": "r" * rng.randint(50, 150),
            "metrics": {"turns": max(0, min(40, round(rng.gauss(mean_turns, 3))))},
        }
        for i in range(20)
    ]
    return {"rubric": "observed", "samples": samples}


def exposition(http: httpx.Client) -> dict[str, float]:
    """Return /metrics as series (name with labels, as printed) -> value."""
    out = {}
    for line in http.get("/metrics").text.splitlines():
        if line and not line.startswith("#"):
            series, value = line.rsplit(" ", 1)
            out[series] = float(value)
    return out


def rejected(metrics: dict[str, float], reason: str) -> float:
    return metrics.get(f'arbiter_rejections_total{{reason="{reason}"}}', -1.0)


@pytest.fixture(scope="module")
def server(start_server: StartServer) -> Server:
    server = start_server(rubrics={"observed": OBSERVED}, max_body_bytes=str(MAX_BODY_BYTES))
    deadline = time.monotonic() + 20
    with server.client() as http:
        while not any(r["name"] == "observed" for r in http.get("/v1/rubrics").json()):
            assert time.monotonic() < deadline, "the rubric file was never loaded"
            time.sleep(0.05)
    return server


def test_every_refused_grading_request_counts_by_reason(server: Server) -> None:
    with server.client() as http:
        before = exposition(http)
        # Exported at 0 before anything is refused: "none" is not "not exported".
        assert rejected(before, "key_quota") == 0
        with server.client("") as anonymous:
            assert (
                anonymous.post("/v1/rewards", json=batch(random.Random(0), 0, 5)).status_code == 401
            )
        assert http.post("/v1/rewards", json={"rubric": "observed"}).status_code == 422
        assert http.post("/v1/rewards", json={"rubric": "nope", "samples": []}).status_code in (
            404,
            422,
        )
        big = {"rubric": "observed", "samples": [{"id": "x", "response": "y" * MAX_BODY_BYTES}]}
        assert http.post("/v1/rewards", json=big).status_code == 413
        assert 400 <= http.post("/get_reward", content=b"{not json").status_code < 500
        # Not a grading request: not a rejection of one.
        assert http.get("/v1/rubrics/" + "0" * 64).status_code == 404
        after = exposition(http)
    assert rejected(after, "unauthorized") == rejected(before, "unauthorized") + 1
    assert rejected(after, "body_too_large") == rejected(before, "body_too_large") + 1
    refused = sum(v for k, v in after.items() if k.startswith("arbiter_rejections_total{"))
    counted = sum(v for k, v in before.items() if k.startswith("arbiter_rejections_total{"))
    assert refused - counted == 5, {k: v for k, v in after.items() if "rejections" in k}


@pytest.fixture(scope="module")
def prometheus(server: Server, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    binary = shutil.which("prometheus")
    if binary is None:
        unavailable("no prometheus: make setup installs Debian's (apt-get install prometheus)")
    root = tmp_path_factory.mktemp("prometheus")
    target = server.url.removeprefix("http://")
    (root / "prometheus.yml").write_text(
        "global: {scrape_interval: 1s, evaluation_interval: 1s}\n"
        f"rule_files: [{json.dumps(str(ALERTS))}]\n"
        f"scrape_configs:\n  - job_name: arbiter\n    static_configs: [{{targets: ['{target}']}}]\n"
    )
    port = free_port()
    with (root / "prometheus.log").open("wb") as log:
        process = subprocess.Popen(
            [
                binary,
                f"--config.file={root / 'prometheus.yml'}",
                f"--storage.tsdb.path={root / 'data'}",
                f"--web.listen-address=127.0.0.1:{port}",
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(f"{url}/-/ready", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert process.poll() is None, (root / "prometheus.log").read_text()[-3000:]
            assert time.monotonic() < deadline, "prometheus never became ready"
            time.sleep(0.2)
        yield url
    finally:
        process.terminate()
        process.wait(timeout=30)


def query(prometheus: str, expr: str) -> list[dict[str, Any]]:
    answer = httpx.get(f"{prometheus}/api/v1/query", params={"query": expr}, timeout=10).json()
    assert answer["status"] == "success", (expr, answer)
    result: list[dict[str, Any]] = answer["data"]["result"]
    return result


def dashboard_queries() -> list[tuple[str, str]]:
    board = json.loads(DASHBOARD.read_text())
    queries = []
    for panel in board["panels"]:
        for target in panel.get("targets", []):
            expr = target["expr"]
            for variable, value in GRAFANA_VARIABLES.items():
                expr = expr.replace(variable, value)
            queries.append((panel["title"], expr))
    return queries


def numbers(result: list[dict[str, Any]]) -> list[float]:
    return [v for r in result if not math.isnan(v := float(r["value"][1]))]


def test_every_dashboard_query_returns_data_under_load(server: Server, prometheus: str) -> None:
    queries = dashboard_queries()
    assert len(queries) >= 15
    used = " ".join(expr for _, expr in queries)
    for metric in (
        "arbiter_reward",
        "arbiter_component_score",
        "arbiter_grader_failures_total",
        "arbiter_http_request_duration_seconds",
        "arbiter_admission_utilization",
        "arbiter_rejections_total",
        "arbiter_drift_open_alerts",
        "arbiter_drift_incident_open",
        "arbiter_review_queue_items",
    ):
        assert metric in used, f"the dashboard has no panel over {metric}"

    rng = random.Random(3)
    with server.client() as http:
        for b in range(15):  # warm-up and reference around 20 turns
            assert http.post("/v1/rewards", json=batch(rng, 20 * b, 20.0)).status_code == 200
        # A required component without its metric: the grader fails, the reward abstains.
        missing = {"rubric": "observed", "samples": [{"id": "no-metrics", "response": "r"}]}
        abstained = http.post("/v1/rewards", json=missing).json()["rewards"][0]
        assert abstained["reward"] is None
        drifted = False
        for b in range(15, 45):  # the policy shifts: drift opens an incident
            rewards = http.post("/v1/rewards", json=batch(rng, 20 * b, 8.0)).json()["rewards"]
            drifted = any(f.startswith("drift:") for r in rewards for f in r["flags"])
            if drifted:
                break
        assert drifted, "the shift was never flagged"
        assert http.post("/v1/rewards", json={"rubric": "observed"}).status_code == 422
        metrics = exposition(http)
    assert any(
        k.startswith("arbiter_drift_open_alerts{") and 'component="eff"' in k and v >= 1
        for k, v in metrics.items()
    ), "no open alert of component eff in /metrics"
    assert metrics['arbiter_drift_incident_open{rubric="observed"}'] == 1

    # The load goes on while Prometheus scrapes (a rate needs two scrapes in its
    # range): every query must return a number, and grading must show as a rate
    # above zero. Waiting for that is bounded; the assertion is on what it returns.
    stop = threading.Event()

    def keep_grading() -> None:
        with server.client() as http:
            b = 1000
            while not stop.is_set():
                http.post("/v1/rewards", json=batch(rng, 20 * b, 8.0))
                http.post("/v1/rewards", json={"rubric": "observed"})  # refused: 422
                b += 1

    load = threading.Thread(target=keep_grading, daemon=True)
    load.start()
    try:
        deadline = time.monotonic() + 90
        while True:
            empty = [
                (title, expr) for title, expr in queries if not numbers(query(prometheus, expr))
            ]
            graded = numbers(query(prometheus, "sum(rate(arbiter_samples_total[1m]))"))
            if (not empty and graded and graded[0] > 0) or time.monotonic() > deadline:
                break
            time.sleep(1)
    finally:
        stop.set()
        load.join(timeout=60)
    assert empty == [], f"dashboard queries without data: {empty}"
    assert graded and graded[0] > 0
    incident = numbers(query(prometheus, 'max(arbiter_drift_incident_open{rubric="observed"})'))
    assert incident == [1.0]


def test_the_alert_rules_check_and_evaluate(prometheus: str) -> None:
    promtool = shutil.which("promtool")
    if promtool is None:
        unavailable("no promtool: make setup installs Debian's prometheus")
    checked = subprocess.run(
        [promtool, "check", "rules", str(ALERTS)], capture_output=True, text=True, check=False
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "SUCCESS: 6 rules found" in checked.stdout + checked.stderr
    # Loaded by the Prometheus that scrapes the live server, every rule evaluates.
    deadline = time.monotonic() + 30
    while True:
        groups = httpx.get(f"{prometheus}/api/v1/rules", timeout=10).json()["data"]["groups"]
        rules = [rule for group in groups for rule in group["rules"]]
        if rules and all(r.get("lastEvaluation", "").startswith("20") for r in rules):
            break
        assert time.monotonic() < deadline, rules
        time.sleep(0.5)
    assert {r["name"] for r in rules} == {
        "ArbiterDriftIncidentOpen",
        "ArbiterCanaryPassed",
        "ArbiterGraderFailureRate",
        "ArbiterStoreWritesFailing",
        "ArbiterNotReady",
        "ArbiterDown",
    }
    assert all(r["health"] == "ok" for r in rules), [(r["name"], r.get("lastError")) for r in rules]
