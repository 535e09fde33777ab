"""Trainer rows into samples: labels, truncated prompts, and what an abstention becomes.

Shared by the adapters and by the service's ``/get_reward`` so every trainer's
rows are read by the same documented rules:

* **Labels.** A label that is a task spec — ``{"kind", "tests", ...}`` — or
  holds one under ``"task"`` (a dict, or its JSON text) becomes the sample's
  ``task``; a bare answer from a known math source (GSM8K, MATH) an ``answer``
  task; a ``data_source`` in it the sample's; anything else is kept as
  ``labels["label"]``.
* **Truncated prompts.** OpenRLHF cuts a long prompt from the left before
  generating, so its query (prompt + response) need not start with the full
  prompt. The response is what follows the longest tail of the prompt that the
  query starts with; a query that shares no text with its prompt cannot be
  split, and that sample alone fails (:class:`UnsplittableQuery`).
* **Abstentions.** A trainer that has no "no reward" value gets the fallback
  its user chose: ``zero``, ``group_mean`` (the mean of the scored rewards of
  the same group in the same batch) or ``raise`` (:class:`AbstainedError`).
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Sequence
from typing import Any, Literal

__all__ = [
    "ABSTAIN_POLICIES",
    "ANSWER_SOURCES",
    "AbstainPolicy",
    "AbstainedError",
    "UnsplittableQuery",
    "fill_abstained",
    "parse_label",
    "split_query",
]

AbstainPolicy = Literal["zero", "group_mean", "raise"]
ABSTAIN_POLICIES: tuple[AbstainPolicy, ...] = ("zero", "group_mean", "raise")


class AbstainedError(RuntimeError):
    """The rubric abstained on a sample and the chosen fallback is ``raise``."""


class UnsplittableQuery(ValueError):
    """A query that does not continue any tail of its prompt: no response can be cut out."""


#: verl's data sources whose ground truth is a bare final answer, and its format: such
#: a row becomes an ``answer`` task (GSM8K's numbers, MATH's LaTeX), for a rubric's
#: math route (``rubrics/library/mixed-rl.yaml``) to grade.
ANSWER_SOURCES: dict[str, str] = {
    "openai/gsm8k": "number",
    "lighteval/MATH": "math",
    "DigitalLearningGmbH/MATH-lighteval": "math",
    "HuggingFaceH4/MATH-500": "math",
}


def parse_label(label: Any, data_source: str | None = None) -> dict[str, Any]:
    """Read a ground-truth label into sample fields: ``task``, ``labels``, ``data_source``.

    A label that carries ``data_source`` (OpenRLHF's labels, a data set's column)
    gives the sample its data source; a bare answer from one of
    :data:`ANSWER_SOURCES` becomes an ``answer`` task.
    """
    parsed = label
    if isinstance(label, str) and label.lstrip().startswith("{"):
        with contextlib.suppress(json.JSONDecodeError):
            parsed = json.loads(label)
    out: dict[str, Any] = {}
    if isinstance(parsed, dict) and isinstance(parsed.get("data_source"), str):
        data_source = parsed["data_source"]
        parsed = {k: v for k, v in parsed.items() if k != "data_source"}
        label = parsed
    if data_source:
        out["data_source"] = data_source
    if isinstance(parsed, dict) and isinstance(parsed.get("task"), dict):
        rest = {k: v for k, v in parsed.items() if k != "task"}
        return {**out, "task": parsed["task"], **({"labels": rest} if rest else {})}
    if isinstance(parsed, dict) and "kind" in parsed and "tests" in parsed:
        return {**out, "task": parsed}
    answer_format = ANSWER_SOURCES.get(data_source or "")
    if answer_format is not None and isinstance(label, str | int | float) and str(label).strip():
        gold = str(label)
        return {**out, "task": {"kind": "answer", "answer": gold, "format": answer_format}}
    return {**out, "labels": {"label": label}} if label is not None else out


def _longest_prompt_tail(query: str, prompt: str) -> int:
    """Return the length of the longest suffix of ``prompt`` that ``query`` starts with.

    The prefix function of the query's head, a NUL, then the prompt gives it in linear time
    (a scan from every offset would be quadratic in the prompt's length).
    """
    head = query[: len(prompt)]
    text = head + "\x00" + prompt
    border = [0] * len(text)
    for i in range(1, len(text)):
        k = border[i - 1]
        while k and text[i] != text[k]:
            k = border[k - 1]
        if text[i] == text[k]:
            k += 1
        border[i] = k
    return min(border[-1], len(head)) if text else 0


def split_query(query: str, prompt: str) -> tuple[str, bool]:
    """Return ``(response, truncated)`` for an OpenRLHF query and its prompt.

    Raises:
        UnsplittableQuery: the query starts with no part of the prompt's end.
    """
    if query.startswith(prompt):
        return query[len(prompt) :], False
    # A cut through a multi-byte character decodes to U+FFFD: it is no prompt text.
    trimmed = query.lstrip("\ufffd")
    kept = _longest_prompt_tail(trimmed, prompt)
    if kept == 0:
        raise UnsplittableQuery(
            "the query does not start with its prompt nor with any tail of it; "
            "expected query = (possibly left-truncated) prompt + response"
        )
    return trimmed[kept:], True


def fill_abstained(
    values: Sequence[float | None],
    groups: Sequence[str | None],
    policy: AbstainPolicy,
    owners: Sequence[str | None] | None = None,
) -> list[float | AbstainedError]:
    """Replace each abstained (``None``) reward by the policy's fallback.

    ``owners`` says whose doing each abstention is (a reward's ``abstained_by``).
    One that is the candidate's (a rubric left its own timeout or compile error
    unscored) is filled with 0.0 under ``zero`` and ``group_mean`` alike: its
    group's mean would pay a candidate for failing as much as for an average
    answer.

    Returns one value per sample, or, for a sample the policy cannot fill (any
    abstention under ``raise``; under ``group_mean`` one whose group has no
    scored reward in the batch), the :class:`AbstainedError` to raise for it.
    """
    out: list[float | AbstainedError] = []
    for i, value in enumerate(values):
        if value is not None:
            out.append(float(value))
        elif policy == "zero" or (
            policy == "group_mean" and owners is not None and owners[i] == "candidate"
        ):
            out.append(0.0)
        elif policy == "raise":
            out.append(
                AbstainedError(
                    f"the rubric abstained on sample {i} and the abstention fallback is "
                    "'raise'; choose 'zero' or 'group_mean' to train through abstentions"
                )
            )
        else:
            peers = [
                v for v, g in zip(values, groups, strict=True) if v is not None and g == groups[i]
            ]
            out.append(
                sum(peers) / len(peers)
                if peers
                else AbstainedError(
                    f"sample {i} abstained and its group {groups[i]!r} has no scored reward "
                    "in this batch to take the mean of"
                )
            )
    return out
