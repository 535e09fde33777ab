"""Rust's builds for ``test_program`` tasks: reading prompts, the generated code, the bridge.

The first tests need no toolchain: signature parsing, stubs and dispatchers,
that the harness holds no candidate text, libtest's tally. The rest compile
with Debian's rustc (the crates prebuilt by ``prepare`` into a cache kept
between runs under the temporary directory, stamped by toolchain: Rust's row
of :mod:`harness`, :data:`harness.RUST`): the runtime's codec against
:mod:`arbiter.graders.languages.wire` in both directions and a harness facing a
forged candidate. The attacks (each passes the naive build and fails the bridged
one), a few HumanEvalPack rows, a standalone program and the readers under
fuzzing are ``test_every_language.py``'s, as for every bridged language.
"""

from __future__ import annotations

import math
import os
import socket
import struct
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from arbiter.graders.languages import local, wire
from arbiter.graders.languages.base import Build, ProgramParts, Toolchain, UnsupportedTask
from arbiter.graders.languages.rust import LANGUAGE, mask
from tests.graders.languages import local_runs
from tests.graders.languages.harness import RUST
from tests.graders.reader_fuzz import humanevalpack
from tests.strictness import unavailable

USES = (
    "fn main(){}\n\nuse std::{slice::Iter, cmp::{max, self}, mem::replace, "
    "collections::{HashSet, HashMap}, ops::Index, ascii::AsciiExt};\n"
    "use rand::Rng;\nuse regex::Regex;\nuse md5;\nuse std::any::{Any, TypeId};\n\n"
)


def _parts(prompt: str, body: str, tests: str = "") -> ProgramParts:
    return ProgramParts(prompt=prompt, code=prompt + body, tests=tests)


# ---------------------------------------------------------------- reading prompts


@pytest.mark.parametrize(
    ("header", "name", "params", "returns"),
    [
        ("fn add(x:i32, y:i32) -> i32{", "add", (("x", "i32"), ("y", "i32")), "i32"),
        (
            "fn greatest_common_divisor(mut a:i32,mut b:i32) -> i32{",
            "greatest_common_divisor",
            (("a", "i32"), ("b", "i32")),
            "i32",
        ),
        (
            "pub fn flip_case(string: String) -> String{",
            "flip_case",
            (("string", "String"),),
            "String",
        ),
        (
            "fn compare_one<'a>(a:&'a dyn Any, b:&'a dyn Any) -> Option<i32>{",
            "compare_one",
            (("a", "&'a dyn Any"), ("b", "&'a dyn Any")),
            "Option<i32>",
        ),
        (
            "fn check_dict_case(dict:HashMap<&str, &str>) -> bool{",
            "check_dict_case",
            (("dict", "HashMap<&str, &str>"),),
            "bool",
        ),
        (
            "fn get_row(lst:Vec<Vec<i32>>, x:i32) -> Vec<Vec<i32>>{",
            "get_row",
            (("lst", "Vec<Vec<i32>>"), ("x", "i32")),
            "Vec<Vec<i32>>",
        ),
        ("fn find_max(words: Vec<&str>) -> &str {", "find_max", (("words", "Vec<&str>"),), "&str"),
        (
            "fn noop(v: std::collections::BTreeMap<u8, (char, f64)>) {",
            "noop",
            (("v", "std::collections::BTreeMap<u8, (char, f64)>"),),
            "",
        ),
    ],
)
def test_the_open_declaration_is_read(
    header: str, name: str, params: tuple[tuple[str, str], ...], returns: str
) -> None:
    prompt = USES + "/*\n doc { with a brace\n*/\n" + header + "\n"
    [declared] = LANGUAGE.declared(ProgramParts(prompt=prompt, code="", tests=""))
    assert (declared.name, declared.params, declared.returns) == (name, params, returns)


