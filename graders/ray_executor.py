"""A grading executor on a Ray cluster: sandbox pools and static analyzers as Ray actors.

Each :class:`GraderActor` holds the built-in graders and a sandbox pool sized
by the CPUs Ray gave it (its fast lane; the long lane beside it as in
:class:`~arbiter.graders.sandbox.pool.SandboxPool`). The driver side,
:class:`RayExecutor`, keeps the queue: jobs wait in one queue per tenant and
are dispatched round-robin across tenants to the least-loaded live actor, at
most ``concurrency`` jobs per actor, so one API key or rubric cannot take the
whole cluster. The queue is bounded: :meth:`RayExecutor.room` is what the API
checks before admitting a batch (a full cluster answers 429 with Retry-After).

Failures of the cluster are not the candidate's. When an actor dies (killed,
out of memory, its node gone), the jobs it had in flight never produced a
result; each is queued again, first in line, for another actor, up to
``max_attempts`` in all, and then comes back as a typed ``sandbox_error``. Jobs
sent to an actor in the moment between its death and the driver learning of it
are lost with it, and that counts as an attempt too; so the nodes the cluster
reports dead are looked up at each death and every NODE_CHECK_EVERY_S, and
their actors, idle ones included, taken as dead. A job
resolves exactly once: a result that arrived is never graded again, so no
sample is lost and none counts twice. A replacement actor is started for each
dead one and joins once it answers. Retries, deaths and where each job ran
are counted in :meth:`RayExecutor.stats`.

The actor and the driver's queue are one module: what an actor returns, how a
lost call is told from a grader's error, and when a job is retried are one
protocol, read on both ends at once.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
import os
import pickle
import threading
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import arbiter
from arbiter.graders.base import GraderConfig
from arbiter.graders.executor import GradingExecutor, current_tenant
from arbiter.graders.types import FailureKind, GradeResult, Sample

if TYPE_CHECKING:
    from arbiter.graders.registry import GraderRegistry

__all__ = ["GraderActor", "RayExecutor", "StreamingActor"]

logger = logging.getLogger("arbiter.graders.ray_executor")

# Ray reports usage to its authors unless told not to; nothing here phones home.
os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")

import ray  # noqa: E402 - after the usage-stats switch, which Ray reads on import
from ray.exceptions import ActorUnschedulableError, NodeDiedError, RayActorError  # noqa: E402

#: The folder that holds the ``arbiter`` package (a checkout, or site-packages).
_PROJECT_ROOT = str(Path(arbiter.__file__).resolve().parents[1])
#: Errors that mean "the actor (or its node) is gone", never "the grader said so".
_LOST = (RayActorError, NodeDiedError, ActorUnschedulableError)


class StreamingActor:
    """An actor that grades: ``grade`` one sample, and ``grade_many`` streamed back.

    The executor sends jobs in small batches, one Ray call each, and the actor
    streams the results back (a Ray streaming generator) as they are ready: a
    fast job never waits for a slow one in its batch. Each item of the stream
    holds every result that was ready at that moment, so the cost of a call and
    of a streamed item (CPU in the driver, the actor and the raylets) is shared
    by the jobs sent or finished together.
    """

    async def grade(
        self, grader: str, sample: Sample, config: GraderConfig
    ) -> tuple[GradeResult, str]:
        """Grade one sample; return the result and this actor's node id."""
        raise NotImplementedError

    async def grade_many(
        self, calls: Sequence[tuple[str, Sample, GraderConfig]]
    ) -> AsyncIterator[list[tuple[int, str, Any, str]]]:
        """Grade ``calls`` at once; yield ``[(index, "ok", result, node), ...]`` as they finish.

        A grader that raises gives ``(index, "raised", exception, "")`` instead:
        that job fails as it would have locally, the others go on.
        """
        running = {asyncio.ensure_future(self._answer(i, c)) for i, c in enumerate(calls)}
        try:
            while running:
                # Every job done by the time this wakes, not just the first.
                done, running = await asyncio.wait(running, return_when=asyncio.FIRST_COMPLETED)
                yield [task.result() for task in done]
        finally:
            # The caller stopped listening (its deadline passed): stop the rest.
            for task in running:
                task.cancel()

    async def grade_one(
        self, grader: str, sample: Sample, config: GraderConfig
    ) -> list[tuple[int, str, Any, str]]:
        """Grade one job; answer as the one item of ``grade_many`` would.

        A job sent alone comes this way: a plain call costs Ray less than a
        stream of one item.
        """
        return [await self._answer(0, (grader, sample, config))]

    async def _answer(
        self, index: int, call: tuple[str, Sample, GraderConfig]
    ) -> tuple[int, str, Any, str]:
        try:
            result, node = await self.grade(*call)
        except Exception as e:
            return index, "raised", _shippable(e), ""
        return index, "ok", result, node


