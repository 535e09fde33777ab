"""The checks of IFEval's 25 verifiable instructions, strict and loose (pure).

Each check reads the response and the instruction's validated arguments
(:mod:`arbiter.graders.instruction_specs`) and says whether it was followed.
The semantics are IFEval's (google-research's ``instruction_following_eval``, as
lm-eval ships it), with these differences, each a way a peer paid for nothing:

* a language that cannot be detected is **not** followed (IFEval counts a
  ``LangDetectException`` as followed: an empty or digits-only answer passed
  ``response_language`` and the case checks);
* keywords and forbidden words are matched as text, not as regular expressions
  (IFEval passes them to ``re`` unescaped: ``c++`` raises, ``.`` matches anything);
* ``english_capital`` detects the language of the text in lower case (langdetect
  reads English in capitals as another language; IFEval asks it of the capitals);
* sentences are split by IFEval's own rule-based splitter, and words for
  ``capital_word_frequency`` by a pattern: no nltk data (punkt) is loaded, so
  nothing is downloaded at run time (lm-eval downloads ``punkt_tab`` at import);
* ``repeat_prompt`` needs a non-empty prompt to repeat (validated; tinker-cookbook#897
  passed every response when it was missing).

Loose mode is IFEval's: the instruction is followed if any of eight variants of the
response follows it (as is, without its first line, its last line, both, each with
``*`` removed).
"""

from __future__ import annotations

import collections
import json
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

__all__ = [
    "CHECKS",
    "CONSTRAINED_RESPONSES",
    "check_instruction",
    "count_words",
    "detect_language",
    "loose_variants",
    "split_into_sentences",
]

#: The answers ``detectable_format:constrained_response`` accepts (IFEval's options).
CONSTRAINED_RESPONSES = ("My answer is yes.", "My answer is no.", "My answer is maybe.")

Args = Mapping[str, Any]


def _compare(count: int, relation: str, threshold: int) -> bool:
    return count < threshold if relation == "less than" else count >= threshold


# ------------------------------------------------------------------------ text units

_ALPHABETS = "([A-Za-z])"
_PREFIXES = "(Mr|St|Mrs|Ms|Dr)[.]"
_SUFFIXES = "(Inc|Ltd|Jr|Sr|Co)"
_STARTERS = (
    r"(Mr|Mrs|Ms|Dr|Prof|Capt|Cpt|Lt|He\s|She\s|It\s|They\s|Their\s|Our\s|We\s|But\s"
    r"|However\s|That\s|This\s|Wherever)"
)
_ACRONYMS = "([A-Z][.][A-Z][.](?:[A-Z][.])?)"
_WEBSITES = "[.](com|net|org|io|gov|edu|me)"
_DIGITS = "([0-9])"
_MULTIPLE_DOTS = r"\.{2,}"


def split_into_sentences(text: str) -> list[str]:
    """Split ``text`` into sentences by IFEval's rules (abbreviations, decimals, sites)."""
    text = " " + text + "  "
    text = text.replace("\n", " ")
    text = re.sub(_PREFIXES, "\\1<prd>", text)
    text = re.sub(_WEBSITES, "<prd>\\1", text)
    text = re.sub(_DIGITS + "[.]" + _DIGITS, "\\1<prd>\\2", text)
    text = re.sub(_MULTIPLE_DOTS, lambda m: "<prd>" * len(m.group(0)) + "<stop>", text)
    text = text.replace("Ph.D.", "Ph<prd>D<prd>")
    text = re.sub(r"\s" + _ALPHABETS + "[.] ", " \\1<prd> ", text)
    text = re.sub(_ACRONYMS + " " + _STARTERS, "\\1<stop> \\2", text)
    text = re.sub(
        _ALPHABETS + "[.]" + _ALPHABETS + "[.]" + _ALPHABETS + "[.]",
        "\\1<prd>\\2<prd>\\3<prd>",
        text,
    )
    text = re.sub(_ALPHABETS + "[.]" + _ALPHABETS + "[.]", "\\1<prd>\\2<prd>", text)
    text = re.sub(" " + _SUFFIXES + "[.] " + _STARTERS, " \\1<stop> \\2", text)
    text = re.sub(" " + _SUFFIXES + "[.]", " \\1<prd>", text)
    text = re.sub(" " + _ALPHABETS + "[.]", " \\1<prd>", text)
    text = text.replace(".\u201d", "\u201d.").replace('."', '".')
    text = text.replace('!"', '"!').replace('?"', '"?')
    text = text.replace(".", ".<stop>").replace("?", "?<stop>").replace("!", "!<stop>")
    text = text.replace("<prd>", ".")
    sentences = [s.strip() for s in text.split("<stop>")]
    if sentences and not sentences[-1]:
        sentences = sentences[:-1]
    return [s for s in sentences if s]


