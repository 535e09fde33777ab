r"""Whether a final answer equals the gold: exact arithmetic first, then math-verify, then a veto.

Gold and prediction are keyword-only everywhere (open-r1 once called
``verify(answer, gold)`` with them swapped, open-r1#557). The order of the checks:

1. **Exact numbers.** Integers, decimals, fractions (``a/b``, ``\\frac{a}{b}``),
   thousands separators, a sign, a percent, a trailing unit: read as
   :class:`fractions.Fraction` and compared exactly, so ``1/2004!`` and ``1/2006!``
   (math-verify#14, rounded to the same float) can never meet.
2. **math-verify** (``parse`` and ``verify``, as TRL's ``accuracy_reward`` uses it)
   for everything else: LaTeX, sets, intervals, relations, matrices. Its own
   ``signal.alarm`` timeouts are off: the worker process that runs this module is
   killed from outside when a check runs past its limit.
3. **A veto** on what math-verify accepts: two closed-form numbers whose exact
   difference is not zero are different, whatever a float rounding says; a
   ``\\pm`` on one side only is a set against a number (math-verify#14).
   Before parsing, ``\\sqrt(2)`` is ``\\sqrt{2}`` (math-verify#41 read ``4\\sqrt(2)`` as 4).

A gold that does not parse raises :class:`GoldUnparseable`: the task's fault, for
the grader to report typed, never a verdict.

This module runs in the answer workers (``pool``); it is pure apart from the
parse caches it keeps per process.
"""

from __future__ import annotations

import logging
import math
import re
import string
import unicodedata
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache
from itertools import pairwise
from typing import Any, Literal

from arbiter.graders.answers.extraction import boxed_spans, is_prose

__all__ = [
    "GoldUnparseable",
    "Verdict",
    "equivalent",
    "exact_number",
    "gold_text",
    "normalize_latex",
    "normalize_text",
    "read_gold",
    "warm_up",
]

Format = Literal["math", "number", "choice", "text"]


class GoldUnparseable(ValueError):
    """The gold answer cannot be read in its format: the task's fault, not the candidate's."""


@dataclass(frozen=True, slots=True)
class Verdict:
    """Whether the prediction equals the gold, and which check decided."""

    equal: bool
    how: str


# --------------------------------------------------------------------------- text


_UNITS = (
    "cm|mm|km|m|kg|g|mg|s|sec|seconds?|minutes?|mins?|hours?|hrs?|days?|weeks?|months?|years?"
    "|meters?|metres?|centimeters?|kilometers?|inches|inch|in|feet|foot|ft|yards?|miles?|mph"
    "|units?|square units|sq units|degrees?|deg|dollars?|cents?|pounds?|lbs?|ounces?|oz"
    "|liters?|l|ml"
    "|grams?|kilograms?|people|students?|apples?|points?|ways|cm\\^2|m\\^2|cm\\^3|m\\^3"
    "|cm\\^\\{2\\}|m\\^\\{2\\}|cm\\^\\{3\\}|m\\^\\{3\\}|square feet|square meters|sq ft|km/h|m/s"
)
_TRAILING_TEXT_UNIT = re.compile(
    r"\s*\\(?:text|textbf|mathrm|mbox)\s*\{\s*(?:" + _UNITS + r")\s*\.?\s*\}\s*$", re.IGNORECASE
)
_TRAILING_UNIT = re.compile(r"(?<=[\d}.])\s*(?:" + _UNITS + r")\.?\s*$", re.IGNORECASE)
_SPACING = re.compile(r"\\[,;:! ]|\\quad|\\qquad|~|\\displaystyle|\\left|\\right|\\mathrm\{\s*\}")
_PERCENT_WORD = re.compile(r"(?<=[\d$}])\s*(?:percent|per cent|percentage|pct)\b\.?", re.IGNORECASE)
_SQRT_PAREN = re.compile(r"\\sqrt\s*\(([^()]*)\)")
_SQRT_BARE = re.compile(r"\\sqrt\s*(\d+|[a-zA-Z])")
_FRAC_BARE = re.compile(r"\\[dt]?frac\s*(\d)\s*(\d)")
_DEGREES = re.compile(r"\^\s*\{?\s*\\circ\s*\}?|°|\\degree")
_TEXT_WRAP = re.compile(r"^\\(?:text|textbf|mathrm|mbox)\s*\{([^{}]*)\}$")


