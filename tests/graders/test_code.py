"""Finding the program in a response."""

from __future__ import annotations

import time

import pytest
from hypothesis import example, given

from arbiter.graders.code import blocks, extract_code, extract_source
from tests.graders.reader_fuzz import TARGETS, fuzz_settings

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


# --- any text: the extractor answers for every response ----------------------


@fuzz_settings()
@given(TARGETS["code.blocks"].strategy)
@example("`" * 40_000)  # backtracked over every split of the line: 1.5 s
def test_blocks_read_any_text(text):
    TARGETS["code.blocks"].check(text)


@fuzz_settings()
@given(TARGETS["code.extract_code"].strategy)
@example(("```python" + "x" * 40_000, "all"))
def test_extract_code_reads_any_text(args):
    TARGETS["code.extract_code"].check(args)


@fuzz_settings()
@given(TARGETS["code.extract_source"].strategy)
@example(("~" * 40_000, ("cpp",), "last"))
def test_extract_source_reads_any_text(args):
    TARGETS["code.extract_source"].check(args)


@pytest.mark.parametrize("line", ["`" * 400_000, FENCE + "a" * 400_000, "~" * 400_000])
def test_an_opening_line_no_newline_ends_is_read_in_linear_time(line):
    # Quadratic before: about 150 s of CPU for one such 400 KB response, past any
    # grader's deadline (an infra_timeout, ours, caused by the candidate's text).
    start = time.process_time()
    assert blocks(line) == [] and extract_source(line, ("cpp",)) is not None
    assert time.process_time() - start < 5.0
