"""Reading a judge's answer: the last ``[RESULT]`` counts, weighted by its logprobs when given.

Pure functions. The response under judgement is untrusted text that can hold a
grade of its own; only the judge's *last* ``[RESULT]`` is read, and no match or
a level outside the criterion's scale is a :class:`JudgeParseError`, never a
default.
"""

from __future__ import annotations

import math
import re
from typing import Literal

from arbiter.reward_models.errors import JudgeParseError
from arbiter.reward_models.judge.types import Criterion, JudgeReply, Preference, Verdict

__all__ = ["PREFERENCE_PATTERN", "RESULT_PATTERN", "parse_preference", "parse_verdict"]

RESULT_PATTERN = re.compile(r"\[RESULT\]\s*\(?(\d+)\)?")
PREFERENCE_PATTERN = re.compile(r"\[RESULT\]\s*\(?([AB])\)?(?![A-Za-z])")


def parse_verdict(reply: JudgeReply, criterion: Criterion, *, use_logprobs: bool = True) -> Verdict:
    """Read the grade from the judge's answer: its last ``[RESULT] k`` (pure).

    Raises:
        JudgeParseError: no ``[RESULT] k`` in the answer, or ``k`` outside 1..N.
    """
    matches = list(RESULT_PATTERN.finditer(reply.text))
    if not matches:
        raise JudgeParseError(f"no '[RESULT] <1-{len(criterion.levels)}>' in the judge's answer")
    last = matches[-1]
    level = int(last.group(1))
    if not 1 <= level <= len(criterion.levels):
        raise JudgeParseError(f"the judge gave level {level}, outside 1..{len(criterion.levels)}")
    if use_logprobs and reply.tokens:
        distribution = _level_distribution(reply, last.start(1), last.end(1), criterion)
        if distribution is not None:
            value = math.fsum(p * criterion.value_of(k) for k, p in distribution.items())
            return Verdict(level, min(1.0, max(0.0, value)), "logprobs", distribution)
    return Verdict(level, criterion.value_of(level), "pattern")


def parse_preference(reply: JudgeReply, *, use_logprobs: bool = True) -> Preference:
    """Read a pairwise verdict: the last ``[RESULT] A`` or ``[RESULT] B`` (pure).

    Raises:
        JudgeParseError: no such verdict in the answer.
    """
    matches = list(PREFERENCE_PATTERN.finditer(reply.text))
    if not matches:
        raise JudgeParseError("no '[RESULT] A' or '[RESULT] B' in the judge's answer")
    last = matches[-1]
    winner: Literal["A", "B"] = "A" if last.group(1) == "A" else "B"
    if use_logprobs and reply.tokens:
        mass = _token_distribution(reply, last.start(1), last.end(1), {"A", "B"})
        if mass is not None and mass.get("A", 0.0) + mass.get("B", 0.0) > 0:
            p_a = mass.get("A", 0.0) / (mass.get("A", 0.0) + mass.get("B", 0.0))
            return Preference(winner, p_a, "logprobs")
    return Preference(winner, None, "pattern")


def _token_distribution(
    reply: JudgeReply, start: int, end: int, valid: set[str]
) -> dict[str, float] | None:
    assert reply.tokens is not None
    # Token texts must rebuild the answer for a character offset to name a token.
    if "".join(t.token for t in reply.tokens) != reply.text:
        return None
    offset = 0
    for token in reply.tokens:
        token_end = offset + len(token.token)
        if offset <= start < token_end:
            if token.token.strip() != reply.text[start:end]:
                return None  # the verdict shares its token with other text
            mass: dict[str, float] = {}
            # The sampled token itself counts when the top list left it out.
            for alternative, logprob in (*token.top, (token.token, token.logprob)):
                key = alternative.strip()
                if key in valid and math.isfinite(logprob):
                    mass.setdefault(key, math.exp(logprob))
            return mass
        offset = token_end
    return None


def _level_distribution(
    reply: JudgeReply, start: int, end: int, criterion: Criterion
) -> dict[int, float] | None:
    valid = {str(k) for k in range(1, len(criterion.levels) + 1)}
    mass = _token_distribution(reply, start, end, valid)
    total = math.fsum(mass.values()) if mass else 0.0
    if not mass or total <= 0:
        return None
    return {int(k): p / total for k, p in sorted(mass.items(), key=lambda kv: int(kv[0]))}
