"""The confined child's half of the proxy protocol: perform one request on the candidate's objects.

The trusted side asks; this side acts on the candidate's module and on the
objects it keeps for the trusted side (handles), and answers with data:

==========  ==========================================================
``call``    call the candidate's global ``fn`` (a declared name)
``do``      ``what`` on ``target`` (a handle) or on the module:
            ``global`` (read a declared global), ``getattr``, ``setattr``,
            ``call``, ``iter``, ``next``, ``len``, ``getitem``, ``setitem``,
            ``delitem``, ``contains``, ``str``
==========  ==========================================================

**Declared names.** The trusted side says which of the module's names the task
uses (its entry point, what its tests import); nothing else of the module is
reported or reachable. **Handles.** A result that is not data stays here. It
crosses as a usable object (``r``) only if it is a declared class, an instance
of one, or a method read from such an object: the API the tests themselves
name. Anything else crosses as an opaque handle (``o``), which the trusted
side can only pass back: a returned object cannot answer ``in``, ``len``,
``str``, iteration or a method call for a value that should have been data.
**Arguments.** A call's arguments arrive with their mutable containers
numbered (:class:`~arbiter.graders.sandbox._codec.Sharing`); the reply sends the new
contents of those the call changed, so the test sees the candidate's
mutations. **Exceptions** are named by identity: the nearest class in the
exception's real MRO that *is* a builtin exception (or a declared exception
class), never by what a class calls itself.

Every reply may carry ``flags``: evidence that a value on its way out was
built to deceive a comparison (a subclass of ``int`` whose ``__eq__`` is its
own, an object equal to one it has never seen). The verdict never depends on
them (the trusted side compares decoded data only); they let the grader name
the attempt. This module runs in the candidate's process, so a candidate can
silence it, never forge a pass.

Only the standard library and :mod:`arbiter.graders.sandbox._codec` are used: the
template loads this module before it confines itself, and never ``ctypes``.
"""

from __future__ import annotations

import builtins
import contextlib
import operator
import sys
import types
from collections.abc import Callable
from typing import Any

from arbiter.graders.sandbox import _codec as codec

__all__ = ["Session", "exception_kind", "load_failure"]

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

_MRO = type.__dict__["__mro__"]
_NAME = type.__dict__["__name__"]


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
        owner = next((k for k in _MRO.__get__(cls) if name in k.__dict__), None)
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
    """Say which builtin exception a class derives from (by identity), if it is an exception."""
    # type(), not isinstance(): a candidate's object may lie about its __class__.
    if not (issubclass(type(value), type) and issubclass(value, BaseException)):
        return None
    for klass in _MRO.__get__(value):
        name = _NAME.__get__(klass)
        if type(name) is str and getattr(builtins, name, None) is klass:
            return name
    return "BaseException"


def _text(value: Any, limit: int = 2000) -> str:
    """Return ``str(value)`` as a plain str, whatever the object does (a message, say)."""
    try:
        text = str(value)
    except BaseException:
        return "<unprintable>"
    return str.__str__(text)[:limit] if isinstance(text, str) else "<unprintable>"


def _error(e: BaseException, declared: dict[type, str]) -> dict[str, Any]:
    """Describe an exception by identity: its builtin base and its declared class, if any."""
    klass = type(e)
    builtin = exception_kind(klass) or "BaseException"
    mine = next((declared[k] for k in _MRO.__get__(klass) if k in declared), None)
    name = _NAME.__get__(klass)
    return {
        "type": str.__str__(name)[:200] if isinstance(name, str) else "?",
        "message": _text(e),
        "builtin": builtin,
        "declared": mine,
    }


def load_failure(e: BaseException) -> dict[str, Any]:
    """Return the load report of a module whose code raised ``e``."""
    failure = _error(e, {})
    return {"ready": False, **failure}


