"""Probe a declared model before trusting it: load or reach it, score one example, twice.

What ``arbiter models check`` prints for each model: whether it was reachable
(loaded, or its server answered), whether it is warm (a second request
answered too), the one example's score or verdict, the warm request's
latency, and the tokens it read and wrote. A failure is typed by
:func:`~arbiter.reward_models.errors.error_kind`: ``unreachable``, ``unauthorized``,
``model_missing``, ``wrong_output_shape``, ``wrong_labels``, ``no_verdict``,
and the rest.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import asdict, dataclass, field
from typing import Any

from arbiter.reward_models.declarations import (
    JudgeSpec,
    RewardModelSpec,
    build_judge,
    build_reward_model,
    close_client,
)
from arbiter.reward_models.errors import RewardModelError, error_kind
from arbiter.reward_models.judge.types import Criterion, Level, SamplingParams
from arbiter.reward_models.judge.verdicts import parse_verdict
from arbiter.reward_models.usage import ModelUsage

__all__ = ["EXAMPLE", "ProbeReport", "probe_judge", "probe_reward_model"]

#: The one conversation every model is asked about.
EXAMPLE = [
    {"role": "user", "content": "What is the capital of France?"},
    {"role": "assistant", "content": "The capital of France is Paris."},
]
_CRITERION = Criterion(
    "correctness",
    "Is the answer correct?",
    tuple(
        Level(k, d, (k - 1) / 4)
        for k, d in enumerate(
            ("wrong", "mostly wrong", "partly right", "right with a flaw", "right"), start=1
        )
    ),
)


@dataclass
class ProbeReport:
    """What one probe found."""

    name: str
    kind: str
    backend: str
    reachable: bool = False
    warm: bool = False
    load_s: float | None = None
    latency_s: float | None = None
    example: dict[str, Any] = field(default_factory=dict)
    tokens_in: int = 0
    tokens_out: int = 0
    failure_kind: str | None = None
    failure: str | None = None

    @property
    def ok(self) -> bool:
        """Return whether the model answered the example twice."""
        return self.failure_kind is None and self.warm

    def as_dict(self) -> dict[str, Any]:
        """Return the report as JSON-ready data."""
        return {**asdict(self), "ok": self.ok}


def _failed(report: ProbeReport, error: BaseException) -> ProbeReport:
    report.failure_kind = error_kind(error)
    text = str(error).splitlines()[0] if str(error) else ""
    report.failure = f"{type(error).__name__}: {text[:300]}".rstrip(": ")
    return report


async def probe_reward_model(
    name: str, spec: RewardModelSpec, *, ray_address: str | None = None
) -> ProbeReport:
    """Load (or reach) a reward model and score :data:`EXAMPLE` twice."""
    report = ProbeReport(name, "reward_model", spec.backend)
    usage = ModelUsage(name, "reward_model")
    started = time.monotonic()
    try:
        client = await asyncio.to_thread(
            build_reward_model,
            spec,
            name=name,
            usage=usage,
            ray_address=ray_address,
        )
    except Exception as e:  # every failure to load is this model's report, typed
        return _failed(report, e)
    report.load_s = time.monotonic() - started
    try:
        first = await client.score(EXAMPLE)
        report.reachable = True
        began = time.monotonic()
        second = await client.score(EXAMPLE)
        report.latency_s = time.monotonic() - began
        report.warm = True
        report.example = {"scores": second.by_objective(), "same_twice": first == second}
        report.tokens_in = second.tokens
    except RewardModelError as e:
        # A local model answered nothing only if it failed; a server was reached
        # if it refused for a reason of its own (401, 404, a wrong shape).
        report.reachable = spec.backend == "transformers" or e.status_code is not None
        _failed(report, e)
    finally:
        await client.close()
        close_client(client)
    return report


async def probe_judge(name: str, spec: JudgeSpec) -> ProbeReport:
    """Build (or reach) a judge and have it grade :data:`EXAMPLE` twice, without its cache."""
    report = ProbeReport(name, "judge", spec.backend)
    usage = ModelUsage(name, "judge")
    started = time.monotonic()
    try:
        client = await asyncio.to_thread(
            build_judge,
            spec.model_copy(update={"cache_size": 0, "retries": 0}),
            name=name,
            usage=usage,
        )
    except Exception as e:  # every failure to build is this model's report, typed
        return _failed(report, e)
    report.load_s = time.monotonic() - started
    messages = [
        {
            "role": "user",
            "content": f"Grade the answer to '{EXAMPLE[0]['content']}': "
            f"'{EXAMPLE[1]['content']}'. Levels: 1 wrong .. 5 right. "
            "End with [RESULT] <1-5>.",
        }
    ]
    params = client.defaults.apply(SamplingParams(max_tokens=64), set())
    try:
        reply, _ = await client.ask(messages, params)
        report.reachable = True
        began = time.monotonic()
        reply, _ = await client.ask(messages, params, vote=1)
        report.latency_s = time.monotonic() - began
        report.warm = True
        report.tokens_in = reply.prompt_tokens or 0
        report.tokens_out = reply.completion_tokens or 0
        report.example = {"answer": reply.text[:200]}
        verdict = parse_verdict(reply, _CRITERION)
        report.example.update(level=verdict.level, value=verdict.value, method=verdict.method)
    except RewardModelError as e:
        report.reachable = report.reachable or spec.backend == "transformers"
        report.reachable = report.reachable or e.status_code is not None
        _failed(report, e)
    finally:
        aclose = getattr(client.backend, "aclose", None)
        if aclose is not None:
            await aclose()
    return report