def test_the_last_open_declaration_wins_over_helpers() -> None:
    prompt = (
        USES + 'fn is_palindrome_10(str: &str) -> bool {\n    let s = "}{"; // }\n'
        "    let c = '}';\n    s.len() > 0 && c == '}'\n}\n\n"
        "/* a { comment */\nfn make_palindrome(str: &str) -> String {\n"
    )
    [declared] = LANGUAGE.declared(ProgramParts(prompt=prompt, code="", tests=""))
    assert declared.name == "make_palindrome"


def test_entry_point_picks_a_finished_declaration() -> None:
    prompt = USES + "fn helper(x: i32) -> i32 { x }\nfn target(s: &[i64]) -> usize { 0 }\n"
    parts = ProgramParts(prompt=prompt, code=prompt, tests="", entry_point="target")
    [declared] = LANGUAGE.declared(parts)
    assert (declared.name, declared.params) == ("target", (("s", "&[i64]"),))
    harness = LANGUAGE.harness(parts).files["harness.rs"]
    assert "fn helper(x: i32) -> i32 { x }" in harness
    assert "fn target(s: &[i64]) -> usize { 0 }" not in harness


@pytest.mark.parametrize(
    ("header", "why"),
    [
        ("fn f<T: Clone>(x: T) -> T {", "generic"),
        ("fn f(x: &mut Vec<i32>) {", "&mut"),
        ("fn f(x: impl Iterator<Item = i32>) -> i32 {", "cannot"),
        ("fn f(x: i32) -> RtnType<String, f64, i32> {", "cannot"),
        ("fn f(x: &Vec<&str>) -> i32 {", "reference"),
        ("async fn f(x: i32) -> i32 {", "async"),
        ("fn f(x: i32) -> &dyn Any {", "dyn Any"),
        ("fn f(x: Box<dyn Any + Send>) -> i32 {", "cannot"),
        ("fn f(&self) -> i32 {", "method"),
    ],
)
def test_declarations_the_bridge_cannot_carry_are_unsupported(header: str, why: str) -> None:
    with pytest.raises(UnsupportedTask, match=why):
        LANGUAGE.declared(ProgramParts(prompt=USES + header + "\n", code="", tests=""))


def test_a_prompt_without_an_open_fn_is_unsupported() -> None:
    with pytest.raises(UnsupportedTask):
        LANGUAGE.declared(ProgramParts(prompt=USES + "fn done() {}\n", code="", tests=""))


def test_mask_keeps_positions_and_blanks_comments_and_literals() -> None:
    text = 'let a = "{"; // }\nlet b = \'{\'; /* { /* } */ } */ let c = r#"}"#; \'a: loop {}'
    masked = mask(text)
    assert len(masked) == len(text)
    assert masked.count("{") == 1 and masked.count("}") == 1  # only the loop's braces
    assert masked.index("\n") == text.index("\n")


def test_defines() -> None:
    assert LANGUAGE.defines("fn add(x: i32) -> i32 { x }", "add")
    assert not LANGUAGE.defines('// fn add(x: i32)\nlet s = "fn add";', "add")
    assert not LANGUAGE.defines("fn adder() {}", "add")


# ---------------------------------------------------------------- generated code


MARK = "CANDIDATE_TEXT_7f3a"


def test_the_harness_holds_no_candidate_text() -> None:
    prompt = USES + "fn helper(x: i32) -> i32 { x + 1 }\n/* doc */\nfn add(x:i32, y:i32) -> i32{\n"
    body = f'    let {MARK} = "{MARK}";\n    x + y\n}}\nfn {MARK.lower()}() {{}}\n'
    parts = _parts(prompt, body, "#[cfg(test)]\nmod tests { #[test] fn t() {} }\n")
    harness = LANGUAGE.harness(parts)
    for text in harness.files.values():
        assert MARK not in text and MARK.lower() not in text
    assert "fn helper(x: i32) -> i32 { x + 1 }" in harness.files["harness.rs"]
    assert "mod tests" in harness.files["harness.rs"]
    candidate = LANGUAGE.candidate(parts)
    assert MARK in candidate.files["candidate.rs"]


