"""One lexer for the C family's sources: comments and literals blanked, offsets kept.

C++, Java, JavaScript, Rust and Go write comments and literals alike (``//``,
``/* */``, quotes with backslash escapes) and differ in a few forms, each a field
of :class:`Syntax`: C++'s preprocessor lines, raw strings and digit separators,
Java's text blocks, JavaScript's template literals, Rust's nested comments, raw
and byte strings and lifetimes, Go's raw strings. :func:`mask` reads a text once,
left to right, under one language's :class:`Syntax` (:data:`CPP`, :data:`JAVA`,
:data:`JAVASCRIPT`, :data:`RUST`, :data:`GO`); each language's module reads its
sources through it.

Every walk is linear in the text: code is skipped to the next character that may
open something, a literal or comment is searched for its end once and skipped, a
delimiter is read in a bounded window, and the one walk back (a C++ quote's run of
word characters) stops where the previous quote's run began, so ``1'0'0'...``
reads each character once.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import Literal

__all__ = ["CPP", "GO", "JAVA", "JAVASCRIPT", "RUST", "Syntax", "closing", "mask"]


@dataclass(frozen=True, slots=True)
class Syntax:
    """A language's lexical syntax, as far as blanking its comments and literals needs it.

    Every language has ``//`` and ``/* */`` comments. A literal keeps its
    quotes; what is between them is blanked, newlines kept.
    """

    #: Quotes of the literals a newline ends unclosed (a backslash escapes the next
    #: character, a newline too).
    quotes: str
    #: What of a literal of :attr:`quotes` that no quote closes is kept besides its
    #: opening quote: ``"never"`` nothing; ``"always"`` its last character, as if it
    #: closed it (the one before the newline that ends it, or the text's last);
    #: ``"at_end"`` the text's last character where the text ends it, nothing where a
    #: newline does.
    unclosed_keeps_last: Literal["never", "always", "at_end"] = "never"
    #: Quotes of the literals that run on past newlines, with escapes (JavaScript's
    #: template literal, Rust's string).
    multiline_quotes: str = ""
    #: The delimiter that opens and closes a literal with no escapes, over lines (Java's
    #: text block ``"""``, Go's raw string in backquotes): all of it is blanked but
    #: the first and last characters (an unclosed one's last character stands for its
    #: closing).
    fence: str | None = None
    #: A ``#`` first on a line (after blanks) is a directive, blanked to the end of
    #: its line: a backslash before the newline continues it, and a ``/* */`` comment
    #: in it may span lines.
    preprocessor: bool = False
    #: A backslash before the newline continues a ``//`` comment.
    line_comment_continues: bool = False
    #: A ``/*`` inside a block comment opens another that must close first.
    nested_block_comments: bool = False
    #: ``"cpp"``: ``R"delim(...)delim"``, prefixed with ``u8``, ``u``, ``U`` or ``L``
    #: or not, where the ``R`` does not end a longer word; what is between its
    #: quotes is blanked, the delimiter too. ``"rust"``: ``r"..."``, ``r#"..."#``,
    #: ``br"..."`` after no word character; what is between its opening and its
    #: closing is blanked (an unclosed one keeps as many last characters as its
    #: closing would have).
    raw_strings: Literal["cpp", "rust"] | None = None
    #: ``b"..."`` after no word character is a string of :attr:`multiline_quotes`'s
    #: kind, its opening quote blanked with its text.
    byte_strings: bool = False
    #: A ``'`` in a run of word characters and quotes that starts with a digit
    #: separates digits (``1'000'000``): it opens no literal.
    digit_separator: bool = False
    #: A ``'`` opens a character literal only where a whole one follows (``'a'``,
    #: ``'\\n'``, ``'\\x41'``, ``'\\u{1F600}'``); otherwise it starts a lifetime or a
    #: label (``'a``) and is code.
    lifetimes: bool = False
    #: Tabs, carriage returns, form feeds and vertical tabs outside comments and
    #: literals come out as spaces.
    whitespace_to_spaces: bool = False


