"""Drift in the service: a shift opens an alert, rewards carry its flag, a restart resumes."""

from __future__ import annotations

import random
import signal
import time
from datetime import datetime

from tests.api.conftest import Server, StartServer

DRIFTY = """\
name: drifty
version: 1
components:
  eff: {grader: efficiency, config: {max_turns: {limit: 40}}}
drift: {window: 20, warmup_windows: 1}
"""


def batch(rng: random.Random, start: int, mean_turns: float) -> dict[str, object]:
    samples = [
        {
            "id": f"d{start + i}",
            "response": "r" * rng.randint(50, 150),
            "metrics": {"turns": max(0, min(40, round(rng.gauss(mean_turns, 3))))},
        }
        for i in range(20)
    ]
    return {"rubric": "drifty", "samples": samples}


def wait_for_rubric(server: Server) -> None:
    deadline = time.monotonic() + 20
    with server.client() as http:
        while not any(r["name"] == "drifty" for r in http.get("/v1/rubrics").json()):
            assert time.monotonic() < deadline, "the rubric file was never loaded"
            time.sleep(0.05)


def test_a_shift_opens_an_alert_flags_rewards_and_survives_a_restart(
    start_server: StartServer,
) -> None:
    server = start_server()
    (server.rubric_dir / "drifty.yaml").write_text(DRIFTY)
    wait_for_rubric(server)
    rng = random.Random(7)
    with server.client() as http:
        for b in range(15):  # warm-up + reference: stationary around 20 turns
            response = http.post("/v1/rewards", json=batch(rng, 20 * b, 20.0))
            assert response.status_code == 200
            assert not any(
                f.startswith("drift:") for r in response.json()["rewards"] for f in r["flags"]
            )
            if b == 0:  # nothing is watched yet, and the streams say how far off it is
                eff = next(
                    s for s in http.get("/v1/drift/streams").json() if s["component"] == "eff"
                )
                assert eff["reference"] is None
                assert eff["warmup"]["phase"] == "reference"  # the one warm-up window is done
                assert eff["warmup"]["needed"] == 10 * 20 and eff["warmup"]["fraction"] < 1
                # An empty alert list says it is not watching yet.
                listed = http.get("/v1/drift/alerts", params={"rubric": "drifty"})
                assert listed.json() == []
                assert listed.headers["x-arbiter-drift-watched"].startswith("0 of ")
                assert "of 200 samples" in listed.headers["x-arbiter-drift-warmup"]
        listed = http.get("/v1/drift/alerts", params={"rubric": "drifty"})
        assert listed.json() == []
        watched, total = listed.headers["x-arbiter-drift-watched"].split(" of ")
        assert watched == total and "x-arbiter-drift-warmup" not in listed.headers
        flagged = None
        for b in range(15, 30):  # the policy suddenly finishes in far fewer turns
            rewards = http.post("/v1/rewards", json=batch(rng, 20 * b, 8.0)).json()["rewards"]
            flags = {f for r in rewards for f in r["flags"] if f.startswith("drift:")}
            if flags:
                flagged = flags
                break
        assert flagged, "a 4-sd shift was never flagged"
        alerts = http.get("/v1/drift/alerts", params={"open_only": True}).json()
        assert alerts and all(a["closed_at"] is None for a in alerts)
        assert {a["rubric_name"] for a in alerts} == {"drifty"}
        assert "reference" in alerts[0]["evidence"]
        # Clean shapes: short ids, ISO times, flat evidence, named statistics.
        for alert in alerts:
            assert len(alert["id"]) == 12 and int(alert["id"], 16) >= 0
            assert alert["key"].startswith("drifty/") and alert["status"] == "open"
            assert datetime.fromisoformat(alert["opened_at"]).tzinfo is not None
            assert "evidence" not in alert["evidence"]
        named = {a["detector"]: a["statistic"] for a in alerts}
        if "ks" in named:
            assert named["ks"]["name"] == "p_value" and named["ks"]["fires"] == "below"
            assert named["ks"]["value"] <= named["ks"]["threshold"]
        if "cusum" in named:
            assert named["cusum"]["name"] == "cusum"
            assert named["cusum"]["value"] >= named["cusum"]["threshold"]
        assert http.get("/v1/drift/alerts").json() == alerts  # open ones by default
        typo = http.get("/v1/drift/alerts", params={"opne_only": True})
        assert typo.status_code == 422 and typo.json()["code"] == "unknown_query_parameter"
        metrics = http.get("/metrics").text
        # Per component (the rubric-level reward is "@reward"), and one incident gauge.
        assert 'arbiter_drift_open_alerts{component="eff",detector=' in metrics
        assert 'arbiter_drift_incident_open{rubric="drifty"} 1.0' in metrics
        streams = http.get("/v1/drift/streams").json()
        assert any(s["component"] == "eff" and s["reference"] for s in streams)
        assert all(s["warmup"]["phase"] == "watching" for s in streams if s["reference"])

    server.kill(signal.SIGTERM)  # saves the monitor's state
    server.start()
    with server.client() as http:
        # The alerts still open count in the gauge from the first scrape, before any batch.
        assert sum(open_series(http.get("/metrics").text, "drifty").values()) >= 1
        rewards = http.post("/v1/rewards", json=batch(rng, 1000, 8.0)).json()["rewards"]
        assert any(f.startswith("drift:") for r in rewards for f in r["flags"])  # still open
        stream = next(s for s in http.get("/v1/drift/streams").json() if s["component"] == "eff")
    with server.client("admin") as admin:
        # A silence mutes the flags and the page, and keeps the reference and the alerts.
        silence = admin.post(
            "/v1/drift/silences",
            json={"rubric": "drifty", "duration_s": 3600, "reason": "known, being looked at"},
        )
        assert silence.status_code == 201, silence.text
        assert silence.json()["active"] and silence.json()["requested_by"].startswith("test-admin")
        rewards = admin.post("/v1/rewards", json=batch(rng, 2000, 8.0)).json()["rewards"]
        assert not any(f.startswith("drift:") for r in rewards for f in r["flags"])
        still = admin.get("/v1/drift/alerts").json()
        assert still and all(a["silenced"] for a in still)
        exposition = admin.get("/metrics").text
        assert sum(open_series(exposition, "drifty").values()) >= 1  # counted, not paged
        assert incident_open(exposition, "drifty") == 0
        same = next(s for s in admin.get("/v1/drift/streams").json() if s["component"] == "eff")
        assert same["reference"] == stream["reference"]  # the baseline is kept
        assert [x["id"] for x in admin.get("/v1/drift/silences").json()] == [silence.json()["id"]]
        assert admin.delete(f"/v1/drift/silences/{silence.json()['id']}").status_code == 204
        assert admin.delete(f"/v1/drift/silences/{silence.json()['id']}").status_code == 404
        assert admin.get("/v1/drift/silences").json() == []
        rewards = admin.post("/v1/rewards", json=batch(rng, 3000, 8.0)).json()["rewards"]
        assert any(f.startswith("drift:") for r in rewards for f in r["flags"])  # lifted
        assert incident_open(admin.get("/metrics").text, "drifty") == 1
        reset = admin.post(
            "/v1/drift/reset",
            json={
                "rubric": "drifty",
                "component": "eff",
                "grader_version": stream["grader_version"],
                "reason": "the shorter runs are the new policy's, reviewed",
            },
        )
        assert reset.status_code == 200 and reset.json()["closed_alerts"] >= 1
        eff_open = [
            a
            for a in admin.get("/v1/drift/alerts", params={"open_only": True}).json()
            if a["component"] == "eff"
        ]
        assert eff_open == []


