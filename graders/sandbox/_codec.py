"""A tagged JSON encoding for values crossing between the trusted side and the sandbox.

One module, one job: the value encoding. Its encoder and decoder are one grammar, tested
as a round trip; splitting them would let the two sides drift.

Pickle is out: unpickling runs code chosen by whoever wrote the bytes, and the
bytes come from the candidate. Plain JSON is out too: it turns tuples into
lists and cannot carry sets, bytes, non-string keys or inf/nan, so comparisons
would change meaning. Here every container carries a one-key tag and decoding
builds exact builtin (or standard-library) types only, so a candidate's object
(say, one whose ``__eq__`` always returns True) cannot reach the trusted side:
the candidate can only send data, and data compares honestly.

Scalars: ``None``, ``bool``, ``str``, finite ``float`` and ``int`` below 2**63
are JSON natives. Everything else is ``{tag: payload}``:

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
``i``       a large int: signed hex text (never decimal: no int-to-str limit applies)
``rg``      range: ``[start, stop, step]``
``dq``      collections.deque: ``[[items], maxlen]``
``dec``     decimal.Decimal: its text
``fr``      fractions.Fraction: ``[numerator, denominator]``
``da``      datetime.date: ``[year, month, day]``
``dtm``     datetime.datetime: ``[year, month, day, hour, minute, second,
            microsecond, fold, offset]`` (``offset``: ``None`` when naive, else
            the UTC offset as ``[days, seconds, microseconds]``; a zone crosses
            as that fixed offset)
``tm``      datetime.time: ``[hour, minute, second, microsecond, fold, offset]``
``td``      datetime.timedelta: ``[days, seconds, microseconds]``
``it``      an iterator nested in a value (a generator in a list, ...): its
            items, consumed on the sending side; decoded as an iterator
``g``       a stream: an iterator a call returned, which stays in the sandbox
            and is read as the tests consume it (see ``refs``)
``nt``      a namedtuple: ``[type name, [field names], [items]]``
``dc``      a dataclass instance: ``[type name, frozen, [[field, value], ...]]``
``en``      a plain Enum member: ``[type name, member name, value]`` (an
            ``IntEnum`` or ``StrEnum`` member crosses as its value)
``bt``      a builtin type by name (``int``, ``str``, ...), for tests passing types
``r``       a handle to an object that stays in the sandbox (see ``refs``)
``o``       an opaque handle: a value the trusted side may only pass back
``m``       a shared mutable container: ``[n, tagged payload]`` (see :class:`Sharing`)
``ma``      the shared mutable container number ``n`` again (an alias)
==========  =================================================

Shared containers let a call follow Python's semantics for its arguments: the
trusted side numbers every list, dict, set and bytearray in the arguments it
sends; the sandbox sends back the new contents of those the candidate changed,
and refers to them by number wherever a result holds them, so the test sees
the candidate's mutations, and a returned argument is the very object it passed.

The encoder accepts subclasses of the builtin types (``Counter``, an ``int``
subclass) and sends their base-type data: a subclass's overridden ``__eq__`` is
lost on the way, which is the point. Three shapes keep their form, because
tests read them by name (``r.lo``, ``p.x``, ``Color.RED``): namedtuples,
dataclass instances and plain Enum members cross as their type's name, their
field names and their fields' data, and the decoder rebuilds them from classes
of its own (:class:`Shapes`): the trusted side's class of that name when it has
one of the same shape (a dataclass the task's prompt defines), else a class the
decoder makes (a real namedtuple; a dataclass with the same fields; an
:class:`EnumValue`). No method of the candidate's class comes along. Only the
decoder has to be strict, and it is: it builds exact types (and those shapes)
and nothing else, within size limits (:data:`MAX_DEPTH`,
:data:`MAX_INT_HEX_DIGITS`, :data:`MAX_ITEMS`, :data:`MAX_FIELDS`).

Only this module's stdlib imports are used, so the sandbox side can use it
after it has lost read access to the interpreter's files.
"""

