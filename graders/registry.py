"""Name → grader class, so a rubric can name graders and validate their configs at load."""

from __future__ import annotations

import asyncio
import difflib
import importlib
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from arbiter.graders.base import Grader
from arbiter.graders.types import Sample

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
    """Grader classes by name, and one shared instance of each once asked for.

    A class may be registered by where it lives (:meth:`register_lazy`): it is
    imported when first asked for, so a command whose rubric uses the tests
    alone never imports bandit, the judges or the reward models.
    """

    def __init__(self) -> None:
        self._classes: dict[str, type[Grader[Any]]] = {}
        #: Name -> ``module:Class``, for classes not imported yet.
        self._lazy: dict[str, str] = {}
        self._instances: dict[str, Grader[Any]] = {}

    def register(self, cls: type[Grader[Any]], *, replace: bool = False) -> type[Grader[Any]]:
        """Add a grader class; a name can be taken once unless ``replace`` is set."""
        if cls.name in self and not replace:
            raise ValueError(f"a grader named {cls.name!r} is already registered")
        self._lazy.pop(cls.name, None)
        self._classes[cls.name] = cls
        self._instances.pop(cls.name, None)
        return cls

    def register_lazy(self, name: str, where: str) -> None:
        """Add the grader ``name`` as ``module:Class``, imported on first use."""
        if name in self:
            raise ValueError(f"a grader named {name!r} is already registered")
        self._lazy[name] = where

    def add_instance(self, grader: Grader[Any]) -> None:
        """Register a ready instance (one built with its I/O dependencies injected)."""
        self._lazy.pop(grader.name, None)
        self._classes[grader.name] = type(grader)
        self._instances[grader.name] = grader

    def get(self, name: str) -> type[Grader[Any]]:
        """Return the grader class called ``name``."""
        found = self._classes.get(name)
        if found is not None:
            return found
        where = self._lazy.get(name)
        if where is None:
            raise UnknownGraderError(name, self.names())
        module, _, attribute = where.partition(":")
        cls: type[Grader[Any]] = getattr(importlib.import_module(module), attribute)
        if cls.name != name:
            raise ValueError(f"{where} is the grader {cls.name!r}, not {name!r}")
        del self._lazy[name]
        self._classes[name] = cls
        return cls

    def instance(self, name: str) -> Grader[Any]:
        """Return the shared instance of grader ``name``, building it on first use."""
        grader = self._instances.get(name)
        if grader is None:
            grader = self.get(name)()
            self._instances[name] = grader
            grader.attach(self)
        return grader

    async def warm(self, names: Iterable[str], samples: Sequence[Sample] | None = None) -> None:
        """Build and warm the graders called ``names`` (unknown names are left to validation).

        With ``samples`` (a command that knows its batch), each grader hears of
        them first (:meth:`Grader.expect`), and starts only what they need.
        """
        graders = [self.instance(n) for n in dict.fromkeys(names) if n in self]
        if samples is not None:
            for grader in graders:
                grader.expect(samples)
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
        return sorted({*self._classes, *self._lazy})

    def __contains__(self, name: object) -> bool:
        return name in self._classes or name in self._lazy

    def __iter__(self) -> Iterator[type[Grader[Any]]]:
        return iter(self.get(name) for name in self.names())


#: The graders that ship with Arbiter, by where they live.
BUILT_IN: dict[str, str] = {
    "radon": "arbiter.graders.radon:RadonGrader",
    "efficiency": "arbiter.graders.efficiency:EfficiencyGrader",
    "llm_judge": "arbiter.graders.llm_judge:LLMJudgeGrader",
    "process": "arbiter.graders.process:ProcessGrader",
    "reward_model": "arbiter.graders.reward_model:RewardModelGrader",
    "bandit": "arbiter.graders.bandit:BanditGrader",
    "unit_tests": "arbiter.graders.unit_tests:UnitTestsGrader",
    "hidden_tests": "arbiter.graders.hidden_tests:HiddenTestsGrader",
    "violations": "arbiter.graders.violations:ViolationsGrader",
    "answer": "arbiter.graders.answers.grader:AnswerGrader",
    "instructions": "arbiter.graders.instructions:InstructionsGrader",
    "reasoning_gym": "arbiter.graders.reasoning_gym:ReasoningGymGrader",
}


def default_registry() -> GraderRegistry:
    """Return a fresh registry holding every grader that ships with Arbiter (imported on use)."""
    registry = GraderRegistry()
    for name, where in BUILT_IN.items():
        registry.register_lazy(name, where)
    return registry
