"""Idempotency across replicas: a request's key is claimed in the store before grading.

With one process, a set of keys in flight is enough. With several replicas on
one store, two of them can be sent the same key at once (a trainer's retry after
a timeout lands on the other replica); each would find nothing stored, grade,
and one of the two logs would be refused by the unique key. The claim row
decides first: whoever inserts it grades, the others wait for its stored
response. A claim expires (its owner crashed) and can then be taken over.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from sqlalchemy import delete, insert, select, update
from sqlalchemy.exc import IntegrityError

from store.db import Store, StoredRequest
from store.tables import idempotency_claims

__all__ = ["ClaimOutcome", "IdempotencyClaims"]


@dataclass(frozen=True, slots=True)
class ClaimOutcome:
    """What a claim attempt found.

    Attributes:
        claimed: this owner holds the key now and must grade (then log or release).
        stored: the response already logged under the key (replay it), if any.
        holder: the owner grading it now, when neither of the above.
        expires_at: when the holder's claim runs out.
    """

    claimed: bool
    stored: StoredRequest | None = None
    holder: str | None = None
    expires_at: float | None = None


class IdempotencyClaims:
    """Claim, release and look up idempotency keys in the shared store."""

    def __init__(self, store: Store) -> None:
        self.store = store

    def claim(self, client: str, key: str, owner: str, lease_s: float) -> ClaimOutcome:
        """Claim ``(client, key)`` for ``owner`` for ``lease_s`` seconds, or say who has it.

        The stored response is checked after a lost insert as well as before:
        the winner logs its response and drops its claim in one transaction, so
        a key is always either claimed, or stored, or free.
        """
        stored = self.store.find_request(client, key)
        if stored is not None:
            return ClaimOutcome(claimed=False, stored=stored)
        now = time.time()
        row = {
            "client": client,
            "idempotency_key": key,
            "owner": owner,
            "claimed_at": now,
            "expires_at": now + lease_s,
        }
        try:
            with self.store.engine.begin() as conn:
                conn.execute(insert(idempotency_claims), row)
        except IntegrityError:
            pass
        else:
            # The look above may have run just before a winner committed its
            # response and dropped its claim in one transaction; our insert then
            # found the key free. Look again now that our claim is committed:
            # whatever committed before it is visible.
            stored = self.store.find_request(client, key)
            if stored is None:
                return ClaimOutcome(claimed=True)
            self.release(client, key, owner)
            return ClaimOutcome(claimed=False, stored=stored)
        with self.store.engine.begin() as conn:
            # Take over a claim whose owner is presumed dead; one replica wins the UPDATE.
            taken = conn.execute(
                update(idempotency_claims)
                .where(
                    idempotency_claims.c.client == client,
                    idempotency_claims.c.idempotency_key == key,
                    idempotency_claims.c.expires_at < now,
                )
                .values(owner=owner, claimed_at=now, expires_at=now + lease_s)
            )
            if taken.rowcount:
                return ClaimOutcome(claimed=True)
            current = conn.execute(
                select(idempotency_claims.c.owner, idempotency_claims.c.expires_at).where(
                    idempotency_claims.c.client == client,
                    idempotency_claims.c.idempotency_key == key,
                )
            ).first()
        stored = self.store.find_request(client, key)
        if stored is not None:
            return ClaimOutcome(claimed=False, stored=stored)
        if current is None:  # released between our insert and our look: try again
            return self.claim(client, key, owner, lease_s)
        return ClaimOutcome(claimed=False, holder=current.owner, expires_at=current.expires_at)

    def release(self, client: str, key: str, owner: str) -> None:
        """Drop ``owner``'s claim (its grading failed: the key is free for a retry)."""
        with self.store.engine.begin() as conn:
            conn.execute(
                delete(idempotency_claims).where(
                    idempotency_claims.c.client == client,
                    idempotency_claims.c.idempotency_key == key,
                    idempotency_claims.c.owner == owner,
                )
            )