from __future__ import annotations

import base64
import binascii
import collections
import datetime
import decimal
import enum
import fractions
import functools
import itertools
import json
import json.encoder
import keyword
import math
import sys
import types
from collections.abc import Callable
from typing import Any

__all__ = [
    "DecodeError",
    "EncodeError",
    "EnumValue",
    "Shapes",
    "Sharing",
    "decode",
    "decode_into",
    "dumps",
    "encode",
    "encode_contents",
    "loads",
]

#: Nesting deeper than this is refused on both sides (no recursion bombs).
MAX_DEPTH = 100
#: The largest int that crosses: 2**(4 * this) (some 1.2 million decimal digits).
MAX_INT_HEX_DIGITS = 1 << 18
#: The most items an iterator may yield before it is refused (an endless generator).
MAX_ITEMS = 1 << 20
#: The most fields a namedtuple or dataclass may carry across, and the longest name.
MAX_FIELDS = 256
MAX_NAME = 200
#: Ints from here on cross as hex text: JSON readers lose precision past 2**53,
#: and Python's own refuse decimal text past 4,300 digits.
_BIG = 1 << 63


class EncodeError(TypeError):
    """A value has no encoding (a type outside the table, or nesting too deep)."""


class DecodeError(ValueError):
    """Bytes that are not a well-formed encoding: a garbled or forged message."""


#: Exact types of mutable containers that :class:`Sharing` numbers.
_MUTABLE = (list, dict, set, bytearray)


class Sharing:
    """The mutable containers of one call's arguments, by number.

    The trusted side encodes a call's arguments with a fresh ``Sharing(grow=True)``:
    every exact list, dict, set and bytearray met is numbered (``m``), and met
    again is an alias (``ma``). The sandbox decodes them into ``objects`` in the
    same order, then encodes the call's result, and the new contents of the
    arguments, with ``Sharing(grow=False)`` over those objects: a container it
    received is sent as its number, so that the trusted side resolves it to its
    own original object.
    """

    def __init__(self, objects: list[Any] | None = None, *, grow: bool) -> None:
        self.objects: list[Any] = objects if objects is not None else []
        self.grow = grow
        self._index = {id(o): n for n, o in enumerate(self.objects)}

    def number(self, value: Any) -> int | None:
        """Return the container's number if it is shared already."""
        return self._index.get(id(value))

    def add(self, value: Any) -> int:
        """Number a new container."""
        n = len(self.objects)
        self.objects.append(value)
        self._index[id(value)] = n
        return n


def _float(x: float) -> Any:
    if math.isfinite(x):
        return x
    return {"f": "nan" if math.isnan(x) else ("inf" if x > 0 else "-inf")}


def _int(x: int) -> Any:
    if -_BIG < x < _BIG:
        return x
    text = hex(x)
    if len(text) > MAX_INT_HEX_DIGITS + 3:
        raise EncodeError(f"an int of {x.bit_length()} bits is too large to cross")
    return {"i": text}


_ITERATOR_TYPES = frozenset(
    {
        types.GeneratorType,
        map,
        filter,
        zip,
        enumerate,
        reversed,
        type(iter([])),
        type(reversed([])),
        type(iter(())),
        type(iter(set())),
        type(iter("")),
        type(iter(b"")),
        type(iter(bytearray())),
        type(iter(range(0))),
        type(iter(range(1 << 70))),
        type(iter({})),
        type(iter({}.values())),
        type(iter({}.items())),
        type(iter(collections.deque())),
    }
)


def _is_iterator(t: type) -> bool:
    return t in _ITERATOR_TYPES or t.__module__ == "itertools"


def _consume(value: Any) -> list[Any]:
    items = list(itertools.islice(value, MAX_ITEMS + 1))
    if len(items) > MAX_ITEMS:
        raise EncodeError(f"an iterator yielded more than {MAX_ITEMS} items")
    return items


