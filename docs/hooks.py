"""MkDocs hooks: the reference pages, generated from the code at every build.

``mkdocs.yml`` names this file under ``hooks:``. Each page of
``arbiter.reference_docs.PAGES`` joins the site's files before the navigation is
built, so a page the navigation names but the code no longer renders (or the
reverse) fails the strict build. Nothing generated is written into ``docs/``.
"""

from __future__ import annotations

from typing import Any

from mkdocs.structure.files import File, Files

from arbiter.reference_docs import PAGES


def on_files(files: Files, config: Any) -> Files:
    """Add every generated reference page to the site."""
    for uri, render in PAGES.items():
        files.append(File.generated(config, uri, content=render()))
    return files