def _shippable(error: Exception) -> Exception:
    """Return ``error`` if it survives pickling, else a RuntimeError that says what it was.

    The driver re-raises what the actor sent; an exception whose class cannot
    be rebuilt from its pickle would fail there instead, in Ray's deserializer.
    """
    try:
        pickle.loads(pickle.dumps(error))
    except Exception:
        return RuntimeError(f"{type(error).__name__} on the grader actor: {error}")
    return error


class GraderActor(StreamingActor):
    """The built-in graders on one Ray worker, with a sandbox pool of ``slots`` fast places.

    ``registry_setup`` is what the driver's registry got beyond the built-ins
    (its declared models and grader plugins), applied here the same way, so an
    actor grades with what the service or the command was given, not the bare
    defaults. It comes from the driver as a function: this package cannot know
    where models files are read.
    """

    def __init__(
        self,
        slots: int,
        long_slots: int | None,
        registry_setup: Callable[[GraderRegistry], object] | None = None,
    ) -> None:
        from arbiter.graders.registry import default_registry
        from arbiter.graders.sandbox import PoolConfig, SandboxPool
        from arbiter.graders.unit_tests import UnitTestsGrader

        self.registry = default_registry()
        pool = SandboxPool(PoolConfig(slots=slots, long_slots=long_slots))
        pool.start()
        self.registry.add_instance(UnitTestsGrader(pool))
        if registry_setup is not None:
            registry_setup(self.registry)
        self.node = str(ray.get_runtime_context().get_node_id())

    async def ready(self) -> str:
        """Return the id of the node this actor runs on."""
        return self.node

    async def grade(
        self, grader: str, sample: Sample, config: GraderConfig
    ) -> tuple[GradeResult, str]:
        """Grade one sample; return the result and this actor's node id."""
        return await self.registry.instance(grader).grade(sample, config), self.node

    async def close(self) -> None:
        """Stop the graders' pools."""
        self.registry.close()


@dataclass
class _Job:
    grader: str
    sample: Sample
    config: GraderConfig
    tenant: str
    future: asyncio.Future[GradeResult]
    attempts: int = 0


#: How often the executor asks the cluster which of its nodes are alive.
NODE_CHECK_EVERY_S = 2.0


@dataclass
class _Worker:
    handle: Any
    node: str
    in_flight: int = 0
    alive: bool = True
    # Jobs sent to this actor and jobs it answered: what it held when it died is
    # their difference, including jobs sent after it died but before we knew.
    sent: int = 0
    answered: int = 0


