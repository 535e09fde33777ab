"""Fixtures shared by every test package."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

POSTGRES_URL = os.environ.get(
    "ARBITER_TEST_POSTGRES_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/test"
)


@contextmanager
def postgres_schema() -> Iterator[str]:
    """Create a fresh schema in the PostgreSQL test database; drop it afterwards."""
    from sqlalchemy import create_engine, text

    schema = f"arbiter_test_{uuid.uuid4().hex[:12]}"
    admin = create_engine(POSTGRES_URL)
    try:
        with admin.begin() as conn:
            conn.execute(text(f'CREATE SCHEMA "{schema}"'))
    except Exception as e:  # any failure to reach it means "not here"
        pytest.skip(f"PostgreSQL not reachable at {POSTGRES_URL}: {type(e).__name__}")
    try:
        yield f"{POSTGRES_URL}?options=-csearch_path%3D{schema}"
    finally:
        with admin.begin() as conn:
            conn.execute(text(f'DROP SCHEMA "{schema}" CASCADE'))
        admin.dispose()


@pytest.fixture
def postgres_url() -> Iterator[str]:
    """A fresh schema in the PostgreSQL test database, dropped afterwards."""
    with postgres_schema() as url:
        yield url


@pytest.fixture(scope="module")
def module_postgres_url() -> Iterator[str]:
    """Like ``postgres_url``, shared by a module's tests (servers started once for them)."""
    with postgres_schema() as url:
        yield url
