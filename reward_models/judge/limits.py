"""Requests and tokens per minute: a judge provider's rate limits, kept on our side.

A provider that is sent more than its limits answers 429, and every retry of
a batch's worth of calls spends the budget again. Waiting here instead keeps
the calls under the limits from the start (verl's rate-limited reward manager
does the same with ``max_rpm`` / ``max_tpm``). Tokens are not known until the
judge answers, so a call reserves an estimate (its prompt's characters / 4
plus its ``max_tokens``) and the reservation is corrected to what the server
reports once it answers.
"""

from __future__ import annotations

import asyncio
import collections
import time

__all__ = ["RateLimiter", "estimate_tokens"]

WINDOW_S = 60.0


def estimate_tokens(prompt_chars: int, max_tokens: int) -> int:
    """Return a call's token estimate before it is made (pure): about 4 characters a token."""
    return prompt_chars // 4 + max_tokens


class _Reservation:
    __slots__ = ("at", "tokens")

    def __init__(self, at: float, tokens: int) -> None:
        self.at = at
        self.tokens = tokens


class RateLimiter:
    """A sliding one-minute window over requests and tokens."""

    def __init__(self, rpm: float | None = None, tpm: float | None = None) -> None:
        """Limit to ``rpm`` requests and ``tpm`` tokens per minute (``None``: no limit)."""
        self.rpm = rpm
        self.tpm = tpm
        self._window: collections.deque[_Reservation] = collections.deque()
        self.waited_s = 0.0

    def _trim(self, now: float) -> None:
        while self._window and self._window[0].at <= now - WINDOW_S:
            self._window.popleft()

    def _wait_s(self, now: float, tokens: int) -> float:
        """Return how long until a call of ``tokens`` fits both limits (0: now)."""
        self._trim(now)
        wait = 0.0
        if self.rpm is not None and len(self._window) >= self.rpm:
            wait = max(wait, self._window[0].at + WINDOW_S - now)
        if self.tpm is not None and self._window:
            used = sum(r.tokens for r in self._window)
            # A call bigger than the whole budget goes once the window is empty.
            excess = used + min(tokens, int(self.tpm)) - self.tpm
            for r in self._window:
                if excess <= 0:
                    break
                wait = max(wait, r.at + WINDOW_S - now)
                excess -= r.tokens
        return wait

    async def acquire(self, tokens: int) -> _Reservation:
        """Wait until a call of about ``tokens`` fits; return its reservation."""
        if self.rpm is None and self.tpm is None:
            return _Reservation(time.monotonic(), tokens)
        while True:
            now = time.monotonic()
            wait = self._wait_s(now, tokens)
            if wait <= 0:
                reservation = _Reservation(now, tokens)
                self._window.append(reservation)
                return reservation
            self.waited_s += wait
            await asyncio.sleep(wait)

    @staticmethod
    def settle(reservation: _Reservation, tokens: int | None) -> None:
        """Replace a reservation's estimate by the tokens the server reported."""
        if tokens is not None:
            reservation.tokens = tokens
