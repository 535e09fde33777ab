"""Go: the candidate's code with a dispatcher, and the tests with stubs, in GOPATH mode.

One module, one job: Go's builds as data. The candidate's package, its dispatcher and
the stubbed tests are generated from one reading of the declaration, and their parts
must agree type for type.

The task's shape is HumanEvalPack's: ``setup_code`` is ``package main`` and the
imports of ``testing`` and testify's ``assert``; the prompt is an ``import``
block, the prompt's own helper functions, and the open declaration the
candidate continues (``func Name(params) Ret {``); the tests are
``func TestName(t *testing.T)``.

* **Candidate** (sandboxed): ``candidate.go`` is the candidate's code in
  ``package main``; ``zz_arbiter_dispatch.go`` checks the declared function's
  signature at compile time and serves it from an ``init`` that runs after the
  candidate's own (files initialize in name order) and never returns, so the
  candidate's ``main``, ``TestMain`` or ``os.Exit`` cannot stand for the
  dispatcher. Built with ``go build``: the standard library only, precompiled
  in GOROOT, the build cache under ``{out}``.
* **Harness** (trusted): one ``main_test.go`` with the setup, the prompt with a
  stub in place of the open declaration, and the tests, their imports merged
  (an import nothing in the file uses becomes a blank import); plus a file
  whose ``init`` prints the test names. Built with ``go test -c`` against
  testify under ``/usr/share/gocode``, the build cache under ``{private}`` (never
  readable by a sandboxed run: it holds the compiled tests); testify compiles
  there on the first harness build. The candidate's side uses the standard
  library only, which Debian ships precompiled.
* :meth:`~GoLanguage.naive`, the peers' harness, compiles where the candidate
  does (the sandbox): it copies ``{cache}/go-build``, the standard library and
  testify compiled once by :meth:`~GoLanguage.prepare` (nothing of a task).
* The bridge's runtime is the package ``arbiterbridge``
  (``runtime/arbiter_bridge.go``) under ``{out}/gopath``.
"""

from __future__ import annotations

import bisect
import itertools
import re
import shutil
import subprocess
import tempfile
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

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

__all__ = ["LANGUAGE", "GoLanguage", "Token", "tokenize"]

_RUNTIME = "arbiter_bridge.go"
_RUNTIME_PATH = "gopath/src/arbiterbridge/arbiter_bridge.go"
_BRIDGE_IMPORT = 'arbiterbridge "arbiterbridge"'
#: Where Debian's golang-github-stretchr-testify-dev puts testify (GOPATH layout).
_GOCODE = "/usr/share/gocode"
_TALLY = "ARBITER-GO-TESTS:"

_COMMON_ENV = {
    "GO111MODULE": "off",
    "CGO_ENABLED": "0",
    "GOENV": "off",
    "GOFLAGS": "-p=1",
    "GOMAXPROCS": "1",
}
#: The sandboxed builds: the bridge's package only; the build cache is the build's own.
_CANDIDATE_ENV = {**_COMMON_ENV, "GOPATH": "{out}/gopath", "GOCACHE": "{out}/.gocache"}
#: The naive build (compiled in the sandbox too): testify, and a copy of the prepared cache.
_NAIVE_ENV = {**_COMMON_ENV, "GOPATH": _GOCODE, "GOCACHE": "{out}/.gocache"}
#: What :meth:`GoLanguage.prepare` compiles into ``{cache}``: public, task-independent.
_PREPARED = "github.com/stretchr/testify/assert"
#: The trusted builds: testify too, and a build cache kept between builds.
_HARNESS_ENV = {
    **_COMMON_ENV,
    "GOPATH": "{out}/gopath:" + _GOCODE,
    "GOCACHE": "{private}/go-build",
}

#: Packages added when code uses them without importing them, as HumanEvalPack's
#: own harness does (a completion that continues the prompt cannot add an import):
#: name -> (path, an exported name to anchor the import with ``var _ = pkg.X``, so
#: that a local variable of the same name cannot leave it unused).
_AUTO_IMPORTS = {
    "math": ("math", "Abs"),
    "strings": ("strings", "Compare"),
    "fmt": ("fmt", "Sprint"),
    "strconv": ("strconv", "Itoa"),
    "time": ("time", "Now"),
    "bytes": ("bytes", "Compare"),
    "regexp": ("regexp", "MustCompile"),
    "sort": ("sort", "Ints"),
    "rand": ("math/rand", "Intn"),
    "md5": ("crypto/md5", "Sum"),
    "unicode": ("unicode", "IsUpper"),
    "utf8": ("unicode/utf8", "RuneLen"),
    "bits": ("math/bits", "Len"),
    "big": ("math/big", "NewInt"),
    "errors": ("errors", "New"),
    "heap": ("container/heap", "Init"),
}

_KEYWORDS = frozenset(
    {
        "break", "case", "chan", "const", "continue", "default", "defer", "else",
        "fallthrough", "for", "func", "go", "goto", "if", "import", "interface", "map",
        "package", "range", "return", "select", "struct", "switch", "type", "var",
    }
)  # fmt: skip
_BASIC_TYPES = frozenset(
    {
        "bool", "string", "int", "int8", "int16", "int32", "int64", "uint", "uint8",
        "uint16", "uint32", "uint64", "uintptr", "byte", "rune", "float32", "float64",
        "error", "any",
    }
)  # fmt: skip


