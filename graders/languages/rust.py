"""Rust: rustc builds of the candidate (a library crate and a dispatcher) and the harness (libtest).

One module, one job: Rust's builds as data. The candidate's crate, its dispatcher and
the harness are generated from one reading of the declaration, and their parts must
agree type for type.

The candidate's code is compiled as a library crate (``candidate.rs``) with a
generated module appended that serves the declared functions over descriptor
3; a two-line ``main.rs`` links it and calls the dispatcher's loop. The code's
own ``fn main`` (HumanEvalPack prompts open with ``fn main(){}``) stays an
unused function of the library, and ``crate::`` paths in the code still mean
its own crate.

The harness is the prompt's trusted text (its ``use`` lines, its finished
helper functions) with a stub in place of the open declaration, the bridge
module and the task's ``#[cfg(test)] mod tests``, compiled with ``rustc --test``
and run on one thread (``--test-threads=1``: RLIMIT_NPROC counts threads, and
the tests then share descriptor 3 one call at a time). Its verdict is libtest's
tally, read from its own output (:meth:`RustLanguage.harness_passed`).

Parameters declared as references (``&str``, ``&[i32]``, ``&Vec<f64>``,
``Vec<&str>``, ``&dyn Any``) are sent by value; the dispatcher decodes owned
values (``String``, ``Vec<i32>``, ``Box<dyn Any>``) and lends them to the
candidate's function. A declared reference return (``&str``) is decoded into a
leaked owned value in the harness.

The prompts ``use rand::Rng; use regex::Regex; use md5;``: :meth:`prepare`
builds those crates once, offline, from Debian's sources
(``/usr/share/cargo/registry``) with cargo, and every build links them with
plain ``rustc --extern`` (no cargo, no build script for candidate code).
"""

from __future__ import annotations

import bisect
import contextlib
import fcntl
import hashlib
import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

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

__all__ = ["LANGUAGE", "RustLanguage"]

_RUNTIME = Path(__file__).with_name("runtime") / "arbiter_bridge.rs"
_BRIDGE_CRATE = "arbiter_bridge"

#: Debian's crate sources, the offline registry :meth:`RustLanguage.prepare` builds from.
CRATE_REGISTRY = "/usr/share/cargo/registry"
#: The crates HumanEvalPack's Rust prompts import, with the features Debian's sources allow
#: (regex's default "perf" features need aho-corasick and memchr, which Debian does not ship here).
CRATES = (
    ("rand", '"0.8"'),
    ("regex", '{ version = "1", default-features = false, features = ["std", "unicode"] }'),
    ("md5", '"0.7"'),
)
_CRATES_DIR = "rust-crates"

#: The compile flags every build shares: 2021 edition, warnings never fail a build
#: (``--cap-lints allow`` caps even a ``#![deny(warnings)]``), opt-level 1 with debug
#: assertions (HumanEvalPack runs cargo debug builds: an overflow panics, as there; a
#: small program compiles as fast as at opt-level 0 and runs several times faster), no
#: symbols (a small artifact), one codegen unit (fewer threads under RLIMIT_NPROC), and
#: gcc named directly as the linker (``cc`` goes through /etc/alternatives).
_RUSTC_FLAGS = (
    "--edition",
    "2021",
    "--cap-lints",
    "allow",
    "-C",
    "opt-level=1",
    "-C",
    "debug-assertions=on",
    "-C",
    "codegen-units=1",
    "-C",
    "strip=symbols",
    "-C",
    "linker=gcc",
)


#: The bridge (runtime/arbiter_bridge.rs) is prebuilt once as a crate: compiling its generic
#: codec into every build tripled a build's time.
_BRIDGE_FLAGS = ("--edition", "2021", "-C", "opt-level=2", "-C", "linker=gcc")


def _crate_flags(*, bridge: bool = False) -> tuple[str, ...]:
    """Where the prebuilt crates are (``{cache}/rust-crates``), and the ``--extern`` of each."""
    out = [
        "-L",
        f"dependency={{cache}}/{_CRATES_DIR}",
        "-L",
        f"dependency={{cache}}/{_CRATES_DIR}/deps",
    ]
    for name, _ in CRATES:
        out += ["--extern", f"{name}={{cache}}/{_CRATES_DIR}/lib{name}.rlib"]
    if bridge:
        out += ["--extern", f"{_BRIDGE_CRATE}={{cache}}/{_CRATES_DIR}/lib{_BRIDGE_CRATE}.rlib"]
    return tuple(out)


def _runtime_digest() -> str:
    return hashlib.sha256(_RUNTIME.read_bytes()).hexdigest()[:16]


def _rustc(source: str, output: str, *extra: str, bridge: bool = True) -> tuple[str, ...]:
    """One rustc command: the shared flags, the crates (and the bridge), ``extra``."""
    return ("rustc", *_RUSTC_FLAGS, *_crate_flags(bridge=bridge), *extra, source, "-o", output)


def _build_flags(*, bridge: bool = True) -> tuple[str, ...]:
    """What an artifact's cache key must also hold: the flags and the prebuilt bridge's source."""
    crates = ",".join(name for name, _ in CRATES)
    extra = (f"bridge={_runtime_digest()}",) if bridge else ()
    return ("rust", *_RUSTC_FLAGS, f"crates={crates}", *extra)


