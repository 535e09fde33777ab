"""Declared models: what a models file says of each reward model and judge, and how to build it.

The specs are the models file's contract (pydantic, unknown keys refused);
:func:`build_reward_model` and :func:`build_judge` turn one into a client.
Building is the only place a secret is read (:func:`~arbiter.reward_models.secrets.read_secret`),
and no spec ever holds one: ``api_key_env`` names the variable.

Meanings follow the peers' configurations where they have one: ``max_length``,
the batcher's token budget (``batch_tokens``, verl's ``max_num_batched_tokens``)
and the judge's ``rpm`` / ``tpm`` / ``concurrency`` / ``timeout_s``
(verl's rate-limited reward manager), ``base_url`` + ``model`` +
``api_key_env`` (verifiers' ``JudgeConfig``, OpenAI clients).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from arbiter.reward_models.batcher import BatcherConfig
from arbiter.reward_models.client import RewardModelClient
from arbiter.reward_models.errors import ConfigurationError, ModelNotFoundError
from arbiter.reward_models.secrets import ENV_NAME_PATTERN, read_secret, redact_url
from arbiter.reward_models.usage import ModelUsage

__all__ = [
    "JudgeSpec",
    "ModelsSpec",
    "RewardModelSpec",
    "build_judge",
    "build_reward_model",
    "close_client",
    "shown",
]

PositiveFloat = Annotated[float, Field(gt=0, allow_inf_nan=False)]
EnvName = Annotated[
    str,
    Field(
        pattern=ENV_NAME_PATTERN,
        description="The name of an environment variable holding the key, never the key itself.",
    ),
]
#: Names of declared models: what a rubric's ``model:`` or ``judge:`` says.
ModelName = Annotated[str, Field(pattern=r"^[A-Za-z0-9_.-]{1,64}$")]


class _Spec(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class RewardModelSpec(_Spec):
    """A reward model: a local transformers classifier, or a vLLM server's /classify or /pooling."""

    backend: Literal["transformers", "vllm"] = Field(
        description="transformers: a local sequence classifier run here (or on Ray replicas); "
        "vllm: a vLLM server's /classify or /pooling endpoint."
    )
    path: str = Field(
        description="transformers: the model directory (local; never downloaded). vllm: a local "
        "directory with the model's tokenizer (inputs are encoded here and sent as token ids)."
    )
    base_url: str | None = Field(default=None, description="vllm: the server, e.g. http://h:8000.")
    model: str | None = Field(default=None, description="vllm: the served model's name.")
    endpoint: Literal["classify", "pooling"] = Field(default="classify", description="vllm only.")
    api_key_env: EnvName | None = None
    timeout_s: PositiveFloat = Field(default=60.0, description="vllm: per-batch HTTP timeout.")
    objectives: list[str] = Field(
        default_factory=lambda: ["reward"],
        min_length=1,
        description="The head's outputs, in order.",
    )
    activation: Literal["none", "sigmoid"] = "none"
    dtype: Literal["auto", "float32", "bfloat16", "float16"] = "auto"
    device: str = Field(default="auto", description="'auto': cuda when available, else cpu.")
    max_length: int = Field(default=4096, ge=8, description="Tokens per input, after the template.")
    truncation: Literal["keep_end", "error"] = Field(
        default="keep_end",
        description="Over max_length: keep_end cuts the prompt's middle, then the response's "
        "start; error refuses the input (its component fails typed).",
    )
    prompt_head_tokens: int = Field(default=16, ge=0)
    prompt_tail_tokens: int = Field(default=32, ge=0)
    padding_side: Literal["right", "left"] = "right"
    pad_token: str | None = None
    tokenizer: str | None = Field(
        default=None, description="A local tokenizer directory (default: path)."
    )
    chat_template: str | None = Field(
        default=None, description="A file holding a Jinja chat template (default: the tokenizer's)."
    )
    batch_tokens: int = Field(
        default=4096, ge=1, description="The batcher's budget: rows x longest row per batch."
    )
    max_batch_size: int = Field(default=64, ge=1)
    max_wait_ms: Annotated[float, Field(ge=0, allow_inf_nan=False)] = 5.0
    max_queue: int = Field(default=4096, ge=1)
    replicas: int | None = Field(
        default=None,
        ge=1,
        description="transformers: run on this many Ray actors (needs a Ray cluster: "
        "--ray-address or ARBITER_RAY_ADDRESS); unset: in this process.",
    )
    gpus_per_replica: Annotated[float, Field(ge=0, allow_inf_nan=False)] = 1.0
    cpus_per_replica: Annotated[float, Field(ge=0, allow_inf_nan=False)] = 1.0

    @model_validator(mode="after")
    def _consistent(self) -> RewardModelSpec:
        if self.backend == "vllm":
            missing = [k for k in ("base_url", "model") if getattr(self, k) is None]
            if missing:
                raise ValueError(f"backend vllm needs {' and '.join(missing)}")
            if self.replicas is not None:
                raise ValueError("replicas are for backend transformers (vLLM scales itself)")
        else:
            given = [k for k in ("base_url", "model", "api_key_env") if getattr(self, k)]
            if given:
                raise ValueError(f"backend transformers runs locally; {', '.join(given)} unused")
        return self

    def hf_spec(self) -> Any:
        """Return the transformers model's own spec."""
        from arbiter.reward_models.hf import HFRewardModelSpec

        return HFRewardModelSpec(
            path=self.path,
            max_length=self.max_length,
            objectives=tuple(self.objectives),
            activation=self.activation,
            padding_side=self.padding_side,
            pad_token=self.pad_token,
            prompt_head_tokens=self.prompt_head_tokens,
            prompt_tail_tokens=self.prompt_tail_tokens,
            truncation=self.truncation,
            tokenizer=self.tokenizer,
            chat_template=self.chat_template,
            device=self.device,
            dtype=self.dtype,
        )

    def batching(self) -> BatcherConfig:
        """Return the batcher's configuration."""
        return BatcherConfig(
            max_batch_tokens=self.batch_tokens,
            max_batch_size=self.max_batch_size,
            max_wait_ms=self.max_wait_ms,
            max_queue=self.max_queue,
        )