def normalize_latex(answer: str) -> str:
    r"""Return ``answer`` without what never changes its value (spacing, units, delimiters).

    ``\dfrac`` is ``\frac``; ``\sqrt(2)`` and ``\sqrt2`` are ``\sqrt{2}``; degrees,
    ``\left``/``\right``, thin spaces and a trailing unit word go; math delimiters
    and a final full stop go.
    """
    # NFKC folds full-width forms; the minus sign (U+2212) is a hyphen-minus here.
    s = unicodedata.normalize("NFKC", answer).replace("\u2212", "-").strip()
    for left, right in (("$$", "$$"), ("$", "$"), ("\\(", "\\)"), ("\\[", "\\]")):
        if s.startswith(left) and s.endswith(right) and len(s) > 2 * len(left):
            s = s[len(left) : -len(right)].strip()
    s = s.rstrip(".").strip()
    s = re.sub(r",\\!\s*", ",", s).replace("{,}", ",")
    s = _SPACING.sub(" ", s)
    s = _PERCENT_WORD.sub(r"\\%", s)
    if re.fullmatch(r"\$[^$]*\$\s*\\?%", s):
        s = s.replace("$", " ")  # "$28$ %": the percent outside the math
    s = s.replace("\\dfrac", "\\frac").replace("\\tfrac", "\\frac")
    s = s.replace("\\neq", "\\ne").replace("\\leq", "\\le").replace("\\geq", "\\ge")
    s = _SQRT_PAREN.sub(r"\\sqrt{\1}", s)
    s = _SQRT_BARE.sub(r"\\sqrt{\1}", s)
    s = _FRAC_BARE.sub(r"\\frac{\1}{\2}", s)
    s = _DEGREES.sub("", s)
    s = _TRAILING_TEXT_UNIT.sub("", s)
    s = _TRAILING_UNIT.sub("", s)
    wrapped = _TEXT_WRAP.match(s.strip())
    if wrapped:
        s = wrapped.group(1)
    s = " ".join(s.split())
    return _NUMBER_WORDS.get(s.casefold(), s)


#: A number written as a word is that number ("five" is 5), whole answers only.
_NUMBER_WORDS = {
    word: str(value)
    for value, word in enumerate(
        [
            "zero",
            "one",
            "two",
            "three",
            "four",
            "five",
            "six",
            "seven",
            "eight",
            "nine",
            "ten",
            "eleven",
            "twelve",
            "thirteen",
            "fourteen",
            "fifteen",
            "sixteen",
            "seventeen",
            "eighteen",
            "nineteen",
            "twenty",
        ]
    )
}

_ARTICLES = re.compile(r"\b(?:a|an|the)\b")


def normalize_text(answer: str) -> str:
    """Return a short text answer folded for comparison (case, accents, punctuation, articles)."""
    s = normalize_latex(answer)
    s = re.sub(r"\\(?:text|textbf|mathrm|mbox)\s*\{([^{}]*)\}", r"\1", s)
    s = unicodedata.normalize("NFKD", s.casefold())
    s = "".join(c for c in s if not unicodedata.combining(c))
    s = s.translate(str.maketrans("", "", string.punctuation))
    s = _ARTICLES.sub(" ", s)
    return " ".join(s.split())


# ----------------------------------------------------------------------- numbers


_INT = r"\d+"
_GROUPED = r"\d{1,3}(?:,\d{3})+"
_DEC = rf"(?:{_GROUPED}|{_INT})?(?:\.\d+)?"
_NUMBER = re.compile(
    rf"^(?P<sign>[-+])?\s*\\?\$?\s*(?P<num>{_GROUPED}(?:\.\d+)?|\d+\.\d*|\.\d+|\d+)"
    r"(?:\s*(?:[eE]|\\times\s*10\s*\^|\*\s*10\s*\*\*)\s*\{?\s*(?P<exp>[-+]?\d+)\s*\}?)?"
    r"\s*(?P<pct>\\?%)?$"
)
_FRACTION = re.compile(
    r"^(?P<sign>[-+])?\s*(?:\\frac\s*\{\s*(?P<n1>[-+]?\d+)\s*\}\s*\{\s*(?P<d1>[-+]?\d+)\s*\}"
    r"|(?P<n2>\d+)\s*/\s*(?P<d2>\d+))$"
)


def _minus(s: str | None) -> int:
    return -1 if s == "-" else 1


