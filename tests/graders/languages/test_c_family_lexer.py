"""The C family's one lexer blanks what each language's own masker blanked, to the character.

:mod:`arbiter.graders.languages.c_family` replaced five near-copies: ``mask`` of
``cpp``, ``java``, ``javascript`` and ``rust``, and Go's mask in ``mutation``, built
from ``go.tokenize``'s tokens. They are kept below, verbatim, as the specification
the lexer preserves (``_old_*``): every text of HumanEvalPack in the five languages
(each field, whole programs made of them, and the other languages' texts too) and
random text rich in the characters that open, close or escape something are masked
alike by both.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from arbiter.graders.languages import c_family, cpp, java, javascript, mutation, rust
from tests.strictness import unavailable

DATA = Path(__file__).resolve().parents[3].parent / "shared" / "data"
#: Each language's HumanEvalPack file.
FILES = {"cpp": "cpp", "java": "java", "javascript": "js", "rust": "rust", "go": "go"}
#: How many random texts each language's lexer is compared on, per strategy.
EXAMPLES = 1_500


# --------------------------------------------------------------- the old maskers, verbatim

_RAW_OPENING = re.compile(r'"([^()\\\s]{0,16})\(')


def _old_cpp_mask(src: str) -> str:
    """``src`` with comments, literals and preprocessor lines blanked to spaces.

    Offsets and newlines are kept, so a position in the result is the same
    position in ``src``. String and character literals keep their quotes.
    """
    out = list(src)
    n = len(src)
    i = 0
    line_start = True  # only blanks since the last newline
    run_quote, run_start = -1, -1  # the last quote seen, and where its word run starts

    def blank(a: int, b: int) -> None:
        for k in range(a, min(b, n)):
            if out[k] != "\n":
                out[k] = " "

    while i < n:
        c = src[i]
        if c == "\n":
            line_start = True
            i += 1
            continue
        if c in " \t\r\f\v":
            i += 1
            continue
        if c == "#" and line_start:
            j = i
            while j < n:
                if src[j] == "\n" and (j == 0 or src[j - 1] != "\\"):
                    break
                if src.startswith("/*", j):  # a comment inside the directive
                    end = src.find("*/", j + 2)
                    j = n if end < 0 else end + 2
                    continue
                j += 1
            blank(i, j)
            i = j
            continue
        line_start = False
        if src.startswith("//", i):
            j = i
            while j < n and not (src[j] == "\n" and src[j - 1] != "\\"):
                j += 1
            blank(i, j)
            i = j
            continue
        if src.startswith("/*", i):
            end = src.find("*/", i + 2)
            j = n if end < 0 else end + 2
            blank(i, j)
            i = j
            continue
        if c == '"':
            raw = re.search(r"(?:u8|[uUL])?R$", src[max(0, i - 3) : i])
            if raw and (i - len(raw.group(0)) == 0 or not _is_word(src[i - len(raw.group(0)) - 1])):
                m = _RAW_OPENING.match(src, i)
                if m:
                    close = ")" + m.group(1) + '"'
                    end = src.find(close, i + len(m.group(0)))
                    j = n if end < 0 else end + len(close)
                    blank(i + 1, j - 1)
                    i = j
                    continue
            j = _literal_end(src, i, '"')
            blank(i + 1, j - 1)
            i = j
            continue
        if c == "'":
            # Where the run of word characters and quotes before this quote starts;
            # a walk that reaches the previous quote's run takes its start (each
            # character is walked once: 1'0'0'... stays linear).
            k = i - 1
            while k >= 0 and (_is_word(src[k]) or src[k] == "'"):
                if k == run_quote:
                    k = run_start - 1
                    break
                k -= 1
            run_quote, run_start = i, k + 1
            if k + 1 < i and src[k + 1].isdigit():  # a digit separator: 1'000'000
                i += 1
                continue
            j = _literal_end(src, i, "'")
            blank(i + 1, j - 1)
            i = j
            continue
        i += 1
    return "".join(out)


def _is_word(c: str) -> bool:
    return c.isalnum() or c == "_"


def _literal_end(src: str, i: int, quote: str) -> int:
    j = i + 1
    n = len(src)
    while j < n:
        if src[j] == "\\":
            j += 2
            continue
        if src[j] == quote:
            return j + 1
        if src[j] == "\n":
            return j
        j += 1
    return n


def _old_java_mask(src: str) -> str:
    """``src`` with comments and string/char literals blanked (newlines kept): same offsets."""
    out = list(src)
    i, n = 0, len(src)

    def blank(a: int, b: int) -> None:
        for k in range(a, min(b, n)):
            if out[k] != "\n":
                out[k] = " "

    while i < n:
        c = src[i]
        if src.startswith("//", i):
            end = src.find("\n", i)
            end = n if end < 0 else end
            blank(i, end)
            i = end
        elif src.startswith("/*", i):
            end = src.find("*/", i + 2)
            end = n if end < 0 else end + 2
            blank(i, end)
            i = end
        elif src.startswith('"""', i):
            end = src.find('"""', i + 3)
            end = n if end < 0 else end + 3
            blank(i + 1, end - 1)
            i = end
        elif c in "\"'":
            k = i + 1
            while k < n and src[k] != c and src[k] != "\n":
                k += 2 if src[k] == "\\" else 1
            blank(i + 1, k)
            i = k + 1
        else:
            i += 1
    return "".join(out)


