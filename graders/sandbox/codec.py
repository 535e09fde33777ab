"""A tagged JSON encoding for values crossing between the trusted side and the sandbox.

Pickle is out: unpickling runs code chosen by whoever wrote the bytes, and the
bytes come from the candidate. Plain JSON is out too: it turns tuples into
lists and cannot carry sets, bytes, non-string keys or inf/nan, so comparisons
would change meaning. Here every container carries a one-key tag and decoding
builds exact builtin types only, so a candidate's object (say, one whose
``__eq__`` always returns True) cannot reach the trusted side: the candidate
can only send data, and data compares honestly.

Scalars: ``None``, ``bool``, ``int``, ``str`` and finite ``float`` are JSON
natives. Everything else is ``{tag: payload}``:

==========  =================================================
``l``       list: ``[items]``
``t``       tuple: ``[items]``
``s``       set: ``[items]``
``fs``      frozenset: ``[items]``
``d``       dict: ``[[key, value], ...]`` (any hashable key)
``b``       bytes: base64 text
``ba``      bytearray: base64 text
``f``       non-finite float: ``"inf"``, ``"-inf"`` or ``"nan"``
``c``       complex: ``[real, imag]`` (each a float, tagged if non-finite)
``bt``      a builtin type by name (``int``, ``str``, ...), for tests passing types
``r``       a handle to an object that stays in the sandbox (see ``refs``)
==========  =================================================

The encoder accepts subclasses of the builtin types (``Counter``, a
namedtuple, an ``int`` subclass) and sends their base-type data: a subclass's
overridden ``__eq__`` is lost on the way, which is the point. Only the decoder
has to be strict, and it is: it builds exact builtin types and nothing else.

Only this module's stdlib imports are used, so the sandbox side can use it
after it has lost read access to the interpreter's files.
"""

from __future__ import annotations

import base64
import binascii
import json
import json.encoder
import math
from collections.abc import Callable
from typing import Any

__all__ = ["DecodeError", "EncodeError", "decode", "dumps", "encode", "loads"]

#: Nesting deeper than this is refused on both sides (no recursion bombs).
MAX_DEPTH = 100


class EncodeError(TypeError):
    """A value has no encoding (a type outside the table, or nesting too deep)."""


class DecodeError(ValueError):
    """Bytes that are not a well-formed encoding: a garbled or forged message."""


def _float(x: float) -> Any:
    if math.isfinite(x):
        return x
    return {"f": "nan" if math.isnan(x) else ("inf" if x > 0 else "-inf")}


def encode(
    value: Any,
    depth: int = 0,
    refs: Callable[[Any], int] | None = None,
    inspect: Callable[[Any], None] | None = None,
) -> Any:
    """Turn ``value`` into JSON-ready data.

    Args:
        value: what to send.
        depth: nesting level (internal).
        refs: for a value with no encoding, return a handle that stands for it
            (``{"r": handle}``); without it such a value raises :class:`EncodeError`.
        inspect: called with every value whose type is not an exact builtin one
            (a subclass sent as its base type's data, or an object sent as a
            handle) before it is encoded: the sandbox side looks there for
            values built to deceive a comparison.
    """
    if depth > MAX_DEPTH:
        raise EncodeError("value nested too deeply")
    t = type(value)
    if value is None or t is bool or t is int or t is str:
        return value
    if t is float:
        return _float(value)
    if inspect is not None and t not in _EXACT_CONTAINERS:
        inspect(value)
    d = depth + 1
    # Exact types first (the common case), then subclasses as their base type.
    if isinstance(value, bool):
        return bool(value)
    if isinstance(value, int):
        return int.__index__(value)
    if isinstance(value, str):
        return str.__str__(value)
    if isinstance(value, float):
        return _float(float.__float__(value))
    if isinstance(value, list):
        return {"l": [encode(v, d, refs, inspect) for v in list.__iter__(value)]}
    if isinstance(value, tuple):
        return {"t": [encode(v, d, refs, inspect) for v in tuple.__iter__(value)]}
    if isinstance(value, set):
        return {"s": [encode(v, d, refs, inspect) for v in set.__iter__(value)]}
    if isinstance(value, frozenset):
        return {"fs": [encode(v, d, refs, inspect) for v in frozenset.__iter__(value)]}
    if isinstance(value, dict):
        return {
            "d": [
                [encode(k, d, refs, inspect), encode(v, d, refs, inspect)]
                for k, v in dict.items(value)
            ]
        }
    if isinstance(value, bytes):
        return {"b": base64.b64encode(bytes(value)).decode("ascii")}
    if isinstance(value, bytearray):
        return {"ba": base64.b64encode(bytes(value)).decode("ascii")}
    if isinstance(value, complex):
        return {"c": [_float(value.real), _float(value.imag)]}
    if t is type and value in _BUILTIN_TYPES.values():
        return {"bt": value.__name__}
    if refs is not None:
        return {"r": refs(value)}
    raise EncodeError(f"a value of type {t.__name__} cannot cross the sandbox boundary")