def exact_number(answer: str) -> tuple[Fraction, bool] | None:
    r"""Read ``answer`` as an exact rational, with whether it was written as a percent.

    ``1,000`` is 1000 (thousands), ``0.5`` is 1/2, ``\frac{3}{6}`` is 1/2, ``-2/4`` is
    -1/2, ``2.5e3`` is 2500, ``50\%`` is 50 (with the percent flag). Anything else is
    ``None``: not a number to compare exactly.
    """
    s = normalize_latex(answer).replace("{,}", ",")
    if re.fullmatch(r"[-+]?(?:\d+,(?:\d{1,2}|\d{4,})|0,\d+)", s):
        s = s.replace(",", ".")  # a decimal comma: no thousands group has 1, 2 or 4+ digits
    s = s.replace(" ", "") if re.fullmatch(r"[-+]?\d{1,3}(?: \d{3})+(?:\.\d+)?", s) else s
    match = _NUMBER.match(s)
    if match:
        value = Fraction(match.group("num").replace(",", ""))
        if match.group("exp"):
            exp = match.group("exp")
            value *= Fraction(10) ** int(exp)
        return value * _minus(match.group("sign")), bool(match.group("pct"))
    match = _FRACTION.match(s)
    if match:
        num = match.group("n1") or match.group("n2")
        den = match.group("d1") or match.group("d2")
        n, d = int(num), int(den)
        if d == 0:
            return None
        return Fraction(n, d) * _minus(match.group("sign")), False
    return None


def _numbers_equal(gold: tuple[Fraction, bool], pred: tuple[Fraction, bool]) -> bool:
    (g, g_pct), (p, p_pct) = gold, pred
    if g == p:
        return True
    # 50% is one half: a percent on one side only may be read either way.
    if g_pct != p_pct:
        return (g / 100 if g_pct else g) == (p / 100 if p_pct else p)
    return False


def _within(gold: Fraction, pred: Fraction, tolerance: float) -> bool:
    diff = abs(gold - pred)
    tol = Fraction(tolerance)
    return diff <= tol or diff <= tol * abs(gold)


# ----------------------------------------------------------------- math-verify


logging.getLogger("math_verify").setLevel(logging.CRITICAL)
logging.getLogger("latex2sympy2_extended").setLevel(logging.CRITICAL)


def warm_up() -> None:
    """Import math-verify and sympy, and parse once, so that no check pays for it."""
    _parse("\\frac{1}{2}")


@lru_cache(maxsize=4096)
def _parse(text: str) -> tuple[Any, ...]:
    from math_verify import (  # type: ignore[import-untyped]
        ExprExtractionConfig,
        LatexExtractionConfig,
        parse,
    )

    # A bare answer is math; a sentence is handed over as text, for math-verify to find
    # its final expression in (as it reads a free-form response).
    wrapped = text if "$" in text or is_prose(text) else f"${text}$"
    return tuple(
        parse(
            wrapped,
            [LatexExtractionConfig(boxed_match_priority=0), ExprExtractionConfig()],
            parsing_timeout=None,
        )
    )


def _is_text(answer: str) -> bool:
    r"""Whether ``answer`` is words (a ``\text{}`` or a sentence), not a formula."""
    return bool(normalize_text(answer)) and ("\\text" in answer or is_prose(answer))


def _values(parsed: tuple[Any, ...]) -> list[Any]:
    """The parsed values math-verify found (it appends the matched text as a string)."""
    return [x for x in parsed if not isinstance(x, str)]


def _closed_values(expr: Any) -> list[Any]:
    """The closed-form numbers an expression stands for (a number, a set's, a tuple's)."""
    import sympy  # type: ignore[import-untyped]

    if isinstance(expr, sympy.Expr) and not expr.free_symbols and expr.is_number:
        return [expr]
    return []


