"""Mutants and know-nothing candidates of a function in C++, Java, Go, Rust or JavaScript (pure).

What task lint (:mod:`arbiter.task_lint`) needs of a ``test_program`` task to
tell whether its tests catch a wrong answer, in the task's own language:

- :func:`mutants`: one token changed at a time in a reference body (a
  comparison, ``==`` for ``!=``, ``&&`` for ``||``, a binary ``+`` or ``-``,
  an integer literal off by one, ``true`` for ``false``), found in the code
  with its comments and literals blanked by the language's own ``mask``, and
  spliced into the original text. The sites tried follow from the seed alone.
  The scan is lexical: a site it misreads (a ``<`` of a template) gives a
  mutant that does not compile, which the lint leaves out of the score.
- :func:`trivial_bodies`: bodies that know nothing of the task, typed by the
  declaration the prompt opens (its zero value, NaN for a float, the first
  argument where its type is the return type, raising), each closed with as
  many braces as the prompt leaves open.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable
from dataclasses import dataclass

from arbiter.graders.languages import c_family, cpp, java, javascript, rust
from arbiter.graders.languages.base import Declared

__all__ = ["LANGUAGES", "TextMutant", "closing", "masked", "mutants", "trivial_bodies"]


def _go_mask(text: str) -> str:
    """Go source with comments and literals blanked, offsets kept (``c_family.GO``)."""
    return c_family.mask(c_family.GO, text)


_MASKS: dict[str, Callable[[str], str]] = {
    "cpp": cpp.mask,
    "java": java.mask,
    "go": _go_mask,
    "rust": rust.mask,
    "javascript": javascript.mask,
}
#: The languages this module reads.
LANGUAGES = frozenset(_MASKS)


def masked(language: str, text: str) -> str:
    """``text`` with comments and literals blanked, offsets kept (KeyError: not a language here)."""
    return _MASKS[language](text)


def closing(language: str, prompt: str) -> str:
    """The braces that close what ``prompt`` leaves open (its function, a Java class)."""
    text = masked(language, prompt)
    return "}\n" * max(0, text.count("{") - text.count("}"))


@dataclass(frozen=True, slots=True)
class TextMutant:
    """One mutant: ``operator`` names the change, made at ``line`` (1-based) of the code."""

    operator: str
    line: int
    mutated: str


#: A ``<`` that opens a type's arguments (``vector<int>``, ``HashMap<char, i32>``, ``<>``).
_TYPE_ARGUMENTS = re.compile(r"\s*(?:[A-Za-z_][\w:]*\s*(?:<[^<>;(){}]*>)?\s*[*&\[\]]*\s*,?\s*)*>")
_BEFORE_OPERAND = re.compile(r"[\w)\]]\s*$")
_AFTER_OPERAND = re.compile(r"^\s*[\w(!\-]")
_NOT_OPERANDS = frozenset({"return", "case", "else", "in", "of", "typeof", "throw", "new"})


def _operand_before(code: str, at: int) -> bool:
    head = code[max(0, at - 40) : at]
    if not _BEFORE_OPERAND.search(head):
        return False
    word = re.search(r"(\w+)\s*$", head)
    return word is None or word.group(1) not in _NOT_OPERANDS


def _sites(code: str) -> list[tuple[int, int, str, str]]:
    """(start, end, replacement, operator) for every place one token can be changed."""
    sites: list[tuple[int, int, str, str]] = []
    types: list[tuple[int, int]] = []  # spans of type arguments, whose < and > are no comparison
    i, n = 0, len(code)
    while i < n:
        c = code[i]
        two = code[i : i + 2]
        three = code[i : i + 3]
        if three in ("===", "!=="):
            sites.append((i, i + 3, "!==" if three == "===" else "===", f"{three} -> swapped"))
            i += 3
        elif three in ("<<=", ">>=", "<=>", "..="):
            i += 3
        elif two in ("==", "!="):
            sites.append((i, i + 2, "!=" if two == "==" else "==", f"{two} -> swapped"))
            i += 2
        elif two in ("<=", ">="):
            sites.append((i, i + 2, two[0], f"{two} -> {two[0]}"))
            i += 2
        elif two in ("&&", "||"):
            sites.append((i, i + 2, "||" if two == "&&" else "&&", f"{two} -> swapped"))
            i += 2
        elif two in ("<<", ">>", "->", "=>", "<-", "++", "--", "+=", "-=", "::"):
            i += 2
        elif c == "<":
            opened = _TYPE_ARGUMENTS.match(code, i + 1)
            if opened is not None or code[max(0, i - 2) : i] == "::":
                end = opened.end() if opened is not None else i + 1
                types.append((i, end))
                i = end
                continue
            if _operand_before(code, i) and _AFTER_OPERAND.match(code[i + 1 : i + 41]):
                sites.append((i, i + 1, "<=", "< -> <="))
            i += 1
        elif c == ">":
            inside = any(a <= i < b for a, b in types)
            after = _AFTER_OPERAND.match(code[i + 1 : i + 41])
            if not inside and _operand_before(code, i) and after:
                sites.append((i, i + 1, ">=", "> -> >="))
            i += 1
        elif c in "+-":
            if _operand_before(code, i) and _AFTER_OPERAND.match(code[i + 1 : i + 41]):
                other = "-" if c == "+" else "+"
                sites.append((i, i + 1, other, f"{c} -> {other}"))
            i += 1
        elif c.isdigit() and (i == 0 or not (code[i - 1].isalnum() or code[i - 1] in "_.")):
            j = i
            while j < n and code[j].isdigit():
                j += 1
            if j < n and (code[j].isalnum() or code[j] in "_."):
                i = j + 1  # 0x1F, 1.5, 10L, 1e9: left alone
                while i < n and (code[i].isalnum() or code[i] in "_."):
                    i += 1
                continue
            sites.append((i, j, str(int(code[i:j]) + 1), f"{code[i:j]} -> {int(code[i:j]) + 1}"))
            i = j
        elif c.isalpha() or c == "_":
            j = i
            while j < n and (code[j].isalnum() or code[j] == "_"):
                j += 1
            word = code[i:j]
            if word in ("true", "false"):
                other = "false" if word == "true" else "true"
                sites.append((i, j, other, f"{word} -> {other}"))
            i = j
        else:
            i += 1
    return sites


def mutants(language: str, code: str, *, seed: str, limit: int) -> list[TextMutant]:
    """Up to ``limit`` mutants of ``code``, one token changed each, in an order ``seed`` fixes."""
    sites = _sites(masked(language, code))
    random.Random(seed).shuffle(sites)
    out = []
    for start, end, replacement, operator in sites[:limit]:
        line = code.count("\n", 0, start) + 1
        out.append(TextMutant(operator, line, code[:start] + replacement + code[end:]))
    return out


# -- know-nothing candidates ----------------------------------------------------------------

_FLOATS = {
    "cpp": {"float", "double"},
    "java": {"double", "float"},
    "go": {"float64", "float32"},
    "rust": {"f64", "f32"},
}
_JAVA_ZERO = {
    "int": "0",
    "long": "0",
    "short": "0",
    "byte": "0",
    "double": "0",
    "float": "0",
    "boolean": "false",
    "String": '""',
}


def _bare(kind: str) -> str:
    """A type without ``const`` and reference marks (C++), to compare with the return type."""
    return re.sub(r"\bconst\b|&", "", kind).replace(" ", "")


def _java_zero(returns: str) -> str:
    if returns in _JAVA_ZERO:
        return _JAVA_ZERO[returns]
    base = returns.split("<", 1)[0].strip()
    if base in ("List", "ArrayList", "Collection"):
        return "new java.util.ArrayList<>()"
    if base in ("Map", "HashMap"):
        return "new java.util.HashMap<>()"
    if base == "Optional":
        return "java.util.Optional.empty()"
    return "null"


def _go_zero(returns: str) -> str:
    kinds = returns.strip()
    if kinds.startswith("(") and kinds.endswith(")"):
        parts = [p.strip() for p in kinds[1:-1].split(",")]
        return ", ".join(f"*new({p})" for p in parts)
    return f"*new({kinds})"


def trivial_bodies(language: str, declared: Declared, prompt: str) -> dict[str, str]:
    """Completions of ``prompt`` that know nothing of the task, by name (see the module doc)."""
    end = closing(language, prompt)
    returns = declared.returns.strip()
    params = [name for name, _ in declared.params]
    first_type = _bare(declared.params[0][1]) if declared.params else None
    same = first_type is not None and first_type == _bare(returns)
    bodies: dict[str, str] = {}
    if language == "javascript":
        bodies = {
            "none": "return null;",
            "nan": "return NaN;",
            "zero": "return 0;",
            "empty_string": 'return "";',
            "empty_list": "return [];",
            "raises": 'throw new Error("trivial");',
        }
        if params:
            bodies["identity"] = f"return {params[0]};"
            bodies["echo_arguments"] = f"return [{', '.join(params)}];"
    elif language == "cpp":
        bodies = {"zero": "return {};", "raises": "throw 0;"}
        if returns in _FLOATS["cpp"]:
            bodies["nan"] = "return 0.0 / 0.0;"
    elif language == "java":
        bodies = {
            "zero": f"return {_java_zero(returns)};",
            "raises": 'throw new RuntimeException("trivial");',
        }
        if returns in _FLOATS["java"]:
            bodies["nan"] = f"return {'Double' if returns == 'double' else 'Float'}.NaN;"
    elif language == "go":
        bodies = {"zero": f"return {_go_zero(returns)}", "raises": 'panic("trivial")'}
        if returns in _FLOATS["go"]:
            bodies["nan"] = f"return *new({returns}) / *new({returns})"
    elif language == "rust":
        bodies = {"zero": "return Default::default();", "raises": 'panic!("trivial");'}
        if returns in _FLOATS["rust"]:
            bodies["nan"] = f"return {returns}::NAN;"
    else:
        raise KeyError(language)
    if same and language != "javascript":
        bodies["identity"] = f"return {params[0]};"
    return {name: f"    {body}\n{end}" for name, body in bodies.items()}