CPP = Syntax(
    quotes="\"'",
    unclosed_keeps_last="always",
    preprocessor=True,
    line_comment_continues=True,
    raw_strings="cpp",
    digit_separator=True,
)
JAVA = Syntax(quotes="\"'", fence='"""')
JAVASCRIPT = Syntax(quotes="\"'", multiline_quotes="`")
RUST = Syntax(
    quotes="",
    multiline_quotes='"',
    nested_block_comments=True,
    raw_strings="rust",
    byte_strings=True,
    lifetimes=True,
)
GO = Syntax(quotes="\"'", unclosed_keeps_last="at_end", fence="`", whitespace_to_spaces=True)

_BLANKS = " \t\r\f\v"
#: A C++ raw string's prefix, ending at its quote (searched in the three characters before it).
_CPP_RAW_PREFIX = re.compile(r"(?:u8|[uUL])?R\Z")
#: A C++ raw string's opening: its delimiter (at most 16 characters) and ``(``.
_CPP_RAW_OPENING = re.compile(r'"([^()\\\s]{0,16})\(')
#: A Rust raw string's opening, its hashes captured (read within :data:`_RUST_RAW_WINDOW`).
_RUST_RAW_OPENING = re.compile(r'b?r(#*)"')
#: How far a Rust raw string's opening is read: its hashes stop at 298 (rustc's at 255).
_RUST_RAW_WINDOW = 300
#: A whole Rust character literal.
_RUST_CHAR = re.compile(r"'(?:\\(?:x[0-9a-fA-F]{2}|u\{[0-9a-fA-F_]{1,8}\}|.)|[^\\'\n])'")


def _is_word(c: str) -> bool:
    return c.isalnum() or c == "_"


def _after_word(text: str, i: int) -> bool:
    """Whether a word character stands just before ``text[i]``."""
    return i > 0 and _is_word(text[i - 1])


def _quote_stop(text: str, j: int, quote: str, multiline: bool) -> int:
    """Where a literal read from ``j`` stops: its closing quote, a newline or past the end.

    A backslash skips the character after it.
    """
    n = len(text)
    while j < n and text[j] != quote and (multiline or text[j] != "\n"):
        j += 2 if text[j] == "\\" else 1
    return j


@functools.cache
def _next_special(syntax: Syntax) -> re.Pattern[str]:
    """The next character that may start something under ``syntax``; those between are code."""
    special = "/" + syntax.quotes + syntax.multiline_quotes + (syntax.fence or "")[:1]
    if syntax.preprocessor:
        special += "#\n" + _BLANKS  # a directive only starts a line
    if syntax.whitespace_to_spaces:
        special += _BLANKS
    if syntax.raw_strings == "cpp":
        special += '"'
    if syntax.raw_strings == "rust" or syntax.byte_strings:
        special += "br"
    if syntax.digit_separator or syntax.lifetimes:
        special += "'"
    return re.compile("[" + re.escape("".join(sorted(set(special)))) + "]")


