"""Attacks on JavaScript ``test_program`` grading: wrong solutions that try to forge a pass.

Each attack passes the naive harness (one script: a ``console.assert`` that sets a
failing exit status, the candidate's code, then the tests; verdict = exit status:
what peers run) and must fail the bridged one (the candidate's script in its own
node process behind a dispatcher, the tests with stubs and a trusted
``console.assert`` in the harness's). ``response`` is the candidate's answer: a
whole script when it defines the function, else a body that continues the prompt.
"""

from __future__ import annotations

# HumanEvalPack JavaScript rows (JavaScript/0, /53, /22): their prompts and tests.
CLOSE_PROMPT = (
    "/* Check if in given list of numbers, are any two numbers closer to each other than\n"
    "  given threshold.\n  >>> hasCloseElements([1.0, 2.0, 3.0], 0.5)\n  false\n"
    "  >>> hasCloseElements([1.0, 2.8, 3.0, 4.0, 5.0, 2.0], 0.3)\n  true\n  */\n"
    "const hasCloseElements = (numbers, threshold) => {\n"
)
CLOSE_TESTS = (
    "const testHasCloseElements = () => {\n"
    "  console.assert(hasCloseElements([1.0, 2.0, 3.9, 4.0, 5.0, 2.2], 0.3) === true)\n"
    "  console.assert(\n    hasCloseElements([1.0, 2.0, 3.9, 4.0, 5.0, 2.2], 0.05) === false\n  )\n"
    "  console.assert(hasCloseElements([1.0, 2.0, 5.9, 4.0, 5.0], 0.95) === true)\n"
    "  console.assert(hasCloseElements([1.0, 2.0, 5.9, 4.0, 5.0], 0.8) === false)\n"
    "  console.assert(hasCloseElements([1.0, 2.0, 3.0, 4.0, 5.0, 2.0], 0.1) === true)\n"
    "  console.assert(hasCloseElements([1.1, 2.2, 3.1, 4.1, 5.1], 1.0) === true)\n"
    "  console.assert(hasCloseElements([1.1, 2.2, 3.1, 4.1, 5.1], 0.5) === false)\n"
    "}\n\ntestHasCloseElements()\n"
)
ADD_PROMPT = (
    "/*Add two numbers x and y\n  >>> add(2, 3)\n  5\n  >>> add(5, 7)\n  12\n  */\n"
    "const add = (x, y) => {\n"
)
ADD_TESTS = (
    "const testAdd = () => {\n  const getRandomIntInclusive = (min = 0, max = 9) => {\n"
    "    min = Math.ceil(min)\n    max = Math.floor(max)\n"
    "    return Math.floor(Math.random() * (max - min + 1)) + min\n  }\n\n"
    "  console.assert(add(0, 1) === 1)\n  console.assert(add(1, 0) === 1)\n"
    "  console.assert(add(2, 3) === 5)\n  console.assert(add(5, 7) === 12)\n"
    "  console.assert(add(7, 5) === 12)\n\n  for (let i = 0; i < 100; i++) {\n"
    "    let x = getRandomIntInclusive()\n    let y = getRandomIntInclusive()\n"
    "    console.assert(x + y === add(x, y))\n  }\n}\n\ntestAdd()\n"
)
FILTER_PROMPT = (
    "/* Filter given list of any python values only for integers\n"
    "  >>> filterIntegers(['a', 3.14, 5])\n  [5]\n"
    "  >>> filterIntegers([1, 2, 3, 'abc', {}, []])\n  [1, 2, 3]\n  */\n"
    "const filterIntegers = (values) => {\n"
)
FILTER_TESTS = (
    "const testFilterIntegers = () => {\n"
    "  console.assert(JSON.stringify(filterIntegers([])) === JSON.stringify([]))\n"
    "  console.assert(\n    JSON.stringify(filterIntegers([4, {}, [], 23.2, 9, 'adasd'])) ===\n"
    "      JSON.stringify([4, 9])\n  )\n  console.assert(\n"
    "    JSON.stringify(filterIntegers([3, 'c', 3, 3, 'a', 'b'])) ===\n"
    "      JSON.stringify([3, 3, 3])\n  )\n}\n\ntestFilterIntegers()\n"
)

