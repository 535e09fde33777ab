"""The Go language: reading prompts, the builds it makes, its runtime's codec, its attacks.

Nothing here needs the sandbox: builds are compiled and run as local
subprocesses (:mod:`arbiter.graders.languages.local`), the candidate's and the
harness's joined by a socket pair on descriptor 3. Tests that compile need Go
(``go`` on PATH, testify under /usr/share/gocode for the harness).
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import socket
import struct
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given

from arbiter.graders.languages import go as go_module
from arbiter.graders.languages import local, wire
from arbiter.graders.languages.base import Build, ProgramParts, Toolchain, UnsupportedTask
from arbiter.graders.languages.go import LANGUAGE, tokenize
from arbiter.graders.languages.wire import Char, Tuple
from tests.graders.languages import local_runs
from tests.graders.reader_fuzz import TARGETS, fuzz_settings, humanevalpack, require_data
from tests.strictness import unavailable

HERE = Path(__file__).resolve().parent
#: The language's module: the runtime beside it, the repository three levels up.
MODULE = Path(go_module.__file__).resolve()
RUNTIME = MODULE.with_name("runtime") / "arbiter_bridge.go"
HUMANEVALPACK = MODULE.parents[3] / "shared" / "data" / "humanevalpack_go.jsonl"


def _attacks() -> list[dict[str, str]]:
    spec = importlib.util.spec_from_file_location("attacks_go", HERE / "attacks_go.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    found: list[dict[str, str]] = module.ATTACKS
    return found


ATTACKS = _attacks()

SETUP = 'package main\n\nimport (\n    "testing"\n    "github.com/stretchr/testify/assert"\n)\n'

PROMPT = """import (
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

TESTS = """func TestTotal(t *testing.T) {
    assert := assert.New(t)
    assert.Equal(6, Total([]int{1, 2, 3}))
    assert.Equal(nil, Total([]int{}))
    assert.Equal(8, Twice(-4))
    assert.Equal("AB", strings.ToUpper("ab"))
}
"""

BODY = """    if len(xs) == 0 {
        return nil
    }
    sumMarker7f3a := 0
    for _, x := range xs {
        sumMarker7f3a += x
    }
    return sumMarker7f3a
}
"""


def _parts(
    prompt: str = PROMPT, body: str = BODY, tests: str = TESTS, setup: str = SETUP
) -> ProgramParts:
    name = LANGUAGE.declared(ProgramParts(prompt=prompt, code="", tests=tests))[0].name
    continued = not LANGUAGE.defines(body, name)
    code = prompt + body if continued else body
    return ProgramParts(
        prompt=prompt, code=code, tests=tests, setup_code=setup, continued=continued
    )


# --- reading Go ----------------------------------------------------------------------


def test_tokens_leave_out_comments_and_keep_literals_whole():
    src = "x := \"a // b\" + `c /* d` // e.f\n/* g.h */ y.z('.', 1.5e-3, 0x1p-2)"
    texts = [t.text for t in tokenize(src)]
    assert texts == [
        "x", ":=", '"a // b"', "+", "`c /* d`", "y", ".", "z", "(", "'.'", ",", "1.5e-3",
        ",", "0x1p-2", ")",
    ]  # fmt: skip
    assert all(src[t.start : t.end] == t.text for t in tokenize(src))


def test_declared_reads_the_open_declaration():
    [d] = LANGUAGE.declared(ProgramParts(prompt=PROMPT, code="", tests=TESTS))
    assert d.name == "Total"
    assert d.params == (("xs", "[]int"),)
    assert d.returns == "interface{}"
    assert d.header == "func Total(xs []int) interface{}"


@pytest.mark.parametrize(
    ("header", "name", "params", "returns"),
    [
        (
            "func AnyInt(x, y, z interface{}) bool {",
            "AnyInt",
            (("x", "interface{}"), ("y", "interface{}"), ("z", "interface{}")),
            "bool",
        ),
        (
            "func GetRow(lst [][]int, x int) [][2]int {",
            "GetRow",
            (("lst", "[][]int"), ("x", "int")),
            "[][2]int",
        ),
        (
            "func Histogram(test string) map[rune]int{",
            "Histogram",
            (("test", "string"),),
            "map[rune]int",
        ),
        (
            "func ReverseDelete(s,c string) [2]interface {}{",
            "ReverseDelete",
            (("s", "string"), ("c", "string")),
            "[2]interface{}",
        ),
        ("func ByLength(arr []int)[]string {", "ByLength", (("arr", "[]int"),), "[]string"),
        (
            "func Sum(base int, xs ...float64) (total float64, err error) {",
            "Sum",
            (("base", "int"), ("xs", "...float64")),
            "(float64, error)",
        ),
        ("func Noop() {", "Noop", (), ""),
        ("func Unnamed(int, string) *int {", "Unnamed", (("", "int"), ("", "string")), "*int"),
        (
            "func Dict(d map[interface{}]interface{}) (bool) {",
            "Dict",
            (("d", "map[interface{}]interface{}"),),
            "bool",
        ),
    ],
)
def test_declared_shapes(header, name, params, returns):
    prompt = 'import (\n    "fmt"\n)\n\n// doc {\n' + header + "\n"
    [d] = LANGUAGE.declared(ProgramParts(prompt=prompt, code="", tests=""))
    assert (d.name, d.params, d.returns) == (name, params, returns)


def test_declared_takes_the_last_open_declaration_after_helpers():
    prompt = (
        'func EncodeShift(s string) string {\n    return s + "}"\n}\n\n'
        "// takes a string { encoded } by EncodeShift\nfunc DecodeShift(s string) string {\n"
    )
    [d] = LANGUAGE.declared(ProgramParts(prompt=prompt, code="", tests=""))
    assert d.name == "DecodeShift"
    parts = ProgramParts(prompt=prompt, code="", tests="", entry_point="EncodeShift")
    assert LANGUAGE.declared(parts)[0].name == "EncodeShift"


def test_a_type_the_prompt_declares_may_cross():
    prompt = (
        "type Grid [][]int\n\ntype (\n    Pos [2]int\n    Name string\n)\n\n"
        "func Walk(g Grid, p Pos) Name {\n"
    )
    [d] = LANGUAGE.declared(ProgramParts(prompt=prompt, code="", tests=""))
    assert d.params == (("g", "Grid"), ("p", "Pos"))
    assert d.returns == "Name"


@pytest.mark.parametrize(
    ("prompt", "why"),
    [
        ("func Apply(f func(int) int, x int) int {\n", "func type cannot cross"),
        ("func Drain(c chan int) int {\n", "chan type cannot cross"),
        ("func Max[T int | float64](a, b T) T {\n", "generic function"),
        ('import "math/big"\nfunc Fact(n int) *big.Int {\n', "another package"),
        ("func Shape(s Stringer) string {\n", "not declared by the prompt"),
        ("func Norm(z complex128) float64 {\n", "complex128"),
        ("func Stringy(s fmt.Stringer) string {\n", "another package"),
        ("func Methods(s interface{ String() string }) string {\n", "only the empty interface"),
        ("func Done(x int) int { return x }\n", "no open func"),
        ("type T struct{}\nfunc (t T) Method(x int) int {\n", "no open func"),
        ("func Arr(a [N]int) int {\n", "length must be a decimal"),
    ],
)
def test_declared_refuses_what_cannot_cross_the_bridge(prompt, why):
    with pytest.raises(UnsupportedTask, match=why):
        LANGUAGE.declared(ProgramParts(prompt=prompt, code="", tests=""))


@pytest.mark.parametrize(
    ("code", "expected"),
    [
        ("func Total(xs []int) interface{} { return nil }", True),
        ('package main\nimport "fmt"\nfunc Total(xs []int) interface{} {\n}\n', True),
        ("func Total(xs []int) interface{} {\n    return 1\n", False),  # never closes
        ("// func Total(xs []int) interface{} { }\n", False),
        ('var s = "func Total(xs []int) interface{} { }"', False),
        ("func (r T) Total(xs []int) interface{} { return nil }", False),
        ("func Totally(xs []int) interface{} { return nil }", False),
        ("    return 0\n}\n\nfunc helper() {}\n", False),
    ],
)
def test_defines(code, expected):
    assert LANGUAGE.defines(code, "Total") is expected


# --- the builds ------------------------------------------------------------------------


def test_harness_holds_setup_prompt_stub_and_tests_and_no_candidate_code():
    parts = _parts()
    build = LANGUAGE.harness(parts)
    text = "\n".join(build.files.values())
    assert "sumMarker7f3a" not in text
    assert "sumMarker7f3a" in "\n".join(LANGUAGE.candidate(parts).files.values())
    main = build.files["main_test.go"]
    assert main.startswith("package main\n")
    assert "return 2 * int(math.Abs(float64(x)))" in main  # the prompt's helper
    assert "func Total(arbiterArg0 []int) interface{} {" in main
    assert 'arbiterbridge.Call("Total", []interface{}{&arbiterArg0}' in main
    assert "the body starts" not in main  # the open body's comment is dropped
    assert main.index("func Total(") < main.index("func TestTotal(")
    assert '"math"' in main and '"strings"' in main and '"testing"' in main
    assert "ARBITER-GO-TESTS: TestTotal" in build.files["zz_arbiter_tally_test.go"]
    assert build.run == ("./harness.test", "-test.v")
    assert build.artifacts == ("harness.test",)
    assert "{private}" in build.env["GOCACHE"]  # the compiled tests stay trusted-only


def test_harness_of_a_whole_program_answer_is_the_same():
    whole = "package main\n\nfunc Total(xs []int) interface{} {\n    return 42\n}\n"
    parts = _parts(body=whole)
    assert not parts.continued and parts.code == whole
    assert LANGUAGE.harness(parts) == LANGUAGE.harness(_parts())


def test_harness_merges_imports_and_blanks_what_nothing_uses():
    prompt = 'import (\n    "math"\n    "sort"\n)\n\nfunc F(x []int) []int {\n'
    setup = SETUP.replace('"testing"', '"testing"\n    "math"\n    "time"')
    tests = "func TestF(t *testing.T) {\n    assert.Equal(t, 1.0, math.Sqrt(1))\n    F(nil)\n}\n"
    main = LANGUAGE.harness(ProgramParts(prompt=prompt, code="", tests=tests, setup_code=setup))
    source = main.files["main_test.go"]
    head = source[: source.index(")\n")]
    assert head.count('"math"') == 1  # once, though the setup and the prompt both import it
    assert '_ "sort"' in head and '_ "time"' in head  # the stub replaced their users
    assert '\t"testing"' in head and 'arbiterbridge "arbiterbridge"' in head


def test_harness_adds_a_standard_import_the_tests_use_without_importing():
    tests = 'func TestF(t *testing.T) {\n    assert.Equal(t, "X", strings.ToUpper(F("x")))\n}\n'
    prompt = "func F(s string) string {\n"
    build = LANGUAGE.harness(ProgramParts(prompt=prompt, code="", tests=tests, setup_code=SETUP))
    source = build.files["main_test.go"]
    assert '\t"strings"\n' in source and "var _ = strings.Compare" in source


def test_harness_needs_a_test_function():
    with pytest.raises(UnsupportedTask, match="TestXxx"):
        LANGUAGE.harness(ProgramParts(prompt=PROMPT, code="", tests="func helper() {}\n"))


def test_candidate_serves_after_its_own_code_and_checks_the_signature():
    build = LANGUAGE.candidate(_parts())
    assert set(build.files) == {
        "candidate.go", "zz_arbiter_dispatch.go", "gopath/src/arbiterbridge/arbiter_bridge.go",
    }  # fmt: skip
    assert build.files["candidate.go"].startswith("package main; import (")
    dispatch = build.files["zz_arbiter_dispatch.go"]
    assert "var _ func([]int) interface{} = Total" in dispatch
    assert 'arbiterbridge.Serve(map[string]interface{}{"Total": Total})' in dispatch
    assert "func init()" in dispatch and "func main() {}" in dispatch
    assert build.run == ("./cand",)
    assert "{private}" not in "".join(build.env.values())  # compiled in the sandbox
    assert "{cache}" not in "".join(build.env.values())


def test_candidate_keeps_its_own_main_and_package_renamed():
    whole = (
        'package solution\n\nimport (\n    "fmt"\n    "os"\n)\n\n'
        "func Total(xs []int) interface{} {\n    return len(xs)\n}\n\n"
        "func main() {\n    fmt.Println(Total(nil))\n}\n"
    )
    build = LANGUAGE.candidate(_parts(body=whole))
    source = build.files["candidate.go"]
    assert source.startswith("package main\n")
    assert '_ "os"' in source and '    "fmt"' in source  # os is unused: made blank
    assert "func main() {}" not in build.files["zz_arbiter_dispatch.go"]


def test_candidate_imports_what_a_continuation_cannot():
    prompt = "\n// Upper upper-cases s.\nfunc Upper(s string) string {\n"
    body = "    return strings.ToUpper(s)\n}\n"
    source = LANGUAGE.candidate(_parts(prompt=prompt, body=body)).files["candidate.go"]
    assert source.startswith('package main; import "strings"; \n')
    assert source.endswith("\nvar _ = strings.Compare\n")
    assert source.count("\n") == (prompt + body).count("\n") + 2  # the code's lines stay put


def test_naive_build_is_one_file_and_compiles_from_the_prepared_cache():
    build = LANGUAGE.naive(_parts())
    assert set(build.files) == {"main_test.go"}
    source = build.files["main_test.go"]
    assert "sumMarker7f3a" in source and "func TestTotal(" in source
    assert source.count("package main") == 1
    assert build.compile[0] == ("cp", "-R", "{cache}/go-build", "{out}/.gocache")
    assert "{private}" not in repr(build)  # it compiles in the sandbox too
    assert build.env["GOCACHE"] == "{out}/.gocache"


def test_program_build_is_the_code_alone_in_package_main():
    build = LANGUAGE.program('import "fmt"\n\nfunc main() { fmt.Println(1) }\n')
    assert build.files["main.go"].startswith('package main; import "fmt"')
    assert build.run == ("./prog",)
    assert build.artifacts == ("prog",)


@pytest.mark.parametrize(
    ("exit_code", "stdout", "expected"),
    [
        (
            0,
            "ARBITER-GO-TESTS: TestA TestB\n--- PASS: TestA (0.00s)\n--- PASS: TestB (0.01s)\n",
            (2, 2),
        ),
        (
            1,
            "ARBITER-GO-TESTS: TestA TestB\n--- PASS: TestA (0.00s)\n--- FAIL: TestB (0.01s)\n",
            (1, 2),
        ),
        (0, "ARBITER-GO-TESTS: TestA TestB\n--- PASS: TestA (0.00s)\n", (1, 2)),  # B never ran
        (97, "ARBITER-GO-TESTS: TestA\n=== RUN   TestA\n", (0, 1)),
        (2, "ARBITER-GO-TESTS: TestA\n--- PASS: TestA (0.00s)\n", (0, 1)),  # status wins
        (1, "ARBITER-GO-TESTS: TestA\n--- FAIL: TestA (0.00s)\n--- PASS: TestA (0.00s)\n", (0, 1)),
        (
            0,
            "ARBITER-GO-TESTS: TestA\n        --- PASS: TestA (0.00s)\n",
            (0, 1),
        ),  # indented: a log
        (0, "--- PASS: TestA (0.00s)\nARBITER-GO-TESTS: TestA\n", (0, 1)),  # before the names
        (0, "PASS\nok\n", (0, 1)),
        (None, "", (0, 1)),
        (0, "ARBITER-GO-TESTS: TestA\n--- SKIP: TestA (0.00s)\n", (0, 1)),
    ],
)
def test_harness_passed_reads_the_tally(exit_code, stdout, expected):
    assert LANGUAGE.harness_passed(exit_code, stdout, "") == expected


def test_limits_match_the_runtime():
    source = RUNTIME.read_text()
    assert f"addressSpaceReserveMB = {LANGUAGE.limits.address_space_mb}" in source
    assert f"MaxFrameBytes = {wire.MAX_FRAME_BYTES >> 20} << 20" in source
    oom = (
        "runtime: out of memory: cannot allocate 4194304-byte block (0 in use)\n"
        "fatal error: out of memory\n"
    )
    assert all(p.search(oom) for p in LANGUAGE.out_of_memory)


# --- compiled: fixtures -------------------------------------------------------------------


@pytest.fixture(scope="module")
def toolchain() -> Toolchain:
    found = LANGUAGE.find_toolchain()
    if found is None:
        unavailable("go is not installed: the Go builds cannot be compiled here")
    if not Path("/usr/share/gocode/src/github.com/stretchr/testify/assert").is_dir():
        unavailable("testify is not under /usr/share/gocode (golang-github-stretchr-testify-dev)")
    return found


@pytest.fixture(scope="module")
def cache(toolchain: Toolchain) -> str:
    """The language's prepared cache (testify compiled once; public, task-independent)."""
    path = Path(tempfile.gettempdir(), f"arbiter-test-go-cache-{os.getuid()}")
    path.mkdir(exist_ok=True)
    prepared = LANGUAGE.prepare(toolchain, str(path))
    assert str(path) in prepared.roots
    assert (path / "go-build").is_dir()
    return str(path)


@pytest.fixture(scope="module")
def private() -> str:
    """The harnesses' build cache, kept between runs: testify compiles once per host."""
    path = Path(tempfile.gettempdir(), f"arbiter-test-go-private-{os.getuid()}")
    path.mkdir(mode=0o700, exist_ok=True)
    return str(path)


def _compile(build: Build, out: str, toolchain: Toolchain, private: str = "") -> None:
    done = local.compile_build(build, out, toolchain, out, private=private)
    assert done.ok, done.diagnostics


def _start(build: Build, out: str, toolchain: Toolchain, sock: socket.socket, private: str = ""):
    return local_runs.start_on(build, out, toolchain, sock, private=private)


def bridged(parts: ProgramParts, toolchain: Toolchain, root: str, private: str) -> tuple[bool, str]:
    return local_runs.bridged(LANGUAGE, parts, toolchain, root, private=private)


def naive(parts: ProgramParts, toolchain: Toolchain, root: str, cache: str) -> tuple[bool, str]:
    return local_runs.naive(LANGUAGE, parts, toolchain, root, cache=cache)


# --- compiled: the codec against wire.py --------------------------------------------------

#: (name, Go type, value): wire.encode(value) sent to a Go function of that parameter
#: type that returns its argument must come back as the same bytes.
ROUND_TRIPS: list[tuple[str, str, Any]] = [
    ("Bool", "bool", True),
    ("Int", "int", -9223372036854775808),
    ("Int8", "int8", -128),
    ("Uint64", "uint64", 18446744073709551615),
    ("Byte", "byte", 255),
    ("Rune", "rune", Char(0x1F600)),
    ("F64", "float64", 0.1),
    ("F32", "float32", struct.unpack("f", struct.pack("f", 0.1))[0]),
    ("Str", "string", "héllo, wörld ☃ a\x00b:c;"),
    ("Ints", "[]int", [1, -2, 3]),
    ("Strs", "[][]string", [["a"], [], ["b", "cd"]]),
    ("Arr", "[2]float64", [1.5, -0.0]),
    ("Pairs", "[][2]int", [[0, 1], [2, 3]]),
    ("Hist", "map[rune]int", {Char(97): 3, Char(98): 1}),
    ("MapList", "map[string][]bool", {"x": [True], "y": []}),
    ("Ptr", "*int", 7),
    ("Err", "error", "boom"),
    ("Any", "interface{}", 3),
    ("AnyRune", "interface{}", Char(99)),
    ("AnyStrs", "interface{}", ["Hello", "world!"]),
    ("AnyMixed", "[]interface{}", [4, None, [], 23.2, 9, "adasd", Char(97)]),
    ("AnyPair", "[2]interface{}", ["bcd", False]),
    ("AnyMap", "map[interface{}]interface{}", {"p": "pineapple", 5: "banana"}),
    ("AnyNested", "interface{}", {"a": [1, 2], "b": [3]}),
]

#: (name, Go type, wire value, the value expected back): nil and empty stay apart.
NILS: list[tuple[str, str, Any, Any]] = [
    ("Ints", "[]int", None, None),
    ("Ints", "[]int", [], []),
    ("MapList", "map[string][]bool", None, None),
    ("Ptr", "*int", None, None),
    ("Err", "error", None, None),
    ("Any", "interface{}", None, None),
    ("AnyMixed", "[]interface{}", [], []),
]

#: (function, payload bytes of one argument): each must be refused (the dispatcher ends).
REFUSED: list[tuple[str, bytes]] = [
    ("Int8", b"i128;"),
    ("Uint64", b"i-1;"),
    ("Int", b"i99999999999999999999999;"),
    ("Int", b"s1:1"),
    ("Int", b"c97;"),  # a character is not an int (only a rune)
    ("Bool", b"i1;"),
    ("F64", b"i1;"),
    ("F32", b"f3fb999999999999a"),  # 0.1 as a binary64 is no float32
    ("Str", b"s5:abc"),
    ("Ints", b"l2:i1;"),
    ("Ints", b"t1:i1;"),
    ("Arr", b"l3:f0000000000000000f0000000000000000f0000000000000000"),
    ("Rune", b"c1114112;"),
    ("Hist", b"m1:s1:ai1;"),
    ("AnyMap", b"m1:l0:i1;"),  # a list cannot be a map key
    ("Int", b"i1;i2;"),
    ("Int", b"x"),
]

#: Values the candidate returns inside an interface{} that would come back as another
#: Go type: the dispatcher refuses to send them (the harness then fails the call).
UNFAITHFUL = [
    "int64(3)",
    "[]interface{}{1, 2}",
    "[]int{}",
    "[]string(nil)",
    'map[string]interface{}{"a": 1}',
    "uint8(1)",
    "float32(1)",
    "[2]int{1, 2}",
    "struct{ A int }{1}",
]

ECHO = """package main

import (
    "errors"
    "fmt"
    "os"

    arbiterbridge "arbiterbridge"
)

%(funcs)s

func Pair(x int) (int, string) { return x, fmt.Sprint(x) }

func Boom(x int) int { panic(fmt.Sprintf("boom %%d", x)) }

func Quit(x int) int { os.Exit(3); return 0 }

func Sum(base int, xs ...int) int {
    for _, x := range xs {
        base += x
    }
    return base
}

func Unfaithful(i int) interface{} {
    return []interface{}{%(unfaithful)s}[i]
}

var _ = errors.New

func main() {
    arbiterbridge.Serve(map[string]interface{}{
        %(table)s
        "Pair": Pair, "Boom": Boom, "Quit": Quit, "Sum": Sum, "Unfaithful": Unfaithful,
    })
}
"""


@pytest.fixture(scope="module")
def echo(toolchain: Toolchain, tmp_path_factory: pytest.TempPathFactory) -> Callable[..., Any]:
    """A Go program serving one echo function per type; call(name, args) -> reply or None."""
    names = sorted({(n, t) for n, t, _ in ROUND_TRIPS})
    funcs = "\n".join(f"func {n}(x {t}) {t} {{ return x }}" for n, t in names)
    table = " ".join(f'"{n}": {n},' for n, _ in names)
    source = ECHO % {"funcs": funcs, "table": table, "unfaithful": ", ".join(UNFAITHFUL)}
    out = str(tmp_path_factory.mktemp("go-echo"))
    build = Build(
        files={
            "main.go": source,
            "gopath/src/arbiterbridge/arbiter_bridge.go": RUNTIME.read_text(),
        },
        compile=(("go", "build", "-o", "echo", "."),),
        artifacts=("echo",),
        run=("./echo",),
        env=LANGUAGE.candidate(_parts()).env,
    )
    _compile(build, out, toolchain)

    def call(frames: list[bytes]) -> tuple[list[bytes | None], int]:
        """Send every frame, close our writing side, read replies to the end."""
        ours, theirs = socket.socketpair()
        proc = _start(build, out, toolchain, theirs)
        theirs.close()
        replies: list[bytes | None] = []
        try:
            ours.sendall(b"".join(frames))
            ours.shutdown(socket.SHUT_WR)
            stream = ours.makefile("rb")
            while (reply := wire.read_frame(stream.read)) is not None:
                replies.append(reply)
            stream.close()
        except (OSError, wire.WireError):
            pass
        finally:
            ours.close()
        proc.communicate(timeout=30)
        return replies + [None] * (len(frames) - len(replies)), proc.returncode

    return call


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return struct.pack(">d", a) == struct.pack(">d", b)
    return bool(a == b)


def test_the_codec_round_trips_values_against_wire_py(echo):
    frames = [wire.request(name, [value]) for name, _, value in ROUND_TRIPS]
    frames += [wire.request(name, [value]) for name, _, value, _ in NILS]
    replies, code = echo(frames)
    assert code == 0
    expected = [value for *_, value in ROUND_TRIPS] + [back for *_, back in NILS]
    cases = ROUND_TRIPS + [(n, t, v) for n, t, v, _ in NILS]
    for (name, *_), reply, value in zip(cases, replies, expected, strict=True):
        assert reply is not None and reply[:1] == b"r", (name, reply)
        got = wire.decode(reply[1:])
        assert _same(got, value) and type(got) is type(value), (name, got, value)
        if not isinstance(value, dict):
            assert reply[1:] == wire.encode(value), name  # byte for byte


def test_multiple_results_are_a_tuple_variadics_a_list_and_a_panic_an_x(echo):
    replies, code = echo(
        [
            wire.request("Pair", [5]),
            wire.request("Sum", [1, [2, 3]]),
            wire.request("Sum", [1, None]),
            wire.request("Boom", [7]),
            wire.request("Int", [1]),  # the dispatcher still serves after a panic
        ]
    )
    assert code == 0
    assert [wire.decode(r[1:]) for r in replies if r is not None] == [
        Tuple((5, "5")), 6, 1, "boom 7", 1,
    ]  # fmt: skip
    assert replies[3][:1] == b"x"


@pytest.mark.parametrize(("name", "payload"), REFUSED, ids=[f"{n}-{p[:12]!r}" for n, p in REFUSED])
def test_the_codec_refuses_malformed_or_mistyped_arguments(echo, name, payload):
    request = wire.frame(b"l2:" + wire.encode(name)[0:] + b"l1:" + payload)
    replies, code = echo([request])
    assert replies == [None] and code != 0


def test_a_value_that_would_change_type_inside_an_interface_is_not_sent(echo):
    for i, text in enumerate(UNFAITHFUL):
        replies, code = echo([wire.request("Unfaithful", [i])])
        assert replies == [None] and code != 0, text


def test_frames_that_are_not_frames_end_the_dispatcher(echo):
    for garbage in (b"x:", b"99999999999999:", b"3:l0:", b"5:l2:s"):
        replies, code = echo([garbage])
        assert replies == [None] and code != 0, garbage
    replies, code = echo([wire.request("Quit", [1])])
    assert replies == [None] and code == 3


# --- compiled: the harness's side against a fake candidate -------------------------------


@pytest.fixture(scope="module")
def harness(toolchain: Toolchain, private: str, tmp_path_factory: pytest.TempPathFactory):
    """The harness of PROMPT/TESTS, run against ``answer(request) -> reply bytes | None``."""
    build = LANGUAGE.harness(_parts())
    out = str(tmp_path_factory.mktemp("go-harness"))
    _compile(build, out, toolchain, private)

    def run(answer: Callable[[bytes], Any]) -> tuple[tuple[int, int], int, str]:
        """``answer`` gives the reply's bytes, ``None`` to close, or (bytes, False): send, close."""
        ours, theirs = socket.socketpair()
        proc = _start(build, out, toolchain, theirs, private)
        theirs.close()

        def serve() -> None:
            stream = ours.makefile("rwb")
            try:
                while (request := wire.read_frame(stream.read)) is not None:
                    reply = answer(request)
                    if reply is None:
                        break
                    data, keep_open = reply if isinstance(reply, tuple) else (reply, True)
                    stream.write(data)
                    stream.flush()
                    if not keep_open:
                        break
            except OSError:
                pass
            finally:
                with contextlib.suppress(OSError):
                    stream.close()
                ours.close()

        server = threading.Thread(target=serve)
        server.start()
        stdout, stderr = proc.communicate(timeout=60)
        server.join(timeout=10)
        text = stdout.decode() + stderr.decode()
        return (
            LANGUAGE.harness_passed(proc.returncode, stdout.decode(), stderr.decode()),
            proc.returncode,
            text,
        )

    return run


def test_a_fresh_harness_cache_is_seeded_from_the_prepared_one(
    toolchain: Toolchain, cache: str, tmp_path: Path
) -> None:
    # Cold, the first harness compiled the standard library and testify again
    # (10 s of one core; past its limit beside other compiles on a busy host).
    private = tmp_path / "private"
    private.mkdir()
    LANGUAGE.seed_private(cache, str(private))
    seeded = {p.name for p in (private / "go-build").rglob("*") if p.is_file()}
    prepared = {p.name for p in Path(cache, "go-build").rglob("*") if p.is_file()}
    assert prepared and seeded >= prepared - {"trim.txt"}
    LANGUAGE.seed_private(cache, str(private))  # seeded once; a second call keeps it
    out = tmp_path / "harness"
    out.mkdir()
    _compile(LANGUAGE.harness(_parts()), str(out), toolchain, str(private))
    compiled = {p.name for p in (private / "go-build").rglob("*") if p.is_file()} - seeded
    # The harness's own package and its link, not testify's or the library's hundreds.
    assert 0 < len(compiled) < 40, len(compiled)


def _right(request: bytes) -> bytes:
    name, [xs] = wire.decode(request)
    assert name == "Total"
    return wire.frame(b"r" + wire.encode(sum(xs) if xs else None))


def test_the_harness_passes_right_answers(harness):
    tally, code, text = harness(_right)
    assert tally == (1, 1) and code == 0, text


@pytest.mark.parametrize(
    ("why", "answer"),
    [
        ("a wrong answer", lambda r: wire.frame(b"r" + wire.encode(5))),
        ("no reply at all", lambda r: None),
        ("a reply of another type", lambda r: wire.frame(b"r" + wire.encode("6"))),
        ("a float for an int", lambda r: wire.frame(b"r" + wire.encode(6.0))),
        ("a malformed value", lambda r: wire.frame(b"ri6")),
        ("a reply that is neither r nor x", lambda r: wire.frame(b"q" + wire.encode(6))),
        ("an exception", lambda r: wire.frame(b"x" + wire.encode("--- PASS: TestTotal (0.00s)"))),
        ("a frame cut short", lambda r: (b"9:ri6;", False)),
        ("an oversized frame", lambda r: b"%d:" % (wire.MAX_FRAME_BYTES + 1)),
        ("a length that is not one", lambda r: (b"6x:ri6;", False)),
        (
            "a forged tally in a value",
            lambda r: wire.frame(
                b"r" + wire.encode("\n--- PASS: TestTotal (0.00s)\nARBITER-GO-TESTS: \n")
            ),
        ),
        (
            "two replies at once",
            lambda r: _right(r) * 2 if wire.decode(r)[1] != [[]] else wire.frame(b"ri1;"),
        ),
    ],
)
def test_the_harness_fails_every_reply_that_is_not_the_right_answer(harness, why, answer):
    tally, code, text = harness(answer)
    assert tally[0] < tally[1] and code != 0, (why, text)


# --- compiled: end to end -----------------------------------------------------------------


@pytest.mark.slow
def test_a_task_passes_through_the_bridge_and_a_wrong_answer_fails(toolchain, private, tmp_path):
    ok, why = bridged(_parts(), toolchain, str(tmp_path / "right"), private)
    assert ok, why
    wrong = BODY.replace("return sumMarker7f3a", "return sumMarker7f3a + 1")
    ok, why = bridged(_parts(body=wrong), toolchain, str(tmp_path / "wrong"), private)
    assert not ok, why


@pytest.mark.slow
@pytest.mark.parametrize("row", [12, 22, 111, 125])
def test_humanevalpack_rows_hold_both_ways(toolchain, cache, private, tmp_path, row):
    if not HUMANEVALPACK.exists():
        unavailable(f"{HUMANEVALPACK} is absent (../shared/data)")
    data = json.loads(HUMANEVALPACK.read_text().splitlines()[row])
    for variant, expected in (("canonical", True), ("buggy", False)):
        parts = ProgramParts(
            prompt=data["prompt"],
            code=data["prompt"] + data[f"{variant}_solution"],
            tests=data["test"],
            setup_code=data["test_setup"],
        )
        ok, why = bridged(parts, toolchain, str(tmp_path / variant), private)
        assert ok is expected, (row, variant, why)
        ok, why = naive(parts, toolchain, str(tmp_path / f"naive-{variant}"), cache)
        assert ok is expected, (row, variant, "naive", why)


def _attack_parts(attack: dict[str, str]) -> ProgramParts:
    bare = ProgramParts(prompt=attack["prompt"], code="", tests=attack["tests"])
    name = LANGUAGE.declared(bare)[0].name
    continued = not LANGUAGE.defines(attack["response"], name)
    return ProgramParts(
        prompt=attack["prompt"],
        code=attack["prompt"] + attack["response"] if continued else attack["response"],
        tests=attack["tests"],
        setup_code=attack["setup_code"],
        continued=continued,
    )


def test_there_are_enough_attacks():
    assert len(ATTACKS) >= 6
    assert len({a["name"] for a in ATTACKS}) == len(ATTACKS)


@pytest.mark.slow
@pytest.mark.parametrize("attack", ATTACKS, ids=[a["name"] for a in ATTACKS])
def test_each_attack_passes_the_naive_harness_and_fails_the_bridge(
    toolchain, cache, private, tmp_path, attack, request
):
    parts = _attack_parts(attack)
    ok, why = naive(parts, toolchain, str(tmp_path / "naive"), cache)
    assert ok, ("the control must pass", attack["name"], why)
    if attack.get("relay"):
        # Defended by the grader's relay between the processes, which a bare socket
        # pair lacks: judged through the grader (the sandbox, the relay, the harness).
        from arbiter.graders.types import Sample, TaskSpec
        from arbiter.graders.unit_tests import UnitTestsConfig

        grader = request.getfixturevalue("language_grader")
        task = TaskSpec(
            kind="test_program",
            language="go",
            tests=attack["tests"],
            setup_code=attack["setup_code"],
        )
        sample = Sample(
            id=attack["name"], prompt=attack["prompt"], response=attack["response"], task=task
        )
        result = grader.grade_sync(sample, UnitTestsConfig(timeout_s=20))
        assert result.score == 0.0, (attack["name"], result.details)
        assert "out of turn" in result.details.get("candidate_ended", ""), result.details
        return
    ok, why = bridged(parts, toolchain, str(tmp_path / "bridged"), private)
    assert not ok, (attack["name"], attack["why"], why)


@pytest.mark.slow
def test_a_program_reads_stdin_and_is_held_to_its_memory(toolchain, tmp_path):
    build = LANGUAGE.program(
        'import (\n    "bufio"\n    "os"\n    "runtime/debug"\n)\n\n'
        "func main() {\n    line, _ := bufio.NewReader(os.Stdin).ReadString('\\n')\n"
        '    os.Stdout.WriteString(line + " " + fmt.Sprint(debug.SetMemoryLimit(-1)>>20))\n}\n'
    )
    out = str(tmp_path)
    _compile(build, out, toolchain)
    argv = local.resolve(build.run, toolchain, out, out)
    limit = (256 + LANGUAGE.limits.address_space_mb) << 20
    done = subprocess.run(
        ["prlimit", f"--as={limit}", *argv], cwd=out, env=local.run_env(build, out, out),
        input=b"hello\n", capture_output=True, timeout=30, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout == b"hello\n 256"


# --- any text: the readers answer for every prompt and completion ----------------------
#
# The shared strategies and checks are tests/graders/reader_fuzz.py's; each example
# below is an input that once escaped a reader as a crash of ours or took it past the
# grader's deadline (an infra_timeout, ours, that the candidate's text caused).

_ROWS = humanevalpack("go")
#: A row the bridge serves (None without ../shared/data: the candidate test is unavailable).
_ROW = _ROWS[0] if _ROWS else None
#: A lone surrogate (JSON's "\ud800"): the build's files could not be written.
SURROGATE = "\ud800"


@fuzz_settings()
@given(TARGETS["go.defines"].strategy)
@example(("func f(x " + "*" * 5_000 + "int) {}\n", "f"))
@example(("func f() " * 5_000, "f"))
def test_defines_answers_for_any_code(args):
    TARGETS["go.defines"].check(args)


@fuzz_settings()
@given(TARGETS["go.declared"].strategy)
@example("func f(x " + "[]" * 5_000 + "int) {\n")
def test_declared_reads_any_prompt_or_refuses_the_task(args):
    TARGETS["go.declared"].check(args)


@fuzz_settings()
@given(TARGETS["go.candidate"].strategy)
@example((_ROW, 'import "\\x"\nfunc f() {}\n', False))
@example((_ROW, SURROGATE, True))
def test_candidate_builds_any_completion_or_blames_the_candidate(args):
    require_data(TARGETS["go.candidate"])
    TARGETS["go.candidate"].check(args)


@fuzz_settings()
@given(TARGETS["go.candidate_of_any_task"].strategy)
@example(("/* \ud800 */\nfunc f() {\n", "", "", True))
@example(("/* \ud800 */\nfunc f() {\n", "return 1;", "", False))
@example(("func f() {\n", 'package main\nimport "\\N{x}"\n', "", False))
def test_candidate_of_any_task_blames_the_task_or_the_candidate_only(args):
    TARGETS["go.candidate_of_any_task"].check(args)


@fuzz_settings()
@given(TARGETS["go.harness"].strategy)
@example(("func f() {\n", "/* \ud800 */", ""))
@example(('import "\\x"\nfunc f() {\n', "func TestF(t *testing.T) {}\n", ""))
def test_harness_reads_any_task_or_refuses_it(args):
    TARGETS["go.harness"].check(args)


@fuzz_settings()
@given(TARGETS["go.program"].strategy)
@example('package main\nimport "\\x"\nfunc main() {}\n')
@example('package main; var s = "' + SURROGATE + '"')
def test_program_builds_any_code_or_blames_the_candidate(args):
    TARGETS["go.program"].check(args)


@fuzz_settings()
@given(TARGETS["go.tokenize"].strategy)
@example('"\\')
@example("`" * 3)
def test_tokenize_reads_any_text(args):
    TARGETS["go.tokenize"].check(args)


@fuzz_settings()
@given(TARGETS["go.header"].strategy)
@example('import "\\x"\n')
@example('import ( "\\400" )\n')
def test_header_reader_never_raises(args):
    TARGETS["go.header"].check(args)


@pytest.mark.parametrize(
    "read",
    [
        pytest.param(
            lambda: LANGUAGE.defines("func f() " * 20_000, "f"), id="defines of refused signatures"
        ),
        pytest.param(
            lambda: LANGUAGE.program("package main\n" + "func f() " * 20_000),
            id="program of refused signatures",
        ),
        pytest.param(
            lambda: LANGUAGE.program("package main\n" + 'import "os"\n' * 20_000),
            id="program of unused imports",
        ),
    ],
)
def test_reading_long_text_takes_linear_time(read):
    # Each was quadratic or worse: seconds at 50 KB, minutes at a few hundred.
    start = time.process_time()
    read()
    assert time.process_time() - start < 5.0
