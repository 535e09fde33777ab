"""The instructions grader's verdicts against lm-eval's IFEval checkers, pair by pair.

Run: ``flock /tmp/arbiter-bench.lock .venv/bin/python -m bench.ifeval [--pairs 600]``.

Generates response/constraint pairs (1 to 3 of IFEval's instructions each, with
arguments chosen around what the response holds, so that both verdicts occur),
and compares, per instruction and mode (strict, loose), our verdict with the
released peer's: lm-eval 0.4.13's ``test_instruction_following_strict`` and
``..._loose`` (google-research's IFEval code as lm-eval ships it).

Two instructions are left out of the comparison and said so: lm-eval counts
sentences (``length_constraints:number_sentences``) and tokenizes words
(``change_case:capital_word_frequency``) with nltk's punkt, whose data these
machines cannot download (PyPI only; lm-eval tries ``nltk.download`` at import).
langdetect samples at random: it is seeded (``DetectorFactory.seed = 0``) for
both sides, so a verdict is the same on every run.

Every pair where we differ is printed with the reason, which is one of the
documented differences (``graders/instruction_checks.py``) or a bug.
"""

from __future__ import annotations

import argparse
import collections
import io
import json
import random
import sys
from contextlib import redirect_stderr, redirect_stdout
from typing import Any

from arbiter.graders.instruction_specs import INSTRUCTIONS
from arbiter.graders.instructions import follow_instructions
from arbiter.graders.types import InstructionsTask

#: Instructions lm-eval checks with nltk's punkt, which cannot be had offline.
NEEDS_PUNKT = ("length_constraints:number_sentences", "change_case:capital_word_frequency")

WORDS = [
    "river",
    "mountain",
    "light",
    "garden",
    "window",
    "simple",
    "quiet",
    "bright",
    "story",
    "music",
    "planet",
    "ocean",
    "friend",
    "winter",
    "summer",
    "forest",
    "morning",
    "evening",
    "paper",
    "stone",
    "cloud",
    "silver",
    "market",
    "travel",
    "letter",
    "answer",
    "system",
    "design",
    "careful",
    "market",
    "coffee",
    "bridge",
    "engine",
    "number",
    "pattern",
]
FOREIGN = {
    "es": "El perro corre en el parque y la casa es grande con muchas ventanas bonitas",
    "fr": "Le chat dort sur la chaise et la maison est grande avec beaucoup de fenetres",
    "de": "Der Hund läuft im Park und das Haus ist groß mit vielen schönen Fenstern",
}


def sentence(rng: random.Random, comma: bool) -> str:
    """A short sentence of the vocabulary."""
    words = rng.choices(WORDS, k=rng.randint(4, 10))
    if comma and len(words) > 4:
        words[2] += ","
    return " ".join(words).capitalize() + rng.choice([".", ".", "!", "?"])


def response_of(rng: random.Random, prompt: str) -> str:
    """A response with a random mix of the features IFEval's instructions look for."""
    comma = rng.random() < 0.5
    language = rng.choice(["en"] * 6 + list(FOREIGN))
    paragraphs: list[str] = []
    for _ in range(rng.randint(1, 5)):
        if language != "en":
            body = FOREIGN[language] + ". " + FOREIGN[language].lower() + "."
        else:
            body = " ".join(sentence(rng, comma) for _ in range(rng.randint(1, 4)))
        if rng.random() < 0.3:
            word = rng.choice(WORDS)
            body = body.replace(word, f"*{word}*", 1)
        if rng.random() < 0.2:
            body += f" Contact [{rng.choice(['name', 'address', 'date'])}]."
        paragraphs.append(body)
    joiner = rng.choice(["\n\n", "\n\n", "\n***\n", " *** "])
    text = joiner.join(paragraphs)
    if rng.random() < 0.3:
        bullets = rng.randint(1, 5)
        mark = rng.choice(["*", "-"])
        text += "\n" + "\n".join(f"{mark} {rng.choice(WORDS)} item" for _ in range(bullets))
    if rng.random() < 0.25:
        splitter = rng.choice(["Section", "SECTION"])
        text = "\n".join(f"{splitter} {i + 1}\n{p}" for i, p in enumerate(text.split("\n\n")))
    if rng.random() < 0.25:
        text = f"<<{rng.choice(WORDS).title()} {rng.choice(WORDS)}>>\n" + text
    if rng.random() < 0.2:
        text += "\n" + rng.choice(["P.S. see you.", "P.P.S more notes.", "p.s. later."])
    if rng.random() < 0.15:
        text += "\n" + rng.choice(["My answer is yes.", "My answer is maybe."])
    if rng.random() < 0.2:
        text += " " + rng.choice(
            ["Is there anything else I can help with?", "Any other questions?"]
        )
    if rng.random() < 0.1:
        text = text + "\n******\n" + text.upper()
    if rng.random() < 0.1:
        payload = {"title": rng.choice(WORDS), "items": rng.sample(WORDS, 3)}
        text = json.dumps(payload)
        if rng.random() < 0.5:
            text = "```json\n" + text + "\n```"
    if rng.random() < 0.15:
        text = prompt + "\n" + text
    if rng.random() < 0.15:
        text = text.upper()
    elif rng.random() < 0.15:
        text = text.lower()
    if rng.random() < 0.1:
        text = '"' + text + '"'
    if rng.random() < 0.05:
        text = rng.choice(["", "   ", "12345", "!!!"])
    return text


