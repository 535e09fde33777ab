"""Graders: each turns a sample into a score in [0, 1], or a typed failure."""

from graders.base import Grader, GraderConfig
from graders.registry import GraderRegistry, UnknownGraderError, default_registry
from graders.runner import GraderJob, run_job, run_jobs
from graders.types import (
    Failure,
    FailureKind,
    GradeResult,
    IOCase,
    Message,
    Metrics,
    Sample,
    TaskSpec,
    ToolCall,
    Violation,
    ViolationType,
)

__all__ = [
    "Failure",
    "FailureKind",
    "GradeResult",
    "Grader",
    "GraderConfig",
    "GraderJob",
    "GraderRegistry",
    "IOCase",
    "Message",
    "Metrics",
    "Sample",
    "TaskSpec",
    "ToolCall",
    "UnknownGraderError",
    "Violation",
    "ViolationType",
    "default_registry",
    "run_job",
    "run_jobs",
]
