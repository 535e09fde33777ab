"""C++ (g++, C++17): the candidate's code behind a dispatcher, the tests behind stubs.

One module, one job: C++'s builds as data. The candidate's program, its dispatcher and
the stubbed harness are generated from one reading of the declaration, and their parts
must agree type for type.

The three programs of a ``test_program`` task, each one translation unit that
includes ``runtime/arbiter_bridge.hpp`` first (the wire codec; it also brings the
headers a HumanEval-X declaration adds to every prompt, ``<algorithm>``,
``<math.h>``, ``<stdlib.h>``, and no container: it reads them by their members).
The candidate and the harness take it from ``{cache}`` with ``-include``,
precompiled once by :meth:`CppLanguage.prepare`, and link its non-template part
(``runtime/arbiter_bridge.cpp``), compiled there once as well:

* the **candidate's program** (``candidate.cpp``): the bridge, then
  ``#define main arbiter_candidate_main_`` (a ``main`` the candidate wrote is
  compiled under another name and never runs), the candidate's code, then
  ``#undef main`` and the generated dispatcher: one function per declared
  function that decodes the arguments into the declared parameter types, calls
  the candidate's function, converts the result to the declared return type as
  a ``return`` would, and encodes it (or what it threw); and the program's own
  ``main``, which serves requests on descriptor 3 until the stream ends;
* the **harness** (``harness.cpp``): the bridge, the prompt up to its open
  declaration (its includes, ``using namespace std;``, its complete helper
  functions), a stub with the declared signature in place of the open
  declaration, then the tests (which define ``main``). No line of the
  candidate's code is in it; its exit status is the verdict;
* the **standalone program** for ``stdin_stdout`` tasks: the candidate's code
  alone.

The candidate's code can define ``main``, macros, static initialisers that exit,
print anything, or write to descriptor 3: it runs in its own process, and only
its replies reach the harness, as values of the declared types.
"""

from __future__ import annotations

import functools
import hashlib
import heapq
import logging
import os
import re
import shutil
import subprocess
import tempfile
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

log = logging.getLogger("arbiter.graders.languages.cpp")

__all__ = ["LANGUAGE", "CppLanguage", "mask"]

RUNTIME = "arbiter_bridge.hpp"
_RUNTIME_PATH = Path(__file__).with_name("runtime") / RUNTIME
#: The bridge's parts that are not templates, compiled once into :data:`RUNTIME_OBJECT`.
RUNTIME_SOURCE = "arbiter_bridge.cpp"
_RUNTIME_SOURCE_PATH = _RUNTIME_PATH.with_name(RUNTIME_SOURCE)
RUNTIME_OBJECT = "arbiter_bridge.o"
#: g++'s response file of link options beside the bridge: ``-fuse-ld=gold`` where gold
#: links this host's programs (a third of bfd's time on a HumanEvalPack candidate),
#: else nothing. :meth:`CppLanguage.prepare` writes it.
LINK_OPTIONS = "link-options"
#: What a prepared bridge's folder holds, in its name's hash with the sources: a
#: folder prepared by a release that wrote other files is not taken for this one's.
_BRIDGE_LAYOUT = f"{RUNTIME}.gch {RUNTIME_OBJECT} {LINK_OPTIONS}"

#: g++'s flags for the bridged programs (quick to compile; the tests are small).
CXXFLAGS = ("-std=gnu++17", "-O1", "-pipe")
#: A standalone program is compiled as a judge compiles one.
PROGRAM_CXXFLAGS = ("-std=gnu++17", "-O2", "-pipe")

#: The name a candidate's own ``main`` is compiled under (it never runs).
CANDIDATE_MAIN = "arbiter_candidate_main_"