# ---------------------------------------------------------------- tokens


@dataclass(frozen=True, slots=True)
class Token:
    """One Go token: ``kind`` is ident, number, string, char or op, at ``start:end``."""

    kind: str
    text: str
    start: int
    end: int


_OPS3 = ("...", "<<=", ">>=", "&^=")
_OPS2 = (
    ":=", "==", "!=", "<=", ">=", "&&", "||", "<-", "++", "--", "+=", "-=", "*=", "/=",
    "%=", "&=", "|=", "^=", "<<", ">>", "&^",
)  # fmt: skip


def tokenize(text: str) -> list[Token]:
    """Split Go source into tokens, leaving out comments and white space.

    Lenient: an unterminated comment, string or character ends at the end of the text.
    """
    tokens: list[Token] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c in " \t\r\n\f\v":
            i += 1
        elif text.startswith("//", i):
            end = text.find("\n", i)
            i = n if end < 0 else end
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            i = n if end < 0 else end + 2
        elif c == "`":
            end = text.find("`", i + 1)
            end = n if end < 0 else end + 1
            tokens.append(Token("string", text[i:end], i, end))
            i = end
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            end = min(j + 1, n)
            tokens.append(Token("string" if c == '"' else "char", text[i:end], i, end))
            i = end
        elif c.isalpha() or c == "_" or ord(c) > 127:
            j = i + 1
            while j < n and (text[j].isalnum() or text[j] == "_" or ord(text[j]) > 127):
                j += 1
            tokens.append(Token("ident", text[i:j], i, j))
            i = j
        elif c.isdigit() or (c == "." and i + 1 < n and text[i + 1].isdigit()):
            hexa = text[i : i + 2] in ("0x", "0X")
            j = i + 1
            while j < n:
                sign = text[j] in "+-" and text[j - 1] in ("pP" if hexa else "eE")
                if sign or text[j].isalnum() or text[j] in "._":
                    j += 1
                else:
                    break
            tokens.append(Token("number", text[i:j], i, j))
            i = j
        else:
            for op in (*_OPS3, *_OPS2):
                if text.startswith(op, i):
                    tokens.append(Token("op", op, i, i + len(op)))
                    i += len(op)
                    break
            else:
                tokens.append(Token("op", c, i, i + 1))
                i += 1
    return tokens


def _is(tok: Token | None, *texts: str) -> bool:
    return tok is not None and tok.kind != "string" and tok.text in texts


def _closing(tokens: list[Token], i: int) -> int | None:
    """The index of the bracket closing the one at ``i``, or ``None`` if it never closes."""
    pairs = {"(": ")", "[": "]", "{": "}"}
    stack = [pairs[tokens[i].text]]
    for j in range(i + 1, len(tokens)):
        t = tokens[j]
        if t.kind != "op":
            continue
        if t.text in pairs:
            stack.append(pairs[t.text])
        elif t.text in (")", "]", "}"):
            if t.text != stack[-1]:
                return None
            stack.pop()
            if not stack:
                return j
    return None


def _top_level(tokens: list[Token]) -> list[int]:
    """Indices of the tokens at bracket depth 0 (the starts of declarations among them)."""
    out: list[int] = []
    i = 0
    while i < len(tokens):
        out.append(i)
        if _is(tokens[i], "(", "[", "{"):
            j = _closing(tokens, i)
            if j is None:
                break
            i = j
        i += 1
    return out


# ---------------------------------------------------------------- a file's header


@dataclass(frozen=True, slots=True)
class _Import:
    name: str | None  # the alias as written: None, "_", "." or an identifier
    path: str  # unquoted
    name_tok: Token | None
    path_tok: Token


@dataclass(frozen=True, slots=True)
class _Header:
    package: Token | None  # the package's name
    package_start: int  # where the package clause begins (-1 when there is none)
    imports: tuple[_Import, ...]
    body: int  # where the text after the imports begins


def _unquote(tok: Token) -> str | None:
    r"""Return an import path's text, or ``None`` when its escapes do not decode.

    The header may be the candidate's: ``import "\x"`` is for the compiler to refuse,
    not for this reader to raise on (it raised ``UnicodeDecodeError``, a crash of ours).
    """
    if tok.text.startswith("`"):
        return tok.text.strip("`")
    try:
        with warnings.catch_warnings():
            # "invalid octal escape" is a DeprecationWarning, an error under -W error.
            warnings.simplefilter("ignore")
            return tok.text[1:-1].encode("latin-1", "backslashreplace").decode("unicode_escape")
    except UnicodeDecodeError:
        return None