def _veto(gold: Any, pred: Any) -> str | None:
    """Why two parsed answers that math-verify accepts are different after all, if they are."""
    import sympy

    g_values, p_values = _closed_values(gold), _closed_values(pred)
    if len(g_values) == 1 and len(p_values) == 1:
        g, p = g_values[0], p_values[0]
        if g.is_rational and p.is_rational:
            # Exact: 1/2004! and 1/2006! are the same float, never the same rational.
            if sympy.expand((g - p).doit()) != 0:
                return "exact rationals differ"
            return None
        if g.is_Float or p.is_Float or g.has(sympy.Float) or p.has(sympy.Float):
            return None  # a rounded decimal was compared as such, on purpose
        diff = sympy.N(g - p, 40)
        scale = max(abs(sympy.N(g, 40)), abs(sympy.N(p, 40)), sympy.Float(1e-300))
        if diff.is_number and diff.is_real and abs(diff) > scale * sympy.Float("1e-25"):
            return "closed forms differ beyond rounding"
    g_set = isinstance(gold, sympy.FiniteSet)
    p_set = isinstance(pred, sympy.FiniteSet)
    if g_set != p_set:
        several, single = (gold, pred) if g_set else (pred, gold)
        if len(several.args) > 1 and _closed_values(single):
            # ±2021 is two values; 2021 is one (math-verify#14).
            return "several values on one side, one number on the other"
    return None


def _math_equal(*, gold: str, prediction: str) -> Verdict:
    from math_verify import verify

    gold_parsed = _parse(normalize_latex(gold_text(gold)))
    if not _values(gold_parsed) and _is_text(gold):
        # A worded gold ("\text{The midpoints form a regular hexagon}"): compared as text.
        return Verdict(normalize_text(gold) == normalize_text(prediction), "text")
    if not _values(gold_parsed):
        raise GoldUnparseable(f"math-verify cannot parse the gold {gold[:80]!r}")
    pred_parsed = _parse(normalize_latex(prediction))
    if not _values(pred_parsed):
        return Verdict(False, "prediction unparseable")
    accepted = verify(
        list(gold_parsed),
        list(pred_parsed),
        timeout_seconds=None,
    )
    if not accepted:
        return Verdict(False, "math-verify")
    why = _veto(_values(gold_parsed)[0], _values(pred_parsed)[0])
    if why is not None:
        return Verdict(False, f"veto: {why}")
    return Verdict(True, "math-verify")


# --------------------------------------------------------------------- formats


def _choice_label(text: str, labels: list[str], texts: list[str]) -> str | None:
    raw = re.sub(r"\\text\s*\{([^{}]*)\}", r"\1", normalize_latex(text)).strip("* ")
    # A label alone ("B", "(b)", "B."), before any folding: "A" is no article here.
    alone = re.fullmatch(r"\(?([A-Za-z])\)?[.:]?", raw)
    if alone and alone.group(1).upper() in labels:
        return alone.group(1).upper()
    folded = normalize_text(raw)
    for label, option in zip(labels, texts, strict=False):
        if option and folded == normalize_text(option):
            return label
    # A label with its option's text: "(B) Paris".
    both = re.fullmatch(r"\(?([A-Za-z])\)?[.:)]?\s+(.+)", raw)
    if both and both.group(1).upper() in labels:
        label = both.group(1).upper()
        index = labels.index(label)
        if index < len(texts) and normalize_text(both.group(2)) == normalize_text(texts[index]):
            return label
    return None


def _choice_equal(*, gold: str, prediction: str, choices: list[str] | None) -> Verdict:
    options = list(choices or [])
    if options and all(re.fullmatch(r"\(?[A-Za-z]\)?", o.strip()) for o in options):
        labels, texts = [o.strip().strip("()").upper() for o in options], [""] * len(options)
    else:
        labels = [chr(ord("A") + i) for i in range(len(options) or 26)]
        texts = options
    gold_label = _choice_label(gold, labels, texts)
    if gold_label is None:
        raise GoldUnparseable(f"the gold {gold[:80]!r} is none of the choices {labels}")
    pred_label = _choice_label(prediction, labels, texts)
    return Verdict(pred_label == gold_label, "choice label")


_JOINER = re.compile(r"[\s,;.$()\[\]\\]*(?:\w+\s+)?(?:and)?[\s,;.$()\[\]\\]*")


def gold_text(gold: str) -> str:
    r"""Return the gold as one answer: several boxes joined by "and" or commas are one list.

    ``\boxed{1} and \boxed{-2}`` is the list ``1, -2``. Boxes with anything else
    between them (``\boxed{1} no no \boxed{2}``) leave the task's answer unclear.

    Raises:
        GoldUnparseable: several boxes that do not read as one list.
    """
    spans = boxed_spans(gold)
    boxes = list(dict.fromkeys(content.strip() for _, _, content in spans))
    if len(boxes) <= 1:
        return gold
    separators = [gold[a_end:b_start] for (_, a_end, _), (b_start, _, _) in pairwise(spans)]
    if any(not _JOINER.fullmatch(sep) for sep in separators):
        raise GoldUnparseable("the gold holds several boxed answers that are not one list")
    return ", ".join(boxes)