_KEYWORDS_BEFORE_CALL = frozenset(
    {"return", "else", "do", "case", "new", "delete", "throw", "co_return", "co_yield", "goto"}
)
_TYPE_WORDS = frozenset(
    {
        "int",
        "long",
        "short",
        "char",
        "unsigned",
        "signed",
        "double",
        "float",
        "bool",
        "void",
        "auto",
        "const",
        "volatile",
        "wchar_t",
        "char16_t",
        "char32_t",
        "size_t",
        "string",
        "struct",
        "class",
        "enum",
        "typename",
    }
)
#: The definition (a body follows) of the struct, class, union or enum named by
#: the pattern formatted in; :data:`_TYPE_DEFINITION` captures any one's name.
_TYPE_DEFINITION_OF = (
    r"\b(?:struct|class|union|enum(?:\s+(?:class|struct))?)\s+{}\s*(?:final\s*)?[:{{]"
)
_TYPE_DEFINITION = re.compile(_TYPE_DEFINITION_OF.format(r"([A-Za-z_]\w*)"))
_SPECIFIERS = re.compile(r"\b(?:static|inline|extern|constexpr|virtual|explicit|friend)\b")
#: Types no wire value stands for: variants, callables, owners of raw memory, streams.
_UNSUPPORTED_TYPE = re.compile(
    r"\b(?:variant|function|unique_ptr|shared_ptr|weak_ptr|iterator|"
    r"istream|ostream|FILE|nullptr_t|string_view|span)\b"
)

#: ``noexcept(...)`` with its condition (no parenthesis inside it).
_NOEXCEPT_ARGS = re.compile(r"noexcept\s*\([^()]*\)")
#: The qualifier words a declaration's header may end with (before its body or ``;``),
#: and the fewer that :meth:`CppLanguage.defines` accepts before a body.
_DECLARATION_QUALIFIERS = ("const", "volatile", "noexcept", "override", "final")
_DEFINITION_QUALIFIERS = ("const", "noexcept", "override", "final")


def _runtime() -> str:
    return _RUNTIME_PATH.read_text(encoding="utf-8")


def _runtime_source() -> str:
    return _RUNTIME_SOURCE_PATH.read_text(encoding="utf-8")


@functools.cache
def _bridge_dir() -> str:
    """The prepared bridge's folder under ``{cache}``, named by its sources and flags."""
    made_of = "\0".join((_BRIDGE_LAYOUT, _runtime(), _runtime_source(), *CXXFLAGS))
    return "bridge-" + hashlib.sha256(made_of.encode()).hexdigest()[:16]


def _bridge_include() -> tuple[str, ...]:
    """g++'s words that put the prepared bridge first in a translation unit.

    The header's precompiled form beside it (``.gch``, built by
    :meth:`CppLanguage.prepare` with :data:`CXXFLAGS`) spares every compile
    the parse of the bridge and the standard headers it includes: g++ reads
    the header itself when the precompiled form is missing or was built
    otherwise, so the program is the same either way.
    """
    return ("-include", f"{{cache}}/{_bridge_dir()}/{RUNTIME}")


def _bridge_link() -> tuple[str, ...]:
    """The bridge's compiled non-template part and the link options, for both programs."""
    return (
        f"{{cache}}/{_bridge_dir()}/{RUNTIME_OBJECT}",
        f"@{{cache}}/{_bridge_dir()}/{LINK_OPTIONS}",
    )


def _gxx(gxx: str, building: Path, *words: str) -> subprocess.CompletedProcess[bytes]:
    """g++ with :data:`CXXFLAGS` and ``words``, run in ``building`` (by ``prepare``)."""
    return subprocess.run(
        [gxx, *CXXFLAGS, *words],
        cwd=building,
        env={"PATH": "/usr/local/bin:/usr/bin:/bin"},
        capture_output=True,
        timeout=300,
        check=False,
    )


def _link_options(gxx: str, building: Path) -> str:
    """``-fuse-ld=gold`` where gold links a program with the bridge that runs, else nothing.

    The linker is ours to choose: the program is the same either way, and gold takes
    a third of bfd's time on a HumanEvalPack candidate (measured). A host without it
    (binutils has dropped it) links with g++'s default.
    """
    probe = building / "probe"
    try:
        (building / "probe.cpp").write_text("int main() { return 0; }\n", encoding="utf-8")
        linked = _gxx(gxx, building, "-fuse-ld=gold", "-o", "probe", "probe.cpp", RUNTIME_OBJECT)
        ran = linked.returncode == 0 and subprocess.run([probe], timeout=60).returncode == 0
    except (OSError, subprocess.SubprocessError):
        ran = False
    finally:
        (building / "probe.cpp").unlink(missing_ok=True)
        probe.unlink(missing_ok=True)
    return "-fuse-ld=gold\n" if ran else ""


# --- reading C++ source ------------------------------------------------------------


def mask(src: str) -> str:
    """``src`` with comments, literals and directives blanked, offsets kept (``c_family.CPP``)."""
    return c_family.mask(c_family.CPP, src)


