"""Load and crash: nothing acknowledged is ever lost, nothing is logged twice, no 5xx."""

from __future__ import annotations

import asyncio
import signal
from collections import Counter

import httpx
import pytest
from sqlalchemy import func, select

from arbiter.store.db import Store
from arbiter.store.tables import rewards
from tests.api.conftest import Server, StartServer

CLIENTS = 64
TOTAL = 20_000
BATCH = 50
#: Bounds on the whole load: a stalled server fails the test instead of hanging it.
LOAD_TIMEOUT_S = 600


def batch_payload(batch_no: int) -> dict[str, object]:
    samples = [
        {
            "id": f"b{batch_no}-s{i}",
            "group_id": f"b{batch_no}-g{i // 10}",
            "prompt": "p" * 200,
            "response": "r" * 1000,
            "metrics": {"turns": (batch_no + i) % 13, "completion_tokens": 100 * i},
        }
        for i in range(BATCH)
    ]
    return {"rubric": "efficiency-only", "samples": samples}


async def drive(
    server: Server,
    batches: list[int],
    acknowledged: dict[int, bytes],
    statuses: Counter[int],
    stop_on_error: bool,
    acknowledged_enough: tuple[int, asyncio.Event] | None = None,
) -> None:
    """Send each batch once (retrying 429 as the client would); record what was acknowledged.

    ``acknowledged_enough`` (n, event): the event is set once n batches are acknowledged.
    """
    queue: asyncio.Queue[int] = asyncio.Queue()
    for b in batches:
        queue.put_nowait(b)
    limits = httpx.Limits(max_connections=CLIENTS)
    headers = {"Authorization": f"Bearer {server.keys['trainer']}"}
    async with httpx.AsyncClient(
        base_url=server.url, headers=headers, timeout=120, limits=limits
    ) as http:

        async def worker() -> None:
            while not queue.empty():
                b = queue.get_nowait()
                while True:
                    try:
                        response = await http.post(
                            "/v1/rewards",
                            json=batch_payload(b),
                            headers={"Idempotency-Key": f"load-{b}"},
                        )
                    except httpx.TransportError:
                        if stop_on_error:
                            return
                        raise
                    statuses[response.status_code] += 1
                    if response.status_code == 429:
                        await asyncio.sleep(float(response.headers.get("retry-after", "1")) / 10)
                        continue
                    if response.status_code == 200:
                        acknowledged[b] = response.content
                        if acknowledged_enough and len(acknowledged) >= acknowledged_enough[0]:
                            acknowledged_enough[1].set()
                    break

        await asyncio.gather(*(worker() for _ in range(CLIENTS)))


@pytest.mark.slow
def test_64_clients_20000_samples_none_lost_none_duplicated_no_5xx(
    start_server: StartServer,
) -> None:
    server = start_server(per_key_max_inflight_requests="64")
    acknowledged: dict[int, bytes] = {}
    statuses: Counter[int] = Counter()

    async def load() -> None:
        async with asyncio.timeout(LOAD_TIMEOUT_S):
            await drive(
                server, list(range(TOTAL // BATCH)), acknowledged, statuses, stop_on_error=False
            )

    asyncio.run(load())
    assert not [s for s in statuses if s >= 500], statuses
    assert len(acknowledged) == TOTAL // BATCH
    store = Store(server.db_url)
    with store.engine.connect() as conn:
        logged = conn.execute(select(func.count()).select_from(rewards)).scalar_one()
        distinct = conn.execute(select(func.count(func.distinct(rewards.c.sample_id)))).scalar_one()
    assert logged == TOTAL and distinct == TOTAL
    for b, body in list(acknowledged.items())[:5]:
        ids = [r["id"] for r in httpx.Response(200, content=body).json()["rewards"]]
        assert ids == [f"b{b}-s{i}" for i in range(BATCH)]


@pytest.mark.slow
def test_kill_9_mid_load_loses_nothing_acknowledged(start_server: StartServer) -> None:
    server = start_server(per_key_max_inflight_requests="64")
    acknowledged: dict[int, bytes] = {}
    statuses: Counter[int] = Counter()
    batches = list(range(TOTAL // BATCH))

    async def load_then_kill() -> None:
        enough = asyncio.Event()
        load = asyncio.create_task(
            drive(
                server,
                batches,
                acknowledged,
                statuses,
                stop_on_error=True,
                acknowledged_enough=(60, enough),
            )
        )
        async with asyncio.timeout(LOAD_TIMEOUT_S):
            waiting = asyncio.create_task(enough.wait())
            await asyncio.wait({load, waiting}, return_when=asyncio.FIRST_COMPLETED)
            waiting.cancel()
            # A load that ended before 60 acknowledgements (an error) fails here.
            assert enough.is_set(), (load.exception() if load.done() else None, statuses)
            assert server.process is not None
            server.process.send_signal(signal.SIGKILL)  # mid-load, no warning
            await load

    asyncio.run(load_then_kill())
    server.kill()
    assert 60 <= len(acknowledged) < len(batches)
    assert not [s for s in statuses if s >= 500], statuses

    server.start()  # same database, fresh process
    store = Store(server.db_url)
    for b, body in acknowledged.items():
        request_id = httpx.Response(200, content=body).json()["request_id"]
        with store.engine.connect() as conn:
            count = conn.execute(
                select(func.count()).select_from(rewards).where(rewards.c.request_id == request_id)
            ).scalar_one()
        assert count == BATCH, f"batch {b}: {count} of {BATCH} rewards in the store"
    with server.client() as http:
        for b, body in acknowledged.items():
            again = http.post(
                "/v1/rewards", json=batch_payload(b), headers={"Idempotency-Key": f"load-{b}"}
            )
            assert again.status_code == 200 and again.headers["idempotent-replayed"] == "true"
            assert again.content == body


@pytest.mark.postgres
def test_service_on_postgresql(start_server: StartServer, postgres_url: str) -> None:
    server = start_server(database_url=postgres_url)
    payload = batch_payload(0)
    with server.client() as http:
        first = http.post("/v1/rewards", json=payload, headers={"Idempotency-Key": "pg-1"})
        again = http.post("/v1/rewards", json=payload, headers={"Idempotency-Key": "pg-1"})
        ready = http.get("/readyz").json()
    assert first.status_code == 200 and again.content == first.content
    assert ready["checks"]["store"] == "ok"
    assert Store(postgres_url).count_rewards() == BATCH
    server.kill(signal.SIGTERM)  # before its schema is dropped
