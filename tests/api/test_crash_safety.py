"""Crash safety (issue 24): faults of a replica or of the store, and what a client sees.

No 500 for a logged batch, no key held by a dead replica, a client that rides
out a restart, and a lock held on PostgreSQL answered at once.

Real ``arbiter serve`` processes, loopback only, the real PostgreSQL test
database. The one fault no real component makes on demand, a connection that
drops after PostgreSQL committed and before the replica hears it, is made by a
real TCP relay in front of PostgreSQL (``tests/api/store_faults.py``), not by a
mock of the store.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import httpx
import pytest
from sqlalchemy import create_engine, delete, func, make_url, select, update

from arbiter.client import ArbiterClient
from arbiter.store.tables import idempotency_claims, requests, rewards
from tests.api.conftest import Server, StartServer
from tests.api.store_faults import CuttingProxy, held_lock, proxied_url

#: Rubrics of cheap graders only, with the library left out: a replica starts in
#: the time its imports take, so restarts are quick.
QUICK = {"include_library": "false"}
EFFICIENCY = """\
name: eff
version: 1
components:
  eff: {grader: efficiency, config: {max_turns: 10}}
"""
NAPPING = """\
name: napping
version: 1
components:
  eff: {grader: efficiency, weight: 0.5, config: {max_turns: 10}}
  nap: {grader: sleepy, weight: 0.5, config: {delay_s: 3.0}}
