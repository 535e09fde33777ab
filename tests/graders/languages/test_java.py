"""The Java language: reading prompts, the builds it makes, its runtime's codec, its attacks.

Nothing here needs the sandbox: builds are compiled and run as local
subprocesses (:mod:`arbiter.graders.languages.local`), the candidate's and the
harness's joined by a socket pair on descriptor 3. Tests that compile need a JDK
(javac and java); each javac takes a second or more, so whole sessions are slow.
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
from arbiter.graders.languages.base import Build, ProgramParts, Toolchain, UnsupportedTask
from arbiter.graders.languages.java import (
    BRIDGE_CLASSES,
    BRIDGE_DIR,
    CLASSES,
    DISPATCH,
    JAVAC,
    LANGUAGE,
    RUN_FLAGS,
    RUNTIME,
    mask,
)
from arbiter.graders.languages.wire import Char, Tuple
from tests.graders.languages import local_runs
from tests.graders.reader_fuzz import TARGETS, fuzz_settings, humanevalpack, require_data
from tests.strictness import unavailable

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
HUMANEVALPACK = ROOT.parent / "shared" / "data" / "humanevalpack_java.jsonl"
RUNTIME_SOURCE = (Path(local.__file__).with_name("runtime") / RUNTIME).read_text(encoding="utf-8")


def _attacks() -> list[dict[str, str]]:
    spec = importlib.util.spec_from_file_location("attacks_java", HERE / "attacks_java.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    found: list[dict[str, str]] = module.ATTACKS
    return found


ATTACKS = _attacks()

PROMPT = """import java.util.*;
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
TESTS = """public class Main {
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
BODY = """        long sumMarker7f3a = 0;
        for (int x : xs) sumMarker7f3a += x;
        return sumMarker7f3a;
    }
}
"""


def _parts(prompt: str = PROMPT, body: str = BODY, tests: str = TESTS) -> ProgramParts:
    name = LANGUAGE.declared(ProgramParts(prompt=prompt, code="", tests=tests))[0].name
    continued = not LANGUAGE.defines(body, name)
    code = prompt + body if continued else body
    return ProgramParts(prompt=prompt, code=code, tests=tests, continued=continued)


# --- reading Java -------------------------------------------------------------------


def test_mask_blanks_comments_and_literals_and_keeps_offsets():
    src = (
        'int a = 1; // c {\nchar q = \'{\'; String s = "}\\"{";\n/* { */ int b;\n'
        'String t = """\n  { text block }\n  """;\n'
    )
    masked = mask(src)
    assert len(masked) == len(src)
    assert masked.count("\n") == src.count("\n")
    assert "{" not in masked and "}" not in masked
    assert "int a = 1;" in masked and "int b;" in masked


def test_declared_reads_the_open_method():
    [d] = LANGUAGE.declared(ProgramParts(prompt=PROMPT, code="", tests=TESTS))
    assert d.name == "total"
    assert d.returns == "long"
    assert d.params == (("xs", "List<Integer>"),)
    assert d.header == "public long total(List<Integer> xs)"


@pytest.mark.parametrize(
    ("header", "name", "params", "returns"),
    [
        (
            "public boolean hasCloseElements(List<Double> numbers, double threshold) {",
            "hasCloseElements",
            (("numbers", "List<Double>"), ("threshold", "double")),
            "boolean",
        ),
        (
            "public List<List<Integer>> getRow(List<List<Integer>> lst, int x) {",
            "getRow",
            (("lst", "List<List<Integer>>"), ("x", "int")),
            "List<List<Integer>>",
        ),
        (
            "public Map<String, Integer> histogram(String test) {",
            "histogram",
            (("test", "String"),),
            "Map<String, Integer>",
        ),
        (
            "public List<Optional<Integer>> largestSmallestIntegers(List<Integer> lst){",
            "largestSmallestIntegers",
            (("lst", "List<Integer>"),),
            "List<Optional<Integer>>",
        ),
        (
            "public Optional<String> stringToMd5(String text) throws NoSuchAlgorithmException {",
            "stringToMd5",
            (("text", "String"),),
            "Optional<String>",
        ),
        (
            "public boolean checkDictCase(Map<Object, Object> dict) {",
            "checkDictCase",
            (("dict", "Map<Object, Object>"),),
            "boolean",
        ),
        (
            "static int[] twice(final int[] xs, char c, String... rest) {",
            "twice",
            (("xs", "int[]"), ("c", "char"), ("rest", "String...")),
            "int[]",
        ),
        (
            "public <T extends Comparable<T>> T largest(java.util.List<T> xs) {",
            "largest",
            (("xs", "java.util.List<T>"),),
            "T",
        ),
        (
            '@SuppressWarnings("unchecked")\n    public void show(Map.Entry<String, Long> e) {',
            "show",
            (("e", "Map.Entry<String, Long>"),),
            "void",
        ),
    ],
)
def test_declared_shapes(header, name, params, returns):
    prompt = "import java.util.*;\n\nclass Solution {\n    /** doc { */\n    " + header + "\n"
    [d] = LANGUAGE.declared(ProgramParts(prompt=prompt, code="", tests=""))
    assert (d.name, d.params, d.returns) == (name, params, returns)


@pytest.mark.parametrize(
    ("prompt", "why"),
    [
        (
            "class Solution {\n    static class Pair { int a; }\n    public Pair f(int x) {\n",
            "Pair",
        ),
        ("class Solution {\n    public int f(Scanner in) {\n", "Scanner"),
        ("class Solution {\n    public int done(int x) { return x; }\n}\n", "open method"),
        ("public int f(int x) {\n", "not declared in a class"),
        ("class Solution {\n    public int f(int x) {\n        if (x > 0) {\n", "open method"),
    ],
)
def test_declared_refuses_what_cannot_cross_the_bridge(prompt, why):
    with pytest.raises(UnsupportedTask, match=why):
        LANGUAGE.declared(ProgramParts(prompt=prompt, code="", tests=""))


def test_a_nested_class_is_named_by_its_binary_name():
    from arbiter.graders.languages.java import _open_method

    prompt = "class Outer {\n    static class Solution {\n        public int f(int x) {\n"
    assert _open_method(prompt).class_name == "Outer$Solution"


@pytest.mark.parametrize(
    ("code", "expected"),
    [
        ("class Solution { public long total(List<Integer> xs) { return 0; } }", True),
        (
            "class S {\n  static long total (final List<Integer> xs)\n  throws Exception\n  {\n "
            " }\n}",
            True,
        ),
        ("public long total(List<Integer> xs) { return 0; }", True),  # put in the prompt's class
        ("class A { void g() { if (total(v)) { } return total(w); } }", False),
        ("class A { abstract long total(List<Integer> xs); }", False),
        ("// class A { long total(List<Integer> xs) { } }\n", False),
        ('class A { String s = "long total(List<Integer> xs) {"; }', False),
        ("class A { long totally(List<Integer> xs) { return 0; } }", False),
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
    source = build.files["Main.java"]
    assert set(build.files) == {"Main.java"}  # the bridge is prepared once, in {cache}
    assert "return 2 * x;" in source  # the prompt's helper
    assert (
        'return ArbiterBridge.call("total", new Object(){}.getClass().getEnclosingMethod(), '
        "new Object[]{xs});"
    ) in source
    assert source.index("ArbiterBridge.call") < source.index("public class Main")
    assert build.run[-1] == "Main" and build.run[0] == "java"
    assert "--add-opens" in build.run
    assert build.artifacts == (CLASSES,)


def test_harness_of_a_whole_program_answer_is_the_same():
    whole = (
        "import java.util.*;\nclass Solution {\n    long total(List<Integer> v) { return 42; }\n}\n"
    )
    parts = _parts(body=whole)
    assert not parts.continued and parts.code == whole
    assert LANGUAGE.harness(parts) == LANGUAGE.harness(_parts())


def test_harness_makes_the_prompts_public_class_package_private_beside_public_tests():
    prompt = PROMPT.replace("class Solution {", "public class Solution {")
    source = LANGUAGE.harness(_parts(prompt=prompt)).files["Main.java"]
    assert "public class Solution" not in source and "class Solution {" in source
    assert "public class Main" in source


def test_a_void_method_is_called_without_return():
    prompt = "import java.util.*;\nclass Solution {\n    public static void show(int[] xs) {\n"
    source = LANGUAGE.harness(_parts(prompt=prompt, tests="public class Main {}\n")).files[
        "Main.java"
    ]
    assert '        ArbiterBridge.call("show"' in source
    assert "return ArbiterBridge" not in source


def test_candidate_build_runs_the_dispatcher_and_adds_the_prompts_imports():
    whole = "class Solution {\n    long total(List<Integer> v) { return 42; }\n}\n"
    build = LANGUAGE.candidate(_parts(body=whole))
    assert build.files["Candidate.java"].startswith("import java.util.*;\nimport java.lang.*;\n")
    assert 'ArbiterBridge.serve("Solution");' in build.files[f"{DISPATCH}.java"]
    assert build.run[-1] == DISPATCH
    assert build.compile == ((*JAVAC, "-cp", BRIDGE_CLASSES, f"{DISPATCH}.java", "Candidate.java"),)
    assert build.run[build.run.index("-cp") + 1] == f"{CLASSES}:{BRIDGE_CLASSES}"
    assert build.flags == (BRIDGE_DIR,)
    assert "-proc:none" in build.compile[0]
    assert "-Xmx{memory_mb}m" in build.run


def test_a_method_without_its_class_goes_in_the_prompts_class():
    alone = "import java.util.stream.*;\n\npublic long total(List<Integer> v) { return 42; }\n"
    parts = _parts(body=alone)
    assert not parts.continued
    source = LANGUAGE.candidate(parts).files["Candidate.java"]
    assert source.startswith("import java.util.stream.*;\nimport java.util.*;\n")
    assert source.count("import java.util.stream.*;") == 1
    assert "return 2 * x;" in source  # the prompt's helper, before the method
    assert source.rstrip().endswith("public long total(List<Integer> v) { return 42; }\n}")


def test_candidate_build_names_the_file_after_a_public_class():
    whole = (
        "import java.util.*;\npublic class Solution {\n    long total(List<Integer> v) "
        "{ return 1; }\n    public static void main(String[] a) { }\n}\n"
    )
    assert "Solution.java" in LANGUAGE.candidate(_parts(body=whole)).files


def test_program_build_runs_the_class_with_main():
    code = (
        "import java.util.*;\npublic class Prog {\n    public static void main(String[] a) {}\n}\n"
    )
    build = LANGUAGE.program(code)
    assert build.files == {"Prog.java": code}
    assert build.run[-1] == "Prog"
    assert RUNTIME not in build.files


def test_naive_build_is_the_code_then_the_tests():
    parts = _parts()
    build = LANGUAGE.naive(parts)
    assert build.files == {"Main.java": parts.code.rstrip() + "\n\n" + TESTS}
    assert build.run[-1] == "Main"


# --- compiled: fixtures -------------------------------------------------------------


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> str:
    """The ``{cache}`` of this module's builds: where the bridge is prepared."""
    return str(tmp_path_factory.mktemp("java-cache"))


