"""The JavaScript language: reading prompts, the builds it makes, its runtime's codec, its attacks.

Nothing here needs the sandbox: builds are run as local subprocesses
(:mod:`arbiter.graders.languages.local`), the candidate's and the harness's
joined by a socket pair on descriptor 3. Tests that run scripts need node.
"""

from __future__ import annotations

import importlib.util
import json
import math
import resource
import struct
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given

from arbiter.graders.languages import local, wire
from arbiter.graders.languages.base import ProgramParts, Toolchain, UnsupportedTask
from arbiter.graders.languages.javascript import BRIDGE, LANGUAGE, RUNTIME, mask
from arbiter.graders.languages.wire import UNDEFINED, Char, Tuple
from tests.graders.languages import local_runs
from tests.graders.reader_fuzz import TARGETS, fuzz_settings, humanevalpack, require_data
from tests.strictness import unavailable

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
HUMANEVALPACK = ROOT.parent / "shared" / "data" / "humanevalpack_js.jsonl"
RUNTIME_PATH = Path(local.__file__).with_name("runtime") / RUNTIME


def _attacks() -> list[dict[str, str]]:
    spec = importlib.util.spec_from_file_location(
        "attacks_javascript", HERE / "attacks_javascript.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    found: list[dict[str, str]] = module.ATTACKS
    return found


ATTACKS = _attacks()

PROMPT = """/* A helper the prompt defines: kept in the harness. */
const helperTwice = (x) => {
  return 2 * x // "}" {
}

/* Return the sum of the array's items.
  >>> total([1, 2, 3])
  6
  */
const total = (xs) => {
"""
TESTS = """const testTotal = () => {
  console.assert(total([1, 2, 3]) === 6)
  console.assert(total([]) === 0)
  console.assert(helperTwice(4) === 8)
}

testTotal()
"""
BODY = """  let sumMarker7f3a = 0
  for (const x of xs) sumMarker7f3a += x
  return sumMarker7f3a
}
"""


def _parts(prompt: str = PROMPT, body: str = BODY, tests: str = TESTS) -> ProgramParts:
    name = LANGUAGE.declared(ProgramParts(prompt=prompt, code="", tests=tests))[0].name
    continued = not LANGUAGE.defines(body, name)
    code = prompt + body if continued else body
    return ProgramParts(prompt=prompt, code=code, tests=tests, continued=continued)


# --- reading JavaScript ----------------------------------------------------------------


def test_mask_blanks_comments_and_literals_and_keeps_offsets():
    src = 'let a = 1 // c {\nlet q = \'{\', s = "}\\"{"\n/* { */ let t = `x\n{ ${a} }`\n'
    masked = mask(src)
    assert len(masked) == len(src)
    assert masked.count("\n") == src.count("\n")
    assert "{" not in masked and "}" not in masked
    assert "let a = 1" in masked


def test_declared_reads_the_open_declaration():
    [d] = LANGUAGE.declared(ProgramParts(prompt=PROMPT, code="", tests=TESTS))
    assert d.name == "total"
    assert d.params == (("xs", ""),)
    assert d.returns == ""
    assert d.header == "const total = (xs) =>"


@pytest.mark.parametrize(
    ("line", "name", "params"),
    [
        (
            "const hasCloseElements = (numbers, threshold) => {",
            "hasCloseElements",
            ("numbers", "threshold"),
        ),
        ("let f = n => {", "f", ("n",)),
        ("var g = async (a, b = 2, ...rest) => {", "g", ("a", "b", "rest")),
        ("function h(x, y) {", "h", ("x", "y")),
        ("async function h2() {", "h2", ()),
        ("const k = function (s) {", "k", ("s",)),
        ("export const e = (s) => {", "e", ("s",)),
    ],
)
def test_declared_shapes(line, name, params):
    prompt = "/* doc { */\nconst helper = (x) => {\n  return x\n}\n" + line + "\n"
    [d] = LANGUAGE.declared(ProgramParts(prompt=prompt, code="", tests=""))
    assert (d.name, tuple(p for p, _ in d.params)) == (name, params)


@pytest.mark.parametrize(
    ("prompt", "why"),
    [
        ("const done = (x) => {\n  return x\n}\n", "open function"),
        ("const f = (x) => {\n  if (x) {\n", "open function"),
        ("class S {\n  f(x) {\n", "open function"),
        ("function outer() {\n  const inner = (x) => {\n", "top level"),
        ("function* gen(n) {\n", "generator"),
    ],
)
def test_declared_refuses_what_cannot_cross_the_bridge(prompt, why):
    with pytest.raises(UnsupportedTask, match=why):
        LANGUAGE.declared(ProgramParts(prompt=prompt, code="", tests=""))


@pytest.mark.parametrize(
    ("code", "expected"),
    [
        ("const total = (xs) => xs.length", True),
        ("function total(xs) { return 0 }", True),
        ("let total = async xs => 0", True),
        ("var total = function (xs) { return 0 }", True),
        ("module.exports.total = (xs) => 0", True),
        ("console.log(total([1]))", False),
        ("// function total(xs) {}\n", False),
        ("const s = 'function total(xs) {'", False),
        ("const totally = (xs) => 0", False),
    ],
)
def test_defines(code, expected):
    assert LANGUAGE.defines(code, "total") is expected


# --- the builds ---------------------------------------------------------------------


def test_harness_holds_the_prompt_a_stub_and_the_tests_and_no_candidate_code():
    parts = _parts()
    build = LANGUAGE.harness(parts)
    text = "\n".join(build.files.values())
    assert "sumMarker7f3a" not in text
    assert "sumMarker7f3a" in "\n".join(LANGUAGE.candidate(parts).files.values())
    source = build.files["harness.js"]
    assert source.startswith(
        f'const {BRIDGE} = require("./{RUNTIME}");\n{BRIDGE}.installAssert();\n'
    )
    assert "return 2 * x" in source  # the prompt's helper
    assert f'const total = (...args) => {BRIDGE}.call("total", args);' in source
    assert source.index(f'{BRIDGE}.call("total"') < source.index("testTotal()")
    assert build.run[0] == "node" and build.run[-1] == "harness.js"
    assert "--max-old-space-size={memory_mb}" in build.run
    assert build.compile == ()


def test_harness_of_a_whole_program_answer_is_the_same():
    whole = "const total = (xs) => 42\n"
    parts = _parts(body=whole)
    assert not parts.continued and parts.code == whole
    assert LANGUAGE.harness(parts) == LANGUAGE.harness(_parts())


def test_a_function_declaration_is_stubbed_as_one_and_async_returns_a_promise():
    source = LANGUAGE.harness(_parts(prompt="function total(xs) {\n")).files["harness.js"]
    assert f'function total(...args) {{\n  return {BRIDGE}.call("total", args);\n}}' in source
    source = LANGUAGE.harness(_parts(prompt="const total = async (xs) => {\n")).files["harness.js"]
    assert f'const total = (...args) => Promise.resolve({BRIDGE}.call("total", args));' in source


def test_candidate_build_appends_the_dispatcher_and_checks_syntax():
    build = LANGUAGE.candidate(_parts())
    source = build.files["candidate.js"]
    head, _, tail = source.partition(BODY.rstrip())
    assert head == PROMPT
    assert 'case "total": return typeof total === "function" ? total : undefined;' in tail
    assert f'require("./{RUNTIME}").serve(' in tail
    assert build.compile == (("node", "--v8-pool-size=1", "--check", "candidate.js"),)
    assert set(build.artifacts) == {"candidate.js", RUNTIME, "package.json"}


def test_a_whole_answer_gets_the_prompts_helpers_it_leaves_out():
    whole = "const total = (xs) => helperTwice(xs.length)\n"
    source = LANGUAGE.candidate(_parts(body=whole)).files["candidate.js"]
    assert source.startswith(PROMPT[: PROMPT.index("/* Return the sum")]) and whole in source
    both = "const helperTwice = (x) => x + x\nconst total = (xs) => helperTwice(xs.length)\n"
    source = LANGUAGE.candidate(_parts(body=both)).files["candidate.js"]
    assert source.startswith(both)


def test_program_and_naive_builds():
    build = LANGUAGE.program("console.log(1)\n")
    assert build.files["main.js"] == "console.log(1)\n"
    assert build.run[-1] == "main.js"
    parts = _parts()
    source = LANGUAGE.naive(parts).files["naive.js"]
    assert source.index("console.assert = ") < source.index(parts.code) < source.index(TESTS)


# --- running: fixtures -----------------------------------------------------------------


@pytest.fixture(scope="module")
def toolchain() -> Toolchain:
    found = LANGUAGE.find_toolchain()
    if found is None:
        unavailable("node is not installed: the JavaScript builds cannot run here")
    return found


def bridged(parts: ProgramParts, toolchain: Toolchain, root: str) -> tuple[bool, str]:
    return local_runs.bridged(LANGUAGE, parts, toolchain, root)


def naive(parts: ProgramParts, toolchain: Toolchain, root: str) -> tuple[bool, str]:
    return local_runs.naive(LANGUAGE, parts, toolchain, root)


def _node(toolchain: Toolchain, script: str, stdin: bytes = b"") -> bytes:
    done = subprocess.run(
        [toolchain.paths["node"], "-e", script, str(RUNTIME_PATH)],
        input=stdin,
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr.decode()
    return done.stdout


# --- running: the codec against wire.py ---------------------------------------------------

#: Python values whose encoding decodes in JS to a value that re-encodes to the same bytes.
ROUND_TRIPS: list[Any] = [
    None, UNDEFINED, True, False, 0, -42, 2**53 - 1, -(2**53 - 1), 2**53, -(2**63), 10**40,
    0.1, -0.0, math.inf, -math.inf, 5e-324, 2.0**60, 1e300, "", "héllo, wörld ☃",
    "a\x00b:c;", "\U0001f600 astral", "lone \ud800 and \udc00 surrogates", [1, -2, 3], [],
    [[["deep"]], [None, UNDEFINED]], {"b": 1, "a": [2.5]}, {}, {"__proto__": 1, "x": {}},
    {1: "x", "k": 2}, {(1, 2): 3},
]  # fmt: skip

#: (payload, the re-encoding): accepted, but JavaScript has no separate type for it.
CONVERTED: list[tuple[bytes, bytes]] = [
    (wire.encode(Tuple((1, "a"))), wire.encode([1, "a"])),  # a tuple is an array
    (wire.encode(Char(97)), wire.encode("a")),  # a character is a string
    (wire.encode(Char(0x1F600)), wire.encode("\U0001f600")),
    (wire.encode(3.0), wire.encode(3)),  # an integral float is a number like any other
    (b"f3FF0000000000000", wire.encode(1)),
]

REFUSED: list[bytes] = [
    b"i;", b"i--1;", b"i12", b"b2", b"f3ff00000", b"fzzzzzzzzzzzzzzzz", b"s5:abc", b"s-1:",
    b"s2:\xc3\x28", b"s2:\xc0\x80", b"s4:\xf4\x90\x80\x80", b"c1114112;", b"l3:i1;i2;",
    b"m1:s1:a", b"i1;i2;", b"l999999999999999999999:", b"q", b"",
]  # fmt: skip

ECHO = r"""
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


def _frames(data: bytes) -> list[bytes]:
    frames, pos = [], 0

    def read(n: int) -> bytes:
        nonlocal pos
        chunk = data[pos : pos + n]
        pos += len(chunk)
        return chunk

    while (frame := wire.read_frame(read)) is not None:
        frames.append(frame)
    return frames


def test_runtime_codec_round_trips_wire_values(toolchain):
    payloads = [wire.encode(v) for v in ROUND_TRIPS] + [p for p, _ in CONVERTED] + list(REFUSED)
    replies = _frames(_node(toolchain, ECHO, b"".join(wire.frame(p) for p in payloads)))
    assert len(replies) == len(payloads)
    for value, sent, got in zip(ROUND_TRIPS, payloads, replies, strict=False):
        assert got == sent, (value, got)
    rest = replies[len(ROUND_TRIPS) :]
    for (payload, expected), got in zip(CONVERTED, rest, strict=False):
        assert got == expected, (payload, got)
    for payload, got in zip(REFUSED, rest[len(CONVERTED) :], strict=True):
        assert got.startswith(b"E"), (payload, got)


#: (a JavaScript expression, the Python value wire.py must read from its encoding).
ENCODINGS: list[tuple[str, Any]] = [
    ("[1, 2.5, 'x', null, undefined, true]", [1, 2.5, "x", None, UNDEFINED, True]),
    ("-0", -0.0),
    ("NaN", math.nan),
    ("2 ** 60", 2.0**60),
    ("2n ** 70n", 2**70),
    ("[1, , 3]", [1, UNDEFINED, 3]),
    ("({a: [1], b: {c: 'd'}})", {"a": [1], "b": {"c": "d"}}),
    ("new Map([[1, 'one'], ['k', [2]]])", {1: "one", "k": [2]}),
    ("new Set([3, 1])", [3, 1]),
    ("new Int32Array([7, -8])", [7, -8]),
    ("new Number(5)", 5),
    ("'\\ud83d\\ude00 \\ud800'", "\U0001f600 \ud800"),
    ("new (class P { constructor() { this.x = 1 } })()", {"x": 1}),
]


def test_runtime_encodes_javascript_values_as_wire_reads_them(toolchain):
    script = (
        "const bridge = require(process.argv[1]);\n"
        "for (const v of [" + ", ".join(e for e, _ in ENCODINGS) + "]) "
        "console.log(bridge.encode(v).toString('hex'));\n"
        "for (const bad of [() => 1, Symbol('s'), [() => 1]]) {\n"
        "  try { bridge.encode(bad); console.log('encoded'); } catch (e) { console.log('refused');"
        " }\n"
        "}\n"
    )
    lines = _node(toolchain, script).decode().split()
    assert lines[len(ENCODINGS) :] == ["refused"] * 3
    for (expr, value), hexed in zip(ENCODINGS, lines, strict=False):
        got = wire.decode(bytes.fromhex(hexed))
        if isinstance(value, float) and math.isnan(value):
            assert math.isnan(got), expr
        elif isinstance(value, float):
            assert struct.pack(">d", got) == struct.pack(">d", value), (expr, got)
        else:
            assert got == value and type(got) is type(value), (expr, got)


def test_javascript_values_survive_the_round_trip(toolchain):
    script = r"""
const bridge = require(process.argv[1]);
const { isDeepStrictEqual } = require("util");
const cases = [
  -0, NaN, Infinity, 2 ** 60, 2 ** 53 + 2, 9007199254740991, 0.1, 2n ** 70n, undefined, null,
  "\ud800 lone", "☃", [1, undefined, [null]], { a: 1, ["__proto__"]: [2], nested: { x: "y" } },
  new Map([[1, "one"], [[2], "array key"]]), { "": 0 },
];
let bad = 0;
for (const value of cases) {
  const back = bridge.decode(bridge.encode(value));
  if (!(Object.is(value, back) || isDeepStrictEqual(value, back))) {
    bad++;
    console.log("changed:", value, back);
  }
}
const proto = bridge.decode(bridge.encode(JSON.parse('{"__proto__": 5}')));
if (Object.getPrototypeOf(proto) !== Object.prototype || proto["__proto__"] !== 5) bad++;
if (typeof bridge.decode(Buffer.from("i99999999999999999999;")) !== "bigint") bad++;
console.log(bad === 0 ? "ok" : "bad");
"""
    assert _node(toolchain, script).decode().split()[-1] == "ok"


# --- running: whole sessions --------------------------------------------------------------


def test_a_right_answer_passes_and_a_wrong_one_fails(toolchain, tmp_path):
    ok, why = bridged(_parts(), toolchain, str(tmp_path / "right"))
    assert ok, why
    wrong = BODY.replace("return sumMarker7f3a", "return sumMarker7f3a + 1")
    ok, why = bridged(_parts(body=wrong), toolchain, str(tmp_path / "wrong"))
    assert not ok and "Assertion failed" in why, why


def test_a_whole_script_that_prints_and_declares_a_function_serves(toolchain, tmp_path):
    whole = (
        "console.log('debug output'); console.error('noise')\n"
        "function total(xs) { return xs.reduce((a, b) => a + b, 0) }\n"
        "console.assert = () => {}\n"
    )
    ok, why = bridged(_parts(body=whole), toolchain, str(tmp_path))
    assert ok, why


def test_values_keep_their_javascript_identity(toolchain, tmp_path):
    prompt = "const shape = (x) => {\n"
    body = (
        "  return { negZero: -0, nan: NaN, big: 2 ** 60, bigint: 2n ** 70n, undef: undefined,\n"
        "           arr: [1, , 'two'], echo: x, weird: { ['__proto__']: 'k' } }\n}\n"
    )
    tests = (
        "const r = shape({ a: [1.5, null] })\n"
        "console.assert(Object.is(r.negZero, -0))\n"
        "console.assert(Number.isNaN(r.nan))\n"
        "console.assert(r.big === 2 ** 60)\n"
        "console.assert(r.bigint === 2n ** 70n)\n"
        "console.assert('undef' in r && r.undef === undefined)\n"
        "console.assert(JSON.stringify(r.arr) === JSON.stringify([1, null, 'two']))\n"
        "console.assert(JSON.stringify(r.echo) === JSON.stringify({ a: [1.5, null] }))\n"
        "console.assert(Object.getPrototypeOf(r.weird) === Object.prototype)\n"
        "console.assert(Object.keys(r.weird)[0] === '__proto__')\n"
    )
    ok, why = bridged(_parts(prompt, body, tests), toolchain, str(tmp_path))
    assert ok, why


def test_an_exception_fails_even_where_the_tests_would_catch_it(toolchain, tmp_path):
    prompt = "const parse = (s) => {\n"
    body = "  if (s === '') throw new RangeError('empty')\n  return Number(s)\n}\n"
    tests = "console.assert(parse('12') === 12)\ntry { parse('') } catch (e) { }\n"
    ok, why = bridged(_parts(prompt, body, tests), toolchain, str(tmp_path))
    assert not ok and "RangeError: empty" in why, why


def test_a_candidate_that_dies_or_lacks_the_function_fails(toolchain, tmp_path):
    ok, why = bridged(_parts(body="  process.exit(0)\n}\n"), toolchain, str(tmp_path / "dies"))
    assert not ok and "ended before it replied" in why, why
    missing = "const totalX = (xs) => 6\n"
    parts = ProgramParts(prompt=PROMPT, code=missing, tests=TESTS, continued=False)
    ok, why = bridged(parts, toolchain, str(tmp_path / "missing"))
    assert not ok and "total is not defined as a function" in why, why
    ok, why = bridged(_parts(body="  return (\n}\n"), toolchain, str(tmp_path / "syntax"))
    assert not ok and "candidate's compile" in why, why


def test_an_async_prompt_gets_a_promise(toolchain, tmp_path):
    prompt = "const later = async (x) => {\n"
    body = "  return x * 2\n}\n"
    tests = "later(21).then((v) => console.assert(v === 42))\n"
    ok, why = bridged(_parts(prompt, body, tests), toolchain, str(tmp_path))
    assert ok, why


@pytest.mark.slow
def test_running_out_of_heap_is_told_as_out_of_memory(toolchain, tmp_path):
    body = "  const hog = []\n  for (;;) hog.push(new Array(1e5).fill(Math.random()))\n}\n"
    ok, why = bridged(_parts(body=body), toolchain, str(tmp_path))
    assert not ok
    assert any(p.search(why) for p in LANGUAGE.out_of_memory), why


def test_node_starts_within_the_address_space_it_asks_for(toolchain, tmp_path):
    build = LANGUAGE.program(
        "const a = []; for (let i = 0; i < 2e5; i++) a.push({ i })\n"
        "console.log(require('v8').getHeapStatistics().heap_size_limit >> 20)\n"
    )
    done = local.compile_build(build, str(tmp_path), toolchain, str(tmp_path))
    assert done.ok, done.diagnostics
    memory = 256
    limit = (memory + LANGUAGE.limits.address_space_mb) << 20
    nofile = LANGUAGE.limits.open_files

    def limits() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
        resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, nofile))

    argv = local.resolve(build.run, toolchain, str(tmp_path), str(tmp_path), memory)
    done = subprocess.run(
        argv,
        cwd=tmp_path,
        env=local.run_env(build, str(tmp_path), str(tmp_path)),
        capture_output=True,
        timeout=60,
        preexec_fn=limits,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert memory <= int(done.stdout) <= memory + 64


def test_a_standalone_program_reads_stdin(toolchain, tmp_path):
    build = LANGUAGE.program(
        "const [a, b] = require('fs').readFileSync(0, 'utf8').trim().split(/\\s+/).map(BigInt)\n"
        "console.log(String(a + b))\n"
    )
    done = local.compile_build(build, str(tmp_path), toolchain, str(tmp_path))
    assert done.ok, done.diagnostics
    argv = local.resolve(build.run, toolchain, str(tmp_path), str(tmp_path), 256)
    done = subprocess.run(argv, cwd=tmp_path, input=b"2 40\n", capture_output=True, timeout=60)
    assert done.stdout == b"42\n", done.stderr


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
        parts = _parts(attack["prompt"], attack["response"], attack["tests"])
        assert attack["response"] not in "\n".join(LANGUAGE.harness(parts).files.values())
    assert len({a["name"] for a in ATTACKS}) == len(ATTACKS)


@pytest.mark.parametrize("row", [0, 22, 32, 38, 95, 111, 137, 114])
def test_humanevalpack_rows(row, toolchain, tmp_path):
    if not HUMANEVALPACK.exists():
        unavailable(
            f"{HUMANEVALPACK} is absent: the shared reference data is not beside the checkout"
        )
    with HUMANEVALPACK.open() as f:
        data = [json.loads(line) for line in f][row]
    for variant, expected in (("canonical_solution", True), ("buggy_solution", False)):
        parts = ProgramParts(
            prompt=data["prompt"], code=data["prompt"] + data[variant], tests=data["test"]
        )
        ok, why = bridged(parts, toolchain, str(tmp_path / variant))
        assert ok is expected, (variant, why)


# --- any text: the readers answer for every prompt and completion ----------------------
#
# The shared strategies and checks are tests/graders/reader_fuzz.py's; each example
# below is an input that once escaped a reader as a crash of ours or took it past the
# grader's deadline (an infra_timeout, ours, that the candidate's text caused).

_ROWS = humanevalpack("js")
#: A row the bridge serves (None without ../shared/data: the candidate test is unavailable).
_ROW = _ROWS[0] if _ROWS else None
#: A lone surrogate (JSON's "\ud800"): the build's files could not be written.
SURROGATE = "\ud800"


@fuzz_settings()
@given(TARGETS["javascript.mask"].strategy)
@example("`${" * 5_000)
def test_mask_keeps_the_offsets_of_any_text(args):
    TARGETS["javascript.mask"].check(args)


@fuzz_settings()
@given(TARGETS["javascript.defines"].strategy)
@example(("\n" * 20_000, "f"))
@example(("//\n" * 10_000, "f"))
def test_defines_answers_for_any_code(args):
    TARGETS["javascript.defines"].check(args)


@fuzz_settings()
@given(TARGETS["javascript.declared"].strategy)
@example("function f(a) {" + " " * 5_000)
def test_declared_reads_any_prompt_or_refuses_the_task(args):
    TARGETS["javascript.declared"].check(args)


@fuzz_settings()
@given(TARGETS["javascript.candidate"].strategy)
@example((_ROW, SURROGATE, True))
def test_candidate_builds_any_completion_or_blames_the_candidate(args):
    require_data(TARGETS["javascript.candidate"])
    TARGETS["javascript.candidate"].check(args)


@fuzz_settings()
@given(TARGETS["javascript.candidate_of_any_task"].strategy)
@example(("/* \ud800 */\nconst f = (a) => {", "", "", True))
@example(("/* \ud800 */\nconst f = (a) => {", "return 1;", "", False))
@example(("const f = (a) => {", SURROGATE, "", False))
def test_candidate_of_any_task_blames_the_task_or_the_candidate_only(args):
    TARGETS["javascript.candidate_of_any_task"].check(args)


@fuzz_settings()
@given(TARGETS["javascript.harness"].strategy)
@example(("const f = (a) => {", "/* \ud800 */", ""))
@example(("\n" * 5_000 + "function f(a) {", "", ""))
def test_harness_reads_any_task_or_refuses_it(args):
    TARGETS["javascript.harness"].check(args)


@fuzz_settings()
@given(TARGETS["javascript.program"].strategy)
@example('const s = "' + SURROGATE + '";')
def test_program_builds_any_code_or_blames_the_candidate(args):
    TARGETS["javascript.program"].check(args)


@pytest.mark.parametrize(
    "read",
    [
        pytest.param(lambda: LANGUAGE.defines("\n" * 200_000, "f"), id="defines over empty lines"),
        pytest.param(
            lambda: LANGUAGE.defines("//\n" * 100_000, "f"), id="defines over comment lines"
        ),
    ],
)
def test_reading_long_text_takes_linear_time(read):
    # Each was quadratic or worse: seconds at 50 KB, minutes at a few hundred.
    start = time.process_time()
    read()
    assert time.process_time() - start < 5.0
