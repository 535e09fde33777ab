"""The bridge between a harness's stubs and the candidate's dispatcher: frames of tagged values.

Every language's runtime (``runtime/``) implements this same format, and this
module is its reference (the trusted relay reads frames with it; the tests
check each runtime against it).

**Frames.** A frame is the payload's length in bytes as ASCII decimal, a colon,
then the payload: ``5:hello``. Both ends read and write descriptor 3, a stream.

**Calls.** The harness sends one request frame and waits for one reply frame;
there is never more than one call in flight. A request's payload is one value,
a list of two: the function's name (a string) and its arguments (a list).
A reply's payload is ``r`` followed by the returned value, or ``x`` followed
by a string (the candidate's function raised or panicked; its message).
A call whose reply cannot be decoded into the declared return type fails in
the harness like a wrong answer (a failed test), never as a pass.

**Values**, each self-delimiting:

=======================  ===============================================
``n``                    null: None, nil, null, an empty Optional/Option
``u``                    JavaScript's undefined (read as null elsewhere)
``b1`` / ``b0``          true / false
``i<decimal>;``          an integer of any size: ``i-42;``
``f<16 hex digits>``     a binary64 float's bits, big-endian: ``f3ff0000000000000``
                         is 1.0 (a binary32 is widened first, which is exact)
``c<decimal>;``          one character, by its code point: ``c97;``
``s<len>:<bytes>``       a string, UTF-8, its length in bytes: ``s2:hi``
``l<count>:<values>``    a sequence (vector, list, slice, array, Vec)
``t<count>:<values>``    a tuple or pair
``m<count>:<values>``    a map: count keys, each followed by its value
=======================  ===============================================

A dynamic target (Go's ``interface{}``, Rust's ``Box<dyn Any>``, Java's
``Object``, any JavaScript value) is decoded by tag: ``i`` to the language's
integer, ``f`` to its float, and so on.
"""

from __future__ import annotations

import math
import struct
from dataclasses import dataclass
from typing import Any

__all__ = [
    "MAX_FRAME_BYTES",
    "Char",
    "Tuple",
    "WireError",
    "decode",
    "encode",
    "frame",
    "read_frame",
    "request",
]

#: The largest frame either side may send (a reply that large is a wrong answer).
MAX_FRAME_BYTES = 16 << 20


class WireError(ValueError):
    """Bytes that are not a well-formed frame or value."""


@dataclass(frozen=True, slots=True)
class Char:
    """One character (``c``): kept apart from a one-letter string."""

    code: int


@dataclass(frozen=True, slots=True)
class Tuple:
    """A tuple (``t``): kept apart from a list."""

    items: tuple[Any, ...]


class Undefined:
    """JavaScript's undefined (``u``)."""

    def __repr__(self) -> str:
        return "undefined"


UNDEFINED = Undefined()


def encode(value: Any) -> bytes:
    """Encode a Python value (None, bool, int, float, str, Char, Tuple, list, dict)."""
    out: list[bytes] = []
    _encode(value, out)
    return b"".join(out)


def _encode(value: Any, out: list[bytes]) -> None:
    if value is None:
        out.append(b"n")
    elif value is UNDEFINED:
        out.append(b"u")
    elif isinstance(value, bool):
        out.append(b"b1" if value else b"b0")
    elif isinstance(value, int):
        out.append(b"i%d;" % value)
    elif isinstance(value, float):
        out.append(b"f" + struct.pack(">d", value).hex().encode())
    elif isinstance(value, str):
        raw = value.encode("utf-8", "surrogatepass")
        out.append(b"s%d:" % len(raw) + raw)
    elif isinstance(value, Char):
        out.append(b"c%d;" % value.code)
    elif isinstance(value, Tuple):
        out.append(b"t%d:" % len(value.items))
        for item in value.items:
            _encode(item, out)
    elif isinstance(value, (list, tuple)):
        out.append(b"l%d:" % len(value))
        for item in value:
            _encode(item, out)
    elif isinstance(value, dict):
        out.append(b"m%d:" % len(value))
        for key, item in value.items():
            _encode(key, out)
            _encode(item, out)
    else:
        raise WireError(f"cannot encode a {type(value).__name__}")


