"""Errors of the reward-model and judge layer; this docstring is the tree.

::

    RewardModelError                 anything this package raises on purpose
    ├── ConfigurationError           a setting that cannot work (caught at load, not mid-training)
    ├── ScoringContractError         the load-time check found scores that disagree
    ├── NormalizationError           normalization asked for a statistic it does not have
    ├── BatcherError                 the batcher refused or dropped a request
    │   ├── QueueFullError           back-pressure: the bounded queue is full (retry later)
    │   ├── DeadlineExceededError    the request's deadline passed before it was scored
    │   └── BatcherClosedError       the batcher was closed with the request still pending
    ├── BackendError                 a model server answered wrongly or not at all
    │   └── BackendUnavailableError  it could not be reached, or said "try again" (retryable)
    └── JudgeError                   an LLM judge gave no usable verdict
        ├── JudgeParseError          its answer held no grade in the required form
        ├── JudgeUnavailableError    it could not be reached (retryable)
        └── JudgeTimeoutError        it did not answer in time (retryable)

``retryable`` on each says whether the same request may succeed later; graders
copy it onto their typed failure.
"""

from __future__ import annotations

__all__ = [
    "BackendError",
    "BackendUnavailableError",
    "BatcherClosedError",
    "BatcherError",
    "ConfigurationError",
    "DeadlineExceededError",
    "JudgeError",
    "JudgeParseError",
    "JudgeTimeoutError",
    "JudgeUnavailableError",
    "NormalizationError",
    "QueueFullError",
    "RewardModelError",
    "ScoringContractError",
]


class RewardModelError(Exception):
    """Base of every error this package raises on purpose."""

    retryable: bool = False


class ConfigurationError(RewardModelError):
    """A setting that cannot work."""


class ScoringContractError(RewardModelError):
    """The load-time scoring contract failed: the model must not serve."""


class NormalizationError(RewardModelError):
    """Normalization was asked for a statistic it does not have."""


class BatcherError(RewardModelError):
    """The batcher refused or dropped a request."""


class QueueFullError(BatcherError):
    """The bounded queue is full; the caller should back off and retry."""

    retryable = True


class DeadlineExceededError(BatcherError):
    """The request's deadline passed before its score was ready."""

    retryable = True


class BatcherClosedError(BatcherError):
    """The batcher was closed while the request was pending."""

    retryable = True


class BackendError(RewardModelError):
    """A model server answered with something that is not a score."""


class BackendUnavailableError(BackendError):
    """A model server could not be reached or asked to be retried."""

    retryable = True


class JudgeError(RewardModelError):
    """An LLM judge gave no usable verdict."""


class JudgeParseError(JudgeError):
    """The judge's answer held no grade in the required form."""


class JudgeUnavailableError(JudgeError):
    """The judge could not be reached, or answered with a server error."""

    retryable = True


class JudgeTimeoutError(JudgeError):
    """The judge did not answer in time."""

    retryable = True