def _test_run(binary: str) -> tuple[str, ...]:
    """Run a libtest binary: one thread (tests share descriptor 3; RLIMIT_NPROC), plain text."""
    return (binary, "--test-threads=1", "--color", "never")


# ---------------------------------------------------------------- source text


def mask(text: str) -> str:
    """``text`` with comments and literals blanked, offsets kept (``c_family.RUST``)."""
    return c_family.mask(c_family.RUST, text)


def _ident_char(text: str, i: int) -> bool:
    return 0 <= i < len(text) and (text[i].isalnum() or text[i] == "_")


_HEADER = re.compile(
    r"""(?P<vis>pub(?:\s*\([^)]*\))?\s+)?
        (?P<quals>(?:(?:const|async|unsafe|default)\s+|extern\s*(?:"[^"]*"\s*)?)*)
        fn\s+(?P<name>[A-Za-z_][A-Za-z0-9_]*)\s*""",
    re.X,
)


@dataclass(frozen=True, slots=True)
class _Found:
    """A function declaration found in a prompt: where it is, and its parsed parts."""

    start: int  # where its visibility/qualifiers/``fn`` begin
    end: int  # just past its body (the prompt's end when the body is open)
    declared: Declared
    generics: str
    unsafe: bool
    vis: str


def _top_level_fns(masked: str) -> list[tuple[int, int, int | None]]:
    """Each ``fn`` at brace depth 0: (its item start, its body's ``{``, end past ``}`` or None)."""
    found = []
    header_end = _HeaderEnds(masked)
    depth = 0
    i = 0
    n = len(masked)
    while i < n:
        c = masked[i]
        if c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
        elif depth == 0 and masked.startswith("fn", i) and not _ident_char(masked, i - 1):
            if _ident_char(masked, i + 2):
                i += 1
                continue
            start = _item_start(masked, i)
            brace = header_end.at(i)
            if brace is None or masked[brace] == ";":
                i += 2
                continue
            end = c_family.closing(masked, brace)
            found.append((start, brace, end))
            if end is None:
                break
            i = end
            continue
        i += 1
    return found


#: How far before ``fn`` its qualifiers are looked for (``pub(in a::b) const async unsafe``).
_QUALIFIERS_SPAN = 512


def _item_start(masked: str, fn_at: int) -> int:
    """Walk back over ``pub``, ``pub(crate)``, ``unsafe``, ``const``, ``async``, ``extern "C"``.

    Only the last :data:`_QUALIFIERS_SPAN` characters are read: a search anchored at
    the end of everything before each ``fn`` made a prompt of many ``fn`` quadratic.
    """
    offset = max(0, fn_at - _QUALIFIERS_SPAN)
    head = masked[offset:fn_at]
    m = re.search(
        r'(?:pub(?:\s*\([^)]*\))?\s+)?(?:(?:const|async|unsafe|default)\s+|extern\s*(?:"\s*"\s*)?)*$',
        head,
    )
    start = offset + m.start() if m else fn_at
    while start < fn_at and masked[start].isspace():
        start += 1
    return start


class _HeaderEnds:
    """Where the header of an ``fn`` ends: its ``{`` (or ``;``) outside its brackets.

    One pass over the text records each ``{`` and ``;`` under the bracket depth
    before it; a header starting at ``i`` ends at the first of them at or after
    ``i`` whose depth is the depth at ``i``. Scanning from each ``fn`` instead made
    a prompt of many unterminated headers (``fn fn fn ...``) quadratic: 18 s.
    """

    def __init__(self, masked: str) -> None:
        self._depth_at: list[int] = []
        self._ends: dict[int, list[int]] = {}
        depth = 0
        for k, c in enumerate(masked):
            self._depth_at.append(depth)
            if c in "([":
                depth += 1
            elif c in ")]":
                depth -= 1
            elif c in "{;":
                self._ends.setdefault(depth, []).append(k)

    def at(self, fn_at: int) -> int | None:
        """The end of the header that starts at ``fn_at``, or None (the text ends first)."""
        ends = self._ends.get(self._depth_at[fn_at], [])
        k = bisect.bisect_left(ends, fn_at)
        return ends[k] if k < len(ends) else None


def _split_top(text: str, sep: str = ",") -> list[str]:
    """Split at ``sep`` outside ``<>``, ``()`` and ``[]`` (``->`` is not a bracket)."""
    parts: list[str] = []
    cur: list[str] = []
    depth = 0
    i = 0
    while i < len(text):
        c = text[i]
        if c in "<([":
            depth += 1
        elif c in ")]" or (c == ">" and not (i > 0 and text[i - 1] == "-")):
            depth -= 1
        if c == sep and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(c)
        i += 1
    parts.append("".join(cur))
    return [p.strip() for p in parts]


