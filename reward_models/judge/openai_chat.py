"""The judge backend for an OpenAI-compatible ``/v1/chat/completions`` server, over httpx."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx

from arbiter.reward_models.errors import (
    JudgeError,
    JudgeShapeError,
    JudgeTimeoutError,
    JudgeUnavailableError,
)
from arbiter.reward_models.judge.types import JudgeReply, Messages, SamplingParams, TokenLogprob
from arbiter.reward_models.secrets import redact_url

__all__ = ["JudgeUnavailableRetryAfter", "OpenAIChatBackend"]


class JudgeUnavailableRetryAfter(JudgeUnavailableError):
    """Unavailable, with the server's ``Retry-After`` in seconds."""

    def __init__(self, message: str, retry_after_s: float | None) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s


class OpenAIChatBackend:
    """OpenAI-compatible ``/v1/chat/completions`` (vLLM, SGLang, any provider) over httpx."""

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key: str | None = None,
        timeout_s: float = 60.0,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        """Build the backend; ``transport`` lets tests answer in memory.

        ``base_url`` may end in ``/v1`` (as OpenAI clients write it) or not.
        """
        self._model = model
        self._base_url = base_url.rstrip("/").removesuffix("/v1")
        # Error messages end up in logged rewards: never a URL's password.
        self._where = redact_url(self._base_url)
        self._headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._timeout_s = timeout_s
        self._transport = transport
        self._clients: dict[asyncio.AbstractEventLoop, httpx.AsyncClient] = {}

    @property
    def model(self) -> str:
        """Name the model."""
        return self._model

    def _client(self) -> httpx.AsyncClient:
        # An AsyncClient's connections belong to one event loop.
        loop = asyncio.get_running_loop()
        for old in [lp for lp in self._clients if lp.is_closed()]:
            del self._clients[old]
        client = self._clients.get(loop)
        if client is None:
            client = httpx.AsyncClient(
                base_url=self._base_url,
                headers=self._headers,
                timeout=self._timeout_s,
                transport=self._transport,
            )
            self._clients[loop] = client
        return client

    async def complete(self, messages: Messages, params: SamplingParams) -> JudgeReply:
        """Ask for a completion with the top logprobs of every generated token."""
        body: dict[str, Any] = {
            "model": self._model,
            "messages": messages,
            "temperature": params.temperature,
            "max_tokens": params.max_tokens,
            "logprobs": params.top_logprobs > 0,
        }
        if params.top_logprobs > 0:
            body["top_logprobs"] = params.top_logprobs
        if params.seed is not None:
            body["seed"] = params.seed
        if params.top_p is not None:
            body["top_p"] = params.top_p
        try:
            response = await self._client().post("/v1/chat/completions", json=body)
        except httpx.TimeoutException as e:
            raise JudgeTimeoutError(f"judge {self._model} timed out: {e}") from e
        except httpx.TransportError as e:
            raise JudgeUnavailableError(
                f"judge at {self._where} unreachable: {type(e).__name__}: {e}"
            ) from e
        if response.status_code == 429 or response.status_code >= 500:
            retry_after = response.headers.get("retry-after")
            try:
                seconds = float(retry_after) if retry_after is not None else None
            except ValueError:
                seconds = None
            unavailable = JudgeUnavailableRetryAfter(
                f"judge answered {response.status_code}: {response.text[:200]}", seconds
            )
            unavailable.status_code = response.status_code
            raise unavailable
        if response.status_code != 200:
            refused = JudgeError(f"judge refused ({response.status_code}): {response.text[:200]}")
            refused.status_code = response.status_code
            raise refused
        return self._parse(response)

    def _parse(self, response: httpx.Response) -> JudgeReply:
        try:
            choice = response.json()["choices"][0]
            text = choice["message"]["content"]
            if not isinstance(text, str):
                raise TypeError("message content is not text")
            content = (choice.get("logprobs") or {}).get("content")
            tokens = None
            if content:
                tokens = tuple(
                    TokenLogprob(
                        token=str(t["token"]),
                        logprob=float(t["logprob"]),
                        top=tuple(
                            (str(a["token"]), float(a["logprob"]))
                            for a in t.get("top_logprobs") or ()
                        ),
                    )
                    for t in content
                )
            usage = response.json().get("usage") or {}
            prompt_tokens = usage.get("prompt_tokens")
            completion_tokens = usage.get("completion_tokens")
        except (ValueError, KeyError, TypeError, IndexError, AttributeError) as e:
            raise JudgeShapeError(f"the judge's answer is not a chat completion: {e!r}") from e
        return JudgeReply(
            text,
            tokens,
            prompt_tokens=prompt_tokens if isinstance(prompt_tokens, int) else None,
            completion_tokens=completion_tokens if isinstance(completion_tokens, int) else None,
        )

    async def aclose(self) -> None:
        """Close the HTTP clients of this event loop."""
        client = self._clients.pop(asyncio.get_running_loop(), None)
        if client is not None:
            await client.aclose()
