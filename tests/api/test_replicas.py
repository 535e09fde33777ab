"""Two `arbiter serve` replicas on one PostgreSQL: drift, review sampling and idempotency hold.

Each test starts real uvicorn processes on one schema of the PostgreSQL test
database and spreads its traffic over them, as a load balancer would.
"""

from __future__ import annotations

import math
import random
import re
import threading
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import create_engine, func, select

from arbiter.client import ArbiterClient, RewardBatch
from arbiter.store.tables import drift_alerts, requests, review_items, rewards
from tests.api.conftest import Server, StartServer
from tests.api.test_drift_api import DRIFTY, batch

pytestmark = pytest.mark.postgres

#: Poll the reward log and the open alerts often: the tests send batches back to back.
FAST = {"drift_poll_interval_s": "0.05"}


def wait_for_rubrics(server: Server, *names: str) -> None:
    deadline = time.monotonic() + 20
    with server.client() as http:
        while not set(names) <= {r["name"] for r in http.get("/v1/rubrics").json()}:
            assert time.monotonic() < deadline, f"rubrics {names} were never loaded"
            time.sleep(0.05)


def leading(server: Server) -> bool:
    with server.client() as http:
        metrics = http.get("/metrics").text
    return "arbiter_drift_monitor_leader 1.0" in metrics


def wait_until_the_monitor_has_read_the_log(pair: Pair) -> None:
    """Wait until the leader has read every logged reward (so every alert it will open is open)."""
    engine = create_engine(pair.db_url)
    try:
        with engine.connect() as conn:
            newest = conn.execute(select(func.max(rewards.c.id))).scalar_one()
    finally:
        engine.dispose()
    deadline = time.monotonic() + 30
    while True:
        positions = []
        for server in pair.servers:
            with server.client() as http:
                text = http.get("/metrics").text
            match = re.search(r"^arbiter_drift_monitor_log_position (\S+)$", text, re.M)
            assert match, "no arbiter_drift_monitor_log_position in /metrics"
            positions.append(float(match.group(1)))
        if max(positions) >= newest:
            return
        assert time.monotonic() < deadline, f"monitor read to {positions}, log to {newest}"
        time.sleep(0.05)


def failover_batch(rng: random.Random, start: int, mean_turns: float) -> dict[str, object]:
    return {**batch(rng, start, mean_turns), "rubric": "failover"}


SAMPLED = """\
name: sampled
version: 1
components:
  short: {grader: efficiency, weight: 0.5, config: {max_turns: 10}}
  long: {grader: efficiency, weight: 0.5, config: {max_turns: 40}}
review: {sample_rate: 0.05, stratify_by: [disagreement]}
drift: {enabled: false}
"""
UNIFORM_P, DISAGREEMENT_P = 0.05, 0.5  # disagreement samples at ten times the rate


def counted(path: Path) -> str:
    return f"""\
name: counted
version: 1
components:
  count: {{grader: counting, weight: 0.5, config: {{path: "{path}"}}}}
  nap: {{grader: sleepy, weight: 0.5, config: {{delay_s: 1.0}}}}
"""


@dataclass
class Pair:
    servers: list[Server]
    db_url: str
    graded: Path  # the counting grader's log


@pytest.fixture(scope="module")
def pair(module_postgres_url: str, start_server: StartServer, tmp_path_factory) -> Pair:
    """Two replicas on one schema, each with the same rubric files (schema dropped last)."""
    graded = tmp_path_factory.mktemp("counted") / "graded.txt"
    rubrics = {
        "drifty": DRIFTY,
        "failover": DRIFTY.replace("name: drifty", "name: failover"),
        "sampled": SAMPLED,
        "counted": counted(graded),
    }
    servers = [start_server(database_url=module_postgres_url, **FAST) for _ in range(2)]
    for server in servers:
        for name, text in rubrics.items():
            (server.rubric_dir / f"{name}.yaml").write_text(text)
        wait_for_rubrics(server, *rubrics)
    return Pair(servers, module_postgres_url, graded)


def drift_flags(response: httpx.Response) -> set[str]:
    assert response.status_code == 200, response.text
    return {f for r in response.json()["rewards"] for f in r["flags"] if f.startswith("drift:")}


