"""The boundary red team: every attack is real against its control, none pays off here.

The catalogue is ``tests/graders/sandbox/boundary_attacks.py``. Each attack is
tested twice:

* its control (:func:`control`): against the harness it defeats, the attack
  passes every test (a forged pass), makes the grade abstain (a dodged zero),
  crashes it, or keeps it from finishing; the naive harness runs in this
  process, or, for the resource attacks, in a child process with a CPU, memory
  and wall-clock limit, where the honest solution must finish;
* the real grader (the ``grader`` fixture, fail_as_zero on): nothing escapes
  ``grade_sync``, the sample is scored (never abstained on), below 1.0 and
  mostly 0.0; a resource attack is graded while an honest sample of its kind is
  graded again and again beside it, each of which must score 1.0; and a checks
  worker's log does not grow with what the candidate emits.

Every attack's task has an honest solution that scores 1.0 with no violation,
and so does every probe (honest code leaning on Python's semantics across the
boundary), in both Python kinds. The bugs these found are cited where they are
tested (round 5 of the verdict: an exception class for a function, a stream
handed back, a worker's log and filters, placeholders that fail otherwise,
Enum members crossing back, a prompt's dataclass, a plan cache keyed without
the task's classes).
"""

from __future__ import annotations

import builtins
import contextlib
import io
import json
import os
import re
import socket
import subprocess
import sys
import threading
import time
import types
import warnings
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any
from unittest import mock

import pytest

import arbiter.graders.sandbox as sandbox_package
from arbiter.graders.program import program_of, prompt_code
from arbiter.graders.sandbox._frames import CONTROL_MAX_BYTES, FrameReader, send_frame
from arbiter.graders.sandbox.checks import CheckPlanError, plan_function_tests, run_plan
from arbiter.graders.sandbox.proxy import (
    CandidateError,
    Channel,
    InstanceHandle,
    LoadResult,
    Opaque,
    Stream,
    candidate_exception_class,
)
from arbiter.graders.sandbox.suite_server import candidate_module
from arbiter.graders.sandbox.suites import declared_names, suite_classes
from arbiter.graders.types import GradeResult, IOCase, Sample, TaskSpec
from arbiter.graders.unit_tests import UnitTestsConfig, UnitTestsGrader, outputs_match
from tests.graders.sandbox.boundary_attacks import (
    ATTACKS,
    CONTROLS,
    MECHANISMS,
    NAIVE,
    PEER,
    PROBES,
    Attack,
    Probe,
    Task,
)

#: The grader's settings for every sample (an attack may add its own).
SETTINGS: dict[str, Any] = {"timeout_s": 4.0, "fail_as_zero": True}
#: The naive harness, loaded here (the resource controls run it in a child).
HARNESS: dict[str, Any] = {"__name__": "boundary_naive_harness"}
exec(compile(NAIVE, "<naive harness>", "exec", dont_inherit=True), HARNESS)
TASKS: list[Task] = list({a.task.name: a.task for a in ATTACKS}.values())


def grade(grader: UnitTestsGrader, sample: Sample, **config: Any) -> GradeResult:
    """Grade one sample; whatever escapes ``grade_sync`` fails the test that called this."""
    return grader.grade_sync(sample, UnitTestsConfig.model_validate({**SETTINGS, **config}))


def _program(sample: Sample) -> str:
    program = program_of(sample)
    assert program is not None, sample.id
    return program.code


def _job(sample: Sample, **extra: Any) -> dict[str, Any]:
    spec = sample.task
    assert spec is not None
    tests = spec.tests if isinstance(spec.tests, str) else "\n".join(map(str, spec.tests))
    return {
        "kind": spec.kind,
        "code": _program(sample),
        "tests": tests,
        "setup": spec.setup_code,
        "entry_point": spec.entry_point,
        "module": "solution",
        **extra,
    }


# --- the trusting model: the real trusted side, the sandbox's word deciding ----------------


