"""One answer check, as a worker runs it: read the gold, extract the answer, compare.

Everything that reads the candidate's text runs here, in a killable worker
(``pool``), never in the service's event loop: a 10^6-character response costs
its own check's time and nobody else's. The phases are reported as they begin,
the gold first, so that a check cut short is blamed on the right party: reading
the gold is the task's, the rest the candidate's.
"""

from __future__ import annotations

from typing import Any

from arbiter.graders.answers.equivalence import equivalent, read_gold
from arbiter.graders.answers.extraction import extract_answer
from arbiter.graders.answers.pool import report_phase

__all__ = ["GOLD", "PREDICTION", "check_response"]

#: The phases of a check.
GOLD = "gold"
PREDICTION = "prediction"


def check_response(
    *,
    gold: str,
    response: str,
    prompt: str = "",
    answer_format: Any = "math",
    choices: list[str] | None = None,
    tolerance: float | None = None,
    extract: Any = "auto",
) -> dict[str, Any]:
    """Grade ``response`` against ``gold``; return plain data (it crosses a pipe).

    The result holds ``equal`` (``None`` when there was no answer to compare), the
    extracted ``answer`` and ``where`` it was, the ``reason`` there was none, the
    ``violations`` (as dictionaries) and ``how`` the verdict was reached.

    Raises:
        GoldUnparseable: the gold cannot be read (raised in the gold phase).
    """
    report_phase(GOLD)
    read_gold(gold=gold, answer_format=answer_format, choices=choices)
    report_phase(PREDICTION)
    found = extract_answer(
        response,
        mode=extract,
        answer_format=answer_format,
        gold=gold,
        prompt=prompt,
        choices=choices,
    )
    out: dict[str, Any] = {
        "answer": found.answer,
        "where": found.where,
        "reason": found.reason,
        "violations": [v.model_dump(mode="json") for v in found.violations],
        "equal": None,
        "how": "",
    }
    if found.answer is None:
        return out
    verdict = equivalent(
        gold=gold,
        prediction=found.answer,
        answer_format=answer_format,
        choices=choices,
        tolerance=tolerance,
    )
    out["equal"] = verdict.equal
    out["how"] = verdict.how
    return out