def _is_word(c: str) -> bool:
    return c.isalnum() or c == "_"


def _last_word(text: str, end: int) -> str:
    r"""Return the identifier that ends at ``end`` (``""`` if none).

    What ``re.search(r"[A-Za-z_]\w*$", text[:end])`` finds, without the copy or the
    search from the start of the text (once per call site: quadratic over a response).
    """
    start = end
    while start > 0 and _is_word(text[start - 1]):
        start -= 1
    while start < end and not (
        text[start].isascii() and (text[start].isalpha() or text[start] == "_")
    ):
        start += 1
    return text[start:end]


def _open_paren(text: str, close: int) -> int:
    """The index of the parenthesis that ``text[close]`` closes, or -1."""
    depth = 0
    for j in range(close, -1, -1):
        if text[j] == ")":
            depth += 1
        elif text[j] == "(":
            depth -= 1
            if depth == 0:
                return j
    return -1


def _split_spans(text: str, start: int, end: int) -> list[tuple[int, int]]:
    """The spans of ``text[start:end]`` between commas outside brackets (angles count)."""
    spans, depth, at = [], 0, start
    for j in range(start, end):
        c = text[j]
        if c in "(<[{":
            depth += 1
        elif c in ")>]}":
            depth -= 1
        elif c == "," and depth == 0:
            spans.append((at, j))
            at = j + 1
    spans.append((at, end))
    return spans


def _param(text: str) -> tuple[str, str, int]:
    """(name, type, offset of the default's ``=`` or -1) of one parameter's masked text."""
    depth = 0
    eq = -1
    for j, c in enumerate(text):
        if c in "(<[{":
            depth += 1
        elif c in ")>]}":
            depth -= 1
        elif c == "=" and depth == 0:
            eq = j
            break
    decl = re.sub(r"\s+", " ", text if eq < 0 else text[:eq]).strip()
    m = re.match(r"^(.*(?:\s|[>*&\]]))([A-Za-z_]\w*)$", decl)
    if m and m.group(1).strip() and m.group(2) not in _TYPE_WORDS:
        return m.group(2), m.group(1).strip(), eq
    return "", decl, eq


def _check_type(text: str, typedefs: dict[str, str], where: str) -> None:
    expanded = text
    for _ in range(8):
        new = re.sub(r"\b[A-Za-z_]\w*\b", lambda m: typedefs.get(m.group(0), m.group(0)), expanded)
        if new == expanded:
            break
        expanded = new
    if _UNSUPPORTED_TYPE.search(expanded):
        raise UnsupportedTask(f"{where} has the type {text!r}, which no wire value stands for")
    if "*" in expanded or "[" in expanded:
        raise UnsupportedTask(
            f"{where} is a pointer or an array ({text!r}): it cannot cross the bridge"
        )
    if "&&" in expanded:
        raise UnsupportedTask(f"{where} is an rvalue reference ({text!r})")
    if "&" in expanded and not re.search(r"\bconst\b", expanded):
        raise UnsupportedTask(
            f"{where} is a reference the function may change ({text!r}): the change cannot "
            "cross the bridge"
        )


def _typedefs(masked: str) -> dict[str, str]:
    found: dict[str, str] = {}
    for m in re.finditer(r"\btypedef\s+([^;{}]+?)\s*\b([A-Za-z_]\w*)\s*;", masked):
        found[m.group(2)] = m.group(1)
    for m in re.finditer(r"\busing\s+([A-Za-z_]\w*)\s*=\s*([^;{}]+);", masked):
        found[m.group(1)] = m.group(2)
    return found


class _Open:
    """The declared function, the defaults of its parameters, and where the harness cuts.

    ``start``: the prompt's text before it is the harness's (its includes and helpers).
    """

    def __init__(self, declared: Declared, start: int, defaults: tuple[str, ...]) -> None:
        self.declared = declared
        self.start = start
        self.defaults = defaults


