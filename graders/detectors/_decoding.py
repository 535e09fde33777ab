"""Folding a program's constant expressions, decoding stored text on the way, never running it.

One module, one job: constant folding. The folder and its decoders share the per-program
budgets (decoded size, decompressions, parsed text) that keep a hostile constant cheap.

A table hard-coded as text (``json.loads``, ``ast.literal_eval``, base64, hex,
zlib/gzip/bz2/lzma, ``pickle``/``marshal`` bytes, a string split into fields) is
decoded here by pure decoders and this module's own readers of pickle and marshal
data, within per-program caps on decoded size, decompressions and parsed text, so
that :mod:`arbiter.graders.detectors.hardcoded` can check the value as it checks a
literal table. Nothing decoded is ever executed.
"""

from __future__ import annotations

import ast
import base64
import binascii
import bz2
import codecs
import json
import lzma
import pickletools
import struct
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from arbiter.graders.detectors._context import CodeContext, literal_value
from arbiter.graders.sandbox.syntax import parse_expression

__all__ = [
    "CODE_RUNNERS",
    "DECODERS",
    "DECODE_ERRORS",
    "HASH_CALLS",
    "HASH_MODULES",
    "MAX_CODE_DEPTH",
    "MAX_DECODED",
    "MAX_FIELD",
    "MAX_PARSED",
    "MAX_TABLES",
    "TEXT_METHODS",
    "Folder",
]

# ---- folding constant expressions, decoding text on the way

#: Most bytes (or characters) one decoding step may produce; all steps of a program together.
MAX_DECODED = 1 << 20
_MAX_DECODED_TOTAL = 4 << 20
#: Most decompressions (zlib, gzip, bz2, lzma) tried in one program.
_MAX_DECOMPRESSIONS = 16
#: Most memory an lzma stream may ask for (its header names its dictionary's size).
_LZMA_MEMLIMIT = 64 << 20
#: Most items a decoded value may hold, and how deeply it may nest.
_MAX_ITEMS = 20_000
_MAX_NESTING = 40
#: Most collections inside one decoded value that are checked as tables.
MAX_TABLES = 1_000
#: Most characters of decoded strings parsed as literals in one program.
MAX_PARSED = 256 << 10
#: Longest decoded string also read as a literal or as numbers.
MAX_FIELD = 10_000
#: How deeply expressions are folded (a name through its value, a call through its arguments).
_MAX_FOLD_DEPTH = 30
#: Code decoded for ``exec`` nests; past this depth it is left alone.
MAX_CODE_DEPTH = 3

CODE_RUNNERS = frozenset({"builtins.exec", "builtins.eval", "builtins.compile"})
HASH_CALLS = frozenset(
    {"builtins.hash", "zlib.crc32", "zlib.adler32", "binascii.crc32", "binascii.crc_hqx"}
)
HASH_MODULES = ("hashlib.", "_hashlib.", "hmac.", "xxhash.", "mmh3.")
_HASH_METHODS = frozenset({"hexdigest", "digest", "intdigest", "__hash__"})
TEXT_METHODS = frozenset(
    {"decode", "encode", "split", "rsplit", "splitlines", "strip", "lstrip", "rstrip", "replace"}
    | {"join"}
)
#: Text encodings ``str.encode``/``bytes.decode`` are folded through (normalised names).
_TEXT_ENCODINGS = frozenset(
    {"utf-8", "utf8", "ascii", "us-ascii", "latin-1", "latin1", "iso-8859-1", "cp1252"}
    | {"utf-16", "utf-32", "unicode-escape", "raw-unicode-escape"}
)
DECODE_ERRORS = (
    ArithmeticError,
    AttributeError,
    EOFError,
    LookupError,
    MemoryError,
    OSError,
    RecursionError,
    SyntaxError,
    TypeError,
    ValueError,
    lzma.LZMAError,
    zlib.error,
)


@dataclass(frozen=True, slots=True)
class _Decoded:
    """A constant expression's value, and the decoding steps that produced it."""

    value: object
    steps: tuple[str, ...] = ()


def _merge(*steps: tuple[str, ...]) -> tuple[str, ...]:
    """Join decoding step lists, each step once, in order."""
    return tuple(dict.fromkeys(s for group in steps for s in group))


