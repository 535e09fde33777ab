"""The sandbox: pre-forked confined zygotes, and verdicts made outside them.

Public names: the pool (:class:`SandboxPool`, :class:`Limits`,
:class:`RunReport`), the trusted-side function tests (:func:`plan_function_tests`,
:func:`run_plan`, :class:`Channel`) and :func:`check_layers`, which reports
which confinement layers this host actually provides.
"""

from __future__ import annotations

from arbiter.graders.sandbox.checks import (
    CheckPlan,
    CheckPlanError,
    UnitOutcome,
    plan_function_tests,
    run_plan,
)
from arbiter.graders.sandbox.layers import LAYERS, MissingLayersError, check_layers, require_layers
from arbiter.graders.sandbox.pool import (
    DEFAULT_PRELOAD,
    FunctionRun,
    Limits,
    PoolConfig,
    RunReport,
    SandboxError,
    SandboxPool,
)
from arbiter.graders.sandbox.proxy import CandidateError, CandidateFunction, Channel, ChannelBroken

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
