"""What the trusted side may ask of what the candidate returns: decided on the trusted side alone.

Both halves of the protocol run in this process over a socket pair: the
sandbox's half (:class:`arbiter.graders.sandbox._remote.Session`) in a thread,
the trusted half (:class:`arbiter.graders.sandbox.proxy.Channel`) in the test.
Each test is one rule of the boundary, the way a test of the candidate meets
it; several replay the red team's mechanisms (a declared class answering for
a result, a capability table rewritten from inside the candidate's process).
"""

from __future__ import annotations

import contextlib
import itertools
import socket
import sys
import threading
import time
import types
import warnings
from collections.abc import Iterator
from typing import Any

import pytest

from arbiter.graders.sandbox import _codec as codec
from arbiter.graders.sandbox import _remote
from arbiter.graders.sandbox._frames import CONTROL_MAX_BYTES, FrameReader, send_frame
from arbiter.graders.sandbox.proxy import (
    CandidateFunction,
    Channel,
    ClassHandle,
    InstanceHandle,
    LoadResult,
    Opaque,
    Stream,
    Uncrossable,
)


@contextlib.contextmanager
def served(
    code: str, declared: list[str], classes: frozenset[str] = frozenset()
) -> Iterator[tuple[Channel, LoadResult, dict[str, Any]]]:
    """A candidate module served by its session in a thread; yield the channel to it."""
    module = types.ModuleType("__candidate_of_a_test__")
    sys.modules[module.__name__] = module  # as the template registers the candidate's
    namespace: dict[str, Any] = module.__dict__
    exec(compile(code, "solution.py", "exec", dont_inherit=True), namespace)
    session = _remote.Session(namespace, declared)
    ours, theirs = socket.socketpair()

    def serve() -> None:
        send_frame(theirs, session.ready())
        reader = FrameReader(theirs, max_bytes=CONTROL_MAX_BYTES)
        while True:
            try:
                request = reader.recv()
            except EOFError:
                return
            send_frame(theirs, session.reply(request))

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    channel = Channel(ours, time.monotonic() + 30, max_bytes=1 << 20, classes=classes)
    try:
        yield channel, channel.load(), namespace
    finally:
        ours.close()
        thread.join(5)
        theirs.close()


STACK = """
class Stack:
    '''A stack.'''
    def __init__(self):
        self.items = []
    def push(self, x):
        self.items.append(x)
    def pop(self):
        return self.items.pop()
    def __len__(self):
        return len(self.items)
    def __contains__(self, x):
        return x in self.items
    def startswith(self, prefix):
        return True

def make():
    return Stack()

def same(s):
    return s

def word():
    '''Return a word.'''
    return Stack()
"""


def test_a_constructed_instance_of_a_task_class_is_the_api_under_test() -> None:
    with served(STACK, ["Stack"], frozenset({"Stack"})) as (channel, _, _):
        stack_class = channel.do("global", None, name="Stack")
        assert isinstance(stack_class, ClassHandle)
        stack = stack_class()
        assert isinstance(stack, InstanceHandle)
        stack.push(1)
        stack.push(2)
        assert stack.pop() == 2
        assert len(stack) == 1 and 1 in stack and 7 not in stack
        assert stack.items == [1]


def test_a_declared_class_instance_returned_by_a_function_answers_nothing() -> None:
    # The red team's forged pass: the result is an instance of a class the tests
    # name, so its own methods used to answer ``in`` and ``startswith``.
    with served(STACK, ["Stack", "make", "word"], frozenset({"Stack"})) as (channel, _, _):
        for fn in ("make", "word"):
            result = CandidateFunction(channel, fn)()
            assert type(result) is Opaque
            with pytest.raises(Uncrossable):
                "x" in result  # noqa: B015
            with pytest.raises(Uncrossable):
                result.startswith("x")  # read as an attribute, never callable
            with pytest.raises(Uncrossable):
                len(result)
            with pytest.raises(Uncrossable):
                bool(result)
            with pytest.raises(Uncrossable):
                result == result.items  # noqa: B015
            assert result.items == []  # an attribute is data


def test_a_constructed_instance_handed_back_as_a_result_is_opaque() -> None:
    # The sandbox names the very number of an instance the tests hold: the result is
    # still a result (its methods would answer for it), not that instance.
    with served(STACK, ["Stack", "same"], frozenset({"Stack"})) as (channel, _, _):
        stack = channel.do("global", None, name="Stack")()
        back = CandidateFunction(channel, "same")(stack)
        assert back is not stack and type(back) is Opaque
        with pytest.raises(Uncrossable):
            back.startswith("x")


def test_a_rewritten_capability_table_grants_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    # The candidate's process can rewrite its half of the protocol (through
    # sys.modules): answer every request as if the trusted side had constructed
    # the result, keep even data as a handle. Here the rewrite is made with
    # monkeypatch, so that it ends with the test.
    def forged_reply(self: _remote.Session, request: dict[str, Any]) -> dict[str, Any]:
        return genuine(self, {**request, "as": "handle"})

    genuine = _remote.Session.reply
    monkeypatch.setattr(_remote.Session, "reply", forged_reply)
    monkeypatch.setattr(_remote, "_SCALARS", frozenset())
    with served(STACK, ["Stack", "make"], frozenset({"Stack"})) as (channel, _, _):
        result = CandidateFunction(channel, "make")()
        assert type(result) is Opaque
        with pytest.raises(Uncrossable):
            "x" in result  # noqa: B015