class _Trusting(Channel):
    """The channel with round 3's flaw put back: what the sandbox says decides.

    Every handle it names is an instance the tests may use; the load report
    says what a name is (a class constructs instances, an exception class gets
    a stand-in built here); an error or a stream's end is raised by the name
    the sandbox gives it (StopIteration included); a warning is re-emitted as
    the category it names, raised if that is an exception.
    """

    _reported: frozenset[str] = frozenset()
    _classes: frozenset[str] = frozenset()

    @property
    def classes(self) -> frozenset[str]:
        return self._classes | self._reported

    @classes.setter
    def classes(self, value: frozenset[str]) -> None:
        self._classes = frozenset(value)

    def load(self) -> LoadResult:
        load = super().load()
        self._reported = frozenset(n for n, kind in load.names.items() if kind == "class")
        return load

    def _decoder_refs(self, grant: str | None) -> Callable[[Any], Any]:
        def resolve(ref: Any) -> Any:
            tag, handle = ref if type(ref) is tuple else ("r", ref)
            if tag == "g":
                return Stream(self, handle)
            return Opaque(self, handle) if tag == "o" else InstanceHandle(self, handle)

        return resolve

    def exception_stand_in(self, name: str, kind: str) -> type[CandidateError]:
        found = getattr(builtins, kind.removeprefix("exception:"), None)
        if not (isinstance(found, type) and issubclass(found, Exception)):
            found = Exception
        cls = candidate_exception_class(found, name)  # constructed here, by the tests
        self.exceptions[name] = cls
        return cls

    def _raised(
        self, builtin: str, declared: str | None, type_name: str, message: str, what: str
    ) -> BaseException:
        if "StopIteration" in (builtin, type_name):
            return StopIteration()
        found = getattr(builtins, builtin, None)
        if isinstance(found, type) and issubclass(found, Exception):
            return found(message)
        return super()._raised(builtin, declared, type_name, message, what)

    def _warn(self, emitted: Any) -> None:
        for builtin, _, message in emitted:
            found = getattr(builtins, builtin, None)
            if isinstance(found, type) and issubclass(found, Warning):
                warnings.warn(str(message), found, stacklevel=1)
            elif isinstance(found, type) and issubclass(found, Exception):
                raise found(str(message))


@contextlib.contextmanager
def _private_sandbox_modules() -> Iterator[types.ModuleType]:
    """Fresh copies of ``_codec`` and ``_remote`` under their names, for one candidate.

    The candidate's code reaches them through ``sys.modules`` and rewrites them,
    as in its own process; the copies go when the control ends, this
    process's own modules untouched.
    """
    here = Path(sandbox_package.__file__).parent
    with contextlib.ExitStack() as stack:
        stack.enter_context(mock.patch.dict(sys.modules))
        made: dict[str, types.ModuleType] = {}
        for short in ("_codec", "_remote"):
            name = f"arbiter.graders.sandbox.{short}"
            module = types.ModuleType(name)
            module.__file__ = f"<sandbox {short}>"
            sys.modules[name] = module
            stack.enter_context(mock.patch.object(sandbox_package, short, module, create=True))
            exec(compile((here / f"{short}.py").read_text(), module.__file__, "exec"), vars(module))
            made[short] = module
        yield made["_remote"]


@contextlib.contextmanager
def _served(code: str, declared: list[str], classes: frozenset[str]) -> Iterator[_Trusting]:
    """The candidate loaded in this process with private sandbox modules, behind a channel."""
    with _private_sandbox_modules() as remote:
        module = types.ModuleType("__candidate__")
        sys.modules[module.__name__] = module
        exec(compile(code, "solution.py", "exec", dont_inherit=True), vars(module))
        session = remote.Session(vars(module), declared)
        ours, theirs = socket.socketpair()

        def serve() -> None:
            send_frame(theirs, session.ready())
            reader = FrameReader(theirs, max_bytes=CONTROL_MAX_BYTES)
            while True:
                try:
                    request = reader.recv()
                except (EOFError, OSError):
                    return
                send_frame(theirs, session.reply(request))

        thread = threading.Thread(target=serve, daemon=True)
        thread.start()
        try:
            yield _Trusting(ours, time.monotonic() + 30, max_bytes=1 << 24, classes=classes)
        finally:
            ours.close()
            thread.join(5)
            theirs.close()


