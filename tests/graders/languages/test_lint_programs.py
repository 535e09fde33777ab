"""Task lint of ``test_program`` tasks: mutants and know-nothing candidates in their language."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from arbiter.eval_loaders import load_humanevalpack
from arbiter.graders.languages.base import Declared
from arbiter.graders.languages.mutation import closing, mutants, trivial_bodies
from arbiter.graders.types import TaskSpec
from arbiter.graders.unit_tests import UnitTestsGrader
from arbiter.task_lint import TaskToLint, lint_tasks, tasks_of
from tests.graders.languages.conftest import require_toolchain
from tests.strictness import unavailable

DATA = Path(__file__).resolve().parents[3].parent / "shared" / "data"
FILES = {"cpp": "cpp", "java": "java", "go": "go", "rust": "rust", "javascript": "js"}


def test_a_mutant_changes_one_operator_of_code_never_a_type_a_string_or_a_comment() -> None:
    code = (
        "    vector<int> out; // keep i<n here\n"
        '    string s = "a<b == c";\n'
        "    for (int i=0;i<n;i++)\n"
        "        if (v[i] == 3 && v[i]>0) out.push_back(v[i]+1);\n"
        "    return out;\n"
        "}\n"
    )
    made = mutants("cpp", code, seed="s", limit=100)
    # i=0, i<n, == 3, 3, &&, >0, 0, +1, 1: nothing on the first two lines.
    expected = ["0 -> 1", "< -> <=", "== -> swapped", "3 -> 4", "&& -> swapped", "> -> >="]
    assert sorted(m.operator for m in made) == sorted([*expected, "0 -> 1", "+ -> -", "1 -> 2"])
    for m in made:
        assert m.mutated.splitlines()[:2] == code.splitlines()[:2]  # the type, string, comment
        assert len(m.mutated.splitlines()) == len(code.splitlines())
    assert [m.mutated for m in mutants("cpp", code, seed="s", limit=3)] == [
        m.mutated for m in made[:3]
    ]  # the seed alone picks them


def test_go_code_is_read_with_its_own_lexer() -> None:
    code = '    // x == y\n    s := "<="\n    return a <= b\n}\n'
    [mutant] = mutants("go", code, seed="s", limit=10)
    assert mutant.operator == "<= -> <" and mutant.line == 3
    assert '"<="' in mutant.mutated and "// x == y" in mutant.mutated


def test_know_nothing_bodies_are_typed_by_the_declaration_and_closed_like_the_prompt() -> None:
    prompt = (
        "import java.util.*;\nclass Solution {\n    public List<Integer> f(List<Integer> xs) {\n"
    )
    assert closing("java", prompt) == "}\n}\n"
    declared = Declared(
        "f", "public List<Integer> f(List<Integer> xs)", (("xs", "List<Integer>"),), "List<Integer>"
    )
    bodies = trivial_bodies("java", declared, prompt)
    assert bodies["zero"] == "    return new java.util.ArrayList<>();\n}\n}\n"
    assert bodies["identity"] == "    return xs;\n}\n}\n"
    assert "nan" not in bodies  # only a float has one
    half = Declared("half", "float half(float x)", (("x", "float"),), "float")
    assert (
        trivial_bodies("cpp", half, "float half(float x){\n")["nan"] == "    return 0.0 / 0.0;\n}\n"
    )


def test_humanevalpacks_other_languages_load_as_program_tasks(tmp_path: Path) -> None:
    path = DATA / "humanevalpack_cpp.jsonl"
    if not path.exists():
        unavailable(f"{path} is absent (../shared/data)")
    first = tmp_path / "cpp.jsonl"
    first.write_text(path.read_text().splitlines()[0] + "\n")
    canonical, buggy = load_humanevalpack(first)
    assert canonical.task is not None and canonical.task.kind == "test_program"
    assert canonical.task.language == "cpp" and canonical.prompt.endswith("{\n")
    assert not canonical.response.startswith("```")  # a completion of the prompt
    assert buggy.labels is not None and buggy.labels["expected"]["tests_pass"] is False
    [item] = tasks_of([canonical, buggy])
    assert item.reference == canonical.response  # the sample labelled to pass
    row = json.loads(path.read_text().splitlines()[0])
    row["task_id"] = "Cobol/0"
    first.write_text(json.dumps(row) + "\n")
    with pytest.raises(ValueError, match=r"cpp.jsonl:1: task_id 'Cobol/0'"):
        load_humanevalpack(first)


@pytest.mark.parametrize("name", sorted(FILES))
def test_a_humanevalpack_task_is_linted_in_its_own_language(
    language_grader: UnitTestsGrader, name: str, tmp_path: Path
) -> None:
    require_toolchain(language_grader, name)
    path = DATA / f"humanevalpack_{FILES[name]}.jsonl"
    if not path.exists():
        unavailable(f"{path} is absent (../shared/data)")
    first = tmp_path / "first.jsonl"
    first.write_text(path.read_text().splitlines()[0] + "\n")
    [item] = tasks_of(load_humanevalpack(first))
    [linted] = lint_tasks([item], language_grader, repeats=2, max_mutants=12)
    assert linted.language == name and linted.reference == "passes", linted.reasons
    assert linted.trivial and set(linted.trivial.values()) == {"fails"}, linted.trivial
    # HumanEvalPack's first task (two numbers closer than a threshold): a handful of
    # sites in every language, and the tests catch some of them.
    assert linted.mutants + linted.stillborn >= 4 and linted.killed >= 1, linted.reasons
    assert linted.hidden_cases > 0  # derived from the set's passing sample


HALF_TESTS = (
    "#undef NDEBUG\n#include<assert.h>\n"
    "int main(){\n    assert(!(half(4) > 2));\n    assert(half(4) != 3);\n}\n"
)


def test_compiled_tests_that_only_say_what_the_answer_is_not_are_weak(
    language_grader: UnitTestsGrader,
) -> None:
    require_toolchain(language_grader, "cpp")
    prompt = "#include<math.h>\nfloat half(float x){\n"
    task = TaskSpec(kind="test_program", language="cpp", tests=HALF_TESTS, entry_point="half")
    [linted] = lint_tasks(
        [TaskToLint("half", task, prompt, "    return x / 2;\n}\n")], language_grader, repeats=1
    )
    assert linted.reference == "passes"
    assert linted.trivial["nan"] == "passes" and linted.trivial["zero"] == "passes"
    assert linted.trivial["raises"] == "fails"
    assert linted.grade == "weak" and any("nan" in r for r in linted.reasons)
