"""Idempotency-Keys across replicas: claim the key in the store, or say who has it.

One replica keeps its keys in flight in memory (the service answers a repeat
sent while the first is still grading with 409). Replicas that share a store
also claim each key there before grading (``arbiter.store.idempotency``): a request that
finds the key claimed by a live replica is answered 409
``idempotency_key_in_flight`` with ``Retry-After`` at once (or after
``wait_s``, if the operator asked it to wait), and the client's retry replays
the stored response once the claimant has logged it. So the batch is graded
once whichever replicas the trainer's retries reach.

A claim dies with its claimant: this process renews the leases of the keys it
is grading every :data:`RENEW_INTERVAL_S` from a thread of its own, up to each
request's deadline, and stops renewing a key the moment it is done with it. A
replica killed mid-request, or cut off from the store, stops renewing, and the
key is free to the next request within :data:`~arbiter.store.idempotency.LEASE_S`.
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import threading
import time
import uuid

from arbiter.api.errors import Conflict, Unavailable
from arbiter.store.db import Store, StoredRequest
from arbiter.store.idempotency import LEASE_S, IdempotencyClaims

__all__ = ["RENEW_INTERVAL_S", "IdempotencyGate"]

logger = logging.getLogger("arbiter.service")

#: How often this process renews the leases of the keys it is grading: several
#: renewals fit in one lease, so a late one or two never lose a live claim.
RENEW_INTERVAL_S = 1.0

#: The first and the longest pause between looks at the store while another
#: replica grades the key (only when ``wait_s`` is above zero).
FIRST_POLL_S = 0.02
MAX_POLL_S = 0.5


def _owner_id() -> str:
    """Return this process's claimant id: host and pid for whoever reads the table, then a nonce.

    The nonce tells apart two processes that reuse a pid (a restart in a container).
    """
    host = socket.gethostname()[:32]
    return f"{host}:{os.getpid()}:{uuid.uuid4().hex[:12]}"


class IdempotencyGate:
    """Claims keys for this process in the shared store, and keeps its claims alive."""

    def __init__(self, store: Store, wait_s: float, retry_after_s: int) -> None:
        self.claims = IdempotencyClaims(store)
        self.owner = _owner_id()
        self.wait_s = wait_s
        self.retry_after_s = retry_after_s
        #: The keys this process is grading, each with the monotonic time after
        #: which its lease is no longer renewed (``None``: while it is graded).
        self._held: dict[tuple[str, str], float | None] = {}
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._renewer: threading.Thread | None = None

    async def acquire(
        self, client: str, key: str, deadline_s: float | None = None
    ) -> StoredRequest | None:
        """Claim the key (return ``None``: grade it) or return the response stored under it.

        ``deadline_s`` is how long the request may take: its lease is renewed
        until then, and no longer.

        Raises:
            Conflict: another live replica is grading this key (409, with
                ``Retry-After``); the client retries and gets its response then.
            Unavailable: the store could not be asked (503, with ``Retry-After``).
        """
        deadline = time.monotonic() + self.wait_s
        pause = FIRST_POLL_S
        while True:
            try:
                outcome = await asyncio.to_thread(self.claims.claim, client, key, self.owner)
            except Exception as e:
                logger.warning("could not claim an idempotency key: %s", e)
                raise Unavailable(
                    "the store could not be reached to claim this Idempotency-Key; "
                    "nothing was graded, retry",
                    code="store_unavailable",
                    headers={"Retry-After": str(self.retry_after_s)},
                ) from e
            if outcome.claimed:
                self._hold(client, key, deadline_s)
                return None
            if outcome.stored is not None:
                return outcome.stored
            left = deadline - time.monotonic()
            if left <= 0:
                raise Conflict(
                    "a request with this Idempotency-Key is still being graded by another "
                    "replica; retry shortly",
                    code="idempotency_key_in_flight",
                    headers={"Retry-After": str(self.retry_after_s)},
                )
            await asyncio.sleep(min(pause, left))
            pause = min(2 * pause, MAX_POLL_S)

    async def release(self, client: str, key: str) -> None:
        """Give the key up after a grading that was not logged (the client may retry it).

        Never raises: the answer to the client is already decided. If the store
        cannot take the release, the claim is simply no longer renewed, and its
        lease runs out within :data:`~arbiter.store.idempotency.LEASE_S`.
        """
        with self._lock:
            self._held.pop((client, key), None)
        try:
            await asyncio.to_thread(self.claims.release, client, key, self.owner)
        except Exception as e:
            logger.warning("could not release an idempotency claim (its lease will lapse): %s", e)

    def forget(self, client: str, key: str) -> None:
        """Stop renewing a key whose response is logged (the log dropped the claim)."""
        with self._lock:
            self._held.pop((client, key), None)

    def close(self) -> None:
        """Stop renewing, and drop whatever this process still claims (it is stopping)."""
        self._stopping.set()
        if self._renewer is not None:
            self._renewer.join(timeout=10)
        with self._lock:
            held, self._held = self._held, {}
        if not held and self._renewer is None:
            return  # never claimed anything
        try:
            self.claims.release_all(self.owner)
        except Exception as e:  # the leases lapse on their own
            logger.warning("could not release this replica's idempotency claims: %s", e)

    def _hold(self, client: str, key: str, deadline_s: float | None) -> None:
        until = None if deadline_s is None else time.monotonic() + deadline_s
        with self._lock:
            self._held[(client, key)] = until
            if self._renewer is None and not self._stopping.is_set():
                self._renewer = threading.Thread(
                    target=self._renew_forever, name="idempotency-renewer", daemon=True
                )
                self._renewer.start()

    def _renew_forever(self) -> None:
        # A thread, not a task: a busy event loop must not cost a live request its claim.
        while not self._stopping.wait(RENEW_INTERVAL_S):
            now = time.monotonic()
            with self._lock:
                keys = [k for k, until in self._held.items() if until is None or now < until]
            if not keys:
                continue
            try:
                self.claims.renew(self.owner, keys, LEASE_S)
            except Exception as e:  # the store is down: so is everyone's renewal; retry
                logger.warning("could not renew %d idempotency claims: %s", len(keys), e)
