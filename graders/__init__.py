"""Graders: each turns a sample into a score in [0, 1], or a typed failure.

The names below are loaded on first use: the trainer-side client needs only
:mod:`arbiter.graders.types` (pydantic), and importing this package must not
bring in the registry and every grader behind it.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from arbiter.graders.base import Grader, GraderConfig
    from arbiter.graders.registry import GraderRegistry, UnknownGraderError, default_registry
    from arbiter.graders.runner import GraderJob, run_job, run_jobs
    from arbiter.graders.types import (
        AnswerTask,
        Failure,
        FailureKind,
        GradeResult,
        InstructionsTask,
        IOCase,
        Message,
        Metrics,
        ReasoningGymTask,
        RepositoryTask,
        Sample,
        Task,
        TaskSpec,
        ToolCall,
        Violation,
        ViolationType,
    )

#: Public name → the module that defines it.
_HOMES = {
    "AnswerTask": "arbiter.graders.types",
    "Failure": "arbiter.graders.types",
    "FailureKind": "arbiter.graders.types",
    "GradeResult": "arbiter.graders.types",
    "Grader": "arbiter.graders.base",
    "GraderConfig": "arbiter.graders.base",
    "GraderJob": "arbiter.graders.runner",
    "GraderRegistry": "arbiter.graders.registry",
    "IOCase": "arbiter.graders.types",
    "InstructionsTask": "arbiter.graders.types",
    "Message": "arbiter.graders.types",
    "Metrics": "arbiter.graders.types",
    "ReasoningGymTask": "arbiter.graders.types",
    "RepositoryTask": "arbiter.graders.types",
    "Sample": "arbiter.graders.types",
    "Task": "arbiter.graders.types",
    "TaskSpec": "arbiter.graders.types",
    "ToolCall": "arbiter.graders.types",
    "UnknownGraderError": "arbiter.graders.registry",
    "Violation": "arbiter.graders.types",
    "ViolationType": "arbiter.graders.types",
    "default_registry": "arbiter.graders.registry",
    "run_job": "arbiter.graders.runner",
    "run_jobs": "arbiter.graders.runner",
}

__all__ = [
    "AnswerTask",
    "Failure",
    "FailureKind",
    "GradeResult",
    "Grader",
    "GraderConfig",
    "GraderJob",
    "GraderRegistry",
    "IOCase",
    "InstructionsTask",
    "Message",
    "Metrics",
    "ReasoningGymTask",
    "RepositoryTask",
    "Sample",
    "Task",
    "TaskSpec",
    "ToolCall",
    "UnknownGraderError",
    "Violation",
    "ViolationType",
    "default_registry",
    "run_job",
    "run_jobs",
]


def __getattr__(name: str) -> Any:
    """Import a public name's module on first use (PEP 562)."""
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value
    return value
