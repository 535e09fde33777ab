"""Hidden cases: inputs read from the tests, mutated by type, answered by the reference.

The derivation is pure but for the reference's runs, which here go through the
real sandbox (the unit-test grader's pool), as in the service. What a hidden
case is never reaches a grade's details: only counts do.
"""

from __future__ import annotations

import asyncio
import json
import os
import stat
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from arbiter.graders.hidden_cases import (
    HIDDEN_CPU_FLOOR_S,
    KEPT_CPU_S,
    HiddenCase,
    HiddenCases,
    HiddenCaseStore,
    derive_hidden_cases,
    entry_point_of,
    hidden_budget,
    mutate_inputs,
    same_value,
    visible_inputs,
)
from arbiter.graders.registry import default_registry
from arbiter.graders.sandbox import PoolConfig, SandboxPool
from arbiter.graders.types import Sample, TaskSpec
from arbiter.graders.unit_tests import UnitTestsConfig, UnitTestsGrader
from arbiter.rubrics.loader import load_rubric
from arbiter.rubrics.score import score_samples

ROOT = Path(__file__).resolve().parents[2]

HUMANEVAL_TESTS = """
METADATA = {}

def check(candidate):
    assert candidate([1, 2, 3], 2) == [1, 2]
    assert candidate([5, 1], n=1) == [5]
    assert candidate(list(range(4)), 2) == [0, 1]
    assert candidate([], 0) == []

check(head)
"""

# ---- reading and mutating inputs


def test_visible_inputs_are_the_literal_calls_of_check_and_of_asserts() -> None:
    assert visible_inputs(HUMANEVAL_TESTS, "head") == [
        (([1, 2, 3], 2), {}),
        (([5, 1],), {"n": 1}),
        (([], 0), {}),
    ]
    mbpp = ["assert add(1, 2) == 3", "assert add(x, 1) == 2", "assert add(-4, 4) == 0"]
    assert visible_inputs(mbpp, "add") == [((1, 2), {}), ((-4, 4), {})]
    assert visible_inputs("this is not python(", "f") == []


def test_the_entry_point_is_the_one_function_the_tests_call_that_the_reference_defines() -> None:
    reference = "def helper(x):\n    return x\n\ndef add(a, b):\n    return helper(a) + b\n"
    assert entry_point_of(["assert add(1, 2) == 3"], reference) == "add"
    assert entry_point_of(["assert add(1, 2) == helper(3)"], reference) is None


def test_mutation_is_seeded_new_and_typed() -> None:
    inputs = [(([3, 1, 2], "abc", 4), {}), (([5, 5], "cab", 0), {})]
    first = mutate_inputs(inputs, 40, "seed")
    assert first == mutate_inputs(inputs, 40, "seed")
    assert first != mutate_inputs(inputs, 40, "other")
    assert len(first) >= 30
    shown = {repr(c) for c in inputs}
    for args, kwargs in first:
        assert repr((args, kwargs)) not in shown
        numbers, text, count = args
        assert type(numbers) is list and all(type(n) is int for n in numbers)
        assert type(text) is str and set(text) <= set("abc")  # the alphabet seen
        assert type(count) is int and count >= 0  # never negative: none seen was


def test_a_precondition_every_input_shows_is_kept() -> None:
    inputs = [(([1, 2, 9],), {}), (([0, 4],), {}), (([2, 3, 8, 11],), {})]
    for (numbers,), _ in mutate_inputs(inputs, 40, "sorted"):
        assert numbers == sorted(numbers) and len(set(numbers)) == len(numbers)
    # One input shows no precondition: a sort's only example may be sorted already.
    lone = mutate_inputs([(([1, 2, 3],), {})], 40, "lone")
    assert any(numbers != sorted(numbers) for (numbers,), _ in lone)


def test_words_of_a_vocabulary_are_mutated_as_words() -> None:
    inputs = [(("three one five",), {}), (("nine zero",), {})]
    vocabulary = {"three", "one", "five", "nine", "zero"}
    spaced = [a[0] for a, _ in mutate_inputs(inputs, 40, "words") if " " in a[0]]
    assert spaced and any(set(text.split()) <= vocabulary for text in spaced)


def test_same_value_is_equality_with_floats_within_tolerance() -> None:
    assert same_value(0.1 + 0.2, 0.3)
    assert same_value([1.0, (2.0000000001, "a")], [1.0, (2.0, "a")])
    assert same_value({"a": 1.0}, {"a": 1.0 + 1e-9})
    assert same_value(2, 2.0) and same_value(True, 1)
    assert not same_value(float("nan"), 1.0)
    assert not same_value([1, 2], (1, 2))
    assert not same_value("0.3", 0.3)
    assert not same_value(None, 0)


# ---- the store


