"""A bounded chaos run (issue 24): two replicas on PostgreSQL, trainers on the client's defaults.

While three trainer threads send batches through a round-robin balancer, each
replica is killed with SIGKILL and stopped with SIGTERM (and started again),
PostgreSQL is restarted, and another session holds a lock on the rewards table.
Every fault of ours lasts well under 30 s, so no call may fail. Then:

* every batch the client saw acknowledged is logged exactly once, with all its
  samples, under the request id the client was given;
* no sample is logged twice;
* every acknowledged reward equals an offline grading of the same sample.

Real processes, loopback only; PostgreSQL is a private server of the test's own
(``tests/api/store_faults.py``), because the machine's shared one must not be
restarted. The figures are printed for the record.
"""

from __future__ import annotations

import asyncio
import itertools
import random
import signal
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest
from sqlalchemy import create_engine, select

from arbiter.client import ArbiterClient
from arbiter.graders.registry import default_registry
from arbiter.graders.types import Sample
from arbiter.rubrics import score_samples
from arbiter.rubrics.loader import parse_rubric
from arbiter.store.tables import requests, rewards
from tests.api import plugin_graders
from tests.api.conftest import Server, StartServer
from tests.api.store_faults import held_lock, private_postgres

pytestmark = [pytest.mark.slow(seconds=55), pytest.mark.postgres]

CHAOS = """\
name: chaos
version: 1
components:
  eff: {grader: efficiency, weight: 0.7, config: {max_turns: 10}}
  nap: {grader: sleepy, weight: 0.3, config: {delay_s: 0.3}}
"""
TRAINERS = 3
#: Normal traffic before, between and after the faults.
CALM_S = 3.0


class RoundRobin(httpx.BaseTransport):
    """A load balancer on the client's side: each attempt goes to the next replica.

    It also counts how each attempt ended (a status, or the transport error), so
    the figures show what the faults did to the traffic.
    """

    def __init__(self, urls: list[str], outcomes: Counter[str], lock: threading.Lock) -> None:
        self._targets = itertools.cycle([httpx.URL(u) for u in urls])
        self._lock = lock  # shared with the other trainers' balancers, as the counts are
        self._inner = httpx.HTTPTransport()
        self.outcomes = outcomes

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        with self._lock:
            target = next(self._targets)
        request.url = request.url.copy_with(host=target.host, port=target.port)
        try:
            response = self._inner.handle_request(request)
        except httpx.TransportError as e:
            with self._lock:
                self.outcomes[type(e).__name__] += 1
            raise
        with self._lock:
            self.outcomes[str(response.status_code)] += 1
        return response

    def close(self) -> None:
        self._inner.close()


def batch_samples(b: int) -> list[dict[str, Any]]:
    rng = random.Random(b)
    return [
        {
            "id": f"b{b}-{i}",
            "group_id": f"b{b}",
            "response": "r" * rng.randint(1, 50),
            "metrics": {"turns": rng.randint(0, 14)},
        }
        for i in range(rng.randint(4, 48))
    ]


@dataclass
class Traffic:
    """What the trainers sent and got."""

    sent: Counter[str] = field(default_factory=Counter)
    acknowledged: dict[str, tuple[str, list[dict[str, Any]]]] = field(default_factory=dict)
    failed: list[tuple[str, str]] = field(default_factory=list)
    samples: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    attempts: Counter[str] = field(default_factory=Counter)  # by outcome


def trainer(
    urls: list[str],
    key: str,
    numbers: itertools.count[int],
    stop: threading.Event,
    traffic: Traffic,
    lock: threading.Lock,
) -> None:
    balancer = RoundRobin(urls, traffic.attempts, lock)
    with ArbiterClient("http://replicas", key, transport=balancer) as client:  # its defaults
        while not stop.is_set():
            b = next(numbers)
            idempotency_key = f"chaos-{b}"
            batch = batch_samples(b)
            with lock:
                traffic.samples[idempotency_key] = batch
                traffic.sent["batches"] += 1
            try:
                answer = client.rewards(batch, "chaos", idempotency_key=idempotency_key)
            except Exception as e:  # counted: the test asserts there are none
                with lock:
                    traffic.failed.append((idempotency_key, f"{type(e).__name__}: {e}"))
                continue
            with lock:
                rewards = [r.model_dump(mode="json") for r in answer.rewards]
                traffic.acknowledged[idempotency_key] = (answer.request_id, rewards)


def offline(batches: dict[str, list[dict[str, Any]]]) -> dict[str, dict[str, Any]]:
    """Grade every sample in this process, as ``arbiter score`` would; reward by sample id."""
    registry = default_registry()
    plugin_graders.register(registry)
    rubric = parse_rubric(CHAOS, registry=registry)
    samples = [Sample.model_validate(s) for batch in batches.values() for s in batch]
    graded = asyncio.run(score_samples(rubric, samples, registry=registry))
    registry.close()
    return {r.id: r.model_dump(mode="json") for r in graded}


