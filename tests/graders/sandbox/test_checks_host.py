"""The checks workers' host: which idle worker a grading takes."""

from __future__ import annotations

import pytest

from arbiter.graders.sandbox.checks_host import ChecksHost
from tests.strictness import unavailable


@pytest.fixture
def host():
    checks = ChecksHost(2)
    try:
        checks.start()
    except Exception as e:  # a host that cannot start a worker cannot show this
        unavailable(f"no checks worker starts here: {e}")
    yield checks
    checks.close()


def test_a_task_goes_to_the_idle_worker_that_planned_it(host: ChecksHost) -> None:
    first = host._take(5.0)
    second = host._take(5.0)
    first.remember("task-a")
    host._idle.put(first)
    host._idle.put(second)  # the last given back: taken first by any other task
    assert host._take(5.0, "task-a") is first
    assert host._take(5.0, "task-b") is second


def test_a_worker_forgets_plans_as_its_own_cache_does(host: ChecksHost) -> None:
    from arbiter.graders.sandbox.checks_server import MAX_PLANS

    worker = host._take(5.0)
    for i in range(MAX_PLANS + 3):
        worker.remember(f"task-{i}")
    assert len(worker.planned) == MAX_PLANS
    assert "task-0" not in worker.planned and f"task-{MAX_PLANS + 2}" in worker.planned
    host._idle.put(worker)