def _header(text: str, tokens: list[Token] | None = None) -> _Header:
    """The package clause and import declarations at the start of ``text``.

    Never raises: an import it cannot read ends the header there, and the
    compiler reports it (the text may be the candidate's).
    """
    toks = tokenize(text) if tokens is None else tokens
    i, package, package_start = 0, None, -1
    if _is(toks[0] if toks else None, "package") and len(toks) > 1 and toks[1].kind == "ident":
        package, package_start, i = toks[1], toks[0].start, 2
    while i < len(toks) and _is(toks[i], ";"):
        i += 1
    imports: list[_Import] = []
    body = toks[i - 1].end if i else 0
    while i < len(toks) and _is(toks[i], "import"):
        j = i + 1
        grouped = _is(toks[j] if j < len(toks) else None, "(")
        j += 1 if grouped else 0
        specs: list[_Import] = []
        closed = False
        while j < len(toks):
            t = toks[j]
            if grouped and _is(t, ")"):
                j, closed = j + 1, True
                break
            if _is(t, ";"):
                j += 1
                continue
            name_tok = None
            if t.kind == "ident" or _is(t, "."):
                name_tok, j = t, j + 1
            if j >= len(toks) or toks[j].kind != "string":
                break
            path_tok = toks[j]
            path = _unquote(path_tok)
            if path is None:
                break
            specs.append(_Import(name_tok.text if name_tok else None, path, name_tok, path_tok))
            j += 1
            if not grouped:
                closed = True
                break
        if not closed:
            break  # unreadable: the rest, this import with it, is the body
        imports.extend(specs)
        i, body = j, toks[j - 1].end
        while i < len(toks) and _is(toks[i], ";"):
            body, i = toks[i].end, i + 1
    return _Header(package, package_start, tuple(imports), body)


def _package_name(path: str) -> str | None:
    """The name an import of ``path`` binds, where it is sure (a last element that is one)."""
    last = path.rstrip("/").rsplit("/", 1)[-1]
    if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", last) and not re.fullmatch(r"v[0-9]+", last):
        return last
    return None


def _used_names(tokens: list[Token]) -> set[str]:
    """Identifiers followed by a ``.``: the package names a text may use."""
    return {t.text for t, nxt in itertools.pairwise(tokens) if t.kind == "ident" and _is(nxt, ".")}


def _spec(imp: _Import, used: set[str]) -> str:
    """One import spec, blank when the text never names its package."""
    quoted = imp.path_tok.text
    if imp.name in ("_", "."):
        return f"{imp.name} {quoted}"
    bound = imp.name or _package_name(imp.path)
    if bound is not None and bound not in used:
        return f"_ {quoted}"
    return f"{imp.name} {quoted}" if imp.name else quoted


def _blank_unused(text: str) -> str:
    """``text`` with each import that the rest of the file never uses made blank, in place.

    Go refuses an unused import; the prompt imports what the reference solution
    used, which another solution may not. Line numbers are kept.
    """
    tokens = tokenize(text)
    head = _header(text, tokens)
    used = _used_names([t for t in tokens if t.start >= head.body])
    edits: list[tuple[int, int, str]] = []
    for imp in head.imports:
        spec = _spec(imp, used)
        start = imp.name_tok.start if imp.name_tok else imp.path_tok.start
        if spec != text[start : imp.path_tok.end]:
            edits.append((start, imp.path_tok.end, spec))
    # Joined once: one copy of the text per edit is quadratic in a header of many imports.
    pieces, at = [], 0
    for start, end, spec in edits:
        pieces += [text[at:start], spec]
        at = end
    pieces.append(text[at:])
    return "".join(pieces)


def _top_names(text: str, tokens: list[Token]) -> set[str]:
    """Names a text declares at top level: functions, types, variables, constants."""
    names: set[str] = set()
    top = _top_level(tokens)
    for i in top:
        t = tokens[i]
        if not _is(t, "func", "type", "var", "const") or i + 1 >= len(tokens):
            continue
        nxt = tokens[i + 1]
        if nxt.kind == "ident":
            names.add(nxt.text)
            j = i + 2
            while t.text in ("var", "const") and j + 1 < len(tokens) and _is(tokens[j], ","):
                if tokens[j + 1].kind == "ident":
                    names.add(tokens[j + 1].text)
                j += 2
        elif _is(nxt, "(") and t.text != "func":
            close = _closing(tokens, i + 1) or len(tokens)
            fresh = True
            for j in range(i + 2, close):
                if fresh and tokens[j].kind == "ident":
                    names.add(tokens[j].text)
                fresh = _is(tokens[j], ";") or (
                    j + 1 < close and "\n" in text[tokens[j].end : tokens[j + 1].start]
                )
    return names


def _missing_imports(
    text: str, tokens: list[Token], body: int, bound: set[str]
) -> list[tuple[str, str]]:
    """The packages of :data:`_AUTO_IMPORTS` the text uses after ``body`` and never imports."""
    used = _used_names([t for t in tokens if t.start >= body])
    declared = _top_names(text, tokens)
    return [
        (name, _AUTO_IMPORTS[name][0])
        for name in sorted(used)
        if name in _AUTO_IMPORTS and name not in bound and name not in declared
    ]


def _bound(imports: tuple[_Import, ...] | list[_Import]) -> set[str]:
    return {b for imp in imports if (b := imp.name or _package_name(imp.path))}


