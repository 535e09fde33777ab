"""Find the program in a model's response: fenced code blocks, or the raw text.

Models answer in Markdown more often than not. The rules, in order:

1. Fenced blocks tagged ``python``/``py``/``python3`` (or untagged ones, when
   no block is tagged) are the code. With several, ``all`` joins them in order
   (models often put a helper in one block and the solution in the next) and
   ``last`` keeps the final one (the revised answer after a first attempt).
2. With no fence at all, the whole response is the code if it parses.
3. Otherwise there is no code, and the caller returns a ``no_code`` failure.

An unclosed final fence (a truncated generation) still counts: its text up to
the end of the response is taken, and ``truncated`` says so.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from arbiter.graders.sandbox.syntax import parse_module

__all__ = ["Block", "ExtractedCode", "blocks", "extract_code", "extract_source"]

#: An opening fence: its backticks or tildes, then the tag. Possessive (``*+``): an
#: opening line that no newline ends (a long run of backticks, or a tag, up to the end of
#: the response) fails at once instead of backtracking over every split of it, which is
#: quadratic in the line (40,000 backticks cost 1.5 s). Where a match exists, the
#: possessive one is the greedy one: the same groups.
_FENCE = re.compile(r"^[ \t]*+(`{3,}+|~{3,}+)[ \t]*+([\w+.#-]*+)[^\n]*+\n", re.MULTILINE)
_PYTHON_TAGS = frozenset({"python", "py", "python3", "py3"})


@dataclass(frozen=True, slots=True)
class ExtractedCode:
    """The code found in a response, and where it came from."""

    code: str
    source: Literal["fenced", "raw"]
    blocks: int
    truncated: bool = False


@dataclass(frozen=True, slots=True)
class Block:
    """One fenced block: its language tag, its body, and whether it was closed."""

    tag: str
    body: str
    closed: bool
    #: The pattern of a line that closes this block (same fence character, at least as long).
    closing: re.Pattern[str]


def blocks(text: str) -> list[Block]:
    """Return each fenced block of ``text`` in order (an unclosed last one included)."""
    out: list[Block] = []
    pos = 0
    while True:
        opening = _FENCE.search(text, pos)
        if opening is None:
            return out
        fence, tag = opening.group(1), opening.group(2).lower()
        closing = re.compile(rf"^[ \t]*{re.escape(fence[0])}{{{len(fence)},}}[ \t]*$", re.MULTILINE)
        found = closing.search(text, opening.end())
        if found is None:
            out.append(Block(tag, text[opening.end() :], False, closing))
            return out
        out.append(Block(tag, text[opening.end() : found.start()], True, closing))
        pos = found.end()


def extract_code(response: str, *, which: Literal["all", "last"] = "all") -> ExtractedCode | None:
    """Return the Python code in ``response``, or ``None`` when there is none."""
    found = blocks(response)
    if found:
        tagged = [b for b in found if b.tag in _PYTHON_TAGS]
        chosen = tagged or [b for b in found if b.tag == ""]
        if chosen:
            if which == "last":
                chosen = chosen[-1:]
            code = "\n\n".join(b.body.rstrip("\n") for b in chosen) + "\n"
            if not code.strip():
                return None
            truncated = not chosen[-1].closed
            return ExtractedCode(code, "fenced", len(chosen), truncated)
        return None
    if not response.strip():
        return None
    try:
        parse_module(response)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        # ValueError: null bytes; RecursionError/MemoryError: absurd nesting. None of
        # them is a program this grader can run; the caller reports no_code.
        return None
    return ExtractedCode(response if response.endswith("\n") else response + "\n", "raw", 0)


def extract_source(
    response: str, tags: tuple[str, ...], *, which: Literal["all", "last"] = "all"
) -> ExtractedCode | None:
    """Return the code in ``response`` for a language known by its fence ``tags``.

    The same rules as :func:`extract_code`, except that with no fence the raw
    text is the code whatever it is (no parser here decides; the compiler
    will), and blocks tagged for another language are never taken.
    """
    found = blocks(response)
    if found:
        tagged = [b for b in found if b.tag in tags]
        chosen = tagged or [b for b in found if b.tag == ""]
        if not chosen:
            return None
        if which == "last":
            chosen = chosen[-1:]
        code = "\n\n".join(b.body.rstrip("\n") for b in chosen) + "\n"
        if not code.strip():
            return None
        return ExtractedCode(code, "fenced", len(chosen), not chosen[-1].closed)
    if not response.strip():
        return None
    return ExtractedCode(response if response.endswith("\n") else response + "\n", "raw", 0)
