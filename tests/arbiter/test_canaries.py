"""Canary tasks: the flips of each kind and language, their proof in the sandbox, the command."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from arbiter.canaries import (
    NOTHING_TO_FLIP,
    REFERENCE_FAILS,
    TESTS_DO_NOT_RUN,
    UNPROVEN,
    flips,
    make_canaries,
    twin_of,
)
from arbiter.cli import app
from arbiter.graders.types import IOCase, Sample, TaskSpec
from arbiter.graders.unit_tests import UnitTestsConfig, UnitTestsGrader
from bench.canaries import humanevalpack_path, humanevalpack_samples
from tests.strictness import unavailable

runner = CliRunner()

ADD_PROMPT = 'def add(a, b):\n    """Return a + b."""\n'
ADD_BODY = "    return a + b\n"
WIDE = {"COLUMNS": "200", "TERMINAL_WIDTH": "200"}


def _function(tests: str | list[str], entry_point: str | None = "add") -> TaskSpec:
    return TaskSpec(kind="python_function", tests=tests, entry_point=entry_point)


@pytest.fixture(scope="module")
def grader() -> Iterator[UnitTestsGrader]:
    graders = UnitTestsGrader()
    yield graders
    graders.close()


# --- the flips, kind by kind (pure) ---------------------------------------------------


def test_an_assert_list_flips_the_expected_literal_not_the_arguments() -> None:
    [first, second] = flips(_function(["assert add(1, 2) == 3", "assert 7 == add(3, 4)"]))
    assert first.tests == ["assert add(1, 2) == 4", "assert 7 == add(3, 4)"]
    assert (first.test, first.change) == ("line 1", "3 -> 4")
    assert second.tests == ["assert add(1, 2) == 3", "assert 8 == add(3, 4)"]
    assert second.test == "line 2"


@pytest.mark.parametrize(
    ("expected", "flipped"),
    [
        ("3", "4"),
        ("-3", "-2"),
        ("0.5", "1.5"),
        ("'ab'", "'abx'"),
        ("True", "False"),
        ("None", "0"),
        ("[1, 2, 3]", "[1, 2]"),
        ("[]", "[0]"),
        ("(0, 1)", "(0,)"),
        ("{'a': 1, 'b': 2}", "{'a': 1}"),
    ],
)
def test_each_literal_type_changes_its_own_way(expected: str, flipped: str) -> None:
    [flip] = flips(_function([f"assert add(1, 2) == {expected}"]))
    assert flip.tests == [f"assert add(1, 2) == {flipped}"]


HUMANEVAL_CHECK = """

METADATA = {'author': 'x'}


def check(candidate):
    assert candidate(3.5) == 0.5
    assert abs(candidate(1.33) - 0.33) < 1e-6
    assert tuple(candidate([5, 6])) == tuple([6, 5])
    assert candidate(2) is True
    assert not candidate(7)
    assert candidate(0)
    for x in range(3):
        assert candidate(x) == x