def _open_declaration(prompt: str, entry_point: str | None = None) -> _Open:
    """The function the prompt leaves open (its body unclosed at the end of the prompt).

    A prompt that closes every block may instead declare ``entry_point`` with a
    prototype (``int f(int x);``): the harness then keeps the whole prompt.
    """
    masked = mask(prompt)
    stack: list[int] = []
    for j, c in enumerate(masked):
        if c == "{":
            stack.append(j)
        elif c == "}" and stack:
            stack.pop()
    if len(stack) > 1:
        raise UnsupportedTask(
            "the prompt's open function is inside a class or namespace: only a free function "
            "can be served"
        )
    if stack:
        return _declaration(prompt, masked, stack[0], keep=None)
    if entry_point:
        calls = list(re.finditer(r"\b" + re.escape(entry_point) + r"\s*\(", masked))
        pairs = _paren_pairs(masked)
        next_stop = _NextStop(masked)
        prototypes: list[int] = []
        depth, counted = 0, 0
        for m in calls:
            depth += masked.count("{", counted, m.start()) - masked.count("}", counted, m.start())
            counted = m.start()
            end = pairs.get(m.end() - 1, -1)
            if end < 0 or depth != 0:
                continue
            semicolon = _qualifiers_to(masked, end, ";", _DECLARATION_QUALIFIERS, True, next_stop)
            if semicolon >= 0:
                prototypes.append(semicolon)
        if prototypes:
            return _declaration(prompt, masked, prototypes[-1], keep=len(prompt))
    raise UnsupportedTask("the prompt ends with no open function for the candidate to write")


def _qualifier_ends(text: str, at: int, words: tuple[str, ...], refs: bool) -> list[int]:
    """Return where a qualifier or one white-space character starting at ``at`` may end.

    The qualifiers are ``words``, ``noexcept(...)``, and ``&`` and ``&&`` when ``refs``.
    """
    c = text[at]
    if c.isspace():
        return [at + 1]
    if c == "&":
        if not refs:
            return []
        return [at + 1, at + 2] if text.startswith("&", at + 1) else [at + 1]
    ends = [at + len(w) for w in words if text.startswith(w, at)]
    if ends and text.startswith("noexcept", at):
        found = _NOEXCEPT_ARGS.match(text, at)
        if found:
            ends.append(found.end())
    return ends


def _qualifiers_start(text: str) -> int:
    r"""Return where the qualifiers that ``text`` ends with begin.

    That is the leftmost ``s`` whose ``text[s:]`` is white space and qualifiers (const,
    volatile, noexcept(...), override, final, & and &&), then at most a trailing return
    type (``-> T``): what ``re.search(r"\s*(?:(?:const|...|&&?)\s*)*(?:->\s*[^{;]+?)?\s*$",
    text).start()`` finds, here in one pass from the end. That search tries every start
    and every split of a run of white space between its three ``\s*``, cubic in the run's
    length: a prompt's comment is blanked into such a run, and HumanEvalPack's CPP/115
    cost 2 s of CPU per sample.
    """
    n = len(text)
    # None of it holds a brace or a semicolon: the start lies after the last one.
    floor = max(text.rfind("{"), text.rfind(";")) + 1
    ok = [False] * (n - floor + 1)
    ok[n - floor] = True
    start = n
    for at in range(n - 1, floor - 1, -1):
        if text.startswith("->", at):
            found = at + 2 < n  # a return type of at least one character follows
        else:
            ends = _qualifier_ends(text, at, _DECLARATION_QUALIFIERS, True)
            found = any(ok[end - floor] for end in ends)
        if found:
            ok[at - floor] = True
            start = at
    return start


class _NextStop:
    """Find the first ``{`` or ``;`` at or after a position, asked for in rising order.

    An answer holds for every position up to it, so a text is searched once over
    however many declarations ask.
    """

    def __init__(self, text: str) -> None:
        self.text = text
        self.searched_from = -1
        self.found = -1

    def __call__(self, at: int) -> int:
        """Return the index of the first stop at or after ``at``, or -1."""
        holds = 0 <= self.searched_from <= at and (self.found < 0 or self.found >= at)
        if not holds:
            hit = _STOPS.search(self.text, at)
            self.searched_from, self.found = at, (hit.start() if hit else -1)
        return self.found


_STOPS = re.compile(r"[{;]")


