"""Assemble the program to grade from a sample's prompt and its completion.

A completion does not always hold a whole program: HumanEval-style prompts end
with a function's signature and docstring and the model writes only the body,
and a prompt may open a code fence that the completion continues and closes.
Graders that read only the response then find no code. The rules, in order
(the first that applies wins):

1. **Fence opened in the prompt.** The prompt's text ends inside a fenced block
   tagged ``python``/``py``/``python3`` or untagged, never closed. The
   completion continues that block: the program is the block's text so far
   followed by the completion up to its first closing fence (what follows the
   fence is prose). ``assembled = "prompt_fence"``.
2. **The completion's own code.** :func:`arbiter.graders.code.extract_code` finds code
   that compiles and, when the task names an entry point, defines it at the
   top level. ``assembled = "response"``.
3. **A body that continues the prompt.** The prompt's code (the prompt's text
   when it parses as Python, else its last Python block) ends with a function
   or class, and that code followed by the completion's code (its fenced
   blocks, or the whole completion) compiles and defines the entry point (when
   the task names one). ``assembled = "prompt_body"``.
4. Otherwise the completion's own code as :func:`extract_code` found it, even if
   it does not compile (the grader then reports ``syntax_error``), or ``None``
   (``no_code``).

The prompt's text is the prompt when it is a string, or the content of its last
message when it is a chat. Only a prompt whose code the completion continues is
used: a completion that is a whole program is graded alone, as before.
"""

from __future__ import annotations

import ast
import dis
import functools
import warnings
from dataclasses import dataclass
from typing import Literal

from arbiter.graders.code import ExtractedCode, blocks, extract_code
from arbiter.graders.sandbox.syntax import parse_module
from arbiter.graders.types import Sample, TaskSpec

__all__ = [
    "Program",
    "assemble_program",
    "clear_cache",
    "compiles",
    "program_of",
    "prompt_code",
    "prompt_text",
]

_PYTHON_OR_UNTAGGED = frozenset({"", "python", "py", "python3", "py3"})


@dataclass(frozen=True, slots=True)
class Program(ExtractedCode):
    """The code to grade, and which rule of this module assembled it."""

    assembled: Literal["response", "prompt_fence", "prompt_body"] = "response"


def prompt_text(sample: Sample) -> str:
    """Return the prompt's text: the string, or the last chat message's text content."""
    if isinstance(sample.prompt, str):
        return sample.prompt
    if not sample.prompt:
        return ""
    content = sample.prompt[-1].content
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(part.get("text", "")) for part in content if part.get("type") == "text")
    return ""


#: Code longer than this is read each time rather than kept as a cache key.
_CACHED_CODE_CHARS = 1 << 16
_STORE_NAME = dis.opmap["STORE_NAME"]


def _defined(code: str) -> frozenset[str] | None:
    """Return the names ``code`` binds at its top level; ``None`` when it does not compile.

    Cached for code up to ``_CACHED_CODE_CHARS``: every grader of a rubric
    assembles the same sample's program. The names are read from the module's
    bytecode (its ``STORE_NAME`` arguments: def, class, assignment, import, a
    loop's or a ``with``'s target), not from an AST: compiling is needed anyway,
    and building the AST as well would be a second pass over the code.
    """
    return _cached_defined(code) if len(code) <= _CACHED_CODE_CHARS else _read_defined(code)


@functools.lru_cache(maxsize=4096)
def _cached_defined(code: str) -> frozenset[str] | None:
    return _read_defined(code)


def _read_defined(code: str) -> frozenset[str] | None:
    try:
        with warnings.catch_warnings():
            # The candidate's own warnings (invalid escapes) are not ours to show.
            warnings.simplefilter("ignore")
            module = compile(code, "solution.py", "exec", dont_inherit=True)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    raw, names = module.co_code, module.co_names
    found: set[str] = set()
    extended = 0
    for i in range(0, len(raw), 2):
        op, arg = raw[i], extended | raw[i + 1]
        if op == dis.EXTENDED_ARG:
            extended = arg << 8
            continue
        extended = 0
        if op == _STORE_NAME:
            found.add(names[arg])
    return frozenset(found)


