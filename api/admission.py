"""Bounded in-flight work with per-key quotas: a full service says 429, never queues forever."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

__all__ = ["Admission", "Ticket"]


@dataclass(frozen=True, slots=True)
class Ticket:
    """Admitted work: release it when the request ends."""

    client: str
    samples: int


class Admission:
    """Admission control for one process (it runs on the event loop: no locks needed).

    A request is admitted when the samples in flight stay within
    ``max_samples`` and its key has fewer than ``per_key_requests`` requests
    in flight. The per-key bound is what keeps one trainer from starving the
    others sharing the service. A single batch larger than ``max_samples`` is
    admitted when nothing else is in flight, so it can always run eventually.
    """

    def __init__(self, max_samples: int, per_key_requests: int) -> None:
        self.max_samples = max_samples
        self.per_key_requests = per_key_requests
        self.samples_in_flight = 0
        self.requests_in_flight = 0
        self._per_key: Counter[str] = Counter()

    def admit(self, client: str, samples: int) -> Ticket | str:
        """Return a ticket, or the reason (``key_quota`` / ``server_busy``) for refusing."""
        if self._per_key[client] >= self.per_key_requests:
            return "key_quota"
        if self.samples_in_flight and self.samples_in_flight + samples > self.max_samples:
            return "server_busy"
        self._per_key[client] += 1
        self.samples_in_flight += samples
        self.requests_in_flight += 1
        return Ticket(client, samples)

    def release(self, ticket: Ticket) -> None:
        """Return a ticket's capacity."""
        self._per_key[ticket.client] -= 1
        if self._per_key[ticket.client] <= 0:
            del self._per_key[ticket.client]
        self.samples_in_flight -= ticket.samples
        self.requests_in_flight -= 1

    def utilization(self) -> float:
        """Fraction of the sample bound in use."""
        return self.samples_in_flight / self.max_samples
