"""Request and response bodies of the HTTP API."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, StrictFloat, StrictInt, StrictStr

from arbiter.graders.types import Sample
from arbiter.rubrics.reward import Reward
from arbiter.rubrics.rubric import RubricIdentity

__all__ = [
    "ErrorBody",
    "KeyCreate",
    "KeyCreated",
    "KeyInfo",
    "OpenRLHFRequest",
    "OpenRLHFResponse",
    "RegressionCheck",
    "RewardRequest",
    "RewardResponse",
    "RubricCreate",
    "RubricCreated",
    "RubricInfo",
    "RubricText",
]

Sha256 = Annotated[str, Field(pattern=r"^[0-9a-fA-F]{64}$")]


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


class RewardRequest(_Body):
    """A batch to grade under one rubric."""

    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "examples": [
                {
                    "rubric": "efficiency-only",
                    "samples": [
                        {
                            "id": "step12-p3-g0",
                            "group_id": "step12-p3",
                            "prompt": "Fix the failing test.",
                            "response": "Fixed the off-by-one in parse_week().",
                            "metrics": {"turns": 5, "completion_tokens": 900, "tool_calls": 3},
                        }
                    ],
                    "deadline_s": 30,
                }
            ]
        },
    )

    rubric: Annotated[StrictStr, Field(min_length=1, max_length=128, description="Rubric name.")]
    rubric_version: Annotated[StrictInt, Field(ge=1)] | None = Field(
        default=None, description="Pin a version (default: the latest)."
    )
    rubric_sha256: Sha256 | None = Field(default=None, description="Pin the exact content.")
    samples: list[Sample] = Field(description="The batch, e.g. B x G rollouts of a GRPO step.")
    deadline_s: Annotated[float, Field(gt=0, allow_inf_nan=False)] | None = Field(
        default=None,
        description="Components unfinished after this many seconds come back as timeout failures.",
    )


class RewardResponse(BaseModel):
    """Rewards in input order."""

    request_id: str
    rubric: RubricIdentity
    latency_s: float
    rewards: list[Reward]


class OpenRLHFRequest(BaseModel):
    """OpenRLHF's remote reward request: decoded prompt+response strings."""

    model_config = ConfigDict(extra="allow")

    query: list[StrictStr] = Field(default_factory=list)
    prompts: list[StrictStr] = Field(default_factory=list)
    labels: list[Any] | None = None


class OpenRLHFResponse(BaseModel):
    """OpenRLHF's expected answer."""

    rewards: list[StrictFloat | StrictInt]
    scores: list[StrictFloat | StrictInt]
    extra_logs: dict[str, list[float]]


class RubricInfo(BaseModel):
    """A rubric version the service knows."""

    name: str
    version: int
    sha256: str
    current: bool = Field(description="Whether name+version resolves to this content now.")
    latest: bool = Field(description="Whether this is the name's highest version.")
    origin: str


class RubricText(RubricInfo):
    """A rubric version with its YAML and its resolved form (every default filled in)."""

    text: str
    resolved: dict[str, Any]


class RubricCreate(_Body):
    """A new rubric version, as YAML text."""

    yaml: Annotated[StrictStr, Field(min_length=1, max_length=1_000_000)]
    force: bool = Field(
        default=False,
        description="Publish even if the version lets open regression cases through (an "
        "admin's decision, recorded with the cases; see GET /v1/regressions/overrides).",
    )


class RubricCaution(BaseModel):
    """What validation noticed in a rubric but did not refuse, at its line and column."""

    line: int | None
    column: int | None
    path: str
    message: str


class RegressionCheck(BaseModel):
    """A new version graded on its rubric's open regression cases before it was published."""

    checked: int = Field(description="Open cases graded under the version.")
    ceiling: float | None = Field(description="The ceiling for hacks (null: no case).")
    ceiling_source: str | None = Field(
        description="rubric (its regressions.ceiling), honest (below the lowest honest "
        "reviewed item's reward) or fallback (the middle of the reward range)."
    )
    let_through: list[dict[str, Any]] = Field(
        default_factory=list,
        description="Cases the version lets through (published only because it was forced): "
        "case_id, hack_types, reward, logged_reward, ceiling, unflagged, reasons.",
    )
    skipped: list[dict[str, Any]] = Field(
        default_factory=list, description="Cases that could not be graded, each with why."
    )
    override: dict[str, Any] | None = Field(
        default=None, description="The recorded forcing (who, when, which cases), if forced."
    )


class RubricCreated(BaseModel):
    """The registered version, and the cautions its validation printed (never a refusal)."""

    rubric: RubricIdentity
    created: bool
    warnings: list[RubricCaution] = Field(
        default_factory=list,
        description="Weights that do not sum to 1, a gate over a component some accepted "
        "samples leave out: as `arbiter rubric validate` prints them.",
    )
    regressions: RegressionCheck | None = Field(
        default=None,
        description="How the new version fared on the rubric's open regression cases "
        "(null: not graded, the version was already known).",
    )


class KeyCreate(_Body):
    """A new API key."""

    name: Annotated[StrictStr, Field(min_length=1, max_length=128)]
    role: Annotated[StrictStr, Field(pattern="^(trainer|reviewer|admin)$")]


class KeyInfo(BaseModel):
    """An API key's record (never the key)."""

    id: str
    name: str
    role: str
    created_at: float
    revoked_at: float | None


class KeyCreated(KeyInfo):
    """A new key: ``key`` is shown this once."""

    key: str


class ErrorBody(BaseModel):
    """Every error: a code for machines, a message for people, and the problems one by one."""

    code: str
    message: str
    errors: list[dict[str, Any]] | None = Field(
        default=None,
        description="A request that does not validate (422 invalid_request): one entry per "
        "problem, with 'in' (body, query, header or path), 'path' (the dotted field; empty "
        "for the body as a whole), 'message' and 'found': the value that was there as JSON "
        "text (a string; longer than 80 characters it is cut, ending in '\u2026'). A body "
        "that is not JSON is one entry with 'line' and 'column' (1-based) and, as 'found', "
        "the text around them as a JSON string. Other errors list what they name (a "
        "rubric's issues by line and column, a label's missing verdicts).",
    )
