"""The service behind the routes: rubrics, keys, admission, grading and logging.

Routes stay thin; everything that is not HTTP lives here, so the flow of one
batch reads top to bottom in :meth:`Service.grade`.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import importlib
import logging
import time
import uuid
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from api.admission import Admission
from api.drift_watch import DriftWatch
from api.errors import (
    Busy,
    Conflict,
    Forbidden,
    Invalid,
    NotFound,
    TooLarge,
    Unauthorized,
    Unavailable,
)
from api.metrics import Metrics
from api.review_sampler import ReviewSampler  # human review (issue 7)
from api.schemas import OpenRLHFRequest, RewardRequest
from api.settings import Settings
from arbiter.adapters.rows import (
    AbstainedError,
    AbstainPolicy,
    UnsplittableQuery,
    fill_abstained,
    parse_label,
    split_query,
)
from graders.registry import GraderRegistry, default_registry
from graders.types import Sample, TaskSpec
from rubrics.catalog import CatalogEntry, RubricCatalog
from rubrics.errors import RubricError, RubricNotFoundError
from rubrics.loader import parse_rubric
from rubrics.reward import Reward
from rubrics.rubric import Rubric
from rubrics.score import score_samples
from store.db import ApiKey, DuplicateRequestError, RewardRow, Store, StoredRequest, hash_key

__all__ = ["Principal", "Service"]

logger = logging.getLogger("arbiter.service")

KEY_CACHE_S = 30.0
#: How often the watcher saves the drift monitor's state (and always at shutdown).
DRIFT_SAVE_INTERVAL_S = 60.0


@dataclass(frozen=True, slots=True)
class Principal:
    """Who is calling: the key's id (the log's client identity), name and role."""

    client: str
    name: str
    role: str

    def require(self, *roles: str) -> None:
        """Raise 403 unless this principal has one of ``roles`` (admin has all)."""
        if self.role != "admin" and self.role not in roles:
            raise Forbidden(f"a {self.role!r} key may not do this; needs {' or '.join(roles)}")


ANONYMOUS = Principal(client="anonymous", name="anonymous (auth disabled)", role="admin")


def render(envelope: bytes, records: Sequence[bytes]) -> bytes:
    """Join a response envelope and its reward records; stored and fresh responses match."""
    return envelope[:-1] + b',"rewards":[' + b",".join(records) + b"]}"


class Service:
    """One process's view of the service."""

    def __init__(
        self,
        settings: Settings,
        *,
        registry: GraderRegistry | None = None,
        store: Store | None = None,
    ) -> None:
        self.settings = settings
        self.registry = registry or default_registry()
        for module in settings.grader_plugins:
            # A plugin is trusted code chosen by the operator, like a rubric folder.
            importlib.import_module(module).register(self.registry)
        self.store = store or Store(settings.database_url)
        self.catalog = RubricCatalog(self.registry)
        self.admission = Admission(
            settings.max_inflight_samples, settings.per_key_max_inflight_requests
        )
        self.metrics = Metrics()
        self.review_sampler = ReviewSampler(self.store, settings)  # human review (issue 7)
        self.drift = DriftWatch(self.store, self.metrics)
        self._keys: dict[str, tuple[ApiKey | None, float]] = {}
        self._in_flight_keys: set[tuple[str, str]] = set()
        self._reload_task: asyncio.Task[None] | None = None
        self.started = False

    # -- lifecycle ----------------------------------------------------------------

    async def start(self) -> None:
        """Migrate the store, load rubrics, and start watching the rubric folders."""
        await asyncio.to_thread(self.store.migrate)
        await asyncio.to_thread(self.drift.load)
        await asyncio.to_thread(self.sync_rubrics)
        await asyncio.to_thread(self.check_sandbox_layers)
        if self.settings.auth == "disabled":
            logger.warning(
                "AUTH IS DISABLED (ARBITER_AUTH=disabled): every caller is admin. "
                "Use this for local development only."
            )
        if self.settings.rubric_reload_interval_s > 0:
            self._reload_task = asyncio.create_task(self._watch_rubrics())
        self.started = True

    async def stop(self) -> None:
        """Stop watching and release the store."""
        if self._reload_task is not None:
            self._reload_task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._reload_task
        await asyncio.to_thread(self.registry.close)
        try:
            await asyncio.to_thread(self.drift.save)
        except Exception:  # shutting down: the state is a convenience, the log is what matters
            logger.exception("could not save the drift monitor's state")
        await asyncio.to_thread(self.store.close)

    def required_sandbox_layers(self) -> set[str]:
        """Layers the settings and the loaded rubrics' unit_tests components require."""
        from graders.sandbox.layers import LAYERS

        wanted = set(self.settings.require_sandbox_layers)
        if "all" in wanted:
            wanted = (wanted - {"all"}) | set(LAYERS)
        for entry in self.catalog.entries():
            for component in entry.rubric.components.values():
                wanted.update(getattr(component.config, "require_layers", ()))
        return wanted

    def check_sandbox_layers(self) -> None:
        """Refuse to start when a required sandbox layer is not active on this host.

        Raises:
            MissingLayersError: naming each missing layer and why it is unavailable.
        """
        required = self.required_sandbox_layers()
        if not required:
            return
        from graders.sandbox.layers import check_layers, require_layers

        layers = check_layers()
        require_layers(layers, required)
        logger.info("sandbox layers required and active: %s", ", ".join(sorted(required)))

    def sync_rubrics(self) -> None:
        """Load versions other replicas stored, then new or changed files (stored too)."""
        for text, origin in self.store.rubric_texts():
            try:
                self.catalog.add_text(text, origin)
            except RubricError as e:
                logger.error("stored rubric from %s no longer validates:\n%s", origin, e)
        for entry in self.catalog.scan(self.settings.watched_dirs()):
            self._persist(entry)
            logger.info(
                "loaded rubric %s v%d (%s) from %s",
                entry.rubric.name,
                entry.rubric.version,
                entry.rubric.sha256[:12],
                entry.origin,
            )

    def _persist(self, entry: CatalogEntry) -> None:
        self.store.save_rubric(
            sha256=entry.rubric.sha256,
            name=entry.rubric.name,
            version=entry.rubric.version,
            text_=entry.text,
            origin=entry.origin,
        )

    async def _watch_rubrics(self) -> None:
        saved = time.monotonic()
        while True:
            await asyncio.sleep(self.settings.rubric_reload_interval_s)
            try:
                await asyncio.to_thread(self.sync_rubrics)
                if time.monotonic() - saved >= DRIFT_SAVE_INTERVAL_S:
                    await asyncio.to_thread(self.drift.save)
                    saved = time.monotonic()
            except Exception:  # the watcher must outlive a transient store error
                logger.exception("rubric reload or drift-state save failed; will retry")

    # -- auth ---------------------------------------------------------------------

    async def authenticate(self, key: str | None) -> Principal:
        """Return the caller for an API key (or everyone, when auth is disabled)."""
        if self.settings.auth == "disabled":
            return ANONYMOUS
        if not key:
            raise Unauthorized(
                "no API key: send 'Authorization: Bearer <key>', 'X-API-Key: <key>', or the "
                "key as the password of HTTP Basic (http://user:<key>@host/...)",
                headers={"WWW-Authenticate": "Bearer"},
            )
        digest = hash_key(key)
        cached = self._keys.get(digest)
        now = time.monotonic()
        if cached is not None and cached[1] > now:
            record = cached[0]
        else:
            try:
                record = await asyncio.to_thread(self.store.key_for, key)
            except Exception as e:
                raise Unavailable(
                    "the key store is unreachable", headers=self._retry_after()
                ) from e
            self._keys[digest] = (record, now + KEY_CACHE_S)
        if record is None:
            raise Unauthorized("unknown or revoked API key", headers={"WWW-Authenticate": "Bearer"})
        return Principal(client=record.id, name=record.name, role=record.role)

    def forget_keys(self) -> None:
        """Drop cached key look-ups (after a revocation)."""
        self._keys.clear()

    # -- grading ------------------------------------------------------------------

    def resolve(self, name: str, version: int | None, sha256: str | None) -> Rubric:
        """Find a rubric or raise 404 with what exists."""
        try:
            return self.catalog.resolve(name, version=version, sha256=sha256)
        except RubricNotFoundError as e:
            raise NotFound(str(e), code="rubric_not_found") from e

    def _retry_after(self) -> dict[str, str]:
        return {"Retry-After": str(self.settings.retry_after_s)}

    async def replay(self, client: str, idempotency_key: str) -> StoredRequest | None:
        """Return the stored request for this key, if there is one."""
        try:
            return await asyncio.to_thread(self.store.find_request, client, idempotency_key)
        except Exception as e:
            raise Unavailable("the store is unreachable", headers=self._retry_after()) from e

    async def grade(
        self,
        request: RewardRequest,
        principal: Principal,
        idempotency_key: str | None,
        *,
        sent: Sequence[Any] | None = None,
    ) -> tuple[bytes, bool]:
        """Grade a batch under its rubric; return the JSON body and whether it was replayed.

        ``sent`` is each sample as decoded from the request body, if the caller
        kept it: the log stores that instead of serializing the sample again.
        """
        principal.require("trainer")
        if len(request.samples) > self.settings.max_batch_samples:
            raise too_large(len(request.samples), self.settings.max_batch_samples)
        rubric = self.resolve(request.rubric, request.rubric_version, request.rubric_sha256)
        deadline_s = request.deadline_s
        if deadline_s is not None:
            deadline_s = min(deadline_s, self.settings.max_deadline_s)

        def envelope(request_id: str, latency_s: float) -> dict[str, Any]:
            return {
                "request_id": request_id,
                "rubric": rubric.identity.model_dump(),
                "latency_s": round(latency_s, 6),
            }

        def body(env: bytes, records: list[bytes]) -> bytes:
            return render(env, records)

        return await self._run(
            endpoint="rewards",
            principal=principal,
            idempotency_key=idempotency_key,
            rubric=rubric,
            samples=request.samples,
            sent=sent,
            deadline_s=deadline_s,
            make_envelope=envelope,
            make_body=body,
        )

    async def grade_openrlhf(
        self,
        request: OpenRLHFRequest,
        principal: Principal,
        rubric_name: str | None,
        abstain: AbstainPolicy | None = None,
    ) -> tuple[bytes, bool]:
        """Grade OpenRLHF's remote-reward request; an identical retry is answered from the log."""
        principal.require("trainer")
        n = len(request.query)
        if len(request.prompts) != n or (
            request.labels is not None and len(request.labels) not in (0, n)
        ):
            raise Invalid(
                f"query, prompts and labels must have one entry per sample; got {n} queries, "
                f"{len(request.prompts)} prompts, {len(request.labels or [])} labels",
                errors=[{"path": "prompts", "message": "length differs from query"}],
            )
        name = rubric_name or self.settings.openrlhf_rubric
        if not name:
            raise Invalid(
                "no rubric: pass ?rubric=NAME or set ARBITER_OPENRLHF_RUBRIC",
                code="rubric_required",
            )
        rubric = self.resolve(name, None, None)
        if n > self.settings.max_batch_samples:
            raise too_large(n, self.settings.max_batch_samples)
        policy = abstain or self.settings.openrlhf_abstain
        # Each sample on its own: a left-truncated prompt is recovered, a query that
        # cannot be split abstains alone (arbiter.adapters.rows), never the batch.
        samples: list[Sample] = []
        unsplit: dict[int, str] = {}
        truncated: list[float] = []
        for i, (query, prompt) in enumerate(zip(request.query, request.prompts, strict=True)):
            label = request.labels[i] if request.labels else None
            try:
                response, cut = split_query(query, prompt)
            except UnsplittableQuery as e:
                unsplit[i] = f"query[{i}]: {e}"
                truncated.append(0.0)
                continue
            truncated.append(float(cut))
            samples.append(_openrlhf_sample(i, prompt, response, label))

        def body(_env: bytes, records: list[bytes]) -> bytes:
            return openrlhf_body(records, n, unsplit, truncated, request.prompts, policy)

        if not samples:
            return body(b"", []), False

        # OpenRLHF's client retries a timed-out request with the same body and no
        # key of its own: the body's hash is the key, so a retry is answered from
        # the log instead of grading (and logging) the batch twice.
        canonical = orjson.dumps(request.model_dump(mode="json"), option=orjson.OPT_SORT_KEYS)
        digest = hashlib.sha256(canonical + name.encode()).hexdigest()
        window = self.settings.openrlhf_dedupe_window_s
        key = None
        if window > 0:
            bucket = int(time.time() // window)
            for b in (bucket, bucket - 1):
                stored = await self.replay(principal.client, f"openrlhf:{digest}:{b}")
                if stored is not None and time.time() - stored.created_at < window:
                    records = [r.encode() for r in stored.records]
                    return body(b"", records), True
            key = f"openrlhf:{digest}:{bucket}"

        def envelope(request_id: str, latency_s: float) -> dict[str, Any]:
            return {
                "request_id": request_id,
                "rubric": rubric.identity.model_dump(),
                "latency_s": round(latency_s, 6),
                "format": "openrlhf",
            }

        return await self._run(
            endpoint="openrlhf",
            principal=principal,
            idempotency_key=key,
            rubric=rubric,
            samples=samples,
            sent=None,
            deadline_s=None,
            make_envelope=envelope,
            make_body=body,
        )

    async def _run(
        self,
        *,
        endpoint: str,
        principal: Principal,
        idempotency_key: str | None,
        rubric: Rubric,
        samples: list[Sample],
        sent: Sequence[Any] | None,
        deadline_s: float | None,
        make_envelope: Callable[[str, float], dict[str, Any]],
        make_body: Callable[[bytes, list[bytes]], bytes],
    ) -> tuple[bytes, bool]:
        slot = (principal.client, idempotency_key) if idempotency_key else None
        if slot is not None:
            if slot in self._in_flight_keys:
                raise Conflict(
                    "a request with this Idempotency-Key is still being graded; retry shortly",
                    code="idempotency_key_in_flight",
                    headers=self._retry_after(),
                )
            stored = await self.replay(*slot)
            if stored is not None:
                records = [r.encode() for r in stored.records]
                return make_body(stored.envelope.encode(), records), True

        ticket = self.admission.admit(principal.client, len(samples))
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
                headers=self._retry_after(),
            )
        if slot is not None:
            self._in_flight_keys.add(slot)
        self._gauge()
        try:
            started = time.perf_counter()
            deadline = time.monotonic() + deadline_s if deadline_s is not None else None
            rewards = await score_samples(
                rubric,
                samples,
                registry=self.registry,
                deadline=deadline,
                max_concurrency=self.settings.grader_concurrency,
            )
            if self.settings.drift_enabled:
                rewards = await self.drift.observe(rubric, rewards, samples)
            request_id = uuid.uuid4().hex
            texts = [r.model_dump_json() for r in rewards]  # logged as text, sent as bytes
            records = [t.encode() for t in texts]
            envelope = orjson.dumps(make_envelope(request_id, time.perf_counter() - started))
            rows = self._rows(samples, sent, rewards, texts)
            try:
                await self._write(
                    self.store.record_request,
                    request_id=request_id,
                    client=principal.client,
                    idempotency_key=idempotency_key,
                    endpoint=endpoint,
                    rubric_name=rubric.name,
                    rubric_version=rubric.version,
                    rubric_sha256=rubric.sha256,
                    envelope=envelope.decode(),
                    rows=rows,
                )
            except DuplicateRequestError:
                # Another replica finished the same key first: answer with its result.
                assert idempotency_key is not None
                stored = await self.replay(principal.client, idempotency_key)
                if stored is None:
                    raise
                return make_body(
                    stored.envelope.encode(), [r.encode() for r in stored.records]
                ), True
            except Exception as e:
                # Unlogged rewards are not acknowledged: the client retries.
                logger.exception("could not log %d rewards", len(rows))
                raise Unavailable(
                    "the store could not log the rewards; nothing was acknowledged, retry",
                    code="store_unavailable",
                    headers=self._retry_after(),
                ) from e
            self._observe(rubric, rewards)
            # -- human review (issue 7): offer the logged batch to the review sampler.
            # After the commit, so only acknowledged rewards are queued; a no-op for
            # rubrics that sample nothing, and it never fails the batch.
            await self.review_sampler.offer(rubric, request_id, rewards)
            # -- end human review
            return make_body(envelope, records), False
        finally:
            self.admission.release(ticket)
            if slot is not None:
                self._in_flight_keys.discard(slot)
            self._gauge()

    async def _write(self, write: Callable[..., None], **kwargs: Any) -> None:
        """Run a store write: inline for SQLite, in a worker thread for a server database.

        SQLite is a local file with one writer at a time, and its writes are
        short: done on the event loop they cost less than the GIL hand-offs
        with a worker thread, which cut throughput by a fifth (bench/api.py,
        6.2k vs 7.8k samples/s). A server database waits on the network, which
        must not stall the loop.
        """
        if self.store.is_sqlite:
            write(**kwargs)
        else:
            await asyncio.to_thread(write, **kwargs)

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

    def _gauge(self) -> None:
        self.metrics.inflight_samples.set(self.admission.samples_in_flight)
        self.metrics.inflight_requests.set(self.admission.requests_in_flight)
        self.metrics.admission_utilization.set(self.admission.utilization())

    def _observe(self, rubric: Rubric, rewards: Sequence[Reward]) -> None:
        m = self.metrics
        m.samples.labels(rubric=rubric.name).inc(len(rewards))
        values = [r.reward for r in rewards if r.reward is not None]
        m.rewards.observe((rubric.name,), values)
        if len(values) < len(rewards):
            m.abstentions.labels(rubric=rubric.name).inc(len(rewards) - len(values))
        latencies: dict[str, list[float]] = {}
        failures: Counter[tuple[str, str]] = Counter()
        for name in rubric.components:
            scores = []
            for reward in rewards:
                outcome = reward.components[name]
                latencies.setdefault(outcome.grader, []).append(outcome.latency_s)
                if outcome.score is not None:
                    scores.append(outcome.score)
                elif outcome.failure is not None:
                    failures[outcome.grader, outcome.failure.kind.value] += 1
            m.components.observe((rubric.name, name), scores)
        for grader, seconds in latencies.items():
            m.grader_latency.observe((grader,), seconds)
        for (grader, kind), count in failures.items():
            m.grader_failures.labels(grader=grader, kind=kind).inc(count)

    # -- rubric management --------------------------------------------------------

    async def register_rubric(self, text: str, principal: Principal) -> tuple[Rubric, bool]:
        """Validate and register a new rubric version (admin)."""
        principal.require("admin")
        try:
            rubric = parse_rubric(text, source="<request>", registry=self.registry)
        except RubricError as e:
            raise Invalid(
                f"the rubric is invalid ({len(e.issues)} problem(s))",
                code="invalid_rubric",
                errors=[i.as_dict() for i in e.issues],
            ) from e
        with contextlib.suppress(RubricNotFoundError):
            same_version = self.catalog.resolve(rubric.name, version=rubric.version)
            if same_version.sha256 != rubric.sha256:
                raise Conflict(
                    f"{rubric.name} v{rubric.version} already exists with other content "
                    f"(sha256 {same_version.sha256[:12]}); bump the version",
                    code="version_exists",
                )
        entry, created = self.catalog.add(rubric, text, "api")
        if created:
            await asyncio.to_thread(self._persist, entry)
        return rubric, created