"""


def samples(prefix: str, n: int) -> list[dict[str, Any]]:
    return [
        {"id": f"{prefix}{i}", "group_id": "g", "response": "r", "metrics": {"turns": i % 10}}
        for i in range(n)
    ]


def logged(db_url: str, key: str) -> list[tuple[str, int]]:
    """Return each request logged under ``key`` with its number of reward rows."""
    engine = create_engine(db_url)
    try:
        with engine.connect() as conn:
            rows = conn.execute(
                select(requests.c.id, func.count(rewards.c.id))
                .join(rewards, rewards.c.request_id == requests.c.id, isouter=True)
                .where(requests.c.idempotency_key == key)
                .group_by(requests.c.id)
            ).all()
    finally:
        engine.dispose()
    return [(r[0], int(r[1])) for r in rows]


def wait_ready(http: httpx.Client, ready: bool, timeout_s: float = 60) -> httpx.Response:
    deadline = time.monotonic() + timeout_s
    while True:
        response = http.get("/readyz")
        if (response.status_code == 200) == ready:
            return response
        assert time.monotonic() < deadline, response.text
        time.sleep(0.1)


def stop_all(*servers: Server) -> None:
    for server in servers:
        server.kill()  # before their schema is dropped


@pytest.mark.postgres
def test_a_replica_killed_after_claiming_a_key_leaves_it_to_the_other_within_30_s(
    start_server: StartServer, postgres_url: str
) -> None:
    a, b = (start_server(postgres_url, {"napping": NAPPING}, **QUICK) for _ in range(2))
    try:
        batch = samples("k", 5)
        key = "step-3-batch-1"
        body = {"rubric": "napping", "samples": batch}
        first: list[BaseException | httpx.Response] = []

        def send_to_a() -> None:
            try:
                with a.client() as http:
                    first.append(
                        http.post("/v1/rewards", json=body, headers={"Idempotency-Key": key})
                    )
            except httpx.TransportError as e:  # a is killed under it
                first.append(e)

        sender = threading.Thread(target=send_to_a)
        sender.start()
        # a has claimed the key and is grading (the nap takes 3 s).
        engine = create_engine(postgres_url)
        try:
            deadline = time.monotonic() + 30
            while True:
                with engine.connect() as conn:
                    owner = conn.execute(
                        select(idempotency_claims.c.owner).where(
                            idempotency_claims.c.idempotency_key == key
                        )
                    ).scalar()
                if owner is not None:
                    break
                assert time.monotonic() < deadline, "a never claimed the key"
                time.sleep(0.02)
        finally:
            engine.dispose()
        # A live duplicate, from the same trainer on the other replica: 409 at once.
        with httpx.Client(base_url=b.url, timeout=60) as http:
            duplicate = http.post(
                "/v1/rewards",
                json=body,
                headers={"Authorization": f"Bearer {a.keys['trainer']}", "Idempotency-Key": key},
            )
        assert duplicate.status_code == 409, duplicate.text
        assert duplicate.json()["code"] == "idempotency_key_in_flight"
        assert int(duplicate.headers["Retry-After"]) >= 1
        a.kill()
        sender.join(timeout=30)
        assert first and isinstance(first[0], httpx.TransportError), first
        assert logged(postgres_url, key) == []  # killed before it logged

        started = time.monotonic()
        # The same trainer (a key is claimed per API key), now reaching the other replica.
        with ArbiterClient(b.url, a.keys["trainer"]) as client:  # its defaults
            answer = client.rewards(batch, "napping", idempotency_key=key)
        elapsed = time.monotonic() - started
        print(f"\nclaimed by {owner}, killed; acknowledged by the other replica in {elapsed:.1f} s")
        assert elapsed < 30
        assert [r.id for r in answer.rewards] == [s["id"] for s in batch]
        assert logged(postgres_url, key) == [(answer.request_id, len(batch))]  # exactly once
    finally:
        stop_all(a, b)


@pytest.mark.postgres
def test_the_store_dropping_the_connection_while_logging_answers_503_and_the_retry_replays(
    start_server: StartServer, postgres_url: str
) -> None:
    upstream = make_url(postgres_url)
    proxy = CuttingProxy(upstream.host or "127.0.0.1", upstream.port or 5432)
    server = start_server(proxied_url(postgres_url, proxy.port), {"eff": EFFICIENCY}, **QUICK)
    try:
        batch = samples("c", 38)
        key = "step-8-batch-2"
        with server.client() as http:
            warm = http.post("/v1/rewards", json={"rubric": "eff", "samples": samples("w", 2)})
            assert warm.status_code == 200, warm.text
            # PostgreSQL commits the batch; the replica's connection drops before it
            # hears so, and the store stays away for 2 s (the claim's release fails too).
            proxy.arm(outage_s=2.0)
            response = http.post(
                "/v1/rewards",
                json={"rubric": "eff", "samples": batch},
                headers={"Idempotency-Key": key},
            )
        assert proxy.cuts == 1
        assert response.status_code == 503, response.text
        assert response.json()["code"] == "store_unavailable"
        assert int(response.headers["Retry-After"]) >= 1
        # The commit had gone through: the batch is logged, not acknowledged.
        ((request_id, n),) = logged(postgres_url, key)
        assert n == len(batch)

        with ArbiterClient(server.url, server.keys["trainer"]) as client:  # its defaults
            again = client.rewards(batch, "eff", idempotency_key=key)
        assert again.replayed and again.request_id == request_id
        assert [r.id for r in again.rewards] == [s["id"] for s in batch]
        assert logged(postgres_url, key) == [(request_id, len(batch))]  # once, never twice
        print(f"\n503 for the ambiguous commit; the retry replayed request {request_id}")
    finally:
        stop_all(server)
        proxy.close()


def test_the_client_with_its_defaults_completes_a_call_while_its_only_replica_restarts(
    start_server: StartServer,
) -> None:
    server = start_server(None, {"eff": EFFICIENCY}, **QUICK)
    try:
        batch = samples("r", 16)
        outcome: list[Any] = []

        def call() -> None:
            try:
                with ArbiterClient(server.url, server.keys["trainer"]) as client:  # its defaults
                    outcome.append(client.rewards(batch, "eff", idempotency_key="restart-1"))
            except Exception as e:  # asserted on below
                outcome.append(e)

        server.kill()  # kill -9: the replica is gone mid-run
        down_at = time.monotonic()
        caller = threading.Thread(target=call)
        caller.start()
        time.sleep(12.0)
        assert caller.is_alive(), f"the call ended while the replica was down: {outcome}"
        server.start()  # returns once /readyz says ready
        down_s = time.monotonic() - down_at
        caller.join(timeout=120)
        print(f"\nthe replica was down {down_s:.1f} s; the call completed")
        assert down_s >= 12.0
        assert len(outcome) == 1 and not isinstance(outcome[0], Exception), outcome
        assert [r.id for r in outcome[0].rewards] == [s["id"] for s in batch]
        assert len(logged(server.db_url, "restart-1")) == 1
    finally:
        stop_all(server)


@pytest.mark.postgres
def test_a_lock_held_on_the_rewards_table_answers_503_within_3_s_and_readyz_says_so(
    start_server: StartServer, postgres_url: str
) -> None:
    server = start_server(postgres_url, {"eff": EFFICIENCY}, **QUICK)
    try:
        body = {"rubric": "eff", "samples": samples("l", 8)}
        with server.client() as http:
            assert http.post("/v1/rewards", json=body).status_code == 200
            with held_lock(postgres_url, "rewards"):
                started = time.monotonic()
                response = http.post("/v1/rewards", json=body)
                answered_s = time.monotonic() - started
                started = time.monotonic()
                ready = http.get("/readyz")
                ready_s = time.monotonic() - started
            print(f"\nlocked: 503 after {answered_s:.2f} s; /readyz answered in {ready_s:.2f} s")
            assert response.status_code == 503, response.text
            assert response.json()["code"] == "store_unavailable"
            assert "Retry-After" in response.headers
            assert answered_s < 3.0
            assert ready.status_code == 503
            assert ready.json()["checks"]["store"].startswith("writes failing"), ready.text
            wait_ready(http, ready=True)  # the lock is gone: ready again, and writing
            assert http.post("/v1/rewards", json=body).status_code == 200
    finally:
        stop_all(server)


@pytest.mark.postgres
def test_store_errors_while_claiming_or_releasing_a_key_answer_503_never_500(
    start_server: StartServer, postgres_url: str
) -> None:
    server = start_server(postgres_url, {"napping": NAPPING}, **QUICK)
    try:
        batch = samples("e", 4)
        body = {"rubric": "napping", "samples": batch}
        with server.client("reviewer") as http, held_lock(postgres_url, "review_items"):
            # Any other route that reads the store: 503 too, not a crash.
            stats = http.get("/v1/review/queue")
        assert stats.status_code == 503, stats.text
        assert stats.json()["code"] == "store_unavailable"
        with server.client() as http:
            # Claiming: the claims table is locked by another session.
            with held_lock(postgres_url, "idempotency_claims"):
                refused = http.post("/v1/rewards", json=body, headers={"Idempotency-Key": "k1"})
            assert refused.status_code == 503, refused.text
            assert refused.json()["code"] == "store_unavailable"
            assert "Retry-After" in refused.headers

            # Logging and releasing: once the key is claimed and graded, both the
            # rewards and the claims are locked, so the log fails and so does the
            # release of the claim after it.
            answer: list[httpx.Response] = []
            sender = threading.Thread(
                target=lambda: answer.append(
                    http.post("/v1/rewards", json=body, headers={"Idempotency-Key": "k2"})
                )
            )
            sender.start()
            engine = create_engine(postgres_url)
            try:
                deadline = time.monotonic() + 30
                while True:
                    with engine.connect() as conn:
                        claimed = conn.execute(
                            select(func.count())
                            .select_from(idempotency_claims)
                            .where(idempotency_claims.c.idempotency_key == "k2")
                        ).scalar_one()
                    if claimed:
                        break
                    assert time.monotonic() < deadline, "the key was never claimed"
                    time.sleep(0.02)
            finally:
                engine.dispose()
            with held_lock(postgres_url, "rewards, idempotency_claims"):
                sender.join(timeout=60)
        assert answer and answer[0].status_code == 503, answer
        assert answer[0].json()["code"] == "store_unavailable"
        assert logged(postgres_url, "k2") == []
        # The claim the replica could not drop is no obstacle to the retry, which
        # grades the batch once.
        with ArbiterClient(server.url, server.keys["trainer"]) as client:  # its defaults
            again = client.rewards(batch, "napping", idempotency_key="k2")
        assert not again.replayed
        assert logged(postgres_url, "k2") == [(again.request_id, len(batch))]
        assert "could not release an idempotency claim" in server.log.read_text()
    finally:
        stop_all(server)


@pytest.mark.parametrize("damage", ["a record that does not parse", "a lost row"])
def test_a_logged_batch_that_no_longer_reads_back_is_ours_and_never_graded_twice(
    start_server: StartServer, damage: str
) -> None:
    server = start_server(None, {"eff": EFFICIENCY}, **QUICK)
    try:
        batch, key = samples("u", 4), f"unreadable-{damage[:6]}"
        body = {"rubric": "eff", "samples": batch}
        with server.client() as http:
            first = http.post("/v1/rewards", json=body, headers={"Idempotency-Key": key})
            assert first.status_code == 200, first.text
            ((request_id, n),) = logged(server.db_url, key)
            engine = create_engine(server.db_url)
            with engine.begin() as conn:
                last = select(func.max(rewards.c.id)).where(rewards.c.request_id == request_id)
                row = conn.execute(last).scalar_one()
                if damage == "a lost row":
                    conn.execute(delete(rewards).where(rewards.c.id == row))
                else:
                    conn.execute(update(rewards).where(rewards.c.id == row).values(record="{"))
            engine.dispose()
            again = http.post("/v1/rewards", json=body, headers={"Idempotency-Key": key})
        # Typed as ours (not a 500, not a malformed body, not another batch) ...
        assert again.status_code == 503, again.text
        assert again.json()["code"] == "stored_batch_unreadable", again.text
        assert request_id in again.json()["message"]
        # ... and never graded again under the key: one logged request, as damaged.
        assert logged(server.db_url, key) == [(request_id, n - (damage == "a lost row"))]
    finally:
        stop_all(server)
