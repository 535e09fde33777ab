"""A sandbox pool and a unit-test grader shared by the language tests."""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from typing import Any

import pytest

from arbiter.graders.languages import language
from arbiter.graders.sandbox import PoolConfig, SandboxPool
from arbiter.graders.unit_tests import UnitTestsGrader
from tests.strictness import unavailable


@pytest.fixture(scope="session")
def language_pool() -> Iterator[SandboxPool]:
    pool = SandboxPool(PoolConfig(slots=2))
    pool.start()
    yield pool
    pool.close()


@pytest.fixture(scope="session")
def language_grader(language_pool: SandboxPool) -> Iterator[UnitTestsGrader]:
    grader = UnitTestsGrader(language_pool)
    yield grader
    grader.close()


def require_toolchain(grader: UnitTestsGrader, name: str) -> None:
    """Skip (fail in a strict run) when this host lacks the language's toolchain."""
    if grader.programs.toolchain(name) is None:
        tools = ", ".join(language(name).tools)
        unavailable(f"no {name} toolchain on this host ({tools}; `make tools` installs it)")


def attacks(module: str) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = importlib.import_module(
        f"tests.graders.languages.attacks_{module}"
    ).ATTACKS
    return found