class _Encoder:
    """One encoding pass: the options stay put while the value is walked."""

    __slots__ = ("inspect", "refs", "sharing")

    def __init__(
        self,
        refs: Callable[[Any], Any] | None,
        inspect: Callable[[Any], None] | None,
        sharing: Sharing | None,
    ) -> None:
        self.refs = refs
        self.inspect = inspect
        self.sharing = sharing

    def contents(self, value: Any, d: int) -> Any:
        """Encode a shared container's own contents (never as its number)."""
        t = type(value)
        if t is list:
            return {"l": [self.value(v, d) for v in value]}
        if t is dict:
            return {"d": [[self.value(k, d), self.value(v, d)] for k, v in value.items()]}
        if t is set:
            return {"s": [self.value(v, d) for v in value]}
        return {"ba": base64.b64encode(bytes(value)).decode("ascii")}

    def shape(self, value: Any, t: type, d: int) -> Any:
        """Encode a plain Enum member, a dataclass instance or a namedtuple; None for others."""
        if isinstance(value, enum.Enum):
            if isinstance(value, (int, float, str, bytes)):
                return None  # IntEnum, StrEnum, IntFlag: their value is what they are
            return {"en": [_name(t.__name__), _name(value._name_), self.value(value._value_, d)]}
        if t is EnumValue:
            # A member that crossed here as one (the tests pass it back): the same shape.
            return {"en": [_name(value.cls_name), _name(value.name), self.value(value.value, d)]}
        dataclasses = sys.modules.get("dataclasses")
        if (
            dataclasses is not None
            and type(getattr(t, "__dataclass_fields__", None)) is dict
            and not isinstance(value, type)
        ):
            names = [_name(f.name) for f in dataclasses.fields(value)]
            if len(names) > MAX_FIELDS:
                raise EncodeError(f"a dataclass of {len(names)} fields is too large to cross")
            params = getattr(t, "__dataclass_params__", None)
            frozen = bool(getattr(params, "frozen", False))
            pairs = [[n, self.value(getattr(value, n), d)] for n in names]
            return {"dc": [_name(t.__name__), frozen, pairs]}
        if isinstance(value, tuple) and t is not tuple:
            fields: Any = getattr(t, "_fields", None)
            if (
                type(fields) is tuple
                and len(fields) == tuple.__len__(value)
                and len(fields) <= MAX_FIELDS
                and all(type(f) is str for f in fields)
            ):
                items = [self.value(v, d) for v in tuple.__iter__(value)]
                return {"nt": [_name(t.__name__), [_name(f) for f in fields], items]}
        return None

    def value(self, value: Any, depth: int) -> Any:
        """Encode ``value`` at nesting level ``depth``."""
        if depth > MAX_DEPTH:
            raise EncodeError("value nested too deeply")
        t = type(value)
        if value is None or t is bool or t is str:
            return value
        if t is int:
            return _int(value)
        if t is float:
            return _float(value)
        d = depth + 1
        sharing = self.sharing
        if sharing is not None and t in _MUTABLE:
            n = sharing.number(value)
            if n is not None:
                return {"ma": n}
            if sharing.grow:
                return {"m": [sharing.add(value), self.contents(value, d)]}
        if self.inspect is not None and t not in _EXACT_CONTAINERS:
            self.inspect(value)
        if t not in _EXACT_CONTAINERS:
            shaped = self.shape(value, t, d)
            if shaped is not None:
                return shaped
        # Exact types first (the common case), then subclasses as their base type.
        if isinstance(value, bool):
            return bool(value)
        if isinstance(value, int):
            return _int(int.__index__(value))
        if isinstance(value, str):
            return str.__str__(value)
        if isinstance(value, float):
            return _float(float.__float__(value))
        if isinstance(value, list):
            return {"l": [self.value(v, d) for v in list.__iter__(value)]}
        if isinstance(value, tuple):
            return {"t": [self.value(v, d) for v in tuple.__iter__(value)]}
        if isinstance(value, set):
            return {"s": [self.value(v, d) for v in set.__iter__(value)]}
        if isinstance(value, frozenset):
            return {"fs": [self.value(v, d) for v in frozenset.__iter__(value)]}
        if isinstance(value, dict):
            return {"d": [[self.value(k, d), self.value(v, d)] for k, v in dict.items(value)]}
        if isinstance(value, bytes):
            return {"b": base64.b64encode(bytes(value)).decode("ascii")}
        if isinstance(value, bytearray):
            return {"ba": base64.b64encode(bytes(value)).decode("ascii")}
        if isinstance(value, complex):
            return {"c": [_float(value.real), _float(value.imag)]}
        if t is range:
            return {"rg": [_int(value.start), _int(value.stop), _int(value.step)]}
        if t is collections.deque:
            return {"dq": [[self.value(v, d) for v in list(value)], value.maxlen]}
        if t is decimal.Decimal:
            return {"dec": str(value)}
        if t is fractions.Fraction:
            return {"fr": [_int(value.numerator), _int(value.denominator)]}
        if t in _DATETIMES:
            return _datetime(value, t)
        if _is_iterator(t):
            return {"it": [self.value(v, d) for v in _consume(value)]}
        if t is type and value in _BUILTIN_TYPES.values():
            return {"bt": value.__name__}
        if self.refs is not None:
            handle = self.refs(value)
            if type(handle) is tuple:
                return {handle[0]: handle[1]}
            return {"r": handle}
        raise EncodeError(f"a value of type {t.__name__} cannot cross the sandbox boundary")