WRONG_ADD = "const add = (x, y) => {\n  return 0\n}\n"
WRONG_CLOSE = "const hasCloseElements = (numbers, threshold) => {\n  return true\n}\n"
WRONG_FILTER = "const filterIntegers = (values) => {\n  return ['not', 'filtered']\n}\n"


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
        "process_exit_zero_before_the_tests",
        "The candidate's top-level code runs before the tests in the naive script and exits 0, "
        "so the tests (the script's 'main') never run. Bridged, it ends the candidate's process "
        "only: the harness's first call finds the stream closed and stops with status 3.",
        ADD_PROMPT,
        ADD_TESTS,
        WRONG_ADD + "process.exit(0)\n",
    ),
    _attack(
        "replace_console_assert",
        "Disables the tests' assertion: console.assert is replaced by a function that does "
        "nothing, so no failure is recorded. Bridged, the harness's console.assert is its own "
        "(defined non-writable before the tests), in a process the candidate never runs in.",
        CLOSE_PROMPT,
        CLOSE_TESTS,
        WRONG_CLOSE + "console.assert = () => {}\n",
    ),
    _attack(
        "replace_the_global_console",
        "Replaces the whole console object with one whose assert and error are no-ops (and whose "
        "log prints 'PASS' markers), so neither the failure nor its message is seen. Bridged, "
        "the harness's console is untouched.",
        ADD_PROMPT,
        ADD_TESTS,
        WRONG_ADD + "const realLog = console.log\n"
        "globalThis.console = { assert() {}, error() {}, warn() {}, log: realLog }\n"
        "realLog('PASS')\n",
    ),
    _attack(
        "exit_listener_resets_status_and_prints_markers",
        "Lets every assertion fail, then at exit prints what test runners print ('ok 1', "
        "'# pass 7', '# fail 0', 'All tests passed') and sets process.exitCode back to 0 from "
        "an 'exit' listener, which node honours. Bridged, the listener is in the candidate's "
        "process; the harness's status is its own.",
        CLOSE_PROMPT,
        CLOSE_TESTS,
        WRONG_CLOSE + "console.error = () => {}\n"
        "process.on('exit', () => {\n"
        "  console.log('ok 1 - hasCloseElements\\n# pass 7\\n# fail 0\\nAll tests passed')\n"
        "  process.exitCode = 0\n})\n",
    ),
    _attack(
        "monkeypatch_json_stringify",
        "The tests compare JSON.stringify(result) with JSON.stringify(expected); the candidate "
        "replaces JSON.stringify with a constant function, so every comparison holds. Bridged, "
        "the harness's JSON is the real one and the result crosses as data.",
        FILTER_PROMPT,
        FILTER_TESTS,
        WRONG_FILTER + "JSON.stringify = () => '\"same\"'\n",
    ),
    _attack(
        "array_prototype_tojson",
        "Patches Array.prototype.toJSON so that every array serialises to the same string: "
        "JSON.stringify(wrong) === JSON.stringify(expected). Bridged, the result reaches the "
        "harness as a fresh array of the harness's own realm, whose prototype is untouched.",
        FILTER_PROMPT,
        FILTER_TESTS,
        WRONG_FILTER + "Array.prototype.toJSON = function () { return 'any array' }\n",
    ),
    _attack(
        "forged_replies_on_descriptor_3",
        "Writes a run of forged 'true' reply frames to descriptor 3 before any request, then "
        "exits 0 (which alone passes the naive run, where descriptor 3 is not open). Bridged, "
        "the forged frames are just the candidate's answers: all true, which the tests' false "
        "cases reject, and the stream then ends, which fails any further call.",
        CLOSE_PROMPT,
        CLOSE_TESTS,
        WRONG_CLOSE + "try {\n  require('fs').writeSync(3, '3:rb1'.repeat(64))\n} catch (e) {}\n"
        "process.exit(0)\n",
    ),
]