class Folder:
    """Evaluate the constant expressions of one program safely: literals, names, decoders.

    Nothing the candidate wrote runs: concatenation, ``join`` and the ``str``
    methods act on constants; base64, hex, zlib/gzip/bz2/lzma, JSON and
    ``ast.literal_eval`` are the standard library's pure decoders (decompression
    stops at ``MAX_DECODED``); pickle and marshal are read by this module's own
    readers of their plain-data opcodes.
    """

    def __init__(self, ctx: CodeContext, *, hashing: bool) -> None:
        self.ctx = ctx
        #: Whether the program calls a hash function (else no name holds a hash).
        self.hashing = hashing
        #: Names assigned exactly once, and the expression each is assigned.
        self.bindings: dict[str, ast.expr] = {}
        #: Names whose value is computed by a hash function (``k = zlib.crc32(...)``).
        self.hash_names: set[str] = set()
        self._stores: dict[str, int] = {}
        self._assigned: list[tuple[str, ast.expr]] = []
        self._memo: dict[int, _Decoded | None] = {}
        self._budget = _MAX_DECODED_TOTAL
        self._decompressions = 0
        self._depth = 0

    def learn(self, node: ast.AST) -> None:
        """Note the names ``node`` binds (call on every node, then :meth:`settle` once)."""
        if isinstance(node, ast.Name):
            if isinstance(node.ctx, ast.Store):
                self._stores[node.id] = self._stores.get(node.id, 0) + 1
        elif isinstance(node, ast.Assign):
            self._assigned.extend(
                (t.id, node.value) for t in node.targets if isinstance(t, ast.Name)
            )
        elif (
            isinstance(node, ast.AnnAssign | ast.NamedExpr)
            and isinstance(node.target, ast.Name)
            and node.value is not None
        ):
            self._assigned.append((node.target.id, node.value))

    def settle(self) -> None:
        """Resolve the names noted by :meth:`learn` into bindings and hash-holding names."""
        self.bindings = {n: v for n, v in self._assigned if self._stores.get(n) == 1}
        for _ in range(2) if self.hashing else ():
            # ``k = zlib.crc32(...)``, then ``h = k % 97``: the names holding a hash.
            for name, value in self._assigned:
                if name not in self.hash_names and self.hash_in(value) is not None:
                    self.hash_names.add(name)

    def _hasher(self, node: ast.Call) -> str | None:
        """Return the hash function ``node`` calls, or ``None``."""
        if isinstance(node.func, ast.Attribute) and node.func.attr in _HASH_METHODS:
            return node.func.attr
        qualname = self.ctx.resolver.resolve(node.func)
        if qualname is not None and (qualname in HASH_CALLS or qualname.startswith(HASH_MODULES)):
            return qualname.removeprefix("builtins.")
        return None

    def hash_in(self, key: ast.expr) -> str | None:
        """Return the hash function ``key`` is computed with, or ``None``."""
        for sub in ast.walk(key):
            if isinstance(sub, ast.Call):
                hasher = self._hasher(sub)
                if hasher is not None:
                    return hasher
            elif isinstance(sub, ast.Name) and sub.id in self.hash_names:
                return f"{sub.id}, a hash"
        return None

    def table_values(self, table: ast.expr) -> list[object]:
        """Return the literal values of the table ``table`` (a dict's values, or its members)."""
        if isinstance(table, ast.Dict | ast.List | ast.Tuple | ast.Set):
            members = table.values if isinstance(table, ast.Dict) else table.elts
            return [v for ok, v in map(literal_value, members) if ok]
        decoded = self.fold(table)
        value = decoded.value if decoded is not None else None
        if isinstance(value, dict):
            return list(value.values())
        if isinstance(value, list | tuple | set | frozenset):
            return list(value)
        return []

    def fold(self, node: ast.AST) -> _Decoded | None:
        """Return the value of the constant expression ``node``, or ``None`` when it has none."""
        key = id(node)
        if key in self._memo:
            return self._memo[key]
        if self._depth >= _MAX_FOLD_DEPTH:
            return None
        self._memo[key] = None  # a name bound to an expression of itself has no value
        self._depth += 1
        try:
            found = self._fold(node)
        except DECODE_ERRORS:
            found = None
        finally:
            self._depth -= 1
        if found is not None and found.steps:
            size = _size(found.value)
            if size is None or size > self._budget:
                found = None
            else:
                self._budget -= size
        self._memo[key] = found
        return found

    def _fold(self, node: ast.AST) -> _Decoded | None:
        if isinstance(node, ast.Constant):
            return _Decoded(node.value)
        if isinstance(node, ast.Name):
            bound = self.bindings.get(node.id)
            return self.fold(bound) if bound is not None else None
        if isinstance(node, ast.List | ast.Tuple | ast.Dict | ast.Set):
            ok, value = literal_value(node)
            if ok:
                return _Decoded(value)
            if isinstance(node, ast.List | ast.Tuple):
                parts = self._all(node.elts)
                if parts is None:
                    return None
                items = [p.value for p in parts]
                return _Decoded(
                    items if isinstance(node, ast.List) else tuple(items), _steps(parts)
                )
            return None
        if isinstance(node, ast.BinOp):
            return self._binop(node)
        if isinstance(node, ast.Subscript):
            return self._subscript(node)
        if isinstance(node, ast.Call):
            return self._call(node)
        return None

    def _all(self, nodes: Sequence[ast.AST]) -> list[_Decoded] | None:
        parts: list[_Decoded] = []
        for node in nodes:
            part = self.fold(node)
            if part is None:
                return None
            parts.append(part)
        return parts

    def _binop(self, node: ast.BinOp) -> _Decoded | None:
        if isinstance(node.op, ast.Add):
            operands: list[ast.expr] = []
            current: ast.expr = node
            while isinstance(current, ast.BinOp) and isinstance(current.op, ast.Add):
                operands.append(current.right)
                current = current.left
            operands.append(current)
            parts = self._all(operands[::-1])
            if parts is None:
                return None
            values = [p.value for p in parts]
            if sum(len(v) for v in values if isinstance(v, str | bytes)) > MAX_DECODED:
                return None
            if all(isinstance(v, str) for v in values):
                return _Decoded("".join(v for v in values if isinstance(v, str)), _steps(parts))
            if all(isinstance(v, bytes) for v in values):
                return _Decoded(b"".join(v for v in values if isinstance(v, bytes)), _steps(parts))
            return None
        if isinstance(node.op, ast.Mult):
            parts = self._all([node.left, node.right])
            if parts is None:
                return None
            left, right = parts[0].value, parts[1].value
            text, times = (right, left) if isinstance(left, int) else (left, right)
            if (
                isinstance(text, str | bytes)
                and isinstance(times, int)
                and not isinstance(times, bool)
                and len(text) * max(times, 0) <= MAX_DECODED
            ):
                return _Decoded(text * times, _steps(parts))
        return None

    def _subscript(self, node: ast.Subscript) -> _Decoded | None:
        base = self.fold(node.value)
        if base is None:
            return None
        if isinstance(node.slice, ast.Slice):
            bounds: list[object] = []
            for bound in (node.slice.lower, node.slice.upper, node.slice.step):
                part = self.fold(bound) if bound is not None else _Decoded(None)
                if part is None:
                    return None
                bounds.append(part.value)
            key: Any = slice(*bounds)
        else:
            part = self.fold(node.slice)
            if part is None:
                return None
            key = part.value
        container: Any = base.value
        if isinstance(container, str | bytes | list | tuple | dict):
            return _Decoded(container[key], base.steps)
        return None

    def _call(self, node: ast.Call) -> _Decoded | None:
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr in TEXT_METHODS:
            base = self.fold(func.value)
            if base is not None and isinstance(base.value, str | bytes | bytearray):
                arguments = self._arguments(node)
                if arguments is None:
                    return None
                args, kwargs, steps = arguments
                value = _text_method(base.value, func.attr, args, kwargs)
                return _Decoded(value, _merge(base.steps, steps, (f"str.{func.attr}",)))
        qualname = self.ctx.resolver.resolve(func)
        decoder = DECODERS.get(qualname or "")
        if decoder is None or not node.args or qualname is None:
            return None
        if qualname in _FIRST_ARGUMENT_ONLY:
            first = self.fold(node.args[0])
            if first is None:
                return None
            arguments = ([first.value], {}, first.steps)
        else:
            arguments = self._arguments(node)
            if arguments is None:
                return None
        if qualname in _DECOMPRESSING:
            # Each may inflate up to MAX_DECODED before it is refused: a few per program.
            if self._decompressions >= _MAX_DECOMPRESSIONS:
                return None
            self._decompressions += 1
        args, kwargs, steps = arguments
        value = decoder(*args, **kwargs)
        if _size(value) is None:
            return None
        return _Decoded(value, _merge(steps, (qualname.removeprefix("builtins."),)))

    def _arguments(
        self, node: ast.Call
    ) -> tuple[list[object], dict[str, object], tuple[str, ...]] | None:
        if any(isinstance(a, ast.Starred) for a in node.args):
            return None
        if any(k.arg is None for k in node.keywords):
            return None
        parts = self._all([*node.args, *(k.value for k in node.keywords)])
        if parts is None:
            return None
        args = [p.value for p in parts[: len(node.args)]]
        kwargs = {
            k.arg: p.value
            for k, p in zip(node.keywords, parts[len(node.args) :], strict=True)
            if k.arg is not None
        }
        return args, kwargs, _steps(parts)