def encode(
    value: Any,
    depth: int = 0,
    refs: Callable[[Any], Any] | None = None,
    inspect: Callable[[Any], None] | None = None,
    sharing: Sharing | None = None,
) -> Any:
    """Turn ``value`` into JSON-ready data.

    Args:
        value: what to send.
        depth: nesting level to start at.
        refs: for a value with no encoding, return a handle that stands for it:
            an int (``{"r": handle}``) or a ``(tag, handle)`` pair (``"r"`` or
            ``"o"``); without it such a value raises :class:`EncodeError`.
        inspect: called with every value whose type is not an exact builtin one
            (a subclass sent as its base type's data, or an object sent as a
            handle) before it is encoded: the sandbox side looks there for
            values built to deceive a comparison.
        sharing: the call's shared mutable containers (see :class:`Sharing`).
    """
    return _Encoder(refs, inspect, sharing).value(value, depth)


def encode_contents(
    value: Any,
    sharing: Sharing,
    refs: Callable[[Any], Any] | None = None,
    inspect: Callable[[Any], None] | None = None,
) -> Any:
    """Encode a shared container's contents, its items shared as in :func:`encode`."""
    return _Encoder(refs, inspect, sharing).contents(value, 1)


def _name(text: Any) -> str:
    """Return a type's or a field's name as plain text, or refuse it."""
    if not isinstance(text, str) or not 0 < str.__len__(text) <= MAX_NAME:
        raise EncodeError("a shape's names must be text of 1 to 200 characters")
    return str.__str__(text)


_EXACT_CONTAINERS = frozenset({list, tuple, set, frozenset, dict, bytes, bytearray, complex})
_NONFINITE = {"inf": math.inf, "-inf": -math.inf, "nan": math.nan}
_BUILTIN_TYPES: dict[str, type] = {
    t.__name__: t
    for t in (int, float, str, bool, bytes, bytearray, list, tuple, dict, set, frozenset, complex)
}


#: The datetime module's value types, which cross by value (exact types only).
_DATETIMES = frozenset({datetime.date, datetime.datetime, datetime.time, datetime.timedelta})


def _span(delta: datetime.timedelta | None) -> list[int] | None:
    if delta is None:
        return None
    if type(delta) is not datetime.timedelta:
        raise EncodeError("a UTC offset that is not a timedelta cannot cross")
    return [delta.days, delta.seconds, delta.microseconds]