def trusting_outcome(sample: Sample) -> str:
    """``passed``, ``failed`` or ``abstained``: the sample graded by the trusting model."""
    spec = sample.task
    assert spec is not None
    code = _program(sample)
    with warnings.catch_warnings():
        warnings.simplefilter("default")
        if spec.kind == "python_function":
            tests: str | list[str] = spec.tests  # type: ignore[assignment]
            plan = plan_function_tests(
                tests,
                spec.setup_code,
                helpers=prompt_code(sample.prompt) if isinstance(sample.prompt, str) else None,
                entry_point=spec.entry_point,
                classes=spec.classes,
            )
            with _served(code, sorted(plan.declared), plan.classes) as channel:
                load = channel.load()
                try:
                    outcomes = run_plan(plan, channel, load, spec.entry_point)
                except CheckPlanError:
                    return "abstained"
            return "passed" if outcomes and all(o.passed for o in outcomes) else "failed"
        sources = {"test_solution.py": str(spec.tests)}
        declared = declared_names(sources, "solution")
        classes = suite_classes(sources, "solution", declared, (spec.reference,), spec.classes)
        with _served(code, declared, classes) as channel:
            module = candidate_module("solution", channel, channel.load(), declared)
            try:
                HARNESS["_suite"](_job(sample), module)
            except HARNESS["_Setup"]:
                return "abstained"
            except BaseException:
                return "failed"
    return "passed"


# --- the other controls ----------------------------------------------------------------------


def _script_output(code: str, given: str) -> str:
    """Run a stdin/stdout program in this process."""
    out = io.StringIO()
    with mock.patch.object(sys, "stdin", io.StringIO(given)), contextlib.redirect_stdout(out):
        exec(compile(code, "solution.py", "exec", dont_inherit=True), {"__name__": "__main__"})
    return out.getvalue()


def _lenient(actual: str, expected: str, tolerance: float = 1e-6) -> bool:
    """Whitespace-split tokens; every numeric one within a relative or absolute tolerance."""
    got, want = actual.split(), expected.split()
    if len(got) != len(want):
        return False
    for a, b in zip(got, want, strict=True):
        try:
            x, y = float(a), float(b)
        except ValueError:
            if a != b:
                return False
            continue
        if abs(x - y) > max(tolerance, tolerance * abs(y)):
            return False
    return True


#: The child's own first lines: its limits, set before the harness is read.
_LIMITS = (
    "import resource\n"
    "resource.setrlimit(resource.RLIMIT_CPU, (1, 2))\n"
    "resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))\n"
)


def _in_a_child(job: dict[str, Any]) -> tuple[str, str]:
    """Run the naive harness on ``job`` in a child with 1 s of CPU, 1 GiB and 4 s.

    Return how it ended (``passed``, ``failed``, or ``exhausted``: killed, out of
    memory or of stack, still running, or over 8 MiB of output), and in words.
    """
    env = {"PATH": os.environ.get("PATH", ""), "PYTHONDONTWRITEBYTECODE": "1"}
    env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    try:
        done = subprocess.run(
            [sys.executable, "-c", _LIMITS + NAIVE],
            input=json.dumps(job),
            capture_output=True,
            text=True,
            timeout=4,
            env=env,
        )
    except subprocess.TimeoutExpired as e:
        return "exhausted", f"still running after 4 s ({len(e.stderr or '')} bytes of stderr)"
    said = done.stdout.strip()
    exhausted = (
        done.returncode != 0 or len(done.stderr) > 8 << 20 or said not in ("passed", "failed")
    )
    ended = "exhausted" if exhausted else said
    tail = done.stderr[-200:].strip().splitlines()[-1:] if done.stderr else []
    return (
        ended,
        f"status {done.returncode}, said {done.stdout.strip()!r}, "
        f"stderr {len(done.stderr)} B {tail}",
    )


def _reads_output(sample: Sample) -> tuple[bool, str]:
    verdict, text = HARNESS["captured"](_job(sample))
    if sample.task is not None and sample.task.kind == "pytest":
        said = re.search(r"=+ (\d+) passed", text) is not None
    else:
        said = any(line.strip() == "OK" for line in text.splitlines())
    return said and verdict != "passed", f"the output says passed: {said}; it {verdict}"


def _compile_escapes(code: str) -> tuple[bool, str]:
    try:
        compile(code, "solution.py", "exec", dont_inherit=True)
    except SyntaxError as e:
        return False, f"a SyntaxError, which such a harness handles: {e}"
    except (RecursionError, MemoryError) as e:
        return True, f"{type(e).__name__} escapes an except SyntaxError"
    return False, "it compiles"


#: What each mechanism's attack must do to its control.
_SHOWS = {"blame": "abstained", "bounded_work": "exhausted", "our_crash": "crashed"}


