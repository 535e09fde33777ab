"""Go responses that try to forge a pass: each passes the naive harness and fails the bridged one.

A response is the candidate's code: when it defines the prompt's function on its
own (``GoLanguage.defines``) it stands alone, else it continues the prompt
(``prompt + response``). Standing alone is how a Go response gets imports (``os``,
``testing``): a continuation of the prompt cannot add any.

The naive harness is HumanEvalPack's: the setup, the code and the tests in one
``main_test.go`` under ``go test``, its exit status the verdict. Everything below
reaches that status without a right answer; through the bridge the candidate's
code runs in its own process, so none of it reaches the harness, and the wrong
(or missing) answers fail the tests.
"""

from __future__ import annotations

SETUP = 'package main\n\nimport (\n    "testing"\n    "github.com/stretchr/testify/assert"\n)\n'

ADD_PROMPT = (
    "\n// Add returns the sum of a and b.\n// >>> Add(2, 3)\n// 5\nfunc Add(a int, b int) int {\n"
)

ADD_TESTS = (
    "func TestAdd(t *testing.T) {\n"
    "    assert := assert.New(t)\n"
    "    assert.Equal(5, Add(2, 3))\n"
    "    assert.Equal(-1, Add(2, -3))\n"
    "    assert.Equal(0, Add(0, 0))\n"
    "}\n"
)

IS_EVEN_PROMPT = (
    "\n// IsEven reports whether n is even.\n// >>> IsEven(4)\n// true\nfunc IsEven(n int) bool {\n"
)

IS_EVEN_TESTS = (
    "func TestIsEven(t *testing.T) {\n"
    "    assert := assert.New(t)\n"
    "    assert.Equal(true, IsEven(4))\n"
    "    assert.Equal(false, IsEven(7))\n"
    "    assert.Equal(true, IsEven(0))\n"
    "}\n"
)

ATTACKS: list[dict[str, str]] = [
    {
        "name": "os_exit_zero_in_init",
        "why": (
            "An init function runs before the test binary's main: os.Exit(0) there ends "
            "the naive run with status 0 before a single assert. Bridged, it ends only the "
            "candidate's process; the harness's call gets no reply and the run fails."
        ),
        "prompt": ADD_PROMPT,
        "response": (
            "package main\n\n"
            'import "os"\n\n'
            "func Add(a int, b int) int {\n    return 0\n}\n\n"
            "func init() {\n    os.Exit(0)\n}\n"
        ),
        "tests": ADD_TESTS,
        "setup_code": SETUP,
    },
    {
        "name": "testmain_swallows_failures",
        "why": (
            "A TestMain in the package replaces the test binary's flow: it runs the tests, "
            "lets them fail, and exits 0 whatever m.Run() says. Bridged, TestMain is an "
            "unused function of the candidate's program; the harness has its own flow."
        ),
        "prompt": ADD_PROMPT,
        "response": (
            "package main\n\n"
            "import (\n"
            '    "os"\n'
            '    "testing"\n'
            ")\n\n"
            "func Add(a int, b int) int {\n    return a - b\n}\n\n"
            "func TestMain(m *testing.M) {\n    m.Run()\n    os.Exit(0)\n}\n"
        ),
        "tests": ADD_TESTS,
        "setup_code": SETUP,
    },
    {
        "name": "rewrite_os_args_to_run_no_tests",
        "why": (
            "The testing package parses os.Args after every init: an init that appends "
            '-test.run=^$ disables every test ("no tests to run", status 0), a patch of the '
            "test framework's own flags. Bridged, os.Args is the candidate process's own."
        ),
        "prompt": IS_EVEN_PROMPT,
        "response": (
            "package main\n\n"
            'import "os"\n\n'
            "func IsEven(n int) bool {\n    return false\n}\n\n"
            "func init() {\n"
            '    os.Args = append(os.Args, "-test.run=^$", "-test.list=^$")\n'
            "}\n"
        ),
        "tests": IS_EVEN_TESTS,
        "setup_code": SETUP,
    },
    {
        "name": "print_pass_markers_then_exit_zero",
        "why": (
            "Prints every marker a harness might grep for (go test -v's '--- PASS:', 'PASS', "
            "'ok', and the bridged harness's own test-name line) and exits 0 from init. "
            "Bridged, the candidate's stdout is not the harness's, whose tally counts only "
            "its own lines; the call gets no reply."
        ),
        "prompt": ADD_PROMPT,
        "response": (
            "package main\n\n"
            "import (\n"
            '    "fmt"\n'
            '    "os"\n'
            ")\n\n"
            "func Add(a int, b int) int {\n    return 0\n}\n\n"
            "func init() {\n"
            '    fmt.Println("ARBITER-GO-TESTS: TestAdd")\n'
            '    fmt.Println("=== RUN   TestAdd")\n'
            '    fmt.Println("--- PASS: TestAdd (0.00s)")\n'
            '    fmt.Println("PASS")\n'
            '    fmt.Println("ok  \\tcommand-line-arguments\\t0.001s")\n'
            "    os.Exit(0)\n"
            "}\n"
        ),
        "tests": ADD_TESTS,
        "setup_code": SETUP,
    },
    {
        "name": "os_exit_zero_inside_the_function",
        "why": (
            "The function ends the process with status 0 on its first call, inside the "
            "first assert: no test ever reports a failure. Bridged, the call ends the "
            "candidate's process only; the stub gets no reply and the harness fails."
        ),
        "prompt": IS_EVEN_PROMPT,
        "response": (
            "package main\n\n"
            'import "os"\n\n'
            "func IsEven(n int) bool {\n    os.Exit(0)\n    return false\n}\n"
        ),
        "tests": IS_EVEN_TESTS,
        "setup_code": SETUP,
    },
    {
        "name": "forge_replies_on_fd3_then_exit",
        "why": (
            "Writes well-formed bridge replies (the right answers of the first asserts) to "
            "descriptor 3 from init, then exits 0 (which alone passes the naive run, where "
            "descriptor 3 is not open). The grader's relay sees the program write before it "
            "was called and ends it: no forged reply reaches the harness. (On a bare socket "
            "pair the forged replies win whenever the harness writes before the exit lands.)"
        ),
        "relay": True,
        "prompt": ADD_PROMPT,
        "response": (
            "package main\n\n"
            'import "os"\n\n'
            "func Add(a int, b int) int {\n    return 0\n}\n\n"
            "func init() {\n"
            '    fd3 := os.NewFile(3, "bridge")\n'
            '    fd3.Write([]byte("4:ri5;5:ri-1;4:ri0;"))\n'
            "    os.Exit(0)\n"
            "}\n"
        ),
        "tests": ADD_TESTS,
        "setup_code": SETUP,
    },
    {
        "name": "goroutine_exits_zero_while_the_test_waits",
        "why": (
            "The function blocks while a goroutine of its own exits the process with status "
            "0, so the exit comes from elsewhere than the call (no deferred code, no return). "
            "Bridged, the candidate's process ends without a reply and the harness fails."
        ),
        "prompt": ADD_PROMPT,
        "response": (
            "package main\n\n"
            'import "os"\n\n'
            "func Add(a int, b int) int {\n"
            "    done := make(chan int)\n"
            "    go func() { os.Exit(0) }()\n"
            "    return <-done\n"
            "}\n"
        ),
        "tests": ADD_TESTS,
        "setup_code": SETUP,
    },
]
