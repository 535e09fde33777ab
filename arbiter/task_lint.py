"""Task lint (``arbiter tasks lint``): does a task's test set tell right from wrong?

A task whose tests only say what an answer is not (``assert not f(1, 0) > 0``)
pays ``float('nan')`` the whole reward, and the policy learns from it all the
same. For each task of a set this grades, through the ``unit_tests`` grader and
the sandbox, exactly as a reward would:

- **the reference** (``task.reference``, or a sample of the set labelled to pass),
  ``repeats`` times: a reference that fails its own tests is a contradiction, one
  whose outcome varies is flaky;
- **trivial candidates** that must all fail: ``None``, ``NaN``, ``0``, ``""``,
  ``[]``, the identity, the arguments echoed back, raising (for a program: no
  output, the input echoed, ``0``, raising);
- **mutants of the reference** (:func:`arbiter.graders.repository.mutations.mutants`,
  its wide set: one operator, constant, call, return value or condition changed at a
  time, ``max_mutants`` at most): the share the tests kill is
  their mutation score. A mutant that survives may be equivalent to the reference;
  the report lists the survivors so a person can tell.

Each task is graded ``weak`` (the reference fails or is flaky, a trivial
candidate passes, or fewer than half the mutants are killed), ``strong`` (every
trivial candidate fails and at least 80% of at least 10 mutants are killed) or
``fine``, with its reasons. A task without a reference gets the trivial
candidates only, and at most ``fine``.

With ``hidden``, a ``python_function`` task with a reference is also graded with
its hidden cases (:mod:`arbiter.graders.hidden_cases`: inputs mutated from the
visible tests', answered by the reference) in the same runs: a mutant that passes
the visible tests and fails a hidden case is killed *with the hidden cases*. The
report gives both scores, and how many cases each task got; the grade reads
the visible tests alone (it says what the task's own tests catch).
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import json
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from arbiter.graders import languages
from arbiter.graders.languages import mutation
from arbiter.graders.languages.base import ProgramParts, UnsupportedTask
from arbiter.graders.program import program_of
from arbiter.graders.repository.mutations import mutants
from arbiter.graders.runner import GraderJob, run_jobs
from arbiter.graders.sandbox.checks import CheckPlanError, plan_function_tests
from arbiter.graders.types import FailureKind, GradeResult, Sample, TaskSpec
from arbiter.graders.unit_tests import UnitTestsConfig, UnitTestsGrader

__all__ = ["LintedTask", "TaskToLint", "lint_tasks", "summary_of", "tasks_of"]

#: Fewer killed than this share of the mutants: the tests barely look at the answer.
WEAK_BELOW = 0.5
#: At least this share killed, of at least STRONG_MIN_MUTANTS mutants: strong.
STRONG_FROM = 0.8
STRONG_MIN_MUTANTS = 10

#: Bodies of a function that knows nothing of its task.
TRIVIAL_FUNCTIONS: dict[str, str] = {
    "none": "return None",
    "nan": "return float('nan')",
    "zero": "return 0",
    "empty_string": "return ''",
    "empty_list": "return []",
    "identity": "return args[0] if args else None",
    "echo_arguments": "return args",
    "raises": "raise RuntimeError('trivial')",
}
#: Programs that know nothing of their task (stdin/stdout).
TRIVIAL_PROGRAMS: dict[str, str] = {
    "no_output": "pass\n",
    "echo_input": "import sys\nsys.stdout.write(sys.stdin.read())\n",
    "zero": "print(0)\n",
    "raises": "raise RuntimeError('trivial')\n",
}


@dataclass(frozen=True)
class TaskToLint:
    """One task of a set, with its reference (if the set has one) and where it came from."""

    id: str
    task: TaskSpec
    prompt: str
    reference: str | None


@dataclass
class LintedTask:
    """What the lint found for one task."""

    id: str
    kind: str
    grade: str
    reasons: list[str]
    #: ``passes``, ``fails``, ``flaky``, ``timeout`` (past the lint's limit) or ``absent``.
    reference: str
    #: Trivial candidate -> ``fails`` or ``passes``.
    trivial: dict[str, str] = field(default_factory=dict)
    mutants: int = 0
    killed: int = 0
    #: Survivors as ``operator @ line``: equivalent to the reference, or a hole in the tests.
    survivors: list[str] = field(default_factory=list)
    #: The hidden cases the task got (0: none, or not asked for), and the mutants
    #: killed by the visible tests or by them.
    hidden_cases: int = 0
    killed_with_hidden: int = 0
    #: The task's language, and (``test_program``) mutants left out of the score because
    #: they did not compile: a site the lexical mutator misread, no test's doing.
    language: str = "python"
    stillborn: int = 0

    @property
    def mutation_score(self) -> float | None:
        """The share of the reference's mutants the tests kill (None without mutants)."""
        return self.killed / self.mutants if self.mutants else None

    @property
    def mutation_score_with_hidden(self) -> float | None:
        """The share killed by the visible tests and the hidden cases together."""
        if not self.mutants or not self.hidden_cases:
            return None
        return self.killed_with_hidden / self.mutants

    def as_dict(self) -> dict[str, Any]:
        """The task's findings as plain data, the mutation scores included."""
        return {
            **asdict(self),
            "mutation_score": self.mutation_score,
            "mutation_score_with_hidden": self.mutation_score_with_hidden,
        }


