"""The Java language: reading prompts, the builds it makes, sessions only Java has.

What every bridged language does alike (the reference task's builds, whole sessions,
the attacks, HumanEvalPack rows, the codec, the readers under fuzzing) is tested in
``test_every_language.py``, Java's row of it (:data:`harness.JAVA`) holding the
reference task used here. Nothing here needs the sandbox: builds are compiled and run
as local subprocesses (:mod:`arbiter.graders.languages.local`), the candidate's and the
harness's joined by a socket pair on descriptor 3. Tests that compile need a JDK
(javac and java); each javac takes a second or more, so whole sessions are slow.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from arbiter.graders.languages.base import ProgramParts, Toolchain, UnsupportedTask
from arbiter.graders.languages.java import (
    BRIDGE_CLASSES,
    BRIDGE_DIR,
    CLASSES,
    DISPATCH,
    JAVAC_ARCHIVE,
    JAVAC_SHARED,
    LANGUAGE,
    RUNTIME,
    mask,
)
from tests.graders.languages.harness import JAVA, JAVA_PROMPT, JAVA_TESTS, Rig

PROMPT, TESTS = JAVA_PROMPT, JAVA_TESTS
_parts = JAVA.parts


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


def test_harness_holds_the_prompt_a_stub_and_the_tests():
    build = LANGUAGE.harness(_parts())
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
    assert build.compile == (
        (*JAVAC_SHARED, "-cp", BRIDGE_CLASSES, f"{DISPATCH}.java", "Candidate.java"),
    )
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


# --- compiled -------------------------------------------------------------------------


@pytest.fixture(scope="module")
def rig(tmp_path_factory: pytest.TempPathFactory) -> Rig:
    return JAVA.rig(tmp_path_factory)


@pytest.fixture(scope="module")
def toolchain(rig: Rig) -> Toolchain:
    return rig.toolchain


def test_prepare_compiles_the_bridge_once_per_source_and_toolchain(toolchain, tmp_path):
    cache = str(tmp_path)
    prepared = LANGUAGE.prepare(toolchain, cache)
    target = Path(cache, BRIDGE_DIR)
    assert (target / "ArbiterBridge.class").is_file()
    assert str(Path(cache).resolve()) in prepared.roots
    # javac's classes are archived, and a build's javac maps the archive: with
    # -Xshare:on a JVM that cannot use it refuses to start.
    assert (target / JAVAC_ARCHIVE).stat().st_size > 0
    (tmp_path / "A.java").write_text("class A {}\n")
    words = [w.replace("{cache}", cache) for w in JAVAC_SHARED]
    words[0] = toolchain.paths["javac"]
    done = subprocess.run(
        [*words, "-J-Xshare:on", "A.java"], cwd=tmp_path, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert (tmp_path / CLASSES / "A.class").is_file()
    made = (target / "ArbiterBridge.class").stat().st_mtime_ns
    LANGUAGE.prepare(toolchain, cache)
    assert (target / "ArbiterBridge.class").stat().st_mtime_ns == made  # kept
    (target / "stamp").write_text("another JDK\n")
    LANGUAGE.prepare(toolchain, cache)
    assert (target / "stamp").read_text() != "another JDK\n"  # compiled anew
    assert (target / "ArbiterBridge.class").is_file()


@pytest.mark.slow
def test_a_whole_class_with_its_own_main_static_method_and_prints_still_serves(rig, tmp_path):
    whole = (
        "import java.util.*;\nimport java.util.stream.*;\n\npublic class Solution {\n"
        "    public static long total(List<Integer> xs) {\n"
        '        System.out.println("debug: " + xs);\n'
        "        return xs.stream().mapToLong(Integer::longValue).sum();\n    }\n"
        "    public long total(List<Integer> xs, int unused) { return -1; }\n"
        '    public static void main(String[] a) { System.out.println("mine"); System.exit(1); }\n'
        "}\n"
    )
    ok, why = rig.bridged(_parts(body=whole), str(tmp_path))
    assert ok, why


@pytest.mark.slow
def test_a_method_alone_is_served_from_the_prompts_class(rig, tmp_path):
    alone = (
        "public long total(List<Integer> v) {\n    return v.stream().mapToLong(x -> x).sum();\n}\n"
    )
    ok, why = rig.bridged(_parts(body=alone), str(tmp_path))
    assert ok, why


@pytest.mark.slow
def test_rich_types_cross_both_ways(rig, tmp_path):
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
    ok, why = rig.bridged(_parts(prompt, body, tests), str(tmp_path))
    assert ok, why


@pytest.mark.slow
def test_string_identity_survives_the_bridge(rig, tmp_path):
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
    ok, why = rig.bridged(_parts(prompt, body, tests), str(tmp_path))
    assert ok, why
