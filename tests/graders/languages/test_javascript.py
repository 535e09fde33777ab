"""The JavaScript language: reading prompts, the builds it makes, what only it does.

What every bridged language does alike (the reference task's builds, whole sessions,
the attacks, HumanEvalPack rows, the codec's round trips, the readers under fuzzing)
is tested in ``test_every_language.py``, JavaScript's row of it
(:data:`harness.JAVASCRIPT`) holding the reference task used here. Nothing here needs
the sandbox: builds are run as local subprocesses
(:mod:`arbiter.graders.languages.local`), the candidate's and the harness's joined by
a socket pair on descriptor 3. Tests that run scripts need node.
"""

from __future__ import annotations

import math
import struct
from typing import Any

import pytest

from arbiter.graders.languages import wire
from arbiter.graders.languages.base import ProgramParts, Toolchain, UnsupportedTask
from arbiter.graders.languages.javascript import BRIDGE, LANGUAGE, RUNTIME, mask
from arbiter.graders.languages.wire import UNDEFINED
from tests.graders.languages.harness import JAVASCRIPT, JS_BODY, JS_PROMPT, JS_TESTS, Rig, node

PROMPT, TESTS, BODY = JS_PROMPT, JS_TESTS, JS_BODY
_parts = JAVASCRIPT.parts


# --- reading JavaScript ----------------------------------------------------------------


def test_mask_blanks_comments_and_literals_and_keeps_offsets():
    src = 'let a = 1 // c {\nlet q = \'{\', s = "}\\"{"\n/* { */ let t = `x\n{ ${a} }`\n'
    masked = mask(src)
    assert len(masked) == len(src)
    assert masked.count("\n") == src.count("\n")
    assert "{" not in masked and "}" not in masked
    assert "let a = 1" in masked


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


def test_harness_holds_the_prompt_a_stub_and_the_tests():
    build = LANGUAGE.harness(_parts())
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


# --- running --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def rig(tmp_path_factory: pytest.TempPathFactory) -> Rig:
    return JAVASCRIPT.rig(tmp_path_factory)


@pytest.fixture(scope="module")
def toolchain(rig: Rig) -> Toolchain:
    return rig.toolchain


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
    lines = node(toolchain, script).decode().split()
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
    assert node(toolchain, script).decode().split()[-1] == "ok"


def test_a_whole_script_that_prints_and_declares_a_function_serves(rig, tmp_path):
    whole = (
        "console.log('debug output'); console.error('noise')\n"
        "function total(xs) { return xs.reduce((a, b) => a + b, 0) }\n"
        "console.assert = () => {}\n"
    )
    ok, why = rig.bridged(_parts(body=whole), str(tmp_path))
    assert ok, why


def test_values_keep_their_javascript_identity(rig, tmp_path):
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
    ok, why = rig.bridged(_parts(prompt, body, tests), str(tmp_path))
    assert ok, why


def test_an_async_prompt_gets_a_promise(rig, tmp_path):
    prompt = "const later = async (x) => {\n"
    body = "  return x * 2\n}\n"
    tests = "later(21).then((v) => console.assert(v === 42))\n"
    ok, why = rig.bridged(_parts(prompt, body, tests), str(tmp_path))
    assert ok, why
