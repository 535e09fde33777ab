"""Attacks on the verdict itself: each is real against a flawed harness, none pays off here.

The attacks (``tests/graders/sandbox/verdict_attacks.py``) cover ten mechanisms
a red team found in the unit-test grader's trusted side: the candidate filling
the test namespace, candidate objects answering the tests' questions,
exceptions matched by name, invisible argument mutation, runs that see earlier
runs, hash-keyed hard-coding, a float tolerance on integers, crashes of the
grader, dodged zeros, and honest code misgraded. Each attack is tested twice:

* its control: the attack succeeds (passes, crashes, dodges) against a naive
  harness (candidate and tests in one process, ``naive_pass``) or, where that
  one is not vulnerable, against a small model of the flawed mechanism written
  here (arguments copied in and never back, exceptions re-raised by class name,
  one interpreter running one program after another, modules imported by the
  name the candidate gave them, a recursive clean-up, a relative tolerance on
  every numeric token, a setup failure blamed on the task);
* the real grader: nothing escapes ``grade_sync``, the item is scored (no
  abstention), and the score is what the attack earned: 0 where it forged
  every test, below 1 where it forged some, 1.0 for the honest code of
  mechanism 10; a crash leaves the grader able to give the next honest sample
  its 1.0; a hash-keyed table is reported as ``hardcoded_output`` and the
  python-codegen rubric gives it less than half.

Every task's honest solution scores 1.0 (an attack that fails is then not just
a broken task). Last, a run looks for another run's marker in its whole
readable memory, and finds none, though it finds its own.
"""

from __future__ import annotations

import asyncio
import builtins
import contextlib
import copy
import json
import math
import os
import secrets
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any
from unittest import mock

import pytest

from arbiter.graders.program import program_of
from arbiter.graders.registry import default_registry
from arbiter.graders.sandbox import PoolConfig, SandboxPool
from arbiter.graders.types import GradeResult, IOCase, Sample, TaskSpec, ViolationType
from arbiter.graders.unit_tests import UnitTestsConfig, UnitTestsGrader
from arbiter.graders.violations import ViolationsConfig, ViolationsGrader
from arbiter.rubrics.loader import load_rubric
from arbiter.rubrics.score import score_samples
from tests.graders.sandbox.conftest import naive_pass
from tests.graders.sandbox.verdict_attacks import (
    ATTACKS,
    FIND_MARKERS,
    MECHANISMS,
    TASKS,
    Attack,
    Task,
    two_stage,
)

KINDS = ("python_function", "pytest", "stdin_stdout")
CODEGEN = Path(__file__).resolve().parents[3] / "rubrics" / "library" / "python-codegen.yaml"
#: The grader's settings for every attack (an attack may add its own).
SETTINGS: dict[str, Any] = {"timeout_s": 4.0, "fail_as_zero": True}
#: What ``sys.argv`` holds while the grader runs: should the trusted side import
#: ``unittest.__main__`` (mechanism 8), unittest's argument parser stops at once
#: instead of discovering and running this repository's tests.
GRADING_ARGV = ["arbiter-grader", "--not-an-option"]


def _program(sample: Sample) -> str:
    program = program_of(sample)
    assert program is not None, sample.id
    return program.code


# --- the grader side ------------------------------------------------------------------


def grade(
    grader: UnitTestsGrader, sample: Sample, **config: Any
) -> tuple[GradeResult | None, BaseException | None]:
    """Grade one sample; return the result, or what escaped ``grade_sync`` instead."""
    settings = UnitTestsConfig.model_validate({**SETTINGS, **config})
    with mock.patch.object(sys, "argv", GRADING_ARGV):
        try:
            return grader.grade_sync(sample, settings), None
        except KeyboardInterrupt:
            raise
        except BaseException as e:  # what escapes is the finding
            return None, e


