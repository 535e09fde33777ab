"""Call the candidate's functions in the confined child from the trusted side.

One module, one job: the trusted side of the call protocol. Encoding a call, reading its
reply and deciding what may be asked of a handle are one contract with :mod:`._remote`;
split, the rule that only this side decides what a handle allows would live in two
places.

A :class:`CandidateFunction` looks like the candidate's function to test code:
calling it encodes the arguments, sends them over the run's socket and decodes
the reply into plain values. Whatever happens on the channel (the child died,
timed out, or sent something garbled, forged or unencodable) is recorded on
the :class:`Channel` as well as raised, so a test that swallows the error with
a bare ``except:`` still cannot turn it into a pass.

Results cross by value. Plain data is rebuilt here as exact types (and
namedtuples, dataclasses and Enum members as classes of this side, see
:class:`~arbiter.graders.sandbox._codec.Shapes`). An object with no encoding
stays in the sandbox under a number, and **what this side may ask of it is
decided here alone**, from what this side did to get it, never from anything
the sandbox says (the candidate's process holds the sandbox's half and can
rewrite it):

* the trusted side reads a declared class (one the task uses as a class, see
  :attr:`Channel.classes`): a :class:`ClassHandle`, which may be called (that
  constructs an instance) and whose attributes may be read;
* calling a :class:`ClassHandle`: an :class:`InstanceHandle`, the API the tests
  name: its attributes, method calls, ``len``, iteration, items, ``in`` and
  ``str`` are performed over there and answered with data;
* an attribute read from either that is not data: a :class:`MemberHandle` (a
  method), which may be called; one that is an instance the tests constructed
  is that instance;
* a declared function read as a global: a :class:`FunctionHandle`, which may
  be called;
* an iterator any request returns: a :class:`Stream`, read item by item as the
  tests consume it, each item by value;
* anything else (a function's or a method's result that is not data, a handle
  inside data, a number this side has seen before): an :class:`Opaque` value.

Every handle's attributes may be read (as data, or as another opaque value:
``make(2).x``, ``root.left.data``) and assigned (which asks nothing). An
opaque value is never called and answers no question: its equality, order,
hash, truth value, ``in``, length, iteration and items are refused, and using
it fails the test. No handle's equality, order, hash or truth value is ever
asked of the candidate. So ``"x" in f(1)``, ``f(1).startswith("x")`` (a method
read from a result cannot be called) or ``len(f(1))`` are never the
candidate's own answer, however it builds its result; only an instance the
tests themselves constructed from a class the task names answers for itself.

Arguments follow Python's semantics: the mutable containers a call passes are
numbered, and the contents the candidate left in them are copied back into the
very objects the test holds (:class:`~arbiter.graders.sandbox._codec.Sharing`).
Warnings the candidate emitted during a call are emitted here, by category,
before its result or error, so ``pytest.warns`` sees them.

An exception the candidate raises comes back as a :class:`CandidateError`;
when its class derives, by identity, from a builtin exception (or from one of
the candidate's declared exception classes, which the trusted side registered),
the error raised here also is an instance of that class, so
``pytest.raises(ValueError)`` and ``except KeyError`` mean what they say. What
a class calls itself never matters, and the iteration protocol's exceptions are
never raised here as themselves, except ``StopIteration`` from ``next`` on an
instance the tests constructed (a :class:`Stream` ends by itself). Only the
class is the candidate's choice, never an object: the instance is built here.
A test that calls such a class (a stand-in) calls the candidate's class over
there, as it calls any of its names: the stand-in is there to be caught, and
an instance of it built here would answer (its truth value) for the candidate.

One concept: the trusted side of the channel protocol. Every way a value or an
error crosses from the child (functions, handles, streams, exceptions,
copied-back arguments, warnings, a broken channel) goes through
:class:`Channel`, and the guarantee (nothing the candidate built reaches a
comparison) holds only while they are read together.
"""

from __future__ import annotations

import builtins
import contextlib
import re
import secrets
import select
import socket
import warnings
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from arbiter.graders.sandbox import _codec as codec
from arbiter.graders.sandbox._frames import (
    ChannelClosed,
    ChannelTimeout,
    FrameReader,
    FrameTooLarge,
    send_frame,
    send_frames,
)
from arbiter.graders.sandbox.clock import Moving

__all__ = [
    "WARNING_ORIGIN",
    "CandidateError",
    "CandidateFunction",
    "Channel",
    "ChannelBroken",
    "ClassHandle",
    "FunctionHandle",
    "InstanceHandle",
    "LoadResult",
    "MemberHandle",
    "Neutral",
    "Opaque",
    "RemoteObject",
    "Stream",
    "Uncrossable",
    "candidate_exception_class",
]


class CandidateError(Exception):
    """The candidate's function raised.

    ``type_name`` is what the exception's class calls itself (for messages
    only); ``builtin`` is the builtin exception it derives from, by identity.
    """

    builtin: str = "Exception"
    #: The candidate's own frames it was raised through: (line, function), innermost last.
    frames: tuple[tuple[int, str], ...] = ()

    def __init__(self, type_name: str, message: str, builtin: str = "Exception") -> None:
        super().__init__(f"{type_name}: {message}")
        self.type_name = type_name
        self.message = message
        self.builtin = builtin