def control(attack: Attack) -> tuple[bool, str]:
    """Run the attack against the harness it defeats; return whether it succeeded, and how."""
    sample, how = attack.sample, attack.control
    shows = _SHOWS.get(attack.mechanism, "passed")
    if how == "naive":
        verdict = HARNESS["outcome"](_job(sample))
        return verdict == shows, f"in one process it {verdict}"
    if how == "setup_abstains":
        verdict = HARNESS["outcome"](_job(sample))
        return verdict == "abstained", f"in one process it {verdict}"
    if how == "trusting":
        verdict = trusting_outcome(sample)
        return verdict == shows, f"where the sandbox's word decides it {verdict}"
    if how == "lenient_float":
        cases = [c for c in attack.task.spec.tests if isinstance(c, IOCase)]
        outputs = [_script_output(_program(sample), c.input) for c in cases]
        pairs = list(zip(outputs, cases, strict=True))
        wrong = all(not outputs_match(o, c.output, "whitespace") for o, c in pairs)
        close = all(_lenient(o, c.output) for o, c in pairs)
        return wrong and close, f"outputs {outputs}: all wrong {wrong}, all within 1e-6 {close}"
    if how == "plain_compile":
        return _compile_escapes(_program(sample))
    if how == "reads_output":
        return _reads_output(sample)
    extra = {"json_results": how == "json_results"}
    ended, said = _in_a_child(_job(sample, **extra))
    honest, honest_said = _in_a_child(_job(attack.task.honest_sample(), **extra))
    ok = ended == "exhausted" and honest == "passed"
    return ok, f"the attack: {ended}, {said}; the honest solution: {honest}, {honest_said}"


@pytest.fixture(scope="module")
def controls() -> dict[str, tuple[bool, str]]:
    """Every attack's control: the children two at a time, the rest here, one by one."""
    in_children = [a for a in ATTACKS if a.control in ("unbounded", "json_results")]
    with ThreadPoolExecutor(2) as threads:
        children = threads.map(control, in_children)
        found = dict(zip([a.name for a in in_children], children, strict=True))
    for attack in ATTACKS:
        if attack.name not in found:
            # In this process: an attack that rewrites the sandbox's modules rewrites
            # private copies, never the ones the rest of the suite runs on.
            with _private_sandbox_modules():
                found[attack.name] = control(attack)
    return found


# --- the table -------------------------------------------------------------------------------


def test_the_catalogue_covers_every_mechanism_in_each_kind_it_applies_to() -> None:
    names = [a.name for a in ATTACKS] + [p.name for p in PROBES]
    assert len(set(names)) == len(names)
    assert len(ATTACKS) >= 40 and len(PROBES) >= 30
    assert {a.mechanism for a in ATTACKS} == set(MECHANISMS)
    assert {a.control for a in ATTACKS} == set(CONTROLS)
    spread = {m: {a.kind for a in ATTACKS if a.mechanism == m} for m in MECHANISMS}
    for mechanism, kinds in spread.items():
        if mechanism == "float_integer":
            assert kinds == {"stdin_stdout"}
        else:
            assert {"python_function", "pytest"} <= kinds, (mechanism, kinds)
    probes = Counter(p.kind for p in PROBES)
    assert probes["python_function"] >= 15 and probes["pytest"] >= 15, probes
    assert all(a.peer for a in ATTACKS if a.mechanism == "bounded_work")


@pytest.mark.parametrize("task", TASKS, ids=[t.name for t in TASKS])
def test_the_honest_solution_scores_full_marks(task: Task, grader: UnitTestsGrader) -> None:
    result = grade(grader, task.honest_sample())
    assert result.score == 1.0, result.details
    assert not result.violations, result.violations


@pytest.mark.parametrize("probe", PROBES, ids=[p.name for p in PROBES])
def test_the_probe_scores_full_marks_with_no_violation(
    probe: Probe, grader: UnitTestsGrader
) -> None:
    result = grade(grader, probe.task.honest_sample())
    assert result.score == 1.0, f"misgraded: {result.failure} {result.details}"
    assert not result.violations, result.violations


@pytest.mark.parametrize("attack", ATTACKS, ids=[a.name for a in ATTACKS])
def test_the_attack_is_real(attack: Attack, controls: dict[str, tuple[bool, str]]) -> None:
    ok, how = controls[attack.name]
    assert ok, f"the attack does not work against its control ({attack.control}): {how}"


