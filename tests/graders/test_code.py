"""Finding the program in a response."""

from __future__ import annotations

import pytest

from arbiter.graders.code import extract_code

FENCE = "```"


@pytest.mark.parametrize(
    ("response", "code", "source", "blocks"),
    [
        ("def f():\n    return 1", "def f():\n    return 1\n", "raw", 0),
        (f"Here:\n{FENCE}python\nx = 1\n{FENCE}\n", "x = 1\n", "fenced", 1),
        (
            f"{FENCE}py\na = 1\n{FENCE}\ntext\n{FENCE}python\nb = 2\n{FENCE}",
            "a = 1\n\nb = 2\n",
            "fenced",
            2,
        ),
        (f"{FENCE}\nprint(1)\n{FENCE}", "print(1)\n", "fenced", 1),
        (f"{FENCE}bash\nls\n{FENCE}\n{FENCE}python\nok = 1\n{FENCE}", "ok = 1\n", "fenced", 1),
        ("~~~python\nx = 2\n~~~", "x = 2\n", "fenced", 1),
        (f"````python\ns = '''\n{FENCE}\n'''\n````", f"s = '''\n{FENCE}\n'''\n", "fenced", 1),
    ],
)
def test_found(response, code, source, blocks):
    found = extract_code(response)
    assert found is not None
    assert (found.code, found.source, found.blocks) == (code, source, blocks)


@pytest.mark.parametrize(
    "response",
    [
        "",
        "   ",
        "I cannot solve this.",
        f"{FENCE}bash\nrm -rf /\n{FENCE}",
        f"{FENCE}python\n\n{FENCE}",
        "a\x00b",
    ],
)
def test_not_found(response):
    assert extract_code(response) is None


def test_last_block_and_truncation():
    response = f"{FENCE}python\nv = 1\n{FENCE}\nBetter:\n{FENCE}python\nv = 2\n"
    found = extract_code(response, which="last")
    assert found is not None and found.code == "v = 2\n" and found.truncated