class JudgeSpec(_Spec):
    """An LLM judge: an OpenAI-compatible chat endpoint, or a local causal LM."""

    backend: Literal["openai", "transformers"] = Field(
        description="openai: any OpenAI-compatible /v1/chat/completions (vLLM, SGLang, "
        "transformers serve, a provider); transformers: a local causal LM run here."
    )
    base_url: str | None = Field(default=None, description="openai: e.g. http://h:8000/v1.")
    model: str | None = Field(default=None, description="openai: the served model's name.")
    api_key_env: EnvName | None = None
    path: str | None = Field(default=None, description="transformers: the model directory.")
    prefill: str | None = Field(
        default=None,
        description="transformers: start the answer with this (e.g. '[RESULT] ') and read the "
        "grade's distribution in one forward pass.",
    )
    dtype: Literal["auto", "float32", "bfloat16", "float16"] = "auto"
    device: str = "auto"
    temperature: Annotated[float, Field(ge=0, le=2)] | None = Field(
        default=None, description="Where the rubric sets none."
    )
    top_p: Annotated[float, Field(gt=0, le=1)] | None = None
    seed: int | None = Field(default=None, description="Where the rubric sets none.")
    max_tokens: int | None = Field(
        default=None, ge=1, le=8192, description="A ceiling on the rubric's max_tokens."
    )
    timeout_s: PositiveFloat = 60.0
    retries: int = Field(default=2, ge=0, le=10, description="Of retryable failures only.")
    backoff_s: Annotated[float, Field(ge=0, allow_inf_nan=False)] = 0.5
    concurrency: int = Field(default=8, ge=1, description="Calls in flight at once.")
    rpm: PositiveFloat | None = Field(default=None, description="Requests per minute.")
    tpm: PositiveFloat | None = Field(default=None, description="Tokens per minute (in + out).")
    cache_size: int = Field(default=4096, ge=0, description="Answers kept; 0: no cache.")
    votes: int | None = Field(
        default=None, ge=1, le=16, description="Votes per criterion where the rubric sets none."
    )
    position_swap: bool = Field(
        default=True,
        description="Pairwise: ask in both orders (a flip is a tie); false asks once.",
    )

    @model_validator(mode="after")
    def _consistent(self) -> JudgeSpec:
        if self.backend == "openai":
            missing = [k for k in ("base_url", "model") if getattr(self, k) is None]
            if missing:
                raise ValueError(f"backend openai needs {' and '.join(missing)}")
            if self.path is not None or self.prefill is not None:
                raise ValueError("path and prefill are for backend transformers")
        elif self.path is None:
            raise ValueError("backend transformers needs path")
        return self


class ModelsSpec(_Spec):
    """A models file: reward models and LLM judges by the names rubrics use."""

    reward_models: dict[ModelName, RewardModelSpec] = Field(default_factory=dict)
    judges: dict[ModelName, JudgeSpec] = Field(default_factory=dict)