def _worker_logs(grader: UnitTestsGrader) -> int:
    """The bytes in the checks workers' logs (they outlive every grading)."""
    workers = list(getattr(grader.checks, "_all", ()))
    paths = [Path(w.scratch) / "worker.log" for w in workers]
    return sum(p.stat().st_size for p in paths if p.exists())


@contextlib.contextmanager
def _peers(grader: UnitTestsGrader, task: Task) -> Iterator[list[GradeResult]]:
    """Grade ``task``'s honest solution again and again until the block ends (once at least)."""
    results: list[GradeResult] = []
    stop = threading.Event()

    def again() -> None:
        while not stop.is_set() or not results:
            results.append(grade(grader, task.honest_sample()))

    thread = threading.Thread(target=again, daemon=True)
    thread.start()
    try:
        yield results
    finally:
        stop.set()
        thread.join(120)


@pytest.mark.parametrize("attack", ATTACKS, ids=[a.name for a in ATTACKS])
def test_the_grader_is_not_fooled(attack: Attack, grader: UnitTestsGrader) -> None:
    logged = _worker_logs(grader)
    with contextlib.ExitStack() as stack:
        peers = stack.enter_context(_peers(grader, PEER[attack.kind])) if attack.peer else []
        result = grade(grader, attack.sample, **attack.config)
    assert result.score is not None, f"dodged: no score ({result.failure})"
    if attack.expect == "zero":
        assert result.score == 0.0, f"forged: scored {result.score}: {result.details}"
    else:
        assert result.score < 1.0, f"forged: scored {result.score}: {result.details}"
    hurt = [(p.score, p.failure) for p in peers if p.score != 1.0]
    assert not hurt, f"an honest sample graded beside it was hurt: {hurt}"
    assert _worker_logs(grader) - logged < 4 << 10, "a checks worker's log kept the run's output"


# --- the bugs this red team found, each where one test shows it ----------------------------


def test_a_tasks_warning_filters_end_with_its_grading(grader: UnitTestsGrader) -> None:
    # Round 5: a task's warnings.simplefilter("error") stayed in its checks worker,
    # and the next task's honest solution, which warns, scored 0 there.
    strict = TaskSpec(
        kind="python_function",
        tests="import warnings\nwarnings.simplefilter('error')\nassert f(1) == 1\n",
        entry_point="f",
    )
    warns = TaskSpec(kind="python_function", tests="assert g(1) == 1\n", entry_point="g")
    code = "import warnings\n\n\ndef f(x):\n    return x\n\n\ndef g(x):\n"
    code += "    warnings.warn('old', DeprecationWarning)\n    return x\n"
    for _ in range(2):  # the workers are taken last in, first out: the same one again
        assert (
            grade(grader, Sample(id="strict", response=f"```python\n{code}```", task=strict)).score
            == 1.0
        )
        assert (
            grade(grader, Sample(id="warns", response=f"```python\n{code}```", task=warns)).score
            == 1.0
        )


def test_a_plan_is_kept_by_the_tasks_classes_too(grader: UnitTestsGrader) -> None:
    # The same tests without classes first, then with them, reused the first plan.
    tests = [
        "s = Stack()\ns.push(1)\nassert 1 in s",
        "s = Stack()\ns.push(2)\nassert s.peek() == 2",
    ]
    code = (
        "class Stack:\n    def __init__(self):\n        self.items = []\n"
        "    def push(self, x):\n        self.items.append(x)\n"
        "    def peek(self):\n        return self.items[-1]\n"
        "    def __contains__(self, x):\n        return x in self.items\n"
    )
    # ``classes=[]`` says no name is a class; the plan made so must not serve ["Stack"].
    for classes in ([], ["Stack"]):
        spec = TaskSpec(kind="python_function", tests=tests, entry_point="Stack", classes=classes)
        result = grade(grader, Sample(id="stack", response=f"```python\n{code}```", task=spec))
    assert result.score == 1.0, result.details


def test_the_float_comparer_the_compiled_languages_share_wants_the_integer() -> None:
    # C++, Java, Go, Rust and JavaScript programs are compared by the same function.
    assert not outputs_match("2.6525294e+32\n", "265252859812191058636308480000000\n", "float")
    assert outputs_match(
        "265252859812191058636308480000000.0\n", "265252859812191058636308480000000\n", "float"
    )
