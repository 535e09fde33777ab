"""A remote vLLM server as a reward-model backend, through ``/classify`` or ``/pooling``.

Conversations are encoded *here*, with the model's own tokenizer (chat template,
single BOS, truncation that keeps the response's end), and sent as token ids:
the server then scores exactly what the local backend would, and the client
knows each request's length for the same length-bucketed batching.

vLLM's classification pooler applies an activation (sigmoid or softmax) to the
head's logits unless told otherwise; every request says ``"activation": false``
so the scores are the raw logits, as with the local backend.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

import httpx

from arbiter.reward_models.chat import ChatEncoder, EncodedInput
from arbiter.reward_models.errors import (
    BackendError,
    BackendUnavailableError,
    LabelCountError,
    OutputShapeError,
)
from arbiter.reward_models.secrets import redact_url

__all__ = ["VLLMRewardBackend"]


class VLLMRewardBackend:
    """Score token ids on a vLLM server (synchronous: it runs on the batcher's thread)."""

    def __init__(
        self,
        base_url: str,
        model: str,
        tokenizer: Any,
        *,
        endpoint: Literal["classify", "pooling"] = "classify",
        objectives: tuple[str, ...] = ("reward",),
        max_length: int = 4096,
        timeout_s: float = 60.0,
        api_key: str | None = None,
        transport: httpx.BaseTransport | None = None,
        truncate: bool = True,
        prompt_head_tokens: int = 16,
        prompt_tail_tokens: int = 32,
    ) -> None:
        """Build the backend.

        Args:
            base_url: the server, e.g. ``http://127.0.0.1:8000``.
            model: the served model's name.
            tokenizer: the model's tokenizer (loaded locally), for encoding.
            endpoint: ``classify`` (``data[i].probs``) or ``pooling`` (``data[i].data``).
            objectives: names of the head's outputs.
            max_length: token limit applied before sending.
            timeout_s: per-request HTTP timeout.
            api_key: sent as a bearer token when set.
            transport: an httpx transport (tests pass an in-memory one).
            truncate: cut an input over ``max_length`` keeping its end (else refuse it).
            prompt_head_tokens: prompt tokens kept at the start when cutting.
            prompt_tail_tokens: prompt tokens kept at the end when cutting.
        """
        self.model = model
        self.endpoint = endpoint
        self._objectives = objectives
        # Error messages end up in logged rewards: never a URL's password.
        self._where = redact_url(base_url)
        self.encoder = ChatEncoder(
            tokenizer,
            max_length=max_length,
            prompt_head_tokens=prompt_head_tokens,
            prompt_tail_tokens=prompt_tail_tokens,
            truncate=truncate,
        )
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._http = httpx.Client(
            base_url=base_url, timeout=timeout_s, transport=transport, headers=headers
        )

    @property
    def objectives(self) -> tuple[str, ...]:
        """Name each output of the model, in order."""
        return self._objectives

    def encode(self, messages: Sequence[Mapping[str, Any]]) -> EncodedInput:
        """Encode one conversation with the model's tokenizer."""
        return self.encoder.encode(messages)

    def score_batch(self, inputs: Sequence[EncodedInput]) -> list[tuple[float, ...]]:
        """Send one request holding the whole batch and return its raw scores in order.

        Raises:
            BackendUnavailableError: unreachable, timed out, 429 or 5xx.
            BackendError: any other refusal, or an answer that is not one score
                vector per input.
        """
        body: dict[str, Any] = {
            "model": self.model,
            "input": [list(x.ids) for x in inputs],
            "activation": False,
        }
        if self.endpoint == "pooling":
            body["task"] = "classify"
        try:
            response = self._http.post(f"/{self.endpoint}", json=body)
        except httpx.TransportError as e:
            raise BackendUnavailableError(
                f"vLLM at {self._where} unreachable: {type(e).__name__}: {e}"
            ) from e
        if response.status_code == 429 or response.status_code >= 500:
            error: BackendError = BackendUnavailableError(
                f"vLLM answered {response.status_code}: {response.text[:200]}"
            )
        elif response.status_code != 200:
            error = BackendError(
                f"vLLM refused the batch ({response.status_code}): {response.text[:200]}"
            )
        else:
            return self._parse(response, len(inputs))
        error.status_code = response.status_code
        raise error

    def _parse(self, response: httpx.Response, n: int) -> list[tuple[float, ...]]:
        key = "probs" if self.endpoint == "classify" else "data"
        try:
            data = response.json()["data"]
            by_index: dict[int, tuple[float, ...]] = {}
            for position, row in enumerate(data):
                values = row[key]
                # /pooling may nest one vector per sequence as [[...]].
                if values and isinstance(values[0], list):
                    values = values[0]
                by_index[int(row.get("index", position))] = tuple(float(v) for v in values)
        except (ValueError, KeyError, TypeError, IndexError) as e:
            raise OutputShapeError(f"vLLM answer is not a {self.endpoint} response: {e!r}") from e
        if sorted(by_index) != list(range(n)):
            raise OutputShapeError(f"vLLM returned scores for {len(by_index)} of {n} inputs")
        out = [by_index[i] for i in range(n)]
        width = len(self._objectives)
        wrong = next((v for v in out if len(v) != width), None)
        if wrong is not None:
            raise LabelCountError(
                f"vLLM returned vectors {len(wrong)} wide for {width} objective(s) "
                f"({', '.join(self._objectives)})"
            )
        return out

    def close(self) -> None:
        """Close the HTTP connection pool."""
        self._http.close()