def read_gold(
    *, gold: str, answer_format: Format = "math", choices: list[str] | None = None
) -> None:
    """Check that ``gold`` can be read in ``answer_format`` (its parse is cached for the check).

    Raises:
        GoldUnparseable: it cannot: the task's fault.
    """
    gold = gold_text(gold)
    if answer_format == "choice":
        _choice_equal(gold=gold, prediction=gold, choices=choices)
    elif answer_format == "text":
        if not normalize_text(gold):
            raise GoldUnparseable("the gold text is empty")
    elif exact_number(gold) is None:
        if answer_format == "number":
            raise GoldUnparseable(f"the gold {gold[:80]!r} is not a number")
        if not normalize_latex(gold).strip():
            raise GoldUnparseable("the gold answer is empty")
        if not _values(_parse(normalize_latex(gold))) and not _is_text(gold):
            raise GoldUnparseable(f"math-verify cannot parse the gold {gold[:80]!r}")


def equivalent(
    *,
    gold: str,
    prediction: str,
    answer_format: Format = "math",
    choices: list[str] | None = None,
    tolerance: float | None = None,
) -> Verdict:
    """Return whether ``prediction`` states the same answer as ``gold``.

    Raises:
        GoldUnparseable: the gold cannot be read in ``answer_format``.
    """
    if answer_format == "choice":
        return _choice_equal(gold=gold, prediction=prediction, choices=choices)
    if answer_format == "text":
        folded = normalize_text(gold)
        if not folded:
            raise GoldUnparseable("the gold text is empty")
        return Verdict(folded == normalize_text(prediction), "text")
    gold_number = exact_number(gold)
    if answer_format == "number":
        if gold_number is None:
            raise GoldUnparseable(f"the gold {gold[:80]!r} is not a number")
        pred_number = exact_number(prediction)
        if pred_number is None:
            return Verdict(False, "prediction is not a number")
        if tolerance is not None and tolerance > 0:
            return Verdict(_within(gold_number[0], pred_number[0], tolerance), "tolerance")
        return Verdict(_numbers_equal(gold_number, pred_number), "exact number")
    if normalize_latex(gold).replace(" ", "") == normalize_latex(prediction).replace(" ", ""):
        if not normalize_latex(gold):
            raise GoldUnparseable("the gold answer is empty")
        return Verdict(True, "same text")
    pred_number = exact_number(prediction)
    if gold_number is not None and pred_number is not None:
        if _numbers_equal(gold_number, pred_number):
            return Verdict(True, "exact number")
        written = _written_out(gold=gold_number[0], prediction=prediction, value=pred_number[0])
        return Verdict(written, "repeating decimal written out" if written else "exact number")
    return _math_equal(gold=gold, prediction=prediction)


_DECIMALS = re.compile(r"^[-+]?\d*\.(\d+)$")
#: A decimal must carry at least this many places to stand for a repeating one (0.33 is not 1/3).
MIN_PLACES = 4


def _written_out(*, gold: Fraction, prediction: str, value: Fraction) -> bool:
    """Whether ``prediction`` is ``gold``'s repeating decimal cut after its own places.

    ``1/12`` has no finite decimal: ``0.083333`` (or ``0.0833333333333333``) is it,
    rounded or truncated where the writer stopped; ``0.0834`` is not. A gold with a
    finite decimal is compared exactly, never this way.
    """
    digits = _DECIMALS.match(normalize_latex(prediction).replace(" ", ""))
    if digits is None or len(digits.group(1)) < MIN_PLACES:
        return False
    denominator = gold.denominator
    for prime in (2, 5):
        while denominator % prime == 0:
            denominator //= prime
    if denominator == 1:
        return False  # a finite decimal: written in full or wrong
    scale = 10 ** len(digits.group(1))
    scaled = value * scale
    if scaled.denominator != 1:
        return False
    exact = gold * scale
    truncated = math.floor(exact) if exact >= 0 else math.ceil(exact)
    rounded = math.floor(exact + Fraction(1, 2))
    return scaled.numerator in (truncated, rounded)