def decode(data: bytes) -> Any:
    """Decode exactly one value that fills ``data``."""
    value, end = _decode(data, 0, 0)
    if end != len(data):
        raise WireError(f"{len(data) - end} bytes after the value")
    return value


_MAX_DEPTH = 200


def _number(data: bytes, pos: int, stop: bytes) -> tuple[int, int]:
    end = data.find(stop, pos)
    if end < 0 or end - pos > 100_000:
        raise WireError(f"unterminated number at byte {pos}")
    text = data[pos:end]
    if not text or not text.lstrip(b"-").isdigit():
        raise WireError(f"not a decimal number at byte {pos}: {text[:20]!r}")
    return int(text), end + 1


def _decode(data: bytes, pos: int, depth: int) -> tuple[Any, int]:
    if depth > _MAX_DEPTH:
        raise WireError("values nested too deep")
    if pos >= len(data):
        raise WireError("the value ends early")
    tag = data[pos : pos + 1]
    pos += 1
    if tag == b"n":
        return None, pos
    if tag == b"u":
        return UNDEFINED, pos
    if tag == b"b":
        flag = data[pos : pos + 1]
        if flag not in (b"0", b"1"):
            raise WireError(f"a bool must be b0 or b1, at byte {pos}")
        return flag == b"1", pos + 1
    if tag == b"i":
        return _number(data, pos, b";")
    if tag == b"f":
        bits = data[pos : pos + 16]
        if len(bits) != 16:
            raise WireError(f"a float needs 16 hex digits, at byte {pos}")
        try:
            return struct.unpack(">d", bytes.fromhex(bits.decode("ascii")))[0], pos + 16
        except (ValueError, UnicodeDecodeError) as e:
            raise WireError(f"bad float bits at byte {pos}") from e
    if tag == b"c":
        code, pos = _number(data, pos, b";")
        if not 0 <= code <= 0x10FFFF:
            raise WireError(f"no character has code {code}")
        return Char(code), pos
    if tag == b"s":
        size, pos = _number(data, pos, b":")
        if size < 0 or pos + size > len(data):
            raise WireError("a string runs past the frame")
        return data[pos : pos + size].decode("utf-8", "surrogatepass"), pos + size
    if tag in (b"l", b"t", b"m"):
        count, pos = _number(data, pos, b":")
        if count < 0 or count > len(data):
            raise WireError(f"a count of {count} cannot fit the frame")
        items = []
        for _ in range(count * (2 if tag == b"m" else 1)):
            item, pos = _decode(data, pos, depth + 1)
            items.append(item)
        if tag == b"l":
            return items, pos
        if tag == b"t":
            return Tuple(tuple(items)), pos
        pairs = zip(items[0::2], items[1::2], strict=True)
        return {_hashable(k): v for k, v in pairs}, pos
    raise WireError(f"unknown tag {tag!r} at byte {pos - 1}")


def _hashable(key: Any) -> Any:
    if isinstance(key, list):
        return tuple(_hashable(k) for k in key)
    if isinstance(key, float) and math.isnan(key):
        raise WireError("a map key cannot be NaN")
    return key


def frame(payload: bytes) -> bytes:
    """Frame ``payload``: its length, a colon, the payload."""
    return b"%d:" % len(payload) + payload


def request(name: str, args: list[Any]) -> bytes:
    """The framed request of one call (what a stub sends)."""
    return frame(encode([name, list(args)]))


def read_frame(read: Any, max_bytes: int = MAX_FRAME_BYTES) -> bytes | None:
    """Read one frame with ``read(n) -> bytes``; ``None`` at a clean end of stream.

    Raises :class:`WireError` for a malformed or oversized frame, or one cut short.
    """
    head = b""
    while True:
        byte = read(1)
        if not byte:
            if head:
                raise WireError("the stream ended inside a frame's length")
            return None
        if byte == b":":
            break
        if not byte.isdigit() or len(head) > 12:
            raise WireError(f"a frame's length must be decimal digits, got {head + byte!r}")
        head += byte
    if not head:
        raise WireError("a frame's length is empty")
    size = int(head)
    if size > max_bytes:
        raise WireError(f"a frame of {size} bytes is over the limit of {max_bytes}")
    chunks: list[bytes] = []
    left = size
    while left:
        chunk = read(min(left, 1 << 16))
        if not chunk:
            raise WireError("the stream ended inside a frame")
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)