def build_reward_model(
    spec: RewardModelSpec,
    *,
    name: str,
    usage: ModelUsage | None = None,
    ray_address: str | None = None,
) -> RewardModelClient:
    """Load or connect one declared reward model and return its client (blocking).

    Raises:
        ConfigurationError: it cannot be loaded (a missing directory, a head of
            the wrong size, replicas without a cluster).
        ScoringContractError: the model fails its load-time scoring contract.
        ModelUnavailableError: its ``api_key_env`` is not set.
    """
    label = f"reward-model-{name}"
    if spec.backend == "vllm":
        from arbiter.reward_models.hf import load_tokenizer
        from arbiter.reward_models.vllm import VLLMRewardBackend

        assert spec.base_url is not None and spec.model is not None  # by the validator
        backend = VLLMRewardBackend(
            spec.base_url,
            spec.model,
            load_tokenizer(spec.hf_spec()),
            endpoint=spec.endpoint,
            objectives=tuple(spec.objectives),
            max_length=spec.max_length,
            timeout_s=spec.timeout_s,
            api_key=read_secret(spec.api_key_env),
            truncate=spec.truncation == "keep_end",
            prompt_head_tokens=spec.prompt_head_tokens,
            prompt_tail_tokens=spec.prompt_tail_tokens,
        )
        return RewardModelClient(backend, spec.batching(), name=label, usage=usage)
    if spec.replicas is not None:
        if ray_address is None:
            raise ConfigurationError(
                f"replicas: {spec.replicas} runs on a Ray cluster, and none is given "
                "(--ray-address or ARBITER_RAY_ADDRESS)"
            )
        from arbiter.reward_models.ray_replicas import RayRewardModelReplicas

        replicas = RayRewardModelReplicas(
            spec.hf_spec(),
            replicas=spec.replicas,
            num_gpus=spec.gpus_per_replica,
            num_cpus=spec.cpus_per_replica,
            address=ray_address,
        )
        return replicas.client(spec.batching(), name=label, usage=usage)
    from arbiter.reward_models.hf import HFRewardModel

    model = HFRewardModel.load(spec.hf_spec())
    return RewardModelClient(model, spec.batching(), name=label, usage=usage)


def build_judge(spec: JudgeSpec, *, name: str, usage: ModelUsage | None = None) -> Any:
    """Build one declared judge's client (blocking; a local model is loaded now).

    Raises:
        ConfigurationError: a local model that cannot be loaded.
        ModelUnavailableError: its ``api_key_env`` is not set.
    """
    from arbiter.reward_models.judge import JudgeClient, JudgeDefaults

    backend: Any
    if spec.backend == "openai":
        from arbiter.reward_models.judge import OpenAIChatBackend

        assert spec.base_url is not None and spec.model is not None  # by the validator
        backend = OpenAIChatBackend(
            spec.base_url,
            spec.model,
            api_key=read_secret(spec.api_key_env),
            timeout_s=spec.timeout_s,
        )
    else:
        backend = _local_judge(spec, name)
    return JudgeClient(
        backend,
        max_concurrency=spec.concurrency,
        max_retries=spec.retries,
        backoff_s=spec.backoff_s,
        cache_size=spec.cache_size,
        max_rpm=spec.rpm,
        max_tpm=spec.tpm,
        defaults=JudgeDefaults(
            temperature=spec.temperature,
            top_p=spec.top_p,
            seed=spec.seed,
            max_tokens=spec.max_tokens,
            votes=spec.votes,
        ),
        position_swap=spec.position_swap,
        usage=usage,
    )


def _local_judge(spec: JudgeSpec, name: str) -> Any:
    from pathlib import Path

    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from arbiter.reward_models.judge import LocalCausalLMBackend

    assert spec.path is not None  # by the validator
    if not (Path(spec.path) / "config.json").is_file():
        raise ModelNotFoundError(f"{spec.path!r} is not a local model directory")
    device = spec.device
    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
    dtype = (
        getattr(torch, spec.dtype)
        if spec.dtype != "auto"
        else (torch.bfloat16 if device.startswith("cuda") else torch.float32)
    )
    model: Any = AutoModelForCausalLM.from_pretrained(spec.path, local_files_only=True, dtype=dtype)
    model.to(device)
    tokenizer = AutoTokenizer.from_pretrained(spec.path, local_files_only=True)
    return LocalCausalLMBackend(model, tokenizer, name=name, prefill=spec.prefill)


def close_client(client: Any) -> None:
    """Release what a built client holds: Ray replicas are stopped, HTTP pools closed."""
    close = getattr(getattr(client, "backend", None), "close", None)
    if callable(close):
        close()


def shown(spec: RewardModelSpec | JudgeSpec) -> dict[str, Any]:
    """Return a spec as JSON-ready data for a ``show`` output: URLs' passwords redacted.

    A spec never holds a key; ``api_key_env`` is shown with whether it is set,
    never with its value.
    """
    import os

    data = spec.model_dump(mode="json")
    if data.get("base_url"):
        data["base_url"] = redact_url(data["base_url"])
    if data.get("api_key_env"):
        state = "set" if os.environ.get(data["api_key_env"]) else "NOT SET"
        data["api_key_env"] = f"{data['api_key_env']} ({state})"
    return data