def kwargs_for(
    rng: random.Random, instruction_id: str, response: str, prompt: str
) -> dict[str, Any]:
    """Arguments near what ``response`` holds, so that the verdict can go either way."""
    relation = rng.choice(["less than", "at least"])
    words = len(response.split())
    paragraphs = max(1, response.count("\n\n") + response.count("***") + rng.choice([-1, 0, 0, 1]))
    picks: dict[str, dict[str, Any]] = {
        "keywords:existence": {"keywords": rng.sample(WORDS, rng.randint(1, 2))},
        "keywords:frequency": {
            "keyword": rng.choice(WORDS),
            "frequency": rng.randint(1, 3),
            "relation": relation,
        },
        "keywords:forbidden_words": {"forbidden_words": rng.sample(WORDS, 2)},
        "keywords:letter_frequency": {
            "letter": rng.choice("aeinorst"),
            "let_frequency": rng.randint(1, 30),
            "let_relation": relation,
        },
        "language:response_language": {"language": rng.choice(["en", "en", "es", "fr", "de"])},
        "length_constraints:number_sentences": {
            "num_sentences": rng.randint(1, 8),
            "relation": relation,
        },
        "length_constraints:number_paragraphs": {"num_paragraphs": paragraphs},
        "length_constraints:number_words": {
            "num_words": max(1, words + rng.randint(-10, 10)),
            "relation": relation,
        },
        "length_constraints:nth_paragraph_first_word": {
            "num_paragraphs": paragraphs,
            "nth_paragraph": rng.randint(1, paragraphs),
            "first_word": (
                (response.split() or ["river"])[0].strip("*<>\"'.,!?").lower() or "river"
            )
            if rng.random() < 0.5
            else rng.choice(WORDS),
        },
        "detectable_content:number_placeholders": {"num_placeholders": rng.randint(1, 3)},
        "detectable_content:postscript": {"postscript_marker": rng.choice(["P.S.", "P.P.S"])},
        "detectable_format:number_bullet_lists": {"num_bullets": rng.randint(1, 5)},
        "detectable_format:constrained_response": {},
        "detectable_format:number_highlighted_sections": {"num_highlights": rng.randint(1, 3)},
        "detectable_format:multiple_sections": {
            "section_spliter": rng.choice(["Section", "SECTION"]),
            "num_sections": rng.randint(1, 4),
        },
        "detectable_format:json_format": {},
        "detectable_format:title": {},
        "combination:two_responses": {},
        "combination:repeat_prompt": {"prompt_to_repeat": prompt},
        "startend:end_checker": {
            "end_phrase": rng.choice(
                ["Is there anything else I can help with?", "Any other questions?"]
            )
        },
        "change_case:capital_word_frequency": {
            "capital_frequency": rng.randint(1, 20),
            "capital_relation": relation,
        },
        "change_case:english_capital": {},
        "change_case:english_lowercase": {},
        "punctuation:no_comma": {},
        "startend:quotation": {},
    }
    return picks[instruction_id]