def _anchors(missing: list[tuple[str, str]]) -> str:
    return "".join(f"\nvar _ = {name}.{_AUTO_IMPORTS[name][1]}\n" for name, _ in missing)


def _add_missing(code: str) -> str:
    """``code`` (with a package clause) importing what it uses from :data:`_AUTO_IMPORTS`."""
    tokens = tokenize(code)
    head = _header(code, tokens)
    missing = _missing_imports(code, tokens, head.body, _bound(head.imports))
    if not missing or head.package is None:
        return code
    imports = "".join(f'; import "{path}"' for _, path in missing)
    at = head.package.end
    return code[:at] + imports + code[at:] + _anchors(missing)


def _as_main(code: str) -> str:
    """The candidate's code as a file of ``package main``: its clause renamed or one added."""
    head = _header(code)
    if head.package is None:
        return "package main; " + code  # on the first line: the code's line numbers stay
    return code[: head.package.start] + "main" + code[head.package.end :]


def _merge(parts: list[str], package: str, extra_imports: tuple[str, ...] = ()) -> str:
    """One file from fragments: one package clause, their imports merged, then their bodies.

    An import nothing uses becomes blank; a package of :data:`_AUTO_IMPORTS` used
    but not imported is added, as HumanEvalPack's harness does.
    """
    specs: list[_Import] = []
    bodies: list[str] = []
    for part in parts:
        head = _header(part)
        specs.extend(head.imports)
        bodies.append(part[head.body :])
    rest = "\n".join(bodies)
    tokens = tokenize(rest)
    used = _used_names(tokens)
    missing = _missing_imports(rest, tokens, 0, _bound(specs) | {"arbiterbridge"})
    lines, seen = [], set()
    for imp in specs:
        spec = _spec(imp, used)
        key = (imp.name, imp.path)
        if key not in seen:
            seen.add(key)
            lines.append(spec)
    lines.extend(f'"{path}"' for _, path in missing)
    lines.extend(extra_imports)
    imports = "import (\n" + "".join(f"\t{line}\n" for line in lines) + ")\n" if lines else ""
    return f"package {package}\n\n{imports}{rest}{_anchors(missing)}"


# ---------------------------------------------------------------- declarations


@dataclass(frozen=True, slots=True)
class _Func:
    name: str
    start: int  # where ``func`` begins
    header_end: int  # after the body's opening brace
    end: int | None  # after the body's closing brace; None when it stays open
    params: tuple[tuple[str, str], ...]  # (name, type) with the type normalized
    results: tuple[str, ...]
    variadic: bool
    header: str
    refused: str = ""  # why the signature cannot cross the bridge


_DEFAULT_SETUP = (
    'package main\n\nimport (\n\t"testing"\n\t"github.com/stretchr/testify/assert"\n)\n'
)


#: The deepest type :class:`_Types` reads (``[][]map[string]*T`` is 4).
_MAX_TYPE_DEPTH = 100


class _Types:
    """Reads a Go type from tokens, normalized, refusing what the bridge cannot carry."""

    def __init__(self, tokens: list[Token], declared: frozenset[str]) -> None:
        self.toks = tokens
        self.declared = declared

    def at(self, i: int) -> Token | None:
        return self.toks[i] if i < len(self.toks) else None

    def read(self, i: int, depth: int = 0) -> tuple[str, int]:
        # A bound on the recursion: the text may be the candidate's (``defines`` reads
        # every signature), and ``**...*int`` deeper than Python's stack is no type
        # the bridge carries.
        if depth > _MAX_TYPE_DEPTH:
            raise UnsupportedTask(f"a type is nested more than {_MAX_TYPE_DEPTH} deep")
        t = self.at(i)
        if t is None:
            raise UnsupportedTask("a type ends early")
        if _is(t, "*"):
            inner, i = self.read(i + 1, depth + 1)
            return "*" + inner, i
        if _is(t, "("):
            inner, i = self.read(i + 1, depth + 1)
            if not _is(self.at(i), ")"):
                raise UnsupportedTask("a parenthesized type is not closed")
            return inner, i + 1
        if _is(t, "["):
            nxt = self.at(i + 1)
            if _is(nxt, "]"):
                inner, i = self.read(i + 2, depth + 1)
                return "[]" + inner, i
            if nxt is not None and nxt.kind == "number" and _is(self.at(i + 2), "]"):
                if not re.fullmatch(r"[0-9]+", nxt.text):
                    raise UnsupportedTask(f"an array length {nxt.text!r} is not a decimal")
                inner, i = self.read(i + 3, depth + 1)
                return f"[{int(nxt.text)}]" + inner, i
            raise UnsupportedTask("an array type's length must be a decimal number")
        if _is(t, "map"):
            if not _is(self.at(i + 1), "["):
                raise UnsupportedTask("a map type needs [")
            key, i = self.read(i + 2, depth + 1)
            if not _is(self.at(i), "]"):
                raise UnsupportedTask("a map type's key is not closed")
            value, i = self.read(i + 1, depth + 1)
            return f"map[{key}]{value}", i
        if _is(t, "interface"):
            if _is(self.at(i + 1), "{") and _is(self.at(i + 2), "}"):
                return "interface{}", i + 3
            raise UnsupportedTask("only the empty interface can cross the bridge")
        if t.kind == "ident" and t.text not in _KEYWORDS:
            if _is(self.at(i + 1), "."):
                raise UnsupportedTask(f"the type {t.text}.… of another package cannot cross")
            if _is(self.at(i + 1), "[") and not _is(self.at(i + 2), "]"):
                raise UnsupportedTask(f"the generic type {t.text}[…] cannot cross the bridge")
            if t.text in ("complex64", "complex128"):
                raise UnsupportedTask(f"a {t.text} cannot cross the bridge")
            if t.text not in _BASIC_TYPES and t.text not in self.declared:
                raise UnsupportedTask(f"the type {t.text} is not declared by the prompt")
            return t.text, i + 1
        raise UnsupportedTask(f"a {t.text} type cannot cross the bridge")


