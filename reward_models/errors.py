"""Errors of the reward-model and judge layer; this docstring is the tree.

::

    RewardModelError                 anything this package raises on purpose
    ├── ConfigurationError           a setting that cannot work (caught at load, not mid-training)
    │   ├── ModelNotFoundError       no model (or tokenizer) at the declared local path
    │   └── LabelCountError          the model has another number of outputs than objectives named
    ├── ModelUnavailableError        a declared model that could not be loaded or built
    │   └── SecretMissingError       the environment variable its api_key_env names is not set
    ├── InputTooLongError            an input over max_length where truncation is refused
    ├── ScoringContractError         the load-time check found scores that disagree
    ├── NormalizationError           normalization asked for a statistic it does not have
    ├── BatcherError                 the batcher refused or dropped a request
    │   ├── QueueFullError           back-pressure: the bounded queue is full (retry later)
    │   ├── DeadlineExceededError    the request's deadline passed before it was scored
    │   └── BatcherClosedError       the batcher was closed with the request still pending
    ├── BackendError                 a model server answered wrongly or not at all
    │   ├── BackendUnavailableError  it could not be reached, or said "try again" (retryable)
    │   └── OutputShapeError         its answer is not one score vector per input
    └── JudgeError                   an LLM judge gave no usable verdict
        ├── JudgeParseError          its answer held no grade in the required form
        ├── JudgeShapeError          its answer is not a chat completion at all
        ├── JudgeUnavailableError    it could not be reached (retryable)
        └── JudgeTimeoutError        it did not answer in time (retryable)

``retryable`` on each says whether the same request may succeed later; graders
copy it onto their typed failure. ``status_code`` is the HTTP status a server
refused with (401, 404, ...), where one did; :func:`error_kind` names an error
for metrics and for ``arbiter models check``.
"""

from __future__ import annotations

__all__ = [
    "BackendError",
    "BackendUnavailableError",
    "BatcherClosedError",
    "BatcherError",
    "ConfigurationError",
    "DeadlineExceededError",
    "InputTooLongError",
    "JudgeError",
    "JudgeParseError",
    "JudgeShapeError",
    "JudgeTimeoutError",
    "JudgeUnavailableError",
    "LabelCountError",
    "ModelNotFoundError",
    "ModelUnavailableError",
    "NormalizationError",
    "OutputShapeError",
    "QueueFullError",
    "RewardModelError",
    "ScoringContractError",
    "SecretMissingError",
    "error_kind",
]


class RewardModelError(Exception):
    """Base of every error this package raises on purpose."""

    retryable: bool = False
    #: The HTTP status a server refused with, where one did (set on the instance).
    status_code: int | None = None


class ConfigurationError(RewardModelError):
    """A setting that cannot work."""


class ModelNotFoundError(ConfigurationError):
    """No model or tokenizer at the declared local path (nothing is ever downloaded)."""


class ModelUnavailableError(RewardModelError):
    """A declared model that could not be loaded or built (a bad path, a missing secret)."""


class SecretMissingError(ModelUnavailableError):
    """The environment variable a declared model's ``api_key_env`` names is not set."""


class InputTooLongError(RewardModelError):
    """An input longer than ``max_length`` where the model is declared not to truncate."""


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


class OutputShapeError(BackendError):
    """A model server's answer is not one score vector per input."""


class LabelCountError(OutputShapeError, ConfigurationError):
    """The model gives another number of outputs than the objectives declared for it."""


class JudgeError(RewardModelError):
    """An LLM judge gave no usable verdict."""


class JudgeParseError(JudgeError):
    """The judge's answer held no grade in the required form."""


class JudgeShapeError(JudgeError):
    """The judge's answer is not a chat completion (a server of another kind at that URL)."""


class JudgeUnavailableError(JudgeError):
    """The judge could not be reached, or answered with a server error."""

    retryable = True


class JudgeTimeoutError(JudgeError):
    """The judge did not answer in time."""

    retryable = True


def error_kind(error: BaseException) -> str:
    """Name the kind of a model's failure, for metrics and ``arbiter models check`` (pure).

    One of ``unreachable``, ``rate_limited``, ``server_error``, ``unauthorized``,
    ``model_missing``, ``wrong_labels``, ``wrong_output_shape``, ``no_verdict``,
    ``timeout``, ``deadline``, ``queue_full``, ``closed``, ``missing_secret``, ``not_loaded``,
    ``input_too_long``, ``contract``, ``refused`` or ``error``.
    """
    status = getattr(error, "status_code", None)
    if status in (401, 403):
        return "unauthorized"
    if status == 404:
        return "model_missing"
    if status == 429:
        return "rate_limited"
    if status is not None and status >= 500:
        return "server_error"
    kinds: tuple[tuple[type[BaseException], str], ...] = (
        (LabelCountError, "wrong_labels"),
        (ModelNotFoundError, "model_missing"),
        (OutputShapeError, "wrong_output_shape"),
        (JudgeParseError, "no_verdict"),
        (JudgeShapeError, "wrong_output_shape"),
        (JudgeTimeoutError, "timeout"),
        (BackendUnavailableError, "unreachable"),
        (JudgeUnavailableError, "unreachable"),
        (DeadlineExceededError, "deadline"),
        (QueueFullError, "queue_full"),
        (BatcherClosedError, "closed"),
        (SecretMissingError, "missing_secret"),
        (ModelUnavailableError, "not_loaded"),
        (InputTooLongError, "input_too_long"),
        (ScoringContractError, "contract"),
        (TimeoutError, "timeout"),
    )
    for cls, kind in kinds:
        if isinstance(error, cls):
            return kind
    if status is not None:
        return "refused"
    return "error"