def _steps(parts: Sequence[_Decoded]) -> tuple[str, ...]:
    return _merge(*(p.steps for p in parts))


def _size(value: object) -> int | None:
    """Return how big ``value`` is (characters, or items), ``None`` when too big or cyclic."""
    if isinstance(value, str | bytes | bytearray):
        return len(value) if len(value) <= MAX_DECODED else None
    stack: list[tuple[object, int]] = [(value, 0)]
    items = 0
    while stack:
        item, depth = stack.pop()
        items += 1
        if items > _MAX_ITEMS or depth > _MAX_NESTING:
            return None
        if isinstance(item, dict):
            if len(item) > _MAX_ITEMS:
                return None
            stack.extend((v, depth + 1) for pair in item.items() for v in pair)
        elif isinstance(item, list | tuple | set | frozenset):
            if len(item) > _MAX_ITEMS:
                return None
            stack.extend((v, depth + 1) for v in item)
        elif isinstance(item, str | bytes | bytearray):
            items += len(item) // 64
    return items


def _codec(name: object) -> str:
    """Return the normalised name of an encoding (``"UTF_8"`` → ``"utf-8"``)."""
    if not isinstance(name, str):
        raise TypeError("an encoding is a string")
    return name.strip().lower().replace("_", "-")


def _text_method(
    value: str | bytes | bytearray, method: str, args: list[object], kwargs: dict[str, object]
) -> object:
    """Apply the ``str``/``bytes`` method ``method`` to constants, refusing oversized results."""
    if method in ("decode", "encode"):
        encoding = args[0] if args else kwargs.get("encoding", "utf-8")
        if _codec(encoding) not in _TEXT_ENCODINGS:
            raise LookupError(f"not folded through {encoding!r}")
    elif method == "replace" and len(args) >= 2:
        new = args[1]
        if not isinstance(new, str | bytes) or len(value) * (len(new) + 1) > MAX_DECODED:
            raise ValueError("too large")
    elif method == "join":
        parts = args[0] if args else None
        if not isinstance(parts, list | tuple):
            raise TypeError("join folds a list of constants")
        size = len(value) * len(parts)
        size += sum(len(p) for p in parts if isinstance(p, str | bytes))
        if size > MAX_DECODED:
            raise ValueError("too large")
    result: object = getattr(value, method)(*args, **kwargs)
    return result


