"""OpenRLHF's remote reward protocol, adapted onto the grading pipeline.

OpenRLHF posts ``{"query", "prompts", "labels"}`` and expects ``{"rewards",
"scores", "extra_logs"}``. Each row becomes a :class:`Sample` whose response is
``query[len(prompt):]``; a label that is a task spec becomes the sample's task.
"""

from __future__ import annotations

import contextlib
import hashlib
import time
from collections.abc import Iterable
from typing import Any

import orjson

from api.auth import Principal
from api.errors import Invalid
from api.grading import GradedBatch, GradingPipeline
from api.schemas import OpenRLHFRequest
from api.settings import Settings
from graders.types import Sample, TaskSpec

__all__ = ["OpenRLHFAdapter"]

#: What the logged envelope of an OpenRLHF batch carries besides the usual fields.
ENVELOPE_FIELDS = {"format": "openrlhf"}


class OpenRLHFAdapter:
    """Grade OpenRLHF's requests through the pipeline and answer in its shape."""

    def __init__(self, settings: Settings, pipeline: GradingPipeline) -> None:
        self.settings = settings
        self.pipeline = pipeline

    async def grade(
        self, request: OpenRLHFRequest, principal: Principal, rubric_name: str | None
    ) -> GradedBatch:
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
        samples = [
            _sample(i, query, prompt, request.labels[i] if request.labels else None)
            for i, (query, prompt) in enumerate(zip(request.query, request.prompts, strict=True))
        ]

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
                    return GradedBatch.from_stored(stored)
            key = f"openrlhf:{digest}:{bucket}"

        return await self.pipeline.grade(
            endpoint="openrlhf",
            principal=principal,
            idempotency_key=key,
            rubric=rubric,
            samples=samples,
            sent=None,
            deadline_s=None,
            envelope_fields=ENVELOPE_FIELDS,
        )

    def render(self, batch: GradedBatch) -> bytes:
        """Render a batch as OpenRLHF reads it; an abstained reward becomes the abstain value.

        A fresh batch is rendered from its rewards; only a replayed one is read
        back from its logged records.
        """
        if batch.rewards is not None:
            rows: Iterable[tuple[float | None, dict[str, float | None]]] = (
                (r.reward, {name: c.score for name, c in r.components.items()})
                for r in batch.rewards
            )
        else:
            rows = (_logged_row(orjson.loads(raw)) for raw in batch.records)
        abstain = self.settings.openrlhf_abstain_value
        values: list[float] = []
        logs: dict[str, list[float]] = {"abstained": []}
        for value, scores in rows:
            values.append(abstain if value is None else value)
            logs["abstained"].append(1.0 if value is None else 0.0)
            for name, score in scores.items():
                logs.setdefault(name, []).append(abstain if score is None else score)
        return orjson.dumps({"rewards": values, "scores": values, "extra_logs": logs})


def _logged_row(record: dict[str, Any]) -> tuple[float | None, dict[str, float | None]]:
    """Return a logged reward record's value and component scores."""
    scores = {name: c["score"] for name, c in record["components"].items()}
    return record["reward"], scores


def _sample(i: int, query: str, prompt: str, label: Any) -> Sample:
    """Turn one OpenRLHF row into a Sample; a label that is a task spec becomes the task."""
    if not query.startswith(prompt):
        raise Invalid(
            f"query[{i}] does not start with prompts[{i}]; the response is query[len(prompt):]",
            errors=[{"path": f"query.{i}", "message": "does not start with its prompt"}],
        )
    response = query[len(prompt) :]
    task: TaskSpec | None = None
    labels: dict[str, Any] | None = None
    parsed = label
    if isinstance(label, str) and label.lstrip().startswith("{"):
        with contextlib.suppress(orjson.JSONDecodeError):
            parsed = orjson.loads(label)
    if isinstance(parsed, dict) and "task" in parsed:
        try:
            task = TaskSpec.model_validate(parsed["task"])
        except ValueError as e:
            raise Invalid(
                f"labels[{i}].task is not a valid task: {e}",
                errors=[{"path": f"labels.{i}.task", "message": str(e)}],
            ) from e
    if label is not None:
        labels = {"label": label}
    sample_id = hashlib.sha256(f"{i}\x00{prompt}\x00{response}".encode()).hexdigest()[:24]
    return Sample(
        id=f"openrlhf-{i}-{sample_id}", prompt=prompt, response=response, task=task, labels=labels
    )