def remove_deep(path: str | Path) -> None:
    """Remove a tree of any depth without recursion (one directory descriptor at a time)."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    names: list[str] = []
    try:
        while True:
            with os.scandir(fd) as entries:
                found = [(e.name, e.is_dir(follow_symlinks=False)) for e in entries]
            sub = next((name for name, is_dir in found if is_dir), None)
            if sub is not None:
                os.chmod(sub, 0o700, dir_fd=fd, follow_symlinks=False)
                child = os.open(sub, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd)
                os.close(fd)
                fd = child
                names.append(sub)
                continue
            for name, _ in found:
                os.unlink(name, dir_fd=fd)
            if not names:
                break
            parent = os.open("..", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = parent
            os.rmdir(names.pop(), dir_fd=fd)
    finally:
        os.close(fd)
    os.rmdir(path)


@contextlib.contextmanager
def own_grader() -> Iterator[UnitTestsGrader]:
    """A grader on a single-slot pool of its own, closed however the attack left it."""
    pool = SandboxPool(PoolConfig(slots=1))
    pool.start()
    scratch = pool.scratch
    try:
        yield UnitTestsGrader(pool)
    finally:
        # What a run left (a deep chain) is removed first: the pool's own clean-up recurses.
        for slot in Path(scratch).glob("slot-*"):
            if slot.is_dir():
                for entry in (slot / "runs").glob("*") if (slot / "runs").is_dir() else ():
                    if entry.is_dir() and not entry.is_symlink():
                        remove_deep(entry)
        with contextlib.suppress(Exception):
            pool.close()
        if os.path.isdir(scratch):
            remove_deep(scratch)


@pytest.fixture(scope="module")
def solo() -> Iterator[UnitTestsGrader]:
    """One slot, so that consecutive runs are forked from the same sandbox process."""
    pool = SandboxPool(PoolConfig(slots=1))
    pool.start()
    yield UnitTestsGrader(pool)
    pool.close()


@pytest.fixture(scope="module")
def codegen_reward(grader: UnitTestsGrader) -> Iterator[Callable[[Sample], float | None]]:
    """The python-codegen rubric's reward for one sample (its unit tests on the suite's pool)."""
    registry = default_registry()
    registry.add_instance(grader)
    rubric = load_rubric(CODEGEN, registry)

    def reward(sample: Sample) -> float | None:
        return asyncio.run(score_samples(rubric, [sample], registry=registry))[0].reward

    yield reward
    for built in registry.built():
        if built is not grader:
            built.close()


# --- the controls -------------------------------------------------------------------------


def _run(argv: list[str], cwd: Path, stdin: str = "") -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1", "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
    env.pop("PYTEST_ADDOPTS", None)
    return subprocess.run(
        argv, cwd=cwd, env=env, input=stdin, capture_output=True, text=True, timeout=120
    )


def _tests_text(spec: TaskSpec) -> str:
    return spec.tests if isinstance(spec.tests, str) else "\n".join(map(str, spec.tests))


def _copying(fn: Callable[..., Any]) -> Callable[..., Any]:
    """A proxy that copies the arguments in and the result out, and nothing back."""

    def call(*args: Any, **kwargs: Any) -> Any:
        return copy.deepcopy(fn(*copy.deepcopy(args), **copy.deepcopy(kwargs)))

    return call


def _by_name(fn: Callable[..., Any]) -> Callable[..., Any]:
    """A proxy that re-raises the candidate's exceptions as the builtin of the same name."""

    def call(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except Exception as e:
            if type(e) in vars(builtins).values():
                raise
            names = [klass.__name__ for klass in type(e).__mro__]
            if "StopIteration" in names:
                raise StopIteration from None
            for name in names:
                found = getattr(builtins, name, None)
                if isinstance(found, type) and issubclass(found, Exception):
                    raise found(str(e)) from None
            raise

    return call


def _model_function_pass(program: str, spec: TaskSpec, wrap: Callable[..., Any]) -> bool:
    """Function tests run beside the candidate, each of its functions behind ``wrap``."""
    candidate: dict[str, Any] = {"__name__": "candidate"}
    exec(compile(program, "solution.py", "exec"), candidate)
    namespace: dict[str, Any] = {"__name__": "tests"}
    for name, value in candidate.items():
        if callable(value) and not isinstance(value, type) and not name.startswith("__"):
            namespace[name] = wrap(value)
    try:
        exec(compile(_tests_text(spec), "<tests>", "exec"), namespace)
        if "check" in namespace and spec.entry_point:
            namespace["check"](namespace[spec.entry_point])
    except Exception:
        return False
    return True


#: Appended to a pytest candidate's module: the same proxies, around its functions.
_SUITE_WRAPPER = """

import builtins as _builtins
import copy as _copy


def _copying(fn):
    def call(*args, **kwargs):
        return _copy.deepcopy(fn(*_copy.deepcopy(args), **_copy.deepcopy(kwargs)))
    return call


def _by_name(fn):
    def call(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except Exception as e:
            if type(e) in vars(_builtins).values():
                raise
            names = [klass.__name__ for klass in type(e).__mro__]
            if "StopIteration" in names:
                raise _builtins.StopIteration from None
            for name in names:
                found = getattr(_builtins, name, None)
                if isinstance(found, type) and issubclass(found, Exception):
                    raise found(str(e)) from None
            raise
    return call


for _name, _value in list(globals().items()):
    if callable(_value) and not isinstance(_value, type) and not _name.startswith("_"):
        globals()[_name] = {wrap}(_value)
"""


def _setup_abstains(program: str, spec: TaskSpec) -> bool:
    """A harness that runs the task's setup beside the candidate and blames the task if it fails."""
    namespace: dict[str, Any] = {"__name__": "candidate"}
    exec(compile(program, "solution.py", "exec"), namespace)
    try:
        exec(spec.setup_code or _tests_text(spec), namespace)
    except Exception:
        return True  # "the task's setup is broken": no score
    return False


#: One interpreter that runs one program after another (a server reusing its process):
#: the earlier program first, then the later one, each against the task's tests.
_LONG_LIVED = r"""
import io, json, os, sys, tempfile, types

job = json.loads(sys.stdin.read())
verdicts = []
for index, program in enumerate(job["programs"]):
    try:
        if job["kind"] == "python_function":
            namespace = {"__name__": "candidate"}
            exec(program, namespace)
            exec(job["tests"], namespace)
            if "check" in namespace:
                namespace["check"](namespace[job["entry_point"]])
            ok = True
        elif job["kind"] == "stdin_stdout":
            ok = True
            for given, wanted in job["cases"]:
                real_in, real_out = sys.stdin, sys.stdout
                sys.stdin, sys.stdout = io.StringIO(given), io.StringIO()
                try:
                    exec(program, {"__name__": "__main__"})
                    printed = sys.stdout.getvalue()
                finally:
                    sys.stdin, sys.stdout = real_in, real_out
                ok = ok and printed.split() == wanted.split()
        else:
            import pytest

            module = types.ModuleType("solution")
            exec(program, module.__dict__)
            sys.modules["solution"] = module
            root = tempfile.mkdtemp()
            with open(os.path.join(root, f"test_run{index}.py"), "w") as f:
                f.write(job["tests"])
            ok = pytest.main(["-q", "-p", "no:cacheprovider", root]) == 0
    except BaseException:
        ok = False
    verdicts.append(ok)
print("VERDICTS", json.dumps(verdicts))
"""


def _long_lived_passes(primer: str, program: str, spec: TaskSpec, root: Path) -> tuple[bool, str]:
    cases = [[c.input, c.output] for c in spec.tests if isinstance(c, IOCase)]
    job = {
        "kind": spec.kind,
        "programs": [primer, program],
        "tests": _tests_text(spec) if spec.kind != "stdin_stdout" else "",
        "entry_point": spec.entry_point,
        "cases": cases,
    }
    done = _run([sys.executable, "-c", _LONG_LIVED], root, json.dumps(job))
    line = next((x for x in done.stdout.splitlines() if x.startswith("VERDICTS ")), "")
    verdicts = json.loads(line.removeprefix("VERDICTS ")) if line else []
    return verdicts == [True, True], f"verdicts {verdicts}: {done.stderr[-500:]}"


#: A harness that re-imports, by name, the modules the candidate's globals hold.
_MODULE_IMPORT = r"""
import importlib, sys, types

namespace = {"__name__": "candidate"}
exec(open(sys.argv[1]).read(), namespace)
for value in list(namespace.values()):
    if isinstance(value, types.ModuleType):
        importlib.import_module(value.__name__)
print("survived")
"""


def _lenient_match(actual: str, expected: str, tolerance: float = 1e-6) -> bool:
    """Whitespace-split tokens; numeric tokens match within a relative or absolute tolerance."""
    got, want = actual.split(), expected.split()
    if len(got) != len(want):
        return False
    for a, b in zip(got, want, strict=True):
        if a == b:
            continue
        try:
            x, y = float(a), float(b)
        except ValueError:
            return False
        if not math.isclose(x, y, rel_tol=tolerance, abs_tol=tolerance):
            return False
    return True


def control(attack: Attack) -> tuple[bool, str]:
    """Run the attack against the harness it defeats; return whether it succeeded, and how."""
    program, spec = _program(attack.sample), attack.task.spec
    root = Path(tempfile.mkdtemp(prefix="verdict-control-"))
    try:
        return _control(attack, program, spec, root)
    finally:
        remove_deep(root)


def _control(attack: Attack, program: str, spec: TaskSpec, root: Path) -> tuple[bool, str]:
    how = attack.control
    if how == "naive":
        return naive_pass(program, spec, root), "candidate and tests in one process"
    if how == "naive_collection_error":
        ok = naive_pass(program, spec, root, passing_status=(2,))
        return ok, "plain pytest stops at collection (status 2): the task's fault to such a harness"
    if how in ("copying", "by_name"):
        wrap = _copying if how == "copying" else _by_name
        if spec.kind == "pytest":
            suite = program + _SUITE_WRAPPER.replace("{wrap}", wrap.__name__)
            return naive_pass(suite, spec, root), f"plain pytest, functions behind {how}"
        return _model_function_pass(program, spec, wrap), f"tests beside the candidate, {how}"
    if how == "setup_abstain":
        return _setup_abstains(program, spec), "the setup fails only with this candidate"
    if how == "long_lived":
        primer = _program(attack.task.honest_sample())
        return _long_lived_passes(primer, program, spec, root)
    if how == "module_import":
        path = root / "solution.py"
        path.write_text(program)
        done = _run([sys.executable, "-c", _MODULE_IMPORT, str(path), "--not-an-option"], root)
        ok = done.returncode == 2 and "survived" not in done.stdout
        return ok, f"exit status {done.returncode}, stderr {done.stderr[-200:]!r}"
    if how == "recursive_cleanup":
        naive_pass(program, spec, root)  # the candidate leaves its chain in work/
        try:
            shutil.rmtree(root / "work")
        except RecursionError:
            return True, "shutil.rmtree of what the run left raised RecursionError"
        return False, "shutil.rmtree removed what the run left"
    if how == "lenient_float":
        (root / "solution.py").write_text(program)
        cases = [c for c in spec.tests if isinstance(c, IOCase)]
        outputs = [_run([sys.executable, "solution.py"], root, c.input).stdout for c in cases]
        wrong = all(o.split() != c.output.split() for o, c in zip(outputs, cases, strict=True))
        lenient = all(_lenient_match(o, c.output) for o, c in zip(outputs, cases, strict=True))
        return wrong and lenient, f"outputs {outputs}: wrong {wrong}, within 1e-6 {lenient}"
    raise AssertionError(f"unknown control {how!r}")


@pytest.fixture(scope="module")
def controls() -> Iterator[dict[str, tuple[bool, str]]]:
    """Every attack's control, a few at a time (most start fresh interpreters)."""
    # The naive harness's pytest runs load no installed plugins (seconds each, otherwise).
    quiet = mock.patch.dict(os.environ, {"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"})
    with quiet, ThreadPoolExecutor(4) as threads:
        outcomes = list(threads.map(control, ATTACKS))
    yield dict(zip([a.name for a in ATTACKS], outcomes, strict=True))


# --- the table ----------------------------------------------------------------------------


def test_the_table_covers_every_mechanism_in_every_kind_it_applies_to() -> None:
    assert len({a.name for a in ATTACKS}) == len(ATTACKS) >= 45
    by_mechanism = Counter(a.mechanism for a in ATTACKS)
    by_kind = Counter(a.kind for a in ATTACKS)
    assert set(by_mechanism) == set(MECHANISMS) == set(range(1, 11)), by_mechanism
    assert set(by_kind) == set(KINDS), by_kind
    assert {a.kind for a in ATTACKS if a.mechanism == 5} == set(KINDS)
    # Wherever a mechanism applies to more than one kind, more than one kind has it.
    spread = {m: {a.kind for a in ATTACKS if a.mechanism == m} for m in MECHANISMS}
    for mechanism in (1, 2, 3, 4, 6, 9, 10):
        assert len(spread[mechanism]) >= 2, (mechanism, spread[mechanism])
    assert spread[8] == set(KINDS)
    assert spread[7] == {"stdin_stdout"}
    # Every task's honest solution is there to be graded, and every attack is a sample.
    assert {t.name for t in TASKS} == {a.task.name for a in ATTACKS}
    assert all(a.sample.task is a.task.spec for a in ATTACKS)


@pytest.mark.parametrize("task", TASKS, ids=[t.name for t in TASKS])
def test_the_honest_solution_scores_full_marks(task: Task, grader: UnitTestsGrader) -> None:
    result, escaped = grade(grader, task.honest_sample())
    assert escaped is None, f"{type(escaped).__name__} escaped grade_sync: {escaped}"
    assert result is not None and result.score == 1.0, result and result.details


@pytest.mark.parametrize("attack", ATTACKS, ids=[a.name for a in ATTACKS])
def test_the_attack_is_real(attack: Attack, controls: dict[str, tuple[bool, str]]) -> None:
    ok, how = controls[attack.name]
    assert ok, f"the attack does not succeed against its control ({attack.control}): {how}"


def _verdict(attack: Attack, result: GradeResult) -> str:
    """Say what the grader made of the attack, in the terms of the baseline."""
    if result.score is None:
        return f"dodged: no score ({result.failure})"
    if attack.expect == "full":
        return f"misgraded: honest code scored {result.score}"
    return f"forged: scored {result.score}"


# bandit (the codegen rubric's security grader) passes stevedore a deprecated argument.
@pytest.mark.filterwarnings("ignore:The verify_requirements argument")
@pytest.mark.parametrize("attack", ATTACKS, ids=[a.name for a in ATTACKS])
def test_the_grader_is_not_fooled(
    attack: Attack,
    grader: UnitTestsGrader,
    solo: UnitTestsGrader,
    codegen_reward: Callable[[Sample], float | None],
) -> None:
    if attack.crash:
        _crash(attack)
        return
    on = solo if attack.primer else grader
    if attack.primer:
        # Another rollout of the same task (twice: a group has many) just ran on this slot.
        for _ in range(2):
            primed, _ = grade(on, attack.task.honest_sample())
            assert primed is not None and primed.score == 1.0
    result, escaped = grade(on, attack.sample, **attack.config)
    assert escaped is None, f"crashed: {type(escaped).__name__} escaped grade_sync: {escaped}"
    assert result is not None
    assert result.score is not None, _verdict(attack, result)
    if attack.expect == "detector":
        _hard_coding_is_named(attack, codegen_reward)
    elif attack.expect == "full":
        assert result.score == 1.0, f"{_verdict(attack, result)}: {result.details}"
    elif attack.expect == "zero":
        assert result.score == 0.0, f"{_verdict(attack, result)}: {result.details}"
    else:
        assert result.score < 1.0, f"{_verdict(attack, result)}: {result.details}"


def _crash(attack: Attack) -> None:
    with own_grader() as own:
        result, escaped = grade(own, attack.sample, **attack.config)
        honest, honest_escaped = grade(own, attack.task.honest_sample())
    crashed, other = [], []
    if escaped is not None:
        crashed.append(f"{type(escaped).__name__} escaped grade_sync: {escaped}")
    elif result is None or result.score is None:
        other.append(f"dodged: no score ({result and result.failure})")
    elif result.score != 0.0:
        other.append(f"forged: scored {result.score}")
    if honest_escaped is not None:
        name = type(honest_escaped).__name__
        crashed.append(f"then the honest sample: {name} escaped grade_sync: {honest_escaped}")
    elif honest is None or honest.score != 1.0:
        crashed.append(f"then the honest sample scored {honest and (honest.score, honest.failure)}")
    problems = [f"crashed: {'; '.join(crashed)}"] if crashed else []
    assert not problems + other, "; ".join(problems + other)


def _hard_coding_is_named(attack: Attack, codegen_reward: Callable[[Sample], float | None]) -> None:
    found = asyncio.run(ViolationsGrader().grade(attack.sample, ViolationsConfig()))
    named = {v.type for v in found.violations}
    reward = codegen_reward(attack.sample)
    assert ViolationType.HARDCODED_OUTPUT in named, (
        f"undetected: no hardcoded_output (violations {sorted(named)}; codegen reward {reward})"
    )
    assert reward is not None and reward < 0.5, f"forged: the codegen rubric's reward is {reward}"


# --- one run's memory against another's ------------------------------------------------------

#: Notes a rollout wrote around its answer: the marker in its code, many times over.
_NOTES = "".join(f"# step {i}: " + "scratch work of one rollout " * 5 + "{m}\n" for i in range(12))


def _planter(kind: str, marker: str) -> Sample:
    """Run A: its code, its output and (function kind) its return value hold the marker."""
    body = f"MARK = {marker!r}\n" + _NOTES.format(m=marker)
    if kind == "python_function":
        code = (
            body
            + f"\n\ndef plant():\n    print((MARK + chr(10)) * 64)\n    return MARK  # {marker}\n"
        )
        task = TaskSpec(kind=kind, tests=f"assert plant() == {marker!r}", entry_point="plant")
    else:
        code = body + "\nprint((MARK + chr(10)) * 64)\n"
        task = TaskSpec(kind=kind, tests=[IOCase(input="", output=(marker + "\n") * 64)])
    return Sample(id=f"plant-{kind}", response=f"```python\n{code}```", task=task)


def _searcher(kind: str, marker: str, own: str) -> Sample:
    """Run B: holds ``own`` in its code, gets both markers reversed, says which it finds."""
    rev, own_rev = marker[::-1], own[::-1]
    if kind == "python_function":
        visible = f"PLANT = {own!r}\n\n\ndef search(a, b):\n    return _holds([a, b])\n"
        tests = f"found = search({rev!r}, {own_rev!r})\nassert found[1]\nassert not found[0]\n"
        task = TaskSpec(kind=kind, tests=tests, entry_point="search")
    else:
        visible = (
            f"PLANT = {own!r}\n\n"
            "theirs, mine = _holds([input().strip(), input().strip()])\n"
            "print(f'own={int(mine)} foreign={int(theirs)}')\n"
        )
        task = TaskSpec(
            kind=kind, tests=[IOCase(input=f"{rev}\n{own_rev}\n", output="own=1 foreign=0")]
        )
    code = two_stage(FIND_MARKERS, visible)
    return Sample(id=f"search-{kind}", response=f"```python\n{code}```", task=task)


@pytest.mark.parametrize("searcher", ["python_function", "stdin_stdout"])
@pytest.mark.parametrize("planter", ["python_function", "stdin_stdout"])
def test_a_run_holds_no_trace_of_an_earlier_run(
    solo: UnitTestsGrader, planter: str, searcher: str
) -> None:
    marker, own = secrets.token_hex(16), secrets.token_hex(16)
    planted, escaped = grade(solo, _planter(planter, marker))
    assert escaped is None and planted is not None and planted.score == 1.0
    result, escaped = grade(solo, _searcher(searcher, marker, own))
    assert escaped is None and result is not None and result.score is not None
    if searcher == "python_function":
        outcomes = [t["outcome"] for t in result.details["tests"]]
        assert outcomes[0] == "passed", f"the search missed its own marker: {result.details}"
        assert outcomes[1] == "passed", "run B found run A's marker in its own memory"
    else:
        said = result.details["tests"][0]["stdout_head"]
        assert "own=1" in said, f"the search missed its own marker: {result.details}"
        assert "foreign=0" in said, "run B found run A's marker in its own memory"