def test_stub_and_dispatcher_for_reference_parameters() -> None:
    prompt = (
        USES + "fn f(a: &str, b: &[i32], c: Vec<&str>, d: &f32, e: HashMap<&str, &str>) -> &str{\n"
    )
    parts = _parts(prompt, '    "x"\n}\n')
    harness = LANGUAGE.harness(parts).files["harness.rs"]
    assert (
        "fn f(__arbiter_arg0: &str, __arbiter_arg1: &[i32], __arbiter_arg2: ::std::vec::Vec<&str>, "
        "__arbiter_arg3: &f32, __arbiter_arg4: ::std::collections::HashMap<&str, &str>) -> &str {"
    ) in harness
    assert '::arbiter_bridge::call::<&str>("f", 5, __arbiter_args)' in harness
    dispatcher = LANGUAGE.candidate(parts).files["candidate.rs"]
    assert "let __arbiter_o0: ::std::string::String" in dispatcher
    assert "let __arbiter_o1: ::std::vec::Vec<i32>" in dispatcher
    assert "let __arbiter_o2: ::std::vec::Vec<::std::string::String>" in dispatcher
    assert "let __arbiter_o3: f32" in dispatcher
    assert "::std::string::String::as_str(&__arbiter_o0)" in dispatcher
    assert "::std::vec::Vec::as_slice(&__arbiter_o1)" in dispatcher
    assert "crate::f(" in dispatcher


def test_builds_are_plain_rustc_with_the_cache() -> None:
    parts = _parts(USES + "fn add(x:i32, y:i32) -> i32{\n", "    x + y\n}\n")
    for build in (LANGUAGE.candidate(parts), LANGUAGE.harness(parts), LANGUAGE.naive(parts)):
        for command in build.compile:
            assert command[0] == "rustc"
            assert "--cap-lints" in command
            assert any("{cache}/rust-crates/librand.rlib" in w for w in command)
            assert not any(w.startswith("/") for w in command)  # relative or {cache}
    harness = LANGUAGE.harness(parts)
    assert harness.run == ("./harness", "--test-threads=1", "--color", "never")
    assert "--test" in harness.compile[0]
    assert LANGUAGE.program("fn main() {}").run == ("./main",)


@pytest.mark.parametrize(
    ("code", "stdout", "expected"),
    [
        (
            0,
            "\nrunning 2 tests\ntest tests::a ... ok\ntest tests::b ... ok\n\n"
            "test result: ok. 2 passed; 0 failed; 0 ignored\n",
            (2, 2),
        ),
        (
            101,
            "\nrunning 2 tests\ntest tests::a ... ok\ntest tests::b ... FAILED\n\n"
            "test result: FAILED. 1 passed; 1 failed; 0 ignored\n",
            (1, 2),
        ),
        (97, "\nrunning 3 tests\ntest tests::a ... ok\ntest tests::b ... ", (1, 3)),
        (97, "\nrunning 1 test\ntest tests::a ... ", (0, 1)),
        (None, "", (0, 1)),
        (0, "\nrunning 1 test\ntest tests::a ... ok\n", (0, 1)),  # no result line
        (
            101,  # a failed test's captured output replays a forged tally: the last line counts
            "\nrunning 3 tests\ntest tests::a ... FAILED\ntest tests::b ... FAILED\n"
            "test tests::c ... ok\n\nfailures:\n\n---- tests::a stdout ----\n"
            "test tests::a ... ok\ntest tests::b ... ok\n\ntest result: ok. 3 passed; 0 failed\n"
            "\nfailures:\n    tests::a\n    tests::b\n\n"
            "test result: FAILED. 1 passed; 2 failed; 0 ignored\n",
            (1, 3),
        ),
        (
            0,
            "\nrunning 2 tests\ntest tests::a - should panic ... ok\n"
            "test tests::b - should panic ... ok\n\ntest result: ok. 2 passed; 0 failed\n",
            (2, 2),
        ),
        (
            1,
            "\nrunning 1 test\ntest tests::a ... ok\n\ntest result: ok. 1 passed; 0 failed\n",
            (0, 1),
        ),
        (
            0,
            "\nrunning 2 tests\ntest tests::a ... ignored\ntest tests::b ... ok\n\n"
            "test result: ok. 1 passed; 0 failed; 1 ignored\n",
            (1, 2),
        ),
    ],
)
def test_harness_passed_reads_libtest(
    code: int | None, stdout: str, expected: tuple[int, int]
) -> None:
    assert LANGUAGE.harness_passed(code, stdout, "") == expected