#: Builtin exceptions an error from the sandbox may be raised as here. Not the
#: iteration protocol's (a candidate's StopIteration must not end a loop of the
#: tests early), and nothing outside Exception (SystemExit, pytest's outcomes).
_RAISABLE: dict[str, type[Exception]] = {
    name: value
    for name, value in vars(builtins).items()
    if isinstance(value, type)
    and issubclass(value, Exception)
    and value not in (StopIteration, StopAsyncIteration)
}
_AS_BUILTIN: dict[type[Exception], type[CandidateError]] = {}


def _str_message(self: CandidateError) -> str:
    return self.message


def _init_candidate(
    self: CandidateError, type_name: str, message: str, builtin: str = "Exception"
) -> None:
    CandidateError.__init__(self, type_name, message, builtin)


def _frames(where: Any) -> tuple[tuple[int, str], ...]:
    """Read a reply's frames (the candidate's data) as (line, function) pairs, or none."""
    if type(where) is not list:
        return ()
    out = []
    for frame in where[:5]:
        if (
            type(frame) is list
            and len(frame) == 2
            and type(frame[0]) is int
            and 0 < frame[0] < 10**7
            and type(frame[1]) is str
            # A function's name as code can spell it: a name the candidate rewrote to
            # carry a line break (a forged "All 2 tests passed.") is left out.
            and re.fullmatch(r"[^\s]{1,100}", frame[1])
        ):
            out.append((frame[0], frame[1]))
    return tuple(out)


def _rebuilt(cls: type[Any], type_name: str, message: str, builtin: str) -> Any:
    """Build an error (or a warning) from the sandbox here (``copy`` and ``pickle`` too)."""
    return type.__call__(cls, type_name, message, builtin)


def _reduce(self: CandidateError) -> tuple[Any, ...]:
    return (_rebuilt, (type(self), self.type_name, self.message, self.builtin))


class _CandidateClass(type):
    """The type of a stand-in for one of the candidate's exception classes.

    The stand-in is there to be caught (``pytest.raises``, ``except``,
    ``isinstance``). A call of it from the tests is a call of the candidate's
    class, made over there like any other call, whose result the trusted side
    alone decides what it may answer: an instance built here would answer for
    the candidate with none of its code run (``assert is_subset(a, b)`` would
    pass on an exception's truth value), and a setup building one would never
    reach the candidate (its failure taken for the task's). Errors from the
    sandbox are built here with :func:`_rebuilt`, never by a call.
    """

    _sandbox_call: Callable[..., Any]

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        """Call the candidate's class over there."""
        return cls._sandbox_call(*args, **kwargs)


def candidate_exception_class(
    base: type[Exception],
    name: str | None = None,
    calls: Callable[..., Any] | None = None,
) -> type[CandidateError]:
    """Return a class of errors from the sandbox that also are ``base`` errors.

    Without ``name``, one class per builtin ``base`` (shared); with it, a fresh
    class of that name (a stand-in for one of the candidate's exception classes),
    whose calls from the tests go to ``calls`` (see :class:`_CandidateClass`).
    """
    if name is None and base in _AS_BUILTIN:
        return _AS_BUILTIN[base]
    if issubclass(base, CandidateError):
        bases: tuple[type, ...] = (base,)
    elif issubclass(CandidateError, base):
        # Exception itself (a candidate's ``class X(Exception)``): CandidateError is one.
        bases = (CandidateError,)
    else:
        bases = (base, CandidateError)
    namespace = {
        "__str__": _str_message,
        "__init__": _init_candidate,
        "__reduce__": _reduce,
        "__module__": "sandbox",
    }
    meta = type if calls is None else _CandidateClass
    cls: type[CandidateError] = meta(name or base.__name__, bases, namespace)
    if calls is not None:
        type.__setattr__(cls, "_sandbox_call", staticmethod(calls))
    if name is None:
        _AS_BUILTIN[base] = cls
    return cls


class ChannelBroken(BaseException):
    """The run can no longer answer: dead, timed out, or garbled.

    A BaseException so that test code's ``except Exception`` does not catch it.
    """

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(f"{reason}: {detail}")
        self.reason = reason
        self.detail = detail


class Uncrossable(BaseException):
    """An argument or a result has no safe encoding (e.g. an instance of the candidate's class)."""


@dataclass(frozen=True, slots=True)
class LoadResult:
    """How loading the candidate module went."""

    ok: bool
    #: Declared name → ``callable``, ``class``, ``exception:<builtin>``, ``value`` or ``module``.
    names: dict[str, str] = field(default_factory=dict)
    error_type: str = ""
    error_message: str = ""
    #: Declared name → its docstring, for the functions and classes that have one.
    docs: dict[str, str] = field(default_factory=dict)


