"""The bridged languages as one table: what each shared test needs to know of a language.

``test_every_language.py`` runs the behaviours every bridged language shares over
:data:`LANGUAGES`, one :class:`Lang` a language: the reference task's builds, whole
sessions through the bridge (a right answer passes, a wrong one fails, an exception,
a candidate that dies), the attacks (each passes the naive harness and fails the
bridged one), HumanEvalPack rows both ways, the runtime's codec against
:mod:`arbiter.graders.languages.wire`, and the readers under
:mod:`tests.graders.reader_fuzz`. Where languages differ in such a test the
difference is a field here; what only one language has stays in its
``test_<lang>.py``, which takes its reference task and prepared toolchain
(:meth:`Lang.rig`) from here too.

Nothing here needs the sandbox: builds are compiled and run as local subprocesses
(:mod:`tests.graders.languages.local_runs`), the candidate's and the harness's joined
by a socket pair on descriptor 3.
"""

from __future__ import annotations

import math
import os
import struct
import subprocess
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given

from arbiter.graders.languages import cpp, go, java, javascript, local, rust, wire
from arbiter.graders.languages.base import Build, Language, ProgramParts, Toolchain
from arbiter.graders.languages.wire import UNDEFINED, Char, Tuple
from tests.graders.languages import local_runs
from tests.graders.languages.conftest import attacks
from tests.graders.reader_fuzz import TARGETS, fuzz_settings, humanevalpack, require_data
from tests.strictness import unavailable

#: A lone surrogate (JSON's "\ud800"): the build's files could not be written.
SURROGATE = "\ud800"
#: What every attack says (an attack file's language may add keys: :attr:`Lang.attack_keys`).
ATTACK_KEYS = frozenset({"name", "why", "prompt", "response", "tests", "setup_code"})
#: Where the languages' runtimes (the bridges' sources) are.
RUNTIMES = Path(local.__file__).with_name("runtime")
#: The memory a program is run with where a test reads back what it was given.
MEMORY_MB = 256
#: The readers of candidate text every language has (reader_fuzz's ``<language>.<reader>``
#: targets; a language with a tokenizer has ``mask`` too).
READERS = ("defines", "declared", "candidate", "candidate_of_any_task", "harness", "program")


# --- the table's rows ---------------------------------------------------------------------


@dataclass(frozen=True)
class Task:
    """A language's reference task: a prompt with a helper of its own, its tests, a right body."""

    prompt: str
    tests: str
    body: str
    #: A name only the body writes: never in the harness, always in the candidate.
    marker: str
    #: (old, new): the body's edit that makes a wrong answer, and what the failure says.
    wrong: tuple[str, str]
    #: A whole-program answer to the task: the harness is the same as for the body.
    whole: str
    #: The open declaration as read: (name, params, returns, header).
    declared: tuple[str, tuple[tuple[str, str], ...], str, str]
    setup: str = ""
    wrong_says: str = ""


@dataclass(frozen=True)
class Session:
    """The reference task with some parts replaced, run through the bridge, and its verdict.

    ``says``: text the run's account must hold; ``continued``: forced (None: whether
    the body defines the task's function decides).
    """

    name: str
    prompt: str | None = None
    body: str | None = None
    tests: str | None = None
    continued: bool | None = None
    passes: bool = False
    says: str = ""


@dataclass(frozen=True)
class Codec:
    """The runtime's codec against wire.py, and the echo program that answers for it.

    (type, value) round trips, (type, payload, the re-encoding) conversions, (type,
    payload) refusals; ``echo`` decodes each payload into its type and encodes it
    again (``E`` and the error).
    """

    round_trips: Sequence[tuple[str, Any]]
    converted: Sequence[tuple[str, bytes, bytes]]
    refused: Sequence[tuple[str, bytes]]
    echo: Callable[[Rig, str, list[str], list[bytes]], list[bytes]]
    slow: bool = False


@dataclass(frozen=True)
class StdinProgram:
    """A standalone program (``Language.program``), what it reads and what it must print."""

    code: str
    stdin: bytes
    stdout: bytes
    slow: bool = False


@dataclass(frozen=True)
class HeapProbe:
    """A program that prints its heap's limit in MB.

    Run with :data:`MEMORY_MB` and the language's address space, it must start and
    print a number in ``heap_mb``.
    """

    code: str
    heap_mb: tuple[int, int]


@dataclass(frozen=True)
class Requirement:
    """A HumanEvalPack row whose prompt holds ``marker`` needs ``path`` on this host."""

    marker: str
    path: str
    why: str


def _in_a_fresh_cache(lang: Lang, found: Toolchain, factory: pytest.TempPathFactory) -> Rig:
    """The toolchain prepared in a temporary ``{cache}`` of this session's (the bridge's)."""
    toolchain = lang.language.prepare(found, str(factory.mktemp(f"{lang.name}-cache")))
    return Rig(lang, toolchain, cache=toolchain.roots[-1])  # prepare() puts the cache last


