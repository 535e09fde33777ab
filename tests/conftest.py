"""Fixtures shared by every test package, strict runs, the test order (slow modules first)."""

from __future__ import annotations

import importlib.util
import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from tests.strictness import StrictRun, strict, unavailable

#: tests/trainers run in the trainers' client-only environment, where the server is not
#: installed (``make test`` runs them there); the development environment leaves them out.
collect_ignore = [] if importlib.util.find_spec("fastapi") is None else ["trainers"]

POSTGRES_URL = os.environ.get(
    "ARBITER_TEST_POSTGRES_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/test"
)


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--reverse-order",
        action="store_true",
        help="run the collected tests last to first (tests must not depend on their order)",
    )


def pytest_configure(config: pytest.Config) -> None:
    if strict():
        config.pluginmanager.register(StrictRun(), "arbiter-strict")


#: Modules ``make test`` hands out a part at a time, by the first part of each test's id
#: (``test_x[cpp-row12]``: ``cpp``). The languages' shared tests are a module of several
#: minutes, which as one unit held a worker for the whole run; its languages share
#: nothing module-scoped.
SPLIT_BY_FIRST_ID = frozenset({"tests/graders/languages/test_every_language.py"})


def worker_unit(nodeid: str) -> str:
    """What ``make test`` hands one worker whole: the test's module, or a part of it."""
    module, _, rest = nodeid.partition("::")
    if module in SPLIT_BY_FIRST_ID and "[" in rest:
        return f"{module}[{rest.partition('[')[2].rstrip(']').split('-')[0]}]"
    return module


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object:
    """``--dist loadfile``, with a unit per :func:`worker_unit` instead of per file."""
    if config.getvalue("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    class UnitScheduling(LoadFileScheduling):  # type: ignore[misc]
        def _split_scope(self, nodeid: str) -> str:
            return worker_unit(nodeid)

    return UnitScheduling(config, log)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # The costliest units first (a module, see worker_unit), each kept whole and in its
    # order: ``make test`` hands a unit at a time to each worker in this order
    # (``--no-loadscope-reorder``, or xdist orders them by their number of tests
    # instead), and a module of minutes (the container recipe's install) handed out last
    # ran alone at the end while the other workers sat idle. A unit's cost is its
    # measured seconds (tests/unit_seconds.json), else its ``slow(seconds=N)`` marks'.
    from tests.unit_seconds import read

    measured = read()
    cost: dict[str, float] = {}
    for item in items:
        unit = worker_unit(item.nodeid)
        marker = item.get_closest_marker("slow")
        marked = float(marker.kwargs.get("seconds", 10)) if marker is not None else 0.0
        cost[unit] = measured.get(unit, max(cost.get(unit, 0.0), marked))
    items.sort(key=lambda item: -cost[worker_unit(item.nodeid)])
    if config.getoption("--reverse-order"):
        items.reverse()


#: Documentation examples run this session (tests/docs/test_examples.py records each
#: page's count as a property, which reaches the controller under pytest-xdist too).
_documentation_examples: list[int] = []


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if report.when == "call":
        _documentation_examples.extend(
            int(value) for name, value in report.user_properties if name == "documentation_examples"
        )


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if _documentation_examples:
        terminalreporter.write_line(
            f"documentation examples run: {sum(_documentation_examples)} "
            f"(from {len(_documentation_examples)} pages)"
        )


@contextmanager
def postgres_schema() -> Iterator[str]:
    """Create a fresh schema in the PostgreSQL test database; drop it afterwards."""
    from sqlalchemy import create_engine, text
    from sqlalchemy.exc import OperationalError

    schema = f"arbiter_test_{uuid.uuid4().hex[:12]}"
    admin = create_engine(POSTGRES_URL)
    try:
        with admin.begin() as conn:
            conn.execute(text(f'CREATE SCHEMA "{schema}"'))
    except OperationalError as e:  # cannot connect: a prerequisite, not a product failure
        admin.dispose()
        unavailable(f"PostgreSQL not reachable at {POSTGRES_URL}: {e.orig!r}")
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
