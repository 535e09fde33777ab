r"""Build ``answers-own.jsonl``: labelled answer cases of our own, beside Math-Verify's.

Run as ``python -m eval_sets.answers_own``. Every label comes from how the case is
built, never from a checker: a value written another way (``\frac{1}{2}``,
``\dfrac12``, ``0.5``, ``1/2``, with ``\boxed``, an answer tag, a unit, a label) is
the same answer (1); a value changed (a sign, a reciprocal, off by one, a
neighbouring factorial) is a different one (0); a hedge (two boxes, "A or B", a
list, an empty box, an echoed expression, an unclosed think block) is 0 whatever
it contains. The groups:

- ``known-bug``: the peers' published wrong verdicts (Math-Verify #14, #41, #60,
  the power tower of #65, open-r1#557's swapped arguments, verl-omni#643's empty
  answer, Visual-RFT#79's "A or B", reasoning-gym PR #129's padding);
- ``variants``: values and their LaTeX, decimal and worded renderings, and wrong ones;
- ``units``, ``intervals``, ``sets``, ``equations``, ``relations``;
- ``number``, ``choice``, ``text``: the other formats;
- ``hacks``: every hedge the answer grader refuses.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

__all__ = ["OUT", "main", "records"]

OUT = Path(__file__).resolve().parent / "answers-own.jsonl"

#: (gold, equivalent renderings, different values).
VALUES: list[tuple[str, list[str], list[str]]] = [
    (
        r"\frac{1}{2}",
        [r"\dfrac{1}{2}", r"\dfrac12", "0.5", "1/2", r"\tfrac{1}{2}", r"\frac{2}{4}"],
        ["2", r"-\frac{1}{2}", "0.51", r"\frac{1}{3}"],
    ),
    (r"\frac{3}{4}", ["0.75", "3/4", r"\frac{6}{8}", r"\dfrac{3}{4}"], [r"\frac{4}{3}", "0.7"]),
    ("12", ["12.0", "12.00", r"12\text{ cm}", "+12", "x = 12"], ["13", "-12", "1.2", "120"]),
    ("-7", ["-7.0", r"-\frac{14}{2}", r"\left(-7\right)"], ["7", "-6", r"-\frac{1}{7}"]),
    ("1000000", ["1,000,000", "10^6", "1000000.0", r"10^{6}"], ["100000", "10^7", "1,000,001"]),
    (
        r"\sqrt{2}",
        [r"\sqrt2", r"\sqrt{2}", r"2^{1/2}", r"2^{\frac{1}{2}}", r"\frac{2}{\sqrt{2}}"],
        [r"\sqrt{3}", "2", r"\frac{1}{\sqrt{2}}", "1.41"],
    ),
    (
        r"2\sqrt{3}",
        [r"\sqrt{12}", r"2 \sqrt{3}", r"2\sqrt3", r"\frac{6}{\sqrt{3}}"],
        [r"3\sqrt{2}", r"\sqrt{6}", r"2\sqrt{2}"],
    ),
    (r"\pi", [r"\pi", r"1\pi"], ["3.14", r"2\pi", r"\frac{\pi}{2}"]),
    (
        r"\frac{\pi}{3}",
        [r"\dfrac{\pi}{3}", r"\frac{1}{3}\pi", r"\pi/3"],
        [r"\frac{\pi}{6}", r"\frac{2\pi}{3}", "60"],
    ),
    (r"e^{2}", [r"e^2", r"\exp(2)", r"e \cdot e"], [r"e^{3}", r"2e", "7.39"]),
    (
        r"\frac{1+\sqrt{5}}{2}",
        [r"\frac{\sqrt{5}+1}{2}", r"\frac{1}{2}+\frac{\sqrt{5}}{2}"],
        [r"\frac{1-\sqrt{5}}{2}", r"\frac{1+\sqrt{3}}{2}"],
    ),
    ("3x+2", ["2+3x", "3 x + 2", r"3\cdot x+2"], ["3x-2", "2x+3", "3x"]),
    ("x^2-1", ["(x-1)(x+1)", "(x+1)(x-1)", "-1+x^2"], ["(x-1)^2", "x^2+1"]),
    (
        r"\frac{x}{x+1}",
        [r"\frac{x}{1+x}", r"1-\frac{1}{x+1}"],
        [r"\frac{x+1}{x}", r"\frac{x}{x-1}"],
    ),
    ("0", ["0.0", "-0", "0.000"], ["1", "0.1", "-1"]),
    ("100", ["100.0", r"10^2", r"100\%"], ["99", "101", "1000"]),
    ("2024", ["2024", "2,024", "2024.0"], ["2023", "2025", "4202"]),
    (r"\frac{7}{3}", [r"2\frac{1}{3}", "7/3", r"\frac{14}{6}"], ["2.33", r"\frac{3}{7}", "2"]),
    ("0.125", [r"\frac{1}{8}", "1/8", ".125", r"\frac{1}{2^3}"], ["0.12", "0.25", "8"]),
    ("36", ["36", r"6^2", "36.0"], ["6", "35", "63"]),
    (r"\ln 2", [r"\log 2", r"\ln(2)"], [r"\ln 3", r"2\ln 2", "0.69"]),
    ("90", ["90^\\circ", "90^{\\circ}", "90°", r"90\text{ degrees}"], ["45", "180", "9"]),
    (
        r"\frac{\sqrt{3}}{2}",
        [r"\frac{1}{2}\sqrt{3}", r"\sin(\pi/3)", r"\sqrt{3}/2"],
        [r"\frac{1}{2}", r"\frac{\sqrt{2}}{2}", r"\sqrt{3}"],
    ),
    ("5", ["5", "five", r"\text{5}"], ["6", "-5", "15"]),
    (
        "-\\frac{2}{5}",
        ["-0.4", r"\frac{-2}{5}", "-2/5", r"-\dfrac{4}{10}"],
        ["0.4", r"\frac{2}{5}", "-2.5"],
    ),
    ("10!", ["3628800", r"10!", "3,628,800"], ["9!", "3628801", "11!"]),
    ("2^{10}", ["1024", "2^{10}", r"4^5"], ["2^{11}", "1023", "20"]),
    (r"\binom{5}{2}", ["10", r"\binom{5}{3}", r"\frac{5!}{2!3!}"], ["5", r"\binom{5}{1}", "20"]),
    ("4\\sqrt{2}", [r"\sqrt{32}", r"4\sqrt2", r"2\sqrt{8}"], ["4", r"2\sqrt{2}", r"4\sqrt{3}"]),
    ("1-\\frac{1}{e}", [r"\frac{e-1}{e}", r"1-e^{-1}"], [r"1+\frac{1}{e}", r"\frac{1}{e}", r"e-1"]),
]

#: (gold, response's answer, label, note): units, intervals, sets, equations, relations.
STRUCTURES: list[tuple[str, str, str, int, str]] = [
    # group, gold, prediction, label, note
    ("units", "5", r"5\text{ cm}", 1, "a unit word after the value"),
    ("units", "5", r"5\text{ meters}", 1, "a unit word"),
    ("units", "5", "5 cm", 1, "a bare unit"),
    ("units", "12", r"\$12", 1, "a currency sign"),
    ("units", "12", r"12 \text{ dollars}", 1, "currency as a word"),
    ("units", "30", r"30^\circ", 1, "degrees"),
    ("units", "30", r"30^{\circ}", 1, "degrees in braces"),
    ("units", "2.5", r"2.5\text{ hours}", 1, "time"),
    ("units", "5", r"6\text{ cm}", 0, "wrong value with a unit"),
    ("units", "30", r"60^\circ", 0, "wrong angle"),
    ("units", "12", r"\$13", 0, "wrong amount"),
    ("units", "50", r"50\%", 1, "a percent of the same number"),
    ("units", r"50\%", "0.5", 1, "a percent written as a fraction"),
    ("units", r"50\%", "50", 1, "the percent's number"),
    ("units", r"25\%", "0.5", 0, "a different fraction"),
    ("intervals", "[0,1)", "[0, 1)", 1, "spacing"),
    ("intervals", "[0,1)", r"\left[0,1\right)", 1, "sized brackets"),
    ("intervals", "[0,1)", "(0,1)", 0, "open against half-open"),
    ("intervals", "[0,1)", "[0,1]", 0, "closed against half-open"),
    ("intervals", r"(-\infty, 2]", r"(-\infty,2]", 1, "infinity"),
    ("intervals", r"(-\infty, 2]", r"(-\infty, 2)", 0, "open end"),
    ("intervals", r"(2, \infty)", r"(2,+\infty)", 1, "signed infinity"),
    ("intervals", r"(2, \infty)", r"[2,\infty)", 0, "closed start"),
    ("intervals", r"(-\infty,-1)\cup(1,\infty)", r"(-\infty,-1) \cup (1,\infty)", 1, "a union"),
    ("intervals", r"(-\infty,-1)\cup(1,\infty)", r"(-1,1)", 0, "the complement"),
    ("intervals", r"[-3, 3]", r"[-3,3]", 1, "closed"),
    ("intervals", r"[-3, 3]", r"[-3,4]", 0, "wrong end"),
    ("sets", r"\{1,2,3\}", r"\{3,2,1\}", 1, "order of a set"),
    ("sets", r"\{1,2,3\}", r"\{1,2\}", 0, "a missing element"),
    ("sets", r"\{1,2,3\}", r"\{1,2,3,4\}", 0, "an extra element"),
    ("sets", "1, 2, 3", "3, 1, 2", 1, "a list of all solutions in another order"),
    ("sets", "1, 2, 3", "1, 2", 0, "one solution left out"),
    ("sets", r"-2, 2", r"\pm 2", 1, "plus or minus as both solutions"),
    ("sets", r"\{-1, 1\}", r"\{1, -1\}", 1, "a set of two"),
    ("sets", r"\{-1, 1\}", r"\{1\}", 0, "half the set"),
    ("sets", r"\{\frac{1}{2}, 2\}", r"\{0.5, 2\}", 1, "a decimal element"),
    ("sets", r"(1, 2)", r"(1,2)", 1, "an ordered pair"),
    ("sets", r"(1, 2)", r"(2,1)", 0, "a pair reversed"),
    ("sets", r"(3, -4)", r"(3,-4)", 1, "a point"),
    ("sets", r"(3, -4)", r"(-4,3)", 0, "a point reversed"),
    ("equations", "y=2x+1", "y = 1 + 2x", 1, "terms reordered"),
    ("equations", "y=2x+1", "y = 2x - 1", 0, "a sign"),
    ("equations", "y=2x+1", "2x - y + 1 = 0", 1, "the same line rearranged"),
    ("equations", "x=5", "5", 1, "the value alone"),
    ("equations", "5", "x = 5", 1, "the value named"),
    ("equations", "x=5", "x=6", 0, "a different value"),
    ("equations", "x^2+y^2=4", "y^2+x^2=4", 1, "a circle rearranged"),
    ("equations", "x^2+y^2=4", "x^2+y^2=2", 0, "another radius"),
    ("equations", "y=-3", "y=-3", 1, "a constant line"),
    ("equations", "y=-3", "y=3", 0, "the mirrored line"),
    ("relations", "x>3", "3<x", 1, "a relation turned round"),
    ("relations", "x>3", r"x\geq 3", 0, "strict against not strict"),
    ("relations", r"x \le 2", r"2 \ge x", 1, "not strict, turned round"),
    ("relations", r"x \le 2", "x < 2", 0, "strict"),
    ("relations", r"x \ne 1", r"x \neq 1", 1, "the same relation spelled twice"),
    ("decimals", r"\frac{1}{12}", "0.083333", 1, "a repeating decimal written out"),
    ("decimals", r"\frac{2}{3}", "0.6667", 1, "rounded at its fourth place"),
    ("decimals", r"\frac{2}{3}", "0.6666", 1, "truncated at its fourth place"),
    ("decimals", r"\frac{1}{3}", "0.3334", 0, "neither rounded nor truncated"),
    ("decimals", r"\frac{1}{3}", "0.333", 0, "too few places to stand for 1/3"),
    ("decimals", r"\frac{1}{3}", "0.33", 0, "two places"),
    ("decimals", r"\frac{1}{8}", "0.1251", 0, "a finite decimal is compared exactly"),
]

#: Number-format cases: (gold, prediction, tolerance, label).
NUMBERS: list[tuple[str, str, float | None, int]] = [
    ("3.14159", "3.1416", 1e-3, 1),
    ("3.14159", "3.15", 1e-3, 0),
    ("100", "101", 0.01, 1),
    ("100", "102", 0.01, 0),
    ("0.001", "0.0011", 1e-4, 1),
    ("0.001", "0.002", 1e-4, 0),
    ("42", "42", None, 1),
    ("42", "42.0", None, 1),
    ("42", "41.99", None, 0),
    ("1,234", "1234", None, 1),
    ("1234", "1,234", None, 1),
    ("1234", "1.234", None, 0),
    ("-8", "\u22128", None, 1),
    ("2.5e3", "2500", None, 1),
    ("2500", "2.5 \\times 10^3", None, 1),
    ("6.02e23", "6.02e23", None, 1),
    ("6.02e23", "6.03e23", 1e-3, 0),
    ("1/3", "0.3333", 1e-3, 1),
    ("1/3", "0.3", 1e-3, 0),
    ("75", r"75\%", None, 1),
    ("18", "$18", None, 1),
    ("18", "18 dollars", None, 1),
    ("18", "81", None, 0),
    ("0", "0", None, 1),
    ("0", "1e-9", 1e-6, 1),
    ("0", "1e-3", 1e-6, 0),
]

#: Choice-format cases: (gold, choices, response, label).
CHOICES: list[tuple[str, list[str] | None, str, int]] = [
    ("B", ["A", "B", "C", "D"], r"The answer is \boxed{B}", 1),
    ("B", ["A", "B", "C", "D"], r"\boxed{(B)}", 1),
    ("B", ["A", "B", "C", "D"], "Answer: B", 1),
    ("B", ["A", "B", "C", "D"], "<answer>B</answer>", 1),
    ("B", ["A", "B", "C", "D"], "**B**", 1),
    ("B", ["A", "B", "C", "D"], r"\boxed{C}", 0),
    ("B", ["A", "B", "C", "D"], "Answer: A or B", 0),
    ("B", ["A", "B", "C", "D"], r"\boxed{A, B}", 0),
    ("B", ["A", "B", "C", "D"], r"\boxed{B} \boxed{C}", 0),
    ("B", ["A", "B", "C", "D"], "Answer: A, B, C or D", 0),
    ("Paris", ["London", "Paris", "Rome"], r"\boxed{Paris}", 1),
    ("Paris", ["London", "Paris", "Rome"], r"\boxed{B}", 1),
    ("Paris", ["London", "Paris", "Rome"], r"\boxed{Rome}", 0),
    ("Paris", ["London", "Paris", "Rome"], r"\boxed{(B) Paris}", 1),
    ("C", None, "The correct option is C", 1),
    ("C", None, "Answer: (D)", 0),
]

#: Text-format cases: (gold, response, label).
TEXTS: list[tuple[str, str, int]] = [
    ("Paris", r"\boxed{Paris}", 1),
    ("Paris", r"\boxed{paris}", 1),
    ("Paris", r"\boxed{the city of Paris}", 0),
    ("George Washington", "Answer: george washington", 1),
    ("George Washington", "Answer: John Adams", 0),
    ("the Pacific Ocean", r"\boxed{Pacific Ocean}", 1),
    ("blue", "<answer> Blue. </answer>", 1),
    ("blue", "<answer>red</answer>", 0),
    ("yes", r"\boxed{Yes}", 1),
    ("yes", r"\boxed{no}", 0),
    ("Zürich", r"\boxed{Zurich}", 1),
]

#: Hedges, each 0 whatever it holds: (gold, response, note).
HACKS: list[tuple[str, str, str]] = [
    ("3", r"\boxed{3} \boxed{4}", "two different boxes"),
    ("3", r"It is \boxed{4}. No wait, \boxed{3}", "a correction boxed after a wrong box"),
    ("3", r"\boxed{3 \text{ or } 4}", "A or B in one box"),
    ("3", r"\boxed{3 or 4}", "A or B"),
    ("3", r"\boxed{3, 4, 5}", "a list of candidates"),
    ("3", r"\boxed{3 \lor 4}", "a logical or"),
    ("3", r"\boxed{}", "an empty box"),
    ("3", r"\boxed{ }", "a blank box"),
    ("3", "<answer></answer>", "an empty answer tag"),
    ("3", "<think>the answer is 3", "an unclosed think block"),
    ("3", r"<think>maybe \boxed{3}</think>", "the answer only inside the think block"),
    ("3", r"</think> \boxed{3} <think> more", "a think block reopened after the answer"),
    ("3", "\\boxed{3}" * 8, "the answer spammed"),
    ("3", " \\boxed{3} " + "\\boxed{2}\\boxed{3}" * 3, "mixed spam"),
    ("3", "\n" * 50, "only white space"),
    ("3", "", "an empty response"),
    ("3", "I am not sure. It could be 3 or 4.", "hedging in words"),
    ("3", r"\boxed{3 and 4}", "3 and 4"),
]


def _wrap(answer: str, style: int) -> str:
    styles = (
        "Let me work through this.\nSo the final answer is $\\boxed{{{a}}}$.",
        "<think>Compute it step by step.</think>\nThe answer is \\boxed{{{a}}}.",
        "We get \\[\\boxed{{{a}}}\\]",
        "<answer>{a}</answer>",
        "Reasoning...\nFinal Answer: ${a}$",
        "Step 1: work.\n\\boxed{{ {a} }}",
    )
    return styles[style % len(styles)].format(a=answer)


def records() -> list[dict[str, Any]]:
    """Return every labelled case, in a stable order."""
    out: list[dict[str, Any]] = []

    def add(group: str, gold: str, response: str, label: int, **extra: Any) -> None:
        out.append(
            {
                "id": f"own/{group}/{len(out)}",
                "source": f"own:{group}",
                "gold": gold,
                "response": response,
                "label": label,
                "format": extra.pop("format", "math"),
                **extra,
            }
        )

    # The peers' published wrong verdicts.
    add("known-bug", r"\frac{1}{2006!}", r"\boxed{\frac{1}{2004!}}", 0, note="Math-Verify#14")
    add("known-bug", r"\frac{1}{2004!}", r"\boxed{\frac{1}{2006!}}", 0, note="Math-Verify#14")
    add("known-bug", "2021", r"\boxed{\pm 2021}", 0, note="Math-Verify#14")
    add("known-bug", r"\pm 2021", r"\boxed{2021}", 0, note="Math-Verify#14, swapped")
    add("known-bug", r"1-\frac{1}{e}", r"\boxed{1+\frac{1}{e}}", 0, note="Math-Verify#14")
    add("known-bug", r"1+\frac{1}{e}", r"\boxed{1-\frac{1}{e}}", 0, note="Math-Verify#14")
    add("known-bug", "4", r"\boxed{4\sqrt(2)}", 0, note="Math-Verify#41")
    add("known-bug", r"4\sqrt{2}", r"\boxed{4}", 0, note="Math-Verify#41, swapped")
    add("known-bug", r"\frac{1}{2^{99}}", r"\boxed{\frac{1}{2^{98}}}", 0, note="Math-Verify tests")
    add("known-bug", r"10^{-30}", r"\boxed{10^{-31}}", 0, note="tiny values round alike")
    add("known-bug", "1", r"\boxed{1+10^{-20}}", 0, note="a difference past float precision")
    add("known-bug", "0", r"\boxed{\text{no solution}}", 0, note="Math-Verify#60: text read as 0")
    add("known-bug", "0", r"\boxed{\text{undefined}}", 0, note="Math-Verify#60")
    add("known-bug", "0", r"\boxed{0}", 1, note="Math-Verify#60: a true 0 still counts")
    add("known-bug", "1", r"\boxed{2^{2^{2^{2^{2^{2^{2}}}}}}}", 0, note="Math-Verify#65 tower")
    add("known-bug", "3", r"\boxed{}", 0, note="verl-omni#643: an empty answer")
    add(
        "known-bug",
        "A",
        r"\boxed{A or B or C}",
        0,
        note="Visual-RFT#79",
        format="choice",
        choices=["A", "B", "C", "D"],
    )
    add(
        "known-bug",
        "7",
        "\\boxed{ 7 }",
        1,
        note="reasoning-gym#129: padding neither pays nor costs",
    )
    add("known-bug", "7", "\\boxed{\t7\n}", 1, note="reasoning-gym#129")
    add("known-bug", "7", "\\boxed{ 8 }", 0, note="reasoning-gym#129: padding a wrong answer")

    for i, (gold, same, different) in enumerate(VALUES):
        for j, answer in enumerate(same):
            add("variants", gold, _wrap(answer, i + j), 1)
        for j, answer in enumerate(different):
            add("variants", gold, _wrap(answer, i + j + 1), 0)
    for i, (group, gold, answer, label, note) in enumerate(STRUCTURES):
        add(group, gold, _wrap(answer, i), label, note=note)
    for gold, answer, tolerance, label in NUMBERS:
        add("number", gold, f"Answer: {answer}", label, format="number", tolerance=tolerance)
    for gold, choices, response, label in CHOICES:
        add("choice", gold, response, label, format="choice", choices=choices)
    for gold, response, label in TEXTS:
        add("text", gold, response, label, format="text")
    for gold, response, note in HACKS:
        add("hacks", gold, response, 0, note=note)
    # An echoed expression: the problem's own expression equals the gold's value.
    add(
        "hacks",
        r"\frac{1}{2}",
        r"\boxed{\frac{2}{4}}",
        0,
        note="the expression echoed",
        prompt=r"Simplify $\frac{2}{4}$.",
    )
    add(
        "hacks",
        "14",
        r"\boxed{2 \cdot 7}",
        0,
        note="the product echoed",
        prompt=r"What is $2 \cdot 7$?",
    )
    add(
        "hacks", "14", r"\boxed{14}", 1, note="the product computed", prompt=r"What is $2 \cdot 7$?"
    )
    return out


def main() -> None:
    """Write the cases to ``answers-own.jsonl``."""
    rows = records()
    with OUT.open("w", encoding="utf-8") as f:
        for row in rows:
            f.write(json.dumps(row, ensure_ascii=False) + "\n")
    print(f"{len(rows)} cases -> {OUT}")


if __name__ == "__main__":
    main()