@dataclass(frozen=True)
class Lang:
    """One bridged language, as the shared tests see it."""

    #: The name under :mod:`arbiter.graders.languages` and the reader_fuzz targets' prefix.
    name: str
    language: Language
    #: HumanEvalPack's name of it (``humanevalpack_<data>.jsonl``).
    data: str
    #: Why its tests cannot run where find_toolchain() finds none.
    missing: str
    #: Whether a whole session (compiling and running both sides) is a slow test.
    slow: bool
    #: HumanEvalPack rows whose canonical solution passes the bridge and buggy one fails.
    rows: tuple[int, ...]
    #: reader_fuzz target (``<name>.<key>``) → the regression examples it runs first.
    fuzz: Mapping[str, tuple[Any, ...]]
    #: (id, a read of long text that once took quadratic time or worse).
    long_reads: tuple[tuple[str, Callable[[], object]], ...]
    task: Task | None = None
    #: Whole sessions besides the right and wrong answers.
    exception: Session | None = None
    dies: tuple[Session, ...] = ()
    #: A body that exhausts the heap: told as the language's out of memory.
    hog: str | None = None
    codec: Codec | None = None
    stdin_program: StdinProgram | None = None
    heap: HeapProbe | None = None
    #: The bridged run's deadline, the naive one's, a HumanEvalPack row's.
    timeout_s: float = 60
    naive_timeout_s: float = 60
    row_timeout_s: float | None = None
    #: Whether a row's naive run (the peers' harness) must agree with the bridge too.
    rows_naive: bool = False
    row_requires: tuple[Requirement, ...] = ()
    #: Keys this language's attacks may have beyond :data:`ATTACK_KEYS`.
    attack_keys: frozenset[str] = field(default_factory=frozenset)
    #: The Rig of the toolchain found: by default prepared in a fresh temporary cache.
    prepare: Callable[[Lang, Toolchain, pytest.TempPathFactory], Rig] = _in_a_fresh_cache

    def __repr__(self) -> str:
        return self.name

    def parts(
        self,
        prompt: str | None = None,
        body: str | None = None,
        tests: str | None = None,
        *,
        continued: bool | None = None,
    ) -> ProgramParts:
        """The reference task with any of its parts replaced, answered by ``body``."""
        task = self.task
        assert task is not None, f"{self.name} has no reference task"
        return self.joined(
            task.prompt if prompt is None else prompt,
            task.body if body is None else body,
            task.tests if tests is None else tests,
            task.setup,
            continued,
        )

    def session(self, session: Session) -> ProgramParts:
        return self.parts(session.prompt, session.body, session.tests, continued=session.continued)

    def attacks(self) -> list[dict[str, Any]]:
        """``attacks_<name>.py``'s attacks."""
        return attacks(self.name)

    def attack_parts(self, attack: dict[str, Any]) -> ProgramParts:
        return self.joined(
            attack["prompt"], attack["response"], attack["tests"], attack["setup_code"]
        )

    def joined(
        self,
        prompt: str,
        response: str,
        tests: str,
        setup: str = "",
        continued: bool | None = None,
    ) -> ProgramParts:
        """A task and a response to it: the prompt continued, or the response alone.

        The response stands alone where it defines the prompt's function (``continued``,
        when given, says which instead).
        """
        if continued is None:
            bare = ProgramParts(prompt=prompt, code="", tests=tests)
            name = self.language.declared(bare)[0].name
            continued = not self.language.defines(response, name)
        return ProgramParts(
            prompt=prompt,
            code=prompt + response if continued else response,
            tests=tests,
            setup_code=setup,
            continued=continued,
        )

    def row(self, row: int) -> dict[str, Any]:
        """HumanEvalPack's row ``row`` (unavailable without ../shared/data)."""
        rows = humanevalpack(self.data)
        if not rows:
            unavailable(
                f"humanevalpack_{self.data}.jsonl is absent: the shared reference data is not "
                "beside the checkout"
            )
        return rows[row]

    def rig(self, factory: pytest.TempPathFactory) -> Rig:
        """The toolchain prepared, once a session (unavailable when it is absent here)."""
        key = (self.name, factory.getbasetemp())
        if key not in _RIGS:
            found = self.language.find_toolchain()
            if found is None:
                unavailable(self.missing)
            _RIGS[key] = self.prepare(self, found, factory)
        return _RIGS[key]


_RIGS: dict[tuple[str, Path], Rig] = {}


@dataclass(frozen=True)
class Rig:
    """A language's toolchain, prepared: its builds compile and run as its tests do.

    ``cache`` is the builds' ``{cache}``, where ``prepare`` put the bridge (None:
    each build's own directory); ``private`` is the harness's ``{private}``.
    """

    lang: Lang
    toolchain: Toolchain
    cache: str | None = None
    private: str = ""

    def compile(self, build: Build, out: str) -> str:
        """Compile ``build`` in ``out`` (made if absent), which it returns; it must compile."""
        os.makedirs(out, exist_ok=True)
        done = local.compile_build(build, out, self.toolchain, self.cache or out)
        assert done.ok, done.diagnostics[-3000:]
        return out

    def bridged(
        self, parts: ProgramParts, root: str, timeout_s: float | None = None
    ) -> tuple[bool, str]:
        """The candidate and the harness joined on descriptor 3: (passed, why)."""
        return local_runs.bridged(
            self.lang.language,
            parts,
            self.toolchain,
            root,
            cache=self.cache,
            private=self.private,
            timeout_s=self.lang.timeout_s if timeout_s is None else timeout_s,
        )

    def naive(self, parts: ProgramParts, root: str) -> tuple[bool, str]:
        """The peers' harness: the candidate and the tests as one program."""
        return local_runs.naive(
            self.lang.language,
            parts,
            self.toolchain,
            root,
            cache=self.cache,
            timeout_s=self.lang.naive_timeout_s,
        )

    def resolve(self, build: Build, out: str, memory_mb: int = MEMORY_MB) -> list[str]:
        """The argv of a program's run in ``out`` (its own ``{cache}``: it has no bridge)."""
        return local.resolve(build.run, self.toolchain, out, out, memory_mb)


# --- helpers the languages' codec programs share ---------------------------------------------


def frames(data: bytes) -> list[bytes]:
    """The frames (wire.py's) one after another in ``data``."""
    found, pos = [], 0

    def read(n: int) -> bytes:
        nonlocal pos
        chunk = data[pos : pos + n]
        pos += len(chunk)
        return chunk

    while (frame := wire.read_frame(read)) is not None:
        found.append(frame)
    return found


def same(a: Any, b: Any) -> bool:
    """Equal values, floats by their bits (-0.0, NaN)."""
    if isinstance(a, float) and isinstance(b, float):
        return struct.pack(">d", a) == struct.pack(">d", b)
    return bool(a == b)


def _numbered(types: list[str], payloads: list[bytes]) -> tuple[list[str], bytes]:
    """The types in case order, and each payload framed behind its type's case number."""
    order = sorted(set(types))
    stdin = b"".join(
        wire.frame(b"i%d;" % order.index(t) + p) for t, p in zip(types, payloads, strict=True)
    )
    return order, stdin


def fuzz(target: str, examples: Sequence[Any]) -> None:
    """Run reader_fuzz's ``target``: its regression ``examples``, then its strategy."""
    found = TARGETS[target]
    require_data(found)

    def check(args: Any) -> None:
        found.check(args)

    # Each target's examples apart in Hypothesis's database, as a test of its own was.
    check._hypothesis_internal_add_digest = target.encode()  # type: ignore[attr-defined]
    test = given(found.strategy)(check)
    for args in reversed(examples):
        test = example(args)(test)
    fuzz_settings()(test)()


