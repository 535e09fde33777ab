"""Drift in the service: a shift opens an alert, rewards carry its flag, a restart resumes."""

from __future__ import annotations

import random
import signal
import time

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
        assert http.get("/v1/drift/alerts").json() == []
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
        metrics = http.get("/metrics").text
        assert "arbiter_drift_open_alerts{detector=" in metrics
        streams = http.get("/v1/drift/streams").json()
        assert any(s["component"] == "eff" and s["reference"] for s in streams)

    server.kill(signal.SIGTERM)  # saves the monitor's state
    server.start()
    with server.client() as http:
        # The alerts still open count in the gauge from the first scrape, before any batch.
        assert sum(open_series(http.get("/metrics").text, "drifty").values()) >= 1
        rewards = http.post("/v1/rewards", json=batch(rng, 1000, 8.0)).json()["rewards"]
        assert any(f.startswith("drift:") for r in rewards for f in r["flags"])  # still open
        stream = next(s for s in http.get("/v1/drift/streams").json() if s["component"] == "eff")
    with server.client("admin") as admin:
        reset = admin.post(
            "/v1/drift/reset",
            json={
                "rubric": "drifty",
                "component": "eff",
                "grader_version": stream["grader_version"],
            },
        )
        assert reset.status_code == 200 and reset.json()["closed_alerts"] >= 1
        eff_open = [
            a
            for a in admin.get("/v1/drift/alerts", params={"open_only": True}).json()
            if a["component"] == "eff"
        ]
        assert eff_open == []


def open_series(metrics: str, rubric: str) -> dict[str, float]:
    """Return the ``arbiter_drift_open_alerts`` series of one rubric: detector -> value."""
    series = {}
    for line in metrics.splitlines():
        if line.startswith("arbiter_drift_open_alerts{") and f'rubric="{rubric}"' in line:
            labels, value = line.rsplit(" ", 1)
            detector = labels.split('detector="', 1)[1].split('"', 1)[0]
            series[detector] = float(value)
    return series


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
        before = open_series(http.get("/metrics").text, "drifty")
        assert sum(before.values()) == len(alerts), before

    with server.client("admin") as admin:
        # By name alone: no component, no grader version, no sha256.
        reset = admin.post("/v1/drift/reset", json={"rubric": "drifty"})
        assert reset.status_code == 200, reset.text
        assert reset.json() == {"closed_alerts": len(alerts), "open_alerts": 0}
        assert admin.get("/v1/drift/alerts", params={"open_only": True}).json() == []
        after = open_series(admin.get("/metrics").text, "drifty")
        # Every series that counted an alert is still exported, now at 0.
        assert set(after) == set(before)
        assert all(value == 0 for value in after.values()), after
        unknown = admin.post("/v1/drift/reset", json={"rubric": "no-such-rubric"})
        assert unknown.status_code == 404
        assert unknown.json()["code"] == "stream_not_found"
