"""The bridge's format: the reference codec every language's runtime is checked against."""

from __future__ import annotations

import io
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from arbiter.graders.languages import wire
from arbiter.graders.languages.wire import Char, Tuple, WireError

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=False),
    st.text(),
    st.integers(0, 0x10FFFF).filter(lambda c: not 0xD800 <= c <= 0xDFFF).map(Char),
)
values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.lists(inner, max_size=3).map(lambda xs: Tuple(tuple(xs))),
        st.dictionaries(st.one_of(st.integers(), st.text()), inner, max_size=3),
    ),
    max_leaves=12,
)


@given(values)
def test_every_value_round_trips(value):
    assert wire.decode(wire.encode(value)) == value


@pytest.mark.parametrize(
    ("value", "encoded"),
    [
        (None, b"n"),
        (True, b"b1"),
        (-42, b"i-42;"),
        (1.0, b"f3ff0000000000000"),
        ("hi", b"s2:hi"),
        ("é", b"s2:\xc3\xa9"),
        (Char(97), b"c97;"),
        ([1, [2]], b"l2:i1;l1:i2;"),
        (Tuple((1, "a")), b"t2:i1;s1:a"),
        ({"k": 1}, b"m1:s1:ki1;"),
    ],
)
def test_the_format_is_as_documented(value, encoded):
    assert wire.encode(value) == encoded


def test_floats_cross_bit_for_bit():
    for x in (0.1, -0.0, math.inf, 5e-324, 1.3300000429153442):
        back = wire.decode(wire.encode(x))
        assert math.copysign(1, back) == math.copysign(1, x) and back == x
    assert math.isnan(wire.decode(wire.encode(math.nan)))


@pytest.mark.parametrize(
    "data",
    [b"", b"x", b"i12", b"i1a;", b"s5:abc", b"l2:i1;", b"f12", b"b2", b"c-1;", b"m1:i1;", b"nn"],
)
def test_malformed_values_are_refused(data):
    with pytest.raises(WireError):
        wire.decode(data)


def test_frames_are_read_whole_and_bounded():
    stream = io.BytesIO(wire.request("f", [1]) + b"3:abc")
    assert wire.decode(wire.read_frame(stream.read)) == ["f", [1]]
    assert wire.read_frame(stream.read) == b"abc"
    assert wire.read_frame(stream.read) is None
    with pytest.raises(WireError, match="over the limit"):
        wire.read_frame(io.BytesIO(b"100:" + b"x" * 100).read, max_bytes=10)
    with pytest.raises(WireError, match="ended inside a frame"):
        wire.read_frame(io.BytesIO(b"10:abc").read)
    with pytest.raises(WireError, match="decimal digits"):
        wire.read_frame(io.BytesIO(b"-1:").read)


def test_deep_nesting_is_refused_not_a_recursion_error():
    with pytest.raises(WireError, match="too deep"):
        wire.decode(b"l1:" * 500 + b"n")
