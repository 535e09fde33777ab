"""The drift page in a real headless Chromium: warm-up, an alert, silence, reset, record.

Issue 27: nothing said that a stream was not watched yet (``reference: null``),
and a reset recorded no who or why. The page shows each stream's warm-up, its
window means against the reference band, the alerts, and resets with a reason.
``ARBITER_REVIEW_SHOTS`` keeps screenshots of each step, as for the review page.
"""

from __future__ import annotations

import random
import time
from typing import Any

import pytest

from tests.api.conftest import Server, StartServer
from tests.browser.test_review_flow import shoot

pytestmark = pytest.mark.browser

RUBRIC = """\
name: watched
version: 1
components:
  eff: {grader: efficiency, config: {max_turns: {limit: 40}}}
drift: {window: 20, warmup_windows: 1}
"""


def batch(rng: random.Random, start: int, mean_turns: float) -> dict[str, Any]:
    samples = [
        {
            "id": f"w{start + i}",
            "response": "r" * rng.randint(50, 150),
            "metrics": {"turns": max(0, min(40, round(rng.gauss(mean_turns, 3))))},
        }
        for i in range(20)
    ]
    return {"rubric": "watched", "samples": samples}


@pytest.fixture(scope="module")
def server(start_server: StartServer) -> Server:
    server = start_server(rubrics={"watched": RUBRIC})
    deadline = time.monotonic() + 20
    with server.client() as http:
        while not any(r["name"] == "watched" for r in http.get("/v1/rubrics").json()):
            assert time.monotonic() < deadline, "the rubric file was never loaded"
            time.sleep(0.05)
    return server


def eff_row(page: Any) -> Any:
    return page.locator("#streams tr", has_text="watched/eff@")


def test_warm_up_then_an_alert_a_silence_then_a_reset_with_its_reason(
    browser: Any, server: Server
) -> None:
    page = browser.new_page()
    problems: list[str] = []
    page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: problems.append(str(e)))
    rng = random.Random(5)
    try:
        with server.client() as http:
            for b in range(3):  # one warm-up window, then 40 of the 200 reference samples
                assert http.post("/v1/rewards", json=batch(rng, 20 * b, 20.0)).status_code == 200
        page.goto(f"{server.url}/drift")
        page.fill("#key", server.keys["admin"])
        page.click("#sign-in")
        page.wait_for_selector("#board:not(.hidden)")
        row = eff_row(page)
        assert row.locator(".phase").inner_text() == "reference"
        assert "40 of 200 samples" in row.inner_text()
        assert row.locator("svg .band").count() == 0  # no reference: no band yet
        shoot(page, "drift-warmup")

        with server.client() as http:
            for b in range(3, 13):  # the rest of the reference
                assert http.post("/v1/rewards", json=batch(rng, 20 * b, 20.0)).status_code == 200
            for b in range(13, 45):  # the policy shifts
                rewards = http.post("/v1/rewards", json=batch(rng, 20 * b, 8.0)).json()["rewards"]
                if any(f.startswith("drift:") for r in rewards for f in r["flags"]):
                    break
            else:
                raise AssertionError("the shift was never flagged")
        page.click("#refresh")
        page.locator("#alerts td.open").first.wait_for()
        row = eff_row(page)
        assert row.locator(".phase").inner_text() == "watching"
        assert row.locator("svg .band").count() == 1 and row.locator("svg .series").count() == 1
        alerts = page.inner_text("#alerts")
        assert "watched/eff" in alerts and "fires" in alerts
        shoot(page, "drift-alert")

        # A silence keeps the baseline and mutes the flags until it expires or is lifted.
        page.fill("#silence-rubric", "watched")
        page.fill("#silence-minutes", "30")
        page.fill("#silence-reason", "known shift, looking into it")
        page.click("#silence")
        page.locator("#message", has_text="Silenced watched until").wait_for()
        assert "(silenced)" in page.inner_text("#alerts")
        assert "known shift, looking into it" in page.inner_text("#silences")
        with server.client() as http:
            rewards = http.post("/v1/rewards", json=batch(rng, 5000, 8.0)).json()["rewards"]
        assert not any(f.startswith("drift:") for r in rewards for f in r["flags"])
        assert eff_row(page).locator(".phase").inner_text() == "watching"  # baseline kept
        shoot(page, "drift-silenced")
        page.locator("#silences button", has_text="Lift").click()
        page.locator("#message", has_text="Lifted silence").wait_for()
        assert page.locator("#silences tr").count() == 0

        page.fill("#reset-rubric", "watched")
        page.fill("#reset-reason", "shorter runs are the new policy, reviewed by on-call")
        page.click("#reset")
        page.locator("#message", has_text="Reset watched: closed").wait_for()
        assert page.locator("#alerts td.open").count() == 0
        record = page.locator("#resets tr").first.inner_text()
        assert "shorter runs are the new policy" in record and "test-admin" in record
        assert eff_row(page).locator(".phase").inner_text() == "reference"  # watched afresh
        shoot(page, "drift-reset")
    finally:
        page.close()
    assert not problems, problems
    # The record is the store's, not only the page's.
    with server.client("admin") as http:
        [recorded] = http.get("/v1/drift/resets", params={"rubric": "watched"}).json()
        assert http.get("/v1/drift/alerts", params={"rubric": "watched"}).json() == []
    assert recorded["reason"] == "shorter runs are the new policy, reviewed by on-call"
    assert recorded["closed_alerts"] >= 1