def _datetime(value: Any, t: type) -> dict[str, Any]:
    """Encode a date, datetime, time or timedelta (an aware one with its fixed offset)."""
    if t is datetime.timedelta:
        return {"td": [value.days, value.seconds, value.microseconds]}
    if t is datetime.date:
        return {"da": [value.year, value.month, value.day]}
    clock = [value.hour, value.minute, value.second, value.microsecond, value.fold]
    if t is datetime.time:
        return {"tm": [*clock, _span(value.utcoffset())]}
    return {"dtm": [value.year, value.month, value.day, *clock, _span(value.utcoffset())]}


def _undatetime(tag: str, payload: Any) -> Any:
    """Rebuild a date, datetime, time or timedelta; a malformed payload is a DecodeError."""
    sizes = {"td": 3, "da": 3, "tm": 6, "dtm": 9}
    if type(payload) is not list or len(payload) != sizes[tag]:
        raise DecodeError(f"a {tag!r} payload is not a list of {sizes[tag]}")
    *fields, offset = payload if tag in ("tm", "dtm") else (*payload, None)
    if not all(type(f) is int for f in fields):
        raise DecodeError(f"a {tag!r} payload holds a field that is not an int")
    try:
        if tag == "td":
            return datetime.timedelta(days=fields[0], seconds=fields[1], microseconds=fields[2])
        if tag == "da":
            return datetime.date(*fields)
        zone = None
        if offset is not None:
            if (
                type(offset) is not list
                or len(offset) != 3
                or any(type(f) is not int for f in offset)
            ):
                raise DecodeError("a UTC offset is not [days, seconds, microseconds]")
            zone = datetime.timezone(datetime.timedelta(*offset))
        if tag == "tm":
            hour, minute, second, micro, fold = fields
            return datetime.time(hour, minute, second, micro, zone, fold=fold)
        year, month, day, hour, minute, second, micro, fold = fields
        return datetime.datetime(year, month, day, hour, minute, second, micro, zone, fold=fold)
    except (ValueError, TypeError, OverflowError) as e:
        raise DecodeError(f"a bad {tag!r}: {e}") from None


def _b64(payload: Any) -> bytes:
    if type(payload) is not str:
        raise DecodeError("bytes payload is not text")
    try:
        return base64.b64decode(payload, validate=True)
    except (binascii.Error, ValueError) as e:
        raise DecodeError(f"bad base64: {e}") from None


def _hex_int(payload: Any) -> int:
    if type(payload) is not str or len(payload) > MAX_INT_HEX_DIGITS + 3:
        raise DecodeError("bad large int")
    digits = payload[1:] if payload.startswith("-") else payload
    if not (digits.startswith("0x") and len(digits) > 2 and _HEX.issuperset(digits[2:])):
        raise DecodeError("bad large int")
    return int(payload, 16)


_HEX = frozenset("0123456789abcdef")


class EnumValue:
    """A plain Enum member whose class the decoding side does not have.

    It equals the same member (by its class's name and its own), and shows its
    ``name`` and ``value``; nothing of the candidate's class comes with it.
    """

    __slots__ = ("cls_name", "name", "value")
    cls_name: str
    name: str
    value: Any

    def __init__(self, cls_name: str, name: str, value: Any) -> None:
        object.__setattr__(self, "cls_name", cls_name)
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "value", value)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("an Enum member cannot be changed")

    def __eq__(self, other: object) -> bool:
        if type(other) is EnumValue:
            return (self.cls_name, self.name) == (other.cls_name, other.name)
        return NotImplemented

    def __hash__(self) -> int:
        return hash((self.cls_name, self.name))

    def __repr__(self) -> str:
        return f"<{self.cls_name}.{self.name}: {self.value!r}>"

    def __str__(self) -> str:
        return f"{self.cls_name}.{self.name}"


def _identifier(name: str) -> bool:
    return name.isidentifier() and not keyword.iskeyword(name)


