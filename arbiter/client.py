"""Python client of the Arbiter service (httpx), sync and async.

One module, one job: the trainer's client. The sync and async clients share one request
and retry contract, and the typed results they return are defined beside it.

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

Answers are typed: a reward is a frozen :class:`Reward` (``r.reward``,
``r.components["tests"].score``), read back from the service's log with
``rewards_for`` (one request) and ``logged_rewards`` (by sample, rubric and time, in
pages). The models accept fields a newer service adds, and keep them (pydantic's
``extra="allow"``): a trainer pinned to an older client still reads a newer
service's answers, and a reward it writes out again loses nothing. Likewise the
kinds of failures and violations, and whose an abstention is, are plain strings
here rather than the service's enums, so that a kind added later is read too.
"""

from __future__ import annotations

import asyncio
import math
import random
import time
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from urllib.parse import quote

import httpx
from pydantic import BaseModel, ConfigDict, Field

from arbiter.graders.types import Sample

__all__ = [
    "AppliedGate",
    "AppliedPenalty",
    "ArbiterClient",
    "ArbiterError",
    "AsyncArbiterClient",
    "ComponentOutcome",
    "Failure",
    "LoggedReward",
    "LoggedRewards",
    "RetryPolicy",
    "Reward",
    "RewardBatch",
    "RubricIdentity",
    "Violation",
]

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


class _Answer(BaseModel):
    """A part of the service's answer: read-only, and keeping the fields a newer service adds."""

    model_config = ConfigDict(frozen=True, extra="allow")


class RubricIdentity(_Answer):
    """Which rubric made a reward: its name, version and the sha256 of its text."""

    name: str
    version: int
    sha256: str


class Failure(_Answer):
    """Why a component has no score.

    ``kind`` is the service's failure kind (``timeout``, ``missing_input``,
    ``invalid_task``, ``sandbox_error``, ...), a string so that kinds added later read too.
    """

    kind: str
    message: str = ""
    retryable: bool = False


class Violation(_Answer):
    """One violation a grader saw (``early_exit``, ``test_tampering``, ...), with its evidence."""

    type: str
    detail: str = ""
    line: int | None = None
    snippet: str | None = None
    source: str = "static"


class ComponentOutcome(_Answer):
    """One component's grade as it entered the reward.

    ``score`` is in [0, 1], or ``None`` when the grader could not score (``failure``
    says why); ``weight`` and ``required`` are the rubric's.
    """

    grader: str
    grader_version: str = ""
    score: float | None
    failure: Failure | None = None
    violations: tuple[Violation, ...] = ()
    details: dict[str, Any] = Field(default_factory=dict)
    latency_s: float = 0.0
    weight: float
    required: bool


class AppliedPenalty(_Answer):
    """A penalty subtracted from the reward, and how many violations caused it."""

    violation: str
    count: int
    penalty: float


class AppliedGate(_Answer):
    """A gate that bounded the reward (``cap`` or ``floor``), and why it applied."""

    when: str
    cap: float | None
    floor: float | None
    reason: str


class Reward(_Answer):
    """One sample's reward, as the service answered it.

    ``reward`` is ``None`` when the rubric abstained: ``abstain_reason`` says why
    and ``abstained_by`` whose doing it is (``ours``, ``task``, ``candidate``,
    ``request`` or ``rubric``). Drop such a sample rather than reading it as 0,
    unless ``abstained_by`` is ``candidate`` (the candidate's own failure, left
    unscored by the rubric). ``reward`` is the value to train on, ``raw_reward``
    the rubric's value before group normalization. ``components`` maps
    each component's name to its outcome; under a rubric with routes a sample has
    its route's components only, and ``route`` names that route (``rubric`` is then
    the route's own, ``<name>.<route>``). ``graders`` maps each grader that ran to
    its version; ``flags`` note what the rubric did (``renormalized``, ``capped``, ...).
    """

    id: str
    group_id: str | None = None
    reward: float | None
    raw_reward: float | None
    abstain_reason: str | None = None
    abstained_by: str | None = None
    components: dict[str, ComponentOutcome]
    penalties: tuple[AppliedPenalty, ...] = ()
    gates: tuple[AppliedGate, ...] = ()
    rubric: RubricIdentity
    graders: dict[str, str]
    flags: tuple[str, ...] = ()
    route: str | None = None


def _values(rewards: Iterable[Reward]) -> list[float | None]:
    return [r.reward for r in rewards]


def _component(rewards: Iterable[Reward], name: str) -> list[float | None]:
    scores: list[float | None] = []
    for r in rewards:
        outcome = r.components.get(name)
        scores.append(None if outcome is None else outcome.score)
    return scores