def too_large(n: int, limit: int) -> TooLarge:
    """Build the 413 for a batch over the limit."""
    return TooLarge(
        f"the batch has {n} samples; the limit is {limit} (ARBITER_MAX_BATCH_SAMPLES)",
        code="batch_too_large",
    )


def _openrlhf_sample(i: int, prompt: str, response: str, label: Any) -> Sample:
    """Turn one OpenRLHF row into a Sample; a label that is a task spec becomes the task."""
    fields = parse_label(label)
    try:
        task = TaskSpec.model_validate(fields["task"]) if "task" in fields else None
    except ValueError as e:
        raise Invalid(
            f"labels[{i}] holds a task that is not valid: {e}",
            errors=[{"path": f"labels.{i}", "message": str(e)}],
        ) from e
    sample_id = hashlib.sha256(f"{i}\x00{prompt}\x00{response}".encode()).hexdigest()[:24]
    return Sample(
        id=f"openrlhf-{i}-{sample_id}",
        # Samples of one prompt are one group (OpenRLHF's samples per prompt).
        group_id=hashlib.sha256(prompt.encode()).hexdigest()[:24],
        prompt=prompt,
        response=response,
        task=task,
        labels=fields.get("labels"),
    )


def openrlhf_body(
    records: Sequence[bytes],
    n: int,
    unsplit: dict[int, str],
    truncated: Sequence[float],
    prompts: Sequence[str],
    policy: AbstainPolicy,
) -> bytes:
    """Build OpenRLHF's answer: graded records in order, unsplittable queries abstained.

    An abstained reward takes the chosen fallback (``policy``); ``extra_logs``
    counts abstentions, truncated prompts and unsplittable queries per sample,
    so OpenRLHF logs them.

    Raises:
        Invalid: the fallback is ``raise`` (or ``group_mean`` without a scored
            peer) and a sample abstained (code ``reward_abstained``).
    """
    graded = iter(records)
    values: list[float | None] = []
    logs: dict[str, list[float]] = {"abstained": [], "truncated_prompt": [], "unsplittable": []}
    components: list[dict[str, Any] | None] = []
    for i in range(n):
        record = None if i in unsplit else orjson.loads(next(graded))
        values.append(None if record is None else record["reward"])
        components.append(None if record is None else record["components"])
        logs["abstained"].append(float(values[-1] is None))
        logs["truncated_prompt"].append(truncated[i])
        logs["unsplittable"].append(float(i in unsplit))
    groups = [hashlib.sha256(p.encode()).hexdigest()[:24] for p in prompts]
    filled = fill_abstained(values, groups, policy)
    errors = [(i, v) for i, v in enumerate(filled) if isinstance(v, AbstainedError)]
    if errors:
        i, error = errors[0]
        reason = unsplit.get(i, "the rubric abstained")
        raise Invalid(
            f"{error} ({reason}); set ARBITER_OPENRLHF_ABSTAIN or ?abstain= to zero or "
            "group_mean to train through abstentions",
            code="reward_abstained",
            errors=[
                {"path": f"query.{j}", "message": unsplit.get(j, "abstained")} for j, _ in errors
            ],
        )
    rewards = [float(v) for v in filled if not isinstance(v, AbstainedError)]
    names = sorted({name for c in components if c is not None for name in c})
    for name in names:
        # A component that could not score is logged as NaN: OpenRLHF averages
        # extra_logs, and a made-up 0.0 would drag the mean.
        logs[name] = [
            float("nan") if c is None or c[name]["score"] is None else float(c[name]["score"])
            for c in components
        ]
    return orjson.dumps(
        {"rewards": rewards, "scores": rewards, "extra_logs": logs},
        option=orjson.OPT_SERIALIZE_NUMPY,
    )
