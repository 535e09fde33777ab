"""Where grader jobs run: in this process, or on a cluster behind the same interface.

A rubric names graders; the registry hands out instances. To move the heavy
graders (the sandbox, the static analyzers) onto a cluster, the registry holds
a :class:`RemoteGrader` in their place: it has the local grader's name,
version and config model (so rubrics validate exactly as before) and sends
each job to a :class:`GradingExecutor`, which returns the same
:class:`~arbiter.graders.types.GradeResult` the local grader would have.

Each job is tagged with the *tenant* it is graded for (an API key and a
rubric, set with :func:`tenant` around a batch): an executor shares its
workers fairly between tenants rather than first come, first served.
"""

from __future__ import annotations

import contextlib
from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator
from contextvars import ContextVar
from typing import Any, ClassVar

from arbiter.graders.base import Grader, GraderConfig
from arbiter.graders.registry import GraderRegistry, default_registry
from arbiter.graders.types import GradeResult, Sample

__all__ = [
    "REMOTE_GRADERS",
    "GradingExecutor",
    "RemoteGrader",
    "current_tenant",
    "remote_registry",
    "tenant",
]

#: The graders worth moving off the API process: sandbox runs and static analysis.
REMOTE_GRADERS: tuple[str, ...] = ("unit_tests", "bandit", "radon")

_TENANT: ContextVar[str] = ContextVar("arbiter_tenant", default="")


@contextlib.contextmanager
def tenant(name: str) -> Iterator[None]:
    """Tag every job started inside the block (and the tasks it spawns) as ``name``'s."""
    token = _TENANT.set(name)
    try:
        yield
    finally:
        _TENANT.reset(token)


def current_tenant() -> str:
    """Return the tenant of the job being started ("" outside any :func:`tenant` block)."""
    return _TENANT.get()


class GradingExecutor(ABC):
    """Runs grader jobs by grader name; the results are those of the local graders."""

    @abstractmethod
    async def grade(self, grader: str, sample: Sample, config: GraderConfig) -> GradeResult:
        """Grade one sample with the grader called ``grader``.

        Raises what the grader itself would raise (the runner turns that into a
        typed failure); infrastructure that failed past its retries comes back as
        a ``sandbox_error`` result, never as an exception or a made-up score.
        """

    def room(self) -> int | None:
        """Return how many more jobs may be queued now (``None``: no bound)."""
        return None

    async def readiness(self) -> str | None:
        """Return why the executor cannot take work now, or ``None``."""
        return None

    def close(self) -> None:  # noqa: B027 - most executors hold nothing to release
        """Release the executor's workers."""


class RemoteGrader(Grader[Any]):
    """Stands in for a local grader and sends its jobs to an executor.

    Build one with :meth:`for_grader`: the subclass it makes carries the local
    grader's class attributes, so ``registry.get(name).config_model`` still
    validates rubric configs.
    """

    name: ClassVar[str] = "remote"
    version: ClassVar[str] = "0"
    config_model: ClassVar[type[GraderConfig]] = GraderConfig

    def __init__(self, executor: GradingExecutor) -> None:
        self.executor = executor

    @classmethod
    def for_grader(cls, local: type[Grader[Any]], executor: GradingExecutor) -> RemoteGrader:
        """Return a remote stand-in for ``local`` whose jobs go to ``executor``."""
        attributes = {
            "name": local.name,
            "version": local.version,
            "config_model": local.config_model,
            "description": local.description,
            "default_timeout_s": local.default_timeout_s,
            "deterministic": local.deterministic,
            "__doc__": local.__doc__,
        }
        remote: type[RemoteGrader] = type(f"Remote{local.__name__}", (cls,), attributes)
        return remote(executor)

    async def grade(self, sample: Sample, config: Any) -> GradeResult:
        """Grade on the executor."""
        return await self.executor.grade(self.name, sample, config)

    async def readiness(self) -> str | None:
        """Report the executor's readiness."""
        return await self.executor.readiness()


def remote_registry(
    executor: GradingExecutor,
    names: Iterable[str] = REMOTE_GRADERS,
    registry: GraderRegistry | None = None,
) -> GraderRegistry:
    """Return ``registry`` (default: the built-ins) with ``names`` graded on ``executor``."""
    registry = registry or default_registry()
    for name in names:
        registry.add_instance(RemoteGrader.for_grader(registry.get(name), executor))
    return registry
