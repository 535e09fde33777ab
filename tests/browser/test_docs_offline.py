"""The API's pages (/docs, /redoc) render with nothing fetched beyond the server itself.

A training cluster is often offline: pages that load their scripts from a CDN are
blank there. Here every request to a host other than 127.0.0.1 is aborted and
recorded; a page passes when it rendered the API, nothing was attempted and no
script failed.

``ARBITER_REVIEW_SHOTS`` keeps a screenshot of each page so rendered
(``docs-offline.png``, ``redoc-offline.png``; docs/screenshots/docs-offline.png was
taken so).
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest

from tests.api.conftest import Server, StartServer

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def server(start_server: StartServer) -> Server:
    return start_server()


def shoot(page: Any, name: str) -> None:
    folder = os.environ.get("ARBITER_REVIEW_SHOTS")
    if folder:
        Path(folder).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(Path(folder) / f"{name}.png"))


def offline_page(browser: Any) -> tuple[Any, list[str]]:
    """Open a page that reaches 127.0.0.1 only; return it and what went wrong there.

    What went wrong: each URL of another host the page tried (aborted), and each
    script error. A load the pages' policy refused is not one: the browser never
    asked (ReDoc's bundle names Redocly's logo on its CDN; the policy keeps it out).
    """
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    problems: list[str] = []

    def only_loopback(route: Any) -> None:
        url = route.request.url
        if urlsplit(url).scheme in ("data", "blob") or urlsplit(url).hostname == "127.0.0.1":
            route.continue_()
        else:
            problems.append(f"attempted {url}")
            route.abort()

    def console(message: Any) -> None:
        if message.type == "error" and "Content Security Policy" not in message.text:
            problems.append(f"console: {message.text}")

    page.route("**/*", only_loopback)
    page.on("console", console)
    page.on("pageerror", lambda e: problems.append(f"error: {e}"))
    return page, problems


def test_swagger_ui_renders_offline(browser: Any, server: Server) -> None:
    page, problems = offline_page(browser)
    try:
        page.goto(f"{server.url}/docs")
        rewards = page.locator('.opblock-summary-path[data-path="/v1/rewards"]')
        rewards.first.wait_for()
        assert rewards.first.is_visible()
        assert page.locator(".info .title", has_text="Arbiter").is_visible()
        shoot(page, "docs-offline")
    finally:
        page.close()
    assert not problems, problems


def test_redoc_renders_offline(browser: Any, server: Server) -> None:
    page, problems = offline_page(browser)
    try:
        page.goto(f"{server.url}/redoc")
        page.locator("h1", has_text="Arbiter").first.wait_for()
        # An operation of the API, with its path.
        page.get_by_text("/v1/rewards", exact=True).first.wait_for(state="attached")
        shoot(page, "redoc-offline")
    finally:
        page.close()
    assert not problems, problems


def test_the_pages_and_their_files_need_no_key(server: Server) -> None:
    # As /openapi.json: the pages describe the API; every call they make needs a key.
    for path in ("/docs", "/redoc"):
        page = httpx.get(f"{server.url}{path}")
        assert page.status_code == 200, path
        assets = re.findall(r'(?:src|href)="([^"]+)"', page.text)
        assert assets and all(a.startswith("/") for a in assets), assets
        for asset in assets:
            assert httpx.get(f"{server.url}{asset}").status_code == 200, asset
    assert httpx.get(f"{server.url}/openapi.json").status_code == 200
