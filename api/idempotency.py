"""Idempotency-Keys across replicas: claim the key in the store, or wait for who has it.

One replica keeps its keys in flight in memory (the service answers a repeat
sent while the first is still grading with 409). Replicas that share a store
also claim each key there before grading (``store.idempotency``): a request
that loses the claim waits for the winner's stored response and replays it,
so the batch is graded once whichever replicas the trainer's retries reach.
"""

from __future__ import annotations

import asyncio
import time
import uuid

from api.errors import Conflict
from store.db import Store, StoredRequest
from store.idempotency import IdempotencyClaims

__all__ = ["IdempotencyGate"]

#: The first and the longest pause between looks at the store while another
#: replica grades the key (grading takes from milliseconds to minutes).
FIRST_POLL_S = 0.02
MAX_POLL_S = 0.5


class IdempotencyGate:
    """Claims keys for this process in the shared store."""

    def __init__(self, store: Store, wait_s: float, retry_after_s: int) -> None:
        self.claims = IdempotencyClaims(store)
        self.owner = uuid.uuid4().hex
        self.wait_s = wait_s
        self.retry_after_s = retry_after_s

    async def acquire(self, client: str, key: str, lease_s: float) -> StoredRequest | None:
        """Claim the key (return ``None``: grade it) or return the response stored under it.

        Raises:
            Conflict: another replica has been grading this key for longer than
                ``wait_s``; the client retries later and gets its response then.
        """
        deadline = time.monotonic() + self.wait_s
        pause = FIRST_POLL_S
        while True:
            outcome = await asyncio.to_thread(self.claims.claim, client, key, self.owner, lease_s)
            if outcome.claimed:
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
        """Free the key after a grading that was not logged (the client may retry it)."""
        await asyncio.to_thread(self.claims.release, client, key, self.owner)
