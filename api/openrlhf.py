"""OpenRLHF's remote reward protocol, adapted onto the grading pipeline.

OpenRLHF posts ``{"query", "prompts", "labels"}`` and expects ``{"rewards",
"scores", "extra_logs"}``. Rows are read by :mod:`arbiter.rows`, each on
its own: the response is what follows the prompt in the query, or the longest
tail of the prompt the query starts with (OpenRLHF truncates long prompts from
the left); a query that shares nothing with its prompt abstains alone, never
failing the batch; a label that is a task spec (bare, or under ``"task"``)
becomes the task; the samples of one prompt are one group. An abstained reward
becomes the fallback the caller chose (``?abstain=`` or
``ARBITER_OPENRLHF_ABSTAIN``: zero, group_mean, or a 422 ``reward_abstained``),
and ``extra_logs`` counts abstentions, truncated prompts and unsplittable
queries per sample.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import orjson
from pydantic import TypeAdapter

from arbiter.api.auth import Principal
from arbiter.api.body import check_limits
from arbiter.api.errors import Invalid
from arbiter.api.grading import GradedBatch, GradingPipeline
from arbiter.api.schemas import OpenRLHFRequest
from arbiter.api.settings import Settings
from arbiter.graders.types import Sample, Task
from arbiter.rows import (
    AbstainedError,
    AbstainPolicy,
    UnsplittableQuery,
    fill_abstained,
    parse_label,
    split_query,
)

__all__ = ["OpenRLHFAdapter", "OpenRLHFAnswer"]

#: Any task a label may carry, told apart by its kind.
_TASK: TypeAdapter[Task] = TypeAdapter(Task)

#: What the logged envelope of an OpenRLHF batch carries besides the usual fields.
ENVELOPE_FIELDS = {"format": "openrlhf"}


@dataclass
class OpenRLHFAnswer:
    """A graded request and what its rows said: which were cut, which could not be split.

    ``batch`` is ``None`` when no row could be split (nothing was graded).
    """

    batch: GradedBatch | None
    prompts: list[str]
    policy: AbstainPolicy
    truncated: list[float] = field(default_factory=list)
    unsplit: dict[int, str] = field(default_factory=dict)

    @property
    def replayed(self) -> bool:
        """Whether the graded part was answered from the log."""
        return self.batch is not None and self.batch.replayed


class OpenRLHFAdapter:
    """Grade OpenRLHF's requests through the pipeline and answer in its shape."""

    def __init__(self, settings: Settings, pipeline: GradingPipeline) -> None:
        self.settings = settings
        self.pipeline = pipeline

    async def grade(
        self,
        request: OpenRLHFRequest,
        principal: Principal,
        rubric_name: str | None,
        abstain: AbstainPolicy | None = None,
    ) -> OpenRLHFAnswer:
        """Grade one request; an identical retry is answered from the log."""
        principal.require("trainer")
        n = len(request.query)
        if len(request.prompts) != n or (
            request.labels is not None and len(request.labels) not in (0, n)
        ):
            raise Invalid(
                f"query, prompts and labels must have one entry per sample; got {n} queries, "
                f"{len(request.prompts)} prompts, {len(request.labels or [])} labels",
                errors=[{"path": "prompts", "message": "length differs from query"}],
            )
        name = rubric_name or self.settings.openrlhf_rubric
        if not name:
            raise Invalid(
                "no rubric: pass ?rubric=NAME or set ARBITER_OPENRLHF_RUBRIC",
                code="rubric_required",
            )
        rubric = self.pipeline.resolve(name, None, None)
        self.pipeline.check_size(n)
        answer = OpenRLHFAnswer(
            None, list(request.prompts), abstain or self.settings.openrlhf_abstain
        )
        samples: list[Sample] = []
        for i, (query, prompt) in enumerate(zip(request.query, request.prompts, strict=True)):
            try:
                response, cut = split_query(query, prompt)
            except UnsplittableQuery as e:
                answer.unsplit[i] = f"query[{i}]: {e}"
                answer.truncated.append(0.0)
                continue
            answer.truncated.append(float(cut))
            label = request.labels[i] if request.labels else None
            samples.append(_sample(i, prompt, response, label))
        if not samples:
            return answer

        # OpenRLHF's client retries a timed-out request with the same body and no
        # key of its own: the body's hash is the key, so a retry is answered from
        # the log instead of grading (and logging) the batch twice.
        canonical = orjson.dumps(request.model_dump(mode="json"), option=orjson.OPT_SORT_KEYS)
        digest = hashlib.sha256(canonical + name.encode()).hexdigest()
        window = self.settings.openrlhf_dedupe_window_s
        key = None
        if window > 0:
            bucket = int(time.time() // window)
            for b in (bucket, bucket - 1):
                stored = await self.pipeline.replay(principal.client, f"openrlhf:{digest}:{b}")
                if stored is not None and time.time() - stored.created_at < window:
                    answer.batch = GradedBatch.from_stored(stored, samples=len(samples))
                    return answer
            key = f"openrlhf:{digest}:{bucket}"

        answer.batch = await self.pipeline.grade(
            endpoint="openrlhf",
            principal=principal,
            idempotency_key=key,
            rubric=rubric,
            samples=samples,
            sent=None,
            deadline_s=None,
            envelope_fields=ENVELOPE_FIELDS,
        )
        return answer

    def render(self, answer: OpenRLHFAnswer) -> bytes:
        """Render an answer as OpenRLHF reads it, abstentions filled by the chosen fallback.

        A fresh batch is rendered from its rewards; only a replayed one is read
        back from its logged records.

        Raises:
            Invalid: the fallback is ``raise`` (or ``group_mean`` without a scored
                peer) and a sample abstained (code ``reward_abstained``).
        """
        batch = answer.batch
        graded: Iterable[tuple[float | None, str | None, dict[str, float | None]]] = ()
        if batch is not None and batch.rewards is not None:
            graded = (
                (r.reward, r.abstained_by, {name: c.score for name, c in r.components.items()})
                for r in batch.rewards
            )
        elif batch is not None:
            graded = (_logged_row(orjson.loads(raw)) for raw in batch.records)
        rows = iter(graded)
        n = len(answer.prompts)
        values: list[float | None] = []
        owners: list[str | None] = []
        scores: list[dict[str, float | None]] = []
        for i in range(n):
            # An unsplittable query is the request's: no verdict on the candidate.
            value, owner, row = (None, "request", {}) if i in answer.unsplit else next(rows)
            values.append(value)
            owners.append(owner)
            scores.append(row)
        groups = [_group(p) for p in answer.prompts]
        filled = fill_abstained(values, groups, answer.policy, owners)
        refused = [i for i, v in enumerate(filled) if isinstance(v, AbstainedError)]
        if refused:
            first = refused[0]
            raise Invalid(
                f"{filled[first]} ({answer.unsplit.get(first, 'the rubric abstained')}); "
                "pass ?abstain=zero|group_mean or set ARBITER_OPENRLHF_ABSTAIN to train "
                "through abstentions",
                code="reward_abstained",
                errors=[
                    {"path": f"query.{i}", "message": answer.unsplit.get(i, "abstained")}
                    for i in refused
                ],
            )
        rewards = [v for v in filled if isinstance(v, float)]
        logs: dict[str, list[float]] = {
            "abstained": [float(v is None) for v in values],
            # Abstentions that were the candidate's own failure (filled with 0.0).
            "abstained_candidate": [
                float(v is None and o == "candidate") for v, o in zip(values, owners, strict=True)
            ],
            "truncated_prompt": answer.truncated,
            "unsplittable": [float(i in answer.unsplit) for i in range(n)],
        }
        for name in sorted({k for row in scores for k in row}):
            # A component that could not score is NaN, not a made-up 0.0: OpenRLHF
            # averages extra_logs, and a zero would drag the mean.
            logs[name] = [
                float("nan") if row.get(name) is None else float(row[name])  # type: ignore[arg-type]
                for row in scores
            ]
        return orjson.dumps({"rewards": rewards, "scores": rewards, "extra_logs": logs})


def _group(prompt: str) -> str:
    """Return the group of a prompt's samples (OpenRLHF's samples per prompt)."""
    return hashlib.sha256(prompt.encode()).hexdigest()[:24]


def _logged_row(
    record: dict[str, Any],
) -> tuple[float | None, str | None, dict[str, float | None]]:
    """Return a logged reward record's value, whose doing its abstention was, and its scores."""
    scores = {name: c["score"] for name, c in record["components"].items()}
    return record["reward"], record.get("abstained_by"), scores


def _sample(i: int, prompt: str, response: str, label: Any) -> Sample:
    """Turn one OpenRLHF row into a Sample; a label that is a task spec becomes the task."""
    fields = parse_label(label)
    # JSON inside a label string escaped the body's limits: hold it to the same ones.
    problem = check_limits(fields)
    if problem is not None:
        where = ".".join(str(p) for p in ("labels", i, *problem[0]))
        raise Invalid(f"{where}: {problem[1]}", errors=[{"path": where, "message": problem[1]}])
    try:
        task = _TASK.validate_python(fields["task"]) if "task" in fields else None
    except ValueError as e:
        raise Invalid(
            f"labels[{i}] holds a task that is not valid: {e}",
            errors=[{"path": f"labels.{i}", "message": str(e)}],
        ) from e
    sample_id = hashlib.sha256(f"{i}\x00{prompt}\x00{response}".encode()).hexdigest()[:24]
    return Sample(
        id=f"openrlhf-{i}-{sample_id}",
        group_id=_group(prompt),
        prompt=prompt,
        response=response,
        task=task,
        labels=fields.get("labels"),
    )