#: What each kind of handle may be asked (see the module docstring). Every handle,
#: an opaque one too, may have its attributes read (data, or another opaque
#: handle: ``make(2).x``, ``root.left.data``) and assigned (which asks nothing: a
#: setup links ``root.left.left = Node(4)``); only the API the tests name may be
#: called or asked anything else.
_OPAQUE_OPS = frozenset({"getattr", "setattr"})
_CLASS_OPS = _OPAQUE_OPS | {"call", "delattr"}
_INSTANCE_OPS = _OPAQUE_OPS | {"delattr", "call", "len", "iter", "next", "contains"}
_INSTANCE_OPS |= {"getitem", "setitem", "delitem", "str", "repr"}
_CALL_OPS = _OPAQUE_OPS | {"call"}
#: Where a handle comes from → what the result of asking it becomes, if not data:
#: a class constructs instances; the attributes of a class or an instance the tests
#: constructed are its members (methods, which may be called); anything else is opaque.
_GRANTS: dict[tuple[str, str], str] = {
    ("class", "call"): "instance",
    ("class", "getattr"): "member",
    ("instance", "getattr"): "member",
}
#: The file name the candidate's warnings are re-emitted from (a worker shows none of them).
WARNING_ORIGIN = "<the candidate's code>"
#: How many items a stream asks for at first, and at most (it doubles as the tests read on).
_FIRST_TAKE = 1
_MAX_TAKE = 1024


