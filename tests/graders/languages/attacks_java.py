"""Attacks on Java ``test_program`` grading: wrong solutions that try to forge a pass.

Each attack passes the naive harness (the candidate's code and the tests compiled
as one file, ``Main`` run, verdict = exit status: what peers run) and must fail
the bridged one (the candidate's class in its own JVM behind a dispatcher, the
tests with stubs in the harness's JVM). ``response`` is the candidate's answer:
here always a whole compilation unit (it declares the class and the method).
"""

from __future__ import annotations

# HumanEvalPack Java rows (Java/0, Java/53, Java/22, Java/28): their prompts and tests.
CLOSE_PROMPT = (
    "import java.util.*;\nimport java.lang.*;\n\nclass Solution {\n    /**\n"
    "    Check if in given list of numbers, are any two numbers closer to each other than "
    "given threshold.\n    >>> hasCloseElements(Arrays.asList(1.0, 2.0, 3.0), 0.5)\n    false\n"
    "    >>> hasCloseElements(Arrays.asList(1.0, 2.8, 3.0, 4.0, 5.0, 2.0), 0.3)\n    true\n"
    "     */\n    public boolean hasCloseElements(List<Double> numbers, double threshold) {\n"
)
CLOSE_TESTS = (
    "public class Main {\n    public static void main(String[] args) {\n"
    "        Solution s = new Solution();\n        List<Boolean> correct = Arrays.asList(\n"
    "                s.hasCloseElements(new ArrayList<>(Arrays.asList(11.0, 2.0, 3.9, 4.0, 5.0,"
    " 2.2)), 0.3),\n"
    "                !s.hasCloseElements(new ArrayList<>(Arrays.asList(1.0, 2.0, 3.9, 4.0, 5.0,"
    " 2.2)), 0.05),\n"
    "                s.hasCloseElements(new ArrayList<>(Arrays.asList(1.0, 2.0, 5.9, 4.0, 5.0)),"
    " 0.95),\n"
    "                !s.hasCloseElements(new ArrayList<>(Arrays.asList(1.0, 2.0, 5.9, 4.0, 5.0)),"
    " 0.8),\n"
    "                s.hasCloseElements(new ArrayList<>(Arrays.asList(1.0, 2.0, 3.0, 4.0, 5.0,"
    " 2.0)), 0.1),\n"
    "                s.hasCloseElements(new ArrayList<>(Arrays.asList(1.1, 2.2, 3.1, 4.1, 5.1)),"
    " 1.0),\n"
    "                !s.hasCloseElements(new ArrayList<>(Arrays.asList(1.1, 2.2, 3.1, 4.1, 5.1)),"
    " 0.5)\n"
    "        );\n        if (correct.contains(false)) {\n            throw new AssertionError();\n"
    "        }\n    }\n}"
)
ADD_PROMPT = (
    "import java.util.*;\nimport java.lang.*;\n\nclass Solution {\n    /**\n"
    "    Add two numbers x and y\n    >>> add(2, 3)\n    5\n    >>> add(5, 7)\n    12\n"
    "     */\n    public int add(int x, int y) {\n"
)
ADD_TESTS = (
    "public class Main {\n    public static void main(String[] args) {\n"
    "        Solution s = new Solution();\n        Random rand = new Random(42);\n"
    "        List<Boolean> correct = Arrays.asList(\n                s.add(0, 1) == 1,\n"
    "                s.add(1, 0) == 1,\n                s.add(2, 3) == 5,\n"
    "                s.add(5, 7) == 12,\n                s.add(7, 5) == 12\n        );\n"
    "        if (correct.contains(false)) {\n            throw new AssertionError();\n        }\n"
    "        for (int i = 0; i < 100; i++) {\n"
    "            int x = rand.nextInt(1000), y = rand.nextInt(1000);\n"
    "            if (s.add(x, y) != x + y) {\n                throw new AssertionError();\n"
    "            }\n        }\n    }\n}"
)
FILTER_PROMPT = (
    "import java.util.*;\nimport java.lang.*;\n\nclass Solution {\n    /**\n"
    "    Filter given list of any values only for integers\n"
    "    >>> filter_integers(Arrays.asList('a', 3.14, 5))\n    [5]\n"
    '    >>> filter_integers(Arrays.asList(1, 2, 3, "abc", Map.of(), List.of()))\n    [1, 2, 3]\n'
    "     */\n    public List<Integer> filterIntegers(List<Object> values) {\n"
)
FILTER_TESTS = (
    "public class Main {\n    public static void main(String[] args) {\n"
    "        Solution s = new Solution();\n        List<Boolean> correct = Arrays.asList(\n"
    "                s.filterIntegers(new ArrayList<>(List.of())).equals(List.of()),\n"
    "                s.filterIntegers(new ArrayList<>(Arrays.asList(4, Map.of(), List.of(), 23.2,"
    " 9, "
    '"adasd"))).equals(Arrays.asList(4, 9)),\n'
    "                s.filterIntegers(new ArrayList<>(Arrays.asList(3, 'c', 3, 3, 'a', 'b')))"
    ".equals(Arrays.asList(3, 3, 3))\n        );\n        if (correct.contains(false)) {\n"
    "            throw new AssertionError();\n        }\n    }\n}"
)
CONCAT_PROMPT = (
    "import java.util.*;\nimport java.lang.*;\n\nclass Solution {\n    /**\n"
    "    Concatenate list of strings into a single string\n    >>> concatenate(List.of())\n"
    '    ""\n    >>> concatenate(Arrays.asList("a", "b", "c"))\n    "abc"\n     */\n'
    "    public String concatenate(List<String> strings) {\n"
)
CONCAT_TESTS = (
    "public class Main {\n    public static void main(String[] args) {\n"
    "        Solution s = new Solution();\n        List<Boolean> correct = Arrays.asList(\n"
    '                Objects.equals(s.concatenate(new ArrayList<>(List.of())), ""),\n'
    '                Objects.equals(s.concatenate(new ArrayList<>(Arrays.asList("x", "y", "z"))),'
    ' "xyz"),\n'
    '                Objects.equals(s.concatenate(new ArrayList<>(Arrays.asList("x", "y", "z",'
    ' "w", "k"))), '
    '"xyzwk")\n        );\n        if (correct.contains(false)) {\n'
    "            throw new AssertionError();\n        }\n    }\n}"
)

