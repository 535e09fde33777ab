"""The documentation site renders offline: its first page, and a generated reference page.

The site is built strictly from this checkout (as ``make docs`` builds it) into a
temporary folder and served from 127.0.0.1; every request to another host is
aborted and recorded, and a page passes when it rendered what it should, nothing
was attempted elsewhere and no script failed.

``ARBITER_REVIEW_SHOTS`` keeps a screenshot of each page (``docs-site-home.png``,
``docs-site-cli.png``; docs/screenshots/ holds the ones taken so).
"""

from __future__ import annotations

import functools
import http.server
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.browser.test_docs_offline import offline_page, shoot

pytestmark = [pytest.mark.browser, pytest.mark.slow(seconds=30)]

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    folder = tmp_path_factory.mktemp("site")
    built = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(folder)],
        cwd=ROOT,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert built.returncode == 0, built.stderr[-3000:]
    handler = functools.partial(QuietHandler, directory=str(folder))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass


def test_the_first_page_renders_offline(browser: Any, site: str) -> None:
    page, problems = offline_page(browser)
    try:
        page.goto(f"{site}/index.html")
        page.locator("h1", has_text="Arbiter").first.wait_for()
        assert page.title().startswith("Arbiter")
        # The navigation's four kinds of pages, and the two commands.
        for section in ("Tutorials", "How-to guides", "Reference", "Explanation"):
            assert page.locator("nav", has_text=section).first.is_visible(), section
        assert page.get_by_text("make demo", exact=False).first.is_visible()
        shoot(page, "docs-site-home")
    finally:
        page.close()
    assert not problems, problems


def test_a_generated_reference_page_renders_offline(browser: Any, site: str) -> None:
    page, problems = offline_page(browser)
    try:
        page.goto(f"{site}/reference/cli.html#arbiter-score")
        page.locator("h2", has_text="arbiter score").first.wait_for()
        # An option read from the typer app, in its table.
        option = page.locator("td code", has_text="--skip-invalid").first
        option.wait_for()
        assert option.is_visible()
        assert page.get_by_text("Generated at build time", exact=False).count() == 0  # a comment
        shoot(page, "docs-site-cli")
    finally:
        page.close()
    assert not problems, problems
