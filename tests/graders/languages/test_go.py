"""The Go language: reading prompts, the builds it makes, its runtime's codec, its harness.

What every bridged language does alike (the reference task's builds, whole sessions,
the attacks, HumanEvalPack rows, the readers under fuzzing) is tested in
``test_every_language.py``, Go's row of it (:data:`harness.GO`) holding the reference
task and the prepared caches used here. Nothing here needs the sandbox: builds are
compiled and run as local subprocesses (:mod:`arbiter.graders.languages.local`), the
candidate's and the harness's joined by a socket pair on descriptor 3. Tests that
compile need Go (``go`` on PATH, testify under /usr/share/gocode for the harness).
"""

from __future__ import annotations

import contextlib
import socket
import struct
import subprocess
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from arbiter.graders.languages import go as go_module
from arbiter.graders.languages import local, wire
from arbiter.graders.languages.base import Build, ProgramParts, Toolchain, UnsupportedTask
from arbiter.graders.languages.go import LANGUAGE, tokenize
from arbiter.graders.languages.wire import Char, Tuple
from tests.graders.languages import local_runs
from tests.graders.languages.harness import GO, GO_BODY, GO_PROMPT, GO_SETUP, GO_TESTS, Rig, same

#: The language's runtime, beside its module.
RUNTIME = Path(go_module.__file__).resolve().with_name("runtime") / "arbiter_bridge.go"
SETUP, PROMPT, TESTS, BODY = GO_SETUP, GO_PROMPT, GO_TESTS, GO_BODY
_parts = GO.parts


# --- reading Go ----------------------------------------------------------------------


def test_tokens_leave_out_comments_and_keep_literals_whole():
    src = "x := \"a // b\" + `c /* d` // e.f\n/* g.h */ y.z('.', 1.5e-3, 0x1p-2)"
    texts = [t.text for t in tokenize(src)]
    assert texts == [
        "x", ":=", '"a // b"', "+", "`c /* d`", "y", ".", "z", "(", "'.'", ",", "1.5e-3",
        ",", "0x1p-2", ")",
    ]  # fmt: skip
    assert all(src[t.start : t.end] == t.text for t in tokenize(src))


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


def test_harness_holds_setup_prompt_stub_and_tests():
    build = LANGUAGE.harness(_parts())
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
def rig(tmp_path_factory: pytest.TempPathFactory) -> Rig:
    return GO.rig(tmp_path_factory)


@pytest.fixture(scope="module")
def toolchain(rig: Rig) -> Toolchain:
    return rig.toolchain


@pytest.fixture(scope="module")
def cache(rig: Rig) -> str:
    """The language's prepared cache (testify compiled once; public, task-independent)."""
    assert rig.cache is not None
    return rig.cache


@pytest.fixture(scope="module")
def private(rig: Rig) -> str:
    """The harnesses' build cache, kept between runs: testify compiles once per host."""
    return rig.private


def _compile(build: Build, out: str, toolchain: Toolchain, private: str = "") -> None:
    done = local.compile_build(build, out, toolchain, out, private=private)
    assert done.ok, done.diagnostics


def _start(build: Build, out: str, toolchain: Toolchain, sock: socket.socket, private: str = ""):
    return local_runs.start_on(build, out, toolchain, sock, private=private)


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
        assert same(got, value) and type(got) is type(value), (name, got, value)
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
