"""Reward models and judges: dynamic batcher, transformers reward model, LLM-judge client.

* :mod:`~arbiter.reward_models.batcher` — requests from concurrent callers gathered into
  token-budgeted, length-bucketed batches, run on a dedicated thread, with a
  bounded queue and per-request deadlines.
* :mod:`~arbiter.reward_models.chat` — chat template applied server-side (one BOS),
  truncation that keeps the end of the response.
* :mod:`~arbiter.reward_models.hf` — a local transformers sequence-classification reward
  model with a load-time scoring contract; :mod:`~arbiter.reward_models.vllm` — the same
  through a vLLM server's ``/classify`` or ``/pooling``.
* :mod:`~arbiter.reward_models.client` — one front for either backend, through the batcher.
* :mod:`~arbiter.reward_models.normalize` — affine, running and per-group z-scores.
* :mod:`~arbiter.reward_models.judge` — LLM judges: level-anchored prompts, verdicts bound
  to the last match, logprob-weighted expectations, OpenAI-compatible and local
  backends, retries, votes, cache.
* :mod:`~arbiter.reward_models.declarations` — reward models and judges as a models
  file declares them, and how each is built; :mod:`~arbiter.reward_models.model_set`
  — declared models by name, built once, with their state;
  :mod:`~arbiter.reward_models.usage` — per-model counters; :mod:`~arbiter.reward_models.probe`
  — one scored example per model (``arbiter models check``);
  :mod:`~arbiter.reward_models.secrets` — keys from named variables, URLs redacted.
* :mod:`~arbiter.reward_models.errors` — the error tree.

This package imports nothing else from the project; the graders import it.
"""

from arbiter.reward_models.batcher import BatcherConfig, BatchStats, DynamicBatcher
from arbiter.reward_models.chat import ChatEncoder, EncodedInput
from arbiter.reward_models.client import RewardModelClient, RewardOutput, ScoringBackend
from arbiter.reward_models.errors import (
    BackendError,
    BackendUnavailableError,
    BatcherClosedError,
    BatcherError,
    ConfigurationError,
    DeadlineExceededError,
    JudgeError,
    JudgeParseError,
    JudgeTimeoutError,
    JudgeUnavailableError,
    NormalizationError,
    QueueFullError,
    RewardModelError,
    ScoringContractError,
)
from arbiter.reward_models.normalize import (
    AffineNormalizer,
    GroupZScorer,
    RunningZNormalizer,
)

__all__ = [
    "AffineNormalizer",
    "BackendError",
    "BackendUnavailableError",
    "BatchStats",
    "BatcherClosedError",
    "BatcherConfig",
    "BatcherError",
    "ChatEncoder",
    "ConfigurationError",
    "DeadlineExceededError",
    "DynamicBatcher",
    "EncodedInput",
    "GroupZScorer",
    "JudgeError",
    "JudgeParseError",
    "JudgeTimeoutError",
    "JudgeUnavailableError",
    "NormalizationError",
    "QueueFullError",
    "RewardModelClient",
    "RewardModelError",
    "RewardOutput",
    "RunningZNormalizer",
    "ScoringBackend",
    "ScoringContractError",
]