def alert_rows(url: str) -> list[Any]:
    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            return list(conn.execute(select(drift_alerts).order_by(drift_alerts.c.window)))
    finally:
        engine.dispose()


def test_one_monitor_over_both_replicas_opens_one_alert_seen_by_both(
    start_server: StartServer, pair: Pair
) -> None:
    # A single replica (the embedded store, its monitor in-process) on the same
    # traffic: how many windows it needs, and which alert it opens first.
    single = start_server()
    (single.rubric_dir / "drifty.yaml").write_text(DRIFTY)
    wait_for_rubrics(single, "drifty")
    rng = random.Random(7)
    with single.client() as http:
        for b in range(15):
            assert not drift_flags(http.post("/v1/rewards", json=batch(rng, 20 * b, 20.0)))
        for b in range(15, 60):
            if drift_flags(http.post("/v1/rewards", json=batch(rng, 20 * b, 8.0))):
                break
        else:
            raise AssertionError("a single replica never flagged a 4-sd shift")
        first_single = http.get("/v1/drift/alerts").json()
    single.kill()
    assert first_single
    needed = min(a["window"] for a in first_single)

    # The same traffic, one batch to each replica in turn.
    clients = [s.client() for s in pair.servers]
    rng = random.Random(7)
    try:
        for b in range(15):
            assert not drift_flags(
                clients[b % 2].post("/v1/rewards", json=batch(rng, 20 * b, 20.0))
            )
        seen: set[int] = set()
        b = 15
        # The flag reaches a replica within a poll of the batch that opened the
        # alert; keep the shifted traffic coming until both have shown it.
        deadline = time.monotonic() + 60
        while len(seen) < 2:
            assert time.monotonic() < deadline, f"flag shown by replicas {seen} only"
            if drift_flags(clients[b % 2].post("/v1/rewards", json=batch(rng, 20 * b, 8.0))):
                seen.add(b % 2)
            b += 1
        # The leader may still be reading the last batches: alerts they open
        # would reach one listing and not the other.
        wait_until_the_monitor_has_read_the_log(pair)
        listed = [
            c.get("/v1/drift/alerts", params={"open_only": True, "rubric": "drifty"}).json()
            for c in clients
        ]
    finally:
        for c in clients:
            c.close()

    rows = [r for r in alert_rows(pair.db_url) if r.rubric_name == "drifty"]
    copies = Counter((r.component, r.grader_version, r.detector) for r in rows)
    assert copies and max(copies.values()) == 1, f"an alert was opened more than once: {copies}"
    first = rows[0]
    assert first.window <= needed, f"two replicas needed window {first.window}, one {needed}"
    # The same monitor on the same traffic: the single replica's first alert, once.
    assert first.id in {a["key"] for a in first_single}
    assert [a["id"] for a in listed[0]] == [a["id"] for a in listed[1]]
    assert first.id in {a["key"] for a in listed[0]}


def test_review_sampling_over_both_replicas_holds_its_rate(pair: Pair) -> None:
    clients = [s.client() for s in pair.servers]
    rng = random.Random(3)
    probability: dict[str, float] = {}
    replica_of: dict[str, int] = {}
    try:
        for b in range(40):
            samples = [
                {
                    "id": f"r{b}-{i}",
                    "response": "done",
                    "metrics": {"turns": rng.randint(0, 30)},
                }
                for i in range(50)
            ]
            response = clients[b % 2].post(
                "/v1/rewards", json={"rubric": "sampled", "samples": samples}
            )
            assert response.status_code == 200, response.text
            for reward in response.json()["rewards"]:
                scores = [c["score"] for c in reward["components"].values()]
                spread = max(scores) - min(scores)
                probability[reward["id"]] = DISAGREEMENT_P if spread >= 0.5 else UNIFORM_P
                replica_of[reward["id"]] = b % 2
    finally:
        for c in clients:
            c.close()

    engine = create_engine(pair.db_url)
    try:
        with engine.connect() as conn:
            items = list(
                conn.execute(select(review_items).where(review_items.c.rubric_name == "sampled"))
            )
    finally:
        engine.dispose()
    n = len(probability)
    assert n == 2000
    assert len({i.sample_id for i in items}) == len(items), "a sample was queued twice"
    # Each item records the probability its stratum gives it, whichever replica graded it.
    for item in items:
        assert item.inclusion_probability == pytest.approx(probability[item.sample_id])
    assert {replica_of[i.sample_id] for i in items} == {0, 1}
    # The number sampled and the Horvitz-Thompson estimate of the traffic, each
    # within its 99.9% interval (normal approximation; hundreds of draws).
    expected = sum(probability.values())
    sd = math.sqrt(sum(p * (1 - p) for p in probability.values()))
    assert abs(len(items) - expected) <= 3.29 * sd, (len(items), expected, sd)
    estimate = sum(1 / i.inclusion_probability for i in items)
    sd_ht = math.sqrt(sum((1 - p) / p for p in probability.values()))
    assert abs(estimate - n) <= 3.29 * sd_ht, (estimate, n, sd_ht)


