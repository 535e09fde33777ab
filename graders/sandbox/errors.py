"""The one error the sandbox raises for its own faults."""

from __future__ import annotations

__all__ = ["SandboxError"]


class SandboxError(RuntimeError):
    """The sandbox itself failed (a zygote died or hung, no slot was free): not the candidate."""