def _declared_types(text: str, tokens: list[Token]) -> frozenset[str]:
    """The type names a text declares at top level (``type X ...``, ``type ( X ...; Y ... )``)."""
    names: set[str] = set()
    for i in _top_level(tokens):
        if not _is(tokens[i], "type") or i + 1 >= len(tokens):
            continue
        nxt = tokens[i + 1]
        if nxt.kind == "ident":
            names.add(nxt.text)
        elif _is(nxt, "("):
            close = _closing(tokens, i + 1)
            end = close if close is not None else len(tokens)
            j, spec_starts = i + 2, True
            while j < end:
                t = tokens[j]
                if spec_starts and t.kind == "ident":
                    names.add(t.text)
                spec_starts = False
                if _is(t, "(", "[", "{"):
                    j = _closing(tokens, j) or end
                    if j >= end:
                        break
                if _is(tokens[j], ";") or (
                    j + 1 < end and "\n" in text[tokens[j].end : tokens[j + 1].start]
                ):
                    spec_starts = True
                j += 1
    return frozenset(names)


def _split_commas(tokens: list[Token], lo: int, hi: int) -> list[tuple[int, int]]:
    pieces, start, i = [], lo, lo
    while i < hi:
        if _is(tokens[i], "(", "[", "{"):
            i = _closing(tokens, i) or hi
        elif _is(tokens[i], ","):
            pieces.append((start, i))
            start = i + 1
        i += 1
    if start < hi:
        pieces.append((start, hi))
    return pieces


def _fields(
    tokens: list[Token], lo: int, hi: int, declared: frozenset[str]
) -> tuple[list[tuple[str, str]], bool]:
    """Parameters (or results) between ``lo`` and ``hi``: (name, type) pairs, and variadic."""
    pieces = _split_commas(tokens, lo, hi)
    named = any(
        hi2 - lo2 >= 2
        and tokens[lo2].kind == "ident"
        and tokens[lo2].text not in _KEYWORDS
        and not _is(tokens[lo2 + 1], ".")
        for lo2, hi2 in pieces
    )
    reader = _Types(tokens, declared)
    out: list[tuple[str, str]] = []
    pending: list[str] = []
    variadic = False
    for k, (a, b) in enumerate(pieces):
        name = ""
        if named:
            name, a = tokens[a].text, a + 1
            if a == b:
                pending.append(name)
                continue
        if _is(tokens[a], "..."):
            if k != len(pieces) - 1:
                raise UnsupportedTask("only the last parameter can be variadic")
            variadic, a = True, a + 1
        typ, end = reader.read(a)
        if end != b:
            raise UnsupportedTask(f"cannot read the type near {tokens[min(end, b - 1)].text!r}")
        for p in pending:
            out.append((p, typ))
        pending = []
        out.append((name, typ))
    if pending:
        raise UnsupportedTask("a parameter has no type")
    return out, variadic


def _funcs(text: str, declared: frozenset[str] | None = None) -> list[_Func]:
    """The top-level functions (not methods) a text declares, open or closed."""
    tokens = tokenize(text)
    types = _declared_types(text, tokens) if declared is None else declared
    found: list[_Func] = []
    bodies = _Bodies(tokens)
    top = _top_level(tokens)
    for idx in top:
        if not _is(tokens[idx], "func") or idx + 1 >= len(tokens):
            continue
        name_tok = tokens[idx + 1]
        if name_tok.kind != "ident":
            continue  # a method, or a function literal
        i = idx + 2
        if _is(tokens[i] if i < len(tokens) else None, "["):
            why = "a generic function cannot cross the bridge"
            found.append(_unsupported(name_tok, tokens, idx, why, bodies))
            continue
        if i >= len(tokens) or not _is(tokens[i], "("):
            continue
        close = _closing(tokens, i)
        if close is None:
            continue
        try:
            params, variadic = _fields(tokens, i + 1, close, types)
            results, body = _results(tokens, close + 1, types)
        except UnsupportedTask as e:
            found.append(_unsupported(name_tok, tokens, idx, str(e), bodies))
            continue
        if body is None:
            continue  # a declaration without a body (assembly): not the candidate's
        end_tok = _closing(tokens, body)
        found.append(
            _Func(
                name=name_tok.text,
                start=tokens[idx].start,
                header_end=tokens[body].end,
                end=None if end_tok is None else tokens[end_tok].end,
                params=tuple(params),
                results=tuple(results),
                variadic=variadic,
                header=text[tokens[idx].start : tokens[body].start].rstrip(),
            )
        )
    return found


