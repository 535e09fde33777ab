"""The sandbox: pre-forked confined zygotes, and verdicts made outside them.

Public names: the pool (:class:`SandboxPool`, :class:`Limits`,
:class:`RunReport`), the trusted-side function tests (:func:`plan_function_tests`,
:func:`run_plan`, :class:`Channel`) and :func:`check_layers`, which reports
which confinement layers this host actually provides.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from arbiter.graders.sandbox.checks import (
        CheckPlan,
        CheckPlanError,
        UnitOutcome,
        plan_function_tests,
        run_plan,
    )
    from arbiter.graders.sandbox.layers import (
        LAYERS,
        MissingLayersError,
        check_layers,
        require_layers,
    )
    from arbiter.graders.sandbox.pool import (
        DEFAULT_PRELOAD,
        FunctionRun,
        Limits,
        PoolConfig,
        RunReport,
        SandboxError,
        SandboxPool,
    )
    from arbiter.graders.sandbox.proxy import (
        CandidateError,
        CandidateFunction,
        Channel,
        ChannelBroken,
    )

#: Loaded on first use: a module that needs one part (the rubric formula needs
#: ``syntax``) must not start the pool's imports.
_HOMES = {
    **dict.fromkeys(
        ("CheckPlan", "CheckPlanError", "UnitOutcome", "plan_function_tests", "run_plan"),
        "arbiter.graders.sandbox.checks",
    ),
    **dict.fromkeys(
        ("LAYERS", "MissingLayersError", "check_layers", "require_layers"),
        "arbiter.graders.sandbox.layers",
    ),
    **dict.fromkeys(
        (
            "DEFAULT_PRELOAD",
            "FunctionRun",
            "Limits",
            "PoolConfig",
            "RunReport",
            "SandboxError",
            "SandboxPool",
        ),
        "arbiter.graders.sandbox.pool",
    ),
    **dict.fromkeys(
        ("CandidateError", "CandidateFunction", "Channel", "ChannelBroken"),
        "arbiter.graders.sandbox.proxy",
    ),
}

__all__ = [
    "DEFAULT_PRELOAD",
    "LAYERS",
    "CandidateError",
    "CandidateFunction",
    "Channel",
    "ChannelBroken",
    "CheckPlan",
    "CheckPlanError",
    "FunctionRun",
    "Limits",
    "MissingLayersError",
    "PoolConfig",
    "RunReport",
    "SandboxError",
    "SandboxPool",
    "UnitOutcome",
    "check_layers",
    "plan_function_tests",
    "require_layers",
    "run_plan",
]


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
