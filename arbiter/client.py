"""Python client of the Arbiter service (httpx), sync and async.

Retries are safe by construction: every call carries an ``Idempotency-Key``
(generated unless given), so a retried request is answered from the service's
log rather than graded and logged twice. 429 and 503 are retried honouring
``Retry-After``; connection errors and timeouts are retried with exponential
backoff; anything else raises :class:`ArbiterError` at once.

The two clients mirror each other as httpx's own do: every decision (retry or
not, how long to wait, which error to raise) is made once, in ``_Policy``; each
client keeps only its few lines of loop, one blocking and one awaiting, since
a loop cannot be both.
"""

from __future__ import annotations

import asyncio
import random
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import httpx

from graders.types import Sample

__all__ = ["ArbiterClient", "ArbiterError", "AsyncArbiterClient", "RewardBatch"]

RETRY_STATUS = frozenset({429, 503})


class ArbiterError(Exception):
    """The service answered with an error (after retries, for retryable ones)."""

    def __init__(self, status: int, code: str, message: str, body: Any = None) -> None:
        super().__init__(f"{status} {code}: {message}")
        self.status = status
        self.code = code
        self.message = message
        self.body = body


@dataclass(frozen=True)
class RewardBatch:
    """A response of ``POST /v1/rewards``: rewards as plain dicts, in input order."""

    request_id: str
    rubric: dict[str, Any]
    rewards: list[dict[str, Any]]
    replayed: bool

    def values(self) -> list[float | None]:
        """Return each reward's value (``None`` where the rubric abstained)."""
        return [r["reward"] for r in self.rewards]

    def component(self, name: str) -> list[float | None]:
        """Return one component's scores (``None`` where it could not score)."""
        return [r["components"][name]["score"] for r in self.rewards]


def _payload(
    samples: Sequence[Sample | Mapping[str, Any]],
    rubric: str,
    version: int | None,
    sha256: str | None,
    deadline_s: float | None,
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "rubric": rubric,
        "samples": [
            s.model_dump(mode="json", exclude_none=True) if isinstance(s, Sample) else dict(s)
            for s in samples
        ],
    }
    if version is not None:
        body["rubric_version"] = version
    if sha256 is not None:
        body["rubric_sha256"] = sha256
    if deadline_s is not None:
        body["deadline_s"] = deadline_s
    return body


def _error(response: httpx.Response) -> ArbiterError:
    try:
        body = response.json()
        return ArbiterError(
            response.status_code, body.get("code", "error"), body.get("message", ""), body
        )
    except ValueError:
        return ArbiterError(response.status_code, "error", response.text[:500])


def _batch(response: httpx.Response) -> RewardBatch:
    data = response.json()
    return RewardBatch(
        request_id=data["request_id"],
        rubric=data["rubric"],
        rewards=data["rewards"],
        replayed=response.headers.get("idempotent-replayed") == "true",
    )


class _Policy:
    def __init__(self, max_retries: int, backoff_s: float, max_backoff_s: float) -> None:
        self.max_retries = max_retries
        self.backoff_s = backoff_s
        self.max_backoff_s = max_backoff_s

    def wait_before_retry(
        self, attempt: int, response: httpx.Response | None, error: Exception | None
    ) -> float | None:
        """Return seconds to wait before retrying, or ``None`` to stop here.

        Raises:
            Exception: ``error`` itself, once the retries are spent.
        """
        if error is not None:
            if attempt >= self.max_retries:
                raise error
            return self.delay(attempt, None)
        assert response is not None
        if response.status_code in RETRY_STATUS and attempt < self.max_retries:
            return self.delay(attempt, response)
        if response.status_code >= 400:
            raise _error(response)
        return None

    def delay(self, attempt: int, response: httpx.Response | None) -> float:
        if response is not None:
            header = response.headers.get("retry-after")
            if header is not None:
                try:
                    return min(self.max_backoff_s, max(0.0, float(header)))
                except ValueError:
                    pass  # an HTTP date: fall back to backoff
        base = min(self.max_backoff_s, self.backoff_s * 2.0**attempt)
        jitter: float = random.random()  # spreads retries of many clients apart
        return base * (0.5 + jitter / 2)