check(truncate)
"""


def test_a_check_function_is_edited_in_place_line_by_line() -> None:
    found = flips(_function(HUMANEVAL_CHECK, entry_point="truncate"))
    by_line = {f.test: f for f in found}
    # The expected literals first, then the measured one, then the truths negated; the
    # loop's computed expectation has no literal and no tolerance is ever touched.
    assert [f.test for f in found] == [
        "line 7",
        "line 10",
        "line 8",
        "line 9",
        "line 11",
        "line 12",
    ]
    assert by_line["line 7"].change == "0.5 -> 1.5"
    assert by_line["line 8"].change == "0.33 -> 1.33"
    assert by_line["line 9"].change == "[6, 5] -> [6]"
    assert by_line["line 10"].change == "True -> False"
    assert "assert candidate(7)\n" in str(by_line["line 11"].tests)
    assert "assert not (candidate(0))\n" in str(by_line["line 12"].tests)
    # Only the one line differs: the rest of the text is byte for byte the original.
    flipped = str(by_line["line 7"].tests)
    assert flipped.replace("== 1.5", "== 0.5", 1) == HUMANEVAL_CHECK


def test_non_ascii_text_before_a_literal_keeps_the_splice_in_place() -> None:
    [flip] = flips(_function(["assert add('é', 'ü') == 'éü'"]))
    assert flip.tests == ["assert add('é', 'ü') == 'éüx'"]
    # A line separator inside a string is no line end to Python's tokenizer.
    check = "def check(c):\n    s = 'a\u2028b\x0c'\n    assert c(s, 1) == 2\n"
    [flip] = flips(_function(check))
    assert flip.tests == check.replace("== 2", "== 3") and flip.test == "line 3"


def test_pytest_flips_name_the_test_by_its_id() -> None:
    tests = (
        "from solution import slug\n\n"
        "def test_words():\n    assert slug('A B') == 'a-b'\n\n"
        "class TestSpaces:\n    def test_strip(self):\n        assert slug(' a ') == 'a'\n"
    )
    found = flips(TaskSpec(kind="pytest", tests=tests))
    assert [f.test for f in found] == [
        "test_solution.py::test_words",
        "test_solution.py::TestSpaces::test_strip",
    ]
    assert "assert slug('A B') == 'a-bx'" in str(found[0].tests)


def test_stdin_stdout_flips_one_case_output() -> None:
    task = TaskSpec(
        kind="stdin_stdout",
        tests=[
            IOCase(input="1 2\n", output="3\n"),
            IOCase(input="x\n", output="YES\n"),
            IOCase(input="\n", output=""),
        ],
    )
    found = flips(task)
    assert [f.test for f in found] == ["case 0", "case 1", "case 2"]
    outputs = [[c.output for c in f.tests if isinstance(c, IOCase)] for f in found]
    assert outputs == [["4\n", "YES\n", ""], ["3\n", "YESx\n", ""], ["3\n", "YES\n", "0\n"]]


PROGRAMS = {
    "cpp": (
        "#include<assert.h>\nint main(){\n"
        "    assert (truncate_number(3.5) == 0.5);\n"
        '    assert (issame(words("a b"), {"a", "b"}));\n'
        "    assert (abs(truncate_number(1.33) - 0.33) < 1e-4);\n}\n",
        "truncate_number",
        ["0.5 -> 1.5", '"a" -> "ax"', '"b" -> "bx"', "0.33 -> 1.33", "1e-4 -> 2e-4"],
    ),
    "java": (
        "public class Main {\n    public static void main(String[] args) {\n"
        "        Solution s = new Solution();\n"
        "        List<Boolean> correct = Arrays.asList(\n"
        "            s.truncateNumber(3.5) == 0.5,\n"
        "            !s.isEven(4),\n"
        "            s.truncateNumber(2.0) == 'a'\n        );\n    }\n}\n",
        "truncateNumber",
        ["0.5 -> 1.5", "'a' -> 'b'", "!s.isEven(...) -> s.isEven(...)"],
    ),
    "go": (
        "func TestTruncate(t *testing.T) {\n    assert := assert.New(t)\n"
        "    assert.Equal(0.5, TruncateNumber(3.5))\n"
        "    assert.Equal(true, math.Abs(TruncateNumber(1.33)-0.33) < 1e-6)\n}\n",
        "TruncateNumber",
        ["0.5 -> 1.5", "true -> false", "0.33 -> 1.33", "1e-6 -> 2e-6"],
    ),
    "rust": (
        "#[cfg(test)]\nmod tests {\n    use super::*;\n\n    #[test]\n"
        "    fn test_truncate() {\n"
        "        assert_eq!(truncate_number(&3.5), 0.5);\n"
        "        let t1: f32 = 1.33 - 0.33;\n"
        "        assert!(truncate_number(&t1) < 0.000001);\n"
        '        assert!(words(vec!["a"]) == vec![String::from("a")]);\n'
        "    }\n}\n",
        "truncate_number",
        ["0.5 -> 1.5", '"a" -> "ax"', "0.000001 -> 1.000001"],
    ),
    "javascript": (
        "const testTruncate = () => {\n"
        "  console.assert(truncateNumber(3.5) === 0.5)\n"
        "  console.assert(JSON.stringify(words('a b')) === JSON.stringify(['a', 'b']))\n"
        "}\ntestTruncate()\n",
        "truncateNumber",
        ["0.5 -> 1.5", "'a' -> 'ax'", "'b' -> 'bx'"],
    ),
}
PROMPTS = {
    "cpp": "#include<vector>\nusing namespace std;\nvector<string> words(string s){\n",
    "java": "class Solution {\n    public boolean isEven(int n) {\n",
    "go": "func TruncateNumber(number float64) float64 {\n",
    "rust": "fn words(v: Vec<&str>) -> Vec<String> {\n",
    "javascript": "const words = (s) => {\n",
}


@pytest.mark.parametrize("language", sorted(PROGRAMS))
def test_test_programs_flip_expected_literals_never_the_call_arguments(language: str) -> None:
    tests, entry_point, changes = PROGRAMS[language]
    task = TaskSpec(kind="test_program", language=language, tests=tests, entry_point=entry_point)
    # The prompt declares a second function the tests call (as HumanEvalPack's do when
    # its entry_point names another): its calls' arguments are inputs too.
    found = flips(task, PROMPTS[language])
    assert [f.change for f in found] == changes
    for flip in found:
        assert isinstance(flip.tests, str) and flip.tests != tests
        # One change, in one place: the texts differ on one line only.
        diff = [
            (a, b)
            for a, b in zip(tests.splitlines(), flip.tests.splitlines(), strict=True)
            if a != b
        ]
        assert len(diff) == 1 and flip.test == f"line {tests.splitlines().index(diff[0][0]) + 1}"
        assert "3.5" in flip.tests  # no argument of a call was changed


def test_a_task_with_no_expected_value_has_no_flip() -> None:
    assert (
        flips(_function("def check(f):\n    for x in range(3):\n        assert f(x) == x\n")) == []
    )
    assert flips(_function(["assert add(1, 2) == add(2, 1)"])) == []


def test_a_twin_keeps_the_prompt_and_says_what_it_is() -> None:
    sample = Sample(
        id="t/1",
        group_id="t",
        prompt=ADD_PROMPT,
        response=ADD_BODY,
        task=_function(["assert add(1, 2) == 3"]),
        labels={"expected": {"tests_pass": True}, "source": "x"},
    )
    [flip] = flips(sample.task)  # type: ignore[arg-type]
    twin = twin_of(sample, flip)
    assert (twin.id, twin.group_id) == ("t/1/canary", "t/canary")
    assert twin.prompt == sample.prompt and twin.response == sample.response
    assert isinstance(twin.task, TaskSpec) and twin.task.canary is not None
    assert (twin.task.canary.of, twin.task.canary.test) == ("t/1", "line 1")
    assert twin.labels == {
        "source": "x",
        "canary": True,
        "canary_of": "t/1",
        "expected": {"tests_pass": False},
    }
    assert sample.task.canary is None  # type: ignore[union-attr]


# --- the proof: the reference graded in the sandbox -----------------------------------


def test_each_twin_is_proven_on_the_reference_and_the_rest_say_why(
    grader: UnitTestsGrader,
) -> None:
    samples = [
        Sample(
            id="ok", prompt=ADD_PROMPT, response=ADD_BODY, task=_function(["assert add(1, 2) == 3"])
        ),
        # The reference is wrong: its own tests fail, so a flip proves nothing.
        Sample(
            id="wrong",
            prompt=ADD_PROMPT,
            response="    return a - b\n",
            task=_function(["assert add(1, 2) == 3"]),
        ),
        # No literal: the asserted truth is negated.
        Sample(
            id="truth", prompt=ADD_PROMPT, response=ADD_BODY, task=_function(["assert add(1, 2)"])
        ),
        # The first case's flip is within the float tolerance: the reference still passes
        # it, and the second case's flip is the one proven.
        Sample(
            id="tolerance",
            response="```python\nprint(float(input()) * 2)\n```",
            task=TaskSpec(
                kind="stdin_stdout",
                comparison="float",
                float_tolerance=1e-5,
                tests=[
                    IOCase(input="500000\n", output="1000000.0\n"),
                    IOCase(input="1.5\n", output="3.0\n"),
                ],
            ),
        ),
        # Its only flip is within the tolerance: nothing is proven.
        Sample(
            id="unproven",
            response="```python\nprint(float(input()) * 2)\n```",
            task=TaskSpec(
                kind="stdin_stdout",
                comparison="float",
                float_tolerance=1e-5,
                tests=[IOCase(input="500000\n", output="1000000.0\n")],
            ),
        ),
        # Tests that do not run (they import what is not there): the task's fault.
        Sample(
            id="broken",
            prompt=ADD_PROMPT,
            response=ADD_BODY,
            task=_function("import no_such_module\n\ndef check(f):\n    assert f(1, 2) == 3\n"),
        ),
        Sample(id="answer", response="3", task={"kind": "answer", "answer": "3"}),  # type: ignore[arg-type]
    ]
    outcomes, summary = make_canaries(samples, grader)
    by_id = {o.id: o for o in outcomes}
    assert set(by_id) == {"ok", "wrong", "truth", "tolerance", "unproven", "broken"}
    assert by_id["ok"].twin is not None and by_id["ok"].tries == 1
    assert by_id["wrong"].reason == REFERENCE_FAILS
    assert str(by_id["broken"].reason).startswith(f"{TESTS_DO_NOT_RUN} (")
    truth = by_id["truth"].twin
    assert truth is not None and truth.task.tests == ["assert not (add(1, 2))"]  # type: ignore[union-attr]
    twin = by_id["tolerance"].twin
    assert twin is not None and by_id["tolerance"].tries == 2
    assert isinstance(twin.task, TaskSpec) and twin.task.canary is not None
    assert twin.task.canary.test == "case 1"
    assert by_id["unproven"].reason == UNPROVEN
    assert summary.skipped == 1
    assert summary.as_dict()["languages"]["python"]["made"] == 3
    # The proof holds on the twins as made: graded again, the reference fails each.
    for made in (by_id["ok"].twin, twin, truth):
        assert made is not None
        result = grader.grade_sync(made, UnitTestsConfig())
        assert result.score is not None and result.score < 1.0, made.id


def test_nothing_to_flip_is_counted_with_its_reason(grader: UnitTestsGrader) -> None:
    sample = Sample(
        id="n",
        prompt=ADD_PROMPT,
        response=ADD_BODY,
        task=_function(["assert add(1, 2) == add(2, 1)"]),
    )
    [outcome], summary = make_canaries([sample], grader)
    assert outcome.reason == NOTHING_TO_FLIP and summary.gradings == 0
    assert summary.as_dict()["languages"]["python"]["left_out"] == {NOTHING_TO_FLIP: 1}


# --- the command ------------------------------------------------------------------------


def _rows() -> list[dict[str, object]]:
    return [
        {
            "id": "fn",
            "prompt": ADD_PROMPT,
            "response": ADD_BODY,
            "task": {
                "kind": "python_function",
                "entry_point": "add",
                "tests": ["assert add(1, 2) == 3"],
            },
        },
        {
            "id": "stdio",
            "response": "```python\na, b = map(int, input().split())\nprint(a + b)\n```",
            "task": {"kind": "stdin_stdout", "tests": [{"input": "1 2\n", "output": "3\n"}]},
        },
        {
            "id": "js",
            "prompt": "function add(a, b) {\n",
            "response": "  return a + b;\n}\n",
            "task": {
                "kind": "test_program",
                "language": "javascript",
                "entry_point": "add",
                "tests": "const assert = require('node:assert');\n"
                "assert.strictEqual(add(1, 2), 3);\n",
            },
        },
        {
            "id": "same",
            "prompt": ADD_PROMPT,
            "response": ADD_BODY,
            "task": {
                "kind": "python_function",
                "entry_point": "add",
                "tests": ["assert add(1, 2) == add(2, 1)"],
            },
        },
        {"id": "math", "response": "3", "task": {"kind": "answer", "answer": "3"}},
    ]


def test_the_command_writes_the_twins_and_counts_per_language(tmp_path: Path) -> None:
    source, out = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    rows = _rows()
    source.write_text("".join(json.dumps(r) + "\n" for r in rows))
    result = runner.invoke(app, ["canaries", "make", str(source), "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert "javascript: 1 made, 0 left out" in result.stdout
    assert f"python: 2 made, 1 left out ({NOTHING_TO_FLIP}: 1)" in result.stdout
    assert "total: 3 made, 1 left out, 1 skipped" in result.stdout
    assert "same: left out" in result.stderr
    twins = [Sample.model_validate_json(line) for line in out.read_text().splitlines()]
    assert [t.id for t in twins] == ["fn/canary", "stdio/canary", "js/canary"]
    originals = {r["id"]: r for r in rows}
    for twin in twins:
        original = originals[twin.id.removesuffix("/canary")]
        assert twin.prompt == original.get("prompt", "")  # byte for byte
        assert isinstance(twin.task, TaskSpec) and twin.task.canary is not None
        assert twin.task.tests != Sample.model_validate(original).task.tests  # type: ignore[union-attr]
    assert "strictEqual(add(1, 2), 4)" in str(twins[2].task.tests)  # type: ignore[union-attr]


def test_the_command_names_the_line_of_a_bad_input(tmp_path: Path) -> None:
    source = tmp_path / "in.jsonl"
    good = json.dumps(_rows()[0])
    source.write_text(good + "\n" + '{"id": "x", "response": 3}\n' + "[1]\n")
    result = runner.invoke(app, ["canaries", "make", str(source), "-o", str(tmp_path / "o")])
    assert result.exit_code == 2
    assert f"{source}:2: response: a valid string" in result.stderr
    assert f"{source}:3: expected a JSON object; found list" in result.stderr
    assert not (tmp_path / "o").exists()


def test_the_command_refuses_a_set_with_no_tests(tmp_path: Path) -> None:
    source = tmp_path / "in.jsonl"
    source.write_text(json.dumps(_rows()[-1]) + "\n")
    result = runner.invoke(app, ["canaries", "make", str(source), "-o", str(tmp_path / "o")])
    assert result.exit_code == 2
    assert "no sample has a task with tests" in result.stderr
    missing = runner.invoke(app, ["canaries", "make", str(tmp_path / "nope"), "-o", "o"], env=WIDE)
    assert missing.exit_code == 2 and "does not exist" in missing.output


# --- real data: HumanEvalPack ---------------------------------------------------------


def _humanevalpack(language: str, limit: int | None = None) -> list[Sample]:
    path = humanevalpack_path(language)
    if not path.exists():
        unavailable(f"{path} is absent: the shared reference data is not beside the checkout")
    return humanevalpack_samples(language, limit)


def _prove(twins: list[Sample], grader: UnitTestsGrader) -> None:
    """Grade each twin again, with its canonical solution: every score below 1.0."""
    import asyncio

    from arbiter.graders.runner import GraderJob, run_jobs

    results = asyncio.run(
        run_jobs(
            [GraderJob(t, "tests", grader, UnitTestsConfig(), 300.0) for t in twins],
            max_concurrency=8,
        )
    )
    scores = {t.id: r.score for t, r in zip(twins, results, strict=True)}
    assert all(s is not None and s < 1.0 for s in scores.values()), scores


@pytest.mark.slow(seconds=60)
def test_humanevalpack_python_gives_at_least_150_proven_canaries(grader: UnitTestsGrader) -> None:
    samples = _humanevalpack("python")
    assert len(samples) == 164
    outcomes, summary = make_canaries(samples, grader)
    twins = [o.twin for o in outcomes if o.twin is not None]
    print(summary.as_dict())
    assert len(twins) >= 150, [(o.id, o.reason) for o in outcomes if o.twin is None]
    for twin, sample in zip(
        twins, [s for s, o in zip(samples, outcomes, strict=True) if o.twin], strict=True
    ):
        assert twin.prompt == sample.prompt
        assert twin.task.canary.of == sample.id  # type: ignore[union-attr]
    _prove(twins, grader)


@pytest.mark.slow(seconds=150)
@pytest.mark.parametrize("language", ["cpp", "java", "go", "rust", "javascript"])
def test_humanevalpack_other_languages_give_proven_canaries(
    grader: UnitTestsGrader, language: str
) -> None:
    # A bounded subset keeps the suite fast: python -m bench.canaries runs all 164.
    samples = _humanevalpack(language, limit=8)
    outcomes, _ = make_canaries(samples, grader)
    twins = [o.twin for o in outcomes if o.twin is not None]
    assert len(twins) == len(samples), [(o.id, o.reason) for o in outcomes if o.twin is None]
    assert all(t.task.language == language for t in twins)  # type: ignore[union-attr]
    _prove(twins, grader)