def pairs(count: int, seed: int) -> list[dict[str, Any]]:
    """``count`` generated pairs, each 1 to 3 distinct instructions on one response."""
    rng = random.Random(seed)
    ids = sorted(INSTRUCTIONS)
    out = []
    for i in range(count):
        prompt = f"Write about the {rng.choice(WORDS)} and the {rng.choice(WORDS)}."
        response = response_of(rng, prompt)
        chosen = rng.sample(ids, rng.randint(1, 3))
        kwargs = [kwargs_for(rng, c, response, prompt) for c in chosen]
        # Every pair is a task the service would accept (the arguments validated).
        InstructionsTask(kind="instructions", instruction_id_list=chosen, kwargs=kwargs)
        out.append(
            {
                "key": i,
                "prompt": prompt,
                "response": response,
                "instruction_id_list": chosen,
                "kwargs": kwargs,
            }
        )
    return out


def peer_verdicts(pair: dict[str, Any]) -> dict[str, list[bool]]:
    """lm-eval's strict and loose verdicts for one pair."""
    from lm_eval.tasks.ifeval import utils  # type: ignore[import-untyped]

    example = utils.InputExample(
        key=pair["key"],
        instruction_id_list=pair["instruction_id_list"],
        prompt=pair["prompt"],
        kwargs=pair["kwargs"],
    )
    strict = utils.test_instruction_following_strict(example, pair["response"])
    loose = utils.test_instruction_following_loose(example, pair["response"])
    return {"strict": strict.follow_instruction_list, "loose": loose.follow_instruction_list}


def main() -> None:
    """Generate the pairs and print agreement per instruction, and every difference."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=600)
    parser.add_argument("--seed", type=int, default=44)
    args = parser.parse_args()
    from langdetect import DetectorFactory  # type: ignore[import-untyped]

    DetectorFactory.seed = 0
    quiet = io.StringIO()
    with redirect_stdout(quiet), redirect_stderr(quiet):  # lm-eval's failed punkt download
        from lm_eval.tasks.ifeval import utils  # noqa: F401

    generated = pairs(args.pairs, args.seed)
    agree: collections.Counter[str] = collections.Counter()
    total: collections.Counter[str] = collections.Counter()
    differences: list[str] = []
    compared_pairs = 0
    left_out = 0
    for pair in generated:
        ours = follow_instructions(
            response=pair["response"],
            instruction_ids=pair["instruction_id_list"],
            kwargs=pair["kwargs"],
        )
        keep = [i for i, c in enumerate(pair["instruction_id_list"]) if c not in NEEDS_PUNKT]
        left_out += len(pair["instruction_id_list"]) - len(keep)
        if not keep:
            continue
        trimmed = {
            **pair,
            "instruction_id_list": [pair["instruction_id_list"][i] for i in keep],
            "kwargs": [pair["kwargs"][i] for i in keep],
        }
        theirs = peer_verdicts(trimmed)
        compared_pairs += 1
        for position, index in enumerate(keep):
            instruction_id = pair["instruction_id_list"][index]
            for mode in ("strict", "loose"):
                total[instruction_id] += 1
                if ours[mode][index] == theirs[mode][position]:
                    agree[instruction_id] += 1
                else:
                    differences.append(
                        f"  pair {pair['key']} {instruction_id} ({mode}): ours "
                        f"{ours[mode][index]}, lm-eval {theirs[mode][position]}; "
                        f"kwargs={pair['kwargs'][index]} response={pair['response'][:80]!r}"
                    )
    print(
        f"{args.pairs} generated pairs; {compared_pairs} with an instruction lm-eval can check "
        f"offline; {left_out} instructions left out ({', '.join(NEEDS_PUNKT)}: punkt)"
    )
    print(f"{'instruction':<48} {'agree':>7} / total (strict + loose verdicts)")
    for instruction_id in sorted(total):
        print(f"{instruction_id:<48} {agree[instruction_id]:>7} / {total[instruction_id]}")
    print(f"{'all':<48} {sum(agree.values()):>7} / {sum(total.values())}")
    print(f"\n{len(differences)} verdicts differ:")
    print("\n".join(differences) or "  (none)")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