def same_reward(served: dict[str, Any], expected: dict[str, Any]) -> bool:
    def essence(r: dict[str, Any]) -> tuple[Any, ...]:
        return (
            r["reward"],
            r["raw_reward"],
            r["abstain_reason"],
            {n: (c["score"], c["failure"]) for n, c in r["components"].items()},
        )

    return essence(served) == essence(expected)


def test_chaos_two_replicas_on_postgresql_under_the_clients_defaults(
    start_server: StartServer,
) -> None:
    started = time.monotonic()
    with private_postgres() as pg:
        replicas = [start_server(pg.url, {"chaos": CHAOS}, include_library="false")]
        replicas.append(start_server(pg.url, {"chaos": CHAOS}, include_library="false"))
        key = replicas[0].keys["trainer"]
        traffic, lock, stop = Traffic(), threading.Lock(), threading.Event()
        numbers = itertools.count()
        threads = [
            threading.Thread(
                target=trainer,
                args=([r.url for r in replicas], key, numbers, stop, traffic, lock),
            )
            for _ in range(TRAINERS)
        ]

        def restart(server: Server, sig: int) -> Callable[[], None]:
            def fault() -> None:
                server.kill(sig)
                server.start()  # back once /readyz says ready

            return fault

        def restart_postgres() -> None:
            pg.stop("fast")  # every session ended, as a restart does
            time.sleep(2.0)
            pg.start()

        def hold_lock() -> None:
            with held_lock(pg.url, "rewards"):
                time.sleep(5.0)

        faults = [
            ("kill -9 replica 0", restart(replicas[0], signal.SIGKILL)),
            ("SIGTERM replica 1", restart(replicas[1], signal.SIGTERM)),
            ("kill -9 replica 1", restart(replicas[1], signal.SIGKILL)),
            ("SIGTERM replica 0", restart(replicas[0], signal.SIGTERM)),
            ("PostgreSQL restarted", restart_postgres),
            ("lock held on rewards", hold_lock),
        ]
        durations: list[tuple[str, float]] = []
        try:
            for t in threads:
                t.start()
            time.sleep(CALM_S)
            for name, fault in faults:
                began = time.monotonic()
                fault()
                durations.append((name, time.monotonic() - began))
                time.sleep(CALM_S)
        finally:
            stop.set()
            for t in threads:
                t.join(timeout=300)
        engine = create_engine(pg.url)
        try:
            with engine.connect() as conn:
                logged_requests = {
                    r.idempotency_key: r.id
                    for r in conn.execute(
                        select(requests.c.idempotency_key, requests.c.id).where(
                            requests.c.idempotency_key.like("chaos-%")
                        )
                    )
                }
                rows = conn.execute(select(rewards.c.request_id, rewards.c.sample_id)).all()
        finally:
            engine.dispose()
        for server in replicas:
            server.kill()
    wall_s = time.monotonic() - started

    per_request = Counter(r.request_id for r in rows)
    per_sample = Counter(r.sample_id for r in rows if r.sample_id.startswith("b"))
    duplicates = sum(1 for n in per_sample.values() if n > 1)
    lost = [
        k
        for k, (request_id, answer) in traffic.acknowledged.items()
        if logged_requests.get(k) != request_id or per_request[request_id] != len(answer)
    ]
    expected = offline(traffic.samples)
    mismatches = sum(
        1
        for _, answer in traffic.acknowledged.values()
        for reward in answer
        if not same_reward(reward, expected[reward["id"]])
    )
    acknowledged_samples = sum(len(a) for _, a in traffic.acknowledged.values())
    print(
        f"\nchaos: {traffic.sent['batches']} batches, {acknowledged_samples} samples "
        f"acknowledged; faults: {len(durations)} "
        f"({', '.join(f'{n} {d:.1f} s' for n, d in durations)}); "
        f"acknowledged {len(traffic.acknowledged)}, logged {len(logged_requests)} "
        f"({sum(per_sample.values())} rewards), duplicates {duplicates}, "
        f"mismatches {mismatches}, failed calls {len(traffic.failed)}, "
        f"not logged as acknowledged {len(lost)}; attempts by outcome "
        f"{dict(sorted(traffic.attempts.items()))}; wall {wall_s:.0f} s"
    )
    assert traffic.failed == [], traffic.failed[:5]
    assert len(traffic.acknowledged) == traffic.sent["batches"]
    assert lost == []
    assert duplicates == 0
    assert mismatches == 0
    # Every logged batch is one the trainers sent (and, none failing, acknowledged).
    assert set(logged_requests) == set(traffic.acknowledged)