class _Bodies:
    """Where each refused declaration's body is, found once for a whole text.

    A refused signature's body is the next ``{`` that opens one; looked for from
    each declaration, and its end from each, a response of many refused ``func f()``
    before one brace would be read once per declaration: quadratic.
    """

    def __init__(self, tokens: list[Token]) -> None:
        self.tokens = tokens
        self.opens: list[int] | None = None
        self.ends: dict[int, int | None] = {}

    def after(self, j: int) -> int | None:
        """Return the index of the first ``{`` past ``j`` that opens a body, or ``None``."""
        if self.opens is None:
            toks = self.tokens
            self.opens = [k for k, t in enumerate(toks) if _is(t, "{") and _opens_body(toks, k)]
        at = bisect.bisect_right(self.opens, j)
        return self.opens[at] if at < len(self.opens) else None

    def closing(self, j: int) -> int | None:
        """Return :func:`_closing` of the brace at ``j``, read once."""
        if j not in self.ends:
            self.ends[j] = _closing(self.tokens, j)
        return self.ends[j]


def _unsupported(
    name_tok: Token, tokens: list[Token], idx: int, why: str, bodies: _Bodies
) -> _Func:
    body = bodies.after(idx + 1)
    end_tok = bodies.closing(body) if body is not None else None
    return _Func(
        name=name_tok.text,
        start=tokens[idx].start,
        header_end=tokens[body].end if body is not None else tokens[-1].end,
        end=None if end_tok is None else tokens[end_tok].end,
        params=(),
        results=(),
        variadic=False,
        header="",
        refused=why,
    )


def _opens_body(tokens: list[Token], j: int) -> bool:
    return j == 0 or not _is(tokens[j - 1], "interface", "struct")


def _results(tokens: list[Token], i: int, declared: frozenset[str]) -> tuple[list[str], int | None]:
    """The result types after a parameter list at ``i``, and the index of the body's ``{``."""
    t = tokens[i] if i < len(tokens) else None
    if t is None:
        return [], None
    if _is(t, "{"):
        return [], i
    if _is(t, "("):
        close = _closing(tokens, i)
        if close is None:
            raise UnsupportedTask("a result list is not closed")
        fields, variadic = _fields(tokens, i + 1, close, declared)
        if variadic:
            raise UnsupportedTask("a result cannot be variadic")
        j = close + 1
        return [typ for _, typ in fields], (j if j < len(tokens) and _is(tokens[j], "{") else None)
    typ, j = _Types(tokens, declared).read(i)
    return [typ], (j if j < len(tokens) and _is(tokens[j], "{") else None)


# ---------------------------------------------------------------- the language