class Session:
    """The candidate's module and the objects kept for the trusted side, for one run."""

    def __init__(self, namespace: dict[str, Any], declared: list[str]) -> None:
        self.namespace = namespace
        #: The declared names the module defines, and their values at load time.
        self.names: dict[str, Any] = {n: namespace[n] for n in declared if n in namespace}
        self.classes: dict[type, str] = {}
        self.exceptions: dict[type, str] = {}
        for name, value in self.names.items():
            if issubclass(type(value), type):
                self.classes.setdefault(value, name)
                if issubclass(value, BaseException):
                    self.exceptions.setdefault(value, name)
        self._declared_ids = {id(v) for v in self.names.values()}
        self._class_ids = {id(c) for c in self.classes}
        #: Objects kept here, and whether each is usable (``r``) or opaque (``o``).
        self.kept: list[Any] = []
        self.usable: list[bool] = []

    def _kind(self, value: Any) -> str:
        """Say what a declared global is, for the trusted side's stand-in."""
        base = exception_kind(value)
        if base is not None:
            return f"exception:{base}"
        if isinstance(value, types.ModuleType):
            return "module"
        if isinstance(value, type):
            return "class"
        return "callable" if callable(value) else "value"

    def ready(self) -> dict[str, Any]:
        """Return the load report: the declared names defined, each with its kind."""
        return {"ready": True, "names": [[n, self._kind(v)] for n, v in self.names.items()]}

    def _is_usable(self, value: Any) -> bool:
        """Whether a value is part of the API the tests name.

        A declared global itself, an instance of a declared class, or a method
        read from one. By identity only (``id`` and ``type()``): an object may
        lie about its ``__class__``, its hash and its equality.
        """
        if id(value) in self._declared_ids:
            return True
        kind = type(value)
        if id(kind) in self._class_ids:
            return True
        if kind is types.MethodType or kind is types.BuiltinMethodType:
            return id(type(value.__self__)) in self._class_ids
        return False

    def _keep(self, value: Any) -> tuple[str, int]:
        usable = self._is_usable(value)
        self.kept.append(value)
        self.usable.append(usable)
        return ("r" if usable else "o", len(self.kept) - 1)

    def _handle(self, ref: Any) -> Any:
        n = ref[1] if type(ref) is tuple else ref
        if type(n) is not int or not 0 <= n < len(self.kept):
            raise LookupError(f"no object #{n} in the sandbox")
        return self.kept[n]

    def _target(self, n: Any) -> Any:
        if type(n) is not int or not 0 <= n < len(self.kept):
            raise LookupError(f"no object #{n} in the sandbox")
        if not self.usable[n]:
            raise TypeError("an opaque value answers no question")
        return self.kept[n]

    def _perform(self, request: dict[str, Any], shared: codec.Sharing) -> Any:
        args = codec.decode(request["args"], refs=self._handle, shared=shared)
        kwargs = codec.decode(request["kwargs"], refs=self._handle, shared=shared)
        if type(args) is not list or type(kwargs) is not dict:
            raise TypeError("malformed arguments")
        if request["op"] == "call":
            return self.names[request["fn"]](*args, **kwargs)
        what = request["what"]
        if what == "global":
            return self.names[request["name"]]
        return _SPECIAL[what](self._target(request["target"]), *args, **kwargs)

    def reply(self, request: dict[str, Any]) -> dict[str, Any]:
        """Perform one request; return the reply frame (the result, or the error it raised)."""
        call_id = request.get("id")
        nonce = request.get("nonce")
        shared = codec.Sharing(grow=True)
        try:
            value = self._perform(request, shared)
        except BaseException as e:
            return {"id": call_id, "nonce": nonce, "err": _error(e, self.exceptions)}
        inspector = _Inspector()
        out: dict[str, Any] = {"id": call_id, "nonce": nonce}
        try:
            received = codec.Sharing(shared.objects, grow=False)
            out["ok"] = codec.encode(value, refs=self._keep, inspect=inspector, sharing=received)
            changed = self._changed(request, received, inspector)
        except BaseException as e:  # a hostile object can break encoding in any way
            error = {"type": "Uncrossable", "message": _text(e), "builtin": None, "declared": None}
            return {"id": call_id, "nonce": nonce, "err": error}
        if changed:
            out["after"] = changed
        if inspector.flags:
            out["flags"] = inspector.flags
        return out

    def _changed(
        self, request: dict[str, Any], received: codec.Sharing, inspector: _Inspector
    ) -> list[list[Any]]:
        """Return ``[n, contents]`` for each argument container the call changed."""
        if not received.objects:
            return []
        # What each container held on arrival, as the trusted side encoded it.
        before: dict[int, Any] = {}
        stack = [request["args"], request["kwargs"]]
        while stack:
            node = stack.pop()
            if type(node) is dict and len(node) == 1:
                ((tag, payload),) = node.items()
                if tag == "m" and type(payload) is list and len(payload) == 2:
                    before[payload[0]] = payload[1]
                stack.append(payload)
            elif type(node) is list:
                stack.extend(node)
        out = []
        for n, obj in enumerate(received.objects):
            now = codec.encode_contents(obj, received, refs=self._keep, inspect=inspector)
            if now != _aliased(before.get(n)):
                out.append([n, now])
        return out


def _aliased(contents: Any) -> Any:
    """Rewrite arrival contents as the sandbox encodes them: nested shared containers as aliases."""
    if type(contents) is dict and len(contents) == 1:
        ((tag, payload),) = contents.items()
        if tag == "m" and type(payload) is list and len(payload) == 2:
            return {"ma": payload[0]}
        return {tag: _aliased(payload)}
    if type(contents) is list:
        return [_aliased(v) for v in contents]
    return contents
