"""The confined child's half of the proxy protocol: perform one request on the candidate's objects.

The trusted side asks; this side acts on the candidate's module and on the
objects it keeps for the trusted side (handles), and answers with data:

==========  ==========================================================
``call``    call the candidate's global ``fn`` (the function kind's op)
``do``      ``what`` on ``target`` (a handle) or on the module:
            ``global`` (read a module global), ``getattr``, ``setattr``,
            ``call``, ``iter``, ``next``, ``len``, ``getitem``,
            ``setitem``, ``delitem``, ``contains``, ``str``
==========  ==========================================================

Every reply may carry ``flags``: evidence that a value on its way out was
built to deceive a comparison (a subclass of ``int`` whose ``__eq__`` is its
own, an object equal to one it has never seen, a list whose truth disagrees
with its length). The verdict never depends on them (the trusted side compares
decoded data only); they let the grader name the attempt. This module runs in
the candidate's process, so a candidate can silence it, never forge a pass.

Only the standard library and :mod:`graders.sandbox.codec` are used: the zygote
imports this module before it loses read access to the interpreter's files.
"""

from __future__ import annotations

import builtins
import contextlib
import operator
import sys
from collections.abc import Callable
from typing import Any

from graders.sandbox import codec

__all__ = ["exception_kind", "reply"]

#: Builtin bases whose data the codec sends, and the dunders that decide a
#: comparison, a truth value or a hash on them.
_BASES = (bool, int, float, complex, str, bytes, bytearray, list, tuple, set, frozenset, dict)
_EXACT = frozenset(_BASES) | {type(None)}
_DECIDERS = ("__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__", "__hash__", "__bool__")
_DECIDERS_SIZED = (*_DECIDERS, "__len__")
#: Evidence kept per reply (a list of a million forged ints needs one line).
_MAX_FLAGS = 5

_SPECIAL: dict[str, Callable[..., Any]] = {
    "call": lambda target, *args, **kwargs: target(*args, **kwargs),
    "getattr": getattr,
    "setattr": setattr,
    "iter": iter,
    "next": next,
    "len": len,
    "getitem": operator.getitem,
    "setitem": operator.setitem,
    "delitem": operator.delitem,
    "contains": operator.contains,
    "str": str,
}


class _Probe:
    """An object no candidate has seen: nothing honest compares equal to it."""

    __slots__ = ()


def _genuine_stdlib(owner: type) -> bool:
    """Whether ``owner`` is the class a standard module really defines (Counter, IntEnum...)."""
    module = sys.modules.get(owner.__module__ or "")
    top = (owner.__module__ or "").split(".", 1)[0]
    if module is None or top not in sys.stdlib_module_names:
        return False
    found: Any = module
    for part in owner.__qualname__.split("."):
        found = getattr(found, part, None)
    return found is owner


def _own_deciders(cls: type, base: type) -> list[str]:
    """Return the deciding dunders that ``cls`` takes from neither ``base`` nor the stdlib."""
    names = _DECIDERS_SIZED if hasattr(base, "__len__") else _DECIDERS
    out = []
    for name in names:
        owner = next((k for k in cls.__mro__ if name in k.__dict__), None)
        if owner is None or owner in _EXACT or owner is object or _genuine_stdlib(owner):
            continue
        out.append(name)
    return out


class _Inspector:
    """Collects evidence about the values one reply sends (``codec.encode``'s ``inspect``)."""

    def __init__(self) -> None:
        self.flags: list[str] = []

    def __call__(self, value: Any) -> None:
        if len(self.flags) >= _MAX_FLAGS:
            return
        # An honest but sloppy __eq__ (``self.x == other.x``) raises on a stranger:
        # that is no evidence of anything, and neither is any other failure here.
        with contextlib.suppress(Exception):
            self._look(value)

    def _look(self, value: Any) -> None:
        cls = type(value)
        name = getattr(cls, "__qualname__", "?")
        base = next((b for b in _BASES if isinstance(value, b)), None)
        if base is not None:
            own = _own_deciders(cls, base)
            if own:
                self.flags.append(
                    f"{name} (a subclass of {base.__name__}) defines its own {', '.join(own)}"
                )
                return
        if (value == _Probe()) is True or (value != _Probe()) is False:
            self.flags.append(f"{name} compares equal to an object it has never seen")


def exception_kind(value: Any) -> str | None:
    """Say which builtin exception a candidate's exception class derives from, if it is one."""
    # type(), not isinstance(): a candidate's object may lie about its __class__.
    if not (issubclass(type(value), type) and issubclass(value, BaseException)):
        return None
    for klass in type.__dict__["__mro__"].__get__(value):
        name = type.__dict__["__name__"].__get__(klass)
        if getattr(builtins, name, None) is klass:
            return str(name)
    return "BaseException"


def _perform(namespace: dict[str, Any], request: dict[str, Any], kept: list[Any]) -> Any:
    def handle(n: int) -> Any:
        if type(n) is not int or not 0 <= n < len(kept):
            raise LookupError(f"no object #{n} in the sandbox")
        return kept[n]

    args = codec.decode(request["args"], refs=handle)
    kwargs = codec.decode(request["kwargs"], refs=handle)
    if request["op"] == "call":
        return namespace[request["fn"]](*args, **kwargs)
    what = request["what"]
    if what == "global":
        return namespace[request["name"]]
    return _SPECIAL[what](handle(request["target"]), *args, **kwargs)


def reply(namespace: dict[str, Any], request: dict[str, Any], kept: list[Any]) -> dict[str, Any]:
    """Perform one request; return the reply frame (the result, or the error it raised)."""
    call_id = request["id"]
    nonce = request["nonce"]
    try:
        value = _perform(namespace, request, kept)
    except BaseException as e:
        mro = [k.__name__ for k in type(e).__mro__][:20]
        error = {"type": type(e).__name__, "message": str(e)[:2000], "mro": mro}
        return {"id": call_id, "nonce": nonce, "err": error}

    def keep(obj: Any) -> int:
        kept.append(obj)
        return len(kept) - 1

    inspector = _Inspector()
    try:
        encoded = codec.encode(value, refs=keep, inspect=inspector)
    except Exception as e:  # a hostile object can break encoding in any way
        error = {"type": "Uncrossable", "message": str(e)[:2000]}
        return {"id": call_id, "nonce": nonce, "err": error}
    out = {"id": call_id, "nonce": nonce, "ok": encoded}
    if inspector.flags:
        out["flags"] = inspector.flags
    return out
