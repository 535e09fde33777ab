"""The confined child's half of the proxy protocol: perform one request on the candidate's objects.

One module, one job: the confined half of the call protocol, loaded by file into the
child. It cannot import the trusted side's modules, so the requests it serves are all
here.

The trusted side asks; this side acts on the candidate's module and on the
objects it keeps for the trusted side (handles), and answers with data:

==========  ==========================================================
``call``    call the candidate's global ``fn`` (a declared name)
``do``      ``what`` on ``target`` (a handle) or on the module:
            ``global`` (read a global), ``getattr``, ``setattr``,
            ``delattr``, ``call``, ``iter``, ``next``, ``len``,
            ``getitem``, ``setitem``, ``delitem``, ``contains``, ``str``,
            ``take`` (the next items of a stream), ``putback`` (the
            last items taken that the tests did not read: first again)
==========  ==========================================================

**Declared names.** The trusted side says which of the module's names the task
uses (its entry point, what its tests import); only those are reported at
load, with their kind and docstring. **Handles.** A result that is not data
stays here, kept under a number; what the trusted side may ask of it is the
trusted side's decision alone, made from what it asked for (a class it
constructs, a method it reads), never from anything this side says: this
module runs in the candidate's process, and the candidate can rewrite it. A
call asked ``as: handle`` (the trusted side constructing a declared class)
keeps its result even when it has an encoding. An iterator a request returns
(a generator, ``map``, an object with ``__next__``) is kept as a *stream*
(``g``): the trusted side reads it with ``take`` as the tests consume it, so
an endless generator or one that raises on its first item behaves as it would
in one process. **Arguments.** A call's arguments arrive with their mutable
containers numbered (:class:`~arbiter.graders.sandbox._codec.Sharing`); the
reply sends the new contents of those the call changed (compared as encoded
text, so ``1`` turned into ``True`` is a change), so the test sees the
candidate's mutations. **Exceptions** are named by identity: the nearest class
in the exception's real MRO that *is* a builtin exception (or a declared
exception class), never by what a class calls itself. An exception raised
while a result is being encoded (a generator nested in a list that raises) is
the candidate's exception, and crosses as such. **Warnings** the candidate
emits during a request are recorded (by category, by identity) and sent with
the reply, so that the trusted side can re-emit them where the test's
``pytest.warns`` or ``warnings.catch_warnings`` is listening.

Every reply may carry ``flags``: evidence that a value on its way out was
built to deceive a comparison (a subclass of ``int`` whose ``__eq__`` is its
own, an object equal to one it has never seen). The verdict never depends on
them (the trusted side compares decoded data only); they let the grader name
the attempt. A candidate can silence them, never forge a pass.

Only the standard library and :mod:`arbiter.graders.sandbox._codec` are used: the
template loads this module before it confines itself, and never ``ctypes``.
"""

from __future__ import annotations

import builtins
import contextlib
import operator
import sys
import time
import types
import warnings
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
    "delattr": delattr,
    "iter": iter,
    "next": next,
    "len": len,
    "getitem": operator.getitem,
    "setitem": operator.setitem,
    "delitem": operator.delitem,
    "contains": operator.contains,
    "str": str,
    "repr": repr,
}

#: The most items one ``take`` returns, and how long it may spend producing them
#: before it answers with fewer (a stream is read as the tests consume it).
MAX_TAKE = 4096
TAKE_BUDGET_S = 0.02
#: Warnings sent back per reply, and the longest docstring reported per name.
MAX_WARNINGS = 16
MAX_DOC = 4000

_MRO = type.__dict__["__mro__"]
_NAME = type.__dict__["__name__"]
#: The exception's own traceback, read past any ``__traceback__`` a subclass defines.
_TRACEBACK = BaseException.__dict__["__traceback__"]
#: The name the candidate's code is compiled under (``_template._compiled``).
_SOLUTION = "solution.py"
#: At most this many of the candidate's frames cross, the innermost kept.
MAX_FRAMES = 5


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
        "where": _frames(e),
    }


def _frames(e: BaseException) -> list[list[Any]]:
    """The candidate's own frames the exception passed through: [line, function], innermost last.

    Plain data for its feedback (where its code failed); the trusted side reads
    them as numbers and names, nothing more.
    """
    out: list[list[Any]] = []
    try:
        tb = _TRACEBACK.__get__(e)
        for _ in range(1000):
            if type(tb) is not types.TracebackType:
                break
            code = tb.tb_frame.f_code
            if code.co_filename == _SOLUTION:
                out.append([int(tb.tb_lineno), str.__str__(code.co_name)[:100]])
            tb = tb.tb_next
    except BaseException:
        return []
    return out[-MAX_FRAMES:]


def _uncrossable(e: BaseException) -> dict[str, Any]:
    return {"type": "Uncrossable", "message": _text(e), "builtin": None, "declared": None}


def load_failure(e: BaseException) -> dict[str, Any]:
    """Return the load report of a module whose code raised ``e``."""
    failure = _error(e, {})
    return {"ready": False, **failure}