def _ends_with_definition(code: str) -> bool:
    """Whether the last top-level statement of ``code`` (which compiles) is a def or a class."""
    try:
        body = parse_module(code).body
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    definitions = ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef
    return bool(body) and isinstance(body[-1], definitions)


def clear_cache() -> None:
    """Forget what was read of every program (benchmarks that measure first sight)."""
    _cached_defined.cache_clear()


def compiles(code: str) -> bool:
    """Whether ``code`` compiles (cached with the rest of what this module reads of it)."""
    return _defined(code) is not None


def _defines(defined: frozenset[str], name: str | None) -> bool:
    """Whether ``name`` is among the names bound (any name when ``None``)."""
    return name is None or name in defined


def _prompt_fence(prompt: str, response: str) -> Program | None:
    """Rule 1: the prompt ends inside an open Python (or untagged) fence."""
    found = blocks(prompt)
    if not found or found[-1].closed or found[-1].tag not in _PYTHON_OR_UNTAGGED:
        return None
    opened = found[-1]
    closing = opened.closing.search(response)
    rest = response if closing is None else response[: closing.start()]
    code = opened.body + rest
    if not code.strip():
        return None
    code = code if code.endswith("\n") else code + "\n"
    return Program(code, "fenced", 1, truncated=closing is None, assembled="prompt_fence")


def _prompt_code(prompt: str) -> str | None:
    """The prompt's code: the whole text when it parses, else its last Python block."""
    if prompt.strip() and compiles(prompt):
        return prompt
    tagged = [b for b in blocks(prompt) if b.closed and b.tag in _PYTHON_OR_UNTAGGED]
    return tagged[-1].body if tagged else None


def prompt_code(prompt: str) -> str | None:
    """Return the code a prompt shows: the task's helpers are defined there.

    The whole prompt when it parses, else its last Python block, closed or left
    open for the completion (the caller keeps only whole definitions of it).
    """
    head = _prompt_code(prompt)
    if head is not None:
        return head
    found = [b for b in blocks(prompt) if b.tag in _PYTHON_OR_UNTAGGED]
    return found[-1].body if found else None


def _prompt_body(prompt: str, response: str, entry_point: str | None) -> Program | None:
    """Rule 3: the completion is the body of the function the prompt's code ends with."""
    head = _prompt_code(prompt)
    if head is None:
        return None
    if not compiles(head) or not _ends_with_definition(head):
        return None
    fenced = [b for b in blocks(response) if b.tag in _PYTHON_OR_UNTAGGED]
    tail = "\n".join(b.body.rstrip("\n") for b in fenced) if fenced else response
    if not tail.strip():
        return None
    code = (head if head.endswith("\n") else head + "\n") + tail
    code = code if code.endswith("\n") else code + "\n"
    defined = _defined(code)
    if defined is None or not _defines(defined, entry_point):
        return None
    truncated = bool(fenced) and not fenced[-1].closed
    source: Literal["fenced", "raw"] = "fenced" if fenced else "raw"
    return Program(code, source, len(fenced), truncated=truncated, assembled="prompt_body")


def program_of(sample: Sample, *, which: Literal["all", "last"] = "all") -> Program | None:
    """Return the program to grade for ``sample`` (prompt, completion, the task's entry point)."""
    task = sample.task
    entry_point = task.entry_point if isinstance(task, TaskSpec) else None
    return assemble_program(
        prompt_text(sample), sample.response, which=which, entry_point=entry_point
    )


def assemble_program(
    prompt: str,
    response: str,
    *,
    which: Literal["all", "last"] = "all",
    entry_point: str | None = None,
) -> Program | None:
    """Return the program to grade by the module's rules, or ``None`` when there is no code.

    Args:
        prompt: The prompt's text; read only when the completion continues it.
        response: The completion.
        which: Which fenced blocks of the completion make its own code.
        entry_point: The function the tests call, when known.
    """
    if prompt:
        continued = _prompt_fence(prompt, response)
        if continued is not None:
            return continued
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        own = extract_code(response, which=which)
    if own is not None:
        defined = _defined(own.code)
        if defined is not None and _defines(defined, entry_point):
            return Program(own.code, own.source, own.blocks, own.truncated)
    if prompt:
        body = _prompt_body(prompt, response, entry_point)
        if body is not None:
            return body
    if own is None:
        return None
    return Program(own.code, own.source, own.blocks, own.truncated)
