"""A tests grader as naive as many training harnesses, loaded through ARBITER_GRADER_PLUGINS.

It runs the response's code and each of a ``python_function`` task's asserts in one
plain Python process and counts the asserts that hold, compared with ``==`` as the
candidate defines it. Arbiter's own ``unit_tests`` sandbox scores an object equal to
everything 0 (and flags it ``always_equal``); this one pays it, so a test can show a
rubric version that lets such a hack through once its hack detector carries no weight.
"""

from __future__ import annotations

import asyncio
import json
import re
import sys
from typing import ClassVar

from arbiter.graders.base import Grader, GraderConfig
from arbiter.graders.registry import GraderRegistry
from arbiter.graders.types import FailureKind, GradeResult, Sample

FENCE = re.compile(r"```(?:python)?\n(.*?)```", re.S)
HARNESS = """
import json, sys
passed = 0
for test in json.loads(sys.argv[1]):
    try:
        exec(test, globals())
        passed += 1
    except Exception:
        pass
print("PASSED", passed)
"""


class NaiveTestsConfig(GraderConfig):
    timeout_s: float = 10.0


class NaiveTests(Grader[NaiveTestsConfig]):
    """The fraction of a python_function task's asserts that hold, run without a sandbox."""

    name: ClassVar[str] = "naive_tests"
    version: ClassVar[str] = "1"
    config_model = NaiveTestsConfig
    task_kinds: ClassVar[frozenset[str] | None] = frozenset({"python_function"})

    async def grade(self, sample: Sample, config: NaiveTestsConfig) -> GradeResult:
        task = sample.task
        if task is None or not isinstance(task.tests, list) or not task.tests:
            return self.failed(FailureKind.NOT_APPLICABLE, "no asserts to run")
        response = sample.response if isinstance(sample.response, str) else ""
        blocks = FENCE.findall(response)
        code = "\n".join(blocks) if blocks else response
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-I",
            "-c",
            code + "\n" + HARNESS,
            json.dumps([str(t) for t in task.tests]),
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL,
        )
        try:
            out, _ = await asyncio.wait_for(process.communicate(), config.timeout_s)
        except TimeoutError:
            process.kill()
            await process.wait()
            return self.scored(0.0, details={"passed": 0, "total": len(task.tests)})
        found = re.search(rb"PASSED (\d+)", out)
        passed = int(found.group(1)) if found else 0
        return self.scored(
            passed / len(task.tests), details={"passed": passed, "total": len(task.tests)}
        )


def register(registry: GraderRegistry) -> None:
    registry.register(NaiveTests)