def test_the_store_derives_once_however_many_ask(tmp_path: Path) -> None:
    store = HiddenCaseStore(str(tmp_path))
    made = []
    gate = threading.Event()

    def make() -> HiddenCases:
        gate.wait(5)
        made.append(1)
        return HiddenCases("f", (HiddenCase("((1,), {})", "2"),), tried=1)

    key = store.key("task")
    threads = [threading.Thread(target=store.get, args=(key, make)) for _ in range(6)]
    for t in threads:
        t.start()
    gate.set()
    for t in threads:
        t.join()
    assert made == [1]
    # A fresh store (a restarted service) reads the disk, and derives nothing.
    again = HiddenCaseStore(str(tmp_path))
    found = again.get(key, lambda: pytest.fail("derived again"))  # type: ignore[arg-type,return-value]
    assert found.cases == (HiddenCase("((1,), {})", "2"),) and again.hits["disk"] == 1


def test_cached_cases_of_another_generator_are_derived_again(tmp_path: Path) -> None:
    store = HiddenCaseStore(str(tmp_path))
    key = store.key("task")
    (tmp_path / f"{key}.json").write_text(json.dumps({"version": "0", "entry_point": "f"}))
    fresh = HiddenCases("f", (), reason="none")
    assert store.get(key, lambda: fresh) is fresh