def _task_key(task: TaskSpec) -> str:
    return hashlib.sha256(task.model_dump_json().encode()).hexdigest()


def _passes_label(sample: Sample) -> bool:
    expected = (sample.labels or {}).get("expected")
    if isinstance(expected, dict):
        return expected.get("tests_pass") is True or expected.get("tests") == 1.0
    return expected is True or expected == 1.0


def tasks_of(samples: Sequence[Sample]) -> list[TaskToLint]:
    """The distinct gradeable tasks of a set, in order, each with a reference where one is known.

    A sample's ``task.reference`` is its task's reference; otherwise the first
    sample of the same task labelled to pass (``labels.expected.tests_pass``).
    """
    order: list[str] = []
    found: dict[str, TaskToLint] = {}
    for sample in samples:
        task = sample.task
        if not isinstance(task, TaskSpec) or not _lintable(task):
            continue
        key = _task_key(task)
        prompt = sample.prompt if isinstance(sample.prompt, str) else ""
        reference = task.reference
        if reference is None and _passes_label(sample):
            if task.kind == "test_program":
                # A completion in the task's language, as the grader reads it.
                reference = sample.response if isinstance(sample.response, str) else None
            else:
                # The program the grader would run for it: prompt and completion assembled.
                program = program_of(sample)
                reference = program.code if program is not None else None
        known = found.get(key)
        if known is None:
            order.append(key)
            found[key] = TaskToLint(sample.group_id or sample.id, task, prompt, reference)
        elif known.reference is None and reference is not None:
            found[key] = TaskToLint(known.id, task, known.prompt, reference)
    return [found[k] for k in order]


def _lintable(task: TaskSpec) -> bool:
    """Python functions and programs, and functions in the languages :mod:`mutation` reads."""
    if task.kind == "python_function":
        return True
    if task.kind == "stdin_stdout":
        return task.language in (None, "python")
    return task.kind == "test_program" and task.language in mutation.LANGUAGES


def _declared(item: TaskToLint) -> languages.base.Declared | None:
    """The function a ``test_program`` task's prompt opens for the candidate, if it reads."""
    task = item.task
    lang = languages.language(str(task.language))
    parts = ProgramParts(
        prompt=item.prompt,
        code=item.prompt,
        tests=str(task.tests or ""),
        setup_code=task.setup_code or "",
        entry_point=task.entry_point,
    )
    try:
        found = lang.declared(parts)
    except UnsupportedTask:
        return None
    named = [d for d in found if d.name == task.entry_point] or found
    return named[0] if named else None


def _entry_point(item: TaskToLint) -> str | None:
    """The function the tests call: the task's entry point, or the one name they need."""
    task = item.task
    if task.entry_point:
        return task.entry_point
    tests = task.tests if isinstance(task.tests, str) else [str(t) for t in task.tests or []]
    try:
        plan = plan_function_tests(tests, task.setup_code, reference=item.reference)
    except CheckPlanError:
        return None
    names = sorted(plan.declared)
    return names[0] if len(names) == 1 else None


def _trivial_sources(item: TaskToLint) -> dict[str, str]:
    if item.task.kind == "stdin_stdout":
        return dict(TRIVIAL_PROGRAMS)
    if item.task.kind == "test_program":
        declared = _declared(item)
        if declared is None:
            return {}
        return mutation.trivial_bodies(str(item.task.language), declared, item.prompt)
    name = _entry_point(item)
    if name is None:
        return {}
    return {
        trivial: f"def {name}(*args, **kwargs):\n    {body}\n"
        for trivial, body in TRIVIAL_FUNCTIONS.items()
    }