def test_a_function_is_never_a_class_because_the_candidate_says_so() -> None:
    # ``f`` is the task's function; the candidate makes it a class whose methods say yes.
    code = "class f:\n    def __init__(self, x): pass\n    def startswith(self, p): return True\n"
    with served(code, ["f"]) as (channel, load, _):
        assert load.names["f"] == "class"  # what the candidate's process reports
        result = CandidateFunction(channel, "f")(1)
        assert type(result) is Opaque
        with pytest.raises(Uncrossable):
            result.startswith("a")


def test_an_attribute_that_is_an_instance_the_tests_built_is_that_instance() -> None:
    code = "class Node:\n    def __init__(self, v):\n        self.v = v\n        self.left = None\n"
    with served(code, ["Node"], frozenset({"Node"})) as (channel, _, _):
        node = channel.do("global", None, name="Node")
        root = node(1)
        root.left = node(2)
        root.left.left = node(3)  # a setup linking what it built (MBPP 927)
        assert root.left.left.v == 3
        assert isinstance(root.left, InstanceHandle)


def test_generators_stream_as_the_tests_consume_them() -> None:
    code = (
        "made = []\n"
        "def naturals():\n"
        "    n = 0\n"
        "    while True:\n"
        "        made.append(n)\n"
        "        yield n\n"
        "        n += 1\n"
        "def broken():\n"
        "    raise ValueError('at once')\n"
        "    yield 1\n"
        "def late():\n"
        "    yield 1\n"
        "    raise KeyError('k')\n"
    )
    with served(code, ["naturals", "broken", "late"]) as (channel, _, namespace):
        endless = CandidateFunction(channel, "naturals")()
        assert isinstance(endless, Stream)
        assert list(itertools.islice(endless, 5)) == [0, 1, 2, 3, 4]
        # Read ahead at most as far as the tests have read: 1 + 2 + 4 items.
        assert len(namespace["made"]) <= 7
        with pytest.raises(ValueError, match="at once"):
            next(CandidateFunction(channel, "broken")())
        gen = CandidateFunction(channel, "late")()
        assert next(gen) == 1
        with pytest.raises(KeyError):
            next(gen)
        with pytest.raises(StopIteration):
            next(gen)
        with pytest.raises(Uncrossable):
            bool(CandidateFunction(channel, "late")())


def test_copy_back_tells_true_from_one() -> None:
    code = "def flip(xs):\n    for i, x in enumerate(xs):\n        xs[i] = bool(x)\n"
    with served(code, ["flip"]) as (channel, _, _):
        xs = [0, 1, 1]
        CandidateFunction(channel, "flip")(xs)
        assert xs == [False, True, True] and [type(x) for x in xs] == [bool] * 3


def test_shapes_keep_their_form() -> None:
    code = (
        "import collections, dataclasses, enum\n"
        "Span = collections.namedtuple('Span', 'lo hi')\n"
        "@dataclasses.dataclass(frozen=True)\n"
        "class Point:\n    x: int\n    y: int\n"
        "class Color(enum.Enum):\n    RED = 1\n"
        "def span(): return Span(1, 2)\n"
        "def point(): return Point(3, 4)\n"
        "def color(): return Color.RED\n"
    )
    with served(code, ["span", "point", "color", "Color"], frozenset({"Color"})) as (
        channel,
        _,
        _,
    ):
        span = CandidateFunction(channel, "span")()
        assert span.lo == 1 and span == (1, 2) and type(span).__name__ == "Span"
        point = CandidateFunction(channel, "point")()
        assert (point.x, point.y) == (3, 4) and hash(point) == hash(point)
        red = CandidateFunction(channel, "color")()
        assert red == channel.do("global", None, name="Color").RED
        assert red.name == "RED" and red.value == 1


def test_a_dataclass_of_the_prompt_becomes_the_trusted_class() -> None:
    import dataclasses

    @dataclasses.dataclass
    class Interval:
        lo: int
        hi: int

    code = (
        "import dataclasses\n"
        "@dataclasses.dataclass\nclass Interval:\n    lo: int\n    hi: int\n"
        "def f(): return Interval(1, 5)\n"
    )
    with served(code, ["f"]) as (channel, _, _):
        channel.shapes = codec.Shapes({"Interval": Interval})
        assert CandidateFunction(channel, "f")() == Interval(1, 5)


def test_warnings_reach_the_tests() -> None:
    code = (
        "import warnings\n"
        "class Mine(UserWarning):\n    pass\n"
        "def old():\n    warnings.warn('use new', DeprecationWarning)\n    return 1\n"
        "def own():\n    warnings.warn('careful', Mine)\n    return 2\n"
    )
    with served(code, ["old", "own", "Mine"]) as (channel, load, _):
        mine = channel.exception_stand_in("Mine", load.names["Mine"])
        with pytest.warns(DeprecationWarning, match="use new"):
            assert CandidateFunction(channel, "old")() == 1
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            assert CandidateFunction(channel, "own")() == 2
        assert [type(w.message) for w in caught] == [mine]


def test_docstrings_cross_as_data() -> None:
    with served(STACK, ["Stack", "word"], frozenset({"Stack"})) as (channel, load, _):
        assert load.docs["word"] == "Return a word."
        assert CandidateFunction(channel, "word", load.docs["word"]).__doc__ == "Return a word."
        assert channel.do("global", None, name="Stack").__doc__ == "A stack."
        assert Opaque.__doc__ and Opaque.__doc__.startswith("A value that stayed")
