"""Name → grader class, so a rubric can name graders and validate their configs at load."""

from __future__ import annotations

import asyncio
import difflib
from collections.abc import Iterable, Iterator
from typing import Any

from arbiter.graders.base import Grader

__all__ = ["GraderRegistry", "UnknownGraderError", "default_registry"]


class UnknownGraderError(KeyError):
    """A grader name that no registered grader has."""

    def __init__(self, name: str, known: list[str]) -> None:
        self.name = name
        self.known = known
        self.suggestion = next(iter(difflib.get_close_matches(name, known, n=1)), None)
        # Both arguments in args: unpickled (sent back from a Ray actor), it is rebuilt from them.
        super().__init__(name, known)

    def __str__(self) -> str:
        hint = f"; did you mean {self.suggestion!r}?" if self.suggestion else ""
        return f"unknown grader {self.name!r} (known: {', '.join(self.known)}){hint}"


class GraderRegistry:
    """Grader classes by name, and one shared instance of each once asked for."""

    def __init__(self) -> None:
        self._classes: dict[str, type[Grader[Any]]] = {}
        self._instances: dict[str, Grader[Any]] = {}

    def register(self, cls: type[Grader[Any]], *, replace: bool = False) -> type[Grader[Any]]:
        """Add a grader class; a name can be taken once unless ``replace`` is set."""
        if cls.name in self._classes and not replace:
            raise ValueError(f"a grader named {cls.name!r} is already registered")
        self._classes[cls.name] = cls
        self._instances.pop(cls.name, None)
        return cls

    def add_instance(self, grader: Grader[Any]) -> None:
        """Register a ready instance (one built with its I/O dependencies injected)."""
        self._classes[grader.name] = type(grader)
        self._instances[grader.name] = grader

    def get(self, name: str) -> type[Grader[Any]]:
        """Return the grader class called ``name``."""
        try:
            return self._classes[name]
        except KeyError:
            raise UnknownGraderError(name, self.names()) from None

    def instance(self, name: str) -> Grader[Any]:
        """Return the shared instance of grader ``name``, building it on first use."""
        grader = self._instances.get(name)
        if grader is None:
            grader = self.get(name)()
            self._instances[name] = grader
        return grader

    async def warm(self, names: Iterable[str]) -> None:
        """Build and warm the graders called ``names`` (unknown names are left to validation)."""
        graders = [self.instance(n) for n in dict.fromkeys(names) if n in self._classes]
        await asyncio.gather(*(g.warm() for g in graders))

    def built(self) -> list[Grader[Any]]:
        """Return the instances built so far (the graders some rubric has used)."""
        return list(self._instances.values())

    def close(self) -> None:
        """Close every built grader (stops sandbox pools and the like)."""
        for grader in self._instances.values():
            grader.close()

    def names(self) -> list[str]:
        """Registered grader names, sorted."""
        return sorted(self._classes)

    def __contains__(self, name: object) -> bool:
        return name in self._classes

    def __iter__(self) -> Iterator[type[Grader[Any]]]:
        return iter(self._classes[name] for name in self.names())


def default_registry() -> GraderRegistry:
    """Return a fresh registry holding every grader that ships with Arbiter."""
    from arbiter.graders.bandit import BanditGrader
    from arbiter.graders.efficiency import EfficiencyGrader
    from arbiter.graders.llm_judge import LLMJudgeGrader
    from arbiter.graders.process import ProcessGrader
    from arbiter.graders.radon import RadonGrader
    from arbiter.graders.reward_model import RewardModelGrader
    from arbiter.graders.unit_tests import UnitTestsGrader
    from arbiter.graders.violations import ViolationsGrader

    registry = GraderRegistry()
    for grader in (
        RadonGrader,
        EfficiencyGrader,
        LLMJudgeGrader,
        ProcessGrader,
        RewardModelGrader,
        BanditGrader,
        UnitTestsGrader,
        ViolationsGrader,
    ):
        registry.register(grader)
    return registry