class _Decompressor(Protocol):
    @property
    def eof(self) -> bool: ...

    def decompress(self, data: bytes, max_length: int, /) -> bytes: ...


def _decompress(decompressor: _Decompressor, data: object) -> bytes:
    """Decompress ``data`` whole, or raise when it holds more than ``MAX_DECODED`` bytes."""
    if not isinstance(data, bytes | bytearray):
        raise TypeError("compressed data is bytes")
    out = decompressor.decompress(bytes(data), MAX_DECODED)
    if not decompressor.eof:
        raise ValueError("truncated, or larger than the decoding cap")
    return out


def _inflate(data: object, wbits: object = zlib.MAX_WBITS, bufsize: object = 0) -> bytes:
    if not isinstance(wbits, int):
        raise TypeError("wbits is an int")
    return _decompress(zlib.decompressobj(wbits), data)


def _gunzip(data: object) -> bytes:
    return _decompress(zlib.decompressobj(zlib.MAX_WBITS | 16), data)


def _bunzip2(data: object) -> bytes:
    return _decompress(bz2.BZ2Decompressor(), data)


def _unxz(data: object, **_: object) -> bytes:
    return _decompress(lzma.LZMADecompressor(memlimit=_LZMA_MEMLIMIT), data)


def _codecs_decode(data: object, encoding: object = "utf-8", errors: object = "strict") -> object:
    name = _codec(encoding)
    if name in ("base64", "base-64", "base64-codec"):
        return base64.b64decode(data)  # type: ignore[arg-type]
    if name in ("hex", "hex-codec"):
        return binascii.unhexlify(data)  # type: ignore[arg-type]
    if name in ("zlib", "zip", "zlib-codec"):
        return _inflate(data)
    if name in ("bz2", "bz2-codec"):
        return _bunzip2(data)
    if name in ("rot13", "rot-13") and isinstance(data, str):
        return codecs.decode(data, "rot13")
    if name in _TEXT_ENCODINGS and isinstance(data, bytes | bytearray) and isinstance(errors, str):
        return bytes(data).decode(name, errors)
    raise LookupError(f"not folded through {encoding!r}")