def _qualifiers_to(
    text: str,
    at: int,
    closer: str,
    words: tuple[str, ...],
    refs: bool,
    next_stop: _NextStop,
) -> int:
    r"""Return the index of ``closer`` (``{`` or ``;``) that qualifiers from ``at`` lead to.

    ``text[at:]`` must read as white space and qualifiers, at most a trailing return
    type, then ``closer``; -1 when it does not. What ``re.match(r"\s*(?:(?:const|...)
    \s*)*(?:->\s*[^{;]+?)?\s*\{", text[at:])`` finds, in time proportional to the
    qualifiers read: that match backtracks cubically over white space after ``->`` that
    no brace follows, and the slice copies the rest of the text at every call.
    """
    pending, seen = [at], set()
    while pending:
        here = heapq.heappop(pending)
        if here in seen or here >= len(text):
            continue
        seen.add(here)
        c = text[here]
        if c in "{;":  # the first stop: every reading ends here
            return here if c == closer else -1
        if text.startswith("->", here):
            stop = next_stop(here + 2)
            if stop > here + 2 and text[stop] == closer:
                return stop
            continue
        for end in _qualifier_ends(text, here, words, refs):
            heapq.heappush(pending, end)
    return -1


def _paren_pairs(text: str) -> dict[int, int]:
    """Map each ``(`` of ``text`` that closes to the index just after its ``)``."""
    pairs: dict[int, int] = {}
    stack: list[int] = []
    for found in re.finditer(r"[()]", text):
        if found.group() == "(":
            stack.append(found.start())
        elif stack:
            pairs[stack.pop()] = found.start() + 1
    return pairs


def _declaration(prompt: str, masked: str, end: int, keep: int | None) -> _Open:
    """Read the declaration whose text ends at ``end`` (its body's brace, or its ``;``)."""
    before = masked[:end]
    head = before[: _qualifiers_start(before)].rstrip()
    if not head.endswith(")"):
        raise UnsupportedTask("the prompt's open block is not a function's body")
    lparen = _open_paren(head, len(head) - 1)
    if lparen < 0:
        raise UnsupportedTask("the prompt's open declaration has unbalanced parentheses")
    name_m = re.search(r"([A-Za-z_]\w*)\s*$", head[:lparen])
    if not name_m:
        raise UnsupportedTask("the prompt's open declaration names no function")
    name = name_m.group(1)
    prefix_end = name_m.start()
    if head[:prefix_end].rstrip().endswith("::") or name == "operator":
        raise UnsupportedTask(
            f"{name} is a member or an operator: only a free function can be served"
        )
    boundary = max(before.rfind(c, 0, prefix_end) for c in ";{}")
    returns_text = masked[boundary + 1 : prefix_end]
    start = boundary + 1 + (len(returns_text) - len(returns_text.lstrip()))
    returns = re.sub(r"\s+", " ", _SPECIFIERS.sub(" ", returns_text)).strip()
    if not returns:
        raise UnsupportedTask(f"the prompt's {name} has no return type")
    if re.search(r"\btemplate\b", returns) or re.search(r"\bauto\b", returns):
        raise UnsupportedTask(f"{name} is a template or returns auto: no type to decode into")
    returns = re.sub(r"^\[\[.*?\]\]\s*", "", returns)
    typedefs = _typedefs(masked[:start])
    if returns != "void":
        _check_type(returns, typedefs, f"{name}'s return type")
    params: list[tuple[str, str]] = []
    defaults: list[str] = []
    spans = _split_spans(head, lparen + 1, len(head) - 1)
    if len(spans) == 1 and head[spans[0][0] : spans[0][1]].strip() in ("", "void"):
        spans = []
    for k, (a, b) in enumerate(spans):
        text = head[a:b]
        if text.strip().endswith("..."):
            raise UnsupportedTask(f"{name} takes a variable number of arguments")
        pname, ptype, default_at = _param(text)
        if not ptype:
            raise UnsupportedTask(f"{name}'s parameter {k + 1} has no type")
        _check_type(ptype, typedefs, f"{name}'s parameter {pname or k + 1}")
        params.append((pname, ptype))
        # The default's own text (its literals are blank in the masked copy).
        defaults.append("" if default_at < 0 else prompt[a + default_at + 1 : b].strip())
    header = prompt[start:end].strip()
    declared = Declared(name=name, header=header, params=tuple(params), returns=returns)
    if keep is not None:  # the kept prototype gave the defaults: a definition may not repeat them
        return _Open(declared, keep, ())
    return _Open(declared, start, tuple(defaults))