class GoLanguage(Language):
    """Go 1.19 in GOPATH mode: ``go build`` for the candidate, ``go test -c`` for the harness."""

    name: ClassVar[str] = "go"
    tags: ClassVar[tuple[str, ...]] = ("go", "golang")
    #: ``cp`` copies the prepared build cache into a naive build's directory.
    tools: ClassVar[tuple[str, ...]] = ("go", "cp")
    version_command: ClassVar[tuple[str, ...]] = ("go", "version")
    #: GOROOT's ``src`` is a link into /usr/share/go-1.19 on Debian: ``go build`` reads it.
    #: testify's sources (/usr/share/gocode) are read by the naive build only.
    extra_roots: ClassVar[tuple[str, ...]] = ("/usr/share/go-1.19", _GOCODE)
    #: Measured under a fresh uid with GOMAXPROCS=1: a run reserves about 700 MiB
    #: of address space before its first allocation (its heap's soft limit is
    #: RLIMIT_AS minus this 1024, see the runtime's ``addressSpaceReserveMB``) and
    #: serves calls with 4 threads; ``go build`` (go, compile, link one at a time)
    #: needs 10 processes and threads, under 768 MiB each, about 280 inodes and
    #: 3.5 MB of the build directory (the binary is about 2 MB).
    limits: ClassVar[LanguageLimits] = LanguageLimits(
        address_space_mb=1024,
        threads=8,
        compile_cpu_s=30.0,
        compile_memory_mb=2048,
        compile_processes=32,
    )
    out_of_memory: ClassVar[tuple[re.Pattern[str], ...]] = (
        re.compile(r"^runtime: out of memory", re.M),
        re.compile(r"^fatal error: (runtime: cannot allocate memory|out of memory)", re.M),
    )

    # -- reading the task

    def defines(self, code: str, name: str) -> bool:
        """Whether ``code`` declares the top-level function ``name`` (with a body)."""
        return any(f.name == name and f.end is not None for f in _funcs(code, frozenset()))

    def _declaration(self, parts: ProgramParts) -> _Func:
        funcs = _funcs(parts.prompt)
        if parts.entry_point:
            chosen = [f for f in funcs if f.name == parts.entry_point]
            if not chosen:
                raise UnsupportedTask(f"the prompt declares no func {parts.entry_point}")
            found = chosen[-1]
        else:
            open_ = [f for f in funcs if f.end is None]
            if not open_:
                raise UnsupportedTask("the prompt ends in no open func declaration")
            found = open_[-1]
        if found.refused:
            raise UnsupportedTask(f"func {found.name}: {found.refused}")
        return found

    def declared(self, parts: ProgramParts) -> list[Declared]:
        """The prompt's open declaration (or its ``entry_point``): the function the tests call."""
        f = self._declaration(parts)
        params = tuple(
            (name, ("..." if f.variadic and k == len(f.params) - 1 else "") + typ)
            for k, (name, typ) in enumerate(f.params)
        )
        returns = f.results[0] if len(f.results) == 1 else (
            "(" + ", ".join(f.results) + ")" if f.results else ""
        )  # fmt: skip
        return [Declared(name=f.name, header=f.header, params=params, returns=returns)]

    # -- the builds

    def _runtime(self) -> str:
        return (Path(__file__).with_name("runtime") / _RUNTIME).read_text(encoding="utf-8")

    def candidate(self, parts: ProgramParts) -> Build:
        """The candidate's code as ``package main`` and a dispatcher that serves the function."""
        task_text(parts.prompt)
        f = self._declaration(parts)
        code = _add_missing(_blank_unused(_as_main(source_text(parts.code))))
        has_main = any(g.name == "main" for g in _funcs(code, frozenset()))
        signature = _signature(f)
        dispatch = (
            "package main\n\n"
            f"import {_BRIDGE_IMPORT}\n\n"
            f"var _ {signature} = {f.name}\n\n"
            "func init() {\n"
            f'\tarbiterbridge.Serve(map[string]interface{{}}{{"{f.name}": {f.name}}})\n'
            "}\n"
        )
        if not has_main:
            dispatch += "\nfunc main() {}\n"
        return Build(
            files={
                "candidate.go": code,
                "zz_arbiter_dispatch.go": dispatch,
                _RUNTIME_PATH: self._runtime(),
            },
            compile=(("go", "build", "-o", "cand", "."),),
            artifacts=("cand",),
            run=("./cand",),
            env=dict(_CANDIDATE_ENV),
        )

    def harness(self, parts: ProgramParts) -> Build:
        """Setup, the prompt with a stub for the declared function, and the tests: one file."""
        task_text(parts.prompt, parts.tests, parts.setup_code)
        f = self._declaration(parts)
        names = _test_names(parts.tests)
        if not names:
            raise UnsupportedTask("the tests declare no func TestXxx(t *testing.T)")
        prompt = parts.prompt
        tail = "" if f.end is None else prompt[f.end :]
        prompt = prompt[: f.start] + _stub(f) + tail
        setup = parts.setup_code if parts.setup_code.strip() else _DEFAULT_SETUP
        package = _package_of(setup)
        main = _merge([setup, prompt, parts.tests], package, (_BRIDGE_IMPORT,))
        tally = (
            f"package {package}\n\n"
            'import (\n\t"fmt"\n\t"os"\n)\n\n'
            f'func init() {{ fmt.Fprintln(os.Stdout, "{_TALLY} {" ".join(names)}") }}\n'
        )
        return Build(
            files={
                "main_test.go": main,
                "zz_arbiter_tally_test.go": tally,
                _RUNTIME_PATH: self._runtime(),
            },
            compile=(("go", "test", "-c", "-vet=off", "-o", "harness.test", "."),),
            artifacts=("harness.test",),
            run=("./harness.test", "-test.v"),
            env=dict(_HARNESS_ENV),
        )

    def program(self, code: str) -> Build:
        """The candidate's code alone as ``package main`` (reads stdin, writes stdout)."""
        limits = 'package main\n\nimport _ "arbiterbridge"\n'
        return Build(
            files={
                "main.go": _add_missing(_blank_unused(_as_main(source_text(code)))),
                "zz_arbiter_limits.go": limits,
                _RUNTIME_PATH: self._runtime(),
            },
            compile=(("go", "build", "-o", "prog", "."),),
            artifacts=("prog",),
            run=("./prog",),
            env=dict(_CANDIDATE_ENV),
        )

    def naive(self, parts: ProgramParts) -> Build:
        """HumanEvalPack's own harness: setup, the candidate's code and the tests in one file.

        Compiled where the candidate's build is (the sandbox): its build cache is
        a copy of the one :meth:`prepare` made, so testify is not compiled again.
        """
        setup = parts.setup_code if parts.setup_code.strip() else _DEFAULT_SETUP
        package = _package_of(setup)
        main = _merge([setup, parts.code, parts.tests], package)
        return Build(
            files={"main_test.go": main},
            compile=(
                ("cp", "-R", "{cache}/go-build", "{out}/.gocache"),
                ("go", "test", "-c", "-vet=off", "-o", "naive.test", "."),
            ),
            artifacts=("naive.test",),
            run=("./naive.test", "-test.v"),
            env=dict(_NAIVE_ENV),
        )

    def prepare(self, toolchain: Toolchain, cache_dir: str) -> Toolchain:
        """Compile testify and the standard library without cgo into ``{cache}/go-build``.

        Public and task-independent: the naive build copies it (a sandboxed run can
        read ``{cache}``). The harness never writes there: its cache is ``{private}``.
        """
        go = toolchain.paths.get("go", "go")
        with tempfile.TemporaryDirectory() as home:
            env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": home, "TMPDIR": home}
            env.update({**_NAIVE_ENV, "GOCACHE": str(Path(cache_dir, "go-build"))})
            subprocess.run(
                [go, "build", _PREPARED],
                cwd=home,
                env=env,
                capture_output=True,
                timeout=600,
                check=False,
            )
        roots = tuple(dict.fromkeys((*toolchain.roots, cache_dir)))
        return Toolchain(paths=toolchain.paths, version=toolchain.version, roots=roots)

    def seed_private(self, cache_dir: str, private: str) -> None:
        """Copy the prepared build cache into the harnesses' own, once.

        A cold harness cache compiled the standard library and testify (with
        net/http under it) for the first harness: 10 s of one core quiet, past
        its limit beside other compiles on a busy host. Seeded, 0.8 s. Go reads
        a cache entry by the hash of its inputs, so a copy serves the harness's
        builds exactly as the cache it was built in.
        """
        prepared = Path(cache_dir, "go-build")
        seeded = Path(private, "go-build")
        if not prepared.is_dir() or seeded.exists():
            return
        partial = Path(private, "go-build.seeding")
        shutil.rmtree(partial, ignore_errors=True)
        shutil.copytree(prepared, partial, symlinks=True)
        partial.rename(seeded)

    # -- the verdict

    def harness_passed(self, exit_code: int | None, stdout: str, stderr: str) -> tuple[int, int]:
        """Tests passed and tests declared, from ``-test.v``'s ``--- PASS``/``--- FAIL`` lines.

        The declared names are the ones the harness printed first (its own
        ``init``); a test passes when a line at column 0 says so and none says it
        failed. A run that did not exit 0 never counts every test as passed.
        """
        names: list[str] | None = None
        passed: set[str] = set()
        failed: set[str] = set()
        for line in stdout.splitlines():
            if names is None:
                if line.startswith(_TALLY):
                    names = line[len(_TALLY) :].split()
                continue
            m = re.match(r"--- (PASS|FAIL|SKIP): (\S+) \(", line)
            if m:
                (passed if m.group(1) == "PASS" else failed).add(m.group(2))
        if not names:
            return 0, 1
        count = sum(1 for n in set(names) if n in passed and n not in failed)
        total = len(set(names))
        if exit_code != 0:
            count = min(count, total - 1)
        return count, total