def _codecs_encode(data: object, encoding: object = "utf-8", errors: object = "strict") -> object:
    name = _codec(encoding)
    if name in ("rot13", "rot-13") and isinstance(data, str):
        return codecs.encode(data, "rot13")
    if name in _TEXT_ENCODINGS and isinstance(data, str) and isinstance(errors, str):
        return data.encode(name, errors)
    raise LookupError(f"not folded through {encoding!r}")


def _str_of(data: object, encoding: object = None, errors: object = "strict") -> str:
    if isinstance(data, str) and encoding is None:
        return data
    if isinstance(data, bytes | bytearray) and encoding is not None:
        return _codecs_decode(bytes(data), encoding, errors)  # type: ignore[return-value]
    raise TypeError("only str(bytes, encoding) is folded")


def _bytes_of(data: object, encoding: object = None, errors: object = "strict") -> bytes:
    if isinstance(data, str) and encoding is not None:
        return _codecs_encode(data, encoding, errors)  # type: ignore[return-value]
    if isinstance(data, bytes | bytearray) and encoding is None:
        return bytes(data)
    if isinstance(data, list | tuple) and len(data) <= MAX_DECODED and encoding is None:
        return bytes(data)
    raise TypeError("bytes(n) and other forms are not folded")


def _text_of(data: object) -> str:
    if isinstance(data, bytes | bytearray):
        return bytes(data).decode("utf-8")
    if isinstance(data, str):
        return data
    raise TypeError("text is str or bytes")


def _json_loads(data: object) -> object:
    return json.loads(_text_of(data))


def _literal_eval(data: object) -> object:
    """Read a Python literal from text (``ast.literal_eval``; nothing is evaluated)."""
    text = _text_of(data).strip(" \t\n")
    return ast.literal_eval(parse_expression(text))


_PICKLE_ARGUMENTS = frozenset(
    {"INT", "BININT", "BININT1", "BININT2", "LONG", "LONG1", "LONG4", "FLOAT", "BINFLOAT"}
    | {"STRING", "BINSTRING", "SHORT_BINSTRING", "UNICODE", "BINUNICODE", "SHORT_BINUNICODE"}
    | {"BINUNICODE8", "BINBYTES", "SHORT_BINBYTES", "BINBYTES8"}
)
_PICKLE_CONSTANTS: dict[str, object] = {"NONE": None, "NEWTRUE": True, "NEWFALSE": False}
_PICKLE_MARKED = frozenset(
    {"TUPLE", "LIST", "DICT", "FROZENSET", "APPENDS", "SETITEMS", "ADDITEMS", "POP_MARK"}
)