def _is_stream(value: Any) -> bool:
    """Whether a result is an iterator to be read as the tests consume it (by its type's MRO)."""
    kind = type(value)
    if codec._is_iterator(kind):
        return True
    found = {
        name for k in _MRO.__get__(kind) for name in ("__next__", "__iter__") if name in k.__dict__
    }
    return len(found) == 2 and kind not in _EXACT


def _doc(value: Any) -> str | None:
    try:
        doc = value.__doc__
    except BaseException:
        return None
    return str.__str__(doc)[:MAX_DOC] if isinstance(doc, str) else None


class _Warnings:
    """The warnings one request emits, recorded by category (by identity) to send back."""

    def __init__(self, declared: dict[type, str]) -> None:
        self.declared = declared
        self._catcher = warnings.catch_warnings(record=True)
        self._log: list[Any] = []

    def __enter__(self) -> _Warnings:
        self._log = self._catcher.__enter__()
        warnings.simplefilter("always")
        return self

    def __exit__(self, *exc: Any) -> None:
        with contextlib.suppress(BaseException):
            self._catcher.__exit__(*exc)

    def sent(self) -> list[list[Any]]:
        """Return ``[builtin category, declared category, message]`` per warning (the first few)."""
        out = []
        for record in self._log[:MAX_WARNINGS]:
            category: Any = getattr(record, "category", None)
            if not (issubclass(type(category), type) and issubclass(category, Warning)):
                continue
            builtin = next(
                (
                    _NAME.__get__(k)
                    for k in _MRO.__get__(category)
                    if getattr(builtins, _NAME.__get__(k), None) is k
                ),
                "Warning",
            )
            mine = next(
                (self.declared[k] for k in _MRO.__get__(category) if k in self.declared), None
            )
            out.append([builtin, mine, _text(getattr(record, "message", ""))])
        return out


