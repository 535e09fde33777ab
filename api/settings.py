"""Service settings, read from the environment with the prefix ``ARBITER_``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

from pydantic import Field, field_validator, model_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

__all__ = ["LIBRARY_DIR", "Settings"]

LIBRARY_DIR = Path(__file__).resolve().parents[1] / "rubrics" / "library"


class Settings(BaseSettings):
    """Everything the service can be told; ``arbiter serve --help`` lists each, with its default."""

    model_config = SettingsConfigDict(env_prefix="ARBITER_", extra="ignore")

    database_url: str = Field(
        default="sqlite:///arbiter.db",
        description="SQLAlchemy URL; e.g. postgresql+psycopg://user@127.0.0.1:5432/db.",
    )
    host: str = Field(default="127.0.0.1", description="Address the server listens on.")
    port: int = Field(default=8000, description="Port the server listens on.")
    keep_alive_s: int = Field(
        default=75,
        ge=1,
        description="Seconds an idle keep-alive connection stays open. Longer than the clients' "
        "own idle expiry (httpx 5 s, aiohttp 15 s) and a load balancer's (60 s), so a client "
        "never sends on a connection the server is closing, which resets it mid-request.",
    )
    auth: Literal["required", "disabled"] = Field(
        default="required",
        description="'disabled' serves without API keys: for local development only, and loud.",
    )
    rubric_dirs: Annotated[list[Path], NoDecode] = Field(
        default_factory=list,
        description="Extra folders of rubric YAML (colon-separated), watched for changes.",
    )
    include_library: bool = Field(
        default=True,
        description="Also load the rubrics that ship with Arbiter (its rubric library).",
    )
    grader_plugins: Annotated[list[str], NoDecode] = Field(
        default_factory=list,
        description="Modules (comma-separated) whose register(registry) adds custom graders.",
    )
    models: Path | None = Field(
        default=None,
        description="A models file declaring the reward models and LLM judges "
        "rubrics name (see `arbiter models`); checked at start-up, loaded on warm-up.",
    )
    rubric_reload_interval_s: float = Field(
        default=2.0,
        ge=0,
        description="Seconds between re-reads of the rubric folders and of the versions other "
        "replicas stored; 0: read once, at start-up.",
    )

    require_sandbox_layers: Annotated[list[str], NoDecode] = Field(
        default_factory=list,
        description="Sandbox layers (comma-separated, or 'all') without which the service "
        "refuses to start; rubrics can require more in their unit_tests config.",
    )

    ray_address: str | None = Field(
        default=None,
        description="Grade the sandbox and static analyzers on this Ray cluster "
        "(host:port or ray://...); unset: on this machine.",
    )
    ray_cpus_per_actor: int = Field(
        default=1, ge=1, description="Ray CPUs per grader actor (its sandbox's fast places)."
    )
    ray_actors: int | None = Field(
        default=None,
        ge=1,
        description="Grader actors this replica starts (default: one per ray_cpus_per_actor "
        "of the cluster's CPUs). Replicas sharing a cluster each need their share: the "
        "first to start would otherwise claim every CPU.",
    )
    ray_max_queue: int = Field(
        default=16384,
        ge=1,
        description="Grader jobs queued or running on the cluster beyond which batches get 429.",
    )

    max_batch_samples: int = Field(
        default=4096, ge=1, description="Samples one request may carry; more: 413."
    )
    max_body_bytes: int = Field(
        default=64 * 1024 * 1024,
        ge=1024,
        description="Largest request body, in bytes; larger: 413.",
    )
    max_inflight_samples: int = Field(
        default=16384,
        ge=1,
        description="Samples in flight in this process beyond which a request gets 429 "
        "(a larger batch still runs once nothing else is in flight).",
    )
    per_key_max_inflight_requests: int = Field(
        default=32, ge=1, description="Grading requests one key may have in flight; more: 429."
    )
    max_inflight_runs: int = Field(
        default=512,
        ge=1,
        description="Code runs (POST /run_code, /v1/run) in flight or queued beyond which 429.",
    )
    per_key_max_inflight_runs: int = Field(
        default=256,
        ge=1,
        description="Code runs one key may have in flight or queued (a trainer calls one per "
        "test case, many at once).",
    )
    retry_after_s: int = Field(
        default=1, ge=1, description="Seconds a refused request is told to wait (Retry-After)."
    )
    max_deadline_s: float = Field(
        default=600.0, gt=0, description="Upper bound on a request's deadline_s, in seconds."
    )
    grader_concurrency: int = Field(
        default=1024, ge=1, description="Grader jobs one batch runs at once."
    )

    store_samples: Literal["full", "hash"] = Field(
        default="full", description="Log each sample as sent, or only its sha256."
    )
    openrlhf_rubric: str | None = Field(
        default=None, description="Rubric for POST /get_reward when the request names none."
    )
    openrlhf_abstain: Literal["zero", "group_mean", "raise"] = Field(
        default="raise",
        description="What /get_reward answers for an abstained reward (OpenRLHF needs floats): "
        "zero, the mean of its group's scored rewards in the request, or a 422 "
        "(reward_abstained). Abstentions are counted in extra_logs either way.",
    )
    openrlhf_dedupe_window_s: float = Field(
        default=900.0,
        ge=0,
        description="A byte-identical /get_reward within this window is a retry.",
    )
    drift_enabled: bool = Field(
        default=True, description="Watch every rubric's components for drift (see /v1/drift)."
    )
    drift_monitor: Literal["auto", "local", "shared"] = Field(
        default="auto",
        description="'local': this process feeds its own monitor batch by batch (one process); "
        "'shared': one monitor over every replica on the store, run by the replica holding "
        "its lock, following the reward log. 'auto' is local on SQLite, shared otherwise.",
    )
    drift_poll_interval_s: float = Field(
        default=1.0,
        gt=0,
        description="Shared drift monitor: how often the log is followed and alerts read back.",
    )
    idempotency_wait_s: float = Field(
        default=0.0,
        ge=0,
        description="How long a request waits for another live replica grading the same "
        "Idempotency-Key before answering 409 idempotency_key_in_flight with Retry-After "
        "(shared stores only). 0: at once, and the client's retry replays the response.",
    )
    review_show_scores: bool = Field(
        default=False,
        description="Show reviewers the graders' scores, "
        "violations and sampling reason (blind review is the default); a rubric's "
        "review.show_scores overrides it for that rubric.",
    )
    review_lease_s: float = Field(default=600.0, gt=0, description="A claimed item's lease.")
    review_required_reviews: int = Field(
        default=1, ge=1, le=5, description="Labels each sampled item needs (2 = double review)."
    )
    review_drift_boost: float = Field(
        default=5.0, ge=1, description="Sampling-rate multiplier while a drift alert is open."
    )
    log_level: str = Field(default="INFO", description="DEBUG, INFO, WARNING or ERROR.")
    log_json: bool = Field(
        default=True, description="Log JSON lines to stderr; false: plain text lines."
    )

    @field_validator("grader_plugins", "require_sandbox_layers", mode="before")
    @classmethod
    def _split_modules(cls, value: object) -> object:
        """Accept ``ARBITER_GRADER_PLUGINS`` as a comma-separated list."""
        if isinstance(value, str):
            return [part.strip() for part in value.split(",") if part.strip()]
        return value

    @field_validator("rubric_dirs", mode="before")
    @classmethod
    def _split_paths(cls, value: object) -> object:
        """Accept ``ARBITER_RUBRIC_DIRS`` as a colon-separated list, like ``PATH``."""
        if isinstance(value, str):
            return [Path(part) for part in value.split(":") if part]
        return value

    @model_validator(mode="after")
    def _shared_needs_a_server_database(self) -> Settings:
        """Refuse a shared drift monitor on SQLite, where every process would lead."""
        if self.drift_monitor == "shared" and self.database_url.startswith("sqlite"):
            raise ValueError(
                "ARBITER_DRIFT_MONITOR=shared needs a server database (PostgreSQL) that "
                "elects one leader; with SQLite run one process and 'local' (or 'auto')"
            )
        return self

    @property
    def shared_drift(self) -> bool:
        """Whether the drift monitor is the one shared by every replica on the store."""
        if self.drift_monitor == "auto":
            return not self.database_url.startswith("sqlite")
        return self.drift_monitor == "shared"

    def watched_dirs(self) -> list[Path]:
        """Rubric folders to load and watch, the library first."""
        return [*([LIBRARY_DIR] if self.include_library else []), *self.rubric_dirs]