_WORD = re.compile(r"\w+")


def count_words(text: str) -> int:
    r"""Count runs of word characters (IFEval's ``RegexpTokenizer(r"\w+")``)."""
    return len(_WORD.findall(text))


_TOKEN = re.compile(r"[A-Za-z0-9]+(?:[-'][A-Za-z0-9]+)*|[^\sA-Za-z0-9]")


def detect_language(text: str) -> str | None:
    """Return langdetect's language code for ``text``, or None when it cannot tell.

    Seeded, so the same text always gets the same code (langdetect samples at random).
    """
    from langdetect import DetectorFactory, detect  # type: ignore[import-untyped]
    from langdetect.lang_detect_exception import (  # type: ignore[import-untyped]
        LangDetectException,
    )

    DetectorFactory.seed = 0
    try:
        code: str = detect(text)
    except LangDetectException:
        return None
    return code


# ---------------------------------------------------------------------- the checks


def _existence(r: str, a: Args) -> bool:
    return all(re.search(re.escape(k.strip()), r, re.IGNORECASE) for k in a["keywords"])


def _frequency(r: str, a: Args) -> bool:
    count = len(re.findall(re.escape(a["keyword"].strip()), r, re.IGNORECASE))
    return _compare(count, str(a["relation"]), int(a["frequency"]))


def _forbidden(r: str, a: Args) -> bool:
    return not any(
        re.search(r"\b" + re.escape(w.strip()) + r"\b", r, re.IGNORECASE)
        for w in a["forbidden_words"]
    )


def _letter_frequency(r: str, a: Args) -> bool:
    count = collections.Counter(r.lower())[a["letter"].lower()]
    return _compare(count, a["let_relation"], a["let_frequency"])


def _language(r: str, a: Args) -> bool:
    return bool(detect_language(r) == a["language"])


def _sentences(r: str, a: Args) -> bool:
    return _compare(len(split_into_sentences(r)), a["relation"], a["num_sentences"])


def _paragraphs(r: str, a: Args) -> bool:
    paragraphs = re.split(r"\s?\*\*\*\s?", r)
    count = len(paragraphs)
    for index, paragraph in enumerate(paragraphs):
        if not paragraph.strip():
            if index in (0, len(paragraphs) - 1):
                count -= 1
            else:
                return False  # an empty paragraph between two dividers
    return bool(count == a["num_paragraphs"])


def _words(r: str, a: Args) -> bool:
    return _compare(count_words(r), a["relation"], a["num_words"])


def _nth_paragraph_first_word(r: str, a: Args) -> bool:
    paragraphs = re.split(r"\n\n", r)
    count = sum(1 for p in paragraphs if p.strip())
    nth = a["nth_paragraph"]
    if nth > count:
        return False
    paragraph = paragraphs[nth - 1].strip()
    if not paragraph:
        return False
    word = paragraph.split()[0].strip().lstrip("'").lstrip('"')
    first = ""
    for letter in word:
        if letter in {".", ",", "?", "!", "'", '"'}:
            break
        first += letter.lower()
    return bool(count == a["num_paragraphs"] and first == a["first_word"].strip().lower())


def _placeholders(r: str, a: Args) -> bool:
    return bool(len(re.findall(r"\[.*?\]", r)) >= a["num_placeholders"])


def _postscript(r: str, a: Args) -> bool:
    marker = a["postscript_marker"]
    text = r.lower()
    if marker == "P.P.S":
        pattern = r"\s*p\.\s?p\.\s?s.*$"
    elif marker == "P.S.":
        pattern = r"\s*p\.\s?s\..*$"
    else:
        pattern = r"\s*" + re.escape(marker.lower()) + r".*$"
    return bool(re.findall(pattern, text, flags=re.MULTILINE))


def _bullets(r: str, a: Args) -> bool:
    stars = re.findall(r"^\s*\*[^\*].*$", r, flags=re.MULTILINE)
    dashes = re.findall(r"^\s*-.*$", r, flags=re.MULTILINE)
    return bool(len(stars) + len(dashes) == a["num_bullets"])


def _constrained(r: str, a: Args) -> bool:
    text = r.strip()
    return any(option in text for option in CONSTRAINED_RESPONSES)