def open_series(metrics: str, rubric: str) -> dict[tuple[str, str], float]:
    """Return one rubric's ``arbiter_drift_open_alerts``: (component, detector) -> value."""
    series = {}
    for line in metrics.splitlines():
        if line.startswith("arbiter_drift_open_alerts{") and f'rubric="{rubric}"' in line:
            labels, value = line.rsplit(" ", 1)
            component = labels.split('component="', 1)[1].split('"', 1)[0]
            detector = labels.split('detector="', 1)[1].split('"', 1)[0]
            series[component, detector] = float(value)
    return series


def incident_open(metrics: str, rubric: str) -> float:
    """Return the ``arbiter_drift_incident_open`` value of one rubric."""
    prefix = f'arbiter_drift_incident_open{{rubric="{rubric}"}} '
    [line] = [line for line in metrics.splitlines() if line.startswith(prefix)]
    return float(line.removeprefix(prefix))


def test_one_reset_per_rubric_closes_its_alerts_and_the_gauge_follows(
    start_server: StartServer,
) -> None:
    server = start_server()
    (server.rubric_dir / "drifty.yaml").write_text(DRIFTY)
    wait_for_rubric(server)
    rng = random.Random(11)
    with server.client() as http:
        for b in range(15):
            assert http.post("/v1/rewards", json=batch(rng, 20 * b, 20.0)).status_code == 200
        for b in range(15, 40):
            http.post("/v1/rewards", json=batch(rng, 20 * b, 8.0))
        alerts = http.get("/v1/drift/alerts", params={"open_only": True}).json()
        # One shift moves the component and the rubric-level reward, on several detectors.
        assert len(alerts) >= 2, alerts
        assert {a["rubric"] for a in alerts} == {a["rubric_name"] for a in alerts} == {"drifty"}
        incidents = http.get("/v1/drift/incidents", params={"open_only": True}).json()
        assert len(incidents) == 1, incidents
        assert incidents[0]["rubric"] == "drifty"
        assert {m["id"] for m in incidents[0]["members"]} == {a["id"] for a in alerts}
        assert {a["incident"] for a in alerts} == {incidents[0]["id"]}
        # On-call is told once per incident, not once per alert.
        assert server.log.read_text().count("drift incident opened on drifty") == 1
        exposition = http.get("/metrics").text
        before = open_series(exposition, "drifty")
        assert sum(before.values()) == len(alerts), before
        # Per component: each open alert counts under its own stream's component.
        for alert in alerts:
            assert before[alert["component"], alert["detector"]] >= 1
        assert incident_open(exposition, "drifty") == 1

    with server.client("admin") as admin:
        # By name alone: no component, no grader version, no sha256.
        # A reset says why: without a reason it is refused, and nothing is reset.
        assert admin.post("/v1/drift/reset", json={"rubric": "drifty"}).status_code == 422
        reset = admin.post(
            "/v1/drift/reset", json={"rubric": "drifty", "reason": "accepted after review"}
        )
        assert reset.status_code == 200, reset.text
        [record] = admin.get("/v1/drift/resets", params={"rubric": "drifty"}).json()
        assert record["reason"] == "accepted after review"
        assert record["requested_by"] == f"test-admin ({server.keys['admin'].split('_')[1]})"
        assert record["closed_alerts"] == len(alerts) and record["component"] is None
        assert datetime.fromisoformat(record["reset_at"]).tzinfo is not None
        assert reset.json() == {"closed_alerts": len(alerts), "open_alerts": 0}
        assert admin.get("/v1/drift/alerts", params={"open_only": True}).json() == []
        assert admin.get("/v1/drift/alerts").json() == []  # open ones by default
        closed = admin.get("/v1/drift/alerts", params={"status": "closed"}).json()
        assert {a["id"] for a in alerts} <= {a["id"] for a in closed}
        assert all(a["status"] == "closed" and a["closed_at"] for a in closed)
        after = open_series(admin.get("/metrics").text, "drifty")
        # Every series that counted an alert is still exported, now at 0.
        assert set(after) == set(before)
        assert all(value == 0 for value in after.values()), after
        assert incident_open(admin.get("/metrics").text, "drifty") == 0
        unknown = admin.post("/v1/drift/reset", json={"rubric": "no-such-rubric", "reason": "x"})
        assert unknown.status_code == 404
        assert unknown.json()["code"] == "stream_not_found"
