"""Fuzz targets for every trusted-side reader of candidate text: the one copy of the strategies.

A reward must be a function of the rollout. A reader of the candidate's text (the code
extractor, the program assembler, bandit's and radon's entry points, each language's
tokenizers and readers, the stdout comparer) must therefore answer for any text: return,
or raise the one typed outcome its module documents, which the grader reports as the
candidate's failure. Any other exception escapes as a crash of ours, and a crash makes the
whole reward abstain: a way for the candidate to dodge its zero.

Each :class:`Target` pairs a strategy for a reader's input with a check that calls the
reader and asserts that it answered as documented. The tests under ``tests/graders`` run
each target with :data:`FUZZ_EXAMPLES` examples (``ARBITER_FUZZ_EXAMPLES``, 200 by
default), with the regression examples of the bugs it found; ``python -m
bench.fuzz_readers`` runs every target with 10,000 and counts what escaped.

The text is arbitrary (every code point, lone surrogates and NUL included), made of the
reader's own tokens, built deep or long (nested brackets, long chains, long runs of one
token: the shapes that break recursive readers and backtracking regular expressions), or
real HumanEvalPack prompts and solutions with mutations (``../shared/data``).
"""

from __future__ import annotations

import asyncio
import functools
import json
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from arbiter.graders import code as code_module
from arbiter.graders import program as program_module
from arbiter.graders.bandit import BanditAnalysis, BanditConfig, BanditGrader, analyze_bandit
from arbiter.graders.languages import cpp, go, java, javascript, rust
from arbiter.graders.languages.base import (
    Build,
    Declared,
    Language,
    MalformedProgram,
    ProgramParts,
    UnsupportedTask,
)
from arbiter.graders.radon import RadonConfig, RadonGrader, RadonMetrics, measure_radon
from arbiter.graders.static_analysis import StaticAnalyzer
from arbiter.graders.types import INFRASTRUCTURE_FAILURES, Message, Sample, TaskSpec
from arbiter.graders.unit_tests import outputs_match

__all__ = [
    "DATA",
    "FUZZ_EXAMPLES",
    "TARGETS",
    "Target",
    "fuzz_settings",
    "humanevalpack",
    "require_data",
]

#: Examples per target in the test suite; the benchmark passes its own count.
FUZZ_EXAMPLES = int(os.environ.get("ARBITER_FUZZ_EXAMPLES", "200"))
DATA = Path(__file__).resolve().parents[2].parent / "shared" / "data"

#: The longest text a deep or long shape builds: past the depth of every recursive reader
#: and long enough that a quadratic reader shows (one example stays under a second).
_LONGEST = 30_000


def fuzz_settings(examples: int | None = None) -> settings:
    """Return a fuzz test's settings: ``examples`` (:data:`FUZZ_EXAMPLES`), no deadline.

    No deadline: a shared machine's pauses must not fail a test; the benchmark reports
    the slowest example instead. Large and slow examples are the point here, so the
    health checks that flag them are off.
    """
    return settings(
        max_examples=FUZZ_EXAMPLES if examples is None else examples,
        deadline=None,
        suppress_health_check=list(HealthCheck),
    )


# --------------------------------------------------------------------------- text

#: Every code point, lone surrogates (JSON's ``"\ud800"`` decodes to one) and NUL included.
ANY_CHAR = st.characters(codec=None, categories=None, exclude_categories=())
#: Characters that readers treat specially wherever they are.
_ODD = (
    "\x00",
    "\r\n",
    "\r",
    "\t",
    "\f",
    "\v",
    "\x1c",
    "\x85",
    "\xa0",
    "\u2028",
    "\ufeff",
    "\ud800",
)