def _sample(item: TaskToLint, suffix: str, code: str) -> Sample:
    if item.task.kind == "test_program":
        # A completion of the prompt, as a policy's would be.
        return Sample(id=f"{item.id}/{suffix}", prompt=item.prompt, response=code, task=item.task)
    # The code alone, fenced: the grader reads the whole answer, helpers included.
    return Sample(
        id=f"{item.id}/{suffix}",
        prompt=item.prompt,
        response=f"```python\n{code}\n```",
        task=item.task,
    )


def _passed(result: GradeResult) -> bool:
    return result.score == 1.0


def _did_not_compile(result: GradeResult) -> bool:
    if result.failure is not None:
        return result.failure.kind == FailureKind.COMPILE_ERROR
    return (result.details or {}).get("failure_kind") == FailureKind.COMPILE_ERROR.value


def _timed_out(result: GradeResult) -> bool:
    """Whether a grading met its time limit: the whole run, or any of its tests."""
    if result.failure is not None:
        return result.failure.kind == FailureKind.TIMEOUT
    details = result.details or {}
    if details.get("failure_kind") == FailureKind.TIMEOUT.value:
        return True
    tests = details.get("tests")
    return isinstance(tests, list) and any(
        isinstance(t, dict) and t.get("outcome") == "timeout" for t in tests
    )


def lint_tasks(
    items: Sequence[TaskToLint],
    grader: UnitTestsGrader,
    *,
    config: UnitTestsConfig | None = None,
    repeats: int = 3,
    max_mutants: int = 24,
    seed: int = 0,
    concurrency: int = 8,
    hidden: bool = True,
    log: Callable[[LintedTask], None] | None = None,
) -> list[LintedTask]:
    """Lint each task (see the module's docstring); results in the order of ``items``."""
    config = config or UnitTestsConfig(timeout_s=10.0)
    if hidden:
        config = config.model_copy(update={"hidden_cases": True})
    out: list[LintedTask] = []
    for item in items:
        linted = _lint_one(item, grader, config, repeats, max_mutants, seed, concurrency)
        if log is not None:
            log(linted)
        out.append(linted)
    return out


def _lint_one(
    item: TaskToLint,
    grader: UnitTestsGrader,
    config: UnitTestsConfig,
    repeats: int,
    max_mutants: int,
    seed: int,
    concurrency: int,
) -> LintedTask:
    jobs: list[tuple[str, str, Sample]] = []  # (what, label, sample)
    if (
        config.hidden_cases
        and item.reference is not None
        and item.task.kind in ("python_function", "test_program")
        and item.task.reference is None
    ):
        # The hidden cases come from the task's reference: the set's passing sample here.
        item = dataclasses.replace(
            item, task=item.task.model_copy(update={"reference": item.reference})
        )
    if item.reference is not None:
        for i in range(repeats):
            jobs.append(("reference", str(i), _sample(item, f"reference-{i}", item.reference)))
        if item.task.kind == "test_program":
            language = str(item.task.language)
            made = [
                (m.operator, m.line, m.mutated)
                for m in mutation.mutants(
                    language, item.reference, seed=f"{seed}:{item.id}", limit=max_mutants
                )
            ]
        else:
            made = [
                (m.operator, m.line, m.mutated)
                for m in mutants(
                    "solution.py", item.reference, seed=seed, per_function=max_mutants, wide=True
                )
            ]
        for i, (operator, line, mutated) in enumerate(made[:max_mutants]):
            label = f"{operator} @ line {line}"
            jobs.append(("mutant", label, _sample(item, f"mutant-{i}", mutated)))
    for name, code in _trivial_sources(item).items():
        jobs.append(("trivial", name, _sample(item, f"trivial-{name}", code)))
    graded = asyncio.run(
        run_jobs(
            [GraderJob(s, "tests", grader, config, 120.0) for _, _, s in jobs],
            max_concurrency=concurrency,
        )
    )
    linted = LintedTask(
        item.id, item.task.kind, "fine", [], "absent", language=item.task.language or "python"
    )
    reference_runs: list[bool] = []
    reference_slow = False
    for (what, label, _), result in zip(jobs, graded, strict=True):
        if what == "reference":
            reference_runs.append(_passed(result))
            reference_slow = reference_slow or _timed_out(result)
        elif what == "trivial":
            linted.trivial[label] = "passes" if _passed(result) else "fails"
        elif item.task.kind == "test_program" and _did_not_compile(result):
            linted.stillborn += 1
        else:
            linted.mutants += 1
            hidden = (result.details or {}).get("hidden") or {}
            linted.hidden_cases = max(linted.hidden_cases, int(hidden.get("total") or 0))
            if _passed(result):
                linted.survivors.append(label)
                linted.killed_with_hidden += bool(hidden.get("failed"))
            else:
                linted.killed += 1
                linted.killed_with_hidden += 1
    if reference_runs:
        if reference_slow:
            # Past the lint's own limit: no verdict on the tests, and mutants that time
            # out would count as killed.
            linted.reference = "timeout"
            linted.mutants, linted.killed, linted.survivors = 0, 0, []
            linted.killed_with_hidden = 0
        elif all(reference_runs):
            linted.reference = "passes"
        elif not any(reference_runs):
            linted.reference = "fails"
        else:
            linted.reference = "flaky"
    _grade(linted)
    return linted