def test_out_of_memory_pattern() -> None:
    assert any(
        p.search("memory allocation of 400000000 bytes failed") for p in LANGUAGE.out_of_memory
    )


# ---------------------------------------------------------------- with the toolchain


@pytest.fixture(scope="module")
def toolchain(tmp_path_factory: pytest.TempPathFactory) -> tuple[Toolchain, str]:
    rig = RUST.rig(tmp_path_factory)
    assert rig.cache is not None
    return rig.toolchain, rig.cache


def _compile(build: Build, where: Path, toolchain: tuple[Toolchain, str]) -> str:
    tc, cache = toolchain
    where.mkdir(parents=True, exist_ok=True)
    outcome = local.compile_build(build, str(where), tc, cache)
    assert outcome.ok, outcome.diagnostics[-3000:]
    return str(where)


def _run_bridged(
    harness: Build,
    hdir: str,
    toolchain: tuple[Toolchain, str],
    serve: Callable[[socket.socket], None] | tuple[Build, str],
) -> tuple[int | None, str, str]:
    """Run the harness against a candidate build (or a Python stand-in on the other end)."""
    tc, cache = toolchain
    ours, theirs = socket.socketpair()
    theirs_fd, ours_fd = local_runs.high_fd(theirs.fileno()), local_runs.high_fd(ours.fileno())
    theirs.close()
    ours.close()
    helper: threading.Thread | None = None
    candidate = None
    if isinstance(serve, tuple):
        build, cdir = serve
        candidate = local.start(build, cdir, tc, cache, ours_fd)
        os.close(ours_fd)
    else:
        sock = socket.socket(fileno=ours_fd)
        helper = threading.Thread(target=serve, args=(sock,), daemon=True)
        helper.start()
    process = local.start(harness, hdir, tc, cache, theirs_fd)
    os.close(theirs_fd)
    try:
        out, err = process.communicate(timeout=120)
    finally:
        if candidate is not None:
            candidate.kill()
            candidate.communicate()
    if helper is not None:
        helper.join(timeout=10)
    return process.returncode, out.decode(), err.decode()


# -------- the codec against wire.py, through a candidate's dispatcher

ECHO_PROMPT = (
    USES + "use std::collections::BTreeSet;\n\n"
    "fn echo(a: i64, b: f64, c: char, d: String, e: Vec<Option<i32>>, f: HashMap<String, Vec<u8>>, "
    "g: (bool, u64, f32), h: Vec<Box<dyn Any>>, i: &str, j: &[i16], k: BTreeSet<i128>, l: &f32) "
    "-> (i64, f64, char, String, Vec<Option<i32>>, HashMap<String, Vec<u8>>, (bool, u64, f32), "
    "Vec<Box<dyn Any>>, String, Vec<i16>, BTreeSet<i128>, f32) {\n"
)
ECHO_BODY = "    (a, b, c, d, e, f, g, h, i.to_string(), j.to_vec(), k, *l)\n}\n"


