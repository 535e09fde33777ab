"""Python client of the Arbiter service (httpx), sync and async.

Retries are safe by construction: every call carries an ``Idempotency-Key``
(generated unless given) and every attempt of the call sends the same one, so a
retried request is answered from the service's log rather than graded and
logged twice. What is retried: 429 and 503 (over capacity, the store down), 502
and 504 (a gateway in front of a replica that is restarting), 409
``idempotency_key_in_flight`` (another replica is grading this very key; the
retry replays its response), connection errors and timeouts. Anything else
raises :class:`ArbiterError` at once.

Retries run on a budget of time, not a count (:class:`RetryPolicy`): a call
keeps trying for ``retry_budget_s`` (60 s by default) after its first failure,
which rides out a replica's or PostgreSQL's restart of up to 30 s with room to
spare. The waits grow exponentially with full jitter (a random wait up to the
bound, so that many trainers do not retry in step), never shorter than the
service's ``Retry-After``.

The two clients mirror each other as httpx's own do: every decision (retry or
not, how long to wait, which error to raise) is made once, in ``RetryPolicy``;
each client keeps only its few lines of loop, one blocking and one awaiting,
since a loop cannot be both.
"""

from __future__ import annotations

import asyncio
import math
import random
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import httpx

from arbiter.graders.types import Sample

__all__ = ["ArbiterClient", "ArbiterError", "AsyncArbiterClient", "RetryPolicy", "RewardBatch"]

#: Answers retried as they are: over capacity, the store or a replica unavailable
#: (503 from the service, 502/504 from a gateway in front of one that restarts).
RETRY_STATUS = frozenset({429, 502, 503, 504})
#: A 409 with this code is retried too: another replica is grading the same key.
IN_FLIGHT_CODE = "idempotency_key_in_flight"

#: The default retry budget: a restart of up to 30 s (a replica's, or
#: PostgreSQL's) is ridden out with as much again to spare.
RETRY_BUDGET_S = 60.0


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
        """Return one component's scores (``None`` where it could not score, or is absent).

        Under a rubric with routes a sample has its route's components only: the
        others are ``None`` for it.
        """
        return [(r["components"].get(name) or {}).get("score") for r in self.rewards]


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


def _retry_after_s(response: httpx.Response) -> float:
    """Return the response's ``Retry-After`` in seconds (0 when absent or an HTTP date)."""
    header = response.headers.get("retry-after")
    if header is None:
        return 0.0
    try:
        value = float(header)
    except ValueError:
        return 0.0  # an HTTP date: the backoff decides
    return value if math.isfinite(value) and value > 0 else 0.0


def _in_flight(response: httpx.Response) -> bool:
    """Whether a 409 says another replica is grading this request's key now."""
    if response.status_code != 409:
        return False
    try:
        return bool(response.json().get("code") == IN_FLIGHT_CODE)
    except ValueError:
        return False


@dataclass(frozen=True)
class RetryPolicy:
    """How a call retries: a budget of time, exponential backoff with full jitter.

    Attributes:
        budget_s: how long after its first failure a call keeps retrying. No
            attempt starts later than that; the last error is raised then.
        backoff_s: the first wait's bound; each later bound doubles, up to
            ``max_backoff_s``. A wait is drawn uniformly below its bound ("full
            jitter"), and is never shorter than the answer's ``Retry-After``.
        max_backoff_s: the largest bound, so that a client notices within
            about this long that a restart is over.
        in_flight_s: how long a call waits, replaying, for another replica that
            is grading its key (409 ``idempotency_key_in_flight``) when that is
            longer than the budget: such an answer is progress, not a fault, so
            it is waited out as a slow response would be.
    """

    budget_s: float = RETRY_BUDGET_S
    backoff_s: float = 0.5
    max_backoff_s: float = 5.0
    in_flight_s: float = 0.0

    def __post_init__(self) -> None:
        for name in ("budget_s", "backoff_s", "max_backoff_s", "in_flight_s"):
            value = getattr(self, name)
            if not isinstance(value, int | float) or not math.isfinite(value) or value < 0:
                raise ValueError(f"{name} must be a finite number of seconds >= 0, got {value!r}")
        if self.backoff_s <= 0:
            raise ValueError(f"backoff_s must be above 0, got {self.backoff_s!r}")
        if self.max_backoff_s < self.backoff_s:
            raise ValueError(
                f"max_backoff_s ({self.max_backoff_s}) must be at least backoff_s "
                f"({self.backoff_s})"
            )

    def start(self, clock: Callable[[], float] = time.monotonic) -> _Call:
        """Return the retry state of one call, timed by ``clock`` (seconds)."""
        return _Call(self, clock)