_EXACT_CONTAINERS = frozenset({list, tuple, set, frozenset, dict, bytes, bytearray, complex})
_NONFINITE = {"inf": math.inf, "-inf": -math.inf, "nan": math.nan}
_BUILTIN_TYPES: dict[str, type] = {
    t.__name__: t
    for t in (int, float, str, bool, bytes, bytearray, list, tuple, dict, set, frozenset, complex)
}


def _items(payload: Any, depth: int, refs: Callable[[int], Any] | None) -> list[Any]:
    if type(payload) is not list:
        raise DecodeError("container payload is not a list")
    return [decode(v, depth + 1, refs) for v in payload]


def _b64(payload: Any) -> bytes:
    if type(payload) is not str:
        raise DecodeError("bytes payload is not text")
    try:
        return base64.b64decode(payload, validate=True)
    except (binascii.Error, ValueError) as e:
        raise DecodeError(f"bad base64: {e}") from None


def decode(data: Any, depth: int = 0, refs: Callable[[int], Any] | None = None) -> Any:
    """Rebuild a value from :func:`encode`'s output; anything else raises :class:`DecodeError`.

    ``refs`` turns a handle (``{"r": n}``) back into what it stands for; without
    it a handle is a DecodeError.
    """
    if depth > MAX_DEPTH:
        raise DecodeError("value nested too deeply")
    t = type(data)
    if data is None or t is bool or t is int or t is str or t is float:
        return data
    if t is not dict or len(data) != 1:
        raise DecodeError(f"untagged {t.__name__} in an encoded value")
    ((tag, payload),) = data.items()
    try:
        if tag == "l":
            return _items(payload, depth, refs)
        if tag == "t":
            return tuple(_items(payload, depth, refs))
        if tag == "s":
            return set(_items(payload, depth, refs))
        if tag == "fs":
            return frozenset(_items(payload, depth, refs))
        if tag == "d":
            if type(payload) is not list:
                raise DecodeError("dict payload is not a list")
            out: dict[Any, Any] = {}
            for pair in payload:
                if type(pair) is not list or len(pair) != 2:
                    raise DecodeError("dict item is not a [key, value] pair")
                out[decode(pair[0], depth + 1, refs)] = decode(pair[1], depth + 1, refs)
            return out
    except TypeError as e:  # an unhashable set member or dict key
        raise DecodeError(str(e)) from None
    if tag == "b":
        return _b64(payload)
    if tag == "ba":
        return bytearray(_b64(payload))
    if tag == "f":
        if type(payload) is not str or payload not in _NONFINITE:
            raise DecodeError("bad non-finite float")
        return _NONFINITE[payload]
    if tag == "r":
        if refs is None or type(payload) is not int:
            raise DecodeError("unexpected object handle")
        return refs(payload)
    if tag == "bt":
        if type(payload) is not str or payload not in _BUILTIN_TYPES:
            raise DecodeError("unknown builtin type")
        return _BUILTIN_TYPES[payload]
    if tag == "c":
        if type(payload) is not list or len(payload) != 2:
            raise DecodeError("complex payload is not [real, imag]")
        parts = [decode(p, depth + 1) for p in payload]
        if not all(type(p) is float for p in parts):
            raise DecodeError("complex parts must be floats")
        return complex(parts[0], parts[1])
    raise DecodeError(f"unknown tag {tag!r}")


def dumps(message: Any) -> bytes:
    """Serialize an already-encoded message (NaN is never emitted: it is tagged)."""
    if _C_ENCODE is not None:
        return "".join(_C_ENCODE(message, 0)).encode()
    return _ENCODER.encode(message).encode()


def _no_constant(name: str) -> Any:
    raise DecodeError(f"bare {name} is not part of the encoding")


# One encoder and one decoder for every message: json.dumps and json.loads build
# a new one per call whenever an option is passed, which cost more than the
# work on the small messages of a candidate call.
_ENCODER = json.JSONEncoder(allow_nan=False, separators=(",", ":"))
_DECODER = json.JSONDecoder(parse_constant=_no_constant)


def _unserializable(value: Any) -> Any:
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


# The C encoder that JSONEncoder.encode builds anew on every call, built once:
# same arguments as _ENCODER's (no circular check: encoded messages are trees).
_make_c_encoder = getattr(json.encoder, "c_make_encoder", None)
_C_ENCODE = (
    None
    if _make_c_encoder is None
    else _make_c_encoder(
        None,
        _unserializable,
        json.encoder.encode_basestring_ascii,
        None,
        ":",
        ",",
        False,
        False,
        False,
    )
)


def loads(raw: bytes) -> Any:
    """Parse one message's JSON; malformed text or bare NaN/Infinity is a DecodeError."""
    try:
        return _DECODER.decode(raw.decode())
    except (ValueError, RecursionError) as e:
        raise DecodeError(f"malformed message: {e}") from None