def _highlights(r: str, a: Args) -> bool:
    count = sum(1 for h in re.findall(r"\*[^\n\*]*\*", r) if h.strip("*").strip())
    count += sum(
        1
        for h in re.findall(r"\*\*[^\n\*]*\*\*", r)
        if h.removeprefix("**").removesuffix("**").strip()
    )
    return bool(count >= a["num_highlights"])


def _sections(r: str, a: Args) -> bool:
    pattern = r"\s?" + re.escape(a["section_spliter"].strip()) + r"\s?\d+\s?"
    return bool(len(re.split(pattern, r)) - 1 >= a["num_sections"])


def _json(r: str, a: Args) -> bool:
    text = (
        r.strip()
        .removeprefix("```json")
        .removeprefix("```Json")
        .removeprefix("```JSON")
        .removeprefix("```")
        .removesuffix("```")
        .strip()
    )
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


def _title(r: str, a: Args) -> bool:
    return any(t.lstrip("<").rstrip(">").strip() for t in re.findall(r"<<[^\n]+>>", r))


def _two_responses(r: str, a: Args) -> bool:
    parts = r.split("******")
    valid: list[str] = []
    for index, part in enumerate(parts):
        if not part.strip():
            if index not in (0, len(parts) - 1):
                return False
        else:
            valid.append(part)
    return len(valid) == 2 and valid[0].strip() != valid[1].strip()


def _repeat_prompt(r: str, a: Args) -> bool:
    return r.strip().lower().startswith(str(a["prompt_to_repeat"]).strip().lower())


def _end(r: str, a: Args) -> bool:
    return r.strip().strip('"').lower().endswith(str(a["end_phrase"]).strip().lower())


def _capital_words(r: str, a: Args) -> bool:
    count = sum(1 for w in _TOKEN.findall(r) if w.isupper())
    return _compare(count, a["capital_relation"], a["capital_frequency"])


def _english_capital(r: str, a: Args) -> bool:
    # The language of capitals is that of the same text in lower case: langdetect reads
    # English in capitals as Vietnamese or Catalan (IFEval asks it of the capitals).
    return r.isupper() and detect_language(r.lower()) == "en"


def _english_lowercase(r: str, a: Args) -> bool:
    return r.islower() and detect_language(r) == "en"


def _no_comma(r: str, a: Args) -> bool:
    return "," not in r


def _quotation(r: str, a: Args) -> bool:
    text = r.strip()
    return len(text) > 1 and text[0] == '"' and text[-1] == '"'


#: Instruction id -> its check.
CHECKS: dict[str, Callable[[str, Args], bool]] = {
    "keywords:existence": _existence,
    "keywords:frequency": _frequency,
    "keywords:forbidden_words": _forbidden,
    "keywords:letter_frequency": _letter_frequency,
    "language:response_language": _language,
    "length_constraints:number_sentences": _sentences,
    "length_constraints:number_paragraphs": _paragraphs,
    "length_constraints:number_words": _words,
    "length_constraints:nth_paragraph_first_word": _nth_paragraph_first_word,
    "detectable_content:number_placeholders": _placeholders,
    "detectable_content:postscript": _postscript,
    "detectable_format:number_bullet_lists": _bullets,
    "detectable_format:constrained_response": _constrained,
    "detectable_format:number_highlighted_sections": _highlights,
    "detectable_format:multiple_sections": _sections,
    "detectable_format:json_format": _json,
    "detectable_format:title": _title,
    "combination:two_responses": _two_responses,
    "combination:repeat_prompt": _repeat_prompt,
    "startend:end_checker": _end,
    "change_case:capital_word_frequency": _capital_words,
    "change_case:english_capital": _english_capital,
    "change_case:english_lowercase": _english_lowercase,
    "punctuation:no_comma": _no_comma,
    "startend:quotation": _quotation,
}


def loose_variants(response: str) -> list[str]:
    """Return IFEval's eight loose variants of ``response`` (as is first)."""
    lines = response.split("\n")
    without_first = "\n".join(lines[1:]).strip()
    without_last = "\n".join(lines[:-1]).strip()
    without_both = "\n".join(lines[1:-1]).strip()
    plain = [response, without_first, without_last, without_both]
    return [
        plain[0],
        plain[0].replace("*", ""),
        plain[1],
        plain[2],
        plain[3],
        plain[1].replace("*", ""),
        plain[2].replace("*", ""),
        plain[3].replace("*", ""),
    ]


def check_instruction(instruction_id: str, args: Args, response: str, *, loose: bool) -> bool:
    """Whether ``response`` follows one instruction; an empty response follows none."""
    check = CHECKS[instruction_id]
    candidates: Sequence[str] = loose_variants(response) if loose else [response]
    return any(text.strip() and check(text, args) for text in candidates)