@pytest.fixture(scope="module")
def toolchain(cache: str) -> Toolchain:
    found = LANGUAGE.find_toolchain()
    if found is None:
        unavailable("a JDK (javac and java) is not installed: the Java builds cannot run here")
    return LANGUAGE.prepare(found, cache)


def test_prepare_compiles_the_bridge_once_per_source_and_toolchain(toolchain, tmp_path):
    cache = str(tmp_path)
    prepared = LANGUAGE.prepare(toolchain, cache)
    target = Path(cache, BRIDGE_DIR)
    assert (target / "ArbiterBridge.class").is_file()
    assert str(Path(cache).resolve()) in prepared.roots
    made = (target / "ArbiterBridge.class").stat().st_mtime_ns
    LANGUAGE.prepare(toolchain, cache)
    assert (target / "ArbiterBridge.class").stat().st_mtime_ns == made  # kept
    (target / "stamp").write_text("another JDK\n")
    LANGUAGE.prepare(toolchain, cache)
    assert (target / "stamp").read_text() != "another JDK\n"  # compiled anew
    assert (target / "ArbiterBridge.class").is_file()


def _cache(toolchain: Toolchain) -> str:
    return toolchain.roots[-1]  # prepare() puts the cache last among the roots


def _compile(build: Build, out: str, toolchain: Toolchain) -> None:
    done = local.compile_build(build, out, toolchain, _cache(toolchain))
    assert done.ok, done.diagnostics