def _served(data: str, row: int) -> dict[str, Any] | None:
    """A HumanEvalPack row the bridge serves (None without ../shared/data).

    Without it the candidate reader's test is unavailable.
    """
    rows = humanevalpack(data)
    return rows[row] if rows else None


def _readers(
    opening: str, row: dict[str, Any] | None, **examples: tuple[Any, ...]
) -> dict[str, tuple[Any, ...]]:
    """Each reader's regression examples (:attr:`Lang.fuzz`), every language's first.

    Every language's readers once failed on a lone surrogate (:data:`SURROGATE`) in
    the prompt, the completion or the tests: the build's files could not be written.
    ``opening`` is a prompt's open function, ``row`` a task the bridge serves;
    ``examples`` are the language's own.
    """
    commented = f"/* {SURROGATE} */\n{opening}"
    every = {
        "candidate": ((row, SURROGATE, True),),
        "candidate_of_any_task": (
            (commented, "", "", True),
            (commented, "return 1;", "", False),
            (opening, SURROGATE, "", False),
        ),
        "harness": ((opening, f"/* {SURROGATE} */", ""),),
    }
    found = {"mask": examples.pop("mask")} if "mask" in examples else {}
    for reader in READERS:
        found[reader] = every.get(reader, ()) + examples.pop(reader, ())
    return found | examples  # readers only this language has (Go's tokenize, header)


# --- C++ --------------------------------------------------------------------------------------

#: (C++ type, value) pairs: wire.encode(value) must decode into the type and re-encode
#: to the same bytes.
CPP_ROUND_TRIPS: list[tuple[str, Any]] = [
    ("bool", True),
    ("bool", False),
    ("int", 0),
    ("int", -2147483648),
    ("int", 2147483647),
    ("long long", -9223372036854775808),
    ("unsigned long long", 18446744073709551615),
    ("short", -7),
    ("unsigned char", 255),
    ("char", Char(97)),
    ("char", Char(0)),
    ("char", Char(233)),
    ("char32_t", Char(0x1F600)),
    ("double", 0.1),
    ("double", -0.0),
    ("double", math.inf),
    ("double", 5e-324),
    ("float", 1.5),
    ("float", struct.unpack("f", struct.pack("f", 0.1))[0]),
    ("string", ""),
    ("string", "héllo, wörld ☃"),
    ("string", "a\x00b:c;"),
    ("vector<int>", [1, -2, 3]),
    ("vector<int>", []),
    ("vector<bool>", [True, False, True]),
    ("vector<float>", [1.0, 2.5, -3.25]),
    ("vector<vector<string>>", [["a"], [], ["b", "cd"]]),
    ("vector<string>", ["x", "l2:s1:a"]),
    ("pair<int,string>", Tuple((1, "one"))),
    ("tuple<int,double,bool>", Tuple((7, 0.5, True))),
    ("tuple<>", Tuple(())),
    ("map<string,int>", {"a": 1, "b": -2}),
    ("map<char,int>", {Char(97): 3}),
    ("unordered_map<int,vector<int>>", {5: [1, 2]}),
    ("map<int,string>", {}),
    ("optional<int>", None),
    ("optional<int>", 5),
    ("set<int>", [1, 2, 3]),
    ("list<long>", [4, 5]),
    ("array<int,2>", [8, 9]),
    ("vector<pair<string,long long>>", [Tuple(("k", 10**15))]),
    # Dynamic values: by what they hold, and decoded by tag.
    ("any", 5),
    ("any", -(2**40)),
    ("any", None),
    ("any", True),
    ("any", 2.5),
    ("any", Char(99)),
    ("any", "text"),
    ("list<any>", [4, None, 23.2, "adasd", Char(97)]),
]

#: (C++ type, payload bytes): each must be refused (a wire_error), never decoded.
CPP_REFUSED: list[tuple[str, bytes]] = [
    ("int", b"i2147483648;"),
    ("int", b"i-2147483649;"),
    ("unsigned", b"i-1;"),
    ("long long", b"i99999999999999999999999999999999999999999;"),
    ("int", b"i;"),
    ("int", b"i12"),
    ("int", b"s1:1"),
    ("int", b"f3ff0000000000000"),
    ("int", b"b1"),
    ("bool", b"i1;"),
    ("bool", b"b2"),
    ("char", b"c256;"),
    ("char", b"s1:a"),
    ("double", b"i1;"),
    ("double", b"f3ff00000"),
    ("double", b"fzzzzzzzzzzzzzzzz"),
    ("string", b"s5:abc"),
    ("string", b"s-1:"),
    ("string", b"n"),
    ("vector<int>", b"l3:i1;i2;"),
    ("vector<int>", b"l1:s1:a"),
    ("vector<int>", b"t1:i1;"),
    ("pair<int,int>", b"t3:i1;i2;i3;"),
    ("tuple<int,int>", b"t1:i1;"),
    ("map<int,int>", b"m2:i1;i2;i1;i3;"),
    ("array<int,2>", b"l3:i1;i2;i3;"),
    ("int", b"i1;i2;"),  # bytes after the value
    ("vector<int>", b"l1:l1:i1;"),
    ("vector<vector<int>>", b"l999999999999999999999:"),
    ("int", b"x"),
    ("int", b""),
    ("any", b"l1:i1;"),
    ("any", b"i99999999999999999999;"),
]

CPP_ECHO = r"""
#include "arbiter_bridge.hpp"
// The containers come after the bridge, as a prompt's includes do.
#include <any>
#include <array>
#include <list>
#include <map>
#include <optional>
#include <set>
#include <tuple>
#include <unordered_map>
#include <vector>
using namespace std;
// Each frame on stdin: a case number (i<k>;) then a value; each reply on stdout: the value
// decoded into the case's type and encoded again, or E and the error.
template <class T> string echo(arbiter::Reader& in) {
    T v = arbiter::get<T>(in);
    if (!in.at_end()) throw arbiter::wire_error("bytes after the value");
    string out;
    arbiter::put(out, v);
    return out;
}
int main() {
    string payload;
    while (arbiter::read_frame(0, payload)) {
        arbiter::Reader in(payload.data(), payload.size());
        string reply;
        try {
            int k = arbiter::get<int>(in);
            switch (k) {
%CASES%
            default: reply = "E no such case";
            }
        } catch (const arbiter::wire_error& e) {
            reply = string("E") + e.what();
        }
        arbiter::write_frame(1, reply);
    }
}
"""


