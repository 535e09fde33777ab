"""Authentication: who is calling, from an API key, through a cache of key look-ups.

The cache is bounded in size (random keys cannot fill memory: the least recently
used look-up goes first) and in age: a look-up is trusted for
:data:`KEY_CACHE_S`, so a key revoked anywhere (another replica, the CLI in
another process) stops working here within that time.
"""

from __future__ import annotations

import asyncio
import time
from collections import OrderedDict
from dataclasses import dataclass

from arbiter.api.errors import Forbidden, Unauthorized, Unavailable
from arbiter.store.db import ApiKey, Store, hash_key

__all__ = ["ANONYMOUS", "KEY_CACHE_MAX", "KEY_CACHE_S", "Authenticator", "Principal"]

#: How long a key look-up is trusted: revocation's delay on every other process.
KEY_CACHE_S = 0.5
#: Look-ups kept, known keys and unknown ones alike.
KEY_CACHE_MAX = 4096


@dataclass(frozen=True, slots=True)
class Principal:
    """Who is calling: the key's id (the log's client identity), name and role."""

    client: str
    name: str
    role: str

    def require(self, *roles: str) -> None:
        """Raise 403 unless this principal has one of ``roles`` (admin has all)."""
        if self.role != "admin" and self.role not in roles:
            raise Forbidden(f"a {self.role!r} key may not do this; needs {' or '.join(roles)}")


ANONYMOUS = Principal(client="anonymous", name="anonymous (auth disabled)", role="admin")


class Authenticator:
    """Turn API keys into principals, caching each look-up for a while."""

    def __init__(self, store: Store, *, enabled: bool, retry_after: dict[str, str]) -> None:
        self.store = store
        self.enabled = enabled
        self._retry_after = retry_after
        self._keys: OrderedDict[str, tuple[ApiKey | None, float]] = OrderedDict()

    async def authenticate(self, key: str | None) -> Principal:
        """Return the caller for an API key (or everyone, when auth is disabled)."""
        if not self.enabled:
            return ANONYMOUS
        if not key:
            raise Unauthorized(
                "no API key: send 'Authorization: Bearer <key>', 'X-API-Key: <key>', or the "
                "key as the password of HTTP Basic (http://user:<key>@host/...)",
                headers={"WWW-Authenticate": "Bearer"},
            )
        digest = hash_key(key)
        cached = self._keys.get(digest)
        now = time.monotonic()
        if cached is not None and cached[1] > now:
            record = cached[0]
            self._keys.move_to_end(digest)
        else:
            try:
                record = await asyncio.to_thread(self.store.key_for, key)
            except Exception as e:
                raise Unavailable(
                    "the key store is unreachable; retry",
                    code="store_unavailable",
                    headers=dict(self._retry_after),
                ) from e
            self._keys[digest] = (record, now + KEY_CACHE_S)
            self._keys.move_to_end(digest)
            while len(self._keys) > KEY_CACHE_MAX:
                self._keys.popitem(last=False)
        if record is None:
            raise Unauthorized("unknown or revoked API key", headers={"WWW-Authenticate": "Bearer"})
        return Principal(client=record.id, name=record.name, role=record.role)

    def forget(self) -> None:
        """Drop cached key look-ups (after a revocation)."""
        self._keys.clear()