@functools.lru_cache(maxsize=1024)
def _made_namedtuple(name: str, fields: tuple[str, ...]) -> type:
    """A namedtuple class of this shape, made here once."""
    typename = name if _identifier(name) and not name.startswith("_") else "namedtuple"
    try:
        return collections.namedtuple(typename, fields, rename=True)
    except (ValueError, TypeError) as e:
        raise DecodeError(f"bad namedtuple fields: {e}") from None


@functools.lru_cache(maxsize=1024)
def _made_dataclass(name: str, fields: tuple[str, ...], frozen: bool) -> type:
    """A dataclass of this shape (same name, fields and frozenness), made here once."""
    dataclasses = sys.modules.get("dataclasses")
    if dataclasses is None:  # a confined run cannot import what it has not loaded
        raise DecodeError("a dataclass where none can be made")
    if len(set(fields)) != len(fields) or not all(
        _identifier(f) and not f.startswith("__") for f in fields
    ):
        raise DecodeError("bad dataclass fields")
    made: type = dataclasses.make_dataclass(
        name if _identifier(name) else "dataclass", fields, frozen=frozen
    )
    return made


class Shapes:
    """The classes that decoded shapes (namedtuples, dataclasses, Enum members) become.

    ``known`` maps names to the decoding side's own classes (a task's prompt
    defines a dataclass; the candidate's module defines its copy of it): a
    shape whose type has that name and the same fields becomes an instance of
    that class, built field by field, never through its ``__init__``. Any other
    becomes an instance of a class made here with the same name and fields.
    """

    def __init__(self, known: Any = None) -> None:
        self.known = known if known is not None else {}

    def _known(self, name: str) -> Any:
        try:
            return self.known.get(name)
        except Exception:
            return None

    def namedtuple(self, name: str, fields: tuple[str, ...]) -> type:
        """Return the namedtuple class for this shape."""
        cls = self._known(name)
        if (
            isinstance(cls, type)
            and issubclass(cls, tuple)
            and cls.__dict__.get("_fields") == fields
        ):
            return cls
        return _made_namedtuple(name, fields)

    def dataclass(self, name: str, fields: tuple[str, ...], frozen: bool) -> type:
        """Return the dataclass for this shape."""
        cls = self._known(name)
        own = getattr(cls, "__dataclass_fields__", None) if isinstance(cls, type) else None
        if type(own) is dict and tuple(own) == fields:
            return cls  # type: ignore[no-any-return]
        return _made_dataclass(name, fields, frozen)

    def enum_member(self, name: str, member: str, value: Any) -> Any:
        """Return the Enum member for this shape."""
        cls = self._known(name)
        if isinstance(cls, enum.EnumMeta) and member in cls.__members__:
            return cls.__members__[member]
        return EnumValue(name, member, value)


_NO_SHAPES = Shapes()