def _cxx_string(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _libraries(*texts: str) -> tuple[str, ...]:
    """Libraries to link for the headers the sources include (OpenSSL's crypto)."""
    if any(re.search(r"#\s*include\s*[<\"]openssl/", t) for t in texts):
        return ("-lcrypto",)
    return ()


class CppLanguage(Language):
    """C++17 with g++."""

    name: ClassVar[str] = "cpp"
    tags: ClassVar[tuple[str, ...]] = ("cpp", "c++", "cxx", "cc")
    tools: ClassVar[tuple[str, ...]] = ("g++",)
    version_command: ClassVar[tuple[str, ...]] = ("g++", "--version")
    #: g++ reads the headers; cc1plus, as and ld live under /usr/lib and /usr/bin.
    extra_roots: ClassVar[tuple[str, ...]] = ("/usr/include",)
    #: A C++ program needs no address space or threads beyond what it allocates itself;
    #: cc1plus stays well under 1 GiB for a task's program.
    limits: ClassVar[LanguageLimits] = LanguageLimits(
        address_space_mb=0,
        threads=0,
        compile_cpu_s=30.0,
        compile_memory_mb=2048,
        compile_processes=16,
    )
    out_of_memory: ClassVar[tuple[re.Pattern[str], ...]] = (re.compile(r"std::bad_alloc"),)

    # --- reading the task ----------------------------------------------------------

    def defines(self, code: str, name: str) -> bool:
        """Whether ``code`` holds a definition of the free function ``name`` (a body follows)."""
        # Each occurrence is read where it is, with no slice of the text before or
        # after it: a response repeating ``a name(`` must cost no more than its length.
        masked = mask(code)
        pairs: dict[int, int] | None = None
        next_stop = _NextStop(masked)
        for m in re.finditer(r"\b" + re.escape(name) + r"\s*\(", masked):
            last = m.start()
            while last > 0 and masked[last - 1].isspace():
                last -= 1
            if last == 0:
                continue
            if not (_is_word(masked[last - 1]) or masked[last - 1] in ">*&"):
                continue
            if _last_word(masked, last) in _KEYWORDS_BEFORE_CALL:
                continue
            if masked.startswith("->", last - 2):  # p->name(...): a member call
                continue
            if pairs is None:
                pairs = _paren_pairs(masked)
            end = pairs.get(m.end() - 1, -1)
            if end < 0:
                continue
            if _qualifiers_to(masked, end, "{", _DEFINITION_QUALIFIERS, False, next_stop) >= 0:
                return True
        return False

    def declared(self, parts: ProgramParts) -> list[Declared]:
        """The prompt's open declaration: the function whose body the prompt leaves open."""
        return [_open_declaration(parts.prompt, parts.entry_point).declared]

    # --- the candidate's side --------------------------------------------------------

    def dispatcher(self, declared: list[Declared]) -> str:
        """The generated code after the candidate's: one case per function, and ``main``."""
        lines = [
            "#undef main",
            "static bool arbiter_dispatch_(const std::string& arbiter_name_,"
            " arbiter::Reader& arbiter_in_, std::size_t arbiter_argc_,"
            " std::string& arbiter_reply_) {",
            "    using namespace std;",
        ]
        for d in declared:
            lines.append(f"    if (arbiter_name_ == {_cxx_string(d.name)}) {{")
            lines.append(f"        arbiter::arity(arbiter_argc_, {len(d.params)});")
            names = []
            for k, (_, ptype) in enumerate(d.params):
                var = f"arbiter_a{k}_"
                names.append(var)
                lines.append(
                    f"        arbiter::value_t<{ptype}> {var} ="
                    f" arbiter::get<arbiter::value_t<{ptype}>>(arbiter_in_);"
                )
            ret = "void" if d.returns == "void" else f"arbiter::value_t<{d.returns}>"
            call = f"::{d.name}({', '.join(names)})"
            body = f"{call};" if d.returns == "void" else f"return {call};"
            lines.append(
                f"        arbiter::answer<{ret}>(arbiter_reply_, [&]() -> {ret} {{ {body} }});"
            )
            lines.append("        return true;")
            lines.append("    }")
        lines += [
            "    return false;",
            "}",
            "#undef int",  # "#define int long long" is common in contest code
            "int main() { return arbiter::serve(&arbiter_dispatch_); }",
            "",
        ]
        return "\n".join(lines)

    def standalone_context(self, parts: ProgramParts) -> str:
        """What of the prompt a whole answer (one that defines the function) goes after.

        Such an answer often leaves out what the prompt gave it: its includes,
        ``using namespace std;``, its typedefs and helpers. When the answer
        defines none of the prompt's helper functions or types, the prompt's
        text before the open declaration comes first, as a body would have had
        it; otherwise only its ``#include`` and ``using namespace`` lines (a
        helper defined twice would not compile).
        """
        if parts.continued:
            return ""
        found = _open_declaration(parts.prompt, parts.entry_point)
        prefix = parts.prompt[: found.start]
        if not prefix.strip():
            return ""
        masked, code = mask(prefix), mask(parts.code)
        functions = {
            m.group(1)
            for m in re.finditer(r"\b([A-Za-z_]\w*)\s*\(", masked)
            if self.defines(prefix, m.group(1))
        }
        types = set(_TYPE_DEFINITION.findall(masked))
        if not any(self.defines(parts.code, f) for f in functions) and not any(
            re.search(_TYPE_DEFINITION_OF.format(re.escape(t)), code) for t in types
        ):
            return prefix
        # Directive lines, found with comments blanked: '#' at a line's start is
        # kept (as '@') so that mask does not blank the line as a directive.
        probe = mask(re.sub(r"(?m)^([ \t]*)#", r"\1@", prefix))
        lines = prefix.splitlines()
        kept = [
            lines[i]
            for i, line in enumerate(probe.splitlines())
            if re.match(r"\s*@\s*include\b", line)
            or re.match(r"\s*using\s+namespace\s+[\w:]+\s*;", line)
        ]
        return "\n".join(kept) + "\n" if kept else ""

    def candidate(self, parts: ProgramParts) -> Build:
        """The bridge, the candidate's code (its ``main`` renamed), the dispatcher, ``main``.

        A whole answer goes after the prompt's context it left out
        (:meth:`standalone_context`).
        """
        task_text(parts.prompt)
        declared = self.declared(parts)
        source_text(parts.code)
        context = self.standalone_context(parts)
        source = "\n".join(
            [
                f"#define main {CANDIDATE_MAIN}",
                *(['#line 1 "prompt"', context] if context else []),
                '#line 1 "candidate.cpp"',
                parts.code,
                "",
                '#line 1 "arbiter_dispatcher.cpp"',
                self.dispatcher(declared),
            ]
        )
        libs = _libraries(context, parts.code)
        return Build(
            files={"candidate.cpp": source},
            compile=(
                (
                    "g++",
                    *CXXFLAGS,
                    *_bridge_include(),
                    "-o",
                    "candidate",
                    "candidate.cpp",
                    *_bridge_link(),
                    *libs,
                ),
            ),
            artifacts=("candidate",),
            run=("./candidate",),
            flags=CXXFLAGS + libs,
        )

    # --- the trusted side ------------------------------------------------------------

    def stub(self, declared: Declared, defaults: tuple[str, ...] = ()) -> str:
        """The definition that stands in for the candidate's function in the harness."""
        params = []
        names = []
        for k, (pname, ptype) in enumerate(declared.params):
            var = pname or f"arbiter_p{k}_"
            names.append(var)
            default = defaults[k] if k < len(defaults) else ""
            params.append(f"{ptype} {var}" + (f" = {default}" if default else ""))
        args = "".join(", " + v for v in names)
        return (
            f"{declared.returns} {declared.name}({', '.join(params)}) {{\n"
            f"    return arbiter::call<{declared.returns}>({_cxx_string(declared.name)}{args});\n"
            "}\n"
        )

    def harness(self, parts: ProgramParts) -> Build:
        """The bridge, the prompt up to its open declaration, the stub, the tests."""
        task_text(parts.prompt, parts.tests, parts.setup_code)
        found = _open_declaration(parts.prompt, parts.entry_point)
        helpers = parts.prompt[: found.start]
        source = "\n".join(
            [
                '#line 1 "prompt"',
                helpers,
                '#line 1 "arbiter_stub.cpp"',
                self.stub(found.declared, found.defaults),
                '#line 1 "tests"',
                parts.setup_code,
                parts.tests,
                "",
            ]
        )
        libs = _libraries(helpers, parts.tests, parts.setup_code)
        return Build(
            files={"harness.cpp": source},
            compile=(
                (
                    "g++",
                    *CXXFLAGS,
                    *_bridge_include(),
                    "-o",
                    "harness",
                    "harness.cpp",
                    *_bridge_link(),
                    *libs,
                ),
            ),
            artifacts=("harness",),
            run=("./harness",),
            flags=CXXFLAGS + libs,
        )

    def prepare(self, toolchain: Toolchain, cache_dir: str) -> Toolchain:
        """Write the bridge under ``{cache}``, precompile its header and compile the rest.

        Every candidate and harness starts with the header (``-include``):
        precompiled, a compile skips parsing it and the standard headers it
        includes (on a HumanEvalPack candidate, 445 ms to 330 ms of g++,
        measured). Its parts that are not templates (the frames, the request
        loop, the reader's scanning, the errors' vtables) are compiled once into
        :data:`RUNTIME_OBJECT` and linked into both programs, so a compile
        generates only the code of its own task; with gold linking, a
        HumanEvalPack candidate's build takes 0.17 s of CPU where it took 0.33 s
        (ten rows, measured). The folder is built aside and
        renamed into place, so a second service preparing the same cache meets
        a whole one or none. A precompile that fails leaves the header alone,
        which g++ then reads as text; an object that does not compile is an
        error (no program could link).
        """
        final = Path(cache_dir, _bridge_dir())
        if not final.is_dir():
            building = Path(tempfile.mkdtemp(prefix="bridge.", dir=cache_dir))
            try:
                (building / RUNTIME).write_text(_runtime(), encoding="utf-8")
                (building / RUNTIME_SOURCE).write_text(_runtime_source(), encoding="utf-8")
                gxx = toolchain.paths.get("g++", "g++")

                made = _gxx(gxx, building, "-c", RUNTIME_SOURCE, "-o", RUNTIME_OBJECT)
                if made.returncode != 0:
                    text = made.stderr.decode("utf-8", "replace")[-2000:]
                    raise RuntimeError(f"the C++ bridge does not compile: {text}")
                (building / RUNTIME_SOURCE).unlink()
                (building / LINK_OPTIONS).write_text(_link_options(gxx, building), encoding="utf-8")
                made = _gxx(gxx, building, "-x", "c++-header", RUNTIME, "-o", f"{RUNTIME}.gch")
                if made.returncode != 0:
                    log.warning(
                        "the C++ bridge did not precompile (compiles read it as text): %s",
                        made.stderr.decode("utf-8", "replace")[-2000:],
                    )
                    (building / f"{RUNTIME}.gch").unlink(missing_ok=True)
                for path in building.iterdir():
                    path.chmod(0o644)
                building.chmod(0o755)
                try:
                    os.rename(building, final)
                except OSError:
                    if not final.is_dir():
                        raise
            finally:
                shutil.rmtree(building, ignore_errors=True)
        roots = tuple(dict.fromkeys((*toolchain.roots, cache_dir)))
        return Toolchain(paths=toolchain.paths, version=toolchain.version, roots=roots)

    def harness_passed(self, exit_code: int | None, stdout: str, stderr: str) -> tuple[int, int]:
        """One program, one test: the tests' ``main`` returned 0 (no assert failed)."""
        return (1 if exit_code == 0 else 0), 1

    # --- other programs --------------------------------------------------------------

    def program(self, code: str) -> Build:
        """The candidate's code alone, compiled with ``-O2``; it reads stdin."""
        libs = _libraries(source_text(code))
        return Build(
            files={"program.cpp": code},
            compile=(("g++", *PROGRAM_CXXFLAGS, "-o", "program", "program.cpp", *libs),),
            artifacts=("program",),
            run=("./program",),
            flags=PROGRAM_CXXFLAGS + libs,
        )

    def naive(self, parts: ProgramParts) -> Build:
        """The bridge's headers, the candidate's code and the tests, as one program."""
        source = "\n".join(
            [
                f'#include "{RUNTIME}"',
                '#line 1 "candidate.cpp"',
                parts.code,
                "",
                '#line 1 "tests"',
                parts.setup_code,
                parts.tests,
                "",
            ]
        )
        libs = _libraries(parts.code, parts.tests)
        return Build(
            files={RUNTIME: _runtime(), "naive.cpp": source},
            compile=(("g++", *CXXFLAGS, "-o", "naive", "naive.cpp", *libs),),
            artifacts=("naive",),
            run=("./naive",),
            flags=CXXFLAGS + libs,
        )


LANGUAGE = CppLanguage()