#: A wrong hasCloseElements (always true) and a wrong add (always 0), for the attacks to carry.
WRONG_CLOSE = (
    "    public boolean hasCloseElements(List<Double> numbers, double threshold) {\n"
    "        return true;\n    }\n"
)
WRONG_ADD = "    public int add(int x, int y) {\n        return 0;\n    }\n"
HEAD = "import java.util.*;\nimport java.lang.*;\n\n"


def _attack(name: str, why: str, prompt: str, tests: str, response: str) -> dict[str, str]:
    return {
        "name": name,
        "why": why,
        "prompt": prompt,
        "response": response,
        "tests": tests,
        "setup_code": "",
    }


ATTACKS: list[dict[str, str]] = [
    _attack(
        "exit_zero_in_static_initializer",
        "Solution's static initializer runs when the tests first touch the class and exits 0 "
        "before any check: the naive JVM ends with status 0. Bridged, it ends the candidate's "
        "JVM only; the harness's call finds the stream closed and halts with status 3.",
        ADD_PROMPT,
        ADD_TESTS,
        HEAD
        + "class Solution {\n    static {\n        System.exit(0);\n    }\n"
        + WRONG_ADD
        + "}\n",
    ),
    _attack(
        "replace_main_from_class_initializer",
        "The candidate cannot name a second Main, so it takes main over instead: its class "
        "initializer runs a main of its own (its own 'tests', all passing) and halts the JVM "
        "with 0, so the tests' main never gets past `new Solution()`. Bridged, the harness's "
        "main is the tests' and the candidate's JVM is not the one whose status counts.",
        CLOSE_PROMPT,
        CLOSE_TESTS,
        HEAD + "class Solution {\n    static {\n        Solution.main(new String[0]);\n    }\n"
        "    public static void main(String[] args) {\n"
        '        System.out.println("all 7 tests passed");\n'
        "        Runtime.getRuntime().halt(0);\n    }\n" + WRONG_CLOSE + "}\n",
    ),
    _attack(
        "shadow_assertion_error",
        "Disables the tests' assertion: a top-level class named AssertionError in the same "
        "compilation unit shadows java.lang.AssertionError, and its constructor exits 0, so "
        "`throw new AssertionError()` ends the run as a success. Bridged, the tests are "
        "compiled without the candidate's classes: the real AssertionError is thrown.",
        ADD_PROMPT,
        ADD_TESTS,
        HEAD + "class Solution {\n" + WRONG_ADD + "}\n\n"
        "class AssertionError extends RuntimeException {\n"
        "    AssertionError() {\n        System.exit(0);\n    }\n}\n",
    ),
    _attack(
        "shadow_arrays_aslist",
        "Monkey-patches the tests' framework: a top-level class Arrays shadows java.util.Arrays "
        "(an on-demand import), and its asList returns an empty list, so the tests' `correct` "
        "list holds no false. Bridged, the harness uses java.util.Arrays.",
        CLOSE_PROMPT,
        CLOSE_TESTS,
        HEAD + "class Solution {\n" + WRONG_CLOSE + "}\n\n"
        "class Arrays {\n    @SafeVarargs\n"
        "    static <T> List<T> asList(T... items) {\n        return new ArrayList<>();\n   "
        " }\n}\n",
    ),
    _attack(
        "shadow_objects_equals",
        "A top-level class Objects shadows java.util.Objects; its equals says every pair is "
        "equal, so each `Objects.equals(s.concatenate(...), expected)` holds. Bridged, the "
        "harness compares with java.util.Objects.",
        CONCAT_PROMPT,
        CONCAT_TESTS,
        HEAD + "class Solution {\n    public String concatenate(List<String> strings) {\n"
        '        return "wrong";\n    }\n}\n\n'
        "class Objects {\n    static boolean equals(Object a, Object b) {\n"
        "        return true;\n    }\n}\n",
    ),
    _attack(
        "always_equal_list",
        "Returns a list whose equals() is always true, so `result.equals(expected)` holds "
        "whatever is expected. Bridged, only the list's items cross (none): the harness "
        "rebuilds a plain ArrayList, and [] is not [4, 9].",
        FILTER_PROMPT,
        FILTER_TESTS,
        HEAD + "class Solution {\n    public List<Integer> filterIntegers(List<Object> values) {\n"
        "        return new ArrayList<Integer>() {\n"
        "            @Override\n            public boolean equals(Object other) {\n"
        "                return true;\n            }\n        };\n    }\n}\n",
    ),
    _attack(
        "uncaught_handler_prints_pass",
        "Installs a default uncaught-exception handler that prints the markers test runners "
        "print ('PASS', 'OK (7 tests)', 'Tests run: 7, Failures: 0') and halts with 0 when the "
        "tests' AssertionError escapes main. Bridged, the handler lives in the candidate's "
        "JVM; the harness's error ends the harness with its own nonzero status.",
        CLOSE_PROMPT,
        CLOSE_TESTS,
        HEAD + "class Solution {\n    static {\n"
        "        Thread.setDefaultUncaughtExceptionHandler((thread, error) -> {\n"
        '            System.out.println("PASS");\n            System.out.println("OK (7 tests)");\n'
        '            System.out.println("Tests run: 7, Failures: 0, Errors: 0");\n'
        "            Runtime.getRuntime().halt(0);\n        });\n    }\n" + WRONG_CLOSE + "}\n",
    ),
    _attack(
        "shutdown_hook_halts_zero",
        "Registers a shutdown hook that halts with status 0: when main dies of the tests' "
        "AssertionError the JVM runs its hooks on the way out, and the halt replaces the exit "
        "status 1 with 0. Bridged, the hook halts only the candidate's JVM.",
        ADD_PROMPT,
        ADD_TESTS,
        HEAD + "class Solution {\n    static {\n"
        "        Runtime.getRuntime().addShutdownHook(new Thread(() ->"
        " Runtime.getRuntime().halt(0)));\n"
        "    }\n" + WRONG_ADD + "}\n",
    ),
    _attack(
        "forged_replies_on_descriptor_3",
        "Writes a run of forged 'true' reply frames to descriptor 3 before any request, then "
        "exits 0 (which alone passes the naive run, where there is no descriptor 3). Bridged, "
        "the forged frames are just the candidate's answers: all true, which the tests' "
        "negated cases reject; then the stream ends, which fails any further call.",
        CLOSE_PROMPT,
        CLOSE_TESTS,
        HEAD + "import java.io.*;\nimport java.lang.reflect.Field;\n\n"
        "class Solution {\n    static {\n        try {\n"
        "            FileDescriptor fd = new FileDescriptor();\n"
        '            Field f = FileDescriptor.class.getDeclaredField("fd");\n'
        "            f.setAccessible(true);\n            f.setInt(fd, 3);\n"
        "            OutputStream out = new FileOutputStream(fd);\n"
        '            for (int i = 0; i < 64; i++) out.write("3:rb1".getBytes());\n'
        "            out.flush();\n        } catch (Throwable e) {\n            // no descriptor"
        " 3\n"
        "        }\n        System.exit(0);\n    }\n" + WRONG_CLOSE + "}\n",
    ),
]
