"""The by-value protocol, both halves driven in this process: what crosses, and as what.

The sandbox's half (:class:`arbiter.graders.sandbox._remote.Session`) answers requests
that the trusted half (:class:`arbiter.graders.sandbox.proxy.Channel`) would send; each
test builds the request as the channel does and decodes the reply as it does.
"""

from __future__ import annotations

import collections
import datetime
import decimal
import fractions
from typing import Any

import pytest

from arbiter.graders.sandbox import _codec as codec
from arbiter.graders.sandbox import _remote
from arbiter.graders.sandbox.proxy import CandidateError, Channel
from arbiter.graders.sandbox.suites import declared_names


def call(session: _remote.Session, fn: str, *args: Any) -> tuple[dict[str, Any], codec.Sharing]:
    """Send ``fn(*args)`` as the channel encodes it; return the reply and the call's sharing."""
    sharing = codec.Sharing(grow=True)
    request = {
        "op": "call",
        "id": 0,
        "nonce": "n",
        "fn": fn,
        "args": codec.loads(codec.dumps(codec.encode(list(args), sharing=sharing))),
        "kwargs": {"d": []},
    }
    return session.reply(request), sharing


def session(code: str, declared: list[str]) -> _remote.Session:
    namespace: dict[str, Any] = {"__name__": "__candidate__"}
    exec(code, namespace)
    return _remote.Session(namespace, declared)


def test_only_declared_names_are_reported_or_callable() -> None:
    s = session(
        "def f(): return 1\ndef secret(): return 2\nimport math\nX = 3\n", ["f", "X", "math"]
    )
    assert dict(s.ready()["names"]) == {"f": "callable", "X": "value", "math": "module"}
    reply, _ = call(s, "secret")
    assert reply["err"]["builtin"] == "KeyError"


def test_mutations_are_copied_back_and_a_returned_argument_is_the_same_object() -> None:
    s = session("def f(xs, d):\n    xs.sort()\n    d['n'] = len(xs)\n    return xs\n", ["f"])
    xs, d = [3, 1, 2], {"k": [0]}
    reply, sharing = call(s, "f", xs, d)
    returned = codec.Sharing(sharing.objects, grow=False)
    value = codec.decode(reply["ok"], shared=returned)
    for n, contents in reply["after"]:
        codec.decode_into(sharing.objects[n], contents, returned)
    assert value is xs and xs == [1, 2, 3]
    assert d == {"k": [0], "n": 3}


def test_an_untouched_argument_sends_nothing_back() -> None:
    s = session("def f(xs):\n    return sorted(xs)\n", ["f"])
    xs = [3, 1, 2]
    reply, _ = call(s, "f", xs)
    assert "after" not in reply and reply["ok"] == {"l": [1, 2, 3]}


def test_exceptions_are_named_by_identity_not_by_their_class_name() -> None:
    code = (
        "class StopIteration(ValueError):\n    pass\n"
        "def named(): raise StopIteration('x')\n"
        "def genuine(): raise __builtins__['StopIteration'] if isinstance(__builtins__, dict)"
        " else __import__('builtins').StopIteration\n"
    )
    s = session(code, ["named", "genuine"])
    reply, _ = call(s, "named")
    assert reply["err"]["builtin"] == "ValueError" and reply["err"]["type"] == "StopIteration"
    reply, _ = call(s, "genuine")
    assert reply["err"]["builtin"] == "StopIteration"
    # The trusted side raises neither as a StopIteration from a call.
    channel = Channel.__new__(Channel)
    channel.exceptions = {}
    raised = channel._raised("StopIteration", None, "StopIteration", "", "call")
    assert isinstance(raised, CandidateError) and not isinstance(raised, StopIteration)
    assert isinstance(channel._raised("StopIteration", None, "X", "", "next"), StopIteration)
    assert isinstance(channel._raised("ValueError", None, "StopIteration", "", "call"), ValueError)


