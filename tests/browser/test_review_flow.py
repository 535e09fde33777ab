"""The review page never loses work: typing is not a shortcut, skips move on, labels are whole.

Issue 27: an ``n`` or ``s`` typed in the comment box skipped the item and threw
the labels away; ``s`` then ``n`` handed back the same item; an empty Ctrl+Enter
stored an empty label; a submitted label could not be corrected. Each test drives
the real page in headless Chromium against a real server and checks the store.

Set ``ARBITER_REVIEW_SHOTS`` to a folder to keep screenshots of each step.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from arbiter.store.db import Store
from arbiter.store.review import ReviewQueue
from tests.api.conftest import Server, StartServer

pytestmark = pytest.mark.browser

# Components deliberately out of alphabetical order: the page must keep the rubric's.
RUBRIC = """\
name: {name}
version: 3
components:
  zeta: {{grader: efficiency, weight: 0.5, config: {{max_turns: 10, max_completion_tokens: 4096}}}}
  cx: {{grader: radon, weight: 0.25, config: {{max_cyclomatic: 4}}}}
  alpha: {{grader: efficiency, weight: 0.25, config: {{max_turns: 20}}}}
review: {{sample_rate: 1.0}}
"""
NAMES = ("flow-typing", "flow-skip", "flow-empty", "flow-edit")
CODE = (
    "```python\ndef pick(a, b):\n    if a > b and a > 0:\n        return a\n"
    "    for x in range(b):\n        if x % 2:\n            return x\n    return b\n```\n"
)


def shoot(page: Any, name: str) -> None:
    folder = os.environ.get("ARBITER_REVIEW_SHOTS")
    if folder:
        Path(folder).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(Path(folder) / f"{name}.png"), full_page=True)


@pytest.fixture(scope="module")
def server(start_server: StartServer) -> Server:
    server = start_server(rubrics={n: RUBRIC.format(name=n) for n in NAMES})
    with server.client() as http:
        for name in NAMES:
            samples = [
                {
                    "id": f"{name}-{i}",
                    "prompt": "Write pick.",
                    "response": CODE,
                    "metrics": {"turns": 2 + i, "completion_tokens": 812},
                }
                for i in range(2)
            ]
            graded = http.post("/v1/rewards", json={"rubric": name, "samples": samples})
            assert graded.status_code == 200, graded.text
    return server


def open_page(browser: Any, server: Server, rubric: str) -> tuple[Any, list[str]]:
    page = browser.new_page()
    problems: list[str] = []
    page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: problems.append(str(e)))
    page.goto(f"{server.url}/review")
    page.fill("#key", server.keys["reviewer"])
    page.click("#sign-in")
    page.wait_for_selector("#queue:not(.hidden)")
    page.fill("#rubric", rubric)
    page.locator("h1").click()  # leave the text box so shortcuts apply
    return page, problems


def claim(page: Any) -> str:
    """Press n and return the claimed item's id."""
    page.keyboard.press("n")
    page.locator("#message", has_text="Claimed item").wait_for()
    meta: str = page.text_content("#item-meta")
    return meta.split(" ", 1)[0]


def labels(server: Server, rubric: str) -> list[dict[str, Any]]:
    store = Store(server.db_url)
    try:
        return ReviewQueue(store).labels(rubric)
    finally:
        store.close()


def test_keys_typed_in_the_comment_box_are_text_not_shortcuts(browser: Any, server: Server) -> None:
    page, problems = open_page(browser, server, "flow-typing")
    try:
        item = claim(page)
        # Components in the rubric's order, the rubric's name and version shown.
        rows = [r.get_attribute("data-component") for r in page.query_selector_all(".component")]
        assert rows == ["zeta", "cx", "alpha"]
        assert "rubric flow-typing v3" in page.text_content("#item-meta")
        # Blind, yet measured: complexity per function, the MI, tokens against the budget.
        assert page.query_selector("#grading-box.hidden") is not None
        cx = page.locator("[data-component='cx']").inner_text()
        assert "pick (line 1): cyclomatic complexity 5" in cx
        assert "maintainability index" in cx
        assert (
            "completion_tokens 812 of 4096: within budget"
            in page.locator("[data-component='zeta']").inner_text()
        )
        page.check("input[name='hack'][value='hardcoded_output']")  # focus on a checkbox
        page.click("#comment")
        page.keyboard.type("n s p f: returns early, skips nothing")
        shoot(page, "typing-in-comment")
        assert page.input_value("#comment") == "n s p f: returns early, skips nothing"
        assert page.text_content("#item-meta").split(" ", 1)[0] == item  # not skipped
        assert page.query_selector("#verdicts input:checked") is None  # nothing labelled
        assert page.is_checked("input[name='hack'][value='hardcoded_output']")
        with server.client("reviewer") as http:
            stats = http.get("/v1/review/queue", params={"rubric": "flow-typing"}).json()
        assert stats["leased"] == 1 and stats["labels"] == 0
        # Out of the text box the same key is a shortcut again, and a key toggles a hack.
        page.locator("h1").click()
        key = page.get_attribute("input[name='hack'][value='early_exit']", "data-key")
        page.keyboard.press(key)
        assert page.is_checked("input[name='hack'][value='early_exit']")
    finally:
        page.close()
    assert labels(server, "flow-typing") == []
    assert not problems, problems