def _parse_header(text: str, masked: str) -> tuple[Declared, str, bool, str]:
    """Parse one header (``pub fn name<'a>(x: T) -> R``, no brace): its parts, generics, unsafe."""
    m = _HEADER.match(masked)
    if m is None:
        raise UnsupportedTask(f"cannot read the declaration {text.strip()!r}")
    name = m.group("name")
    quals = m.group("quals") or ""
    if "async" in quals:
        raise UnsupportedTask(f"{name}: an async fn cannot be called across the bridge")
    pos = m.end()
    generics = ""
    if masked[pos : pos + 1] == "<":
        depth, k = 0, pos
        while k < len(masked):
            if masked[k] == "<":
                depth += 1
            elif masked[k] == ">":
                depth -= 1
                if depth == 0:
                    break
            k += 1
        generics = text[pos : k + 1]
        pos = k + 1
        for g in _split_top(generics[1:-1]):
            if g and not g.startswith("'"):
                raise UnsupportedTask(
                    f"{name}: a generic parameter ({g}) cannot be sent across the bridge"
                )
    rest = masked[pos:].lstrip()
    pos = len(masked) - len(rest)
    if not rest.startswith("("):
        raise UnsupportedTask(f"cannot read the parameters of {name}")
    depth, k = 0, pos
    while k < len(masked):
        if masked[k] == "(":
            depth += 1
        elif masked[k] == ")":
            depth -= 1
            if depth == 0:
                break
        k += 1
    params_text = text[pos + 1 : k]
    tail = text[k + 1 :].strip()
    returns = ""
    if tail.startswith("->"):
        tail = tail[2:].strip()
        where = re.search(r"\bwhere\b", tail)
        returns = (tail[: where.start()] if where else tail).strip()
    elif tail and not tail.startswith("where"):
        raise UnsupportedTask(f"cannot read the declaration of {name}: {tail!r}")
    params: list[tuple[str, str]] = []
    for p in _split_top(params_text):
        if not p:
            continue
        if re.fullmatch(r"&?\s*(?:'[A-Za-z_]\w*\s+)?(?:mut\s+)?self", p) or p.startswith("self"):
            raise UnsupportedTask(f"{name} is a method: only free functions can be stubbed")
        m_param = re.match(r"(?s)(?P<pat>[^:]+?)\s*:(?!:)\s*(?P<ty>.+)$", p)
        if m_param is None:
            raise UnsupportedTask(f"cannot read the parameter {p!r} of {name}")
        pattern, ptype = m_param.group("pat").strip(), m_param.group("ty").strip()
        pname = re.sub(r"^(?:ref\s+)?(?:mut\s+)", "", pattern).strip()
        params.append((pname, ptype))
    header = text.strip()
    declared = Declared(name=name, header=header, params=tuple(params), returns=returns)
    return declared, generics, "unsafe" in quals, (m.group("vis") or "").strip()


def _find(prompt: str, entry_point: str | None) -> _Found:
    """The declared function: ``entry_point``'s declaration, else the prompt's last open one."""
    masked = mask(prompt)
    fns = _top_level_fns(masked)
    chosen = None
    if entry_point:
        for start, brace, end in fns:
            m = _HEADER.match(masked, start)
            if m and m.group("name") == entry_point:
                chosen = (start, brace, end)
    if chosen is None:
        open_fns = [f for f in fns if f[2] is None]
        if open_fns:
            chosen = open_fns[-1]
    if chosen is None:
        what = f"a declaration of {entry_point}" if entry_point else "an open fn declaration"
        raise UnsupportedTask(f"the prompt has no {what} at the top level")
    start, brace, end = chosen
    declared, generics, unsafe, vis = _parse_header(prompt[start:brace], masked[start:brace])
    for _, ptype in declared.params:
        _parse_type(ptype, declared.name, param=True)
    if declared.returns:
        _parse_type(declared.returns, declared.name, param=False)
    return _Found(start, len(prompt) if end is None else end, declared, generics, unsafe, vis)


# ---------------------------------------------------------------- types


@dataclass(frozen=True, slots=True)
class _Ty:
    """A parsed type: ``kind`` is prim, str, path, ref, slice, array, tuple or any."""

    kind: str
    name: str = ""  # prim: its name; path: Vec, Option, HashMap...; array: its length
    args: tuple[_Ty, ...] = ()
    lifetime: str = ""  # ref: its lifetime, if written
    mut: bool = False


_PRIMS = {
    "bool", "char", "f32", "f64",
    "i8", "i16", "i32", "i64", "i128", "isize",
    "u8", "u16", "u32", "u64", "u128", "usize",
}  # fmt: skip
_PATHS = {
    "String": ("::std::string::String", 0),
    "Vec": ("::std::vec::Vec", 1),
    "VecDeque": ("::std::collections::VecDeque", 1),
    "Option": ("::std::option::Option", 1),
    "Box": ("::std::boxed::Box", 1),
    "HashMap": ("::std::collections::HashMap", 2),
    "HashSet": ("::std::collections::HashSet", 1),
    "BTreeMap": ("::std::collections::BTreeMap", 2),
    "BTreeSet": ("::std::collections::BTreeSet", 1),
}
_PREFIXES = (
    "::std::", "std::", "::alloc::", "alloc::", "collections::", "string::", "vec::",
    "option::", "boxed::", "any::", "hash_map::", "hash_set::", "btree_map::", "btree_set::",
)  # fmt: skip
#: The deepest type :func:`_type` reads (``&Vec<Option<(i32, String)>>`` is 5).
_MAX_TYPE_DEPTH = 100
_TOKEN = re.compile(r"\s*('[A-Za-z_]\w*|::|[A-Za-z_]\w*|\d+|[&<>(),\[\];+])")


