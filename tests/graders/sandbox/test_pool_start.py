"""A pool's start: the fast lane's zygotes are started side by side, not one after another."""

from __future__ import annotations

import pytest

from arbiter.graders.sandbox import PoolConfig, SandboxPool
from arbiter.graders.sandbox.pool import _Slot


def test_the_fast_lanes_zygotes_start_side_by_side(monkeypatch: pytest.MonkeyPatch) -> None:
    # Each zygote is an interpreter's start: a command's first reward waits for the
    # slowest of them, so every one is launched before the pool waits for any.
    launched: list[list[bool]] = []
    wait_ready = _Slot.wait_ready

    def first_wait(slot: _Slot) -> None:
        if not launched:
            launched.append([s.proc is not None for s in slot.pool._slots])
        wait_ready(slot)

    monkeypatch.setattr(_Slot, "wait_ready", first_wait)
    pool = SandboxPool(PoolConfig(slots=3))
    try:
        pool.start()
        assert launched == [[True, True, True]]
        assert len(pool._slots) == 3 and all(slot.alive and slot.layers for slot in pool._slots)
        assert pool.health() is None
    finally:
        pool.close()
