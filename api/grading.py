"""The grading pipeline: a batch of samples in, a graded and logged batch out.

One batch goes through admission, the rubric's graders, the drift watch, the
trajectory log and the review sampler, in that order. The result is a
:class:`GradedBatch`; each route renders it in its own protocol's shape.

One concept: the order of those steps, and what a failure at each one means
for the batch (what was logged, what the client is told), is the pipeline.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import time
import uuid
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import orjson

from arbiter.api.admission import Admission
from arbiter.api.auth import Principal
from arbiter.api.drift_watch import DriftWatch
from arbiter.api.errors import Busy, Conflict, Invalid, NotFound, TooLarge, Unavailable
from arbiter.api.idempotency import IdempotencyGate
from arbiter.api.metrics import Metrics
from arbiter.api.review_sampler import ReviewSampler
from arbiter.api.schemas import RewardRequest
from arbiter.api.settings import Settings
from arbiter.graders.executor import GradingExecutor, tenant
from arbiter.graders.registry import GraderRegistry
from arbiter.graders.types import Sample
from arbiter.rubrics.catalog import RubricCatalog
from arbiter.rubrics.errors import RubricNotFoundError
from arbiter.rubrics.reward import Reward
from arbiter.rubrics.rubric import Rubric
from arbiter.rubrics.score import score_samples
from arbiter.store.db import DuplicateRequestError, RewardRow, Store, StoredRequest

__all__ = ["GradedBatch", "GradingPipeline", "render"]

logger = logging.getLogger("arbiter.service")

#: A write still queued behind others after this long fails instead of running:
#: with the store stuck, each request answers 503 within about this plus the
#: store's own lock timeout, rather than after every write queued before it.
WRITE_QUEUE_S = 2.0


class WriteQueueTimeout(TimeoutError):
    """A store write waited too long for its turn and was not attempted."""


@dataclass(frozen=True, slots=True)
class _Batch:
    """One request's batch as the pipeline's steps see it."""

    endpoint: str
    principal: Principal
    idempotency_key: str | None
    rubric: Rubric
    samples: list[Sample]
    sent: Sequence[Any] | None
    deadline_s: float | None
    envelope_fields: Mapping[str, Any]
    body_sha256: str | None


@dataclass(frozen=True, slots=True)
class GradedBatch:
    """A graded batch as logged: the envelope and one reward record per sample.

    Attributes:
        envelope: the JSON object around the rewards (request id, rubric, latency).
        records: each sample's reward as JSON, in input order.
        rewards: the rewards themselves when graded now; ``None`` when replayed
            from the log (the records are then all there is).
        replayed: whether the batch was answered from the log.
    """

    envelope: bytes
    records: list[bytes]
    rewards: list[Reward] | None
    replayed: bool

    @classmethod
    def from_stored(
        cls, stored: StoredRequest, body_sha256: str | None = None, samples: int | None = None
    ) -> GradedBatch:
        """Rebuild a logged batch, for a replay of a request whose body hashes to ``body_sha256``.

        ``samples`` is how many rewards the replayed request needs (when known).

        Raises:
            Invalid: the batch was logged for another body under the same key.
            Unavailable: the logged batch cannot be read back (code
                ``stored_batch_unreadable``): ours, never graded again under the key.
        """
        envelope = _read_logged(stored, samples)
        if body_sha256 is not None:
            logged = envelope.get("request_sha256")
            if logged is not None and logged != body_sha256:
                raise Invalid(
                    "this Idempotency-Key was used for a request with another body; "
                    "use a new key for a new request",
                    code="idempotency_key_reused",
                    errors=[{"in": "header", "path": "Idempotency-Key", "message": "reused"}],
                )
        return cls(
            envelope=stored.envelope.encode(),
            records=[r.encode() for r in stored.records],
            rewards=None,
            replayed=True,
        )


def _read_logged(stored: StoredRequest, samples: int | None) -> dict[str, Any]:
    """Check that a logged batch reads back whole; return its envelope.

    A replay answers with the logged bytes as they are, so each is checked
    first: a batch that no longer parses (or lost rows) is answered as our
    failure, never as a malformed body or a different batch.
    """
    problem = None
    try:
        envelope = orjson.loads(stored.envelope)
        if not isinstance(envelope, dict):
            problem = "its envelope is not a JSON object"
        elif samples is not None and len(stored.records) != samples:
            problem = f"it holds {len(stored.records)} rewards for {samples} samples"
        else:
            for i, raw in enumerate(stored.records):
                record = orjson.loads(raw)
                if not (isinstance(record, dict) and "reward" in record):
                    problem = f"reward {i} is not a reward record"
                    break
    except orjson.JSONDecodeError as e:
        problem = f"it does not parse ({e})"
    if problem is not None:
        logger.error("the logged batch %s cannot be replayed: %s", stored.id, problem)
        raise Unavailable(
            f"the response logged for this Idempotency-Key cannot be read back ({problem}); "
            "it is not graded again under the same key: report request "
            f"{stored.id} to the operator",
            code="stored_batch_unreadable",
        )
    return envelope  # type: ignore[no-any-return]


#: A claimed Idempotency-Key's lease is renewed until the request's deadline plus
#: this much (room to log the batch after its graders' deadline); a request
#: without a deadline keeps its claim for as long as it is graded.
CLAIM_MARGIN_S = 30.0


def render(batch: GradedBatch) -> bytes:
    """Render a batch as ``/v1/rewards`` answers it; stored and fresh responses match."""
    return batch.envelope[:-1] + b',"rewards":[' + b",".join(batch.records) + b"]}"


def too_large(n: int, limit: int) -> TooLarge:
    """Build the 413 for a batch over the limit."""
    return TooLarge(
        f"the batch has {n} samples; the limit is {limit} (ARBITER_MAX_BATCH_SAMPLES)",
        code="batch_too_large",
    )


@dataclass(frozen=True, slots=True)
class _Logged:
    """What :meth:`GradingPipeline._log` did: logged this batch, or replayed another replica's."""

    request_id: str
    batch: GradedBatch

    @property
    def replayed(self) -> bool:
        return self.batch.replayed