def bridged(parts: ProgramParts, toolchain: Toolchain, root: str) -> tuple[bool, str]:
    return local_runs.bridged(
        LANGUAGE, parts, toolchain, root, cache=_cache(toolchain), timeout_s=90
    )


def naive(parts: ProgramParts, toolchain: Toolchain, root: str) -> tuple[bool, str]:
    return local_runs.naive(LANGUAGE, parts, toolchain, root, cache=_cache(toolchain), timeout_s=90)


# --- compiled: the codec against wire.py ----------------------------------------------

#: (Java type, value): wire.encode(value) must convert to the type and re-encode to the
#: same bytes.
ROUND_TRIPS: list[tuple[str, Any]] = [
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
CONVERTED: list[tuple[str, bytes, bytes]] = [
    ("double", b"i1;", wire.encode(1.0)),
    ("Object", b"t2:i1;s1:a", wire.encode([1, "a"])),
    ("int[]", b"t2:i1;i2;", wire.encode([1, 2])),
    ("Integer", b"u", b"n"),
    ("double", b"f3FF0000000000000", wire.encode(1.0)),
]

#: (Java type, payload bytes): each must be refused, never decoded.
REFUSED: list[tuple[str, bytes]] = [
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

ECHO = r"""
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


def _echo(toolchain: Toolchain, out: str, types: list[str], payloads: list[bytes]) -> list[bytes]:
    order = sorted(set(types))
    cases = "\n".join(f"    static void t{k}({t} x) {{}}" for k, t in enumerate(order))
    build = Build(
        files={RUNTIME: RUNTIME_SOURCE, "Echo.java": ECHO.replace("%CASES%", cases)},
        compile=((*JAVAC, RUNTIME, "Echo.java"),),
        artifacts=(CLASSES,),
        run=("java", "-cp", CLASSES, "Echo"),
    )
    _compile(build, out, toolchain)
    stdin = b"".join(
        wire.frame(b"i%d;" % order.index(t) + p) for t, p in zip(types, payloads, strict=True)
    )
    argv = local.resolve(("java", *RUN_FLAGS, "-cp", CLASSES, "Echo"), toolchain, out, out, 256)
    done = subprocess.run(argv, cwd=out, input=stdin, capture_output=True, timeout=120)
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


@pytest.mark.slow
def test_runtime_codec_round_trips_wire_values(toolchain, tmp_path):
    types = [t for t, _ in ROUND_TRIPS] + [t for t, _, _ in CONVERTED] + [t for t, _ in REFUSED]
    payloads = (
        [wire.encode(v) for _, v in ROUND_TRIPS]
        + [p for _, p, _ in CONVERTED]
        + [p for _, p in REFUSED]
    )
    replies = _echo(toolchain, str(tmp_path), types, payloads)
    for (jtype, value), sent, got in zip(ROUND_TRIPS, payloads, replies, strict=False):
        assert got == sent, (jtype, value, got)
        assert _same(wire.decode(got), value)
    rest = replies[len(ROUND_TRIPS) :]
    for (jtype, payload, expected), got in zip(CONVERTED, rest, strict=False):
        assert got == expected, (jtype, payload, got)
    for (jtype, payload), got in zip(REFUSED, rest[len(CONVERTED) :], strict=True):
        assert got.startswith(b"E"), (jtype, payload, got)


# --- compiled: whole sessions -----------------------------------------------------------


@pytest.mark.slow
def test_a_right_answer_passes_and_a_wrong_one_fails(toolchain, tmp_path):
    ok, why = bridged(_parts(), toolchain, str(tmp_path / "right"))
    assert ok, why
    wrong = BODY.replace("return sumMarker7f3a;", "return sumMarker7f3a + 1;")
    ok, why = bridged(_parts(body=wrong), toolchain, str(tmp_path / "wrong"))
    assert not ok, why


@pytest.mark.slow
def test_a_whole_class_with_its_own_main_static_method_and_prints_still_serves(toolchain, tmp_path):
    whole = (
        "import java.util.*;\nimport java.util.stream.*;\n\npublic class Solution {\n"
        "    public static long total(List<Integer> xs) {\n"
        '        System.out.println("debug: " + xs);\n'
        "        return xs.stream().mapToLong(Integer::longValue).sum();\n    }\n"
        "    public long total(List<Integer> xs, int unused) { return -1; }\n"
        '    public static void main(String[] a) { System.out.println("mine"); System.exit(1); }\n'
        "}\n"
    )
    ok, why = bridged(_parts(body=whole), toolchain, str(tmp_path))
    assert ok, why


@pytest.mark.slow
def test_a_method_alone_is_served_from_the_prompts_class(toolchain, tmp_path):
    alone = (
        "public long total(List<Integer> v) {\n    return v.stream().mapToLong(x -> x).sum();\n}\n"
    )
    ok, why = bridged(_parts(body=alone), toolchain, str(tmp_path))
    assert ok, why


@pytest.mark.slow
def test_rich_types_cross_both_ways(toolchain, tmp_path):
    prompt = (
        "import java.util.*;\n\nclass Solution {\n"
        "    public Map<String, List<Optional<Long>>> shape(Object o, char c, double[] ds, "
        "Map<Character, Integer> m) {\n"
    )
    body = (
        "        Map<String, List<Optional<Long>>> out = new TreeMap<>();\n"
        "        List<Optional<Long>> xs = new ArrayList<>();\n"
        "        xs.add(Optional.empty());\n"
        "        xs.add(Optional.of((long) ds.length + m.get(c) + (o instanceof String ? 1000L :"
        " 0L)));\n"
        '        out.put("\\u00e9" + c, xs);\n        return out;\n    }\n}\n'
    )
    tests = (
        "public class Main {\n    public static void main(String[] args) {\n"
        "        Solution s = new Solution();\n"
        "        Map<Character, Integer> m = new HashMap<>();\n        m.put('z', 40);\n"
        "        Map<String, List<Optional<Long>>> r = s.shape(\"str\", 'z', new double[]{1.5,"
        " -0.0}, m);\n"
        '        if (!r.equals(Map.of("\\u00e9z", Arrays.asList(Optional.empty(),'
        " Optional.of(1042L))))) "
        "throw new AssertionError(r.toString());\n"
        '        if (r.get("\\u00e9z").get(1).get() != 1042L) throw new AssertionError();\n'
        "    }\n}\n"
    )
    ok, why = bridged(_parts(prompt, body, tests), toolchain, str(tmp_path))
    assert ok, why


@pytest.mark.slow
def test_an_exception_fails_even_where_the_tests_would_catch_it(toolchain, tmp_path):
    prompt = "import java.util.*;\n\nclass Solution {\n    public int parse(String s) {\n"
    body = "        return Integer.parseInt(s);\n    }\n}\n"
    tests = (
        "public class Main {\n    public static void main(String[] args) {\n"
        "        Solution s = new Solution();\n        try {\n"
        '            if (s.parse("12") != 12) throw new AssertionError();\n'
        '            s.parse("not a number");\n        } catch (Throwable e) {\n'
        "            return;\n        }\n    }\n}\n"
    )
    ok, why = bridged(_parts(prompt, body, tests), toolchain, str(tmp_path))
    assert not ok and "NumberFormatException" in why, why


@pytest.mark.slow
def test_a_candidate_that_dies_or_answers_the_wrong_type_fails(toolchain, tmp_path):
    dies = "        Runtime.getRuntime().halt(0);\n        return 0;\n    }\n}\n"
    ok, why = bridged(_parts(body=dies), toolchain, str(tmp_path / "dies"))
    assert not ok and "ended before it replied" in why, why
    wrong_type = (
        "import java.util.*;\nclass Solution {\n"
        '    public String total(List<Integer> xs) { return "6"; }\n'
        "    public int helperTwice(int x) { return 2 * x; }\n}\n"
    )
    ok, why = bridged(_parts(body=wrong_type), toolchain, str(tmp_path / "type"))
    assert not ok and "is not a long" in why, why


@pytest.mark.slow
def test_string_identity_survives_the_bridge(toolchain, tmp_path):
    # HumanEvalPack's Java/137 compares strings with ==: decoded strings are interned.
    prompt = (
        "import java.util.*;\n\nclass Solution {\n"
        "    public Optional<Object> pick(Object a, Object b) {\n"
    )
    body = "        return Optional.of(b);\n    }\n}\n"
    tests = (
        "public class Main {\n    public static void main(String[] args) {\n"
        '        if ((String) new Solution().pick(1, "2,3").get() != "2,3") throw new'
        " AssertionError();\n"
        '        if ((int) new Solution().pick("x", 7).get() != 7) throw new AssertionError();\n'
        "    }\n}\n"
    )
    ok, why = bridged(_parts(prompt, body, tests), toolchain, str(tmp_path))
    assert ok, why


@pytest.mark.slow
def test_running_out_of_heap_is_told_as_out_of_memory(toolchain, tmp_path):
    body = (
        "        List<long[]> hog = new ArrayList<>();\n"
        "        while (true) hog.add(new long[1 << 20]);\n    }\n}\n"
    )
    parts = _parts(body=body)
    ok, why = bridged(parts, toolchain, str(tmp_path))
    assert not ok
    assert any(p.search(why) for p in LANGUAGE.out_of_memory), why


def test_the_jvm_starts_within_the_address_space_it_asks_for(toolchain, tmp_path):
    build = LANGUAGE.program(
        "public class Main {\n    public static void main(String[] a) {\n"
        "        System.out.println(Runtime.getRuntime().maxMemory() >> 20);\n    }\n}\n"
    )
    _compile(build, str(tmp_path), toolchain)
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
    assert 200 <= int(done.stdout) <= memory


def test_a_standalone_program_reads_stdin(toolchain, tmp_path):
    build = LANGUAGE.program(
        "import java.util.*;\npublic class Main {\n    public static void main(String[] a) {\n"
        "        Scanner in = new Scanner(System.in);\n"
        "        System.out.println(in.nextLong() + in.nextLong());\n    }\n}\n"
    )
    _compile(build, str(tmp_path), toolchain)
    argv = local.resolve(build.run, toolchain, str(tmp_path), str(tmp_path), 256)
    done = subprocess.run(argv, cwd=tmp_path, input=b"2 40\n", capture_output=True, timeout=60)
    assert done.stdout == b"42\n", done.stderr


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
        parts = _parts(attack["prompt"], attack["response"], attack["tests"])
        assert attack["response"] not in "\n".join(LANGUAGE.harness(parts).files.values())
    assert len({a["name"] for a in ATTACKS}) == len(ATTACKS)


@pytest.mark.slow
@pytest.mark.parametrize("row", [0, 22, 38, 95, 111, 137, 162])
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

_ROWS = humanevalpack("java")
#: A row the bridge serves (None without ../shared/data: the candidate test is unavailable).
_ROW = _ROWS[0] if _ROWS else None
#: A lone surrogate (JSON's "\ud800"): the build's files could not be written.
SURROGATE = "\ud800"


@fuzz_settings()
@given(TARGETS["java.mask"].strategy)
@example('"""' * 5_000)
def test_mask_keeps_the_offsets_of_any_text(args):
    TARGETS["java.mask"].check(args)


@fuzz_settings()
@given(TARGETS["java.defines"].strategy)
@example(("int f() throws" + " " * 5_000, "f"))
def test_defines_answers_for_any_code(args):
    TARGETS["java.defines"].check(args)


@fuzz_settings()
@given(TARGETS["java.declared"].strategy)
@example("class A {\n" + "  " * 3_000 + "int f(int x) {")
def test_declared_reads_any_prompt_or_refuses_the_task(args):
    TARGETS["java.declared"].check(args)


@fuzz_settings()
@given(TARGETS["java.candidate"].strategy)
@example((_ROW, SURROGATE, True))
@example((_ROW, "\n" * 20_000, True))
def test_candidate_builds_any_completion_or_blames_the_candidate(args):
    require_data(TARGETS["java.candidate"])
    TARGETS["java.candidate"].check(args)


@fuzz_settings()
@given(TARGETS["java.candidate_of_any_task"].strategy)
@example(("/* \ud800 */\nclass A { int f() {", "", "", True))
@example(("/* \ud800 */\nclass A { int f() {", "return 1;", "", False))
@example(("class A { int f() {", SURROGATE, "", False))
def test_candidate_of_any_task_blames_the_task_or_the_candidate_only(args):
    TARGETS["java.candidate_of_any_task"].check(args)


@fuzz_settings()
@given(TARGETS["java.harness"].strategy)
@example(("class A { int f() {", "/* \ud800 */", ""))
@example(("class A { int f() {", "public class Main {}\n" * 2_000, ""))
def test_harness_reads_any_task_or_refuses_it(args):
    TARGETS["java.harness"].check(args)


@fuzz_settings()
@given(TARGETS["java.program"].strategy)
@example('class A { String s = "' + SURROGATE + '"; }')
@example("static void main(" * 5_000)
def test_program_builds_any_code_or_blames_the_candidate(args):
    TARGETS["java.program"].check(args)


@pytest.mark.parametrize(
    "read",
    [
        pytest.param(
            lambda: LANGUAGE.program("public class A{}" * 20_000), id="program of many classes"
        ),
        pytest.param(
            lambda: LANGUAGE.program("static void main(" * 20_000), id="program of many mains"
        ),
        pytest.param(
            lambda: LANGUAGE.candidate(
                ProgramParts(
                    prompt="class Solution {\n    int f(int x) {\n",
                    code="class Solution {\n" + "\n" * 200_000,
                    tests="",
                )
            ),
            id="candidate of empty lines",
        ),
    ],
)
def test_reading_long_text_takes_linear_time(read):
    # Each was quadratic or worse: seconds at 50 KB, minutes at a few hundred.
    start = time.process_time()
    read()
    assert time.process_time() - start < 5.0