@dataclass(frozen=True)
class RewardBatch:
    """A response of ``POST /v1/rewards``: typed rewards, in input order.

    Attributes:
        request_id: the service's id of the request (read it back with ``rewards_for``).
        rubric: the rubric that graded the batch.
        rewards: one :class:`Reward` per sample, in the order the samples were sent.
        replayed: the answer is the stored one of an earlier call with the same
            idempotency key, not a new grading.
        latency_s: how long the service took to grade the batch.
    """

    request_id: str
    rubric: RubricIdentity
    rewards: list[Reward]
    replayed: bool
    latency_s: float = 0.0

    def values(self) -> list[float | None]:
        """Return each reward's value (``None`` where the rubric abstained)."""
        return _values(self.rewards)

    def component(self, name: str) -> list[float | None]:
        """Return one component's scores (``None`` where it could not score, or is absent).

        Under a rubric with routes a sample has its route's components only: the
        others are ``None`` for it.
        """
        return _component(self.rewards, name)


class _RewardAnswer(_Answer):
    """The body of ``POST /v1/rewards``."""

    request_id: str
    rubric: RubricIdentity
    latency_s: float = 0.0
    rewards: list[Reward]


class LoggedReward(_Answer):
    """One reward read back from the service's log, and where it sits there.

    Attributes:
        log_id: its place in the log (the paging cursor, ``after_id``).
        request_id: the request that graded it.
        position: its index in that request's batch.
        sample_id: the sample's id.
        rubric: the rubric of the request.
        logged_at: when it was logged (UTC).
        reward: the reward exactly as it was answered.
    """

    log_id: int
    request_id: str
    position: int
    sample_id: str
    rubric: RubricIdentity
    logged_at: datetime
    reward: Reward


class LoggedRewards(_Answer):
    """Rewards read back from the log, and the cursor of the next page.

    ``next_after_id`` is ``None`` when there is no more; otherwise pass it as
    ``after_id`` to read the next page with the same filters.
    """

    rewards: list[LoggedReward]
    next_after_id: int | None = None

    def values(self) -> list[float | None]:
        """Return each reward's value (``None`` where the rubric abstained)."""
        return _values(e.reward for e in self.rewards)

    def component(self, name: str) -> list[float | None]:
        """Return one component's scores (``None`` where it could not score, or is absent)."""
        return _component((e.reward for e in self.rewards), name)


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
    answer = _RewardAnswer.model_validate_json(response.content)
    return RewardBatch(
        request_id=answer.request_id,
        rubric=answer.rubric,
        rewards=answer.rewards,
        replayed=response.headers.get("idempotent-replayed") == "true",
        latency_s=answer.latency_s,
    )


def _request_path(request_id: str) -> str:
    """Return the path that reads one request's rewards back."""
    if not request_id:
        raise ValueError("request_id is empty")
    return f"/v1/rewards/{quote(request_id, safe='')}"


