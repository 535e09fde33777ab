"""The store the tests here run on (SQLite, and PostgreSQL where it runs), and requests to log."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from arbiter.store.db import RewardRow, Store


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def store_url(request: pytest.FixtureRequest, tmp_path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'store.db'}"
    return str(request.getfixturevalue("postgres_url"))


@pytest.fixture
def store(store_url: str) -> Iterator[Store]:
    store = Store(store_url)
    store.migrate()
    store.migrate()  # idempotent: a second start finds the schema current
    yield store
    store.close()


def reward_rows(n: int) -> list[RewardRow]:
    """``n`` rows in order: the first unscored, sample ``s{i}`` answering with ``i + 1`` bytes."""
    return [
        RewardRow(
            position=i,
            sample_id=f"s{i}",
            group_id="g",
            reward=None if i == 0 else i / 10,
            raw_reward=None if i == 0 else i / 10,
            record=f'{{"id": "s{i}"}}',
            sample=json.dumps({"id": f"s{i}", "response": "x" * (i + 1)}),
            sample_sha256="0" * 64,
            latency_s=0.001,
        )
        for i in range(n)
    ]


#: The rubric every logged request here was graded under.
RUBRIC_SHA256 = "a" * 64


def log_request(
    store: Store, request_id: str, n: int = 3, key: str | None = None, *, client: str = "c1"
) -> None:
    """Log one request of ``n`` rewards, under idempotency ``key`` if given."""
    store.record_request(
        request_id=request_id,
        client=client,
        idempotency_key=key,
        endpoint="rewards",
        rubric_name="r",
        rubric_version=1,
        rubric_sha256=RUBRIC_SHA256,
        envelope='{"request_id": "x"}',
        rows=reward_rows(n),
    )