def _tokens(text: str, fname: str) -> list[str]:
    out, pos = [], 0
    text = text.strip()
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None:
            if text[pos:].strip() == "":
                break
            raise UnsupportedTask(f"{fname}: cannot read the type {text!r}")
        out.append(m.group(1))
        pos = m.end()
    return out


def _parse_type(text: str, fname: str, *, param: bool) -> _Ty:
    toks = _tokens(text, fname)
    ty, pos = _type(toks, 0, fname, text)
    if pos != len(toks):
        raise UnsupportedTask(f"{fname}: cannot read the type {text!r}")
    _check(ty, fname, text, param=param, top=True)
    return ty


def _type(toks: list[str], pos: int, fname: str, text: str, depth: int = 0) -> tuple[_Ty, int]:
    def bad() -> UnsupportedTask:
        return UnsupportedTask(f"{fname}: the type {text!r} cannot be sent across the bridge")

    # A bound on the recursion (and on every walk of the parsed type after it):
    # ``&&&...i32`` deeper than Python's stack is no type the bridge carries, and the
    # RecursionError it raised was a crash of ours.
    if depth > _MAX_TYPE_DEPTH:
        raise UnsupportedTask(f"{fname}: the type {text[:80]!r}... is nested too deeply")

    if pos >= len(toks):
        raise bad()
    t = toks[pos]
    if t == "&":
        pos += 1
        lifetime = ""
        if pos < len(toks) and toks[pos].startswith("'"):
            lifetime, pos = toks[pos], pos + 1
        mut = pos < len(toks) and toks[pos] == "mut"
        if mut:
            pos += 1
        inner, pos = _type(toks, pos, fname, text, depth + 1)
        return _Ty("ref", args=(inner,), lifetime=lifetime, mut=mut), pos
    if t == "(":
        items: list[_Ty] = []
        pos += 1
        while pos < len(toks) and toks[pos] != ")":
            item, pos = _type(toks, pos, fname, text, depth + 1)
            items.append(item)
            if pos < len(toks) and toks[pos] == ",":
                pos += 1
            elif pos < len(toks) and toks[pos] != ")":
                raise bad()
        if pos >= len(toks):
            raise bad()
        return _Ty("tuple", args=tuple(items)), pos + 1
    if t == "[":
        inner, pos = _type(toks, pos + 1, fname, text, depth + 1)
        if pos < len(toks) and toks[pos] == ";":
            if pos + 2 >= len(toks) or not toks[pos + 1].isdigit() or toks[pos + 2] != "]":
                raise bad()
            return _Ty("array", name=toks[pos + 1], args=(inner,)), pos + 3
        if pos >= len(toks) or toks[pos] != "]":
            raise bad()
        return _Ty("slice", args=(inner,)), pos + 1
    if t == "dyn":
        path, pos = _path(toks, pos + 1)
        if path not in ("Any", "any::Any", "std::any::Any", "::std::any::Any"):
            raise bad()
        if pos < len(toks) and toks[pos] == "+":  # dyn Any + Send: another type than dyn Any
            raise bad()
        return _Ty("any"), pos
    path, pos = _path(toks, pos)
    if not path:
        raise bad()
    short = path
    for prefix in sorted(_PREFIXES, key=len, reverse=True):
        if short.startswith(prefix):
            short = short[len(prefix) :]
    while "::" in short:
        head, _, rest = short.partition("::")
        if head + "::" not in _PREFIXES and head not in ("std", "alloc", "core"):
            break
        short = rest
    if short in _PRIMS:
        return _Ty("prim", name=short), pos
    if short == "str":
        return _Ty("str"), pos
    if short not in _PATHS:
        raise bad()
    want = _PATHS[short][1]
    args: list[_Ty] = []
    if pos < len(toks) and toks[pos] == "<":
        pos += 1
        while True:
            arg, pos = _type(toks, pos, fname, text, depth + 1)
            args.append(arg)
            if pos < len(toks) and toks[pos] == ",":
                pos += 1
                if pos < len(toks) and toks[pos] == ">":
                    break
                continue
            break
        if pos >= len(toks) or toks[pos] != ">":
            raise bad()
        pos += 1
    if len(args) != want:
        raise bad()
    return _Ty("path", name=short, args=tuple(args)), pos


def _path(toks: list[str], pos: int) -> tuple[str, int]:
    parts = []
    if pos < len(toks) and toks[pos] == "::":
        parts.append("::")
        pos += 1
    while pos < len(toks) and re.fullmatch(r"[A-Za-z_]\w*", toks[pos]):
        parts.append(toks[pos])
        pos += 1
        if pos < len(toks) and toks[pos] == "::":
            parts.append("::")
            pos += 1
        else:
            break
    return "".join(parts), pos