class _Call:
    """One call's attempts: when its budget ends, how many retries so far."""

    def __init__(self, policy: RetryPolicy, clock: Callable[[], float]) -> None:
        self.policy = policy
        self.clock = clock
        self.retries = 0
        self.until: float | None = None  # on ``clock``: no attempt starts after this
        self.in_flight_since: float | None = None  # the first 409 in flight

    def wait_before_retry(
        self, response: httpx.Response | None, error: Exception | None
    ) -> float | None:
        """Return seconds to wait before retrying, or ``None``: ``response`` is the answer.

        Raises:
            ArbiterError: the service refused the request, or kept refusing it
                past the budget.
            Exception: ``error`` itself, once the budget is spent.
        """
        retry_after = 0.0
        if error is None:
            assert response is not None
            in_flight = _in_flight(response)
            if response.status_code not in RETRY_STATUS and not in_flight:
                if response.status_code >= 400:
                    raise _error(response)
                return None
            retry_after = _retry_after_s(response)
        else:
            in_flight = False
        now = self.clock()
        if self.until is None:
            self.until = now + self.policy.budget_s
        if in_flight:
            if self.in_flight_since is None:
                self.in_flight_since = now
            self.until = max(self.until, self.in_flight_since + self.policy.in_flight_s)
        # The exponent stops growing long before a float would overflow (a call
        # retrying for hours against quick refusals makes thousands of attempts).
        bound = min(self.policy.max_backoff_s, self.policy.backoff_s * 2.0 ** min(self.retries, 30))
        wait = max(retry_after, random.uniform(0.0, bound))
        left = self.until - now
        if left <= 0 or retry_after > left:
            # Spent, or the service asks for more time than is left: stop here.
            if error is not None:
                raise error
            assert response is not None
            raise _error(response)
        self.retries += 1
        return min(wait, left)


def _policy(
    timeout_s: float, retry_budget_s: float, backoff_s: float, max_backoff_s: float
) -> RetryPolicy:
    """Return a client's retry policy; a 409 in flight is waited for as long as an attempt."""
    if not isinstance(timeout_s, int | float) or not math.isfinite(timeout_s) or timeout_s <= 0:
        raise ValueError(f"timeout_s must be a finite number of seconds > 0, got {timeout_s!r}")
    return RetryPolicy(retry_budget_s, backoff_s, max_backoff_s, in_flight_s=timeout_s)


class ArbiterClient:
    """Synchronous client."""

    def __init__(
        self,
        base_url: str,
        api_key: str | None = None,
        *,
        timeout_s: float = 190.0,
        retry_budget_s: float = RETRY_BUDGET_S,
        backoff_s: float = 0.5,
        max_backoff_s: float = 5.0,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        """Connect to the service at ``base_url``.

        Args:
            base_url: the service (or the load balancer in front of its replicas).
            api_key: a trainer key (sent as ``Authorization: Bearer``).
            timeout_s: how long one attempt waits for its answer; a batch is
                graded within its request, so this bounds the grading too.
            retry_budget_s: how long after its first failure a call keeps
                retrying (see :class:`RetryPolicy`).
            backoff_s: the first retry's wait bound (doubling, with full jitter).
            max_backoff_s: the largest wait bound between two attempts.
            transport: an httpx transport (tests, or a custom load balancer).

        Raises:
            ValueError: a time that is negative, zero where it must not be, or not
                finite, or ``max_backoff_s`` below ``backoff_s``.
        """
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._policy = _policy(timeout_s, retry_budget_s, backoff_s, max_backoff_s)
        self._http = httpx.Client(
            base_url=base_url, headers=headers, timeout=timeout_s, transport=transport
        )

    def close(self) -> None:
        """Close the connection pool."""
        self._http.close()

    def __enter__(self) -> ArbiterClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def request(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        """Send a request, retrying what is retryable within the budget; raise on other errors."""
        call = self._policy.start()
        while True:
            response: httpx.Response | None = None
            error: Exception | None = None
            try:
                response = self._http.request(method, path, **kwargs)
            except (httpx.TransportError, httpx.TimeoutException) as e:
                error = e
            wait = call.wait_before_retry(response, error)
            if wait is None:
                assert response is not None
                return response
            time.sleep(wait)

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

    def register_rubric(self, text: str) -> dict[str, Any]:
        """Register a rubric version (an admin key): ``{"rubric": identity, "created": bool}``.

        Raises:
            ArbiterError: the service refused it (``invalid_rubric`` lists each error
                with its line and column; ``version_conflict`` when the version exists
                with other text).
        """
        answer: dict[str, Any] = self.request("POST", "/v1/rubrics", json={"yaml": text}).json()
        return answer

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
        retry_budget_s: float = RETRY_BUDGET_S,
        backoff_s: float = 0.5,
        max_backoff_s: float = 5.0,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        """Connect to the service at ``base_url`` (the arguments of :class:`ArbiterClient`).

        Raises:
            ValueError: a time that is negative, zero where it must not be, or not
                finite, or ``max_backoff_s`` below ``backoff_s``.
        """
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._policy = _policy(timeout_s, retry_budget_s, backoff_s, max_backoff_s)
        self._http = httpx.AsyncClient(
            base_url=base_url, headers=headers, timeout=timeout_s, transport=transport
        )

    async def aclose(self) -> None:
        """Close the connection pool."""
        await self._http.aclose()

    async def __aenter__(self) -> AsyncArbiterClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def request(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        """Send a request, retrying what is retryable within the budget; raise on other errors."""
        call = self._policy.start()
        while True:
            response: httpx.Response | None = None
            error: Exception | None = None
            try:
                response = await self._http.request(method, path, **kwargs)
            except (httpx.TransportError, httpx.TimeoutException) as e:
                error = e
            wait = call.wait_before_retry(response, error)
            if wait is None:
                assert response is not None
                return response
            await asyncio.sleep(wait)

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