class ArbiterClient:
    """Synchronous client."""

    def __init__(
        self,
        base_url: str,
        api_key: str | None = None,
        *,
        timeout_s: float = 190.0,
        max_retries: int = 5,
        backoff_s: float = 0.25,
        max_backoff_s: float = 30.0,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._http = httpx.Client(
            base_url=base_url, headers=headers, timeout=timeout_s, transport=transport
        )
        self._policy = _Policy(max_retries, backoff_s, max_backoff_s)

    def close(self) -> None:
        """Close the connection pool."""
        self._http.close()

    def __enter__(self) -> ArbiterClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def request(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        """Send a request, retrying 429/503 and transport errors; raise on other errors."""
        attempt = 0
        while True:
            response: httpx.Response | None = None
            error: Exception | None = None
            try:
                response = self._http.request(method, path, **kwargs)
            except (httpx.TransportError, httpx.TimeoutException) as e:
                error = e
            wait = self._policy.wait_before_retry(attempt, response, error)
            if wait is None:
                assert response is not None
                return response
            time.sleep(wait)
            attempt += 1

    def rewards(
        self,
        samples: Sequence[Sample | Mapping[str, Any]],
        rubric: str,
        *,
        version: int | None = None,
        sha256: str | None = None,
        deadline_s: float | None = None,
        idempotency_key: str | None = None,
    ) -> RewardBatch:
        """Grade a batch; rewards come back in input order."""
        key = idempotency_key or uuid.uuid4().hex
        response = self.request(
            "POST",
            "/v1/rewards",
            json=_payload(samples, rubric, version, sha256, deadline_s),
            headers={"Idempotency-Key": key},
        )
        return _batch(response)

    def rubric(self, name: str) -> dict[str, Any]:
        """Return the latest version of rubric ``name``: text, identity and resolved form."""
        entries = self.request("GET", "/v1/rubrics").json()
        latest = [e for e in entries if e["name"] == name and e["latest"]]
        if not latest:
            raise ArbiterError(404, "rubric_not_found", f"no rubric named {name!r}")
        answer: dict[str, Any] = self.request("GET", f"/v1/rubrics/{latest[0]['sha256']}").json()
        return answer


class AsyncArbiterClient:
    """Asynchronous client (same behaviour as :class:`ArbiterClient`)."""

    def __init__(
        self,
        base_url: str,
        api_key: str | None = None,
        *,
        timeout_s: float = 190.0,
        max_retries: int = 5,
        backoff_s: float = 0.25,
        max_backoff_s: float = 30.0,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._http = httpx.AsyncClient(
            base_url=base_url, headers=headers, timeout=timeout_s, transport=transport
        )
        self._policy = _Policy(max_retries, backoff_s, max_backoff_s)

    async def aclose(self) -> None:
        """Close the connection pool."""
        await self._http.aclose()

    async def __aenter__(self) -> AsyncArbiterClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def request(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        """Send a request, retrying 429/503 and transport errors; raise on other errors."""
        attempt = 0
        while True:
            response: httpx.Response | None = None
            error: Exception | None = None
            try:
                response = await self._http.request(method, path, **kwargs)
            except (httpx.TransportError, httpx.TimeoutException) as e:
                error = e
            wait = self._policy.wait_before_retry(attempt, response, error)
            if wait is None:
                assert response is not None
                return response
            await asyncio.sleep(wait)
            attempt += 1

    async def rewards(
        self,
        samples: Sequence[Sample | Mapping[str, Any]],
        rubric: str,
        *,
        version: int | None = None,
        sha256: str | None = None,
        deadline_s: float | None = None,
        idempotency_key: str | None = None,
    ) -> RewardBatch:
        """Grade a batch; rewards come back in input order."""
        key = idempotency_key or uuid.uuid4().hex
        response = await self.request(
            "POST",
            "/v1/rewards",
            json=_payload(samples, rubric, version, sha256, deadline_s),
            headers={"Idempotency-Key": key},
        )
        return _batch(response)