def _check(ty: _Ty, fname: str, text: str, *, param: bool, top: bool) -> None:
    """Refuse what the bridge cannot carry faithfully."""
    where = f"{fname}: the type {text!r}"
    if top and ty.kind in ("str", "slice", "any"):
        raise UnsupportedTask(f"{where} is unsized: it cannot be passed by value")
    if ty.kind == "ref":
        inner = ty.args[0]
        if ty.mut:
            raise UnsupportedTask(f"{where}: a change made through &mut would not come back")
        if _has_ref(inner):
            raise UnsupportedTask(f"{where}: a reference to references cannot be lent")
        if not param and inner.kind == "any":
            raise UnsupportedTask(f"{where}: a &dyn Any cannot be returned across the bridge")
    for a in ty.args:
        unsized_ok = ty.kind == "ref" or (
            ty.kind == "path" and ty.name == "Box" and a.kind == "any"
        )
        if a.kind in ("str", "slice", "any") and not unsized_ok:
            raise UnsupportedTask(f"{where} cannot be sent across the bridge")
        if ty.kind == "array" and _has_ref(a):
            raise UnsupportedTask(f"{where}: an array of references cannot be lent")
        _check(a, fname, text, param=param, top=False)
    if param and top and ty.kind != "ref" and _has_ref(ty) and any(_clones_any(a) for a in ty.args):
        raise UnsupportedTask(f"{where}: a Box<dyn Any> beside references cannot be lent")


def _clones_any(ty: _Ty) -> bool:
    """Whether lending ``ty`` element by element would clone a Box<dyn Any> (not Clone)."""
    if not _has_ref(ty):
        return _holds_any_box(ty)
    if ty.kind == "ref":
        return False
    return any(_clones_any(a) for a in ty.args)


def _has_ref(ty: _Ty) -> bool:
    return ty.kind == "ref" or any(_has_ref(a) for a in ty.args)


def _holds_any_box(ty: _Ty) -> bool:
    if ty.kind == "any":
        return True
    return any(_holds_any_box(a) for a in ty.args)


def _spell(ty: _Ty, *, owned: bool = False) -> str:
    """The type with full paths; ``owned``: the owned form a dispatcher decodes into."""
    if ty.kind == "prim":
        return ty.name
    if ty.kind == "str":
        return "::std::string::String" if owned else "str"
    if ty.kind == "any":
        return "::std::boxed::Box<dyn ::std::any::Any>" if owned else "dyn ::std::any::Any"
    if ty.kind == "ref":
        inner = ty.args[0]
        if owned:
            if inner.kind == "slice":
                return f"::std::vec::Vec<{_spell(inner.args[0], owned=True)}>"
            return _spell(inner, owned=True)
        life = f"{ty.lifetime} " if ty.lifetime else ""
        return f"&{life}{'mut ' if ty.mut else ''}{_spell(inner)}"
    if ty.kind == "slice":
        return f"[{_spell(ty.args[0], owned=owned)}]"
    if ty.kind == "array":
        return f"[{_spell(ty.args[0], owned=owned)}; {ty.name}]"
    if ty.kind == "tuple":
        items = ", ".join(_spell(a, owned=owned) for a in ty.args)
        return f"({items},)" if len(ty.args) == 1 else f"({items})"
    path = _PATHS[ty.name][0]
    if ty.name == "Box" and ty.args[0].kind == "any":
        return "::std::boxed::Box<dyn ::std::any::Any>"
    if not ty.args:
        return path
    return f"{path}<{', '.join(_spell(a, owned=owned) for a in ty.args)}>"


def _lend(ty: _Ty, expr: str, depth: int) -> str:
    """An expression of type ``ty`` lent from ``expr``, a reference to its owned form."""
    if not _has_ref(ty):
        return f"::std::clone::Clone::clone({expr})"
    x = f"__arbiter_x{depth}"
    if ty.kind == "ref":
        inner = ty.args[0]
        if inner.kind == "str":
            return f"::std::string::String::as_str({expr})"
        if inner.kind == "slice":
            return f"::std::vec::Vec::as_slice({expr})"
        if inner.kind == "any":
            return f"&**{expr}"
        return f"{expr}"
    if ty.kind == "tuple":
        items = ", ".join(_lend(a, f"&({expr}).{i}", depth + 1) for i, a in enumerate(ty.args))
        return f"({items},)"
    if ty.kind == "path" and ty.name == "Option":
        return f"({expr}).as_ref().map(|{x}| {_lend(ty.args[0], x, depth + 1)})"
    if ty.kind == "path" and ty.name in ("HashMap", "BTreeMap"):
        k, v = f"__arbiter_k{depth}", f"__arbiter_v{depth}"
        key = _lend(ty.args[0], k, depth + 1)
        val = _lend(ty.args[1], v, depth + 1)
        return f"({expr}).iter().map(|({k}, {v})| ({key}, {val})).collect::<{_spell(ty)}>()"
    if ty.kind == "path" and ty.name in ("Vec", "VecDeque", "HashSet", "BTreeSet"):
        item = _lend(ty.args[0], x, depth + 1)
        return f"({expr}).iter().map(|{x}| {item}).collect::<{_spell(ty)}>()"
    raise UnsupportedTask(f"the type {_spell(ty)} cannot be lent across the bridge")