class Session:
    """The candidate's module and the objects kept for the trusted side, for one run."""

    def __init__(self, namespace: dict[str, Any], declared: list[str]) -> None:
        self.namespace = namespace
        #: The declared names the module defines, and their values at load time.
        self.names: dict[str, Any] = {n: namespace[n] for n in declared if n in namespace}
        self.exceptions: dict[type, str] = {}
        for name, value in self.names.items():
            if issubclass(type(value), type) and issubclass(value, BaseException):
                self.exceptions.setdefault(value, name)
        #: Objects kept here, by number: what the trusted side may ask of each
        #: is decided over there.
        self.kept: list[Any] = []
        self._numbers: dict[int, int] = {}
        #: Stream number → its last batch: the items sent, what followed them
        #: (an item that did not cross), the error it raised (see :meth:`_put_back`).
        self._batches: dict[int, tuple[list[Any], list[Any], BaseException | None]] = {}
        #: Arguments become the candidate's own classes of a shape's name.
        self.shapes = codec.Shapes(namespace)

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
        """Return the load report: the declared names defined, each with its kind and docstring."""
        names = []
        for name, value in self.names.items():
            kind = self._kind(value)
            doc = _doc(value) if kind in ("class", "callable") else None
            names.append([name, kind] if doc is None else [name, kind, doc])
        return {"ready": True, "names": names}

    def _keep(self, value: Any) -> tuple[str, int]:
        # One number per object (they stay alive here, so their ids stay theirs):
        # an object the tests constructed comes back under its own number.
        number = self._numbers.get(id(value))
        if number is None:
            number = len(self.kept)
            self.kept.append(value)
            self._numbers[id(value)] = number
        return ("r", number)

    def _handle(self, ref: Any) -> Any:
        n = ref[1] if type(ref) is tuple else ref
        if type(n) is not int or not 0 <= n < len(self.kept):
            raise LookupError(f"no object #{n} in the sandbox")
        return self.kept[n]

    def _global(self, name: Any) -> Any:
        """Return a global: a declared one as loaded, any other plain name as it is now."""
        if type(name) is not str:
            raise KeyError(name)
        if name in self.names:
            return self.names[name]
        if name.isidentifier() and not name.startswith("__") and name in self.namespace:
            return self.namespace[name]
        raise KeyError(name)

    def _perform(self, request: dict[str, Any], shared: codec.Sharing) -> Any:
        args = codec.decode(request["args"], refs=self._handle, shared=shared, shapes=self.shapes)
        kwargs = codec.decode(
            request["kwargs"], refs=self._handle, shared=shared, shapes=self.shapes
        )
        if type(args) is not list or type(kwargs) is not dict:
            raise TypeError("malformed arguments")
        if request["op"] == "call":
            return self.names[request["fn"]](*args, **kwargs)
        what = request["what"]
        if what == "global":
            return self._global(request["name"])
        return _SPECIAL[what](self._handle(request["target"]), *args, **kwargs)

    def reply(self, request: dict[str, Any]) -> dict[str, Any]:
        """Perform one request; return the reply frame (the result, or the error it raised)."""
        call_id = request.get("id")
        nonce = request.get("nonce")
        out: dict[str, Any] = {"id": call_id, "nonce": nonce}
        with _Warnings(self.exceptions) as caught:
            if request.get("what") == "take":
                self._take(request, out)
            elif request.get("what") == "putback":
                self._put_back(request, out)
            else:
                self._answer(request, out)
        emitted = caught.sent()
        if emitted:
            out["warn"] = emitted
        return out

    def _answer(self, request: dict[str, Any], out: dict[str, Any]) -> None:
        shared = codec.Sharing(grow=True)
        try:
            value = self._perform(request, shared)
        except BaseException as e:
            out["err"] = _error(e, self.exceptions)
            return
        inspector = _Inspector()
        try:
            received = codec.Sharing(shared.objects, grow=False)
            if request.get("as") == "handle" and type(value) not in _SCALARS:
                out["ok"] = {"r": self._keep(value)[1]}
            elif _is_stream(value):
                inspector(value)  # a stream is read item by item; the evidence is now
                out["ok"] = {"g": self._keep(value)[1]}
            else:
                out["ok"] = codec.encode(
                    value, refs=self._keep, inspect=inspector, sharing=received
                )
            changed = self._changed(request, received, inspector)
        except codec.EncodeError as e:
            out.pop("ok", None)
            out["err"] = _uncrossable(e)
            return
        except BaseException as e:
            # Raised by the candidate's own code while its result was read (a
            # nested generator, a property): its exception, as if raised in the call.
            out.pop("ok", None)
            out["err"] = _error(e, self.exceptions)
            return
        if changed:
            out["after"] = changed
        if inspector.flags:
            out["flags"] = inspector.flags

    def _take(self, request: dict[str, Any], out: dict[str, Any]) -> None:
        """Answer the next items of a stream: up to the count asked, fewer if they come slowly."""
        try:
            stream = self._handle(request.get("target"))
            args = codec.decode(request["args"], shared=codec.Sharing(grow=True))
            count = args[0] if type(args) is list and len(args) == 1 else None
            if type(count) is not int or not 0 < count <= MAX_TAKE:
                raise ValueError("take needs a count")
        except BaseException as e:
            out["err"] = _error(e, self.exceptions)
            return
        inspector = _Inspector()
        items: list[Any] = []
        sent: list[Any] = []
        #: What the stream did after the items sent: an item that did not cross, an error.
        after: list[Any] = []
        raised: BaseException | None = None
        end: Any = None
        started = time.perf_counter()
        while len(items) < count:
            try:
                item = next(stream)
            except StopIteration:
                end = "stop"
                break
            except BaseException as e:
                end, raised = _error(e, self.exceptions), e
                break
            try:
                items.append(codec.encode(item, refs=self._keep, inspect=inspector))
            except codec.EncodeError as e:
                end = _uncrossable(e)
                after.append(item)
                break
            except BaseException as e:
                end, raised = _error(e, self.exceptions), e
                after.append(item)
                break
            sent.append(item)
            if time.perf_counter() - started > TAKE_BUDGET_S:
                break
        self._batches[request["target"]] = (sent, after, raised)
        out["ok"] = {"l": items}
        if end is not None:
            out["end"] = end
        if inspector.flags:
            out["flags"] = inspector.flags

    def _put_back(self, request: dict[str, Any], out: dict[str, Any]) -> None:
        """Resume a stream with the last items it sent that the tests did not read.

        The trusted side reads a stream ahead of the tests (a batch at a time);
        when the tests pass the stream to the candidate, what they have not read
        yet must come first, as in one process. The stream becomes a generator
        that yields those items, then whatever followed them (an item that did
        not cross, the error raised), then the rest of the stream.
        """
        try:
            n: int = request["target"]
            stream = self._handle(n)
            args = codec.decode(request["args"], shared=codec.Sharing(grow=True))
            count: Any = args[0] if type(args) is list and len(args) == 1 else None
            sent, after, raised = self._batches.pop(n, ([], [], None))
            if type(count) is not int or not 0 < count <= len(sent):
                raise ValueError("put back needs a count of items the stream sent")
        except BaseException as e:
            out["err"] = _error(e, self.exceptions)
            return
        resumed = _resumed([*sent[-count:], *after], raised, stream)
        self.kept[n] = resumed
        self._numbers[id(resumed)] = n
        out["ok"] = None

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
            # As text, not with ==: [0, 1] turned into [False, True] is a change.
            if codec.dumps(now) != codec.dumps(_aliased(before.get(n))):
                out.append([n, now])
        return out


def _resumed(first: list[Any], raised: BaseException | None, rest: Any) -> Any:
    """Yield ``first``, then raise ``raised`` if it is an error, else yield from ``rest``."""
    yield from first
    if raised is not None:
        raise raised
    yield from rest


#: Results sent as data even when the trusted side asked to keep a handle: a
#: constructor that returns builtin data (or a function taken for a class) returns data.
_SCALARS = _EXACT


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
