"""The C++ language: reading prompts, the builds it makes, its runtime's codec, its attacks.

Nothing here needs the sandbox: builds are compiled and run as local
subprocesses (:mod:`arbiter.graders.languages.local`), the candidate's and the
harness's joined by a socket pair on descriptor 3. Tests that compile need g++.
"""

from __future__ import annotations

import importlib.util
import json
import math
import os
import shutil
import struct
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given

from arbiter.graders.languages import local, wire
from arbiter.graders.languages.base import Build, ProgramParts, Toolchain, UnsupportedTask
from arbiter.graders.languages.cpp import LANGUAGE, RUNTIME, mask
from arbiter.graders.languages.wire import Char, Tuple
from tests.graders.languages import local_runs
from tests.graders.reader_fuzz import TARGETS, fuzz_settings, humanevalpack, require_data
from tests.strictness import unavailable

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
HUMANEVALPACK = ROOT.parent / "shared" / "data" / "humanevalpack_cpp.jsonl"


def _attacks() -> list[dict[str, str]]:
    spec = importlib.util.spec_from_file_location("attacks_cpp", HERE / "attacks_cpp.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    found: list[dict[str, str]] = module.ATTACKS
    return found


ATTACKS = _attacks()

PROMPT = """/*
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
TESTS = """#undef NDEBUG
#include<assert.h>
int main(){
    assert (total({1, 2, 3}) == 6);
    assert (total({}) == 0);
    assert (helper_twice(4) == 8);
}
"""
BODY = (
    "    long long sum_marker_7f3a = 0;\n    for (int x : xs) sum_marker_7f3a += x;\n"
    "    return sum_marker_7f3a;\n}\n"
)


def _parts(prompt: str = PROMPT, body: str = BODY, tests: str = TESTS) -> ProgramParts:
    name = LANGUAGE.declared(ProgramParts(prompt=prompt, code="", tests=tests))[0].name
    continued = not LANGUAGE.defines(body, name)
    code = prompt + body if continued else body
    return ProgramParts(prompt=prompt, code=code, tests=tests, continued=continued)


# --- reading C++ ----------------------------------------------------------------


def test_mask_blanks_comments_literals_and_directives_and_keeps_offsets():
    src = (
        "#include <x>\nint a = 1'000; // c {\nchar q = '{'; const char* s = \"}\\\"{\";\n"
        '/* { */ auto r = R"x({)x"; #notadirective\n'
    )
    masked = mask(src)
    assert len(masked) == len(src)
    assert masked.count("\n") == src.count("\n")
    assert "{" not in masked and "}" not in masked
    assert "include" not in masked
    assert "int a = 1'000;" in masked


def test_declared_reads_the_open_declaration():
    [d] = LANGUAGE.declared(ProgramParts(prompt=PROMPT, code="", tests=TESTS))
    assert d.name == "total"
    assert d.returns == "long long"
    assert d.params == (("xs", "vector<int>"),)
    assert d.header == "long long total(vector<int> xs)"


@pytest.mark.parametrize(
    ("header", "name", "params", "returns"),
    [
        (
            "bool check_dict_case(map<string,string> dict){",
            "check_dict_case",
            (("dict", "map<string,string>"),),
            "bool",
        ),
        (
            "vector<vector<int>> get_row(vector<vector<int>> lst, int x){",
            "get_row",
            (("lst", "vector<vector<int>>"), ("x", "int")),
            "vector<vector<int>>",
        ),
        (
            "string intersection( vector<int> interval1,vector<int> interval2){",
            "intersection",
            (("interval1", "vector<int>"), ("interval2", "vector<int>")),
            "string",
        ),
        (
            "static inline int f(const std::vector<int>& v, unsigned int){",
            "f",
            (("v", "const std::vector<int>&"), ("", "unsigned int")),
            "int",
        ),
        ("void g(void) const {", "g", (), "void"),
    ],
)
def test_declared_shapes(header, name, params, returns):
    prompt = "#include<vector>\n#include<string>\n#include<map>\nusing namespace std;\n" + header
    [d] = LANGUAGE.declared(ProgramParts(prompt=prompt, code="", tests=""))
    assert (d.name, d.params, d.returns) == (name, params, returns)


def test_declared_body_comment_and_helpers_before_it():
    prompt = (
        "#include<string>\nusing namespace std;\nstring encode_shift(string s){\n"
        "    string out; for (char c : s) out += c; return out;\n}\n"
        "string decode_shift(string s){\n    // takes a string { encoded } by encode_shift\n"
    )
    [d] = LANGUAGE.declared(ProgramParts(prompt=prompt, code="", tests=""))
    assert d.name == "decode_shift"
    assert d.params == (("s", "string"),)


def test_a_prototype_declares_the_entry_point_when_no_body_is_open():
    prompt = (
        "#include<string>\nusing namespace std;\n// Join a and b with sep.\n"
        'string join(string a, string b, string sep = ", ");\nint unrelated(int x){ return x; }\n'
    )
    parts = ProgramParts(prompt=prompt, code="", tests="", entry_point="join")
    [d] = LANGUAGE.declared(parts)
    assert d.name == "join" and d.returns == "string"
    assert d.params == (("a", "string"), ("b", "string"), ("sep", "string"))
    source = LANGUAGE.harness(parts).files["harness.cpp"]
    assert "int unrelated(int x){ return x; }" in source  # the whole prompt is kept
    assert "string join(string a, string b, string sep) {" in source  # defaults said once
    with pytest.raises(UnsupportedTask, match="no open function"):
        LANGUAGE.declared(ProgramParts(prompt=prompt, code="", tests=""))


@pytest.mark.parametrize(
    ("prompt", "why"),
    [
        ("#include<variant>\nstd::variant<int, double> pick(int a){\n", "variant"),
        (
            "#include<functional>\ntypedef std::function<int(int)> step_fn;\n"
            "int apply_twice(step_fn f, int x){\n",
            "step_fn",
        ),
        ("int f(int* p){\n", "pointer"),
        ("void sort_in_place(vector<int>& v){\n", "reference"),
        ("int done(int x){ return x; }\n", "no open function"),
        ("class S {\npublic:\n int f(int x){\n", "class or namespace"),
        ("template <class T> T twice(T x){\n", "template"),
    ],
)
def test_declared_refuses_what_cannot_cross_the_bridge(prompt, why):
    with pytest.raises(UnsupportedTask, match=why):
        LANGUAGE.declared(ProgramParts(prompt=prompt, code="", tests=""))


@pytest.mark.parametrize(
    ("code", "expected"),
    [
        ("long long total(vector<int> xs){ return 0; }", True),
        ("long long total (const vector<int>& xs) const noexcept\n{\n}", True),
        ("auto total(vector<int> xs) -> long long { return 0; }", True),
        ("std::vector<int> total(std::vector<int> v)\n{ return v; }", True),
        ("int main(){ if (total(v)) { } return total(w); }", False),
        ("long long total(vector<int> xs);", False),
        ("// long long total(vector<int> xs){ }\n", False),
        ('const char* s = "long long total(vector<int> xs){";', False),
        ("x = p->total(v) {", False),
        ("long long totally(vector<int> xs){ return 0; }", False),
    ],
)
def test_defines(code, expected):
    assert LANGUAGE.defines(code, "total") is expected


# --- the builds ------------------------------------------------------------------


def test_harness_holds_the_prompt_a_stub_and_the_tests_and_no_candidate_code():
    parts = _parts()
    build = LANGUAGE.harness(parts)
    text = "\n".join(build.files.values())
    assert "sum_marker_7f3a" not in text
    assert "sum_marker_7f3a" in "\n".join(LANGUAGE.candidate(parts).files.values())
    source = build.files["harness.cpp"]
    # The bridge comes first, prepared under {cache} (precompiled): not among the files.
    [command] = build.compile
    assert command[command.index("-include") + 1].endswith(f"/{RUNTIME}")
    assert command[command.index("-include") + 1].startswith("{cache}/bridge-")
    assert set(build.files) == {"harness.cpp"}
    assert "return 2*x;" in source  # the prompt's helper
    assert 'return arbiter::call<long long>("total", xs);' in source
    assert "the body starts here" not in source  # the open body's comment is dropped
    assert source.index("arbiter::call") < source.index("int main()")
    assert build.run == ("./harness",)
    assert build.artifacts == ("harness",)


def test_harness_of_a_whole_program_answer_is_the_same():
    whole = "#include <vector>\nlong long total(std::vector<int> v) { return 42; }\n"
    parts = _parts(body=whole)
    assert not parts.continued and parts.code == whole
    assert LANGUAGE.harness(parts) == LANGUAGE.harness(_parts())


def test_candidate_build_renames_the_candidates_main_and_serves_after_its_code():
    source = LANGUAGE.candidate(_parts()).files["candidate.cpp"]
    head, _, tail = source.partition(BODY)
    assert "#define main arbiter_candidate_main_" in head
    assert tail.index("#undef main") < tail.index("int main()")
    assert "arbiter::serve(&arbiter_dispatch_)" in tail
    assert "::total(arbiter_a0_)" in tail


WHOLE_WITHOUT_CONTEXT = (
    "long long total(vector<int> xs) {\n"
    "    long long s = 0;\n"
    "    for (int x : xs) s += helper_twice(x) / 2;\n"
    "    return s;\n"
    "}\n"
)


def test_a_whole_answer_goes_after_the_prompts_context():
    # It uses vector unqualified and the prompt's helper, and writes neither include.
    parts = _parts(body=WHOLE_WITHOUT_CONTEXT)
    assert not parts.continued
    context = LANGUAGE.standalone_context(parts)
    assert context == PROMPT[: PROMPT.index("long long total")]
    source = LANGUAGE.candidate(parts).files["candidate.cpp"]
    assert source.index("int helper_twice") < source.index('#line 1 "candidate.cpp"')
    assert source.index('#line 1 "candidate.cpp"') < source.index("for (int x : xs)")
    # A body continues the prompt already: nothing is added.
    assert LANGUAGE.standalone_context(_parts()) == ""


def test_a_whole_answer_that_redefines_a_helper_gets_only_includes_and_usings():
    prompt = "/* #include <map> in a comment is not kept */\n" + PROMPT.replace(
        "using namespace std;\n", "using namespace std;\nstruct Pair { int a; };\n"
    )
    own_helper = "int helper_twice(int x) { return x + x; }\n" + WHOLE_WITHOUT_CONTEXT
    assert LANGUAGE.standalone_context(_parts(prompt=prompt, body=own_helper)) == (
        "#include<stdio.h>\n#include<vector>\nusing namespace std;\n"
    )
    own_type = "struct Pair { int a; };\n" + WHOLE_WITHOUT_CONTEXT
    assert LANGUAGE.standalone_context(_parts(prompt=prompt, body=own_type)) == (
        "#include<stdio.h>\n#include<vector>\nusing namespace std;\n"
    )


def test_program_build_is_the_code_alone():
    build = LANGUAGE.program("int main(){}\n")
    assert build.files == {"program.cpp": "int main(){}\n"}
    assert build.run == ("./program",)


def test_openssl_includes_link_libcrypto():
    prompt = (
        "#include<string>\n#include<openssl/md5.h>\nusing namespace std;\nstring md5(string t){\n"
    )
    parts = ProgramParts(prompt=prompt, code=prompt + "return t;}\n", tests="int main(){}\n")
    assert "-lcrypto" in LANGUAGE.candidate(parts).compile[0]
    assert "-lcrypto" in LANGUAGE.harness(parts).compile[0]


# --- compiled: fixtures -----------------------------------------------------------


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> str:
    return str(tmp_path_factory.mktemp("cpp-cache"))


@pytest.fixture(scope="module")
def toolchain(cache: str) -> Toolchain:
    found = LANGUAGE.find_toolchain()
    if found is None:
        unavailable("g++ is not installed: the C++ builds cannot be compiled here")
    return LANGUAGE.prepare(found, cache)


def _cache(toolchain: Toolchain) -> str:
    return toolchain.roots[-1]  # prepare() puts the cache last among the roots


def test_prepare_precompiles_the_bridge_once_per_header(toolchain: Toolchain, tmp_path: Path):
    cache = str(tmp_path)
    prepared = LANGUAGE.prepare(toolchain, cache)
    [folder] = [p for p in Path(cache).iterdir() if p.name.startswith("bridge-")]
    assert (folder / RUNTIME).read_text() == (
        Path(local.__file__).with_name("runtime") / RUNTIME
    ).read_text()
    assert (folder / f"{RUNTIME}.gch").stat().st_size > 0
    assert cache in prepared.roots
    made = (folder / f"{RUNTIME}.gch").stat().st_mtime_ns
    LANGUAGE.prepare(toolchain, cache)
    assert (folder / f"{RUNTIME}.gch").stat().st_mtime_ns == made  # kept
    assert [p.name for p in Path(cache).iterdir()] == [folder.name]  # nothing left aside
    # g++ takes the precompiled header: -H marks it with '!'.
    build = LANGUAGE.candidate(_parts())
    [command] = build.compile
    words = [w.replace("{cache}", cache) for w in command]
    (tmp_path / "candidate.cpp").write_text(build.files["candidate.cpp"])
    shown = subprocess.run(
        [*words, "-H", "-fsyntax-only"], cwd=tmp_path, capture_output=True, text=True, check=True
    )
    assert shown.stderr.splitlines()[0].startswith(f"! {folder}/{RUNTIME}.gch")


@pytest.fixture
def build_dir(tmp_path: Path) -> Iterator[str]:
    yield str(tmp_path)


def _compile(build: Build, out: str, toolchain: Toolchain) -> None:
    done = local.compile_build(build, out, toolchain, _cache(toolchain))
    assert done.ok, done.diagnostics


def bridged(
    parts: ProgramParts, toolchain: Toolchain, root: str, timeout_s: float = 20
) -> tuple[bool, str]:
    return local_runs.bridged(
        LANGUAGE, parts, toolchain, root, cache=_cache(toolchain), timeout_s=timeout_s
    )


def naive(parts: ProgramParts, toolchain: Toolchain, root: str) -> tuple[bool, str]:
    return local_runs.naive(LANGUAGE, parts, toolchain, root, cache=_cache(toolchain))


# --- compiled: the codec against wire.py --------------------------------------------

#: (C++ type, value) pairs: wire.encode(value) must decode into the type and re-encode
#: to the same bytes.
ROUND_TRIPS: list[tuple[str, Any]] = [
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
REFUSED: list[tuple[str, bytes]] = [
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

ECHO = r"""
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


def _echo(toolchain: Toolchain, out: str, types: list[str], payloads: list[bytes]) -> list[bytes]:
    order = sorted(set(types))
    cases = "\n".join(
        f"            case {k}: reply = echo<{t}>(in); break;" for k, t in enumerate(order)
    )
    build = Build(
        files={
            RUNTIME: (Path(local.__file__).with_name("runtime") / RUNTIME).read_text(),
            "echo.cpp": ECHO.replace("%CASES%", cases),
        },
        compile=(("g++", "-std=gnu++17", "-O0", "-o", "echo", "echo.cpp"),),
        artifacts=("echo",),
        run=("./echo",),
    )
    _compile(build, out, toolchain)
    stdin = b"".join(
        wire.frame(b"i%d;" % order.index(t) + p) for t, p in zip(types, payloads, strict=True)
    )
    done = subprocess.run(["./echo"], cwd=out, input=stdin, capture_output=True, timeout=60)
    assert done.returncode == 0, done.stderr
    replies, pos = [], 0
    data = done.stdout

    def read(n: int) -> bytes:
        nonlocal pos
        chunk = data[pos : pos + n]
        pos += len(chunk)
        return chunk

    while (frame := wire.read_frame(read)) is not None:
        replies.append(frame)
    assert len(replies) == len(types)
    return replies


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return struct.pack(">d", a) == struct.pack(">d", b)
    return bool(a == b)


def test_runtime_codec_round_trips_wire_values(toolchain, build_dir):
    types = [t for t, _ in ROUND_TRIPS] + [t for t, _ in REFUSED]
    payloads = [wire.encode(v) for _, v in ROUND_TRIPS] + [p for _, p in REFUSED]
    replies = _echo(toolchain, build_dir, types, payloads)
    for (ctype, value), sent, got in zip(ROUND_TRIPS, payloads, replies, strict=False):
        assert got == sent, (ctype, value, got)
        assert _same(wire.decode(got), value) or isinstance(value, set)
    for (ctype, payload), got in zip(REFUSED, replies[len(ROUND_TRIPS) :], strict=True):
        assert got.startswith(b"E"), (ctype, payload, got)


def test_runtime_reads_nan_and_upper_case_hex(toolchain, build_dir):
    [nan, upper] = _echo(
        toolchain,
        build_dir,
        ["double", "double"],
        [wire.encode(math.nan), b"f3FF0000000000000"],
    )
    assert math.isnan(wire.decode(nan))
    assert wire.decode(upper) == 1.0


# --- compiled: whole sessions ----------------------------------------------------------


@pytest.mark.slow
def test_a_right_answer_passes_and_a_wrong_one_fails(toolchain, tmp_path):
    ok, why = bridged(_parts(), toolchain, str(tmp_path / "right"))
    assert ok, why
    wrong = BODY.replace("return sum_marker_7f3a;", "return sum_marker_7f3a + 1;")
    ok, why = bridged(_parts(body=wrong), toolchain, str(tmp_path / "wrong"))
    assert not ok, why


@pytest.mark.slow
def test_a_whole_answer_without_the_prompts_includes_compiles_and_passes(toolchain, tmp_path):
    ok, why = bridged(_parts(body=WHOLE_WITHOUT_CONTEXT), toolchain, str(tmp_path / "whole"))
    assert ok, why
    wrong = WHOLE_WITHOUT_CONTEXT.replace("return s;", "return s + 1;")
    ok, why = bridged(_parts(body=wrong), toolchain, str(tmp_path / "wrong"))
    assert not ok, why


@pytest.mark.slow
def test_competitive_style_macros_and_a_main_of_its_own_still_serve(toolchain, tmp_path):
    whole = (
        "#include <bits/stdc++.h>\n#define int long long\n#define all(x) x.begin(), x.end()\n"
        "using namespace std;\nint total(vector<int> xs) {\n"
        "    return accumulate(all(xs), 0LL);\n}\n"
        'signed main() { cout << "hello" << endl; return 1; }\n'
    )
    ok, why = bridged(_parts(body=whole), toolchain, str(tmp_path))
    assert ok, why


@pytest.mark.slow
def test_a_thrown_exception_reaches_the_tests_as_one(toolchain, tmp_path):
    prompt = "#include<stdexcept>\n#include<string>\nusing namespace std;\nint parse(string s){\n"
    body = '    if (s.empty()) throw invalid_argument("empty");\n    return stoi(s);\n}\n'
    tests = (
        '#undef NDEBUG\n#include<assert.h>\nint main(){\n    assert (parse("12") == 12);\n'
        '    bool threw = false;\n    try { parse(""); } catch (const std::exception& e) {\n'
        '        threw = std::string(e.what()).find("empty") != std::string::npos;\n    }\n'
        "    assert (threw);\n}\n"
    )
    ok, why = bridged(_parts(prompt, body, tests), toolchain, str(tmp_path))
    assert ok, why


@pytest.mark.slow
def test_a_void_function_and_a_const_reference(toolchain, tmp_path):
    prompt = (
        "#include<vector>\n#include<cstdio>\nusing namespace std;\n"
        "void show(const vector<int>& v){\n"
    )
    body = '    for (int x : v) printf("%d\\n", x);\n}\n'
    tests = "int main(){ show({1, 2}); show({}); }\n"
    ok, why = bridged(_parts(prompt, body, tests), toolchain, str(tmp_path))
    assert ok, why


@pytest.mark.slow
def test_a_candidate_that_dies_or_hangs_up_fails(toolchain, tmp_path):
    body = "    (void)xs; abort();\n}\n"
    ok, why = bridged(_parts(body=body), toolchain, str(tmp_path / "abort"))
    assert not ok and "ended without answering" in why, why
    whole = (
        "#include <unistd.h>\n#include <vector>\nusing namespace std;\n"
        "long long total(vector<int> xs) { close(3); long long s = 0;\n"
        "    for (int x : xs) s += x;\n    return s;\n}\n"
    )
    ok, why = bridged(_parts(body=whole), toolchain, str(tmp_path / "close"))
    assert not ok, why


def test_a_standalone_program_reads_stdin(toolchain, build_dir):
    build = LANGUAGE.program(
        "#include <iostream>\nint main(){ long long a, b; std::cin >> a >> b; "
        "std::cout << a + b << std::endl; }\n"
    )
    _compile(build, build_dir, toolchain)
    done = subprocess.run(
        [os.path.join(build_dir, "program")], input=b"2 40\n", capture_output=True, timeout=30
    )
    assert done.stdout == b"42\n"


@pytest.mark.slow
@pytest.mark.parametrize("attack", ATTACKS, ids=[a["name"] for a in ATTACKS])
def test_attack_passes_the_naive_harness_and_fails_the_bridged_one(attack, toolchain, tmp_path):
    parts = _parts(attack["prompt"], attack["response"], attack["tests"])
    passed, why = naive(parts, toolchain, str(tmp_path / "naive"))
    assert passed, f"the control must pass the naive harness: {why}"
    passed, why = bridged(parts, toolchain, str(tmp_path / "bridged"))
    assert not passed, f"the attack passed the bridged harness: {why}"


def test_attacks_are_well_formed():
    assert len(ATTACKS) >= 6
    for attack in ATTACKS:
        assert set(attack) == {"name", "why", "prompt", "response", "tests", "setup_code"}
    assert len({a["name"] for a in ATTACKS}) == len(ATTACKS)


@pytest.mark.slow
@pytest.mark.parametrize("row", [0, 12, 22, 23, 95, 111, 137, 162])
def test_humanevalpack_rows(row, toolchain, tmp_path):
    if not HUMANEVALPACK.exists():
        unavailable(
            f"{HUMANEVALPACK} is absent: the shared reference data is not beside the checkout"
        )
    with HUMANEVALPACK.open() as f:
        data = [json.loads(line) for line in f][row]
    if "boost/" in data["prompt"] and not Path("/usr/include/boost/any.hpp").exists():
        unavailable("boost's headers are absent (libboost-dev): the task includes boost/any.hpp")
    for variant, expected in (("canonical_solution", True), ("buggy_solution", False)):
        parts = ProgramParts(
            prompt=data["prompt"], code=data["prompt"] + data[variant], tests=data["test"]
        )
        # CPP/22's and CPP/137's buggy solutions never return: they fail by the timeout.
        ok, why = bridged(parts, toolchain, str(tmp_path / variant), timeout_s=8)
        assert ok is expected, (variant, why)


def test_gxx_is_where_the_toolchain_says(toolchain):
    assert shutil.which("g++", path="/usr/local/bin:/usr/bin:/bin") == toolchain.paths["g++"]


# --- any text: the readers answer for every prompt and completion ----------------------
#
# The shared strategies and checks are tests/graders/reader_fuzz.py's; each example
# below is an input that once escaped a reader as a crash of ours or took it past the
# grader's deadline (an infra_timeout, ours, that the candidate's text caused).

_ROWS = humanevalpack("cpp")
#: A row the bridge serves (None without ../shared/data: the candidate test is unavailable).
_ROW = _ROWS[115] if _ROWS else None
#: A lone surrogate (JSON's "\ud800"): the build's files could not be written.
SURROGATE = "\ud800"


@fuzz_settings()
@given(TARGETS["cpp.mask"].strategy)
@example("1'0" * 20_000)
@example("b'" * 20_000)
def test_mask_keeps_the_offsets_of_any_text(args):
    TARGETS["cpp.mask"].check(args)


@fuzz_settings()
@given(TARGETS["cpp.defines"].strategy)
@example(("a f(" * 20_000, "f"))
@example(("int f() ->" + " " * 5_000, "f"))
def test_defines_answers_for_any_code(args):
    TARGETS["cpp.defines"].check(args)


@fuzz_settings()
@given(TARGETS["cpp.declared"].strategy)
@example("/*" + " " * 3_000 + "*/\nint f(int x){")
def test_declared_reads_any_prompt_or_refuses_the_task(args):
    TARGETS["cpp.declared"].check(args)


@fuzz_settings()
@given(TARGETS["cpp.candidate"].strategy)
@example((_ROW, "return '" + SURROGATE + "';}", True))
def test_candidate_builds_any_completion_or_blames_the_candidate(args):
    require_data(TARGETS["cpp.candidate"])
    TARGETS["cpp.candidate"].check(args)


@fuzz_settings()
@given(TARGETS["cpp.candidate_of_any_task"].strategy)
@example(("/* \ud800 */\nint f(int x){", "", "", True))
@example(("/* \ud800 */\nint f(int x){", "return 1;", "", False))
@example(("int f(int x){", SURROGATE, "", False))
def test_candidate_of_any_task_blames_the_task_or_the_candidate_only(args):
    TARGETS["cpp.candidate_of_any_task"].check(args)


@fuzz_settings()
@given(TARGETS["cpp.harness"].strategy)
@example(("int f(int x){", "/* \ud800 */", ""))
@example(("/*" + "\n" * 3_000 + "*/\nint f(int x) noexcept(" + " " * 3_000 + "{", "", ""))
def test_harness_reads_any_task_or_refuses_it(args):
    TARGETS["cpp.harness"].check(args)


@fuzz_settings()
@given(TARGETS["cpp.program"].strategy)
@example("int main() { return '" + SURROGATE + "'; }")
def test_program_builds_any_code_or_blames_the_candidate(args):
    TARGETS["cpp.program"].check(args)


@pytest.mark.parametrize(
    "read",
    [
        pytest.param(lambda: mask("1'0" * 100_000), id="mask digit separators"),
        pytest.param(lambda: LANGUAGE.defines("a f(" * 50_000, "f"), id="defines at every call"),
        pytest.param(
            lambda: LANGUAGE.defines("int f() ->" + " " * 200_000, "f"), id="defines after ->"
        ),
        pytest.param(
            lambda: LANGUAGE.declared(
                ProgramParts(prompt="/*" + " " * 200_000 + "*/\nint f(int x){", code="", tests="")
            ),
            id="declaration after a comment",
        ),
    ],
)
def test_reading_long_text_takes_linear_time(read):
    # Each was quadratic or worse: seconds at 50 KB, minutes at a few hundred.
    start = time.process_time()
    read()
    assert time.process_time() - start < 5.0