def _repeat(unit: str, count: int) -> str:
    return unit * max(1, min(count, _LONGEST // max(1, len(unit))))


def shapes(tokens: Sequence[str]) -> st.SearchStrategy[str]:
    """Deep and long text: nested (balanced or not) brackets, chains, runs of one token."""
    token = st.sampled_from(tuple(tokens) + _ODD)
    pairs = st.sampled_from((("(", ")"), ("[", "]"), ("{", "}"), ("<", ">"), ("f(", ")")))
    depth = st.integers(1, 5_000)
    nested = st.builds(
        lambda pair, d, core, closed: pair[0] * d + core + pair[1] * (d if closed else d // 2),
        pairs,
        depth,
        st.text(ANY_CHAR, max_size=4) | token,
        st.booleans(),
    )
    chain = st.builds(
        lambda head, unit, count, tail: head + _repeat(unit, count) + tail,
        token | st.just(""),
        token | st.text(ANY_CHAR, min_size=1, max_size=3),
        st.integers(1, _LONGEST),
        token | st.just(""),
    )
    indented = st.builds(
        lambda unit, d: "".join(" " * i + unit + "\n" for i in range(d)),
        token,
        st.integers(1, 300),
    )
    return st.one_of(nested, chain, indented)


def texts(tokens: Sequence[str]) -> st.SearchStrategy[str]:
    """Text for a reader: arbitrary, made of its ``tokens``, or deep and long."""
    piece = st.sampled_from(tuple(tokens) + _ODD) | st.text(ANY_CHAR, max_size=6)
    return st.one_of(
        st.text(ANY_CHAR, max_size=300),
        st.lists(piece, max_size=60).map("".join),
        shapes(tokens),
    )


def _mutate(text: str, edits: list[tuple[int, float, float, str]]) -> str:
    for kind, where, span, piece in edits:
        at = int(where * len(text))
        end = min(len(text), at + 1 + int(span * 40))
        if kind == 0:  # delete a stretch
            text = text[:at] + text[end:]
        elif kind == 1:  # insert a token
            text = text[:at] + piece + text[at:]
        elif kind == 2:  # duplicate a stretch
            text = text[:end] + text[at:end] + text[end:]
        elif kind == 3:  # replace a stretch by a token
            text = text[:at] + piece + text[end:]
        else:  # cut the text short
            text = text[:at]
    return text


def mutated(sources: Sequence[str], tokens: Sequence[str]) -> st.SearchStrategy[str]:
    """A real text from ``sources`` (as it is, or with a few edits made of ``tokens``)."""
    piece = st.sampled_from(tuple(tokens) + _ODD) | st.text(ANY_CHAR, max_size=4)
    edit = st.tuples(st.integers(0, 4), st.floats(0, 1), st.floats(0, 1), piece)
    return st.builds(_mutate, st.sampled_from(tuple(sources)), st.lists(edit, max_size=6))


@cache
def humanevalpack(language: str) -> tuple[dict[str, Any], ...]:
    """Return HumanEvalPack's rows for ``language`` (python, cpp, go, java, js, rust), or ()."""
    path = DATA / f"humanevalpack_{language}.jsonl"
    if not path.exists():
        return ()
    return tuple(json.loads(line) for line in path.read_text(encoding="utf-8").splitlines())


def _fields(language: str, *names: str) -> tuple[str, ...]:
    return tuple(row[name] for row in humanevalpack(language) for name in names if row.get(name))


def _or_tokens(sources: tuple[str, ...], tokens: Sequence[str]) -> st.SearchStrategy[str]:
    """Mutated ``sources``, or token text when the data is absent (the strategy never fails)."""
    return mutated(sources, tokens) if sources else texts(tokens)


# --------------------------------------------------------------------------- targets


@dataclass(frozen=True)
class Target:
    """One reader under fuzzing: what it is fed, and the check that calls it."""

    name: str
    strategy: st.SearchStrategy[Any]
    check: Callable[[Any], None]
    #: What the reader may raise (its documented, typed outcomes), for the report.
    allowed: tuple[type[BaseException], ...] = ()
    #: Whether the target needs ../shared/data (its test is unavailable without it).
    needs_data: bool = False


TARGETS: dict[str, Target] = {}


def require_data(target: Target) -> None:
    """Mark a test unavailable (a failure in a strict run) when its target's data is absent."""
    if target.needs_data and not DATA.is_dir():
        from tests.strictness import unavailable

        unavailable(f"{target.name} reads HumanEvalPack from {DATA}, which is absent")


def _target(target: Target) -> None:
    assert target.name not in TARGETS, target.name
    TARGETS[target.name] = target


# --- code extraction and the program (graders/code.py, graders/program.py) ---------------

PYTHON_TOKENS = (
    "def ", "class ", "f(", "(", ")", "[", "]", "{", "}", ":", "\n", "    ", "lambda ",
    "x", "1", "+", "-", "*", "**", "if ", "else ", "for ", "in ", "'", '"', '"""', "#",
    "# nosec", "\\", "@", "import os\n", "eval(", "exec(", "subprocess.Popen(", "assert ",
    "yield ", "await ", "async ", "return ", "x = ", "x.", "not ", ";", ",", "=", ":=",
    "match x:\n", "case ", "f'", "{x}", "# -*- coding: latin-1 -*-\n", "pass\n",
    "```", "```python\n", "```py\n", "~~~\n", "```\n", "````", "```cpp\n", "\n```\n",
)  # fmt: skip
_PYTHON_SOURCES = _fields("python", "prompt", "canonical_solution", "buggy_solution")
python_text = texts(PYTHON_TOKENS) | _or_tokens(_PYTHON_SOURCES, PYTHON_TOKENS)
_WHICH = st.sampled_from(("all", "last"))


def _check_extracted(found: code_module.ExtractedCode | None) -> None:
    if found is not None:
        assert found.code.endswith("\n") and found.code.strip()


def _check_blocks(text: str) -> None:
    for block in code_module.blocks(text):
        assert block.body in text


def _check_extract_code(args: tuple[str, str]) -> None:
    _check_extracted(code_module.extract_code(args[0], which=args[1]))  # type: ignore[arg-type]


def _check_extract_source(args: tuple[str, tuple[str, ...], str]) -> None:
    text, tags, which = args
    _check_extracted(code_module.extract_source(text, tags, which=which))  # type: ignore[arg-type]


_target(Target("code.blocks", python_text, _check_blocks))
_target(Target("code.extract_code", st.tuples(python_text, _WHICH), _check_extract_code))
_target(
    Target(
        "code.extract_source",
        st.tuples(python_text, st.sampled_from((("cpp", "c++"), ("go",), ("rust", "rs"))), _WHICH),
        _check_extract_source,
    )
)


def _check_prompt_code(prompt: str) -> None:
    found = program_module.prompt_code(prompt)
    assert found is None or isinstance(found, str)


def _check_compiles(code: str) -> None:
    assert isinstance(program_module.compiles(code), bool)


def _check_assemble(args: tuple[str, str, str, str | None]) -> None:
    prompt, response, which, entry_point = args
    found = program_module.assemble_program(
        prompt,
        response,
        which=which,  # type: ignore[arg-type]
        entry_point=entry_point,
    )
    _check_extracted(found)


def _check_program_of(args: tuple[str | list[Message], str, str | None]) -> None:
    prompt, response, entry_point = args
    task = TaskSpec(kind="python_function", tests="assert True", entry_point=entry_point)
    _check_extracted(
        program_module.program_of(Sample(id="s", prompt=prompt, response=response, task=task))
    )


_entry_point = (
    st.none()
    | st.sampled_from(("f", "candidate", "solve"))
    | st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,8}", fullmatch=True)
)
_chat = st.lists(
    st.builds(
        lambda role, text: Message(role=role, content=text),
        st.sampled_from(("system", "user", "assistant")),
        python_text,
    ),
    min_size=1,
    max_size=3,
)
_target(Target("program.prompt_code", python_text, _check_prompt_code))
_target(Target("program.compiles", python_text, _check_compiles))
_target(
    Target(
        "program.assemble_program",
        st.tuples(python_text, python_text, _WHICH, _entry_point),
        _check_assemble,
    )
)
_target(
    Target(
        "program.program_of",
        st.tuples(python_text | _chat, python_text, _entry_point),
        _check_program_of,
    )
)

# --- bandit and radon (graders/bandit.py, graders/radon.py) -------------------------------

#: Shapes that reach the analysers: the parser's and the visitors' depth, long statements.
_DEEP_PYTHON = st.one_of(
    st.integers(1, 6_000).map(lambda k: "x = " + "+".join(["1"] * k) + "\n"),
    st.integers(1, 3_000).map(lambda k: "x = " + "-" * k + "1\n"),
    st.integers(1, 1_500).map(lambda k: "x = " + "not " * k + "y\n"),
    st.integers(1, 1_500).map(lambda k: "x = " + "y." * k + "z\n"),
    st.integers(1, 250).map(lambda k: "x = " + "f(" * k + ")" * k + "\n"),
    st.integers(1, 250).map(lambda k: "x = " + "[" * k + "]" * k + "\n"),
    st.integers(1, 1_200).map(lambda k: "x = " + "lambda: " * k + "1\n"),
    st.integers(1, 99).map(
        lambda k: "".join(" " * i + "if x:\n" for i in range(k)) + " " * k + "y\n"
    ),
    st.integers(1, 3_000).map(lambda k: "x = [\n" + "1,\n" * k + "]\n"),
    st.integers(1, 1_000).map(lambda k: "x = (\n" + "    1 +\n" * k + "1)\n"),
    st.integers(1, 2_000).map(lambda k: "def f():\n" + "    eval(x)\n" * k),
)
analysed_python = python_text | _DEEP_PYTHON


def _check_bandit(code: str) -> None:
    from arbiter.graders.bandit import BanditSelection

    assert isinstance(analyze_bandit(code, BanditSelection()), BanditAnalysis)


def _check_radon(code: str) -> None:
    from arbiter.graders.radon import RadonOptions

    assert isinstance(measure_radon(code, RadonOptions()), RadonMetrics)


_BANDIT = BanditGrader(StaticAnalyzer(analyze_bandit, cache_size=0))
_RADON = RadonGrader(StaticAnalyzer(measure_radon, cache_size=0))


def _check_static_grade(grader: BanditGrader | RadonGrader, response: str, zero: bool) -> None:
    config = (BanditConfig if isinstance(grader, BanditGrader) else RadonConfig)(fail_as_zero=zero)
    result = asyncio.run(grader.grade(Sample(id="s", response=response), config))  # type: ignore[arg-type]
    if result.failure is not None:
        # A plugin's crash is ours and stays ours; nothing else the text does may be.
        ours = result.failure.kind in INFRASTRUCTURE_FAILURES
        assert not ours or result.details.get("plugin_errors"), result.failure
    assert (result.score is not None) == (result.failure is None)
    if zero:
        assert result.score is not None


_target(Target("bandit.analyze_bandit", analysed_python, _check_bandit))
_target(Target("radon.measure_radon", analysed_python, _check_radon))
_target(
    Target(
        "bandit.grade",
        st.tuples(analysed_python, st.booleans()),
        lambda args: _check_static_grade(_BANDIT, *args),
    )
)
_target(
    Target(
        "radon.grade",
        st.tuples(analysed_python, st.booleans()),
        lambda args: _check_static_grade(_RADON, *args),
    )
)

# --- the languages (graders/languages/*.py) ------------------------------------------------

_COMMON = (
    "(", ")", "{", "}", "[", "]", "<", ">", ";", ",", ".", ":", "::", "->", "=>", "=", "&",
    "&&", "*", "'", '"', "`", "\\", "/*", "*/", "//", "\n", " ", "  ", "\t", "x", "1", "1.5",
    "0x1F", "1e9", "'a'", '"s"', "f", "f(", "a f(", "main", "return ", "if ", "for ",
)  # fmt: skip
# fmt: off
LANGUAGE_TOKENS: dict[str, tuple[str, ...]] = {
    "cpp": (
        *_COMMON, '#include <vector>\n', '#define main x\n', 'using namespace std;\n', 'int ',
        'void ', 'vector<int> ', 'string ', 'const ', 'noexcept', 'noexcept(true)', 'override',
        'final', 'volatile', 'template<typename T> ', 'typedef ', 'struct ', 'class ',
        'enum class ', 'operator', 'R"(', ')"', 'R"x(', 'u8R"(', "1'000", "L'x'", "b'", "'a",
        '\\\n', 'static ', 'inline ', 'auto ', '-> int ', '[[nodiscard]] ',
    ),
    "go": (
        *_COMMON, 'package main\n', 'import (\n', 'import "fmt"\n', '"fmt"\n', 'import "\\x"\n',
        '"\\N{x}"', '"\\', '`raw`', 'func ', 'func f(', 'func (r T) ', 'type ', 'var ',
        'const ', 'struct{', 'interface{}', 'map[', '[]', '*', '...', 'chan ', 'go ', 'int',
        'string', 'error', 'any', 'T', '[T any]', 'math.', 'strings.', 'fmt.',
    ),
    "java": (
        *_COMMON, 'import java.util.*;\n', 'package p;\n', 'public ', 'class ', 'Solution ',
        'static ', 'void ', 'int ', 'List<Integer> ', 'Map<String, Integer> ', 'String ',
        'throws ', 'Exception ', '@Override ', '@A(', 'final ', 'static void main(',
        'public class A{}', '"""', 'record ', 'enum ', 'interface ', '<T> ', '[]', '...',
    ),
    "rust": (
        *_COMMON, 'fn ', 'fn f(', 'pub ', 'pub(crate) ', 'unsafe ', 'async ', 'const ',
        'extern "C" ', 'impl ', 'mod ', 'use std::collections::HashMap;\n', '-> ', '&str',
        '&[i32]', 'Vec<', 'Option<', 'Box<dyn Any>', 'HashMap<', "'a ", "'a'", "b'x'", 'r#"',
        '"#', 'br"', '/* /* */ */', 'where ', 'self', '&mut ', 'i32', 'String', 'u8', '#[test]',
    ),
    "javascript": (
        *_COMMON, 'function ', 'function f(', 'async ', 'const ', 'let ', 'var ', '=> {',
        '(a, b) => ', 'x => ', 'class ', 'module.exports.', 'exports.', 'globalThis.', '`${',
        '}`', '/re/', 'yield ', 'function* ', 'export ', 'require(', '...args',
    ),
}
# fmt: on
#: The HumanEvalPack file of each language.
_DATA_NAMES = {"cpp": "cpp", "go": "go", "java": "java", "rust": "rust", "javascript": "js"}
LANGUAGES: dict[str, Language] = {
    "cpp": cpp.LANGUAGE,
    "go": go.LANGUAGE,
    "java": java.LANGUAGE,
    "rust": rust.LANGUAGE,
    "javascript": javascript.LANGUAGE,
}
#: Each language's tokenizer: its source text with comments and literals blanked, or Go's tokens.
MASKS: dict[str, Callable[[str], str]] = {
    "cpp": cpp.mask,
    "java": java.mask,
    "rust": rust.mask,
    "javascript": javascript.mask,
}


def _check_mask(mask: Callable[[str], str], text: str) -> None:
    masked = mask(text)
    # Offsets carry over: same length, the newlines where they were.
    assert len(masked) == len(text)
    assert [i for i, c in enumerate(masked) if c == "\n"] == [
        i for i, c in enumerate(text) if c == "\n"
    ]


def _check_go_tokens(text: str) -> None:
    last = 0
    for token in go.tokenize(text):
        assert last <= token.start < token.end <= len(text)
        assert text[token.start : token.end] == token.text
        last = token.end


def _check_go_header(text: str) -> None:
    head = go._header(text)
    assert 0 <= head.body <= len(text)


def _check_build(build: Build) -> None:
    for name, source in build.files.items():
        # What the grader does next with a build: write its files as UTF-8.
        source.encode("utf-8")
        assert isinstance(name, str)


def _typed(call: Callable[[], Any], *allowed: type[BaseException]) -> Any:
    try:
        return call()
    except allowed:
        return None


def _check_defines(lang: Language, args: tuple[str, str]) -> None:
    code, name = args
    assert isinstance(lang.defines(code, name), bool)


def _check_declared(lang: Language, prompt: str) -> None:
    found = _typed(
        lambda: lang.declared(ProgramParts(prompt=prompt, code="", tests="")), UnsupportedTask
    )
    assert found is None or all(isinstance(d, Declared) for d in found)


def _row_parts(language: str, row: dict[str, Any], code: str, continued: bool) -> ProgramParts:
    prompt = row["prompt"]
    return ProgramParts(
        prompt=prompt,
        code=prompt + code if continued else code,
        tests=row["test"],
        setup_code=row.get("test_setup", ""),
        continued=continued,
    )


def _check_candidate(lang: Language, args: tuple[dict[str, Any] | None, str, bool]) -> None:
    """A task the language serves, with any completion: a build, or the candidate's fault."""
    row, code, continued = args
    if row is None:  # no HumanEvalPack here: the test is unavailable (see require_data)
        return
    parts = _row_parts(lang.name, row, code, continued)
    try:
        lang.declared(ProgramParts(prompt=parts.prompt, code="", tests=""))
    except UnsupportedTask:
        return  # a row the bridge cannot serve (Rust's generics): no candidate to read
    build = _typed(lambda: lang.candidate(parts), MalformedProgram)
    if build is not None:
        _check_build(build)


def _check_candidate_of_mutated_task(lang: Language, args: tuple[str, str, str, bool]) -> None:
    """Any prompt and completion: a build, the task's refusal, or the candidate's fault."""
    prompt, code, tests, continued = args
    parts = ProgramParts(
        prompt=prompt, code=prompt + code if continued else code, tests=tests, continued=continued
    )
    build = _typed(lambda: lang.candidate(parts), UnsupportedTask, MalformedProgram)
    if build is not None:
        _check_build(build)


def _check_harness(lang: Language, args: tuple[str, str, str]) -> None:
    prompt, tests, setup = args
    parts = ProgramParts(prompt=prompt, code="", tests=tests, setup_code=setup)
    build = _typed(lambda: lang.harness(parts), UnsupportedTask)
    if build is not None:
        _check_build(build)


def _check_program(lang: Language, code: str) -> None:
    build = _typed(lambda: lang.program(code), MalformedProgram)
    if build is not None:
        _check_build(build)


def _language_targets(name: str, lang: Language) -> None:
    tokens = LANGUAGE_TOKENS[name]
    data = _DATA_NAMES[name]
    rows = humanevalpack(data)
    solutions = _fields(data, "canonical_solution", "buggy_solution")
    prompts = _fields(data, "prompt", "declaration")
    code = (
        texts(tokens)
        | _or_tokens(solutions, tokens)
        | _or_tokens(tuple(p + s for p, s in zip(prompts, solutions, strict=False)), tokens)
    )
    prompt = texts(tokens) | _or_tokens(prompts, tokens)
    tests = _or_tokens(_fields(data, "test"), tokens)
    names = st.sampled_from(tuple({r["entry_point"] for r in rows}) or ("f",)) | st.from_regex(
        r"[A-Za-z_][A-Za-z0-9_]{0,6}", fullmatch=True
    )
    if name in MASKS:
        mask = MASKS[name]
        _target(Target(f"{name}.mask", texts(tokens) | code, functools.partial(_check_mask, mask)))
    _target(
        Target(
            f"{name}.defines",
            st.tuples(code, names),
            functools.partial(_check_defines, lang),
        )
    )
    _target(
        Target(
            f"{name}.declared",
            prompt,
            functools.partial(_check_declared, lang),
            allowed=(UnsupportedTask,),
        )
    )
    _target(
        Target(
            f"{name}.candidate",
            st.tuples(st.sampled_from(rows) if rows else st.none(), code, st.booleans()),
            functools.partial(_check_candidate, lang),
            allowed=(MalformedProgram,),
            needs_data=True,
        )
    )
    _target(
        Target(
            f"{name}.candidate_of_any_task",
            st.tuples(prompt, code, tests, st.booleans()),
            functools.partial(_check_candidate_of_mutated_task, lang),
            allowed=(UnsupportedTask, MalformedProgram),
        )
    )
    _target(
        Target(
            f"{name}.harness",
            st.tuples(prompt, tests, st.sampled_from(("", *_fields(data, "test_setup")))),
            functools.partial(_check_harness, lang),
            allowed=(UnsupportedTask,),
        )
    )
    _target(
        Target(
            f"{name}.program",
            code,
            functools.partial(_check_program, lang),
            allowed=(MalformedProgram,),
        )
    )


for _name, _lang in LANGUAGES.items():
    _language_targets(_name, _lang)
_GO_TEXT = texts(LANGUAGE_TOKENS["go"]) | _or_tokens(
    _fields("go", "prompt", "import", "test_setup"), LANGUAGE_TOKENS["go"]
)
_target(Target("go.tokenize", _GO_TEXT, _check_go_tokens))
_target(Target("go.header", _GO_TEXT, _check_go_header))

# --- the stdout comparer (graders/unit_tests.py) --------------------------------------------

_NUMBER_TOKENS = (
    "0", "-0", "+0", "007", "5", "5.0", "5.", ".5", "-.5", "1e5", "1E-5", "2.6525294e+32",
    "265252859812191058636308480000000", "inf", "-inf", "nan", "NaN", "Infinity", "1_000",
    "0x10", "1e99999", "1" * 5000, "1" * 400 + ".5", "9" * 40 + "e" + "9" * 40, "+", "-", "e",
    "\u0663", "\uff11", "\xbd",
)  # fmt: skip
_SPACE = st.sampled_from((" ", "\n", "\t", "\r\n", "  ", "\x0b", "\x1c", "\u2028", "\xa0", ""))
output_text = st.one_of(
    st.text(ANY_CHAR, max_size=80),
    st.lists(
        st.tuples(st.sampled_from(_NUMBER_TOKENS) | st.text(ANY_CHAR, max_size=5), _SPACE),
        max_size=12,
    ).map(lambda items: "".join(a + b for a, b in items)),
)
_MODES = ("exact", "whitespace", "float")


def _check_outputs_match(args: tuple[str, str, float]) -> None:
    actual, expected, tolerance = args
    verdicts = {m: outputs_match(actual, expected, m, tolerance) for m in _MODES}  # type: ignore[arg-type]
    assert all(isinstance(v, bool) for v in verdicts.values())
    # True before and after the exact-integer rule tightens.
    for mode in _MODES:
        assert outputs_match(actual, actual, mode, tolerance)  # type: ignore[arg-type]
    if verdicts["exact"]:
        assert verdicts["whitespace"]
    if verdicts["whitespace"]:
        assert verdicts["float"]
    if len(actual.split()) != len(expected.split()):
        assert not verdicts["float"]


_target(
    Target(
        "unit_tests.outputs_match",
        st.tuples(
            output_text,
            output_text,
            st.sampled_from((0.0, 1e-6, 0.5, 1e300)) | st.floats(0, 1e6),
        ),
        _check_outputs_match,
    )
)