def _grade(linted: LintedTask) -> None:
    """Set the task's grade and its reasons from what the lint found."""
    reasons = linted.reasons
    if linted.reference == "fails":
        reasons.append("the reference fails its own tests (a contradiction)")
    elif linted.reference == "flaky":
        reasons.append("the reference's outcome varies between runs (flaky tests)")
    elif linted.reference == "absent":
        reasons.append("no reference: no mutation score")
    elif linted.reference == "timeout":
        reasons.append("the reference ran past the lint's time limit (raise --timeout-s)")
    passing = sorted(t for t, outcome in linted.trivial.items() if outcome == "passes")
    if passing:
        reasons.append(f"passed by trivial candidates: {', '.join(passing)}")
    if not linted.trivial:
        reasons.append("no trivial candidate could be written (no single function to call)")
    score = linted.mutation_score
    if score is not None and linted.reference == "passes":
        with_hidden = linted.mutation_score_with_hidden
        reasons.append(
            f"{linted.killed} of {linted.mutants} mutants killed"
            + (
                f" ({linted.killed_with_hidden} with {linted.hidden_cases} hidden cases)"
                if with_hidden is not None
                else ""
            )
        )
    weak = (
        linted.reference in ("fails", "flaky")
        or bool(passing)
        or (score is not None and linted.reference == "passes" and score < WEAK_BELOW)
    )
    strong = (
        linted.reference == "passes"
        and not passing
        and bool(linted.trivial)
        and score is not None
        and linted.mutants >= STRONG_MIN_MUTANTS
        and score >= STRONG_FROM
    )
    linted.grade = "weak" if weak else "strong" if strong else "fine"


def summary_of(linted: Sequence[LintedTask]) -> dict[str, Any]:
    """Counts by grade, the weak tasks with their reasons, and the mutation scores."""
    counts = {grade: sum(t.grade == grade for t in linted) for grade in ("weak", "fine", "strong")}
    scores = [t.mutation_score for t in linted if t.mutation_score is not None]
    hidden = [
        t.mutation_score_with_hidden for t in linted if t.mutation_score_with_hidden is not None
    ]
    return {
        "tasks": len(linted),
        **counts,
        "weak_tasks": {t.id: t.reasons for t in linted if t.grade == "weak"},
        "mutants": sum(t.mutants for t in linted),
        "mutants_killed": sum(t.killed for t in linted),
        "median_mutation_score": sorted(scores)[len(scores) // 2] if scores else None,
        "tasks_with_hidden_cases": len(hidden),
        "mutants_killed_with_hidden": sum(t.killed_with_hidden for t in linted if t.hidden_cases),
        "median_mutation_score_with_hidden": sorted(hidden)[len(hidden) // 2] if hidden else None,
        "thresholds": {
            "weak_below": WEAK_BELOW,
            "strong_from": STRONG_FROM,
            "strong_min_mutants": STRONG_MIN_MUTANTS,
        },
    }


def report_json(linted: Sequence[LintedTask]) -> str:
    """The whole report as JSON: the summary, then every task."""
    body = {"summary": summary_of(linted), "tasks": [t.as_dict() for t in linted]}
    return json.dumps(body, indent=2, sort_keys=False)