def test_one_idempotency_key_sent_to_both_replicas_at_once_grades_once(pair: Pair) -> None:
    servers = pair.servers
    key = servers[0].keys["trainer"]  # one trainer, whichever replica it reaches
    samples = [{"id": f"k{i}", "response": "r"} for i in range(4)]
    start = threading.Barrier(2)
    answers: list[RewardBatch | None] = [None, None]

    def send(i: int) -> None:
        # The loser is answered 409 idempotency_key_in_flight at once; the client
        # retries (same key) and replays the winner's stored response.
        with ArbiterClient(servers[i].url, key) as client:
            start.wait()
            answers[i] = client.rewards(samples, "counted", idempotency_key="step-9-batch-0")

    threads = [threading.Thread(target=send, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(a is not None for a in answers), answers
    first, second = (a for a in answers if a is not None)
    # The loser replays the winner's stored response.
    assert (first.request_id, first.rewards) == (second.request_id, second.rewards)
    assert sorted(a.replayed for a in answers if a is not None) == [False, True]
    assert sorted(pair.graded.read_text().split()) == [
        "k0",
        "k1",
        "k2",
        "k3",
    ]  # each sample graded once
    engine = create_engine(pair.db_url)
    try:
        with engine.connect() as conn:
            stored = conn.execute(
                select(func.count())
                .select_from(requests)
                .where(requests.c.idempotency_key == "step-9-batch-0")
            ).scalar_one()
    finally:
        engine.dispose()
    assert stored == 1


def test_when_the_leader_dies_the_other_replica_takes_the_monitor_over(pair: Pair) -> None:
    rng = random.Random(11)
    for b in range(15):
        with pair.servers[b % 2].client() as http:
            assert not drift_flags(http.post("/v1/rewards", json=failover_batch(rng, 20 * b, 20.0)))
    deadline = time.monotonic() + 30
    while sum(leading(s) for s in pair.servers) != 1:
        assert time.monotonic() < deadline, "no replica took the drift monitor's lock"
        time.sleep(0.05)
    leader = next(i for i, s in enumerate(pair.servers) if leading(s))
    survivor = pair.servers[1 - leader]
    pair.servers[leader].kill()  # SIGKILL: nothing saved on the way out
    try:
        b = 15
        flagged = False
        with survivor.client() as http:
            deadline = time.monotonic() + 60
            while not flagged:
                assert time.monotonic() < deadline, "the shift was never flagged after failover"
                flagged = bool(
                    drift_flags(http.post("/v1/rewards", json=failover_batch(rng, 20 * b, 8.0)))
                )
                b += 1
        assert leading(survivor)
    finally:
        pair.servers[leader].start()  # the pair is whole again for the other tests
    with pair.servers[leader].client() as http:
        deadline = time.monotonic() + 30
        while not drift_flags(http.post("/v1/rewards", json=failover_batch(rng, 20 * b, 8.0))):
            assert time.monotonic() < deadline, "the restarted replica never showed the flag"
            b += 1
    rows = [r for r in alert_rows(pair.db_url) if r.rubric_name == "failover"]
    copies = Counter((r.component, r.grader_version, r.detector) for r in rows)
    assert copies and max(copies.values()) == 1, f"an alert was opened more than once: {copies}"
