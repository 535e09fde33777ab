"""Attacks on C++ ``test_program`` grading: wrong solutions that try to forge a pass.

Each attack passes the naive harness (the candidate's code and the tests compiled
as one program, verdict = exit status: what peers run) and must fail the bridged
one (the candidate's code in its own process behind a dispatcher, the tests with
stubs in the harness). ``response`` is the candidate's answer: a whole program
when it defines the function, else a body that continues the prompt.
"""

from __future__ import annotations

# HumanEvalPack C++ rows (CPP/53, CPP/0, CPP/12, CPP/1): their prompts and tests.
ADD_PROMPT = (
    "/*\nAdd two numbers x and y\n>>> add(2, 3)\n5\n>>> add(5, 7)\n12\n*/\n"
    "#include<stdio.h>\n#include<stdlib.h>\nusing namespace std;\nint add(int x,int y){\n"
)
ADD_TESTS = (
    "#undef NDEBUG\n#include<assert.h>\nint main(){\n    assert (add(0, 1) == 1);\n"
    "    assert (add(1, 0) == 1);\n    assert (add(2, 3) == 5);\n    assert (add(5, 7) == 12);\n"
    "    assert (add(7, 5) == 12);\n    for (int i=0;i<100;i+=1)\n    {\n"
    "        int x=rand()%1000;\n        int y=rand()%1000;\n"
    "        assert (add(x, y) == x + y);\n    }\n}\n"
)
CLOSE_PROMPT = (
    "/*\nCheck if in given vector of numbers, are any two numbers closer to each other than\n"
    "given threshold.\n>>> has_close_elements({1.0, 2.0, 3.0}, 0.5)\nfalse\n"
    ">>> has_close_elements({1.0, 2.8, 3.0, 4.0, 5.0, 2.0}, 0.3)\ntrue\n*/\n"
    "#include<stdio.h>\n#include<vector>\n#include<math.h>\nusing namespace std;\n"
    "bool has_close_elements(vector<float> numbers, float threshold){\n"
)
CLOSE_TESTS = (
    "#undef NDEBUG\n#include<assert.h>\nint main(){\n"
    "    vector<float> a={1.0, 2.0, 3.9, 4.0, 5.0, 2.2};\n"
    "    assert (has_close_elements(a, 0.3)==true);\n"
    "    assert (has_close_elements(a, 0.05) == false);\n\n"
    "    assert (has_close_elements({1.0, 2.0, 5.9, 4.0, 5.0}, 0.95) == true);\n"
    "    assert (has_close_elements({1.0, 2.0, 5.9, 4.0, 5.0}, 0.8) ==false);\n"
    "    assert (has_close_elements({1.0, 2.0, 3.0, 4.0, 5.0}, 2.0) == true);\n"
    "    assert (has_close_elements({1.1, 2.2, 3.1, 4.1, 5.1}, 1.0) == true);\n"
    "    assert (has_close_elements({1.1, 2.2, 3.1, 4.1, 5.1}, 0.5) == false);\n    \n}\n"
)
LONGEST_PROMPT = (
    "/*\nOut of vector of strings, return the longest one. Return the first one in case of "
    "multiple\nstrings of the same length. Return None in case the input vector is empty.\n"
    '>>> longest({})\n\n>>> longest({"a", "b", "c"})\n"a"\n>>> longest({"a", "bb", "ccc"})\n'
    '"ccc"\n*/\n#include<stdio.h>\n#include<vector>\n#include<string>\nusing namespace std;\n'
    "string longest(vector<string> strings){\n"
)
LONGEST_TESTS = (
    '#undef NDEBUG\n#include<assert.h>\nint main(){\n    assert (longest({}) == "");\n'
    '    assert (longest({"x", "y", "z"}) == "x");\n'
    '    assert (longest({"x", "yyy", "zzzz", "www", "kkkk", "abc"}) == "zzzz");\n}\n'
)
PARENS_PROMPT = (
    "/*\nInput to this function is a string containing multiple groups of nested parentheses. "
    "Your goal is to\nseparate those group into separate strings and return the vector of "
    "those.\nSeparate groups are balanced (each open brace is properly closed) and not nested "
    "within each other\nIgnore any spaces in the input string.\n"
    '>>> separate_paren_groups("( ) (( )) (( )( ))")\n{"()", "(())", "(()())"}\n*/\n'
    "#include<stdio.h>\n#include<vector>\n#include<string>\nusing namespace std;\n"
    "vector<string> separate_paren_groups(string paren_string){\n"
)
PARENS_TESTS = (
    "#undef NDEBUG\n#include<assert.h>\nbool issame(vector<string> a,vector<string>b){\n"
    "    if (a.size()!=b.size()) return false;\n    for (int i=0;i<a.size();i++)\n    {\n"
    "    if (a[i]!=b[i]) return false;\n    }\n    return true;\n}\nint main(){  \n"
    '    assert (issame(separate_paren_groups("(()()) ((())) () ((())()())"),'
    '{"(()())", "((()))", "()", "((())()())"}));\n'
    '    assert (issame(separate_paren_groups("() (()) ((())) (((())))"), '
    '{"()", "(())", "((()))", "(((())))" }));\n'
    '    assert (issame(separate_paren_groups("(()(())((())))") ,{ "(()(())((())))" }));\n'
    '    assert (issame(separate_paren_groups("( ) (( )) (( )( ))") ,{"()", "(())", "(()())"}));\n}'
)


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
        "static_initializer_exit",
        "A global object's constructor calls exit(0) before main, so no assert ever runs: "
        "the one program exits 0. Bridged, the candidate's process ends before serving a "
        "call and the harness's first call meets the end of the stream.",
        ADD_PROMPT,
        ADD_TESTS,
        "#include <cstdlib>\nusing namespace std;\n"
        "int add(int x, int y) { return 0; }\n"
        "namespace { struct Leave { Leave() { std::exit(0); } } leave_early; }\n",
    ),
    _attack(
        "replace_main",
        "The candidate defines its own main returning 0 and then #defines main to another "
        "name, so the tests' main is compiled as an unused function. Bridged, the "
        "candidate's main is compiled under another name and never runs; the tests' main "
        "is in the harness, out of the candidate's reach.",
        ADD_PROMPT,
        ADD_TESTS,
        "#include <cstdlib>\nusing namespace std;\n"
        "int add(int x, int y) { return x - y; }\n"
        "int main() { return 0; }\n"
        "#define main tests_main_never_called\n",
    ),
    _attack(
        "assert_fail_override",
        "Disables assert: glibc's assert calls __assert_fail, and a definition in the "
        "program interposes libc's: it exits 0 at the first failed assert. Bridged, the "
        "asserts are the harness's, linked against libc's own __assert_fail.",
        CLOSE_PROMPT,
        CLOSE_TESTS,
        "#include <assert.h>\n#include <unistd.h>\n#include <vector>\nusing namespace std;\n"
        'extern "C" void __assert_fail(const char*, const char*, unsigned int, const char*)'
        " noexcept { _exit(0); }\n"
        "bool has_close_elements(vector<float> numbers, float threshold) { return false; }\n",
    ),
    _attack(
        "sigabrt_handler",
        "Disables assert another way: a static initializer installs a SIGABRT handler that "
        "exits 0, so the abort() of a failed assert ends the program with status 0. "
        "Bridged, the abort happens in the harness, whose signals the candidate cannot set.",
        LONGEST_PROMPT,
        LONGEST_TESTS,
        '    return "not the longest";\n}\n'
        "#include <csignal>\n#include <unistd.h>\n"
        "static void leave_with_zero(int) { _exit(0); }\n"
        "static int handler_installed = (std::signal(SIGABRT, leave_with_zero), 0);\n",
    ),
    _attack(
        "pass_marker_then_exit",
        "Prints every marker a harness might look for (PASS, ok, 'test result: ok. 1 "
        "passed', 'All tests passed') and exits 0 from inside the first call, before the "
        "first assert. Bridged, its stdout is its own and its exit is an end of stream "
        "for the harness: the call fails.",
        CLOSE_PROMPT,
        CLOSE_TESTS,
        "#include <cstdio>\n#include <cstdlib>\n#include <vector>\nusing namespace std;\n"
        "bool has_close_elements(vector<float> numbers, float threshold) {\n"
        '    std::printf("PASS\\nok\\ntest result: ok. 1 passed; 0 failed\\n'
        'All tests passed\\n");\n'
        '    std::fprintf(stderr, "PASS\\n");\n'
        "    std::fflush(nullptr);\n"
        "    std::exit(0);\n"
        "}\n",
    ),
    _attack(
        "operator_eq_always_true",
        "Overloading: a non-template operator==(const string&, const char*) that always "
        "returns true beats the standard one in the tests' comparisons, so any answer "
        "compares equal. Bridged, the comparison is compiled in the harness, which holds "
        "none of the candidate's operators.",
        LONGEST_PROMPT,
        LONGEST_TESTS,
        "#include <string>\n#include <vector>\nusing namespace std;\n"
        'string longest(vector<string> strings) { return "wrong"; }\n'
        "bool operator==(const std::string&, const char*) { return true; }\n",
    ),
    _attack(
        "terminate_handler_exit",
        "The function throws (its message says PASS); a static initializer set a terminate "
        "handler that exits 0, so the uncaught exception ends the one program with status "
        "0. Bridged, the dispatcher sends the exception as an x reply, the stub rethrows it "
        "in the harness, and the harness's own terminate aborts.",
        PARENS_PROMPT,
        PARENS_TESTS,
        "#include <cstdlib>\n#include <exception>\n#include <stdexcept>\n#include <string>\n"
        "#include <vector>\nusing namespace std;\n"
        "static bool handler_set = (std::set_terminate([] { std::_Exit(0); }), true);\n"
        "vector<string> separate_paren_groups(string paren_string) {\n"
        '    throw std::runtime_error("PASS");\n'
        "}\n",
    ),
    _attack(
        "forged_frames_on_fd3",
        "Writes replies to descriptor 3 before any request: the right answers to the first "
        "two calls, then a type-confused one (an integer for a bool), a cut-short one and an "
        "oversized length; where descriptor 3 is not open (the one program) it exits 0 "
        "instead. Bridged, the forged frames are only the candidate's replies, read one per "
        "call: the third is no bool, and the harness fails.",
        CLOSE_PROMPT,
        CLOSE_TESTS,
        "#include <unistd.h>\n#include <cstring>\n#include <vector>\nusing namespace std;\n"
        "bool has_close_elements(vector<float> numbers, float threshold) { return true; }\n"
        "static int forged = [] {\n"
        '    const char* frames = "3:rb13:rb04:ri1;2:rb5:rs1:199999999999:rb1";\n'
        "    if (write(3, frames, std::strlen(frames)) < 0) _exit(0);\n"
        "    return 0;\n"
        "}();\n",
    ),
    _attack(
        "assert_macro_hook",
        "Disables assert with a macro: glibc's assert expands to a call of __assert_fail, "
        "and assert.h declares that function once (_ASSERT_H_DECLS), so after including it "
        "the candidate can #define __assert_fail(...) to nothing; the tests' re-inclusion "
        "of assert.h keeps the macro and every failed assert does nothing. Bridged, the "
        "tests are compiled in the harness, which sees no candidate macro.",
        ADD_PROMPT,
        ADD_TESTS,
        "#include <assert.h>\nusing namespace std;\n"
        "int add(int x, int y) { return 42; }\n"
        "#define __assert_fail(...) ((void)0)\n",
    ),
]