class _Decoder:
    """One decoding pass, with the handle resolver, the shared containers and the shapes."""

    __slots__ = ("refs", "shapes", "shared")

    def __init__(
        self,
        refs: Callable[[Any], Any] | None,
        shared: Sharing | None,
        shapes: Shapes | None = None,
    ) -> None:
        self.refs = refs
        self.shared = shared
        self.shapes = shapes if shapes is not None else _NO_SHAPES

    def names(self, payload: Any) -> tuple[str, ...]:
        if (
            type(payload) is not list
            or len(payload) > MAX_FIELDS
            or not all(type(n) is str and 0 < len(n) <= MAX_NAME for n in payload)
        ):
            raise DecodeError("a shape's field names are not a list of names")
        return tuple(payload)

    def shaped(self, tag: str, payload: Any, depth: int) -> Any:
        """Rebuild a namedtuple (``nt``), a dataclass (``dc``) or an Enum member (``en``)."""
        if type(payload) is not list or len(payload) != 3:
            raise DecodeError(f"a {tag!r} payload is not a list of three")
        name = payload[0]
        if type(name) is not str or not 0 < len(name) <= MAX_NAME:
            raise DecodeError("a shape's type name is not a name")
        if tag == "nt":
            fields = self.names(payload[1])
            items = self.items(payload[2], depth)
            if len(items) != len(fields):
                raise DecodeError("a namedtuple's items do not match its fields")
            return self.shapes.namedtuple(name, fields)._make(items)  # type: ignore[attr-defined]
        if tag == "dc":
            frozen, pairs = payload[1], payload[2]
            if type(frozen) is not bool or type(pairs) is not list:
                raise DecodeError("a dataclass payload is not [name, frozen, fields]")
            if not all(type(p) is list and len(p) == 2 for p in pairs):
                raise DecodeError("a dataclass field is not a [name, value] pair")
            fields = self.names([p[0] for p in pairs])
            values = [self.value(p[1], depth + 1) for p in pairs]
            cls = self.shapes.dataclass(name, fields, frozen)
            made: Any = object.__new__(cls)
            for field_name, field_value in zip(fields, values, strict=True):
                object.__setattr__(made, field_name, field_value)
            return made
        member = payload[1]
        if type(member) is not str or not 0 < len(member) <= MAX_NAME:
            raise DecodeError("an Enum member's name is not a name")
        return self.shapes.enum_member(name, member, self.value(payload[2], depth + 1))

    def items(self, payload: Any, depth: int) -> list[Any]:
        if type(payload) is not list:
            raise DecodeError("container payload is not a list")
        return [self.value(v, depth + 1) for v in payload]

    def fill(self, target: Any, data: Any, depth: int) -> None:
        """Decode a container's tagged contents into ``target`` (an empty list, dict or set)."""
        if type(data) is not dict or len(data) != 1:
            raise DecodeError("a shared container's contents are not tagged")
        ((tag, payload),) = data.items()
        t = type(target)
        if t is list and tag == "l":
            target.extend(self.items(payload, depth))
        elif t is set and tag == "s":
            target.update(self.items(payload, depth))
        elif t is dict and tag == "d":
            if type(payload) is not list:
                raise DecodeError("dict payload is not a list")
            for pair in payload:
                if type(pair) is not list or len(pair) != 2:
                    raise DecodeError("dict item is not a [key, value] pair")
                target[self.value(pair[0], depth + 1)] = self.value(pair[1], depth + 1)
        elif t is bytearray and tag == "ba":
            target.extend(_b64(payload))
        else:
            raise DecodeError(f"shared {t.__name__} with contents tagged {tag!r}")

    def value(self, data: Any, depth: int) -> Any:
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
                return self.items(payload, depth)
            if tag == "t":
                return tuple(self.items(payload, depth))
            if tag == "s":
                return set(self.items(payload, depth))
            if tag == "fs":
                return frozenset(self.items(payload, depth))
            if tag == "d":
                out: dict[Any, Any] = {}
                self.fill(out, data, depth)
                return out
            if tag == "it":
                return iter(self.items(payload, depth))
            if tag == "dq":
                if type(payload) is not list or len(payload) != 2:
                    raise DecodeError("deque payload is not [items, maxlen]")
                maxlen = payload[1]
                if maxlen is not None and (type(maxlen) is not int or maxlen < 0):
                    raise DecodeError("bad deque maxlen")
                return collections.deque(self.items(payload[0], depth), maxlen)
            if tag == "m":
                return self.shared_new(payload, depth)
            if tag in ("nt", "dc", "en"):
                return self.shaped(tag, payload, depth)
        except TypeError as e:  # an unhashable set member or dict key
            raise DecodeError(str(e)) from None
        return self.scalar(tag, payload, depth)

    def shared_new(self, payload: Any, depth: int) -> Any:
        shared = self.shared
        if shared is None or not shared.grow:
            raise DecodeError("a shared container where none is expected")
        if type(payload) is not list or len(payload) != 2 or payload[0] != len(shared.objects):
            raise DecodeError("shared containers out of order")
        contents = payload[1]
        if type(contents) is not dict or len(contents) != 1:
            raise DecodeError("a shared container's contents are not tagged")
        tag = next(iter(contents))
        empty = {"l": list, "d": dict, "s": set, "ba": bytearray}.get(tag)
        if empty is None:
            raise DecodeError(f"a shared container cannot be tagged {tag!r}")
        target = empty()
        shared.add(target)  # before its items: a list may hold itself
        self.fill(target, contents, depth)
        return target

    def scalar(self, tag: str, payload: Any, depth: int) -> Any:
        if tag == "b":
            return _b64(payload)
        if tag == "ba":
            return bytearray(_b64(payload))
        if tag == "f":
            if type(payload) is not str or payload not in _NONFINITE:
                raise DecodeError("bad non-finite float")
            return _NONFINITE[payload]
        if tag == "i":
            return _hex_int(payload)
        if tag in ("r", "o", "g"):
            if self.refs is None or type(payload) is not int:
                raise DecodeError("unexpected object handle")
            return self.refs(payload) if tag == "r" else self.refs((tag, payload))
        if tag == "ma":
            shared = self.shared
            if shared is None or type(payload) is not int or not 0 <= payload < len(shared.objects):
                raise DecodeError("an alias of no shared container")
            return shared.objects[payload]
        if tag == "bt":
            if type(payload) is not str or payload not in _BUILTIN_TYPES:
                raise DecodeError("unknown builtin type")
            return _BUILTIN_TYPES[payload]
        if tag == "c":
            if type(payload) is not list or len(payload) != 2:
                raise DecodeError("complex payload is not [real, imag]")
            parts = [self.value(p, depth + 1) for p in payload]
            if not all(type(p) is float for p in parts):
                raise DecodeError("complex parts must be floats")
            return complex(parts[0], parts[1])
        if tag == "rg":
            if type(payload) is not list or len(payload) != 3:
                raise DecodeError("range payload is not [start, stop, step]")
            bounds = [self.value(p, depth + 1) for p in payload]
            if not all(type(b) is int for b in bounds) or bounds[2] == 0:
                raise DecodeError("bad range")
            return range(*bounds)
        if tag == "dec":
            if type(payload) is not str or len(payload) > MAX_INT_HEX_DIGITS:
                raise DecodeError("bad decimal")
            try:
                return decimal.Decimal(payload)
            except (decimal.InvalidOperation, ValueError):
                raise DecodeError("bad decimal") from None
        if tag in ("da", "dtm", "tm", "td"):
            return _undatetime(tag, payload)
        if tag == "fr":
            if type(payload) is not list or len(payload) != 2:
                raise DecodeError("fraction payload is not [numerator, denominator]")
            num, den = (self.value(p, depth + 1) for p in payload)
            if type(num) is not int or type(den) is not int or den <= 0:
                raise DecodeError("bad fraction")
            return fractions.Fraction(num, den)
        raise DecodeError(f"unknown tag {tag!r}")


def decode(
    data: Any,
    depth: int = 0,
    refs: Callable[[Any], Any] | None = None,
    shared: Sharing | None = None,
    shapes: Shapes | None = None,
) -> Any:
    """Rebuild a value from :func:`encode`'s output; anything else raises :class:`DecodeError`.

    ``refs`` turns a handle back into what it stands for: it gets the int of an
    ``r`` handle, or the pair ``("o", n)`` for an opaque one (``("g", n)`` for
    a stream); without it a handle is a DecodeError. ``shared`` resolves
    shared containers (``m``, ``ma``; see :class:`Sharing`); ``shapes`` says
    which classes namedtuples, dataclasses and Enum members become.
    """
    return _Decoder(refs, shared, shapes).value(data, depth)


def decode_into(
    target: Any,
    data: Any,
    shared: Sharing,
    refs: Callable[[Any], Any] | None = None,
    shapes: Shapes | None = None,
) -> None:
    """Replace the contents of the shared container ``target`` with decoded ``data``, in place."""
    fresh = type(target)()
    _Decoder(refs, shared, shapes).fill(fresh, data, 1)
    if type(target) is dict or type(target) is set:
        target.clear()
        target.update(fresh)
    else:
        target[:] = fresh


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