class RayExecutor(GradingExecutor):
    """Grade on Ray actors; see the module docstring for scheduling and failures.

    Args:
        address: the cluster (``ray://`` or ``host:port``); ``None`` joins the
            cluster this process is already connected to, or starts a local one.
        actors: how many grader actors (default: one per ``cpus_per_actor`` CPUs
            in the cluster).
        cpus_per_actor: Ray CPUs each actor claims; also its sandbox's fast places.
        long_slots: each actor's long-lane places (default: the pool's own).
        resources: per actor, extra Ray resources it needs (pins actors to nodes
            that offer them); default: spread over the nodes.
        max_queue: jobs queued or in flight beyond which :meth:`room` is 0.
        max_attempts: tries per job when actors die under it.
        concurrency: jobs in flight per actor (default: its sandbox capacity).
        dispatch_batch: at most this many jobs per Ray call (each result is
            streamed back as soon as it is ready).
        start_timeout_s: how long a (replacement) actor may take to answer.
        actor_class: the actor (default :class:`GraderActor`); another
            :class:`StreamingActor` with ``ready()`` and ``grade(grader, sample,
            config)`` (a simulated worker in the benchmarks) runs behind the
            same queue.
        actor_args: its constructor's arguments (default: the sandbox's sizes).
        registry_setup: applied to each :class:`GraderActor`'s registry after the
            built-ins (declared models, plugins: ``arbiter.rubrics.models_file.registry_setup``);
            it travels to the actors pickled, so it must be picklable.
    """

    def __init__(
        self,
        address: str | None = None,
        *,
        actors: int | None = None,
        cpus_per_actor: int = 1,
        long_slots: int | None = None,
        resources: Sequence[dict[str, float]] | None = None,
        max_queue: int = 16384,
        max_attempts: int = 3,
        concurrency: int | None = None,
        dispatch_batch: int = 16,
        start_timeout_s: float = 120.0,
        actor_class: type = GraderActor,
        actor_args: tuple[Any, ...] | None = None,
        registry_setup: Callable[[GraderRegistry], object] | None = None,
    ) -> None:
        if min(cpus_per_actor, max_attempts, max_queue, dispatch_batch) < 1:
            raise ValueError(
                "cpus_per_actor, max_attempts, max_queue and dispatch_batch must be at least 1"
            )
        self.address = address
        self.cpus_per_actor = cpus_per_actor
        self.long_slots = long_slots
        self.max_queue = max_queue
        self.max_attempts = max_attempts
        self.start_timeout_s = start_timeout_s
        from arbiter.graders.sandbox.pool import LONG_LANE_PER_SLOT

        lane = LONG_LANE_PER_SLOT * cpus_per_actor if long_slots is None else long_slots
        self.concurrency = concurrency or (cpus_per_actor + lane)
        self.dispatch_batch = dispatch_batch
        self._wanted = actors
        self._actor_class = actor_class
        self._actor_args = (
            (cpus_per_actor, long_slots, registry_setup) if actor_args is None else actor_args
        )
        self._resources = list(resources) if resources is not None else None
        self._workers: list[_Worker] = []
        self._starting = 0
        #: Replacement actors not yet answering (killed on close like the rest).
        self._pending_handles: list[Any] = []
        self._queues: collections.OrderedDict[str, collections.deque[_Job]] = (
            collections.OrderedDict()
        )
        self._queued = 0
        self._in_flight = 0
        #: The loop a pump is scheduled on, until it runs.
        self._pump_soon: asyncio.AbstractEventLoop | None = None
        self._started = False
        self._start_lock = threading.Lock()
        self._tasks: set[asyncio.Task[None]] = set()
        self._node_watch: asyncio.Task[None] | None = None
        self._stats: collections.Counter[str] = collections.Counter()
        self._by_node: collections.Counter[str] = collections.Counter()

    # -- lifecycle -----------------------------------------------------------------

    def start(self) -> None:
        """Connect to the cluster and start the actors (idempotent; blocks until they answer)."""
        with self._start_lock:
            if not self._started:
                self._start()

    @staticmethod
    def _actor_env() -> dict[str, str]:
        """What every actor's environment gets from the driver's."""
        pythonpath = os.pathsep.join(
            p for p in (_PROJECT_ROOT, os.environ.get("PYTHONPATH", "")) if p
        )
        # Where a node fetches a repository snapshot it lacks, by id, once (see
        # graders.repository.snapshots): the driver's setting reaches every actor.
        passed = {
            name: os.environ[name]
            for name in ("ARBITER_REPOSITORY_SOURCE", "ARBITER_REPOSITORY_SOURCE_KEY")
            if os.environ.get(name)
        }
        return {"PYTHONPATH": pythonpath, **passed}

    def _start(self) -> None:
        if not ray.is_initialized():
            ray.init(
                address=self.address,
                namespace="arbiter",
                log_to_driver=False,
                runtime_env={"env_vars": self._actor_env()},
            )
        if self._resources is not None:
            wanted = self._resources
        else:
            cpus = ray.cluster_resources().get("CPU", 1)  # type: ignore[no-untyped-call]
            count = self._wanted or max(1, int(cpus) // self.cpus_per_actor)
            wanted = [{} for _ in range(count)]
        handles = [self._spawn(extra) for extra in wanted]
        nodes = ray.get([h.ready.remote() for h in handles], timeout=self.start_timeout_s)
        self._workers = [_Worker(handle, node) for handle, node in zip(handles, nodes, strict=True)]
        self._started = True

    def _spawn(self, extra: dict[str, float]) -> Any:
        options: dict[str, Any] = {
            "num_cpus": self.cpus_per_actor,
            "max_concurrency": self.concurrency,
            # A dead actor is replaced by this executor, not restarted by Ray: a
            # restart would retry calls the executor already counts as lost.
            "max_restarts": 0,
            # Each actor's own, not only the job's: another part of this process
            # (reward-model replicas) may have connected first, without them.
            "runtime_env": {"env_vars": self._actor_env()},
        }
        if extra:
            options["resources"] = dict(extra)
        else:
            options["scheduling_strategy"] = "SPREAD"
        remote: Any = ray.remote(self._actor_class)
        return remote.options(**options).remote(*self._actor_args)

    def close(self) -> None:
        """Stop the actors (their sandbox pools die with them) and the node watch."""
        watch, self._node_watch = self._node_watch, None
        self._cancel([watch, *self._tasks])
        for handle in [w.handle for w in self._workers] + self._pending_handles:
            with contextlib.suppress(Exception):  # already dead is fine
                ray.kill(handle)
        self._workers = []
        self._pending_handles = []
        self._started = False

    @staticmethod
    def _cancel(tasks: list[asyncio.Task[Any] | None]) -> None:
        """Cancel background tasks on their own loops and let them end there.

        Left pending, a task is destroyed with its loop ("Task was destroyed but
        it is pending" at exit). A loop that runs in this thread cancels at once;
        one running in another thread is asked to; one that is stopped is run
        until the cancelled tasks have ended.
        """
        try:
            running: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        by_loop: dict[asyncio.AbstractEventLoop, list[asyncio.Task[Any]]] = {}
        for task in tasks:
            if task is not None and not task.done():
                by_loop.setdefault(task.get_loop(), []).append(task)
        for loop, pending in by_loop.items():
            if loop.is_closed():
                continue
            if loop is running:
                for task in pending:
                    task.cancel()
            elif loop.is_running():
                for task in pending:
                    loop.call_soon_threadsafe(task.cancel)
            else:
                for task in pending:
                    task.cancel()
                loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))

    # -- what the service sees -----------------------------------------------------

    def room(self) -> int:
        """Return how many more jobs may be queued before the cluster is full."""
        return max(0, self.max_queue - self._queued - self._in_flight)

    async def readiness(self) -> str | None:
        """Report a cluster with no live grader actor."""
        if self._started and not any(w.alive for w in self._workers) and not self._starting:
            return "no live grader actor on the Ray cluster"
        return None

    def stats(self) -> dict[str, Any]:
        """Counters: Ray calls, jobs done, retried, failed after retries, deaths, jobs per node."""
        return {
            **self._stats,
            "queued": self._queued,
            "in_flight": self._in_flight,
            "live_actors": sum(w.alive for w in self._workers),
            "by_node": dict(self._by_node),
        }

    def actors(self) -> list[tuple[Any, str]]:
        """Return the live actors' handles and node ids (for operators and tests)."""
        return [(w.handle, w.node) for w in self._workers if w.alive]

    # -- grading -------------------------------------------------------------------

    async def grade(self, grader: str, sample: Sample, config: GraderConfig) -> GradeResult:
        """Queue one job under the current tenant and wait for its one result."""
        if not self._started:
            try:
                await asyncio.to_thread(self.start)
            except (ray.exceptions.RayError, ConnectionError) as e:
                # The cluster could not give us actors: infrastructure, not the candidate.
                return GradeResult.failed(
                    grader,
                    FailureKind.SANDBOX_ERROR,
                    f"the Ray cluster could not start grader actors: {e}",
                    retryable=True,
                )
        loop = asyncio.get_running_loop()
        watch = self._node_watch
        if watch is None or watch.done() or watch.get_loop() is not loop:
            self._node_watch = loop.create_task(self._watch_nodes())
        future: asyncio.Future[GradeResult] = loop.create_future()
        self._enqueue(_Job(grader, sample, config, current_tenant(), future))
        # Pumped once the callers of this moment have all queued (a batch's samples
        # arrive in one burst): sent at once, each job would get a call to itself.
        if self._pump_soon is not loop:  # (a loop that closed first never ran its pump)
            self._pump_soon = loop
            loop.call_soon(self._pump_queued)
        return await future

    def _pump_queued(self) -> None:
        self._pump_soon = None
        self._pump()

    def _enqueue(self, job: _Job, *, first: bool = False) -> None:
        queue = self._queues.get(job.tenant)
        if queue is None:
            queue = self._queues[job.tenant] = collections.deque()
        if first:
            queue.appendleft(job)
        else:
            queue.append(job)
        self._queued += 1

    def _next_job(self) -> _Job | None:
        """Take the next job round-robin across tenants, skipping jobs whose caller gave up."""
        while self._queues:
            tenant, queue = next(iter(self._queues.items()))
            job = queue.popleft()
            self._queued -= 1
            if queue:
                self._queues.move_to_end(tenant)
            else:
                del self._queues[tenant]
            if not job.future.done():
                return job
        return None

    def _pump(self) -> None:
        """Dispatch queued jobs while some live actor has room."""
        # An actor gets a call once it has room for a batch (a quarter of its
        # places, at most dispatch_batch), or for all that is queued: results come
        # back one by one, and sending each freed place its own call would cost
        # one call per job again.
        low_water = min(self.dispatch_batch, max(1, self.concurrency // 4))
        while self._queued:
            if not any(w.alive for w in self._workers):
                if not self._starting:
                    self._fail_queued("no live grader actor on the Ray cluster")
                return
            wanted = min(low_water, self._queued)
            live = [
                w for w in self._workers if w.alive and self.concurrency - w.in_flight >= wanted
            ]
            if not live:
                return
            worker = min(live, key=lambda w: w.in_flight)
            # A batch per call, but spread over the actors while the queue is short:
            # eight jobs for four idle actors go two to each, not eight to one.
            share = -(-self._queued // len(live))
            size = min(self.concurrency - worker.in_flight, self.dispatch_batch, share)
            jobs: list[_Job] = []
            while len(jobs) < size and (job := self._next_job()) is not None:
                jobs.append(job)
            if not jobs:
                return
            # Counted now, not when the task first runs: the next pass must see them.
            worker.in_flight += len(jobs)
            worker.sent += len(jobs)
            self._in_flight += len(jobs)
            self._launch(self._run(worker, jobs))

    def _launch(self, coro: Any) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _run(self, worker: _Worker, jobs: list[_Job]) -> None:
        for job in jobs:
            job.attempts += 1
        calls = [(job.grader, job.sample, job.config) for job in jobs]
        self._stats["calls"] += 1
        if len(calls) == 1:
            call = worker.handle.grade_one.remote(*calls[0])
            answers_of = _only_answers(call)
        else:
            call = worker.handle.grade_many.options(num_returns="streaming").remote(calls)
            answers_of = _streamed_answers(call)
        pending = dict(enumerate(jobs))
        # Set once every caller of the batch has its answer or stopped waiting.
        settled = asyncio.ensure_future(asyncio.wait([asyncio.shield(j.future) for j in jobs]))

        def release() -> None:
            worker.in_flight -= 1
            self._in_flight -= 1

        try:
            while pending:
                step = asyncio.ensure_future(anext(answers_of, None))
                done, _ = await asyncio.wait({step, settled}, return_when=asyncio.FIRST_COMPLETED)
                if step not in done:
                    step.cancel()
                    with contextlib.suppress(Exception):
                        ray.cancel(call)
                    return  # every caller gave up (its deadline passed)
                answers = step.result()
                if answers is None:
                    break  # the stream ended: whatever is left was lost with it
                for index, kind, value, node in answers:
                    job = pending.pop(index)
                    worker.answered += 1
                    release()
                    if kind == "raised":  # the grader raised on the actor: as it would locally
                        if not job.future.done():
                            job.future.set_exception(value)
                    else:
                        self._stats["done"] += 1
                        self._by_node[node] += 1
                        if not job.future.done():
                            job.future.set_result(value)
                self._pump()
            if pending:
                self._lost_all(worker, pending, RuntimeError("the actor's stream ended early"))
        except _LOST as e:
            self._lost_all(worker, pending, e)
        except Exception as e:
            # Not a death (an answer Ray could not deliver, say): the jobs still
            # pending fail with it, as a grader that raised, and no caller waits forever.
            for job in pending.values():
                if not job.future.done():
                    job.future.set_exception(e)
        except asyncio.CancelledError:
            with contextlib.suppress(Exception):
                ray.cancel(call)
            raise
        finally:
            settled.cancel()
            for _ in pending:
                release()
            self._pump()

    def _lost_all(self, worker: _Worker, pending: dict[int, _Job], error: Exception) -> None:
        """The actor died with ``pending`` unanswered: give back their places, retry each."""
        for job in list(pending.values()):
            worker.in_flight -= 1
            self._in_flight -= 1
            self._lost(worker, job, error)
        pending.clear()

    def _lost(self, worker: _Worker, job: _Job, error: Exception) -> None:
        """An actor died under ``job``: retry it elsewhere, or fail it typed."""
        if worker.alive:
            self._dead(worker, error)
            # Its node may be gone with it: then so are the node's idle actors,
            # which no failed call has shown yet. Found now, no job (a retry of
            # this one, say) is sent to them and lost there.
            for other in self._workers_on_dead_nodes():
                self._dead(other, "its node is gone")
        if job.future.done():
            return
        if job.attempts < self.max_attempts:
            self._stats["retried"] += 1
            logger.warning(
                "retrying sample %s (%s) after attempt %d: its actor died",
                job.sample.id,
                job.grader,
                job.attempts,
            )
            self._enqueue(job, first=True)
            return
        self._stats["failed"] += 1
        job.future.set_result(
            GradeResult.failed(
                job.grader,
                FailureKind.SANDBOX_ERROR,
                f"the grader actor died under this sample {job.attempts} time(s): {error}",
                retryable=True,
            )
        )

    def _dead(self, worker: _Worker, error: object) -> None:
        worker.alive = False
        self._stats["actor_deaths"] += 1
        logger.warning("grader actor on node %s died: %s", worker.node, error)
        self._replace(worker)

    async def _watch_nodes(self) -> None:
        """Take the actors of nodes the cluster reports dead as dead, every few seconds.

        An idle actor's death shows in no call: without this, the next job sent
        to it would be lost there, and cost its caller an attempt.
        """
        while self._started:
            await asyncio.sleep(NODE_CHECK_EVERY_S)
            for worker in await asyncio.to_thread(self._workers_on_dead_nodes):
                if worker.alive:
                    self._dead(worker, "its node is gone")

    def _workers_on_dead_nodes(self) -> list[_Worker]:
        """Return the live-looking actors whose node the cluster reports dead."""
        try:
            nodes = ray.nodes()  # type: ignore[no-untyped-call]
            dead = {n["NodeID"] for n in nodes if not n.get("Alive", True)}
        except Exception as e:  # the GCS itself unreachable: calls will tell, one by one
            logger.warning("could not list the Ray cluster's nodes: %s", e)
            return []
        return [w for w in self._workers if w.alive and w.node in dead]

    def _replace(self, dead: _Worker) -> None:
        """Start a stand-in for a dead actor; it joins once it answers."""
        self._starting += 1
        # Unpinned: the dead actor's node may be gone; the stand-in goes where there is room.
        handle = self._spawn({})
        self._pending_handles.append(handle)

        async def join() -> None:
            try:
                node = await asyncio.wait_for(handle.ready.remote(), self.start_timeout_s)
            except (TimeoutError, *_LOST) as e:
                logger.warning("a replacement grader actor did not start: %s", e)
                with contextlib.suppress(Exception):
                    ray.kill(handle)
            else:
                self._workers.append(_Worker(handle, str(node)))
                self._stats["replaced"] += 1
            finally:
                self._starting -= 1
                with contextlib.suppress(ValueError):
                    self._pending_handles.remove(handle)
                self._workers = [w for w in self._workers if w.alive or w.in_flight]
                self._pump()

        self._launch(join())

    def _fail_queued(self, message: str) -> None:
        while (job := self._next_job()) is not None:
            self._stats["failed"] += 1
            job.future.set_result(
                GradeResult.failed(job.grader, FailureKind.SANDBOX_ERROR, message, retryable=True)
            )


async def _streamed_answers(stream: Any) -> AsyncIterator[list[tuple[int, str, Any, str]]]:
    """Yield the answers of each item of an actor's result stream."""
    async for ref in stream:
        answers: list[tuple[int, str, Any, str]] = await ref
        yield answers


async def _only_answers(ref: Any) -> AsyncIterator[list[tuple[int, str, Any, str]]]:
    """Yield the answers of a plain ``grade_one`` call."""
    answers: list[tuple[int, str, Any, str]] = await ref
    yield answers
