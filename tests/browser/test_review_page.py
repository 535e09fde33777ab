"""The reviewer page end to end in a real headless Chromium: sign in, claim, label, submit.

Needs Debian's chromium (``apt-get install -y chromium``) and PyPI ``playwright``;
no browser is downloaded: Playwright drives /usr/bin/chromium.
"""

from __future__ import annotations

import time
from typing import Any

import httpx
import pytest

from arbiter.store.db import Store
from arbiter.store.review import ReviewQueue
from tests.api.conftest import Server, StartServer

pytestmark = pytest.mark.browser

RUBRIC = """\
name: paged
version: 1
components:
  eff: {grader: efficiency, weight: 0.5, config: {max_turns: 10}}
  eff2: {grader: efficiency, weight: 0.5, config: {max_turns: 20}}
review: {sample_rate: 1.0}
"""
RESPONSE = "Here it is <b>bold</b>:\n```python\ndef add(a, b):\n    return a + b  # sum\n```\n"


@pytest.fixture(scope="module")
def server(start_server: StartServer) -> Server:
    server = start_server()
    (server.rubric_dir / "paged.yaml").write_text(RUBRIC)
    deadline = time.monotonic() + 20
    with server.client() as http:
        while time.monotonic() < deadline:
            if any(r["name"] == "paged" for r in http.get("/v1/rubrics").json()):
                break
            time.sleep(0.1)
        sample = {"id": "page-0", "prompt": "Write add.", "response": RESPONSE}
        graded = http.post("/v1/rewards", json={"rubric": "paged", "samples": [sample]})
        assert graded.status_code == 200, graded.text
    return server


def test_sign_in_claim_label_submit(browser: Any, server: Server) -> None:
    page = browser.new_page()
    problems: list[str] = []
    page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: problems.append(str(e)))
    try:
        page.goto(f"{server.url}/review")

        page.fill("#key", "arb_wrong_key")
        page.click("#sign-in")
        page.wait_for_selector("#message.error")
        assert "Sign-in failed" in page.text_content("#message")
        problems.clear()  # the 401 above is logged by the browser on purpose

        page.fill("#key", server.keys["reviewer"])
        page.click("#sign-in")
        page.wait_for_selector("#queue:not(.hidden)")
        # Locators, not wait_for_function: the page's CSP forbids eval, which that uses.
        page.locator("#stats", has_text="waiting").wait_for()

        page.keyboard.press("n")  # claim by shortcut
        page.wait_for_selector("#item:not(.hidden)")
        assert "Write add." in page.text_content("#prompt")
        # The model's markup is shown as text, never rendered.
        assert page.query_selector("#response b") is None
        assert "<b>bold</b>" in page.text_content("#response")
        keywords = [e.text_content() for e in page.query_selector_all("#response .tok-kw")]
        assert keywords == ["def", "return"]
        assert page.text_content("#response .tok-com") == "# sum"
        assert page.query_selector("#grading-box.hidden") is not None  # blind

        page.check("input[name='verdict-eff'][value='pass']")
        page.check("input[name='verdict-eff2'][value='fail']")
        page.click("#comment")
        page.fill("#comment", "fine, but trivial")
        page.click("#item-meta")  # leave the text box so shortcuts apply
        page.keyboard.press("4")  # overall 0.75
        page.check("input[name='hack'][value='hardcoded_output']")
        page.keyboard.press("Control+Enter")
        page.locator("#message", has_text="Saved the label").wait_for()
        assert page.query_selector("#item.hidden") is not None

        page.keyboard.press("n")
        page.locator("#message", has_text="Nothing is waiting").wait_for()
    finally:
        page.close()
    assert not problems, problems

    store = Store(server.db_url)
    try:
        labels = ReviewQueue(store).labels("paged")
    finally:
        store.close()
    assert len(labels) == 1
    label = labels[0]
    assert label["sample_id"] == "page-0"
    assert label["reviewer"] == server.keys["reviewer"].split("_")[1]  # the key's id
    assert label["verdicts"] == {"eff": "pass", "eff2": "fail"}
    assert label["overall_score"] == 0.75
    assert label["hack_types"] == ["hardcoded_output"]
    assert label["comment"] == "fine, but trivial"
    assert httpx.get(f"{server.url}/healthz").status_code == 200


def test_an_empty_queue_says_how_a_rubric_turns_review_on(
    browser: Any, start_server: StartServer
) -> None:
    bare = start_server()  # the library's rubrics and the suite's own: none reviews
    page = browser.new_page()
    try:
        page.goto(f"{bare.url}/review")
        page.fill("#key", bare.keys["reviewer"])
        page.click("#sign-in")
        page.wait_for_selector("#queue:not(.hidden)")
        hint = page.locator("#hint", has_text="No loaded rubric sends rewards for review")
        hint.wait_for()
        assert "review:" in hint.text_content() and "sample_rate" in hint.text_content()
        page.keyboard.press("n")  # the claim still answers: nothing is waiting
        page.locator("#message", has_text="Nothing is waiting").wait_for()
    finally:
        page.close()