def _echo_args(b: float, d: str, h: list[object]) -> list[object]:
    return [
        -(2**63),
        b,
        wire.Char(0x1F600),
        d,
        [1, None, -(2**31)],
        {"k": [0, 255], "": []},
        wire.Tuple((True, 2**64 - 1, 0.5)),
        h,
        "é\u2028\x00",
        [-(2**15), 2**15 - 1],
        [-(2**127), 0, 2**127 - 1],
        3.25,
    ]


def _bits(value: object) -> object:
    """Floats by their bits (NaN, -0.0), containers recursively: what equality should compare."""
    if isinstance(value, float):
        return ("f", struct.pack(">d", value))
    if isinstance(value, wire.Tuple):
        return ("t", tuple(_bits(v) for v in value.items))
    if isinstance(value, list):
        return [_bits(v) for v in value]
    if isinstance(value, dict):
        return {k: _bits(v) for k, v in value.items()}
    return value


@pytest.fixture(scope="module")
def echo_candidate(
    toolchain: tuple[Toolchain, str], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Callable[[bytes], bytes]]:
    build = LANGUAGE.candidate(_parts(ECHO_PROMPT, ECHO_BODY))
    cdir = _compile(build, tmp_path_factory.mktemp("echo"), toolchain)
    tc, cache = toolchain
    ours, theirs = socket.socketpair()
    theirs_fd = local_runs.high_fd(theirs.fileno())
    theirs.close()
    process = local.start(build, cdir, tc, cache, theirs_fd)
    os.close(theirs_fd)
    reader = ours.makefile("rb")

    def ask(payload: bytes) -> bytes:
        ours.sendall(wire.frame(payload))
        reply = wire.read_frame(reader.read)
        assert reply is not None, "the candidate closed the bridge"
        return reply

    yield ask
    reader.close()
    ours.close()
    process.wait(timeout=10)
    assert process.returncode == 0  # a clean end of stream ends the candidate cleanly


@pytest.mark.slow
@pytest.mark.parametrize(
    ("b", "d", "h"),
    [
        (1.0, "plain", [4, [], 23.2, "adasd", wire.Char(99), None, True]),
        (-0.0, "", [2**40, -(2**100), [1, [2.5]], wire.Tuple((1, "x")), {"a": 1}]),
        (math.inf, "tab\tnew\nline", []),
        (5e-324, "\u00ff" * 3, [2**128 - 1]),
        (math.nan, "x", [False]),
    ],
)
def test_values_round_trip_through_the_dispatcher(
    echo_candidate: Callable[[bytes], bytes], b: float, d: str, h: list[object]
) -> None:
    args = _echo_args(b, d, h)
    reply = echo_candidate(wire.encode(["echo", args]))
    assert reply[:1] == b"r", reply[:300]
    got = wire.decode(reply[1:])
    assert isinstance(got, wire.Tuple)
    # &str and &[i16] come back owned, the same on the wire; the BTreeSet's items go in order.
    assert _bits(list(got.items)) == _bits(args)


@pytest.mark.slow
@pytest.mark.parametrize(
    "payload",
    [
        b"l2:s4:echol0:",  # too few arguments
        b"l2:s4:nopel0:",  # no such function
        b"l2:s4:echol12:i1;",  # cut short
        b"garbage",
        # a value of another type, an integer out of range, trailing bytes:
        wire.encode(["echo", [*_echo_args(1.0, "x", [])[:11], "not a float"]]),
        wire.encode(["echo", [2**63, *_echo_args(1.0, "x", [])[1:]]]),
        wire.encode(["echo", _echo_args(1.0, "x", [])]) + b"n",
    ],
)
def test_the_dispatcher_answers_a_bad_request_with_an_error(
    echo_candidate: Callable[[bytes], bytes], payload: bytes
) -> None:
    reply = echo_candidate(payload)
    assert reply[:1] == b"x"
    assert isinstance(wire.decode(reply[1:]), str)


# -------- a harness facing forged replies