# ---------------------------------------------------------------- the language

#: A test's name in libtest's lines, and the mark of a ``#[should_panic]`` test.
_TEST_NAME = r"\S+(?: - should panic)?"


class RustLanguage(Language):
    """Rust 2021 with Debian's rustc; rand, regex and md5 prebuilt by :meth:`prepare`."""

    name = "rust"
    tags = ("rust", "rs")
    tools = ("rustc", "cargo")
    version_command = ("rustc", "--version")
    # rustc finds its sysroot under /usr/lib and links with gcc (/usr/bin, /usr/lib/gcc);
    # the prebuilt crates are under the cache directory, added by prepare().
    extra_roots = ()
    limits = LanguageLimits(
        # a Rust program reserves no heap up front (its allocator fails at RLIMIT_AS with
        # "memory allocation of N bytes failed"); the candidate serves on its main thread,
        # and the harness runs its tests on its own (--test-threads=1: no thread at all).
        address_space_mb=64,
        threads=1,
        compile_cpu_s=60.0,
        # rustc maps ~800 MB of address space for a small crate (its threads' stacks, LLVM).
        compile_memory_mb=2048,
        compile_processes=32,
    )
    out_of_memory = (re.compile(r"memory allocation of \d+ bytes failed"),)

    # ------------------------------------------------------------ reading the task

    def defines(self, code: str, name: str) -> bool:
        """Whether ``code`` defines ``fn name`` (outside comments and strings)."""
        return re.search(rf"\bfn\s+{re.escape(name)}\b", mask(code)) is not None

    def declared(self, parts: ProgramParts) -> list[Declared]:
        """The prompt's last open ``fn`` (or ``entry_point``'s declaration)."""
        return [_find(parts.prompt, parts.entry_point).declared]

    # ------------------------------------------------------------ builds

    def candidate(self, parts: ProgramParts) -> Build:
        """The code as a library crate, a dispatcher module appended; ``main.rs`` serves it."""
        task_text(parts.prompt)
        found = _find(parts.prompt, parts.entry_point)
        code = source_text(parts.code)
        code = code if code.endswith("\n") else code + "\n"
        main = (
            "// Arbiter: serve the candidate's functions on descriptor 3.\n"
            "fn main() {\n"
            "    candidate::__arbiter_dispatch::serve();\n"
            "}\n"
        )
        compile_lib = _rustc(
            "candidate.rs", "libcandidate.rlib", "--crate-type", "rlib", "--crate-name", "candidate"
        )
        compile_main = _rustc("main.rs", "candidate", "--extern", "candidate=libcandidate.rlib")
        return Build(
            files={"candidate.rs": code + "\n" + _dispatcher(found), "main.rs": main},
            compile=(compile_lib, compile_main),
            artifacts=("candidate",),
            run=("./candidate",),
            flags=_build_flags(),
        )

    def harness(self, parts: ProgramParts) -> Build:
        """The prompt without its open declaration, a stub in its place, the tests."""
        task_text(parts.prompt, parts.tests, parts.setup_code)
        found = _find(parts.prompt, parts.entry_point)
        prompt = parts.prompt
        before, after = prompt[: found.start], prompt[found.end :]
        source = "\n".join(
            [
                "#![allow(warnings)]",
                before.rstrip(),
                "",
                "// Arbiter: the stub of the candidate's function, answered over descriptor 3.",
                _stub(found),
                after.strip(),
                parts.setup_code.strip(),
                parts.tests,
                "",
            ]
        )
        return Build(
            files={"harness.rs": source},
            compile=(_rustc("harness.rs", "harness", "--test"),),
            artifacts=("harness",),
            run=_test_run("./harness"),
            flags=_build_flags(),
        )

    def program(self, code: str) -> Build:
        """The code as a standalone binary: its own ``main`` reads stdin, writes stdout."""
        return Build(
            files={"main.rs": source_text(code)},
            compile=(_rustc("main.rs", "main", bridge=False),),
            artifacts=("main",),
            run=("./main",),
            flags=_build_flags(bridge=False),
        )

    def naive(self, parts: ProgramParts) -> Build:
        """The code and the tests as one ``rustc --test`` program: its exit status is all."""
        source = "\n".join([parts.code, parts.setup_code, parts.tests, ""])
        return Build(
            files={"naive.rs": source},
            compile=(_rustc("naive.rs", "naive", "--test", bridge=False),),
            artifacts=("naive",),
            run=_test_run("./naive"),
            flags=_build_flags(bridge=False),
        )

    def harness_passed(self, exit_code: int | None, stdout: str, stderr: str) -> tuple[int, int]:
        """Libtest's tally: ``test NAME ... ok`` lines of ``running N tests``.

        ``running N tests`` is the first thing libtest prints; its closing
        ``test result:`` line is the last, after the captured output of the
        failed tests (which a test may have filled with a returned string):
        so the first and the last of those lines are read, and the passes
        never exceed the last line's count. A run that did not end with status
        0 and a ``test result: ok.`` line has at least one test not passed.
        """
        running = re.search(r"^running (\d+) tests?$", stdout, re.M)
        total = int(running.group(1)) if running else 0
        passed = len(re.findall(rf"^test {_TEST_NAME} \.\.\. ok$", stdout, re.M))
        failed = len(re.findall(rf"^test {_TEST_NAME} \.\.\. FAILED$", stdout, re.M))
        if total == 0:
            total = max(passed + failed, 1)
        results = re.findall(
            r"^test result: (ok|FAILED)\. (\d+) passed; (\d+) failed", stdout, re.M
        )
        result = results[-1] if results else None
        if result is not None:
            passed = min(passed, int(result[1]))
        whole = exit_code == 0 and result is not None and result[0] == "ok"
        passed = min(passed, total if whole else total - 1)
        return passed, total

    # ------------------------------------------------------------ the crates

    def prepare(self, toolchain: Toolchain, cache_dir: str) -> Toolchain:
        """Build rand, regex, md5 and the bridge once, under ``cache_dir``/rust-crates.

        The crates are built offline from Debian's sources with cargo; their
        rlibs are kept under stable names (``librand.rlib``...) and their
        dependencies in ``deps/``. The bridge (``runtime/arbiter_bridge.rs``)
        is compiled beside them as ``libarbiter_bridge.rlib``. Each part
        carries a stamp of the toolchain (and the bridge of its source): a
        different toolchain or bridge rebuilds it.
        """
        root = Path(cache_dir, _CRATES_DIR)
        Path(cache_dir).mkdir(parents=True, exist_ok=True)
        with open(Path(cache_dir, ".rust-crates.lock"), "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            crates = _crates_stamp(toolchain)
            if not _stamped(root / "crates.stamp", crates):
                _build_crates(toolchain, root, crates)
            bridge = _bridge_stamp(toolchain)
            if not _stamped(root / "bridge.stamp", bridge):
                _build_bridge(toolchain, root, bridge)
        roots = tuple(dict.fromkeys((*toolchain.roots, str(Path(cache_dir).resolve()))))
        return Toolchain(paths=dict(toolchain.paths), version=toolchain.version, roots=roots)


def _stamped(path: Path, text: str) -> bool:
    try:
        return path.read_text(encoding="utf-8") == text
    except OSError:
        return False


def _crates_stamp(toolchain: Toolchain) -> str:
    crates = "\n".join(f"{n} = {v}" for n, v in CRATES)
    return f"{toolchain.paths.get('rustc')}\n{toolchain.version}\n{crates}\n"


def _bridge_stamp(toolchain: Toolchain) -> str:
    flags = " ".join(_BRIDGE_FLAGS)
    return f"{toolchain.paths.get('rustc')}\n{toolchain.version}\n{flags}\n{_runtime_digest()}\n"


def _tool_env(home: Path, scratch: str, toolchain: Toolchain) -> dict[str, str]:
    return {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "HOME": str(home),
        "CARGO_HOME": str(home),
        "TMPDIR": scratch,
        "RUSTC": toolchain.paths["rustc"],
        "LANG": "C.UTF-8",
    }


def _build_crates(toolchain: Toolchain, root: Path, stamp: str) -> None:
    """Build the crates with cargo in a scratch project; put their rlibs at ``root``."""
    with tempfile.TemporaryDirectory(dir=root.parent, prefix=".rust-crates-build-") as scratch:
        project = Path(scratch, "project")
        home = Path(scratch, "cargo-home")
        (project / "src").mkdir(parents=True)
        home.mkdir()
        deps = "\n".join(f"{n} = {v}" for n, v in CRATES)
        (project / "Cargo.toml").write_text(
            '[package]\nname = "arbiter_crates"\nversion = "0.0.0"\nedition = "2021"\n\n'
            f"[dependencies]\n{deps}\n\n[profile.release]\ndebug = false\n",
            encoding="utf-8",
        )
        (project / "src" / "lib.rs").write_text("", encoding="utf-8")
        (home / "config.toml").write_text(
            '[source.crates-io]\nreplace-with = "debian"\n\n'
            f'[source.debian]\ndirectory = "{CRATE_REGISTRY}"\n\n[net]\noffline = true\n',
            encoding="utf-8",
        )
        done = subprocess.run(
            [toolchain.paths["cargo"], "build", "--offline", "--release", "--quiet"],
            cwd=project,
            env=_tool_env(home, scratch, toolchain),
            capture_output=True,
            timeout=900,
            check=False,
        )
        if done.returncode != 0:
            text = (done.stderr + done.stdout).decode("utf-8", "replace")
            raise RuntimeError(f"building the Rust crates failed:\n{text[-4000:]}")
        staging = Path(scratch, "out")
        (staging / "deps").mkdir(parents=True)
        wanted = {n for n, _ in CRATES}
        for rlib in (project / "target" / "release" / "deps").glob("*.rlib"):
            crate = rlib.name[3:].rsplit("-", 1)[0]
            if crate == "arbiter_crates":
                continue
            target = (
                staging / f"lib{crate}.rlib" if crate in wanted else staging / "deps" / rlib.name
            )
            shutil.copy2(rlib, target)
        for name in wanted:
            if not (staging / f"lib{name}.rlib").is_file():
                raise RuntimeError(f"building the Rust crates left no lib{name}.rlib")
        (staging / "crates.stamp").write_text(stamp, encoding="utf-8")
        for path in (staging, *staging.rglob("*")):
            path.chmod(0o755 if path.is_dir() else 0o644)
        with contextlib.suppress(FileNotFoundError):
            os.rename(root, Path(scratch, "old"))
        os.rename(staging, root)


def _build_bridge(toolchain: Toolchain, root: Path, stamp: str) -> None:
    """Compile the bridge as a crate beside the others (replacing an older one at once)."""
    with tempfile.TemporaryDirectory(dir=root, prefix=".bridge-build-") as scratch:
        out = Path(scratch, f"lib{_BRIDGE_CRATE}.rlib")
        done = subprocess.run(
            [
                toolchain.paths["rustc"],
                *_BRIDGE_FLAGS,
                "--crate-type",
                "rlib",
                "--crate-name",
                _BRIDGE_CRATE,
                str(_RUNTIME),
                "-o",
                str(out),
            ],
            cwd=scratch,
            env=_tool_env(Path(scratch), scratch, toolchain),
            capture_output=True,
            timeout=300,
            check=False,
        )
        if done.returncode != 0:
            text = (done.stderr + done.stdout).decode("utf-8", "replace")
            raise RuntimeError(f"building the Rust bridge failed:\n{text[-4000:]}")
        out.chmod(0o644)
        os.replace(out, root / out.name)
        (root / "bridge.stamp").write_text(stamp, encoding="utf-8")
        (root / "bridge.stamp").chmod(0o644)


# ---------------------------------------------------------------- generated code


def _stub(found: _Found) -> str:
    """The harness's stand-in for the declared function: send the call, decode the reply."""
    d = found.declared
    params = [_parse_type(t, d.name, param=True) for _, t in d.params]
    ret = _parse_type(d.returns, d.name, param=False) if d.returns else _Ty("tuple")
    ret_spelled = _spell(ret)
    names = [f"__arbiter_arg{i}" for i in range(len(params))]
    header_params = ", ".join(f"{n}: {_spell(t)}" for n, t in zip(names, params, strict=True))
    vis = f"{found.vis} " if found.vis else ""
    unsafe = "unsafe " if found.unsafe else ""
    lines = [
        f"{vis}{unsafe}fn {d.name}{found.generics}({header_params}) -> {ret_spelled} {{",
        "    let mut __arbiter_args: ::std::vec::Vec<u8> = ::std::vec::Vec::new();",
    ]
    lines += [f"    ::arbiter_bridge::arg(&{n}, &mut __arbiter_args);" for n in names]
    lines += [
        f'    ::arbiter_bridge::call::<{ret_spelled}>("{d.name}", {len(names)}, __arbiter_args)',
        "}",
    ]
    return "\n".join(lines) + "\n"


_ERR = "::std::result::Result::Err"


def _dispatcher(found: _Found) -> str:
    """The module appended to the candidate's crate: decode a call, run it, encode its result."""
    d = found.declared
    params = [_parse_type(t, d.name, param=True) for _, t in d.params]
    body = [f'        "{d.name}" => {{']
    body.append(f"            if __count != {len(params)} {{")
    takes = f"{d.name} takes {len(params)} arguments, not {{}}"
    body.append(f'                return {_ERR}(::std::format!("{takes}", __count));')
    body.append("            }")
    args = []
    for i, t in enumerate(params):
        body.append(
            f"            let __arbiter_o{i}: {_spell(t, owned=True)} = "
            "::arbiter_bridge::Decode::decode(__r)?;"
        )
        if not _has_ref(t):
            args.append(f"__arbiter_o{i}")
        else:
            args.append(_lend(t, f"&__arbiter_o{i}", 0))
    call = f"crate::{d.name}({', '.join(args)})"
    if found.unsafe:
        call = f"unsafe {{ {call} }}"
    body.append(f"            let __arbiter_ret = {call};")
    body.append("            ::arbiter_bridge::result(&__arbiter_ret)")
    body.append("        }")
    return "\n".join(
        [
            "// Arbiter: the dispatcher, serving the declared functions on descriptor 3.",
            "#[doc(hidden)]",
            "#[allow(warnings)]",
            "pub mod __arbiter_dispatch {",
            "    pub fn serve() {",
            "        ::arbiter_bridge::serve(dispatch);",
            "    }",
            "    fn dispatch(",
            "        __name: &str,",
            "        __r: &mut ::arbiter_bridge::Reader,",
            "        __count: usize,",
            "    ) -> ::arbiter_bridge::WireResult<::std::vec::Vec<u8>> {",
            "        match __name {",
            *body,
            f'            _ => {_ERR}(::std::format!("no function {{}} is served", __name)),',
            "        }",
            "    }",
            "}",
            "",
        ]
    )


LANGUAGE = RustLanguage()