def _package_of(setup: str) -> str:
    head = _header(setup)
    return head.package.text if head.package is not None else "main"


def _signature(f: _Func) -> str:
    types = [
        ("..." if f.variadic and k == len(f.params) - 1 else "") + typ
        for k, (_, typ) in enumerate(f.params)
    ]
    results = "" if not f.results else (
        " " + f.results[0] if len(f.results) == 1 else " (" + ", ".join(f.results) + ")"
    )  # fmt: skip
    return f"func({', '.join(types)}){results}"


def _stub(f: _Func) -> str:
    """The declared function as a call over the bridge (its parameters renamed: nothing shadows)."""
    params = ", ".join(
        f"arbiterArg{k} " + ("..." if f.variadic and k == len(f.params) - 1 else "") + typ
        for k, (_, typ) in enumerate(f.params)
    )
    results = "" if not f.results else (
        " " + f.results[0] if len(f.results) == 1 else " (" + ", ".join(f.results) + ")"
    )  # fmt: skip
    lines = [f"func {f.name}({params}){results} {{"]
    for k, typ in enumerate(f.results):
        lines.append(f"\tvar arbiterRes{k} {typ}")
    args = ", ".join(f"&arbiterArg{k}" for k in range(len(f.params)))
    res = ", ".join(f"&arbiterRes{k}" for k in range(len(f.results)))
    lines.append(
        f'\tarbiterbridge.Call("{f.name}", []interface{{}}{{{args}}}, []interface{{}}{{{res}}})'
    )
    if f.results:
        lines.append("\treturn " + ", ".join(f"arbiterRes{k}" for k in range(len(f.results))))
    lines.append("}\n")
    return "\n".join(lines)


def _test_names(tests: str) -> list[str]:
    """The ``func TestXxx(t *testing.T)`` the tests declare, in order."""
    tokens = tokenize(tests)
    names: list[str] = []
    for i in _top_level(tokens):
        if not _is(tokens[i], "func") or i + 8 >= len(tokens):
            continue
        name = tokens[i + 1]
        if name.kind != "ident" or not re.fullmatch(r"Test([^a-z].*)?", name.text):
            continue
        sig = [t.text for t in tokens[i + 2 : i + 9]]
        if tokens[i + 3].kind == "ident" and sig[:1] + sig[2:] == [
            "(",
            "*",
            "testing",
            ".",
            "T",
            ")",
        ]:
            names.append(name.text)
    return names


LANGUAGE = GoLanguage()