def test_skip_moves_on_and_the_skipped_item_comes_last(browser: Any, server: Server) -> None:
    page, problems = open_page(browser, server, "flow-skip")
    try:
        first = claim(page)
        page.keyboard.press("s")
        page.locator("#message", has_text="Skipped").wait_for()
        second = claim(page)
        assert second != first  # s then n: another item, not the same one back
        # Entered labels are not thrown away by one key press.
        page.keyboard.press("p")
        page.keyboard.press("s")
        page.locator("#message.error", has_text="press s (or Skip) again").wait_for()
        assert page.text_content("#item-meta").split(" ", 1)[0] == second
        page.keyboard.press("s")
        page.locator("#message", has_text="Skipped").wait_for()
        # Both skipped: the one skipped first comes back first.
        assert claim(page) == first
        shoot(page, "skip-moved-on")
    finally:
        page.close()
    assert labels(server, "flow-skip") == []
    assert not problems, problems


def test_an_empty_submit_is_refused_and_says_what_is_missing(browser: Any, server: Server) -> None:
    page, problems = open_page(browser, server, "flow-empty")
    try:
        item = claim(page)
        page.keyboard.press("Control+Enter")
        message = page.locator("#message.error", has_text="Not saved")
        message.wait_for()
        text = message.inner_text()
        for missing in ("zeta", "cx", "alpha", "overall score"):
            assert missing in text
        shoot(page, "empty-submit-refused")
        page.keyboard.press("p")  # zeta only
        page.keyboard.press("Control+Enter")
        page.locator("#message.error", has_text="Not saved").wait_for()
        text = page.inner_text("#message")
        assert "zeta" not in text and "cx" in text and "alpha" in text
        assert page.text_content("#item-meta").split(" ", 1)[0] == item
        assert page.query_selector(".component.missing[data-component='zeta']") is None
        assert page.query_selector(".component.missing[data-component='cx']") is not None
    finally:
        page.close()
    assert labels(server, "flow-empty") == []
    # The API refuses it too, naming what is missing, whatever client sends it.
    with server.client("reviewer") as http:
        claimed = http.post("/v1/review/claim", json={"rubric": "flow-empty"}).json()["item"]
        refused = http.post(
            f"/v1/review/items/{claimed['id']}/labels",
            json={"lease_token": claimed["lease_token"], "verdicts": {"zeta": "pass"}},
        )
    assert refused.status_code == 422
    body = refused.json()
    assert body["code"] == "label_incomplete"
    assert body["errors"][0]["missing"] == ["verdict for cx", "verdict for alpha", "overall score"]
    assert not problems, problems


def agreement(server: Server) -> dict[str, Any]:
    with server.client("reviewer") as http:
        report: dict[str, Any] = http.get(
            "/v1/review/agreement", params={"rubric": "flow-edit"}
        ).json()
    return report


def test_an_edited_label_is_a_new_version_and_changes_agreement(
    browser: Any, server: Server
) -> None:
    page, problems = open_page(browser, server, "flow-edit")
    try:
        claim(page)
        for _ in range(3):
            page.keyboard.press("p")
        page.keyboard.press("5")
        page.keyboard.press("Control+Enter")
        page.locator("#message", has_text="Saved the label").wait_for()
        before = agreement(server)
        zeta = before["components"]["zeta"]
        assert zeta["counts"]["both_yes"] == 1 and zeta["counts"]["grader_only"] == 0
        # The threshold agreement uses is stated, by grader kind.
        assert zeta["grader"] == "efficiency" and zeta["pass_threshold"] == 0.5
        assert before["components"]["cx"]["pass_threshold"] == 1.0
        shoot(page, "edit-before")

        page.locator("#mine-list button", has_text="Edit").first.click()
        page.locator("#editing", has_text="Editing your submitted label").wait_for()
        assert page.is_checked("input[name='verdict-zeta'][value='pass']")  # the old label
        page.check("input[name='verdict-zeta'][value='fail']")
        page.locator("h1").click()
        page.keyboard.press("Control+Enter")
        page.locator("#message", has_text="Saved version 2").wait_for()
        shoot(page, "edit-after")
    finally:
        page.close()
    assert not problems, problems

    after = agreement(server)
    zeta = after["components"]["zeta"]
    assert zeta["counts"]["both_yes"] == 0 and zeta["counts"]["grader_only"] == 1
    assert after["n_labels"] == 1  # the edit replaced the label, it did not add one
    [label] = labels(server, "flow-edit")
    assert label["version"] == 2 and label["verdicts"]["zeta"] == "fail"
    with server.client("reviewer") as http:
        history = http.get(f"/v1/review/items/{label['item_id']}/labels/mine").json()["versions"]
        mine = http.get("/v1/review/queue", params={"rubric": "flow-edit"}).json()["you"]
    assert [v["verdicts"]["zeta"] for v in history] == ["pass", "fail"]
    assert mine == {"labelled": 1, "left": 1}
