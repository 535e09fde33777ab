"""A run's moving deadline: when the template is told that its backstop moved."""

from __future__ import annotations

import os
import time

import pytest

from arbiter.graders.sandbox.clock import DeadlineView, RunDeadline


def _deadline(backstop_left_s: float, backstop_s: float = 10.0) -> tuple[RunDeadline, list[float]]:
    """A deadline whose template backstop passes ``backstop_left_s`` from now, and its pushes."""
    started = time.monotonic() - (backstop_s - backstop_left_s)
    deadline = RunDeadline(started, backstop_s)
    pushes: list[float] = []
    deadline.pusher = pushes.append
    return deadline, pushes


def test_a_far_backstop_is_not_pushed_while_the_trusted_side_works() -> None:
    # Each push is a frame that wakes the template; a grading of a few milliseconds
    # against a 10 s backstop needs none, however often its deadline is refreshed.
    deadline, pushes = _deadline(backstop_left_s=10.0)
    deadline.working()
    time.sleep(0.02)
    for _ in range(5):
        deadline.refresh()
    assert pushes == []
    assert deadline.at() > deadline.started + 10.0  # the deadline itself moved


def test_a_near_backstop_is_pushed_ahead_of_the_trusted_work() -> None:
    deadline, pushes = _deadline(backstop_left_s=RunDeadline.PUSH_WITHIN_S / 2)
    deadline.working()
    time.sleep(0.02)
    deadline.refresh()
    assert len(pushes) == 1
    # Ahead of the deadline by the lead: the run is not ended before the next refresh.
    assert pushes[0] >= deadline.backstop_s + 0.02 + RunDeadline.LEAD_S - 0.001
    # Pushed again as the work goes on: the template's backstop keeps ahead of it.
    time.sleep(0.02)
    deadline.refresh()
    assert len(pushes) == 2 and pushes[1] > pushes[0]


def test_work_in_another_process_reaches_the_template_once_its_backstop_is_near() -> None:
    far, far_pushes = _deadline(backstop_left_s=10.0)
    near, near_pushes = _deadline(backstop_left_s=RunDeadline.PUSH_WITHIN_S / 2)
    # A view takes its descriptor (a worker gets its own copy over its socket).
    views = [DeadlineView(os.dup(far.fd())), DeadlineView(os.dup(near.fd()))]
    for view in views:
        view.working()
    time.sleep(0.02)
    far.refresh()
    near.refresh()
    assert far_pushes == []
    assert len(near_pushes) == 1 and near_pushes[0] > near.backstop_s + RunDeadline.LEAD_S
    for view in views:
        view.close()
    far.close()
    near.close()


def test_credit_for_a_wait_for_a_cpu_is_pushed_only_when_the_backstop_is_near() -> None:
    far, far_pushes = _deadline(backstop_left_s=10.0)
    near, near_pushes = _deadline(backstop_left_s=RunDeadline.PUSH_WITHIN_S / 2)
    far.credit(1.0)
    near.credit(1.0)
    assert far_pushes == []
    assert near_pushes == [pytest.approx(near.backstop_s + 1.0)]