@pytest.mark.parametrize(
    "value",
    [
        10**5000,
        -(2**200),
        range(3, 30, 4),
        collections.deque([1, 2], maxlen=5),
        decimal.Decimal("1.10"),
        fractions.Fraction(3, 7),
        datetime.date(2024, 2, 29),
        datetime.datetime(2024, 3, 31, 2, 30, 5, 17, fold=1),
        datetime.datetime(1, 1, 1, tzinfo=datetime.timezone(datetime.timedelta(hours=-23))),
        datetime.time(23, 59, 59, 999_999, tzinfo=datetime.UTC),
        datetime.timedelta(days=-3, seconds=5, microseconds=7),
    ],
    ids=[
        "int-5000-digits",
        "negative-int",
        "range",
        "deque",
        "decimal",
        "fraction",
        "date",
        "naive-datetime-fold",
        "aware-datetime",
        "aware-time",
        "timedelta",
    ],
)
def test_standard_values_cross_as_exact_data(value: Any) -> None:
    decoded = codec.decode(codec.loads(codec.dumps(codec.encode(value))))
    assert type(decoded) is type(value) and decoded == value
    if isinstance(value, datetime.datetime | datetime.time):
        # An honest date function's result reads the same here: offset and fold too.
        assert decoded.utcoffset() == value.utcoffset() and decoded.fold == value.fold


def test_a_date_subclass_of_the_candidates_does_not_cross_as_a_date() -> None:
    # Its methods (an __eq__ that always answers True) would come along as data.
    s = session(
        "import datetime\nclass D(datetime.date):\n    def __eq__(self, o):\n"
        "        return True\ndef f():\n    return D(2000, 1, 1)\n",
        ["f"],
    )
    reply, _ = call(s, "f")
    assert reply["ok"] == {"r": 0}  # a handle: the trusted side decides what it may answer


def test_a_generator_nested_in_a_result_is_consumed_in_the_sandbox() -> None:
    s = session("def f(n):\n    return [(i * i for i in range(n))]\n", ["f"])
    reply, _ = call(s, "f", 4)
    (decoded,) = codec.decode(reply["ok"])
    assert list(decoded) == [0, 1, 4, 9]


def test_a_returned_generator_stays_in_the_sandbox_as_a_stream() -> None:
    s = session("def f(n):\n    return (i * i for i in range(n))\n", ["f"])
    reply, _ = call(s, "f", 4)
    assert reply["ok"] == {"g": 0}


@pytest.mark.parametrize(
    "raw",
    [
        b'{"i": "12"}',  # not hex
        b'{"i": "0x' + b"f" * (codec.MAX_INT_HEX_DIGITS + 8) + b'"}',  # too large
        b'{"ma": 0}',  # an alias of nothing
        b'{"m": [0, {"l": []}]}',  # a new shared container in a reply
        b'{"rg": [0, 5, 0]}',  # a zero step
        b'{"fr": [1, 0]}',
        b'{"dq": [[1], -1]}',
        b'{"da": [2023, 2, 29]}',  # no such day
        b'{"da": [true, 1, 1]}',  # a bool is not a field
        b'{"dtm": [2000, 1, 1, 0, 0, 0, 0, 0, [1, 0, 0]]}',  # an offset of a whole day
        b'{"tm": [24, 0, 0, 0, 0, null]}',
        b'{"td": [1000000000000, 0, 0]}',
    ],
)
def test_malformed_values_are_refused(raw: bytes) -> None:
    with pytest.raises(codec.DecodeError):
        codec.decode(codec.loads(raw), shared=codec.Sharing(grow=False))


def test_a_star_import_exposes_the_global_names_the_file_reads_and_never_binds() -> None:
    tests = (
        "import math, pytest\n"
        "from solution import *\n"
        "def check(f):\n"  # the parameter shadows f inside check only
        "    assert f(1) == pytest.approx(math.pi)\n"
        "check(f)\n"
        "class TestX:\n"
        "    def test_b(self):\n"
        "        assert sorted(g()) == [1]\n"
    )
    assert declared_names({"test_x.py": tests}, "solution") == ["f", "g"]
    explicit = "import solution as s\nfrom solution import Stack\n\ndef test():\n    s.add(1)\n"
    assert declared_names({"test_y.py": explicit}, "solution") == ["Stack", "add"]
