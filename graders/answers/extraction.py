r"""Find a response's one final answer, and refuse the ways of betting on several (pure).

Only the final answer counts: the text after the last closed ``</think>`` (a think
block that never closes has no final answer), then the last ``\\boxed{}``, the
``<answer>`` tag, or the last line, as the task's ``extract`` says. A response that
hedges (several different final answers, "A or B", a list where one value is asked
for, the same answer spammed, an empty answer, the problem's own expression echoed
back) has no answer to grade: it scores 0 and the hedge is recorded as a violation
the rubric can penalise. Nothing here runs the candidate's text through a parser
whose time is unbounded: the work is linear in the response, so it runs in the
service; equivalence runs in the killable workers.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field
from typing import Literal

from arbiter.graders.types import Violation, ViolationType

__all__ = [
    "MAX_REPEATS",
    "Extraction",
    "after_thinking",
    "boxed_contents",
    "boxed_spans",
    "choice_labels",
    "extract_answer",
    "hedged_alternatives",
    "is_prose",
    "squash",
]

Mode = Literal["boxed", "answer_tag", "last_line", "auto"]
Format = Literal["math", "number", "choice", "text"]

#: How many times the same final answer may be boxed (a model restating its answer
#: in a summary boxes it two or three times; more is answer spam).
MAX_REPEATS = 3

_THINK_OPEN = re.compile(r"<think(?:ing)?>", re.IGNORECASE)
_THINK_CLOSE = re.compile(r"</think(?:ing)?>", re.IGNORECASE)
_ANSWER_TAG = re.compile(r"<answer>(.*?)</answer>", re.IGNORECASE | re.DOTALL)
_BOX = re.compile(r"\\(?:boxed|fbox)\s*\{")
_BOX_SPACE = re.compile(r"\\boxed +([^\s$]+)")
_GSM8K = re.compile(r"^\s*####\s*(.+?)\s*$", re.MULTILINE)
_PHRASE = re.compile(
    r"(?:final answer|the answer|answer)\s*(?:is|:|=)\s*:?\s*(.+?)\s*$",
    re.IGNORECASE | re.MULTILINE,
)
_LEADING_LABEL = re.compile(
    r"^\s*(?:\*\*)?\s*(?:final answer|answer|the answer is|so the answer is|therefore)"
    r"\s*(?:\*\*)?\s*[:\uff1a]?\s*(?:\*\*)?\s*",
    re.IGNORECASE,
)
# Words and symbols that join alternatives: "3 or 4", "x = 1 \lor x = 2", "A/B".
_OR = re.compile(r"(?:\bor\b|\\lor\b|\\vee\b|\\text\{\s*or\s*\}|\\mbox\{\s*or\s*\}|\u2228)")
_AND = re.compile(r"(?:\band\b|\\text\{\s*and\s*\}|\\land\b|\\wedge\b)")
_SPACES = re.compile(r"\s+")


@dataclass(frozen=True, slots=True)
class Extraction:
    """A response's final answer, or why it has none.

    ``answer`` is ``None`` when there is nothing to grade; ``violations`` then says
    whether that was a hedge (a violation the rubric can penalise) or simply no
    answer (no violation: a wrong-format response is a 0, not a hack).
    """

    answer: str | None
    where: str
    reason: str = ""
    violations: tuple[Violation, ...] = field(default=())


def squash(text: str) -> str:
    """Return ``text`` with every run of white space removed and NFKC applied.

    Two answers that differ only by spacing are one answer: padding must neither
    pay nor cost (reasoning-gym PR #129 paid 0.5 for a correct answer with a
    space, and its maintainers warned that RL would learn to pad).
    """
    return _SPACES.sub("", unicodedata.normalize("NFKC", text))


def boxed_contents(text: str) -> list[str]:
    r"""Return the contents of every ``\boxed{...}`` and ``\fbox{...}`` in ``text``, in order.

    Braces are matched, so ``\boxed{\frac{1}{2}}`` is ``\frac{1}{2}``; an unclosed
    box ends the text (its content runs to the end). ``\boxed 5`` (no braces) is
    read up to the next space, as the MATH solutions write it.
    """
    return [content for _, _, content in boxed_spans(text)]


def boxed_spans(text: str) -> list[tuple[int, int, str]]:
    """Return ``(start, end, content)`` of every outermost box in ``text``, in order."""
    found: list[tuple[int, int, str]] = []
    for match in _BOX.finditer(text):
        depth, i = 1, match.end()
        start = i
        while i < len(text) and depth:
            c = text[i]
            if c == "\\":
                i += 2
                continue
            if c == "{":
                depth += 1
            elif c == "}":
                depth -= 1
            i += 1
        content = text[start : i - 1] if depth == 0 else text[start:]
        found.append((match.start(), min(i, len(text)), content))
    for match in _BOX_SPACE.finditer(text):
        found.append((match.start(), match.end(), match.group(1)))
    found.sort()
    # A box inside a box is part of the outer one's content, not a second answer.
    out: list[tuple[int, int, str]] = []
    end = -1
    for start, stop, content in found:
        if start < end:
            continue
        out.append((start, stop, content))
        end = stop
    return out


def after_thinking(response: str) -> tuple[str | None, str]:
    """Return the text after the last closed think block, or None (and why) if one never closes."""
    return _after_thinking(response)


def _after_thinking(response: str) -> tuple[str | None, str]:
    """Return the text after the last closed think block, or None when one never closes."""
    closes = list(_THINK_CLOSE.finditer(response))
    tail = response[closes[-1].end() :] if closes else response
    if _THINK_OPEN.search(tail):
        return None, "a <think> block never closes"
    return tail, ""


_DISPLAY_END = re.compile(
    r"(?:\\\[(?P<a>(?:(?!\\\[).)*?)\\\]|\$\$(?P<b>[^$]*)\$\$)\s*\.?\s*$", re.DOTALL
)


def _last_line(text: str) -> str | None:
    # A display block that ends the text is one answer, however many lines it spans.
    block = _DISPLAY_END.search(text)
    if block is not None:
        inner = (block.group("a") or block.group("b") or "").strip()
        if inner:
            return inner
    for line in reversed(text.splitlines()):
        if line.strip():
            return line.strip()
    return None


def _strip_decoration(answer: str) -> str:
    """Strip what surrounds an answer on a line: a label, bold, math delimiters, a full stop."""
    answer = _LEADING_LABEL.sub("", answer).strip()
    answer = answer.strip("*").strip().rstrip(".").strip()
    for left, right in (("$$", "$$"), ("$", "$"), ("\\(", "\\)"), ("\\[", "\\]")):
        if answer.startswith(left) and answer.endswith(right) and len(answer) > len(left) * 2:
            answer = answer[len(left) : -len(right)].strip()
    return answer.rstrip(".").strip()


def _candidates(text: str, mode: Mode) -> tuple[list[str], str]:
    """Return the final-answer candidates of ``text`` for ``mode``, and where they were."""
    if mode in ("answer_tag", "auto"):
        tags = _ANSWER_TAG.findall(text)
        if tags:
            last = tags[-1]
            inner = boxed_contents(last)
            return ([inner[-1]] if inner else [last]), "answer_tag"
        if mode == "answer_tag":
            return [], "answer_tag"
    if mode in ("boxed", "auto"):
        boxes = boxed_contents(text)
        if boxes:
            return boxes, "boxed"
        if mode == "boxed":
            return [], "boxed"
    if mode == "auto":
        marked = _GSM8K.findall(text)
        if marked:
            return [marked[-1]], "gsm8k_marker"
        phrases = _PHRASE.findall(text)
        if phrases:
            return [phrases[-1]], "answer_phrase"
    line = _last_line(text)
    return ([line] if line is not None else []), "last_line"


def hedged_alternatives(answer: str) -> bool:
    r"""Whether ``answer`` offers alternatives ("3 or 4", ``x=1 \lor x=2``)."""
    return bool(_OR.search(answer))


_LABEL = re.compile(r"(?<![A-Za-z\\])\(?([A-Z])\)?(?![A-Za-z])")


def choice_labels(answer: str, labels: list[str]) -> list[str]:
    """Return the distinct choice labels named in ``answer``, in order (``(B)``, ``B.``, ``B``)."""
    text = re.sub(r"\\text\{([^{}]*)\}", r"\1", answer)
    text = text.replace("$", " ").replace("*", " ")
    wanted = {label.upper() for label in labels}
    out: list[str] = []
    for match in _LABEL.finditer(text):
        label = match.group(1)
        if label in wanted and label not in out:
            out.append(label)
    return out


def _violation(kind: ViolationType, detail: str, snippet: str) -> Violation:
    return Violation(type=kind, detail=detail, snippet=snippet[:200], source="static")


def _is_list(answer: str) -> bool:
    """Whether ``answer`` is a list of several values (top-level commas or semicolons)."""
    depth = 0
    i = 0
    text = answer.replace(",\\!", ",").replace("{,}", ",").replace(", ", ",")
    if re.fullmatch(r"\s*[-+]?\$?\d{1,3}(?:,\d{3})+(?:\.\d+)?\s*", text):
        return False  # one number with thousands separators
    if re.fullmatch(r"\s*[-+]?(?:\d+,(?:\d{1,2}|\d{4,})|0,\d+)\s*", text):
        return False  # one number with a decimal comma (1,22; 0,111)
    text = text.replace("\\{", "(").replace("\\}", ")")
    text = text.replace("\\left", "").replace("\\right", "")
    while i < len(text):
        c = text[i]
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        elif c in ",;" and depth == 0:
            # A thousands separator (1,000) is one number, not a list.
            if (
                c == ","
                and re.match(r"\d{3}(?!\d)", text[i + 1 : i + 5])
                and i
                and text[i - 1].isdigit()
            ):
                i += 1
                continue
            return True
        i += 1
    return False


def _several(answer: str) -> bool:
    """Whether ``answer`` holds several values: a list, or values joined by "and"."""
    return _is_list(answer) or bool(_AND.search(answer))


def _gold_several(gold: str) -> bool:
    r"""Whether the gold asks for several values: a list, a set, ``\pm``, several boxes."""
    boxes = boxed_contents(gold)
    if len(set(boxes)) > 1:
        return True
    inner = _strip_decoration(boxes[-1] if boxes else gold)
    return _several(inner) or "\\pm" in inner or (inner.startswith(("\\{", "{")) and "," in inner)


_PROSE = re.compile(r"[A-Za-z]{2,}[\s,]+[A-Za-z]{2,}[\s,]+[A-Za-z]{2,}")


def is_prose(answer: str) -> bool:
    """Whether ``answer`` is a sentence (three words in a row), not a bare answer."""
    return bool(_PROSE.search(re.sub(r"\\[A-Za-z]+", " ", answer)))


def _echoes(answer: str, prompt: str, gold: str) -> bool:
    """Whether ``answer`` is an expression copied from the problem rather than a result."""
    squashed = squash(answer).strip("$")
    if len(squashed) < 3 or squashed == squash(gold).strip("$"):
        return False
    # A bare number or name is too common to call an echo; an expression is not.
    if re.fullmatch(r"-?[\d.,]+|[A-Za-z]+", squashed):
        return False
    if not re.search(r"[+\-*/^\\()]", squashed):
        return False
    return squashed in squash(prompt)


def extract_answer(
    response: str,
    *,
    mode: Mode = "auto",
    answer_format: Format = "math",
    gold: str = "",
    prompt: str = "",
    choices: list[str] | None = None,
) -> Extraction:
    """Return the one final answer of ``response``, or why there is none (pure).

    Args:
        response: the candidate's whole text.
        mode: where the final answer is (``auto`` tries the answer tag, the last box,
            a GSM8K ``####`` line, an "answer is" phrase, then the last line).
        answer_format: the task's format; a ``choice`` answer is a label.
        gold: the gold answer, to tell a list (hedging) from a list the gold asks for.
        prompt: the problem's text, to notice its own expression echoed back.
        choices: the task's choices (``choice`` format).
    """
    text, why = _after_thinking(response)
    if text is None:
        return Extraction(
            None,
            "think",
            why,
            (_violation(ViolationType.UNCLOSED_THINKING, why, response[-200:]),),
        )
    candidates, where = _candidates(text, mode)
    if not candidates:
        return Extraction(None, where, f"no final answer ({where})")
    cleaned = [_strip_decoration(c) for c in candidates]
    distinct = list(dict.fromkeys(squash(c) for c in cleaned))
    if len(distinct) > 1 and _gold_several(gold) and len(cleaned) <= 2 * len(distinct):
        # The gold has several parts (all solutions, each pair) and each box holds one:
        # together they are one answer, compared as a whole (an extra part is wrong).
        parts = list(dict.fromkeys(cleaned))
        return Extraction(", ".join(parts), where)
    if len(distinct) > 1:
        detail = f"{len(distinct)} different final answers: " + " | ".join(distinct[:5])
        return Extraction(
            None, where, detail, (_violation(ViolationType.ANSWER_HEDGING, detail, detail),)
        )
    if len(cleaned) > MAX_REPEATS:
        detail = f"the final answer repeated {len(cleaned)} times (at most {MAX_REPEATS})"
        return Extraction(
            None, where, detail, (_violation(ViolationType.ANSWER_HEDGING, detail, cleaned[0]),)
        )
    answer = cleaned[-1]
    if not squash(answer) or squash(answer) in ("{}", "\\text{}"):
        detail = "the final answer is empty"
        return Extraction(
            None, where, detail, (_violation(ViolationType.EMPTY_ANSWER, detail, candidates[-1]),)
        )
    if answer_format == "choice":
        labels = [chr(ord("A") + i) for i in range(len(choices or []))] or list("ABCDEFGHIJ")
        named = choice_labels(answer, labels)
        if len(named) > 1 and not _gold_several(gold):
            detail = "several choices: " + ", ".join(named)
            return Extraction(
                None, where, detail, (_violation(ViolationType.ANSWER_HEDGING, detail, answer),)
            )
        # One label named ("(B) Paris", "The answer is B"): the label is the answer.
        return Extraction(named[0] if named else answer, where)
    if hedged_alternatives(answer) and not (hedged_alternatives(gold) or _gold_several(gold)):
        detail = "alternatives offered where one answer is asked for"
        return Extraction(
            None, where, detail, (_violation(ViolationType.ANSWER_HEDGING, detail, answer),)
        )
    if (
        answer_format in ("math", "number")
        and not (where in ("last_line", "answer_phrase") and is_prose(answer))
        and _several(answer)
        and not _gold_several(gold)
    ):
        # (A sentence's commas are prose, not a list: its final value is math-verify's to find.)
        detail = "a list of candidates where one answer is asked for"
        return Extraction(
            None, where, detail, (_violation(ViolationType.ANSWER_HEDGING, detail, answer),)
        )
    if prompt and _echoes(answer, prompt, gold):
        detail = "the final answer is the problem's own expression"
        return Extraction(
            None, where, detail, (_violation(ViolationType.ECHOED_PROBLEM, detail, answer),)
        )
    return Extraction(answer, where)
