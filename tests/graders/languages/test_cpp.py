"""The C++ language: reading prompts, the builds it makes, sessions only C++ has.

What every bridged language does alike (the reference task's builds, whole sessions,
the attacks, HumanEvalPack rows, the codec, the readers under fuzzing) is tested in
``test_every_language.py``, C++'s row of it (:data:`harness.CPP`) holding the reference
task used here. Nothing here needs the sandbox: builds are compiled and run as local
subprocesses (:mod:`arbiter.graders.languages.local`), the candidate's and the
harness's joined by a socket pair on descriptor 3. Tests that compile need g++.
"""

from __future__ import annotations

import math
import shutil
import subprocess
from pathlib import Path

import pytest

from arbiter.graders.languages import local, wire
from arbiter.graders.languages.base import ProgramParts, Toolchain, UnsupportedTask
from arbiter.graders.languages.cpp import (
    LANGUAGE,
    LINK_OPTIONS,
    RUNTIME,
    RUNTIME_OBJECT,
    mask,
)
from tests.graders.languages.harness import CPP, CPP_BODY, CPP_PROMPT, CPP_TESTS, Rig, cpp_echo

PROMPT, TESTS, BODY = CPP_PROMPT, CPP_TESTS, CPP_BODY
_parts = CPP.parts


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


def test_harness_holds_the_prompt_a_stub_and_the_tests():
    build = LANGUAGE.harness(_parts())
    source = build.files["harness.cpp"]
    # The bridge comes first, prepared under {cache} (precompiled): not among the files.
    [command] = build.compile
    assert command[command.index("-include") + 1].endswith(f"/{RUNTIME}")
    assert command[command.index("-include") + 1].startswith("{cache}/bridge-")
    # ... and its compiled part is linked in, from beside the header.
    header = command[command.index("-include") + 1]
    assert header.removesuffix(RUNTIME) + RUNTIME_OBJECT in command
    assert "@" + header.removesuffix(RUNTIME) + LINK_OPTIONS in command
    assert set(build.files) == {"harness.cpp"}
    assert "return 2*x;" in source  # the prompt's helper
    assert 'return arbiter::call<long long>("total", xs);' in source
    assert "the body starts here" not in source  # the open body's comment is dropped
    assert source.index("arbiter::call") < source.index("int main()")
    assert build.run == ("./harness",)
    assert build.artifacts == ("harness",)


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


# --- compiled -------------------------------------------------------------------------


@pytest.fixture(scope="module")
def rig(tmp_path_factory: pytest.TempPathFactory) -> Rig:
    return CPP.rig(tmp_path_factory)


@pytest.fixture(scope="module")
def toolchain(rig: Rig) -> Toolchain:
    return rig.toolchain


def test_prepare_precompiles_the_bridge_once_per_header(toolchain: Toolchain, tmp_path: Path):
    cache = str(tmp_path)
    prepared = LANGUAGE.prepare(toolchain, cache)
    [folder] = [p for p in Path(cache).iterdir() if p.name.startswith("bridge-")]
    assert (folder / RUNTIME).read_text() == (
        Path(local.__file__).with_name("runtime") / RUNTIME
    ).read_text()
    assert (folder / f"{RUNTIME}.gch").stat().st_size > 0
    # The bridge's non-template part, compiled once: it defines the request loop.
    defined = subprocess.run(
        ["nm", "-C", "--defined-only", folder / RUNTIME_OBJECT],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "arbiter::serve(" in defined and "arbiter::read_frame(" in defined
    assert sorted(p.name for p in folder.iterdir()) == sorted(
        [RUNTIME, f"{RUNTIME}.gch", RUNTIME_OBJECT, LINK_OPTIONS]
    )
    # gold links where the host has it; g++'s default linker otherwise.
    options = (folder / LINK_OPTIONS).read_text()
    assert options == ("-fuse-ld=gold\n" if shutil.which("ld.gold") else "")
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


def test_runtime_reads_nan_and_upper_case_hex(rig, tmp_path):
    [nan, upper] = cpp_echo(
        rig,
        str(tmp_path),
        ["double", "double"],
        [wire.encode(math.nan), b"f3FF0000000000000"],
    )
    assert math.isnan(wire.decode(nan))
    assert wire.decode(upper) == 1.0


@pytest.mark.slow
def test_a_whole_answer_without_the_prompts_includes_compiles_and_passes(rig, tmp_path):
    ok, why = rig.bridged(_parts(body=WHOLE_WITHOUT_CONTEXT), str(tmp_path / "whole"))
    assert ok, why
    wrong = WHOLE_WITHOUT_CONTEXT.replace("return s;", "return s + 1;")
    ok, why = rig.bridged(_parts(body=wrong), str(tmp_path / "wrong"))
    assert not ok, why


@pytest.mark.slow
def test_competitive_style_macros_and_a_main_of_its_own_still_serve(rig, tmp_path):
    whole = (
        "#include <bits/stdc++.h>\n#define int long long\n#define all(x) x.begin(), x.end()\n"
        "using namespace std;\nint total(vector<int> xs) {\n"
        "    return accumulate(all(xs), 0LL);\n}\n"
        'signed main() { cout << "hello" << endl; return 1; }\n'
    )
    ok, why = rig.bridged(_parts(body=whole), str(tmp_path))
    assert ok, why


@pytest.mark.slow
def test_a_void_function_and_a_const_reference(rig, tmp_path):
    prompt = (
        "#include<vector>\n#include<cstdio>\nusing namespace std;\n"
        "void show(const vector<int>& v){\n"
    )
    body = '    for (int x : v) printf("%d\\n", x);\n}\n'
    tests = "int main(){ show({1, 2}); show({}); }\n"
    ok, why = rig.bridged(_parts(prompt, body, tests), str(tmp_path))
    assert ok, why


def test_gxx_is_where_the_toolchain_says(toolchain):
    assert shutil.which("g++", path="/usr/local/bin:/usr/bin:/bin") == toolchain.paths["g++"]