def mask(syntax: Syntax, text: str) -> str:
    """``text`` with comments and literals blanked to spaces under ``syntax``.

    The result has the same length and the same newlines, so a position in it is
    the same position in ``text``; its braces, keywords and operators are code.
    """
    out = list(text)
    n = len(text)
    i = 0
    line_start = True  # only blanks since the last newline
    run_quote, run_start = -1, -1  # the last quote seen, and where its word run starts
    next_special = _next_special(syntax)

    def blank(a: int, b: int) -> None:
        for k in range(a, min(b, n)):
            if out[k] != "\n":
                out[k] = " "

    while i < n:
        special = next_special.search(text, i)
        if special is None:
            break
        if special.start() > i:  # code: no blank, no newline where a directive may start
            line_start = False
            i = special.start()
        c = text[i]
        if c == "\n":
            line_start = True
            i += 1
            continue
        if c in _BLANKS:
            if syntax.whitespace_to_spaces:
                out[i] = " "
            i += 1
            continue
        if c == "#" and line_start and syntax.preprocessor:
            j = i
            while j < n:
                if text[j] == "\n" and text[j - 1] != "\\":
                    break
                if text.startswith("/*", j):  # a comment inside the directive
                    end = text.find("*/", j + 2)
                    j = n if end < 0 else end + 2
                    continue
                j += 1
            blank(i, j)
            i = j
            continue
        line_start = False
        if text.startswith("//", i):
            j = text.find("\n", i)
            while syntax.line_comment_continues and j > 0 and text[j - 1] == "\\":
                j = text.find("\n", j + 1)
            j = n if j < 0 else j
            blank(i, j)
            i = j
            continue
        if text.startswith("/*", i):
            if syntax.nested_block_comments:
                depth, j = 1, i + 2
                while j < n and depth:
                    if text.startswith("/*", j):
                        depth, j = depth + 1, j + 2
                    elif text.startswith("*/", j):
                        depth, j = depth - 1, j + 2
                    else:
                        j += 1
            else:
                end = text.find("*/", i + 2)
                j = n if end < 0 else end + 2
            blank(i, j)
            i = j
            continue
        if syntax.raw_strings == "rust" and c in "br" and not _after_word(text, i):
            raw = _RUST_RAW_OPENING.match(text, i, i + _RUST_RAW_WINDOW)
            if raw:
                close = '"' + raw.group(1)
                end = text.find(close, raw.end())
                j = n if end < 0 else end + len(close)
                blank(raw.end(), j - len(close))
                i = j
                continue
        if syntax.raw_strings == "cpp" and c == '"':
            prefix = _CPP_RAW_PREFIX.search(text, max(0, i - 3), i)
            if prefix and not _after_word(text, prefix.start()):
                opening = _CPP_RAW_OPENING.match(text, i)
                if opening:
                    close = ")" + opening.group(1) + '"'
                    end = text.find(close, opening.end())
                    j = n if end < 0 else end + len(close)
                    blank(i + 1, j - 1)
                    i = j
                    continue
        if syntax.fence and text.startswith(syntax.fence, i):
            end = text.find(syntax.fence, i + len(syntax.fence))
            j = n if end < 0 else end + len(syntax.fence)
            blank(i + 1, j - 1)
            i = j
            continue
        if c == "'" and syntax.lifetimes:
            literal = _RUST_CHAR.match(text, i)
            if literal:
                blank(i + 1, literal.end() - 1)
                i = literal.end()
            else:
                i += 1  # a lifetime
            continue
        if c == "'" and syntax.digit_separator:
            # Where the run of word characters and quotes before this quote starts;
            # a walk that reaches the previous quote's run takes its start (each
            # character is walked once: 1'0'0'... stays linear).
            k = i - 1
            while k >= 0 and (_is_word(text[k]) or text[k] == "'"):
                if k == run_quote:
                    k = run_start - 1
                    break
                k -= 1
            run_quote, run_start = i, k + 1
            if k + 1 < i and text[k + 1].isdigit():  # a digit separator: 1'000'000
                i += 1
                continue
        if c in syntax.multiline_quotes or (
            syntax.byte_strings and text.startswith('b"', i) and not _after_word(text, i)
        ):
            quote = text[i + 1] if c == "b" else c
            j = _quote_stop(text, i + 1 + (c == "b"), quote, multiline=True)
            blank(i + 1, j)
            i = j + 1
            continue
        if c in syntax.quotes:
            j = _quote_stop(text, i + 1, c, multiline=False)
            if j < n and text[j] == c:  # closed
                blank(i + 1, j)
                i = j + 1
                continue
            keep = syntax.unclosed_keeps_last == "always" or (
                syntax.unclosed_keeps_last == "at_end" and j >= n
            )
            blank(i + 1, min(j, n) - 1 if keep else j)
            i = j
            continue
        i += 1
    return "".join(out)


_PAIRS = {"(": ")", "[": "]", "{": "}"}


def closing(masked: str, at: int) -> int | None:
    """The index just past the bracket that closes the one at ``at``, or None (unclosed).

    ``masked`` is :func:`mask`'s output, so brackets in comments and literals are blank.
    """
    opener, closer = masked[at], _PAIRS[masked[at]]
    depth = 0
    for i in range(at, len(masked)):
        if masked[i] == opener:
            depth += 1
        elif masked[i] == closer:
            depth -= 1
            if depth == 0:
                return i + 1
    return None