class Channel:
    """The trusted end of one run's socket, with the run's deadline.

    ``classes`` names the candidate's globals the task uses as classes (see
    :func:`arbiter.graders.sandbox.classes.class_names`): only those construct
    instances whose attributes and methods the tests may use. ``shapes`` says
    which classes of this side namedtuples, dataclasses and Enum members
    become (a task's prompt defines a dataclass, say).
    """

    def __init__(
        self,
        sock: socket.socket,
        deadline: float | Moving,
        *,
        max_bytes: int,
        classes: frozenset[str] = frozenset(),
        shapes: codec.Shapes | None = None,
    ) -> None:
        self.sock = sock
        self.deadline = deadline
        self.max_bytes = max_bytes
        self.classes = classes
        self.shapes = shapes if shapes is not None else codec.Shapes()
        self._reader = FrameReader(sock, max_bytes=max_bytes)
        self.broken: ChannelBroken | None = None
        #: Tell the run's deadline when this side works and when it waits (when it can).
        self._working: Callable[[], None] | None = getattr(deadline, "working", None)
        self._waiting: Callable[[], None] | None = getattr(deadline, "waiting", None)
        #: Every channel-level event (breakage, uncrossable values) in order.
        self.events: list[str] = []
        self._next_id = 0
        #: Every handle number the sandbox has named: a number named again is opaque,
        #: but for the instances the tests constructed, read back as an attribute.
        self._seen: set[int] = set()
        self._instances: dict[int, Opaque] = {}
        #: Calls sent ahead (see :meth:`send_ahead`): (fn, arguments, id, nonce), in order.
        self._ahead: deque[tuple[str, bytes, int, str]] = deque()
        #: How many calls were answered from the pipeline (for tests and benchmarks).
        self.pipelined = 0
        #: How many requests reached the candidate (a setup failure after one is its fault).
        self.requests = 0
        #: Evidence, sent with replies, of values built to deceive a comparison.
        self.flags: list[str] = []
        #: Stand-ins for the candidate's exception classes, by name.
        self.exceptions: dict[str, type[CandidateError]] = {}
        #: Streams with items read ahead that the request being built passes.
        self._passing: list[Stream] = []

    def exception_stand_in(self, name: str, kind: str) -> type[CandidateError]:
        """Make and register the stand-in for the candidate's exception class ``name``.

        ``kind`` is its load report's ``exception:<builtin>``: the stand-in
        derives from that builtin exception (``Exception`` if it is no such one).
        A call of the stand-in from the tests calls the candidate's class over
        there (see :class:`_CandidateClass`).
        """
        found = getattr(builtins, kind.removeprefix("exception:"), None)
        if not (isinstance(found, type) and issubclass(found, Exception)):
            found = Exception

        def construct(*args: Any, **kwargs: Any) -> Any:
            return self.call(name, args, kwargs)

        cls = candidate_exception_class(found, name, construct)
        self.exceptions[name] = cls
        return cls

    def _handle(self, value: Any) -> int:
        if isinstance(value, (Opaque, Stream)) and value._channel is self:
            if isinstance(value, Stream) and value._buffer:
                self._passing.append(value)  # read ahead: see _put_back
            return value.handle
        raise codec.EncodeError(f"a value of type {type(value).__name__} cannot be sent")

    def _put_back(self) -> None:
        """Give the streams a request passes the items this side read ahead of the tests.

        A stream is read a batch at a time; handed to the candidate, it must
        yield first what the tests have not read yet, as in one process (a
        test that reads two items of a generator, then passes it on). The
        sandbox resumes the stream with them; this side forgets its buffer.
        """
        passing, self._passing = self._passing, []
        for stream in {id(s): s for s in passing}.values():
            if not stream._buffer:
                continue
            fields = {"op": "do", "what": "putback", "target": stream.handle, "name": ""}
            request, _ = self._request("", (len(stream._buffer),), {}, fields)
            try:
                send_frame(self.sock, request)
            except OSError as e:
                raise self._break("exited", str(e)) from None
            self.requests += 1
            reply = self._reply(request["id"], request["nonce"])
            if "ok" not in reply:
                raise self._error(reply, "putback")
            stream._buffer.clear()
            stream._end = None

    def _decoder_refs(self, grant: str | None) -> Callable[[Any], Any]:
        """The handle resolver for one reply: its top-level handle gets ``grant``, others none."""

        def resolve(ref: Any) -> Any:
            tag, handle = ref if type(ref) is tuple else ("r", ref)
            fresh = handle not in self._seen
            self._seen.add(handle)
            if tag == "g":
                return Stream(self, handle)
            if grant == "member" and handle in self._instances:
                # An attribute that is an instance the tests constructed is that very
                # instance (a setup linking ``root.left.left = Node(4)``); any other
                # number seen before is opaque, whatever the sandbox says it is.
                return self._instances[handle]
            made = _handle_class(grant if fresh else None)(self, handle)
            if fresh and grant == "instance":
                self._instances[handle] = made
            return made

        return resolve

    def _decode_result(self, data: Any, shared: codec.Sharing, grant: str | None) -> Any:
        """Decode a reply's value: only a handle that *is* the value may get ``grant``."""
        top = type(data) is dict and len(data) == 1 and next(iter(data)) in ("r", "o")
        refs = self._decoder_refs(grant if top else None)
        return codec.decode(data, refs=refs, shared=shared, shapes=self.shapes)

    def _break(self, reason: str, detail: str) -> ChannelBroken:
        if self.broken is None:
            self.broken = ChannelBroken(reason, detail)
            self.events.append(reason)
        return self.broken

    def _receive(self, too_large: str = "output_limit") -> Any:
        # From the last reply to this wait the run waited for us (the tests' own
        # work): not the candidate's time, credited to its deadline.
        if self._waiting is not None:
            self._waiting()
        try:
            reply = self._reader.recv(self.deadline)
            if self._working is not None:
                self._working()
            return reply
        except ChannelTimeout as e:
            raise self._break("timeout", str(e)) from None
        except (ChannelClosed, OSError) as e:
            raise self._break("exited", str(e)) from None
        except FrameTooLarge as e:
            # Too big to read is not forged: a result over the cap, like an output flood.
            raise self._break(too_large, str(e)) from None
        except codec.DecodeError as e:
            raise self._break("garbled", str(e)) from None

    def check_quiet(self) -> None:
        """Flag the channel if the child sent anything nobody asked for (forged frames)."""
        if self.broken is not None:
            return
        if self._reader.buffered:
            self._break("garbled", "the run sent messages nobody asked for")
        elif select.select([self.sock], [], [], 0)[0]:
            try:
                unsolicited = self.sock.recv(1, socket.MSG_PEEK)
            except OSError:
                return
            if unsolicited:
                self._break("garbled", "the run sent messages nobody asked for")

    def load(self) -> LoadResult:
        """Wait for the child's report on loading the candidate module."""
        # A load report is a few names: bytes that announce megabytes are not one
        # (raw text written to the channel), so too large is garbled here.
        message = self._receive(too_large="garbled")
        if type(message) is not dict or type(message.get("ready")) is not bool:
            raise self._break("garbled", "malformed load report")
        if not message["ready"]:
            return LoadResult(
                False,
                error_type=str(message.get("type", ""))[:200],
                error_message=str(message.get("message", ""))[:2000],
            )
        names = message.get("names")
        if type(names) is not list or not all(
            type(n) is list and len(n) in (2, 3) and all(type(part) is str for part in n)
            for n in names
        ):
            raise self._break("garbled", "malformed name list")
        return LoadResult(
            True,
            names={n[0]: n[1] for n in names},
            docs={n[0]: n[2][:4000] for n in names if len(n) == 3},
        )

    def _request(
        self,
        name: str,
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        fields: dict[str, Any] | None = None,
    ) -> tuple[dict[str, Any], codec.Sharing]:
        """Build a call's frame and its shared arguments (raises codec.EncodeError)."""
        sharing = codec.Sharing(grow=True)
        request = {
            "op": "call",
            "id": self._next_id,
            "fn": name,
            "args": codec.encode(list(args), refs=self._handle, sharing=sharing),
            "kwargs": codec.encode(dict(kwargs), refs=self._handle, sharing=sharing),
        }
        if fields is not None:
            del request["fn"]
            request.update(fields)
        elif name in self.classes:
            request["as"] = "handle"  # constructing: keep the instance over there
        self._next_id += 1
        # A reply must echo a secret it could not have known before the call:
        # replies written ahead of time (a forged channel) are caught here.
        request["nonce"] = secrets.token_hex(8)
        return request, sharing

    def send_ahead(self, calls: list[tuple[str, tuple[Any, ...], dict[str, Any]]]) -> None:
        """Send calls the tests are known to make next, before they make them.

        The child answers them one after the other without waiting for a round
        trip each; :meth:`call` then takes each answer in turn when the test
        makes that very call. The caller guarantees the tests make these calls,
        in this order, before any other (``checks.run_plan`` sends only calls
        with literal arguments from consecutive asserts that call nothing else),
        so the candidate runs the same calls in the same order as one at a time.
        What the candidate could learn early is the arguments of the calls sent
        ahead, which it would receive anyway; its answers are still data, and
        each still has to echo its own call's secret.
        """
        if self.broken is not None or self._ahead:
            return
        frames = []
        for name, args, kwargs in calls:
            if name in self.classes:
                break  # a constructor's instance is a handle: asked for in turn
            try:
                request, _ = self._request(name, args, kwargs)
            except codec.EncodeError:
                break  # the test's own call will meet (and record) this
            frames.append(request)
            arguments = codec.dumps([request["args"], request["kwargs"]])
            self._ahead.append((name, arguments, request["id"], request["nonce"]))
        try:
            if frames:
                send_frames(self.sock, frames)
                self.requests += len(frames)
        except OSError as e:
            # The run is gone; each statement meets that as it makes its call.
            self._ahead.clear()
            self._break("exited", str(e))

    def drain_ahead(self) -> None:
        """Read and drop the answers to calls sent ahead that the tests did not make."""
        while self._ahead and self.broken is None:
            self._ahead.popleft()
            self._receive()
        self._ahead.clear()

    def call(self, name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """Call ``name`` in the child; return its decoded result or raise."""
        if self.broken is not None:
            raise self.broken
        grant = "instance" if name in self.classes else None
        if self._ahead:
            fn, sent, call_id, nonce = self._ahead[0]
            sharing = codec.Sharing(grow=True)
            try:
                arguments = [
                    codec.encode(list(args), refs=self._handle, sharing=sharing),
                    codec.encode(dict(kwargs), refs=self._handle, sharing=sharing),
                ]
                same = fn == name and codec.dumps(arguments) == sent
            except codec.EncodeError:
                same = False
            if same:
                self._ahead.popleft()
                self.pipelined += 1
                # The test's own argument objects receive what the call did to them.
                return self._answer(call_id, nonce, sharing, "call", grant)
            # Not the call that was sent ahead (run_plan's guarantee failed):
            # take the rest of the pipeline's answers, then call as usual.
            self.drain_ahead()
        return self._exchange(name, args, kwargs, grant=grant)

    def do(
        self, what: str, target: Opaque | None, *args: Any, name: str = "", **kwargs: Any
    ) -> Any:
        """Perform ``what`` on an object in the sandbox (:mod:`arbiter.graders.sandbox._remote`).

        ``target`` is a handle, or None for the module itself (``what="global"``
        reads the global ``name``); the result is data or another handle, of
        the kind this side grants for ``what`` on ``target`` (see the module
        docstring). What ``target`` may not be asked is refused here, and never
        sent.
        """
        if self.broken is not None:
            raise self.broken
        if target is None:
            if what != "global":
                raise TypeError(f"{what!r} needs an object")
            grant: str | None = "class" if name in self.classes else "function"
        else:
            kind = target._kind
            if what not in target._ops and not (what == "getattr" and args == ("__doc__",)):
                raise target._refuse(what)
            grant = _GRANTS.get((kind, what))
        self.drain_ahead()
        if self.broken is not None:
            raise self.broken
        fields: dict[str, Any] = {"op": "do", "what": what, "target": None, "name": name}
        if target is not None:
            fields["target"] = self._handle(target)
            if grant == "instance":
                fields["as"] = "handle"
        return self._exchange("", args, kwargs, fields, grant=grant)

    def take(self, stream: Stream, count: int) -> tuple[list[Any], Any]:
        """Read up to ``count`` items of a stream: the items, and how it ended (None: not yet).

        The end is ``"stop"`` or the exception to raise after the items.
        """
        if self.broken is not None:
            raise self.broken
        self.drain_ahead()
        if self.broken is not None:
            raise self.broken
        fields = {"op": "do", "what": "take", "target": stream.handle, "name": ""}
        request, _ = self._request("", (count,), {}, fields)
        try:
            send_frame(self.sock, request)
        except OSError as e:
            raise self._break("exited", str(e)) from None
        self.requests += 1
        reply = self._reply(request["id"], request["nonce"])
        if "ok" not in reply:
            raise self._error(reply, "next")
        data = reply["ok"]
        if type(data) is not dict or len(data) != 1 or type(data.get("l")) is not list:
            raise self._break("garbled", "a stream's items are not a list")
        try:
            items = self._decode_result(data, codec.Sharing(grow=False), None)
        except codec.DecodeError as e:
            raise self._break("garbled", str(e)) from None
        end = reply.get("end")
        if end is None or end == "stop":
            return items, end
        if type(end) is not dict:
            raise self._break("garbled", "a stream's end is malformed")
        return items, self._error({"err": end}, "next")

    def _exchange(
        self,
        name: str,
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        fields: dict[str, Any] | None = None,
        *,
        grant: str | None = None,
    ) -> Any:
        """Send one request (nothing sent ahead is pending) and wait for its answer."""
        if self.broken is not None:
            raise self.broken
        self._passing.clear()
        try:
            request, sharing = self._request(name, args, kwargs, fields)
        except codec.EncodeError as e:
            self.events.append("uncrossable_argument")
            raise Uncrossable(str(e)) from None
        self._put_back()
        try:
            send_frame(self.sock, request)
        except OSError as e:
            raise self._break("exited", str(e)) from None
        self.requests += 1
        what = fields["what"] if fields is not None else "call"
        return self._answer(request["id"], request["nonce"], sharing, what, grant)

    _REPLY_KEYS = frozenset({"id", "nonce", "ok", "flags", "after", "warn", "end"})

    def _reply(self, call_id: int, nonce: str) -> dict[str, Any]:
        """Receive the reply to a call, check it answers that call, and emit its warnings."""
        reply = self._receive()
        if type(reply) is not dict or reply.get("id") != call_id or reply.get("nonce") != nonce:
            raise self._break("garbled", "a reply that does not answer the call")
        flags = reply.get("flags", [])
        if type(flags) is not list:
            raise self._break("garbled", "malformed flags")
        self.flags += [str(f)[:300] for f in flags[:5]]
        if "ok" in reply and not self._REPLY_KEYS.issuperset(reply):
            raise self._break("garbled", "a reply with fields nobody asked for")
        self._warn(reply.get("warn", []))
        return reply

    def _warn(self, emitted: Any) -> None:
        """Emit here the warnings the candidate emitted during a call, by category."""
        if type(emitted) is not list:
            raise self._break("garbled", "malformed warnings")
        for item in emitted[:16]:
            if type(item) is not list or len(item) != 3:
                raise self._break("garbled", "malformed warnings")
            builtin, declared, message = item
            text = str(message)[:2000]
            mine: Any = self.exceptions.get(declared) if type(declared) is str else None
            found = getattr(builtins, builtin, None) if type(builtin) is str else None
            if not (isinstance(found, type) and issubclass(found, Warning)):
                found = UserWarning
            if isinstance(mine, type) and issubclass(mine, Warning):
                # The stand-in of the candidate's own category, built here.
                warning: Warning = _rebuilt(mine, str(declared), text, found.__name__)
            else:
                warning = found(text)
            warnings.warn_explicit(warning, type(warning), WARNING_ORIGIN, 0, module="candidate")

    def _answer(
        self, call_id: int, nonce: str, sharing: codec.Sharing, what: str, grant: str | None
    ) -> Any:
        reply = self._reply(call_id, nonce)
        if "ok" in reply:
            returned = codec.Sharing(sharing.objects, grow=False)
            try:
                value = self._decode_result(reply["ok"], returned, grant)
                self._copy_back(reply.get("after", []), sharing)
            except codec.DecodeError as e:
                raise self._break("garbled", str(e)) from None
            return value
        raise self._error(reply, what)

    def _error(self, reply: dict[str, Any], what: str) -> BaseException:
        """Build the exception a reply's ``err`` stands for."""
        error = reply.get("err")
        if type(error) is not dict:
            return self._break("garbled", "a reply with neither a result nor an error")
        type_name = str(error.get("type", ""))[:200]
        message = str(error.get("message", ""))[:2000]
        if type_name == "Uncrossable" and error.get("builtin") is None:
            self.events.append("uncrossable_result")
            return Uncrossable(message)
        builtin, declared = error.get("builtin"), error.get("declared")
        raised = self._raised(
            builtin if type(builtin) is str else "",
            declared if type(declared) is str else None,
            type_name,
            message,
            what,
        )
        frames = _frames(error.get("where"))
        if frames and isinstance(raised, CandidateError):
            with contextlib.suppress(Exception):
                raised.frames = frames
        return raised

    def _copy_back(self, after: Any, sharing: codec.Sharing) -> None:
        """Give the test's argument containers the contents the call left in them."""
        if type(after) is not list:
            raise codec.DecodeError("malformed argument contents")
        # Decode every new content first: a failure leaves the arguments as they were.
        fresh = []
        for item in after:
            if type(item) is not list or len(item) != 2 or type(item[0]) is not int:
                raise codec.DecodeError("malformed argument contents")
            n, contents = item
            if not 0 <= n < len(sharing.objects):
                raise codec.DecodeError("contents for an argument that was not sent")
            fresh.append((sharing.objects[n], contents))
        returned = codec.Sharing(sharing.objects, grow=False)
        refs = self._decoder_refs(None)
        for target, contents in fresh:
            codec.decode_into(target, contents, returned, refs=refs, shapes=self.shapes)

    def _raised(
        self, builtin: str, declared: str | None, type_name: str, message: str, what: str
    ) -> BaseException:
        """Build (here) the error to raise for the candidate's exception.

        Chosen by identity, as the sandbox saw it: the candidate's declared
        exception class, else the builtin exception the class derives from.
        """
        if what == "next" and builtin == "StopIteration":
            # Only ``next`` on a declared iterator may end a loop here.
            return StopIteration()
        cls = self.exceptions.get(declared) if declared is not None else None
        if cls is None and builtin in _RAISABLE:
            cls = candidate_exception_class(_RAISABLE[builtin])
        if cls is not None:
            try:
                made: CandidateError = _rebuilt(cls, type_name, message, builtin)
                return made
            except Exception:  # a builtin whose constructor insists on more
                pass
        return CandidateError(type_name, message, builtin)


class Opaque:
    """A value that stayed in the sandbox and is not part of the API the tests name.

    It equals only itself, answers no question (no attribute, call, iteration,
    length, membership, truth value), and any use records an event that fails
    the test, even one that catches the error. It can only be passed back to
    the candidate's functions, given an attribute (which asks nothing), or
    shown (its ``repr`` is made here).
    """

    __slots__ = ("_channel", "handle")
    _channel: Channel
    handle: int
    #: What this kind of handle may be asked (see :meth:`Channel.do`).
    _ops: frozenset[str] = _OPAQUE_OPS
    _kind = "opaque"

    def __init__(self, channel: Channel, handle: int) -> None:
        object.__setattr__(self, "_channel", channel)
        object.__setattr__(self, "handle", handle)

    def _refuse(self, what: str) -> Uncrossable:
        self._channel.events.append("uncrossable_result")
        return Uncrossable(f"the {what} of a value in the sandbox is not decided here")

    def __repr__(self) -> str:
        return f"<opaque value #{self.handle} in the sandbox>"

    def __eq__(self, other: object) -> bool:
        if other is self:
            return True
        raise self._refuse("equality")

    def __ne__(self, other: object) -> bool:
        if other is self:
            return False
        raise self._refuse("equality")

    __hash__ = object.__hash__

    def __bool__(self) -> bool:
        raise self._refuse("truth value")

    def _ask(self, what: str, *args: Any, **kwargs: Any) -> Any:
        if what not in self._ops:
            raise self._refuse(what)
        return self._channel.do(what, self, *args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        # Dunders are asked by the machinery here (copy, inspect, pytest), never
        # by a test of the candidate: they are not sent.
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        return self._channel.do("getattr", self, name)

    def __setattr__(self, name: str, value: Any) -> None:
        self._ask("setattr", name, value)

    def __delattr__(self, name: str) -> None:
        self._ask("delattr", name)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Call the object in the sandbox, where this kind of handle may be called."""
        return self._ask("call", *args, **kwargs)

    def __iter__(self) -> Any:
        return self._ask("iter")

    def __next__(self) -> Any:
        return self._ask("next")

    def __len__(self) -> int:
        length = self._ask("len")
        if type(length) is not int:
            raise TypeError("len() of an object in the sandbox was not an int")
        return length

    def __contains__(self, item: Any) -> bool:
        found = self._ask("contains", item)
        if type(found) is not bool:
            raise TypeError("'in' on an object in the sandbox did not answer a bool")
        return found

    def __getitem__(self, key: Any) -> Any:
        return self._ask("getitem", key)

    def __setitem__(self, key: Any, value: Any) -> None:
        self._ask("setitem", key, value)

    def __delitem__(self, key: Any) -> None:
        self._ask("delitem", key)

    def __str__(self) -> str:
        if "str" not in self._ops:
            return repr(self)
        text = self._channel.do("str", self)
        if type(text) is not str:
            raise TypeError("str() of an object in the sandbox was not a str")
        return text

    def __lt__(self, other: object) -> bool:
        raise self._refuse("order")

    __le__ = __gt__ = __ge__ = __lt__

    def __init_subclass__(cls) -> None:
        super().__init_subclass__()
        type.__setattr__(cls, "__doc__", _RemoteDoc(cls.__dict__.get("__doc__")))

    def _remote_doc(self) -> str | None:
        """The object's docstring, read over there for a handle the tests name, else None."""
        if self._kind == "opaque":
            return None
        doc = self._channel.do("getattr", self, "__doc__")
        return doc if type(doc) is str else None


class _RemoteDoc:
    """``__doc__`` of the handle classes: their own text on the class, the object's on a handle.

    ``solution.f.__doc__`` in a test reads the candidate's docstring (data); the
    class keeps its documentation for help() and the API reference.
    """

    def __init__(self, text: str | None) -> None:
        self.text = text

    def __get__(self, obj: Any, owner: Any = None) -> str | None:
        if obj is None:
            return self.text
        return obj._remote_doc()  # type: ignore[no-any-return]


class RemoteObject(Opaque):
    """A handle to an object of the API the tests name (the base of the usable kinds).

    It can be passed back to the candidate's functions; what it may be asked
    depends on its kind, fixed by this side when it got it. As an
    :class:`Opaque` value, it equals only itself (an object whose ``__eq__``
    always returns True stays on the other side, so it cannot satisfy a
    comparison made here), and its truth value, order and ``in`` are not
    decided here: asking fails the test.
    """

    __slots__ = ()

    def __repr__(self) -> str:
        placeholder = f"<{self._kind} #{self.handle} in the sandbox>"
        if "repr" not in self._ops:
            return placeholder
        # An instance the tests built answers repr() over there, as str(): a test of
        # a class's __repr__ reads data. pytest also calls repr() to explain a failed
        # assert; a run that cannot answer then gets the placeholder, never an error.
        try:
            text = self._channel.do("repr", self)
        except Exception:
            return placeholder
        return text if type(text) is str else placeholder


class ClassHandle(RemoteObject):
    """A class the task uses as a class: calling it constructs an :class:`InstanceHandle`."""

    __slots__ = ()
    _ops = _CLASS_OPS
    _kind = "class"


class InstanceHandle(RemoteObject):
    """An instance the tests constructed: its attributes and methods are the API under test."""

    __slots__ = ()
    _ops = _INSTANCE_OPS
    _kind = "instance"


class MemberHandle(RemoteObject):
    """An attribute of a class or an instance that is not data (a method): it may be called."""

    __slots__ = ()
    _ops = _CALL_OPS
    _kind = "member"


class FunctionHandle(RemoteObject):
    """A declared global read as a handle (a function): it may be called."""

    __slots__ = ()
    _ops = _CALL_OPS
    _kind = "function"


_HANDLES: dict[str | None, type[Opaque]] = {
    None: Opaque,
    "class": ClassHandle,
    "instance": InstanceHandle,
    "member": MemberHandle,
    "function": FunctionHandle,
}


def _handle_class(grant: str | None) -> type[Opaque]:
    return _HANDLES.get(grant, Opaque)


class Stream:
    """An iterator the candidate returned, read from the sandbox as the tests consume it.

    Each ``next`` that finds nothing buffered asks for the next items (one at
    first, twice as many each time after, at most :data:`_MAX_TAKE`; the
    sandbox answers with fewer when they come slowly), so an endless
    generator is never run ahead of the tests by more than they have read, and
    an exception it raises reaches the test at the item where it was raised.
    Every item crosses by value. Its truth value and length are not decided
    here (a generator's say nothing about its items). Passed back to the
    candidate, it yields there first the items read here that the tests did
    not read yet (:meth:`Channel._put_back`).
    """

    __slots__ = ("_buffer", "_channel", "_count", "_end", "handle")

    def __init__(self, channel: Channel, handle: int) -> None:
        self._channel = channel
        self.handle = handle
        self._buffer: deque[Any] = deque()
        self._count = _FIRST_TAKE
        #: None while more may come; "stop" once exhausted; or the exception to raise.
        self._end: Any = None

    def __iter__(self) -> Stream:
        return self

    def __next__(self) -> Any:
        while not self._buffer:
            end = self._end
            if end is not None:
                # A generator that raised is finished: after its error, only StopIteration.
                self._end = "stop"
                if end == "stop":
                    raise StopIteration
                raise end
            items, self._end = self._channel.take(self, self._count)
            self._buffer.extend(items)
            self._count = min(2 * self._count, _MAX_TAKE)
        return self._buffer.popleft()

    def _refuse(self, what: str) -> Uncrossable:
        self._channel.events.append("uncrossable_result")
        return Uncrossable(f"the {what} of a stream in the sandbox is not decided here")

    def __bool__(self) -> bool:
        raise self._refuse("truth value")

    def __len__(self) -> int:
        raise TypeError("object of type 'generator' has no len()")

    def __repr__(self) -> str:
        return f"<stream #{self.handle} in the sandbox>"


class Neutral:
    """A placeholder for a candidate's name: anything asked of it answers itself, or nothing.

    Running a task's setup or collecting its tests with placeholders in the
    candidate's place tells a failure of the task itself (it fails here too)
    from one that happens only with the candidate's code loaded.
    """

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        return self

    def __setattr__(self, name: str, value: Any) -> None:
        pass

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Answer a call with itself."""
        return self

    def __getitem__(self, key: Any) -> Any:
        return self

    def __setitem__(self, key: Any, value: Any) -> None:
        pass

    def __iter__(self) -> Any:
        return iter(())

    def __len__(self) -> int:
        return 0

    def __index__(self) -> int:
        return 0

    def __float__(self) -> float:
        return 0.0

    def __add__(self, other: Any) -> Any:
        return self

    __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = __truediv__ = __floordiv__ = __add__
    __mod__ = __pow__ = __neg__ = __and__ = __or__ = __add__

    def __int__(self) -> int:
        return 0

    def __lt__(self, other: Any) -> bool:
        return False

    __le__ = __gt__ = __ge__ = __lt__

    def __format__(self, spec: str) -> str:
        return ""


class CandidateFunction:
    """Stands in for the candidate's function ``name`` on the trusted side."""

    def __init__(self, channel: Channel, name: str, doc: str | None = None) -> None:
        self._channel = channel
        self.__name__ = name
        self.__doc__ = doc

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Call the candidate's function in the sandbox."""
        return self._channel.call(self.__name__, args, kwargs)

    def __repr__(self) -> str:
        return f"<candidate function {self.__name__}>"
