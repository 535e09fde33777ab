"""IFEval's 25 verifiable instructions: their ids and the keyword arguments each takes.

Standard library only: :mod:`arbiter.graders.types` (the wire contract, which the
client-only install imports) validates an ``instructions`` task against these
specs, so an unknown id, a missing or malformed argument is refused when the
sample is validated (the field named), never skipped or filled in at grading
time. Peers fill a missing argument with a random value (IFEval's
``build_description`` does), skip an unknown id (if-verifiable), or pass
``repeat_prompt`` without a prompt to repeat (tinker-cookbook#897).

The ids and argument names are IFEval's own (google-research's
``instruction_following_eval``), so a row of its data set validates as it is:
its rows carry every argument name with ``null`` for those an instruction does
not take, and those are ignored.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["INSTRUCTIONS", "LANGUAGES", "RELATIONS", "ArgSpec", "instruction_errors"]

#: How a count compares with its threshold.
RELATIONS = ("less than", "at least")

#: The languages ``language:response_language`` may ask for (langdetect's codes).
LANGUAGES = frozenset(
    [
        "af",
        "ar",
        "bg",
        "bn",
        "ca",
        "cs",
        "cy",
        "da",
        "de",
        "el",
        "en",
        "es",
        "et",
        "fa",
        "fi",
        "fr",
        "gu",
        "he",
        "hi",
        "hr",
        "hu",
        "id",
        "it",
        "ja",
        "kn",
        "ko",
        "lt",
        "lv",
        "mk",
        "ml",
        "mr",
        "ne",
        "nl",
        "no",
        "pa",
        "pl",
        "pt",
        "ro",
        "ru",
        "sk",
        "sl",
        "so",
        "sq",
        "sv",
        "sw",
        "ta",
        "te",
        "th",
        "tl",
        "tr",
        "uk",
        "ur",
        "vi",
        "zh-cn",
        "zh-tw",
    ]
)


@dataclass(frozen=True, slots=True)
class ArgSpec:
    """One keyword argument: its kind and bounds."""

    kind: str  # "int", "str", "words", "relation", "letter", "language"
    minimum: int = 0


_COUNT = ArgSpec("int", 0)
_POSITIVE = ArgSpec("int", 1)
_TEXT = ArgSpec("str")
_RELATION = ArgSpec("relation")

#: Instruction id -> its arguments (every one required).
INSTRUCTIONS: dict[str, dict[str, ArgSpec]] = {
    "keywords:existence": {"keywords": ArgSpec("words")},
    "keywords:frequency": {"keyword": _TEXT, "frequency": _POSITIVE, "relation": _RELATION},
    "keywords:forbidden_words": {"forbidden_words": ArgSpec("words")},
    "keywords:letter_frequency": {
        "letter": ArgSpec("letter"),
        "let_frequency": _POSITIVE,
        "let_relation": _RELATION,
    },
    "language:response_language": {"language": ArgSpec("language")},
    "length_constraints:number_sentences": {"num_sentences": _POSITIVE, "relation": _RELATION},
    "length_constraints:number_paragraphs": {"num_paragraphs": _POSITIVE},
    "length_constraints:number_words": {"num_words": _POSITIVE, "relation": _RELATION},
    "length_constraints:nth_paragraph_first_word": {
        "num_paragraphs": _POSITIVE,
        "nth_paragraph": _POSITIVE,
        "first_word": _TEXT,
    },
    "detectable_content:number_placeholders": {"num_placeholders": _POSITIVE},
    "detectable_content:postscript": {"postscript_marker": _TEXT},
    "detectable_format:number_bullet_lists": {"num_bullets": _POSITIVE},
    "detectable_format:constrained_response": {},
    "detectable_format:number_highlighted_sections": {"num_highlights": _POSITIVE},
    "detectable_format:multiple_sections": {"section_spliter": _TEXT, "num_sections": _POSITIVE},
    "detectable_format:json_format": {},
    "detectable_format:title": {},
    "combination:two_responses": {},
    "combination:repeat_prompt": {"prompt_to_repeat": _TEXT},
    "startend:end_checker": {"end_phrase": _TEXT},
    "change_case:capital_word_frequency": {
        "capital_frequency": _POSITIVE,
        "capital_relation": _RELATION,
    },
    "change_case:english_capital": {},
    "change_case:english_lowercase": {},
    "punctuation:no_comma": {},
    "startend:quotation": {},
}

#: Every argument name some instruction takes (a data set row carries them all, as null).
_ALL_ARGS = frozenset(name for args in INSTRUCTIONS.values() for name in args)


def _arg_error(name: str, spec: ArgSpec, value: Any) -> str | None:
    """Why ``value`` is not a valid ``name``, or None."""
    if spec.kind == "int":
        if isinstance(value, bool) or not isinstance(value, int):
            return f"{name} must be an integer, got {value!r}"
        if value < spec.minimum:
            return f"{name} must be at least {spec.minimum}, got {value}"
        return None
    if spec.kind == "relation":
        if value not in RELATIONS:
            return f"{name} must be one of {list(RELATIONS)}, got {value!r}"
        return None
    if spec.kind == "words":
        if (
            not isinstance(value, list)
            or not value
            or not all(isinstance(w, str) and w.strip() for w in value)
        ):
            return f"{name} must be a non-empty list of non-empty strings, got {value!r}"
        return None
    if spec.kind == "letter":
        if not isinstance(value, str) or len(value) != 1 or not value.isalpha():
            return f"{name} must be one letter, got {value!r}"
        return None
    if spec.kind == "language":
        if value not in LANGUAGES:
            return f"{name} must be a language code ({', '.join(sorted(LANGUAGES))}), got {value!r}"
        return None
    if not isinstance(value, str) or not value.strip():
        return f"{name} must be a non-empty string, got {value!r}"
    return None


def instruction_errors(
    instruction_id: str, kwargs: Mapping[str, Any]
) -> list[tuple[str | None, str]]:
    """Return what is wrong with one instruction and its arguments (empty: nothing).

    Each problem is ``(argument name, message)``, the name ``None`` for the id
    itself. An argument the instruction does not take is refused unless it is
    ``null`` and is one some instruction takes (IFEval's rows carry them all).
    """
    spec = INSTRUCTIONS.get(instruction_id)
    if spec is None:
        return [(None, f"unknown instruction id {instruction_id!r}")]
    errors: list[tuple[str | None, str]] = []
    for name, arg in spec.items():
        value = kwargs.get(name)
        if value is None:
            errors.append((name, f"{name} is required by {instruction_id}"))
            continue
        problem = _arg_error(name, arg, value)
        if problem is not None:
            errors.append((name, problem))
    for name, value in kwargs.items():
        if name in spec:
            continue
        if value is None and name in _ALL_ARGS:
            continue
        errors.append((name, f"{name} is not an argument of {instruction_id}"))
    if (
        instruction_id == "length_constraints:nth_paragraph_first_word"
        and not errors
        and kwargs["nth_paragraph"] > kwargs["num_paragraphs"]
    ):
        errors.append(("nth_paragraph", "nth_paragraph must not exceed num_paragraphs"))
    return errors