def test_the_disk_cache_is_ours_alone(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from arbiter.graders.hidden_cases import hidden_cache_dir
    from arbiter.graders.sandbox.pool import toolchain_cache

    where = tmp_path / "hidden"
    monkeypatch.setenv("ARBITER_HIDDEN_CACHE_DIR", str(where))
    assert hidden_cache_dir() == str(where)
    assert stat.S_IMODE(os.stat(where).st_mode) == 0o700
    monkeypatch.delenv("ARBITER_HIDDEN_CACHE_DIR")
    monkeypatch.delenv("ARBITER_CACHE_DIR", raising=False)
    # Never beneath the directory every run can read.
    assert not hidden_cache_dir().startswith(toolchain_cache() + os.sep)


# ---- against the sandbox


@pytest.fixture(scope="module")
def unit() -> Iterator[UnitTestsGrader]:
    pool = SandboxPool(PoolConfig(slots=2))
    grader = UnitTestsGrader(pool)
    yield grader
    grader.close()


def _runner(unit: UnitTestsGrader):  # type: ignore[no-untyped-def]
    from arbiter.graders.sandbox import Limits

    def run(code: str, stdin: bytes) -> tuple[int | None, bytes]:
        report = unit.pool.run_script(code, stdin, Limits(timeout_s=10, max_output_bytes=8 << 20))
        return report.exit_code, report.stdout

    return run


HEAD_REFERENCE = "def head(items, n):\n    return items[:n]\n"


def test_the_reference_answers_the_derived_inputs_in_the_sandbox(unit: UnitTestsGrader) -> None:
    cases = derive_hidden_cases(
        _runner(unit),
        tests=HUMANEVAL_TESTS,
        reference=HEAD_REFERENCE,
        entry_point="head",
        seed="head",
    )
    assert len(cases.cases) >= 10
    for case in cases.cases:
        import ast

        args, kwargs = ast.literal_eval(case.call)
        items = args[0]
        n = args[1] if len(args) > 1 else kwargs["n"]
        assert ast.literal_eval(case.expected) == items[:n]


def test_inputs_the_reference_refuses_loops_on_or_answers_with_objects_are_dropped(
    unit: UnitTestsGrader,
) -> None:
    reference = (
        "import random\n"
        "def pick(n):\n"
        "    if n < 0:\n"
        "        raise ValueError(n)\n"
        "    if n == 7:\n"
        "        while True:\n"
        "            pass\n"
        "    if n == 3:\n"
        "        return object()\n"
        "    if n == 5:\n"
        "        return random.random()\n"
        "    print('noise')\n"
        "    return n * 2\n"
    )
    tests = ["assert pick(1) == 2", "assert pick(4) == 8", "assert pick(9) == 18"]
    cases = derive_hidden_cases(
        _runner(unit), tests=tests, reference=reference, entry_point="pick", seed="pick"
    )
    import ast

    calls = {ast.literal_eval(c.call)[0][0]: ast.literal_eval(c.expected) for c in cases.cases}
    assert calls and all(v == 2 * k for k, v in calls.items())
    assert not {3, 5, 7} & calls.keys()
    assert {"slow", "not_literal"} <= cases.dropped.keys()


def test_the_hidden_cases_cost_at_most_what_the_visible_calls_cost() -> None:
    assert hidden_budget(0.0) == HIDDEN_CPU_FLOOR_S
    assert hidden_budget(0.2) == pytest.approx(0.2)
    assert hidden_budget(60.0) == KEPT_CPU_S


#: Each call spends 4 ms of CPU, whatever its argument.
BURNING_REFERENCE = (
    "import time\n"
    "def burn(n):\n"
    "    started = time.process_time()\n"
    "    while time.process_time() - started < 0.004:\n"
    "        pass\n"
    "    return n * 2\n"
)


def test_a_task_whose_calls_are_costly_keeps_as_many_cases_as_its_tests_make(
    unit: UnitTestsGrader,
) -> None:
    # Three visible calls of 4 ms: about 12 ms for the hidden cases, so 2 or 3 of
    # them, and the rest dropped in order (not skipped for cheaper ones after them).
    tests = ["assert burn(1) == 2", "assert burn(4) == 8", "assert burn(9) == 18"]
    costly = derive_hidden_cases(
        _runner(unit), tests=tests, reference=BURNING_REFERENCE, entry_point="burn", seed="b"
    )
    assert 1 <= len(costly.cases) <= 3
    assert costly.dropped.get("over_budget", 0) >= 5
    # The same task with calls that cost nothing keeps its full set.
    cheap = derive_hidden_cases(
        _runner(unit),
        tests=tests,
        reference="def burn(n):\n    return n * 2\n",
        entry_point="burn",
        seed="b",
    )
    assert len(cheap.cases) >= 8


# ---- the term, through a rubric

RUBRIC = """
name: hidden-term
version: 1
components:
  tests:
    grader: unit_tests
    weight: 0.8
    config: &run {timeout_s: 10, hidden_cases: true}
  hidden_tests:
    grader: hidden_tests
    weight: 0.2
    config: *run
gates:
  - {when: "hidden_tests < 1", cap: 0.5}
on_missing: renormalize
"""

TASK = TaskSpec(
    kind="python_function",
    tests=HUMANEVAL_TESTS,
    entry_point="head",
    reference=HEAD_REFERENCE,
)

TABLE = """
def head(items, n):
    known = {((1, 2, 3), 2): [1, 2], ((5, 1), 1): [5], ((0, 1, 2, 3), 2): [0, 1], ((), 0): []}
    return known.get((tuple(items), n), [])
"""


@pytest.fixture(scope="module")
def registry(unit: UnitTestsGrader, tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    registry = default_registry()
    unit.hidden = HiddenCaseStore(str(tmp_path_factory.mktemp("hidden")))
    registry.add_instance(unit)
    yield registry


def _score(registry, rubric_text: str, samples: list[Sample], tmp_path: Path):  # type: ignore[no-untyped-def]
    path = tmp_path / "rubric.yaml"
    path.write_text(rubric_text)
    return asyncio.run(score_samples(load_rubric(path), samples, registry=registry))


def test_a_table_of_the_visible_answers_passes_them_and_fails_the_hidden(
    registry, unit: UnitTestsGrader, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    runs = []
    grade = unit._grade_in_thread

    async def counted(sample: Sample, config):  # type: ignore[no-untyped-def]
        runs.append(sample.id)
        return await grade(sample, config)

    monkeypatch.setattr(unit, "_grade_in_thread", counted)
    honest = Sample(id="honest", response=f"```python\n{HEAD_REFERENCE}```", task=TASK)
    table = Sample(id="table", response=f"```python\n{TABLE}```", task=TASK)
    good, bad = _score(registry, RUBRIC, [honest, table], tmp_path)
    assert sorted(runs) == ["honest", "table"]  # one run answers both components
    _score(registry, RUBRIC, [honest], tmp_path)
    assert sorted(runs) == ["honest", "honest", "table"]  # a batch of its own: graded again
    assert good.reward == 1.0
    assert good.components["hidden_tests"].details["hidden_failed"] == 0
    assert bad.components["tests"].score == 1.0  # the control: the visible tests pay it all
    assert bad.components["hidden_tests"].score < 0.5
    assert bad.reward <= 0.5
    # Counts only: no hidden input or expected value is in what a reward carries.
    shown = bad.model_dump_json()
    for case in unit.hidden._memory[next(iter(unit.hidden._memory))].cases:
        assert case.call not in shown and case.call.replace(" ", "") not in shown
        if case.expected not in HUMANEVAL_TESTS:  # a visible test's own value is shown
            assert case.expected not in shown


def test_a_task_without_a_reference_leaves_the_term_and_its_gate_out(
    registry, tmp_path: Path
) -> None:
    task = TaskSpec(kind="python_function", tests=HUMANEVAL_TESTS, entry_point="head")
    sample = Sample(id="plain", response=f"```python\n{HEAD_REFERENCE}```", task=task)
    (reward,) = _score(registry, RUBRIC, [sample], tmp_path)
    assert reward.reward == 1.0 and not reward.gates
    assert reward.components["hidden_tests"].failure.kind == "not_applicable"


def test_code_that_never_runs_scores_zero_on_the_hidden_cases_too(registry, tmp_path: Path) -> None:
    sample = Sample(id="broken", response="```python\ndef head(items, n)\n```", task=TASK)
    (reward,) = _score(registry, RUBRIC, [sample], tmp_path)
    assert reward.components["hidden_tests"].score == 0.0
    assert reward.reward == 0.0


def test_python_codegen_runs_hidden_cases_whenever_a_task_has_a_reference(
    registry, tmp_path: Path
) -> None:
    rubric = (ROOT / "rubrics" / "library" / "python-codegen.yaml").read_text()
    table = Sample(id="table", response=f"```python\n{TABLE}```", task=TASK)
    honest = Sample(id="honest", response=f"```python\n{HEAD_REFERENCE}```", task=TASK)
    good, bad = _score(registry, rubric, [honest, table], tmp_path)
    assert good.components["hidden_tests"].score == 1.0
    assert bad.components["tests"].score == 1.0
    assert bad.reward <= 0.5 < good.reward


def test_program_cases_come_from_the_generator_and_keep_what_the_reference_answers(
    unit: UnitTestsGrader,
) -> None:
    from arbiter.graders.hidden_cases import derive_program_cases

    generator = "def generate(rng):\n    return f'{rng.randint(-5, 5)}\\n'\n"
    # Fails on negatives, and is random on 0: neither kind of input is kept.
    reference = (
        "import random\n"
        "n = int(input())\n"
        "assert n >= 0\n"
        "print(random.random() if n == 0 else n * n)\n"
    )
    cases = derive_program_cases(_runner(unit), generator=generator, reference=reference, seed="s")
    assert cases.cases
    for case in cases.cases:
        n = int(case.call)
        assert n > 0 and case.expected == f"{n * n}\n"
    assert "reference_failed" in cases.dropped
    broken = derive_program_cases(
        _runner(unit), generator="def generate(rng):\n    return 7\n", reference="", seed="s"
    )
    assert not broken.cases and "generator" in broken.reason


def test_a_run_cannot_read_the_cached_cases(unit: UnitTestsGrader, tmp_path: Path) -> None:
    from arbiter.graders.hidden_cases import hidden_cache_dir
    from arbiter.graders.sandbox import Limits

    directory = hidden_cache_dir()  # where the service keeps them
    store = HiddenCaseStore(directory)
    key = store.key("a run must not see this", str(tmp_path))
    store.get(key, lambda: HiddenCases("f", (HiddenCase("((1,), {})", "'secret-answer'"),)))
    path = os.path.join(directory, f"{key}.json")
    assert os.path.exists(path)
    probe = (
        "import os\n"
        f"for p in ({path!r}, {directory!r}, '/var/tmp'):\n"
        "    try:\n"
        "        print(open(p).read() if os.path.isfile(p) else os.listdir(p))\n"
        "    except OSError as e:\n"
        "        print(type(e).__name__)\n"
    )
    report = unit.pool.run_script(probe, b"", Limits(timeout_s=5))
    seen = report.stdout.decode()
    assert report.exit_code == 0, report.stderr
    assert "secret-answer" not in seen and key not in seen, seen
    os.unlink(path)


SMALLEST = TaskSpec(
    kind="python_function",
    tests=(
        "assert smallest([3, 1, 2]) == 1\nassert smallest([5, 4]) == 4\n"
        "assert smallest([9, 7, 8, 6]) == 6\nassert smallest([2, 3]) == 2\n"
    ),
    entry_point="smallest",
    reference="def smallest(xs):\n    return sorted(xs)[0]\n",
)


def test_what_a_candidate_does_to_its_arguments_never_reaches_another_grading(
    tmp_path: Path,
) -> None:
    # One slot, so one checks worker holds the task's cases for every grading.
    grader = UnitTestsGrader(SandboxPool(PoolConfig(slots=1)))
    grader.hidden = HiddenCaseStore(str(tmp_path))
    config = UnitTestsConfig(timeout_s=10, hidden_cases=True)

    def hidden(code: str) -> dict[str, int]:
        sample = Sample(id="s", response=f"```python\n{code}```", task=SMALLEST)
        found: dict[str, int] = grader.grade_sync(sample, config).details["hidden"]
        return found

    try:
        first = "def smallest(xs):\n    return xs[0]\n"  # passes the visible tests only
        before = hidden(first)
        assert before["failed"] > 0
        for _ in range(3):  # an honest answer that sorts its argument in place
            assert hidden("def smallest(xs):\n    xs.sort()\n    return xs[0]\n")["failed"] == 0
        # Had the sorts reached the cases, every input would now be sorted, and the
        # first element the answer: the same verdict as before, or it leaked.
        assert hidden(first) == before
    finally:
        grader.close()