PICK_PROMPT = USES + "/* pick */\nfn pick(n: i32) -> bool{\n"
PICK_TESTS = """
#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_pick() {
        assert_eq!(pick(1), true);
    }

    #[test]
    #[should_panic]
    fn test_pick_panics() {
        pick(2);
    }
}
"""


@pytest.fixture(scope="module")
def pick_harness(
    toolchain: tuple[Toolchain, str], tmp_path_factory: pytest.TempPathFactory
) -> tuple[Build, str]:
    build = LANGUAGE.harness(ProgramParts(prompt=PICK_PROMPT, code="", tests=PICK_TESTS))
    return build, _compile(build, tmp_path_factory.mktemp("pick"), toolchain)


def _replying(replies: list[bytes], raw: bool = False) -> Callable[[socket.socket], None]:
    def serve(sock: socket.socket) -> None:
        with sock:
            reader = sock.makefile("rb")
            for reply in replies:
                request = wire.read_frame(reader.read)
                if request is None:
                    return
                name, _ = wire.decode(request)
                assert name == "pick"
                try:
                    sock.sendall(reply if raw else wire.frame(reply))
                except OSError:
                    return

    return serve


@pytest.mark.slow
def test_honest_replies_pass(
    pick_harness: tuple[Build, str], toolchain: tuple[Toolchain, str]
) -> None:
    build, hdir = pick_harness
    good = [b"rb1", b"x" + wire.encode("pick panicked")]
    code, out, err = _run_bridged(build, hdir, toolchain, _replying(good))
    assert LANGUAGE.harness_passed(code, out, err) == (2, 2), out + err


@pytest.mark.slow
@pytest.mark.parametrize(
    ("replies", "raw"),
    [
        ([b"rb0", b"xs1:!"], False),  # a wrong answer
        ([b"ri1;", b"xs1:!"], False),  # another type
        ([b"rb1n", b"xs1:!"], False),  # trailing bytes
        ([b"rs2:b1", b"xs1:!"], False),
        ([b"r", b"xs1:!"], False),  # nothing
        ([b"qb1", b"xs1:!"], False),  # neither r nor x
        ([b"rb1", b"x"], False),  # a malformed error reply: not a panic to should_panic on
        ([b"rb1", b"ri0;"], False),  # should_panic must not pass on a bad reply either
        ([b"rb1"], False),  # end of stream at the second call
        ([], False),  # end of stream at once
        ([b"9:rb1"], True),  # a frame cut short
        ([b"99999999999:rb1"], True),  # over the frame limit
        ([b"-3:rb1"], True),
    ],
)
def test_a_forged_or_broken_reply_never_passes(
    pick_harness: tuple[Build, str],
    toolchain: tuple[Toolchain, str],
    replies: list[bytes],
    raw: bool,
) -> None:
    build, hdir = pick_harness
    code, out, err = _run_bridged(build, hdir, toolchain, _replying(replies, raw))
    passed, total = LANGUAGE.harness_passed(code, out, err)
    assert total == 2 and passed < 2, out + err


# -------- HumanEvalPack


def _rows() -> tuple[dict[str, str], ...]:
    rows = humanevalpack("rust")
    if not rows:
        unavailable("no humanevalpack_rust.jsonl (the shared reference data)")
    return rows


def test_every_humanevalpack_prompt_is_read_or_refused_with_a_reason() -> None:
    refused = {}
    for row in _rows():
        parts = ProgramParts(prompt=row["prompt"], code="", tests=row["test"])
        try:
            [declared] = LANGUAGE.declared(parts)
        except UnsupportedTask as e:
            refused[row["task_id"]] = str(e)
            continue
        assert row["declaration"].rstrip().endswith(declared.header.rstrip() + "{") or (
            declared.header in row["declaration"]
        )
        harness = LANGUAGE.harness(parts).files["harness.rs"]
        assert row["canonical_solution"].strip() not in harness
    # Rust/137's return type (RtnType) is declared by the solution, not by the prompt.
    assert list(refused) == ["Rust/137"]
