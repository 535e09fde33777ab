"""The README renders as its writers meant: short, tables whole, a reward before any figure."""

from __future__ import annotations

import re
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def _outside_code(lines: list[str]) -> list[tuple[int, str]]:
    """The README's lines outside fenced code blocks, with their numbers."""
    out, fenced = [], False
    for number, line in enumerate(lines, 1):
        if line.lstrip().startswith("```"):
            fenced = not fenced
            continue
        if not fenced:
            out.append((number, line))
    return out


def test_every_table_row_belongs_to_a_table() -> None:
    # A blank line inside a table ends it: the rows after it render as text.
    lines = _outside_code(README.read_text(encoding="utf-8").splitlines())
    previous = ""
    for i, (number, line) in enumerate(lines):
        if line.startswith("|"):
            starts = not previous.startswith("|")
            separator = lines[i + 1][1] if i + 1 < len(lines) else ""
            if starts:
                assert re.match(r"^\|( *:?-+:? *\|)+$", separator), (
                    f"README.md:{number}: a table row with no header above it (a blank line "
                    "inside a table?)"
                )
        previous = line


def test_the_first_screen_says_what_how_and_a_first_reward_before_any_figure() -> None:
    text = README.read_text(encoding="utf-8")
    first_reward = text.index("## A first reward")
    assert text.index("## Two commands") < first_reward
    # No measured figure (seconds, a speed-up) before the first reward is shown.
    head = text[:first_reward]
    assert not re.search(r"\d+(\.\d+)? ?(s|ms|x|\u00d7) ", head), re.findall(
        r"[^\n]*\d+(?:\.\d+)? ?(?:s|ms|x|\u00d7) [^\n]*", head
    )
    assert "arbiter score --rubric mixed-rl eval_sets/task-kinds.jsonl" in text[first_reward:]


def test_the_readme_fits_on_two_screens() -> None:
    # Everything else is on the documentation site (docs/, `make docs`).
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 150, f"README.md has {len(lines)} lines; move the rest into docs/"
