"""Languages beyond Python for the unit-test grader: builds as data, a bridge for calls.

See :mod:`arbiter.graders.languages.base` for what a language provides and
:mod:`arbiter.graders.languages.wire` for the bridge's format. Each language is a
module of this package; :func:`language` loads one by name on first use.
"""

from __future__ import annotations

import importlib

from arbiter.graders.languages.base import Language

__all__ = ["LANGUAGES", "language"]

#: Every language a task may name besides ``python``, and the module that holds it.
LANGUAGES: dict[str, str] = {
    "cpp": "cpp",
    "java": "java",
    "go": "go",
    "rust": "rust",
    "javascript": "javascript",
}


def language(name: str) -> Language:
    """Return the language ``name`` (a key of :data:`LANGUAGES`)."""
    module = importlib.import_module(f"arbiter.graders.languages.{LANGUAGES[name]}")
    found: Language = module.LANGUAGE
    return found
