"""Models by name, each built once when first needed, and what became of each.

A grader holds a :class:`ModelSet` of reward-model or judge clients. Clients
given ready (``ModelSet.of``) serve at once; declared ones (a models file) are
built by their builder on :meth:`ModelSet.warm` (the service and the CLI warm
the graders their rubrics name before the first job) or, failing that, on
first use, off the event loop. A build that fails is remembered: that model is
*unavailable*, every request for it fails with
:class:`~arbiter.reward_models.errors.ModelUnavailableError` carrying the reason, and
``/readyz`` says so; the other models serve on. Nothing is loaded for a model
no rubric uses, so a process that only validates rubrics, or a Ray actor that
grades only the sandbox, never loads one.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Callable, Mapping
from typing import Generic, TypeVar

from arbiter.reward_models.errors import ModelUnavailableError
from arbiter.reward_models.usage import ModelUsage

__all__ = ["ModelSet"]

C = TypeVar("C")


class ModelSet(Generic[C]):
    """Clients by name, built lazily and once; ``kind`` names them in messages."""

    def __init__(
        self,
        kind: str,
        builders: Mapping[str, Callable[[], C]],
        *,
        usage: Mapping[str, ModelUsage] | None = None,
        closer: Callable[[C], None] | None = None,
    ) -> None:
        """Declare models: ``builders`` build each client (blocking; run off the loop).

        Args:
            kind: ``reward model`` or ``judge`` (for messages).
            builders: name → a function that builds the client, raising on failure.
            usage: name → the counters its client feeds (for metrics).
            closer: releases a built client (Ray replicas are stopped this way).
        """
        self.kind = kind
        self._builders = dict(builders)
        self.usage = dict(usage or {})
        self._closer = closer
        self._clients: dict[str, C] = {}
        self._failed: dict[str, str] = {}
        self._locks = {name: threading.Lock() for name in self._builders}

    @classmethod
    def of(cls, kind: str, clients: Mapping[str, C]) -> ModelSet[C]:
        """Return a set of clients that are ready already."""
        models: ModelSet[C] = cls(kind, {name: _ready(client) for name, client in clients.items()})
        models._clients.update(clients)
        return models

    def names(self) -> list[str]:
        """Return the declared names, sorted."""
        return sorted(self._builders)

    def __contains__(self, name: object) -> bool:
        return name in self._builders

    def load(self, name: str) -> C:
        """Build ``name`` now if it is not built (blocking); return its client.

        Raises:
            KeyError: no model of that name is declared.
            ModelUnavailableError: it could not be built (now or before).
        """
        if name not in self._builders:
            raise KeyError(name)
        with self._locks[name]:
            client = self._clients.get(name)
            if client is not None:
                return client
            if name in self._failed:
                raise ModelUnavailableError(self._failed[name])
            try:
                client = self._builders[name]()
            except Exception as e:
                # Any failure to build is this model's state, reported with its reason;
                # the process and the other models go on.
                self._failed[name] = f"{self.kind} {name!r} could not be loaded: {_reason(e)}"
                raise ModelUnavailableError(self._failed[name]) from e
            self._clients[name] = client
            return client

    async def get(self, name: str) -> C | None:
        """Return the client of ``name`` (built off the loop if need be); ``None`` if undeclared.

        Raises:
            ModelUnavailableError: it is declared but could not be built.
        """
        if name not in self._builders:
            return None
        client = self._clients.get(name)
        if client is not None:
            return client
        return await asyncio.to_thread(self.load, name)

    def load_all(self) -> None:
        """Build every declared model; one that fails is marked unavailable, not raised."""
        for name in self.names():
            with contextlib.suppress(ModelUnavailableError):
                self.load(name)

    async def warm(self) -> None:
        """Build every declared model off the event loop."""
        await asyncio.to_thread(self.load_all)

    def states(self) -> dict[str, str]:
        """Return name → ``ok``, ``not loaded`` or ``unavailable: <reason>``."""
        out = {}
        for name in self.names():
            if name in self._clients:
                usage = self.usage.get(name)
                last = usage.last_error if usage is not None else None
                out[name] = "ok" if last is None else f"ok (last request: {last})"
            elif name in self._failed:
                out[name] = f"unavailable: {self._failed[name]}"
            else:
                out[name] = "not loaded"
        return out

    def close(self) -> None:
        """Release every built client."""
        if self._closer is not None:
            for client in self._clients.values():
                with contextlib.suppress(Exception):  # closing: release what can be released
                    self._closer(client)
        self._clients.clear()


def _ready(client: C) -> Callable[[], C]:
    return lambda: client


def _reason(error: BaseException) -> str:
    text = str(error).splitlines()[0] if str(error) else ""
    return f"{type(error).__name__}: {text[:300]}" if text else type(error).__name__