class GradingPipeline:
    """Admit, grade, watch, log and offer for review one batch at a time."""

    def __init__(
        self,
        settings: Settings,
        *,
        registry: GraderRegistry,
        store: Store,
        catalog: RubricCatalog,
        metrics: Metrics,
        drift: DriftWatch,
        review_sampler: ReviewSampler,
        executor: GradingExecutor | None = None,
    ) -> None:
        self.settings = settings
        self.executor = executor
        self.registry = registry
        self.store = store
        self.catalog = catalog
        self.metrics = metrics
        self.drift = drift
        self.review_sampler = review_sampler
        self.admission = Admission(
            settings.max_inflight_samples, settings.per_key_max_inflight_requests
        )
        self._in_flight_keys: set[tuple[str, str]] = set()
        # Replicas on one store also claim each key there (the embedded file has one process).
        self.claims = (
            None
            if store.is_sqlite
            else IdempotencyGate(store, settings.idempotency_wait_s, settings.retry_after_s)
        )
        # SQLite takes one writer at a time: one thread runs them in turn, off
        # the event loop, instead of several threads contending for the lock.
        self._writer = (
            ThreadPoolExecutor(max_workers=1, thread_name_prefix="arbiter-store-writer")
            if store.is_sqlite
            else None
        )
        #: Why the last store write failed; ``None`` once one succeeds.
        self.write_failure: str | None = None

    def close(self) -> None:
        """Finish queued writes, stop the writer thread, and give up this process's claims."""
        if self._writer is not None:
            self._writer.shutdown(wait=True)
        if self.claims is not None:
            self.claims.close()

    def retry_after(self) -> dict[str, str]:
        """Return the Retry-After header of a refusal worth retrying."""
        return {"Retry-After": str(self.settings.retry_after_s)}

    def resolve(self, name: str, version: int | None, sha256: str | None) -> Rubric:
        """Find a rubric or raise 404 with what exists."""
        try:
            return self.catalog.resolve(name, version=version, sha256=sha256)
        except RubricNotFoundError as e:
            raise NotFound(str(e), code="rubric_not_found") from e

    def check_size(self, n: int) -> None:
        """Raise 413 for a batch of ``n`` samples over the limit."""
        if n > self.settings.max_batch_samples:
            raise too_large(n, self.settings.max_batch_samples)

    async def replay(self, client: str, idempotency_key: str) -> StoredRequest | None:
        """Return the stored request for this key, if there is one."""
        try:
            return await asyncio.to_thread(self.store.find_request, client, idempotency_key)
        except Exception as e:
            raise Unavailable(
                "the store is unreachable; retry",
                code="store_unavailable",
                headers=self.retry_after(),
            ) from e

    async def grade_request(
        self,
        request: RewardRequest,
        principal: Principal,
        idempotency_key: str | None,
        *,
        sent: Sequence[Any] | None = None,
        body: Any = None,
    ) -> GradedBatch:
        """Grade a ``/v1/rewards`` batch under its rubric.

        ``sent`` is each sample as decoded from the request body, if the caller
        kept it: the log stores that instead of serializing the sample again.
        ``body`` is the whole decoded body: with an Idempotency-Key, the key is
        bound to its hash, so a reuse of the key for another body is refused.
        """
        principal.require("trainer")
        self.check_size(len(request.samples))
        rubric = self.resolve(request.rubric, request.rubric_version, request.rubric_sha256)
        deadline_s = request.deadline_s
        if deadline_s is not None:
            deadline_s = min(deadline_s, self.settings.max_deadline_s)
        body_sha256 = None
        if idempotency_key is not None:
            decoded = body if body is not None else request.model_dump(mode="json")
            canonical = orjson.dumps(decoded, option=orjson.OPT_SORT_KEYS)
            body_sha256 = hashlib.sha256(canonical).hexdigest()
        return await self.grade(
            body_sha256=body_sha256,
            endpoint="rewards",
            principal=principal,
            idempotency_key=idempotency_key,
            rubric=rubric,
            samples=request.samples,
            sent=sent,
            deadline_s=deadline_s,
        )

    async def grade(
        self,
        *,
        endpoint: str,
        principal: Principal,
        idempotency_key: str | None,
        rubric: Rubric,
        samples: list[Sample],
        sent: Sequence[Any] | None,
        deadline_s: float | None,
        envelope_fields: Mapping[str, Any] | None = None,
        body_sha256: str | None = None,
    ) -> GradedBatch:
        """Grade ``samples`` under ``rubric`` and log them, or replay the key's batch.

        The steps, each a method: replay the key's logged batch or claim the key
        (here), then :meth:`_admit`, :meth:`_score`, :meth:`_log` and :meth:`_offer`.
        ``envelope_fields`` are added to the logged envelope (a protocol's marker).
        ``body_sha256`` binds the idempotency key to the request's body: it is
        logged in the envelope, and a replay for another body is refused.
        """
        batch = _Batch(
            endpoint=endpoint,
            principal=principal,
            idempotency_key=idempotency_key,
            rubric=rubric,
            samples=samples,
            sent=sent,
            deadline_s=deadline_s,
            envelope_fields=envelope_fields or {},
            body_sha256=body_sha256,
        )
        if idempotency_key is None:
            return await self._grade_new(batch)
        slot = (principal.client, idempotency_key)
        if slot in self._in_flight_keys:
            raise Conflict(
                "a request with this Idempotency-Key is still being graded; retry shortly",
                code="idempotency_key_in_flight",
                headers=self.retry_after(),
            )
        # Marked at once, before any await: a duplicate arriving while this one
        # looks the key up is refused here rather than graded a second time.
        self._in_flight_keys.add(slot)
        claimed = logged = False
        try:
            stored = await self.replay(*slot)
            if stored is None and self.claims is not None:
                hold_s = None if deadline_s is None else deadline_s + CLAIM_MARGIN_S
                stored = await self.claims.acquire(*slot, deadline_s=hold_s)
                claimed = stored is None
            if stored is not None:
                return GradedBatch.from_stored(stored, body_sha256, len(samples))
            graded = await self._grade_new(batch)
            # Logged, or another replica's log of the key replayed: either way
            # the claim went with that commit.
            logged = True
            return graded
        finally:
            self._in_flight_keys.discard(slot)
            if claimed and self.claims is not None:
                if logged:
                    self.claims.forget(*slot)
                else:
                    # Never raises: a claim the store cannot drop lapses on its own.
                    await self.claims.release(*slot)

    async def _grade_new(self, batch: _Batch) -> GradedBatch:
        """Admit, score, log and offer a batch whose key (if any) is this process's to grade.

        Raises:
            Busy: over the cluster's queue, the in-flight bound or the key's quota.
            Unavailable: the batch could not be logged (nothing is acknowledged).
        """
        async with self._admit(batch):
            started = time.perf_counter()
            rewards = await self._score(batch)
            logged = await self._log(batch, rewards, time.perf_counter() - started)
            if logged.replayed:  # another replica logged the same key first
                return logged.batch
            await self._offer(batch, logged.request_id, rewards)
            return logged.batch

    @contextlib.asynccontextmanager
    async def _admit(self, batch: _Batch) -> AsyncIterator[None]:
        """Hold an admission ticket for the batch, or refuse it now with 429.

        The cluster's queue is bounded: a full one refuses the batch at once
        (``cluster_busy``), not after a long wait. Then the admission's bounds:
        the key's quota (``key_quota``) and the service's in-flight bound.
        """
        # One job per (sample x component of the rubric, or of the sample's route).
        needed = sum(len(batch.rubric.route_for(s)[1].components) for s in batch.samples)
        room = self.executor.room() if self.executor is not None else None
        if room is not None and room < needed:
            self.metrics.rejections.labels(reason="cluster_busy").inc()
            raise Busy(
                f"the grading cluster's queue is full; retry after {self.settings.retry_after_s} s",
                code="cluster_busy",
                headers=self.retry_after(),
            )
        ticket = self.admission.admit(batch.principal.client, len(batch.samples))
        if isinstance(ticket, str):
            self.metrics.rejections.labels(reason=ticket).inc()
            message = (
                "this key has too many requests in flight"
                if ticket == "key_quota"
                else "the service is at its in-flight bound"
            )
            raise Busy(
                f"{message}; retry after {self.settings.retry_after_s} s",
                code=ticket,
                headers=self.retry_after(),
            )
        self.metrics.gauge_admission(self.admission)
        try:
            yield
        finally:
            self.admission.release(ticket)
            self.metrics.gauge_admission(self.admission)

    async def _score(self, batch: _Batch) -> list[Reward]:
        """Run the rubric over the samples under the batch's deadline, then the drift watch."""
        deadline_s = batch.deadline_s
        deadline = time.monotonic() + deadline_s if deadline_s is not None else None
        # Jobs carry their key and rubric: a cluster shares its workers between them.
        with tenant(f"{batch.principal.client}/{batch.rubric.name}"):
            rewards = await score_samples(
                batch.rubric,
                batch.samples,
                registry=self.registry,
                deadline=deadline,
                max_concurrency=self.settings.grader_concurrency,
            )
        if self.settings.drift_enabled:
            rewards = await self.drift.observe(batch.rubric, rewards, batch.samples)
        return list(rewards)

    async def _log(self, batch: _Batch, rewards: list[Reward], latency_s: float) -> _Logged:
        """Write the envelope and one row per sample in one transaction.

        Raises:
            Unavailable: the store could not log the batch; nothing is acknowledged.
        """
        request_id = uuid.uuid4().hex
        texts = [r.model_dump_json() for r in rewards]  # logged as text, sent as bytes
        envelope = orjson.dumps(
            {
                "request_id": request_id,
                "rubric": batch.rubric.identity.model_dump(),
                "latency_s": round(latency_s, 6),
                **batch.envelope_fields,
                **({"request_sha256": batch.body_sha256} if batch.body_sha256 is not None else {}),
            }
        )
        rows = self._rows(batch.samples, batch.sent, rewards, texts)
        try:
            await self._write(
                self.store.record_request,
                request_id=request_id,
                client=batch.principal.client,
                idempotency_key=batch.idempotency_key,
                endpoint=batch.endpoint,
                rubric_name=batch.rubric.name,
                rubric_version=batch.rubric.version,
                rubric_sha256=batch.rubric.sha256,
                envelope=envelope.decode(),
                rows=rows,
            )
        except DuplicateRequestError:
            # Another replica finished the same key first: answer with its result.
            assert batch.idempotency_key is not None
            stored = await self.replay(batch.principal.client, batch.idempotency_key)
            if stored is None:
                raise
            replayed = GradedBatch.from_stored(stored, batch.body_sha256, len(batch.samples))
            return _Logged(request_id, replayed)
        except Exception as e:
            # Not acknowledged. The commit may still have gone through (the
            # connection dropped while committing): the client's retry under the
            # same key settles it, replaying the logged batch or grading it once.
            logger.exception("could not log %d rewards", len(rows))
            raise Unavailable(
                "the store could not log the rewards; nothing was acknowledged, "
                "retry with the same Idempotency-Key",
                code="store_unavailable",
                headers=self.retry_after(),
            ) from e
        graded = GradedBatch(
            envelope=envelope,
            records=[t.encode() for t in texts],
            rewards=rewards,
            replayed=False,
        )
        return _Logged(request_id, graded)

    async def _offer(self, batch: _Batch, request_id: str, rewards: list[Reward]) -> None:
        """Count the logged batch, then offer it to the review sampler.

        After the commit, so only acknowledged rewards are queued; a no-op for
        rubrics that sample nothing, and it never fails the batch.
        """
        self.metrics.observe_batch(batch.rubric, rewards, batch.samples)
        await self.review_sampler.offer(batch.rubric, request_id, rewards)

    async def _write(self, write: Callable[..., None], **kwargs: Any) -> None:
        """Run a store write off the event loop and remember how it went.

        A stuck store (a lock held by another process, a full disk) must not
        freeze the loop, and ``/readyz`` reports the failure until a write
        succeeds again.
        """
        queued = time.monotonic()

        def run() -> None:
            waited = time.monotonic() - queued
            if waited > WRITE_QUEUE_S:
                raise WriteQueueTimeout(f"the write waited {waited:.1f} s behind others")
            write(**kwargs)

        try:
            if self._writer is not None:
                await asyncio.get_running_loop().run_in_executor(self._writer, run)
            else:
                await asyncio.to_thread(run)
        except DuplicateRequestError:
            self.write_failure = None  # the store answered; the write was refused, not lost
            raise
        except Exception as e:
            self.write_failure = f"{type(e).__name__}: {str(e).splitlines()[0][:200]}"
            raise
        self.write_failure = None

    async def probe_write(self, timeout_s: float) -> str | None:
        """Try a write if the last one failed; return why writes fail, or ``None``."""
        if self.write_failure is None:
            return None
        try:
            await asyncio.wait_for(self._write(self.store.probe_write), timeout=timeout_s)
        except Exception:  # recorded by _write (or the probe is still stuck: same answer)
            return self.write_failure or "the write probe timed out"
        return None

    def _rows(
        self,
        samples: Sequence[Sample],
        sent: Sequence[Any] | None,
        rewards: Sequence[Reward],
        records: Sequence[str],
    ) -> list[RewardRow]:
        keep = self.settings.store_samples == "full"
        if sent is not None and len(sent) == len(samples):
            # As sent (re-encoded compactly), which also validates back into the sample.
            texts = [orjson.dumps(s) for s in sent]
        else:
            texts = [s.model_dump_json(exclude_none=True).encode() for s in samples]
        rows = []
        for position, (sample, text, reward, record) in enumerate(
            zip(samples, texts, rewards, records, strict=True)
        ):
            latency = 0.0
            for component in reward.components.values():
                latency = max(latency, component.latency_s)
            rows.append(
                RewardRow(
                    position,
                    sample.id,
                    sample.group_id,
                    reward.reward,
                    reward.raw_reward,
                    record,
                    text.decode() if keep else None,
                    hashlib.sha256(text).hexdigest(),
                    latency,
                )
            )
        return rows