def cpp_echo(rig: Rig, out: str, types: list[str], payloads: list[bytes]) -> list[bytes]:
    """Each payload decoded into its C++ type and encoded again (``E`` and the error)."""
    order, stdin = _numbered(types, payloads)
    cases = "\n".join(
        f"            case {k}: reply = echo<{t}>(in); break;" for k, t in enumerate(order)
    )
    build = Build(
        files={
            cpp.RUNTIME: (RUNTIMES / cpp.RUNTIME).read_text(),
            cpp.RUNTIME_SOURCE: (RUNTIMES / cpp.RUNTIME_SOURCE).read_text(),
            "echo.cpp": CPP_ECHO.replace("%CASES%", cases),
        },
        compile=(("g++", "-std=gnu++17", "-O0", "-o", "echo", "echo.cpp", cpp.RUNTIME_SOURCE),),
        artifacts=("echo",),
        run=("./echo",),
    )
    rig.compile(build, out)
    done = subprocess.run(["./echo"], cwd=out, input=stdin, capture_output=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return frames(done.stdout)


_CPP_ROW = _served("cpp", 115)

CPP_PROMPT = """/*
Return the sum of the vector's items.
*/
#include<stdio.h>
#include<vector>
using namespace std;
int helper_twice(int x){
    // a helper the prompt defines: kept in the harness
    return 2*x;
}
long long total(vector<int> xs){
    /* "the body starts here" { */
"""
CPP_TESTS = """#undef NDEBUG
#include<assert.h>
int main(){
    assert (total({1, 2, 3}) == 6);
    assert (total({}) == 0);
    assert (helper_twice(4) == 8);
}
"""
CPP_BODY = (
    "    long long sum_marker_7f3a = 0;\n    for (int x : xs) sum_marker_7f3a += x;\n"
    "    return sum_marker_7f3a;\n}\n"
)

CPP = Lang(
    name="cpp",
    language=cpp.LANGUAGE,
    data="cpp",
    missing="g++ is not installed: the C++ builds cannot be compiled here",
    slow=True,
    task=Task(
        prompt=CPP_PROMPT,
        tests=CPP_TESTS,
        body=CPP_BODY,
        marker="sum_marker_7f3a",
        wrong=("return sum_marker_7f3a;", "return sum_marker_7f3a + 1;"),
        whole="#include <vector>\nlong long total(std::vector<int> v) { return 42; }\n",
        declared=(
            "total",
            (("xs", "vector<int>"),),
            "long long",
            "long long total(vector<int> xs)",
        ),
    ),
    exception=Session(
        "throws",
        prompt=(
            "#include<stdexcept>\n#include<string>\nusing namespace std;\nint parse(string s){\n"
        ),
        body='    if (s.empty()) throw invalid_argument("empty");\n    return stoi(s);\n}\n',
        tests=(
            '#undef NDEBUG\n#include<assert.h>\nint main(){\n    assert (parse("12") == 12);\n'
            '    bool threw = false;\n    try { parse(""); } catch (const std::exception& e) {\n'
            '        threw = std::string(e.what()).find("empty") != std::string::npos;\n    }\n'
            "    assert (threw);\n}\n"
        ),
        passes=True,  # the harness throws it again: the tests catch it
    ),
    dies=(
        Session("abort", body="    (void)xs; abort();\n}\n", says="ended without answering"),
        Session(
            "close",
            body=(
                "#include <unistd.h>\n#include <vector>\nusing namespace std;\n"
                "long long total(vector<int> xs) { close(3); long long s = 0;\n"
                "    for (int x : xs) s += x;\n    return s;\n}\n"
            ),
        ),
    ),
    codec=Codec(CPP_ROUND_TRIPS, (), CPP_REFUSED, cpp_echo),
    stdin_program=StdinProgram(
        "#include <iostream>\nint main(){ long long a, b; std::cin >> a >> b; "
        "std::cout << a + b << std::endl; }\n",
        b"2 40\n",
        b"42\n",
    ),
    timeout_s=20,
    rows=(0, 12, 22, 23, 95, 111, 137, 162),
    # CPP/22's and CPP/137's buggy solutions never return: they fail by the timeout.
    row_timeout_s=8,
    row_requires=(
        Requirement(
            "boost/",
            "/usr/include/boost/any.hpp",
            "boost's headers are absent (libboost-dev): the task includes boost/any.hpp",
        ),
    ),
    fuzz=_readers(
        "int f(int x){",
        _CPP_ROW,
        mask=("1'0" * 20_000, "b'" * 20_000),
        defines=(("a f(" * 20_000, "f"), ("int f() ->" + " " * 5_000, "f")),
        declared=("/*" + " " * 3_000 + "*/\nint f(int x){",),
        candidate=((_CPP_ROW, "return '" + SURROGATE + "';}", True),),
        harness=(("/*" + "\n" * 3_000 + "*/\nint f(int x) noexcept(" + " " * 3_000 + "{", "", ""),),
        program=("int main() { return '" + SURROGATE + "'; }",),
    ),
    long_reads=(
        ("mask digit separators", lambda: cpp.mask("1'0" * 100_000)),
        ("defines at every call", lambda: cpp.LANGUAGE.defines("a f(" * 50_000, "f")),
        ("defines after ->", lambda: cpp.LANGUAGE.defines("int f() ->" + " " * 200_000, "f")),
        (
            "declaration after a comment",
            lambda: cpp.LANGUAGE.declared(
                ProgramParts(prompt="/*" + " " * 200_000 + "*/\nint f(int x){", code="", tests="")
            ),
        ),
    ),
)


# --- Java -------------------------------------------------------------------------------------

#: (Java type, value): wire.encode(value) must convert to the type and re-encode to the
#: same bytes.
JAVA_ROUND_TRIPS: list[tuple[str, Any]] = [
    ("boolean", True),
    ("Boolean", False),
    ("int", 0),
    ("int", -2147483648),
    ("Integer", 2147483647),
    ("long", -9223372036854775808),
    ("Long", 9223372036854775807),
    ("short", -7),
    ("byte", 127),
    ("BigInteger", -(10**40)),
    ("char", Char(97)),
    ("char", Char(0)),
    ("Character", Char(0x20AC)),
    ("double", 0.1),
    ("double", -0.0),
    ("Double", math.inf),
    ("double", 5e-324),
    ("float", 1.5),
    ("float", struct.unpack("f", struct.pack("f", 0.1))[0]),
    ("String", ""),
    ("String", "héllo, wörld ☃"),
    ("String", "a\x00b:c;"),
    ("String", "\U0001f600 astral"),
    ("String", "lone \ud800 surrogate"),
    ("String", None),
    ("List<Integer>", [1, -2, 3]),
    ("List<Integer>", []),
    ("ArrayList<Boolean>", [True, False]),
    ("List<Double>", [1.0, 2.5, -3.25]),
    ("List<List<String>>", [["a"], [], ["b", "cd"]]),
    ("List<String>", ["x", "l2:s1:a"]),
    ("int[]", [8, 9]),
    ("String[][]", [["a", "b"], []]),
    ("Map<String, Integer>", {"b": 1, "a": -2}),
    ("Map<Character, Integer>", {Char(97): 3}),
    ("TreeMap<Integer, String>", {1: "x", 5: "y"}),
    ("HashMap<Integer, List<Integer>>", {5: [1, 2]}),
    ("Map<Object, Object>", {"k": 1, 2: "v"}),
    ("Optional<Integer>", None),
    ("Optional<Integer>", 5),
    ("List<Optional<Integer>>", [None, 3]),
    ("Set<Integer>", [3, 1, 2]),
    ("Map.Entry<String, Long>", Tuple(("k", 10**15))),
    ("Object", 5),
    ("Object", 2**40),
    ("Object", 10**30),
    ("Object", 1.5),
    ("Object", "text"),
    ("Object", Char(98)),
    ("Object", [1, "a", None, [2.5]]),
    ("Object", {"k": [1]}),
    ("Object", True),
    ("Object", None),
    ("List<Object>", [4, {}, [], 23.2, 9, "adasd"]),
    ("Number", 7),
]

#: (Java type, payload bytes, the re-encoding): accepted, but not byte for byte.
JAVA_CONVERTED: list[tuple[str, bytes, bytes]] = [
    ("double", b"i1;", wire.encode(1.0)),
    ("Object", b"t2:i1;s1:a", wire.encode([1, "a"])),
    ("int[]", b"t2:i1;i2;", wire.encode([1, 2])),
    ("Integer", b"u", b"n"),
    ("double", b"f3FF0000000000000", wire.encode(1.0)),
]

#: (Java type, payload bytes): each must be refused, never decoded.
JAVA_REFUSED: list[tuple[str, bytes]] = [
    ("int", b"i2147483648;"),
    ("int", b"i-2147483649;"),
    ("long", b"i9223372036854775808;"),
    ("byte", b"i128;"),
    ("int", b"i;"),
    ("int", b"i--1;"),
    ("int", b"i12"),
    ("int", b"s1:1"),
    ("int", b"f3ff0000000000000"),
    ("int", b"b1"),
    ("int", b"n"),
    ("boolean", b"i1;"),
    ("boolean", b"b2"),
    ("char", b"c65536;"),
    ("char", b"s1:a"),
    ("double", b"f3ff00000"),
    ("double", b"fzzzzzzzzzzzzzzzz"),
    ("double", b"i9007199254740993;"),
    ("String", b"s5:abc"),
    ("String", b"s-1:"),
    ("String", b"s2:\xc3\x28"),
    ("String", b"s2:\xc0\x80"),
    ("String", b"c97;"),
    ("List<Integer>", b"l3:i1;i2;"),
    ("List<Integer>", b"l1:s1:a"),
    ("List<Integer>", b"m0:"),
    ("Map<String, Integer>", b"l0:"),
    ("Map<String, Integer>", b"m1:s1:ai1;i2;"),
    ("Map.Entry<String, Long>", b"t3:s1:ai1;i2;"),
    ("int[]", b"m0:"),
    ("Optional<Integer>", b"s1:a"),
    ("Number", b"s1:1"),
    ("int", b"i1;i2;"),  # bytes after the value
    ("List<Integer>", b"l999999999999999999999:"),
    ("Object", b"q"),
    ("int", b""),
]

JAVA_ECHO = r"""
import java.io.*;
import java.lang.reflect.*;
import java.math.BigInteger;
import java.nio.charset.StandardCharsets;
import java.util.*;

// Each frame on stdin: a case number (i<k>;) then a value; each reply on stdout: the value
// converted to the case's type (the parameter type of method t<k>) and encoded again, or E
// and the error.
public class Echo {
%CASES%
    public static void main(String[] args) throws Exception {
        InputStream in = new BufferedInputStream(System.in);
        OutputStream out = new BufferedOutputStream(System.out);
        Map<String, Method> methods = new HashMap<>();
        for (Method m : Echo.class.getDeclaredMethods()) methods.put(m.getName(), m);
        while (true) {
            byte[] frame = ArbiterBridge.readFrame(in);
            if (frame == null) break;
            byte[] reply;
            try {
                int semi = 0;
                while (frame[semi] != ';') semi++;
                String k = new String(frame, 1, semi - 1, StandardCharsets.US_ASCII);
                byte[] rest = Arrays.copyOfRange(frame, semi + 1, frame.length);
                Type type = methods.get("t" + k).getGenericParameterTypes()[0];
                Object value = ArbiterBridge.convert(ArbiterBridge.decode(rest), type);
                reply = ArbiterBridge.encode(value);
            } catch (ArbiterBridge.WireError e) {
                reply = ("E" + e.getMessage()).getBytes(StandardCharsets.UTF_8);
            }
            ArbiterBridge.writeFrame(out, reply);
        }
        out.flush();
    }
}
"""


def java_echo(rig: Rig, out: str, types: list[str], payloads: list[bytes]) -> list[bytes]:
    """Each payload converted to its Java type and encoded again (``E`` and the error)."""
    order, stdin = _numbered(types, payloads)
    cases = "\n".join(f"    static void t{k}({t} x) {{}}" for k, t in enumerate(order))
    runtime = RUNTIMES / java.RUNTIME
    build = Build(
        files={
            java.RUNTIME: runtime.read_text(encoding="utf-8"),
            "Echo.java": JAVA_ECHO.replace("%CASES%", cases),
        },
        compile=((*java.JAVAC, java.RUNTIME, "Echo.java"),),
        artifacts=(java.CLASSES,),
        run=("java", "-cp", java.CLASSES, "Echo"),
    )
    rig.compile(build, out)
    run = ("java", *java.RUN_FLAGS, "-cp", java.CLASSES, "Echo")
    argv = local.resolve(run, rig.toolchain, out, out, MEMORY_MB)
    done = subprocess.run(argv, cwd=out, input=stdin, capture_output=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return frames(done.stdout)


_JAVA_ROW = _served("java", 0)

JAVA_PROMPT = """import java.util.*;
import java.lang.*;

class Solution {
    /** A helper the prompt defines: kept in the harness. */
    public int helperTwice(int x) {
        return 2 * x; // "}" {
    }

    /**
    Return the sum of the list's items.
    >>> total(Arrays.asList(1, 2, 3))
    6
     */
    public long total(List<Integer> xs) {
"""
JAVA_TESTS = """public class Main {
    public static void main(String[] args) {
        Solution s = new Solution();
        List<Boolean> correct = Arrays.asList(
                s.total(Arrays.asList(1, 2, 3)) == 6,
                s.total(new ArrayList<>()) == 0,
                s.helperTwice(4) == 8
        );
        if (correct.contains(false)) {
            throw new AssertionError();
        }
    }
}
"""
JAVA_BODY = """        long sumMarker7f3a = 0;
        for (int x : xs) sumMarker7f3a += x;
        return sumMarker7f3a;
    }
}
"""

JAVA = Lang(
    name="java",
    language=java.LANGUAGE,
    data="java",
    missing="a JDK (javac and java) is not installed: the Java builds cannot run here",
    slow=True,  # each javac takes a second or more
    task=Task(
        prompt=JAVA_PROMPT,
        tests=JAVA_TESTS,
        body=JAVA_BODY,
        marker="sumMarker7f3a",
        wrong=("return sumMarker7f3a;", "return sumMarker7f3a + 1;"),
        whole=(
            "import java.util.*;\nclass Solution {\n"
            "    long total(List<Integer> v) { return 42; }\n}\n"
        ),
        declared=(
            "total",
            (("xs", "List<Integer>"),),
            "long",
            "public long total(List<Integer> xs)",
        ),
    ),
    exception=Session(
        "throws",
        prompt="import java.util.*;\n\nclass Solution {\n    public int parse(String s) {\n",
        body="        return Integer.parseInt(s);\n    }\n}\n",
        tests=(
            "public class Main {\n    public static void main(String[] args) {\n"
            "        Solution s = new Solution();\n        try {\n"
            '            if (s.parse("12") != 12) throw new AssertionError();\n'
            '            s.parse("not a number");\n        } catch (Throwable e) {\n'
            "            return;\n        }\n    }\n}\n"
        ),
        says="NumberFormatException",  # fails even where the tests would catch it
    ),
    dies=(
        Session(
            "dies",
            body="        Runtime.getRuntime().halt(0);\n        return 0;\n    }\n}\n",
            says="ended before it replied",
        ),
        Session(
            "type",
            body=(
                "import java.util.*;\nclass Solution {\n"
                '    public String total(List<Integer> xs) { return "6"; }\n'
                "    public int helperTwice(int x) { return 2 * x; }\n}\n"
            ),
            says="is not a long",
        ),
    ),
    hog=(
        "        List<long[]> hog = new ArrayList<>();\n"
        "        while (true) hog.add(new long[1 << 20]);\n    }\n}\n"
    ),
    codec=Codec(JAVA_ROUND_TRIPS, JAVA_CONVERTED, JAVA_REFUSED, java_echo, slow=True),
    stdin_program=StdinProgram(
        "import java.util.*;\npublic class Main {\n    public static void main(String[] a) {\n"
        "        Scanner in = new Scanner(System.in);\n"
        "        System.out.println(in.nextLong() + in.nextLong());\n    }\n}\n",
        b"2 40\n",
        b"42\n",
    ),
    heap=HeapProbe(
        "public class Main {\n    public static void main(String[] a) {\n"
        "        System.out.println(Runtime.getRuntime().maxMemory() >> 20);\n    }\n}\n",
        (200, MEMORY_MB),
    ),
    timeout_s=90,
    naive_timeout_s=90,
    rows=(0, 22, 38, 95, 111, 137, 162),
    fuzz=_readers(
        "class A { int f() {",
        _JAVA_ROW,
        mask=('"""' * 5_000,),
        defines=(("int f() throws" + " " * 5_000, "f"),),
        declared=("class A {\n" + "  " * 3_000 + "int f(int x) {",),
        candidate=((_JAVA_ROW, "\n" * 20_000, True),),
        harness=(("class A { int f() {", "public class Main {}\n" * 2_000, ""),),
        program=('class A { String s = "' + SURROGATE + '"; }', "static void main(" * 5_000),
    ),
    long_reads=(
        ("program of many classes", lambda: java.LANGUAGE.program("public class A{}" * 20_000)),
        ("program of many mains", lambda: java.LANGUAGE.program("static void main(" * 20_000)),
        (
            "candidate of empty lines",
            lambda: java.LANGUAGE.candidate(
                ProgramParts(
                    prompt="class Solution {\n    int f(int x) {\n",
                    code="class Solution {\n" + "\n" * 200_000,
                    tests="",
                )
            ),
        ),
    ),
)


# --- Go ---------------------------------------------------------------------------------------


def _go(lang: Lang, found: Toolchain, factory: pytest.TempPathFactory) -> Rig:
    if not Path("/usr/share/gocode/src/github.com/stretchr/testify/assert").is_dir():
        unavailable("testify is not under /usr/share/gocode (golang-github-stretchr-testify-dev)")
    # The language's prepared cache (testify compiled once; public, task-independent) and
    # the harnesses' build cache, both kept between runs: testify compiles once per host.
    cache = Path(tempfile.gettempdir(), f"arbiter-test-go-cache-{os.getuid()}")
    cache.mkdir(exist_ok=True)
    prepared = lang.language.prepare(found, str(cache))
    assert str(cache) in prepared.roots
    assert (cache / "go-build").is_dir()
    private = Path(tempfile.gettempdir(), f"arbiter-test-go-private-{os.getuid()}")
    private.mkdir(mode=0o700, exist_ok=True)
    return Rig(lang, found, cache=str(cache), private=str(private))


GO_SETUP = 'package main\n\nimport (\n    "testing"\n    "github.com/stretchr/testify/assert"\n)\n'

_GO_ROW = _served("go", 0)

GO_PROMPT = """import (
    "math"
    "strings"
)

// Twice is the prompt's own helper: the harness keeps it.
func Twice(x int) int {
    return 2 * int(math.Abs(float64(x)))
}

// Total returns the sum of xs, or nil when xs is empty.
// >>> Total([]int{1, 2})
// 3
func Total(xs []int) interface{} {
    /* "the body starts { here" */
"""
GO_TESTS = """func TestTotal(t *testing.T) {
    assert := assert.New(t)
    assert.Equal(6, Total([]int{1, 2, 3}))
    assert.Equal(nil, Total([]int{}))
    assert.Equal(8, Twice(-4))
    assert.Equal("AB", strings.ToUpper("ab"))
}
"""
GO_BODY = """    if len(xs) == 0 {
        return nil
    }
    sumMarker7f3a := 0
    for _, x := range xs {
        sumMarker7f3a += x
    }
    return sumMarker7f3a
}
"""

GO = Lang(
    name="go",
    language=go.LANGUAGE,
    data="go",
    missing="go is not installed: the Go builds cannot be compiled here",
    prepare=_go,
    slow=True,
    task=Task(
        prompt=GO_PROMPT,
        tests=GO_TESTS,
        body=GO_BODY,
        setup=GO_SETUP,
        marker="sumMarker7f3a",
        wrong=("return sumMarker7f3a", "return sumMarker7f3a + 1"),
        whole="package main\n\nfunc Total(xs []int) interface{} {\n    return 42\n}\n",
        declared=("Total", (("xs", "[]int"),), "interface{}", "func Total(xs []int) interface{}"),
    ),
    rows=(12, 22, 111, 125),
    rows_naive=True,
    # An attack the grader's relay between the processes defends (a bare socket pair
    # lacks it) is judged through the grader.
    attack_keys=frozenset({"relay"}),
    fuzz=_readers(
        "func f() {\n",
        _GO_ROW,
        defines=(("func f(x " + "*" * 5_000 + "int) {}\n", "f"), ("func f() " * 5_000, "f")),
        declared=("func f(x " + "[]" * 5_000 + "int) {\n",),
        candidate=((_GO_ROW, 'import "\\x"\nfunc f() {}\n', False),),
        candidate_of_any_task=(("func f() {\n", 'package main\nimport "\\N{x}"\n', "", False),),
        harness=(('import "\\x"\nfunc f() {\n', "func TestF(t *testing.T) {}\n", ""),),
        program=(
            'package main\nimport "\\x"\nfunc main() {}\n',
            'package main; var s = "' + SURROGATE + '"',
        ),
        tokenize=('"\\', "`" * 3),
        header=('import "\\x"\n', 'import ( "\\400" )\n'),
    ),
    long_reads=(
        ("defines of refused signatures", lambda: go.LANGUAGE.defines("func f() " * 20_000, "f")),
        (
            "program of refused signatures",
            lambda: go.LANGUAGE.program("package main\n" + "func f() " * 20_000),
        ),
        (
            "program of unused imports",
            lambda: go.LANGUAGE.program("package main\n" + 'import "os"\n' * 20_000),
        ),
    ),
)


# --- Rust -------------------------------------------------------------------------------------


def _rust(lang: Lang, found: Toolchain, factory: pytest.TempPathFactory) -> Rig:
    if not Path(rust.CRATE_REGISTRY, "rand-0.8.5").is_dir():
        unavailable(
            "no crate sources in /usr/share/cargo/registry: "
            "apt-get install librust-rand-dev librust-regex-dev librust-md5-dev"
        )
    # The crates prebuilt by prepare, kept between runs (stamped by toolchain).
    cache = str(Path(tempfile.gettempdir(), f"arbiter-test-rust-{os.getuid()}"))
    return Rig(lang, lang.language.prepare(found, cache), cache=cache)


_RUST_ROW = _served("rust", 0)

RUST = Lang(
    name="rust",
    language=rust.LANGUAGE,
    data="rust",
    missing="no rustc and cargo in /usr/bin: apt-get install rustc cargo",
    prepare=_rust,
    slow=True,
    stdin_program=StdinProgram(
        "use std::io::Read;\nuse regex::Regex;\nfn main() {\n    let mut s = String::new();\n"
        "    std::io::stdin().read_to_string(&mut s).unwrap();\n"
        '    let re = Regex::new(r"\\d+").unwrap();\n'
        "    let total: i64 = re.find_iter(&s).map(|m| m.as_str().parse::<i64>().unwrap()).sum();\n"
        '    println!("{}", total);\n}\n',
        b"1 2 x 39",
        b"42\n",
        slow=True,
    ),
    timeout_s=120,
    naive_timeout_s=120,
    rows=(0, 10, 12, 22, 95, 111, 119, 149, 162),
    fuzz=_readers(
        "fn f() {",
        _RUST_ROW,
        mask=('r#"' * 5_000, "/*" * 5_000),
        defines=(("fn f(" * 5_000, "f"),),
        declared=(
            "fn f(x: " + "&" * 3_000 + "i32) {",
            "fn " * 10_000,  # each header read to the end: 18 s (bench.fuzz_readers)
            "fn f() ; " * 5_000 + "fn g() {",
        ),
        harness=(("fn f() -> " + "Vec<" * 2_000 + "i32" + ">" * 2_000 + " {", "", ""),),
        program=('fn main() { let s = "' + SURROGATE + '"; }',),
    ),
    long_reads=(
        ("mask of raw strings", lambda: rust.mask('r#"' * 50_000)),
        ("defines of many fns", lambda: rust.LANGUAGE.defines("fn g(" * 50_000, "f")),
    ),
)


# --- JavaScript -------------------------------------------------------------------------------

JS_RUNTIME = RUNTIMES / javascript.RUNTIME


def node(toolchain: Toolchain, script: str, stdin: bytes = b"") -> bytes:
    """What ``script`` prints, run by node with the runtime's path as its argument."""
    done = subprocess.run(
        [toolchain.paths["node"], "-e", script, str(JS_RUNTIME)],
        input=stdin,
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr.decode()
    return done.stdout


#: Python values whose encoding decodes in JS to a value that re-encodes to the same bytes.
JS_ROUND_TRIPS: list[Any] = [
    None, UNDEFINED, True, False, 0, -42, 2**53 - 1, -(2**53 - 1), 2**53, -(2**63), 10**40,
    0.1, -0.0, math.inf, -math.inf, 5e-324, 2.0**60, 1e300, "", "héllo, wörld ☃",
    "a\x00b:c;", "\U0001f600 astral", "lone \ud800 and \udc00 surrogates", [1, -2, 3], [],
    [[["deep"]], [None, UNDEFINED]], {"b": 1, "a": [2.5]}, {}, {"__proto__": 1, "x": {}},
    {1: "x", "k": 2}, {(1, 2): 3},
]  # fmt: skip

#: (payload, the re-encoding): accepted, but JavaScript has no separate type for it.
JS_CONVERTED: list[tuple[bytes, bytes]] = [
    (wire.encode(Tuple((1, "a"))), wire.encode([1, "a"])),  # a tuple is an array
    (wire.encode(Char(97)), wire.encode("a")),  # a character is a string
    (wire.encode(Char(0x1F600)), wire.encode("\U0001f600")),
    (wire.encode(3.0), wire.encode(3)),  # an integral float is a number like any other
    (b"f3FF0000000000000", wire.encode(1)),
]

JS_REFUSED: list[bytes] = [
    b"i;", b"i--1;", b"i12", b"b2", b"f3ff00000", b"fzzzzzzzzzzzzzzzz", b"s5:abc", b"s-1:",
    b"s2:\xc3\x28", b"s2:\xc0\x80", b"s4:\xf4\x90\x80\x80", b"c1114112;", b"l3:i1;i2;",
    b"m1:s1:a", b"i1;i2;", b"l999999999999999999999:", b"q", b"",
]  # fmt: skip

JS_ECHO = r"""
const bridge = require(process.argv[1]);
const data = require("fs").readFileSync(0);
const out = [];
let pos = 0;
while (pos < data.length) {
  const colon = data.indexOf(0x3a, pos);
  const size = Number(data.subarray(pos, colon).toString("latin1"));
  const payload = data.subarray(colon + 1, colon + 1 + size);
  pos = colon + 1 + size;
  let reply;
  try { reply = bridge.encode(bridge.decode(payload)); }
  catch (e) { reply = Buffer.from("E" + e.message); }
  out.push(Buffer.from(reply.length + ":"), reply);
}
process.stdout.write(Buffer.concat(out));
"""


def js_echo(rig: Rig, out: str, types: list[str], payloads: list[bytes]) -> list[bytes]:
    """Each payload decoded and encoded again (``E`` and the error): JavaScript has no types."""
    return frames(node(rig.toolchain, JS_ECHO, b"".join(wire.frame(p) for p in payloads)))


_JS_ROW = _served("js", 0)

JS_PROMPT = """/* A helper the prompt defines: kept in the harness. */
const helperTwice = (x) => {
  return 2 * x // "}" {
}

/* Return the sum of the array's items.
  >>> total([1, 2, 3])
  6
  */
const total = (xs) => {
"""
JS_TESTS = """const testTotal = () => {
  console.assert(total([1, 2, 3]) === 6)
  console.assert(total([]) === 0)
  console.assert(helperTwice(4) === 8)
}

testTotal()
"""
JS_BODY = """  let sumMarker7f3a = 0
  for (const x of xs) sumMarker7f3a += x
  return sumMarker7f3a
}
"""

JAVASCRIPT = Lang(
    name="javascript",
    language=javascript.LANGUAGE,
    data="js",
    missing="node is not installed: the JavaScript builds cannot run here",
    prepare=lambda lang, found, factory: Rig(lang, found),  # nothing to prepare
    slow=False,  # nothing compiles
    task=Task(
        prompt=JS_PROMPT,
        tests=JS_TESTS,
        body=JS_BODY,
        marker="sumMarker7f3a",
        wrong=("return sumMarker7f3a", "return sumMarker7f3a + 1"),
        wrong_says="Assertion failed",
        whole="const total = (xs) => 42\n",
        declared=("total", (("xs", ""),), "", "const total = (xs) =>"),
    ),
    exception=Session(
        "throws",
        prompt="const parse = (s) => {\n",
        body="  if (s === '') throw new RangeError('empty')\n  return Number(s)\n}\n",
        tests="console.assert(parse('12') === 12)\ntry { parse('') } catch (e) { }\n",
        says="RangeError: empty",  # fails even where the tests would catch it
    ),
    dies=(
        Session("dies", body="  process.exit(0)\n}\n", says="ended before it replied"),
        Session(
            "missing",
            body="const totalX = (xs) => 6\n",
            continued=False,
            says="total is not defined as a function",
        ),
        Session("syntax", body="  return (\n}\n", says="candidate's compile"),
    ),
    hog="  const hog = []\n  for (;;) hog.push(new Array(1e5).fill(Math.random()))\n}\n",
    codec=Codec(
        [("", value) for value in JS_ROUND_TRIPS],
        [("", payload, back) for payload, back in JS_CONVERTED],
        [("", payload) for payload in JS_REFUSED],
        js_echo,
    ),
    stdin_program=StdinProgram(
        "const [a, b] = require('fs').readFileSync(0, 'utf8').trim().split(/\\s+/).map(BigInt)\n"
        "console.log(String(a + b))\n",
        b"2 40\n",
        b"42\n",
    ),
    heap=HeapProbe(
        "const a = []; for (let i = 0; i < 2e5; i++) a.push({ i })\n"
        "console.log(require('v8').getHeapStatistics().heap_size_limit >> 20)\n",
        (MEMORY_MB, MEMORY_MB + 64),
    ),
    rows=(0, 22, 32, 38, 95, 111, 137, 114),
    fuzz=_readers(
        "const f = (a) => {",
        _JS_ROW,
        mask=("`${" * 5_000,),
        defines=(("\n" * 20_000, "f"), ("//\n" * 10_000, "f")),
        declared=("function f(a) {" + " " * 5_000,),
        harness=(("\n" * 5_000 + "function f(a) {", "", ""),),
        program=('const s = "' + SURROGATE + '";',),
    ),
    long_reads=(
        ("defines over empty lines", lambda: javascript.LANGUAGE.defines("\n" * 200_000, "f")),
        ("defines over comment lines", lambda: javascript.LANGUAGE.defines("//\n" * 100_000, "f")),
    ),
)


#: Every bridged language, in the order their tests run.
LANGUAGES: tuple[Lang, ...] = (CPP, JAVA, GO, RUST, JAVASCRIPT)
