"""Idempotency across replicas: a request's key is claimed in the store before grading.

With one process, a set of keys in flight is enough. With several replicas on
one store, two of them can be sent the same key at once (a trainer's retry after
a timeout lands on the other replica); each would find nothing stored, grade,
and one of the two logs would be refused by the unique key. The claim row
decides first: whoever inserts it grades, the others answer that it is in
flight (or wait for its stored response).

A claim lives only as long as its claimant works on it: it is written with a
short lease (:data:`LEASE_S`) that its replica renews while the request is in
flight (``renew``), up to the request's own deadline. A replica that dies, is
cut off from the store, or finishes without managing to drop the claim stops
renewing it, and the next request for the key takes it over once the lease has
run out: seconds, not the longest deadline a request may have. Every time is
the database's own clock, so replicas on hosts whose clocks disagree agree on
which leases have run out.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from sqlalchemy import and_, delete, insert, or_, select, tuple_, update
from sqlalchemy.exc import IntegrityError

from arbiter.store.db import Store, StoredRequest
from arbiter.store.tables import idempotency_claims

__all__ = ["LEASE_S", "ClaimOutcome", "IdempotencyClaims"]

#: A claim's lease, renewed by its owner while it grades (every second or so):
#: a claim not renewed for this long is its owner's no more. Long enough for a
#: few renewals to be late on a loaded host; short enough that a dead replica's
#: key is graded again well within a client's retry budget.
LEASE_S = 5.0

#: Claims renewed per statement (each is two bound parameters).
_RENEW_CHUNK = 500


@dataclass(frozen=True, slots=True)
class ClaimOutcome:
    """What a claim attempt found.

    Attributes:
        claimed: this owner holds the key now and must grade (then log or release).
        stored: the response already logged under the key (replay it), if any.
        holder: the owner grading it now, when neither of the above.
        expires_at: when the holder's lease runs out unless renewed (database clock).
    """

    claimed: bool
    stored: StoredRequest | None = None
    holder: str | None = None
    expires_at: float | None = None


class IdempotencyClaims:
    """Claim, renew, release and look up idempotency keys in the shared store."""

    def __init__(self, store: Store) -> None:
        self.store = store

    def claim(self, client: str, key: str, owner: str, lease_s: float = LEASE_S) -> ClaimOutcome:
        """Claim ``(client, key)`` for ``owner`` for ``lease_s`` seconds, or say who has it.

        The stored response is checked after a lost insert as well as before:
        the winner logs its response and drops its claim in one transaction, so
        a key is always either claimed, or stored, or free.

        A claim whose lease has run out is taken over. So is one already held by
        ``owner``: the caller never claims a key it is grading, so such a claim is
        its own leftover (a release that failed), not a live one.
        """
        stored = self.store.find_request(client, key)
        if stored is not None:
            return ClaimOutcome(claimed=False, stored=stored)
        now = self.store.clock()
        try:
            with self.store.writing() as conn:
                conn.execute(
                    insert(idempotency_claims).values(
                        client=client,
                        idempotency_key=key,
                        owner=owner,
                        claimed_at=now,
                        expires_at=now + lease_s,
                    )
                )
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
        this_key = and_(
            idempotency_claims.c.client == client, idempotency_claims.c.idempotency_key == key
        )
        with self.store.writing() as conn:
            # Take over a claim whose owner stopped renewing it; one replica wins the UPDATE.
            taken = conn.execute(
                update(idempotency_claims)
                .where(
                    this_key,
                    or_(idempotency_claims.c.expires_at < now, idempotency_claims.c.owner == owner),
                )
                .values(owner=owner, claimed_at=now, expires_at=now + lease_s)
            )
            if taken.rowcount:
                return ClaimOutcome(claimed=True)
            current = conn.execute(
                select(idempotency_claims.c.owner, idempotency_claims.c.expires_at).where(this_key)
            ).first()
        stored = self.store.find_request(client, key)
        if stored is not None:
            return ClaimOutcome(claimed=False, stored=stored)
        if current is None:  # released between our insert and our look: try again
            return self.claim(client, key, owner, lease_s)
        return ClaimOutcome(claimed=False, holder=current.owner, expires_at=current.expires_at)

    def renew(self, owner: str, keys: Iterable[tuple[str, str]], lease_s: float = LEASE_S) -> int:
        """Extend ``owner``'s claims on ``keys`` (``(client, key)`` pairs) by ``lease_s``.

        A claim another owner took over in the meantime is left to it. Returns
        how many claims were renewed.
        """
        pending = list(keys)
        renewed = 0
        now = self.store.clock()
        for start in range(0, len(pending), _RENEW_CHUNK):
            chunk = pending[start : start + _RENEW_CHUNK]
            with self.store.writing() as conn:
                result = conn.execute(
                    update(idempotency_claims)
                    .where(
                        idempotency_claims.c.owner == owner,
                        tuple_(
                            idempotency_claims.c.client, idempotency_claims.c.idempotency_key
                        ).in_(chunk),
                    )
                    .values(expires_at=now + lease_s)
                )
            renewed += result.rowcount
        return renewed

    def release(self, client: str, key: str, owner: str) -> None:
        """Drop ``owner``'s claim (its grading failed: the key is free for a retry)."""
        with self.store.writing() as conn:
            conn.execute(
                delete(idempotency_claims).where(
                    idempotency_claims.c.client == client,
                    idempotency_claims.c.idempotency_key == key,
                    idempotency_claims.c.owner == owner,
                )
            )

    def release_all(self, owner: str) -> int:
        """Drop every claim of ``owner`` (its replica is stopping); return how many."""
        with self.store.writing() as conn:
            result = conn.execute(
                delete(idempotency_claims).where(idempotency_claims.c.owner == owner)
            )
        return result.rowcount
