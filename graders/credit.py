"""Who else moves when a sandbox run is credited with time it waited for a CPU.

A context variable, so that the grader runner (which owns a grading job's
timeout) and the sandbox (which credits runs) meet without importing each
other: the runner sets a listener around each job, and every run started in
that context calls it with each increment of credited wait (see
:mod:`arbiter.graders.sandbox.clock`).
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable

__all__ = ["credit_listener"]

#: Called, from the sandbox pool's timer thread, with each increment (seconds) of
#: wait credited to a run started in this context.
credit_listener: contextvars.ContextVar[Callable[[float], None] | None] = contextvars.ContextVar(
    "credit_listener", default=None
)
