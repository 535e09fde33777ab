"""JavaScript (Node 20): the candidate's script behind a dispatcher, the tests behind stubs.

The programs of a ``test_program`` task, each a CommonJS script beside
``runtime/arbiter_bridge.js`` (the wire codec and synchronous I/O on descriptor
3; its header says how ``undefined``, ``NaN``, ``-0``, integers and floats map
to the wire) and a ``package.json`` that pins the scripts to CommonJS:

* the **candidate's program** (``candidate.js``): the candidate's code, then a
  dispatcher in the same script (so it sees the code's top-level ``const``,
  ``let`` and ``function`` declarations), which looks each requested name up as
  ``typeof name === "function" ? name : undefined`` and serves calls until the
  stream ends. ``node --check`` is its compile step: a syntax error is a
  compile error. What the candidate's code does at the top level
  (``process.exit``, replacing ``console.assert`` or ``JSON.stringify``,
  printing) happens in that process only;
* the **harness** (``harness.js``): the bridge's trusted ``console.assert``
  (it counts failures; the exit status is nonzero if any failed), the prompt up
  to its trailing open declaration (its helpers kept), a stub declared as the
  prompt declares the function (``const name = (...args) =>
  bridge.call("name", args)``), then the tests. A failed call (no reply, a
  malformed one, an exception reply) stops it with status 3;
* the **standalone program** for ``stdin_stdout`` tasks: the candidate's code.

``naive`` is the peers' harness: one script, the candidate's code then the tests,
with a ``console.assert`` that sets a failing exit status (HumanEvalPack's own
tests only print), which the candidate's code is free to replace.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
from pathlib import Path
from typing import ClassVar

from arbiter.graders.languages import c_family
from arbiter.graders.languages.base import (
    Build,
    Declared,
    Language,
    LanguageLimits,
    ProgramParts,
    Toolchain,
    UnsupportedTask,
    source_text,
    task_text,
)

__all__ = ["LANGUAGE", "JavaScriptLanguage", "mask"]

RUNTIME = "arbiter_bridge.js"
_RUNTIME_PATH = Path(__file__).with_name("runtime") / RUNTIME
#: Pins every script of a build to CommonJS (node then looks no further up for one).
PACKAGE_JSON = '{"type": "commonjs"}\n'
#: The name the harness binds the bridge to (the prompt and the tests are the task's).
BRIDGE = "__arbiterBridge"

#: Node's flags for every run: the heap at the task's memory (out of it, V8 prints
#: "JavaScript heap out of memory"), a stack V8 may use well inside an 8 MiB main
#: thread, and one V8 worker thread. Measured on Node 20 with ulimit -v and
#: /proc/PID/task: about 900 MiB of address space beyond the old space for a clean
#: heap-out-of-memory report (less and V8 dies of SIGSEGV instead), 4 threads (5
#: once libuv's pool of one starts).
NODE_FLAGS = ("--max-old-space-size={memory_mb}", "--stack-size=4000", "--v8-pool-size=1")
#: Where ``make tools`` installs the npm packages HumanEvalPack's JavaScript tasks
#: require (``js-md5``, which JavaScript/162's own solution loads): public and
#: task-independent, read-only to runs, on Node's search path through NODE_PATH.
NODE_LIBRARIES = "/usr/local/lib/arbiter/node/node_modules"
ENV = {"UV_THREADPOOL_SIZE": "1", "MALLOC_ARENA_MAX": "2", "NODE_PATH": NODE_LIBRARIES}

_IDENT = r"[A-Za-z_$][\w$]*"
_PARAMS = r"\((?P<params>[^()]*)\)"
_DECLARATION = re.compile(
    rf"""(?:^|(?<=[\n;{{}}]))[ \t]*
    (?P<header>
      (?:export\s+)?
      (?:
        (?P<kw>const|let|var)\s+(?P<name1>{_IDENT})\s*=\s*(?P<async1>async\s+)?
          (?:{_PARAMS}|(?P<single>{_IDENT}))\s*=>
      | (?P<kw2>const|let|var)\s+(?P<name2>{_IDENT})\s*=\s*(?P<async2>async\s+)?
          function\b\s*(?P<gen2>\*)?\s*(?:{_IDENT})?\s*\((?P<params2>[^()]*)\)
      | (?P<async3>async\s+)?function\b\s*(?P<gen3>\*)?\s*(?P<name3>{_IDENT})\s*
          \((?P<params3>[^()]*)\)
      )
    )\s*\{{\s*$""",
    re.X,
)


def mask(src: str) -> str:
    """``src`` with comments and literals blanked, offsets kept (``c_family.JAVASCRIPT``)."""
    return c_family.mask(c_family.JAVASCRIPT, src)


def _depth(masked: str, stop: int) -> int:
    depth = 0
    for c in masked[:stop]:
        if c == "{":
            depth += 1
        elif c == "}":
            depth = max(0, depth - 1)
    return depth


class _Open:
    """The prompt's trailing open declaration: what it declares, how, and where it starts."""

    def __init__(self, declared: Declared, start: int, keyword: str, is_async: bool) -> None:
        self.declared = declared
        self.start = start
        self.keyword = keyword  # const / let / var, or "function"
        self.is_async = is_async


def _params(text: str) -> tuple[tuple[str, str], ...]:
    names = []
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        found = re.match(rf"(?:\.\.\.)?\s*({_IDENT})", part)
        names.append((found.group(1) if found else part, ""))
    return tuple(names)


def _open_declaration(prompt: str) -> _Open:
    text = prompt.rstrip()
    masked = mask(text)
    found = _DECLARATION.search(masked)
    if not found:
        raise UnsupportedTask("the prompt does not end with an open function declaration")
    if _depth(masked, found.start("header")) != 0:
        raise UnsupportedTask("the prompt's open function is not declared at the top level")
    name = found.group("name1") or found.group("name2") or found.group("name3")
    if found.group("gen2") or found.group("gen3"):
        raise UnsupportedTask(
            f"{name} is a generator: its values cannot cross the bridge one call at a time"
        )
    if found.group("single"):
        params: tuple[tuple[str, str], ...] = ((found.group("single"), ""),)
    else:
        params = _params(
            found.group("params") or found.group("params2") or found.group("params3") or ""
        )
    keyword = found.group("kw") or found.group("kw2") or "function"
    is_async = bool(found.group("async1") or found.group("async2") or found.group("async3"))
    header = text[found.start("header") : found.end("header")].strip()
    start = found.start("header")
    return _Open(Declared(name, header, params, ""), start, keyword, is_async)


def _helpers(prefix: str) -> list[str]:
    """The names of the functions a prompt declares at its top level before the open one."""
    masked = mask(prefix)
    found = re.finditer(
        rf"(?:^|(?<=[\n;}}]))[ \t]*(?:export\s+)?(?:(?:async\s+)?function\s*\*?\s*({_IDENT})|"
        rf"(?:const|let|var)\s+({_IDENT})\s*=)",
        masked,
    )
    return [m.group(1) or m.group(2) for m in found if _depth(masked, m.start()) == 0]


class JavaScriptLanguage(Language):
    """Node 20: scripts checked with ``node --check``, run with a bounded heap; the bridge in JS."""

    name: ClassVar[str] = "javascript"
    tags: ClassVar[tuple[str, ...]] = ("javascript", "js", "node")
    tools: ClassVar[tuple[str, ...]] = ("node",)
    version_command: ClassVar[tuple[str, ...]] = ("node", "--version")
    extra_roots: ClassVar[tuple[str, ...]] = ()
    limits: ClassVar[LanguageLimits] = LanguageLimits(
        address_space_mb=1280,
        threads=8,
        open_files=64,
        compile_cpu_s=30.0,
        compile_memory_mb=2048,
        compile_processes=16,
    )
    out_of_memory: ClassVar[tuple[re.Pattern[str], ...]] = (
        re.compile(r"JavaScript heap out of memory"),
        re.compile(r"Array buffer allocation failed"),
    )

    # ---------------------------------------------------------------- reading code

    def prepare(self, toolchain: Toolchain, cache_dir: str) -> Toolchain:
        """Name the npm libraries ``make tools`` installed in the toolchain's version.

        Runs read them under ``/usr/local/lib``, which the sandbox lets every run
        read. Without them a task that requires one fails for every answer alike;
        the version text (part of the compile cache's key) says which were there.
        """
        if not os.path.isdir(NODE_LIBRARIES):
            return toolchain
        libraries = ",".join(sorted(n for n in os.listdir(NODE_LIBRARIES) if n[:1] != "."))
        return dataclasses.replace(
            toolchain, version=f"{toolchain.version} (libraries: {libraries})"
        )

    def defines(self, code: str, name: str) -> bool:
        """Whether ``code`` declares ``name`` as a function (a declaration or a bound one)."""
        masked = mask(code)
        word = re.escape(name)
        patterns = (
            rf"\bfunction\s*\*?\s*{word}\s*\(",
            rf"\b(?:const|let|var)\s+{word}\s*=\s*(?:async\s+)?(?:function\b|\([^()]*\)\s*=>|{_IDENT}\s*=>)",
            # Blanks up to the last newline only: ``\s*`` from every newline of a run of
            # empty lines read the whole run again (quadratic). The same matches.
            rf"(?:^|[\n;])[^\S\n]*(?:globalThis\.|module\.exports\.|exports\.)?{word}\s*=\s*(?:async\s+)?(?:function\b|\([^()]*\)\s*=>|{_IDENT}\s*=>)",
        )
        return any(re.search(p, masked) for p in patterns)

    def declared(self, parts: ProgramParts) -> list[Declared]:
        """The prompt's trailing open function declaration (at its top level)."""
        return [_open_declaration(parts.prompt).declared]

    # ---------------------------------------------------------------- builds

    def _runtime(self) -> str:
        return _RUNTIME_PATH.read_text(encoding="utf-8")

    def dispatcher(self, declared: list[Declared], awaited: tuple[str, ...] = ()) -> str:
        """The code after the candidate's: look the declared names up, serve calls on fd 3.

        ``awaited`` names the functions the prompt declares ``async``: their promises are
        awaited before the reply.
        """
        cases = "".join(
            f"      case {json.dumps(d.name)}: "
            f'return typeof {d.name} === "function" ? {d.name} : undefined;\n'
            for d in declared
        )
        return (
            "\n;\n/* arbiter: the dispatcher */\n"
            "(function () {\n"
            f'  require("./{RUNTIME}").serve(function (name) {{\n'
            "    switch (name) {\n"
            f"{cases}"
            "      default: return undefined;\n"
            "    }\n"
            f"  }}, {json.dumps(list(awaited))});\n"
            "})();\n"
        )

    def candidate(self, parts: ProgramParts) -> Build:
        """The candidate's script with the dispatcher appended; ``node --check`` compiles it."""
        task_text(parts.prompt)
        opened = _open_declaration(parts.prompt)
        awaited = (opened.declared.name,) if opened.is_async else ()
        code = source_text(parts.code)
        helpers = _helpers(parts.prompt[: opened.start])
        if not parts.continued and helpers and not any(self.defines(code, h) for h in helpers):
            # A whole answer that leaves out the prompt's helpers (HumanEvalPack's encodeCyclic)
            # still calls them: they come first, as the prompt gave them.
            code = parts.prompt[: opened.start] + code
        source = code.rstrip() + "\n" + self.dispatcher([opened.declared], awaited)
        return Build(
            files={"candidate.js": source, RUNTIME: self._runtime(), "package.json": PACKAGE_JSON},
            compile=(("node", "--v8-pool-size=1", "--check", "candidate.js"),),
            artifacts=("candidate.js", RUNTIME, "package.json"),
            run=("node", *NODE_FLAGS, "candidate.js"),
            env=dict(ENV),
        )

    def stub(self, opened: _Open) -> str:
        """The declaration that stands in for the candidate's: the call goes over fd 3."""
        name = opened.declared.name
        call = f"{BRIDGE}.call({json.dumps(name)}, args)"
        if opened.is_async:
            call = f"Promise.resolve({call})"
        if opened.keyword == "function":
            return f"function {name}(...args) {{\n  return {call};\n}}\n"
        return f"{opened.keyword} {name} = (...args) => {call};\n"

    def harness(self, parts: ProgramParts) -> Build:
        """The trusted assert, the prompt with a stub for its open function, then the tests."""
        task_text(parts.prompt, parts.tests, parts.setup_code)
        opened = _open_declaration(parts.prompt)
        source = (
            f'const {BRIDGE} = require("./{RUNTIME}");\n'
            f"{BRIDGE}.installAssert();\n"
            + parts.prompt[: opened.start]
            + self.stub(opened)
            + "\n"
            + parts.tests
            + "\n"
        )
        return Build(
            files={"harness.js": source, RUNTIME: self._runtime(), "package.json": PACKAGE_JSON},
            compile=(),
            artifacts=("harness.js", RUNTIME, "package.json"),
            run=("node", *NODE_FLAGS, "harness.js"),
            env=dict(ENV),
        )

    def program(self, code: str) -> Build:
        """The code alone, as ``main.js``."""
        return Build(
            files={"main.js": source_text(code), "package.json": PACKAGE_JSON},
            compile=(("node", "--v8-pool-size=1", "--check", "main.js"),),
            artifacts=("main.js", "package.json"),
            run=("node", *NODE_FLAGS, "main.js"),
            env=dict(ENV),
        )

    def naive(self, parts: ProgramParts) -> Build:
        """A failing console.assert, the code, the tests: one script, verdict = exit status."""
        prelude = (
            "console.assert = function (condition, ...data) {\n"
            "  if (!condition) { console.error('Assertion failed', ...data); process.exitCode = 1;"
            " }\n"
            "};\n"
        )
        source = prelude + parts.code.rstrip() + "\n\n" + parts.tests + "\n"
        return Build(
            files={"naive.js": source, "package.json": PACKAGE_JSON},
            compile=(),
            artifacts=("naive.js", "package.json"),
            run=("node", *NODE_FLAGS, "naive.js"),
            env=dict(ENV),
        )


LANGUAGE = JavaScriptLanguage()