def _log_query(
    sample_id: str | None,
    rubric: str | None,
    since: datetime | None,
    until: datetime | None,
    after_id: int,
    limit: int,
) -> dict[str, str | int]:
    """Return the query of ``GET /v1/rewards``; a time without a zone is read as UTC there."""
    query: dict[str, str | int] = {"after_id": after_id, "limit": limit}
    if sample_id is not None:
        query["sample_id"] = sample_id
    if rubric is not None:
        query["rubric"] = rubric
    if since is not None:
        query["since"] = since.isoformat()
    if until is not None:
        query["until"] = until.isoformat()
    return query


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
    """Synchronous client: grade batches, and read their rewards back from the log.

    Example (a service at ``localhost:8000``, a trainer key)::

        from arbiter.client import ArbiterClient

        samples = [
            {"id": "quick", "response": "done", "metrics": {"turns": 3}},
            {"id": "slow", "response": "done", "metrics": {"turns": 11}},
        ]
        with ArbiterClient("http://localhost:8000", api_key="ak_...") as client:
            batch = client.rewards(samples, "efficiency-only")
            for r in batch.rewards:
                print(r.id, r.reward, r.components["efficiency"].score)
            logged = client.rewards_for(batch.request_id)
            print(logged.rewards[0].logged_at, logged.values() == batch.values())

    A call raises :class:`ArbiterError` when the service refuses it (after
    retries, for the retryable answers; see :class:`RetryPolicy`).
    """

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
        """Grade a batch under rubric ``rubric``; rewards come back in input order.

        Args:
            samples: :class:`~arbiter.graders.types.Sample` objects or their JSON
                (``id``, ``response``, and ``prompt``, ``task``, ``metrics``, ... as
                the rubric's graders need).
            rubric: the rubric's name.
            version: a version of it (default: its latest).
            sha256: its exact text's sha256 (refused unless the rubric has it).
            deadline_s: how long the service may grade before answering.
            idempotency_key: the call's key (default: a new one); a repeat with
                the same key is answered from the log, ``replayed``.

        Raises:
            ArbiterError: the service refused the batch (an unknown rubric is 404).
        """
        key = idempotency_key or uuid.uuid4().hex
        response = self.request(
            "POST",
            "/v1/rewards",
            json=_payload(samples, rubric, version, sha256, deadline_s),
            headers={"Idempotency-Key": key},
        )
        return _batch(response)

    def rewards_for(self, request_id: str) -> LoggedRewards:
        """Read one request's rewards back from the log, in input order.

        Raises:
            ArbiterError: 404 ``request_not_found`` when this key sent no such
                request (another key's request reads the same).
        """
        response = self.request("GET", _request_path(request_id))
        return LoggedRewards.model_validate_json(response.content)

    def logged_rewards(
        self,
        *,
        sample_id: str | None = None,
        rubric: str | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        after_id: int = 0,
        limit: int = 100,
    ) -> LoggedRewards:
        """Read this key's logged rewards back, oldest first, a page at a time.

        Args:
            sample_id: only this sample's.
            rubric: only this rubric's (by name).
            since: only those logged at or after this time.
            until: only those logged before this time. A time without a zone is
                read as UTC, as the service reads it.
            after_id: the page after this log id: the previous page's
                ``next_after_id`` (``None`` there: no more).
            limit: at most this many (up to the service's 1000).

        Raises:
            ArbiterError: the service refused the query (422 for a limit out of range).
        """
        query = _log_query(sample_id, rubric, since, until, after_id, limit)
        response = self.request("GET", "/v1/rewards", params=query)
        return LoggedRewards.model_validate_json(response.content)

    def register_rubric(self, text: str, *, force: bool = False) -> dict[str, Any]:
        """Register a rubric version (an admin key): ``{"rubric": identity, "created": bool}``.

        A new version is graded on the rubric's open regression cases first
        (``regressions`` in the answer); ``force`` publishes one that lets cases
        through, and the service records it.

        Raises:
            ArbiterError: the service refused it (``invalid_rubric`` lists each error
                with its line and column; ``version_conflict`` when the version exists
                with other text; ``regression_failed`` lists each case it lets through).
        """
        body: dict[str, Any] = {"yaml": text, **({"force": True} if force else {})}
        answer: dict[str, Any] = self.request("POST", "/v1/rubrics", json=body).json()
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
    """Asynchronous client, with the behaviour and answers of :class:`ArbiterClient`.

    Example (a service at ``localhost:8000``, a trainer key)::

        import asyncio

        from arbiter.client import AsyncArbiterClient

        async def main() -> None:
            samples = [{"id": "quick", "response": "done", "metrics": {"turns": 3}}]
            async with AsyncArbiterClient("http://localhost:8000", api_key="ak_...") as client:
                batch = await client.rewards(samples, "efficiency-only")
                print(batch.rewards[0].reward, batch.rewards[0].components["efficiency"].score)
                logged = await client.rewards_for(batch.request_id)
                print(logged.values() == batch.values())

        asyncio.run(main())
    """

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
        """Grade a batch (the arguments of :meth:`ArbiterClient.rewards`), in input order.

        Raises:
            ArbiterError: the service refused the batch (an unknown rubric is 404).
        """
        key = idempotency_key or uuid.uuid4().hex
        response = await self.request(
            "POST",
            "/v1/rewards",
            json=_payload(samples, rubric, version, sha256, deadline_s),
            headers={"Idempotency-Key": key},
        )
        return _batch(response)

    async def rewards_for(self, request_id: str) -> LoggedRewards:
        """Read one request's rewards back from the log, in input order.

        Raises:
            ArbiterError: 404 ``request_not_found`` when this key sent no such
                request (another key's request reads the same).
        """
        response = await self.request("GET", _request_path(request_id))
        return LoggedRewards.model_validate_json(response.content)

    async def logged_rewards(
        self,
        *,
        sample_id: str | None = None,
        rubric: str | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        after_id: int = 0,
        limit: int = 100,
    ) -> LoggedRewards:
        """Read this key's logged rewards back, oldest first, a page at a time.

        The arguments are those of :meth:`ArbiterClient.logged_rewards`.

        Raises:
            ArbiterError: the service refused the query (422 for a limit out of range).
        """
        query = _log_query(sample_id, rubric, since, until, after_id, limit)
        response = await self.request("GET", "/v1/rewards", params=query)
        return LoggedRewards.model_validate_json(response.content)