def _old_javascript_mask(src: str) -> str:
    """``src`` with comments and string/template literals blanked (newlines kept)."""
    out = list(src)
    i, n = 0, len(src)

    def blank(a: int, b: int) -> None:
        for k in range(a, min(b, n)):
            if out[k] != "\n":
                out[k] = " "

    while i < n:
        c = src[i]
        if src.startswith("//", i):
            end = src.find("\n", i)
            end = n if end < 0 else end
            blank(i, end)
            i = end
        elif src.startswith("/*", i):
            end = src.find("*/", i + 2)
            end = n if end < 0 else end + 2
            blank(i, end)
            i = end
        elif c in "\"'`":
            k = i + 1
            while k < n and src[k] != c and (c == "`" or src[k] != "\n"):
                k += 2 if src[k] == "\\" else 1
            blank(i + 1, k)
            i = k + 1
        else:
            i += 1
    return "".join(out)


def _old_rust_mask(text: str) -> str:
    """``text`` with comments and the insides of string and char literals blanked.

    The result has the same length and the same newlines, so positions carry
    over; braces, ``fn`` and ``;`` found in it are code.
    """
    out = list(text)
    n = len(text)
    i = 0

    def blank(a: int, b: int) -> None:
        for k in range(a, min(b, n)):
            if out[k] != "\n":
                out[k] = " "

    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            blank(i, j)
            i = j
        elif text.startswith("/*", i):
            depth, j = 1, i + 2
            while j < n and depth:
                if text.startswith("/*", j):
                    depth, j = depth + 1, j + 2
                elif text.startswith("*/", j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
            blank(i, j)
            i = j
        elif (raw := re.match(r'b?r(#*)"', text[i : i + 300])) and not _ident_char(text, i - 1):
            close = '"' + raw.group(1)
            j = text.find(close, i + raw.end())
            j = n if j < 0 else j + len(close)
            blank(i + raw.end(), j - len(close))
            i = j
        elif c == '"' or (c == "b" and text.startswith('b"', i) and not _ident_char(text, i - 1)):
            j = i + (2 if c == "b" else 1)
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            blank(i + 1, j)
            i = j + 1
        elif c == "'":
            lit = re.match(
                r"'(?:\\(?:x[0-9a-fA-F]{2}|u\{[0-9a-fA-F_]{1,8}\}|.)|[^\\'\n])'", text[i:]
            )
            if lit:
                blank(i + 1, i + lit.end() - 1)
                i += lit.end()
            else:
                i += 1  # a lifetime
        else:
            i += 1
    return "".join(out)


def _ident_char(text: str, i: int) -> bool:
    return 0 <= i < len(text) and (text[i].isalnum() or text[i] == "_")


@dataclass(frozen=True, slots=True)
class _Token:
    """One Go token: ``kind`` is ident, number, string, char or op, at ``start:end``."""

    kind: str
    text: str
    start: int
    end: int


_OPS3 = ("...", "<<=", ">>=", "&^=")
_OPS2 = (
    ":=", "==", "!=", "<=", ">=", "&&", "||", "<-", "++", "--", "+=", "-=", "*=", "/=",
    "%=", "&=", "|=", "^=", "<<", ">>", "&^",
)  # fmt: skip


def _old_go_tokenize(text: str) -> list[_Token]:
    """Split Go source into tokens, leaving out comments and white space.

    Lenient: an unterminated comment, string or character ends at the end of the text.
    """
    tokens: list[_Token] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c in " \t\r\n\f\v":
            i += 1
        elif text.startswith("//", i):
            end = text.find("\n", i)
            i = n if end < 0 else end
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            i = n if end < 0 else end + 2
        elif c == "`":
            end = text.find("`", i + 1)
            end = n if end < 0 else end + 1
            tokens.append(_Token("string", text[i:end], i, end))
            i = end
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            end = min(j + 1, n)
            tokens.append(_Token("string" if c == '"' else "char", text[i:end], i, end))
            i = end
        elif c.isalpha() or c == "_" or ord(c) > 127:
            j = i + 1
            while j < n and (text[j].isalnum() or text[j] == "_" or ord(text[j]) > 127):
                j += 1
            tokens.append(_Token("ident", text[i:j], i, j))
            i = j
        elif c.isdigit() or (c == "." and i + 1 < n and text[i + 1].isdigit()):
            hexa = text[i : i + 2] in ("0x", "0X")
            j = i + 1
            while j < n:
                sign = text[j] in "+-" and text[j - 1] in ("pP" if hexa else "eE")
                if sign or text[j].isalnum() or text[j] in "._":
                    j += 1
                else:
                    break
            tokens.append(_Token("number", text[i:j], i, j))
            i = j
        else:
            for op in (*_OPS3, *_OPS2):
                if text.startswith(op, i):
                    tokens.append(_Token("op", op, i, i + len(op)))
                    i += len(op)
                    break
            else:
                tokens.append(_Token("op", c, i, i + 1))
                i += 1
    return tokens


def _old_go_mask(text: str) -> str:
    """Go source with comments and literal contents blanked (the others' ``mask``, from tokens)."""
    out = [c if c == "\n" else " " for c in text]
    for token in _old_go_tokenize(text):
        if token.kind in ("string", "char"):
            out[token.start] = text[token.start]
            out[token.end - 1] = text[token.end - 1]
        else:
            out[token.start : token.end] = text[token.start : token.end]
    return "".join(out)


# --------------------------------------------------------------- old and new, side by side

OLD: dict[str, Callable[[str], str]] = {
    "cpp": _old_cpp_mask,
    "java": _old_java_mask,
    "javascript": _old_javascript_mask,
    "rust": _old_rust_mask,
    "go": _old_go_mask,
}
#: The masks the project reads sources with: each module's, and mutation's for Go.
NEW: dict[str, Callable[[str], str]] = {
    "cpp": cpp.mask,
    "java": java.mask,
    "javascript": javascript.mask,
    "rust": rust.mask,
    "go": lambda text: mutation.masked("go", text),
}
SYNTAX = {
    "cpp": c_family.CPP,
    "java": c_family.JAVA,
    "javascript": c_family.JAVASCRIPT,
    "rust": c_family.RUST,
    "go": c_family.GO,
}
LANGUAGES = sorted(OLD)

#: The fields of a HumanEvalPack row that hold code, and the programs made of them.
_CODE = ("prompt", "declaration", "canonical_solution", "buggy_solution", "test", "example_test")
_PROGRAMS = (
    ("prompt", "canonical_solution"),
    ("prompt", "buggy_solution"),
    ("declaration", "canonical_solution", "test"),
    ("declaration", "buggy_solution", "example_test"),
    ("import", "declaration", "canonical_solution"),  # Go's solution imports its own
    ("test_setup", "prompt", "canonical_solution", "test"),  # Go's test file
)


def _rows(language: str) -> list[dict[str, str]]:
    path = DATA / f"humanevalpack_{FILES[language]}.jsonl"
    if not path.exists():
        unavailable(f"the equivalence corpus reads HumanEvalPack from {path}, which is absent")
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def _texts(language: str) -> list[str]:
    """Every text field of the language's rows, then the programs its code fields make."""
    rows = _rows(language)
    texts = [value for row in rows for value in row.values() if isinstance(value, str)]
    for fields in _PROGRAMS:
        texts += ["".join(row[f] for f in fields) for row in rows if all(f in row for f in fields)]
    # The code of 16 rows at a time as one text: what a long response reads like.
    texts += [
        "\n".join(row[f] for row in rows[k : k + 16] for f in _CODE)
        for k in range(0, len(rows), 16)
    ]
    return texts


def _first_difference(old: str, new: str) -> str:
    at = next((k for k, (a, b) in enumerate(zip(old, new, strict=False)) if a != b), None)
    at = min(len(old), len(new)) if at is None else at
    return (
        f"at {at}: old {old[max(0, at - 20) : at + 20]!r}, new {new[max(0, at - 20) : at + 20]!r}"
    )


def _assert_same(language: str, text: str) -> None:
    old = OLD[language](text)
    for new in (c_family.mask(SYNTAX[language], text), NEW[language](text)):
        if old != new:
            pytest.fail(f"{language} masks {text[:200]!r} otherwise, {_first_difference(old, new)}")


@pytest.mark.parametrize("language", LANGUAGES)
def test_humanevalpack_is_masked_as_before(language):
    own = _texts(language)
    # Another language's code is text this one may be given too (a wrong answer).
    others = [
        value
        for other in LANGUAGES
        if other != language
        for row in _rows(other)
        for value in row.values()
        if isinstance(value, str)
    ]
    for text in own + others:
        _assert_same(language, text)
    assert len(own) > 164 * 10 and len(others) > 164 * 30


# --------------------------------------------------------------- random text

#: Characters that open, close, escape or prefix a comment or literal in one of the
#: languages, the blanks and newlines around them, and the characters that are words
#: (or digits) to one reading and not another.
_ALPHABET = "/*\"'`#\\\n\t\r\f\v Rrbu8LUx0123456789(){}_$aZé٣\xa0\u2028"
#: Whole openings and closings, so that random text holds them more often than by chance.
_TOKENS = (
    "//", "/*", "*/", '"""', 'R"(', ')"', 'R"d(', ')d"', 'u8R"x(', ')x"', 'LR"', 'uR"',
    'r"', 'r#"', '"#', 'r##"', '"##', 'br"', 'b"', "b'", "'a", "'a'", "'\\n'", "'\\x41'",
    "'\\u{1F600}'", "1'000", "0x1'f", "\\\n", "#define X \\\n", "#include <a/*b*/>\n",
    "`${x}`", "\\\\", "\\'", '\\"', "\n", "\r\n", " ", "\t", "x", "fn", "'static",
)  # fmt: skip

_CHARS = st.text(alphabet=_ALPHABET, max_size=80)
_PIECES = st.lists(st.sampled_from(_TOKENS) | st.text(alphabet=_ALPHABET, max_size=3)).map("".join)


def _check(language: str, text: str) -> None:
    _assert_same(language, text)
    new = NEW[language](text)
    # Offsets carry over: same length, newlines where they were, and every other
    # character is the one it was or a space.
    assert len(new) == len(text)
    assert [k for k, c in enumerate(new) if c == "\n"] == [
        k for k, c in enumerate(text) if c == "\n"
    ]
    assert all(a in (b, " ") for a, b in zip(new, text, strict=True))


@pytest.mark.parametrize("language", LANGUAGES)
@settings(max_examples=EXAMPLES, deadline=None)
@given(text=_CHARS)
@example(text='R\n"(a"b)"')  # the R is before a newline: no raw string
@example(text=' R\n"(a"b)"')
@example(text="'" + "a" * 3 + "'\\")
def test_random_characters_are_masked_as_before(language, text):
    _check(language, text)


@pytest.mark.parametrize("language", LANGUAGES)
@settings(max_examples=EXAMPLES, deadline=None)
@given(text=_PIECES)
@example(text="r" + "#" * 298 + '"a"b"' + "#" * 298)  # the longest opening read
@example(text="r" + "#" * 299 + '"a"b"' + "#" * 299)
@example(text="br" + "#" * 297 + '"a"b"' + "#" * 297)
@example(text="br" + "#" * 298 + '"a"b"' + "#" * 298)
@example(text="1'0" * 2_000)
def test_random_openings_and_closings_are_masked_as_before(language, text):
    _check(language, text)


#: Texts on which a walk that restarts, copies the rest of the text, or searches from
#: the start at each position would be quadratic (the old Rust masker copied the rest
#: of the text at each quote).
_LONG = {
    "digit separators": "1'0" * 50_000,
    "quotes": "'" * 100_000,
    "quotes and words": "a'" * 50_000,
    "C++ raw strings": 'R"(' * 50_000,
    "Rust raw strings": 'r#"' * 50_000,
    "Rust raw openings": ("r" + "#" * 299) * 500,
    "nested comments": "/*" * 50_000,
    "continued line comments": "// \\\n" * 30_000,
    "directives": "#/*\n" * 30_000,
    "fences": "`" * 100_000,
}


@pytest.mark.parametrize("language", LANGUAGES)
@pytest.mark.parametrize("text", list(_LONG.values()), ids=list(_LONG))
def test_masking_long_text_takes_linear_time(language, text):
    start = time.process_time()
    masked = c_family.mask(SYNTAX[language], text)
    assert time.process_time() - start < 5.0
    assert len(masked) == len(text)