def _unpickle(data: object) -> object:
    """Read plain data (numbers, strings, lists, tuples, dicts, sets) from a pickle.

    The opcodes are read by :func:`pickletools.genops`, which only parses; an
    opcode that would import or call anything makes the whole pickle unreadable.
    """
    if not isinstance(data, bytes | bytearray):
        raise TypeError("a pickle is bytes")
    stack: list[Any] = []
    marks: list[int] = []
    memo: dict[object, object] = {}
    for opcode, arg, _ in pickletools.genops(bytes(data)):
        name = opcode.name
        if name in ("PROTO", "FRAME"):
            continue
        if name == "STOP":
            if len(stack) != 1 or marks:
                raise ValueError("malformed pickle")
            return stack[0]
        if name in _PICKLE_ARGUMENTS:
            stack.append(arg)
        elif name in _PICKLE_CONSTANTS:
            stack.append(_PICKLE_CONSTANTS[name])
        elif name in ("EMPTY_LIST", "EMPTY_DICT", "EMPTY_TUPLE", "EMPTY_SET"):
            stack.append({"EMPTY_LIST": [], "EMPTY_DICT": {}, "EMPTY_TUPLE": ()}.get(name, set()))
        elif name == "MARK":
            marks.append(len(stack))
        elif name in _PICKLE_MARKED:
            start = marks.pop()
            items = stack[start:]
            del stack[start:]
            if name == "TUPLE":
                stack.append(tuple(items))
            elif name == "LIST":
                stack.append(items)
            elif name == "DICT":
                stack.append(dict(zip(items[::2], items[1::2], strict=True)))
            elif name == "FROZENSET":
                stack.append(frozenset(items))
            elif name == "APPENDS":
                _pickle_target(stack, list).extend(items)
            elif name == "SETITEMS":
                _pickle_target(stack, dict).update(zip(items[::2], items[1::2], strict=True))
            elif name == "ADDITEMS":
                _pickle_target(stack, set).update(items)
        elif name in ("TUPLE1", "TUPLE2", "TUPLE3"):
            count = int(name[-1])
            if len(stack) < count:
                raise ValueError("malformed pickle")
            items = stack[-count:]
            del stack[-count:]
            stack.append(tuple(items))
        elif name == "APPEND":
            item = stack.pop()
            _pickle_target(stack, list).append(item)
        elif name == "SETITEM":
            item = stack.pop()
            key = stack.pop()
            _pickle_target(stack, dict)[key] = item
        elif name == "MEMOIZE":
            memo[len(memo)] = stack[-1]
        elif name in ("PUT", "BINPUT", "LONG_BINPUT"):
            memo[arg] = stack[-1]
        elif name in ("GET", "BINGET", "LONG_BINGET"):
            stack.append(memo[arg])
        elif name == "POP":
            stack.pop()
        elif name == "DUP":
            stack.append(stack[-1])
        else:
            raise ValueError(f"pickle opcode {name} builds more than plain data")
    raise ValueError("a pickle without STOP")


def _pickle_target(stack: list[Any], kind: type) -> Any:
    """Return the container on top of ``stack``, which must be a ``kind``."""
    if not stack or type(stack[-1]) is not kind:
        raise ValueError("malformed pickle")
    return stack[-1]


