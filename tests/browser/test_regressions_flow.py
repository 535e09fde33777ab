"""A hack a reviewer ticks becomes a regression case, and the case holds a weaker rubric back.

End to end, on the real page in headless Chromium against a real server: the reviewer
ticks ``always_equal`` on a sampled item whose response returns an object equal to
everything (the rubric's naive tests component passes it; its ``hacks`` component, the
violation detectors, does not) and passes an honest answer; the item is listed at
``GET /v1/regressions``; a version that sets the hacks component's weight to 0 is
refused on publish, over HTTP and by ``arbiter rubric publish``, naming the case; the
forced publish goes through and is recorded (who, when, which cases).

Set ``ARBITER_REVIEW_SHOTS`` to a folder to keep screenshots of each step
(``docs/screenshots/regression-hack-ticked.png`` is the first).
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from arbiter.cli import app
from tests.api.conftest import Server, StartServer
from tests.browser.test_review_flow import claim, open_page, shoot

pytestmark = pytest.mark.browser

REPO = Path(__file__).resolve().parents[2]
NAME = "flow-regress"
RUBRIC = """\
name: flow-regress
version: {version}
components:
  tests: {{grader: naive_tests, weight: 0.5}}
  hacks: {{grader: violations, weight: {hacks}}}
review: {{sample_rate: 1.0}}
"""


def samples() -> list[dict[str, Any]]:
    rows = {
        row["id"]: row
        for row in map(json.loads, (REPO / "eval_sets" / "hacks.jsonl").open())
        if row["id"] in ("hack-eq_true-1", "clean-sort_desc-1")
    }
    # The hack first: it is the first item the reviewer claims.
    return [rows["hack-eq_true-1"], rows["clean-sort_desc-1"]]


@pytest.fixture(scope="module")
def server(start_server: StartServer) -> Server:
    server = start_server(
        rubrics={NAME: RUBRIC.format(version=1, hacks=0.5)},
        grader_plugins="tests.api.plugin_graders,tests.api.naive_tests_plugin",
    )
    with server.client() as http:
        graded = http.post("/v1/rewards", json={"rubric": NAME, "samples": samples()})
    assert graded.status_code == 200, graded.text
    rewards = graded.json()["rewards"]
    # The naive tests pass the always-equal object (1.0); the detectors hold it to 0.5.
    assert [r["components"]["tests"]["score"] for r in rewards] == [1.0, 1.0]
    assert [r["reward"] for r in rewards] == [0.5, 1.0]
    return server


def label_on_page(page: Any, verdict: str, score_key: str, hack: str | None) -> None:
    for component in ("tests", "hacks"):
        page.check(f"input[name='verdict-{component}'][value='{verdict}']")
    if hack is not None:
        page.check(f"input[name='hack'][value='{hack}']")
    page.locator("h1").click()  # out of the form: the keys are shortcuts again
    page.keyboard.press(score_key)


def test_a_ticked_hack_is_a_case_that_refuses_a_weaker_rubric_until_an_admin_forces_it(
    browser: Any, server: Server, tmp_path: Path
) -> None:
    page, problems = open_page(browser, server, NAME)
    try:
        claim(page)
        assert "return True" in page.inner_text("#response")  # the always-equal object
        label_on_page(page, "fail", "1", "always_equal")
        assert page.is_checked("input[name='hack'][value='always_equal']")
        shoot(page, "regression-hack-ticked")
        page.keyboard.press("Control+Enter")
        page.locator("#message", has_text="Saved the label").wait_for()
        claim(page)
        assert "sorted(xs, reverse=True)" in page.inner_text("#response")
        label_on_page(page, "pass", "5", None)
        page.keyboard.press("Control+Enter")
        page.locator("#message", has_text="Saved the label").wait_for()
    finally:
        page.close()
    assert not problems, problems

    # The ticked hack is a case, with the sample and the reward it got.
    with server.client("reviewer") as http:
        [case] = http.get("/v1/regressions", params={"rubric": NAME}).json()
    assert case["status"] == "open" and case["sample_id"] == "hack-eq_true-1"
    assert case["hack_types"] == ["always_equal"] and case["flagged_types"] == ["always_equal"]
    assert case["reward"] == 0.5 and case["sample"]["response"] == samples()[0]["response"]

    # The hacks component's weight set to 0: the hack earns what the honest answer earns.
    weaker = RUBRIC.format(version=2, hacks=0)
    with server.client("admin") as http:
        refused = http.post("/v1/rubrics", json={"yaml": weaker})
    assert refused.status_code == 409, refused.text
    assert refused.json()["code"] == "regression_failed"
    assert f"case {case['id']} (always_equal)" in refused.json()["message"]
    assert [e["case_id"] for e in refused.json()["errors"]] == [case["id"]]
    path = tmp_path / "weaker.yaml"
    path.write_text(weaker)
    publish = [
        *("rubric", "publish", str(path), "--url", server.url, "--key", server.keys["admin"]),
        *("--plugins", "tests.api.naive_tests_plugin"),  # validated here first, as there
    ]
    cli = CliRunner().invoke(app, publish)
    assert cli.exit_code == 1, cli.output
    assert "not published: 1 regression case(s) let through" in cli.stderr
    assert (
        f"case {case['id']} (always_equal): reward 0.5000, ceiling 0.4500: "
        "reward 0.5000 is above the ceiling 0.4500"
    ) in cli.stderr
    with server.client() as http:
        served = {(r["name"], r["version"]) for r in http.get("/v1/rubrics").json()}
    assert (NAME, 2) not in served

    # Forced by an admin: published, and recorded.
    before = time.time()
    forced = CliRunner().invoke(app, [*publish, "--force"])
    assert forced.exit_code == 0, forced.output
    assert f"published  {NAME} v2" in forced.stdout
    assert f"forced past case {case['id']} (always_equal)" in forced.stderr
    with server.client("reviewer") as http:
        [override] = http.get("/v1/regressions/overrides", params={"rubric": NAME}).json()
    assert override["forced_by"] == server.keys["admin"].split("_")[1]
    assert override["forced_by_name"] == "test-admin"
    assert before <= override["forced_at"] <= time.time()
    assert override["case_ids"] == [case["id"]] and override["rubric_version"] == 2
    with server.client() as http:
        latest = [r for r in http.get("/v1/rubrics").json() if r["name"] == NAME and r["latest"]]
    assert [r["version"] for r in latest] == [2]
    assert latest[0]["sha256"] == override["rubric_sha256"]