class _Marshal:
    """A reader of the plain-data part of the ``marshal`` format (no code objects)."""

    _PENDING = object()

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0
        self.refs: list[object] = []

    def take(self, count: int) -> bytes:
        if count < 0 or self.pos + count > len(self.data):
            raise EOFError("marshal data ends early")
        chunk = self.data[self.pos : self.pos + count]
        self.pos += count
        return chunk

    def int32(self) -> int:
        return int.from_bytes(self.take(4), "little", signed=True)

    def count(self) -> int:
        count = self.int32()
        if not 0 <= count <= len(self.data):
            raise ValueError("malformed marshal data")
        return count

    def read(self, depth: int) -> object:
        if depth > _MAX_NESTING:
            raise ValueError("marshal data nests too deeply")
        code = self.take(1)[0]
        kind, referenced = chr(code & 0x7F), bool(code & 0x80)
        slot = None
        if referenced and kind in "()[]{<>":
            slot = len(self.refs)  # containers are registered before their items
            self.refs.append(self._PENDING)
        value = self.value(kind, depth)
        if slot is not None:
            self.refs[slot] = value
        elif referenced:
            self.refs.append(value)
        return value

    def value(self, kind: str, depth: int) -> object:
        simple: dict[str, object] = {"N": None, "F": False, "T": True}
        if kind in simple:
            return simple[kind]
        if kind == "i":
            return self.int32()
        if kind == "l":
            size = self.int32()
            if abs(size) > 1000:
                raise ValueError("integer too long")
            digits = self.take(2 * abs(size))
            number = sum(
                int.from_bytes(digits[2 * i : 2 * i + 2], "little") << (15 * i)
                for i in range(abs(size))
            )
            return -number if size < 0 else number
        if kind == "g":
            return float(struct.unpack("<d", self.take(8))[0])
        if kind in "s":
            return self.take(self.count())
        if kind in "ut":
            return self.take(self.count()).decode("utf-8", "surrogatepass")
        if kind in "aA":
            return self.take(self.count()).decode("ascii")
        if kind in "zZ":
            return self.take(self.take(1)[0]).decode("ascii")
        if kind == "r":
            index = self.int32()
            if not 0 <= index < len(self.refs) or self.refs[index] is self._PENDING:
                raise ValueError("malformed marshal reference")
            return self.refs[index]
        if kind in "()[<>":
            size = self.take(1)[0] if kind == ")" else self.count()
            items = [self.read(depth + 1) for _ in range(size)]
            if kind == "[":
                return items
            if kind == "<":
                return set(items)
            return frozenset(items) if kind == ">" else tuple(items)
        if kind == "{":
            table: dict[object, object] = {}
            while self.data[self.pos : self.pos + 1] != b"0":
                key = self.read(depth + 1)
                table[key] = self.read(depth + 1)
            self.take(1)
            return table
        raise ValueError(f"marshal type {kind!r} is not plain data")


def _unmarshal(data: object) -> object:
    """Read plain data from ``marshal`` bytes (``marshal.loads`` trusts its input: not this)."""
    if not isinstance(data, bytes | bytearray):
        raise TypeError("marshal data is bytes")
    return _Marshal(bytes(data)).read(0)


#: Pure decoders the folder applies to constants, by qualified name.
DECODERS: dict[str, Callable[..., object]] = {
    "base64.b64decode": base64.b64decode,
    "base64.standard_b64decode": base64.standard_b64decode,
    "base64.urlsafe_b64decode": base64.urlsafe_b64decode,
    "base64.b32decode": base64.b32decode,
    "base64.b32hexdecode": base64.b32hexdecode,
    "base64.b16decode": base64.b16decode,
    "base64.b85decode": base64.b85decode,
    "base64.a85decode": base64.a85decode,
    "base64.decodebytes": base64.decodebytes,
    "binascii.a2b_base64": binascii.a2b_base64,
    "binascii.unhexlify": binascii.unhexlify,
    "binascii.a2b_hex": binascii.a2b_hex,
    "builtins.bytes.fromhex": bytes.fromhex,
    "builtins.bytearray.fromhex": bytes.fromhex,
    "zlib.decompress": _inflate,
    "gzip.decompress": _gunzip,
    "bz2.decompress": _bunzip2,
    "lzma.decompress": _unxz,
    "codecs.decode": _codecs_decode,
    "codecs.encode": _codecs_encode,
    "builtins.str": _str_of,
    "builtins.bytes": _bytes_of,
    "builtins.bytearray": _bytes_of,
    "json.loads": _json_loads,
    "ast.literal_eval": _literal_eval,
    "builtins.eval": _literal_eval,
    "pickle.loads": _unpickle,
    "_pickle.loads": _unpickle,
    "marshal.loads": _unmarshal,
}
#: Decoders whose further arguments (``eval``'s namespaces, ``json.loads``' hooks) do not matter.
_DECOMPRESSING = frozenset(
    {"zlib.decompress", "gzip.decompress", "bz2.decompress", "lzma.decompress", "codecs.decode"}
)
_FIRST_ARGUMENT_ONLY = frozenset(
    {"json.loads", "ast.literal_eval", "builtins.eval", "pickle.loads", "_pickle.loads"}
    | {"marshal.loads"}
)
