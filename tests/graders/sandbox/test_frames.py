"""Framing: buffered reads, the size cap, the deadline, and forged frames behind real ones."""

from __future__ import annotations

import socket
import struct
import threading
import time
from collections.abc import Iterator

import pytest

from arbiter.graders.sandbox import _codec as codec
from arbiter.graders.sandbox._frames import (
    ChannelClosed,
    ChannelTimeout,
    FrameReader,
    FrameTooLarge,
    send_frame,
    send_frames,
)
from arbiter.graders.sandbox.proxy import Channel


@pytest.fixture
def pair() -> Iterator[tuple[socket.socket, socket.socket]]:
    a, b = socket.socketpair()
    yield a, b
    a.close()
    b.close()


def test_several_frames_from_one_read(pair: tuple[socket.socket, socket.socket]) -> None:
    a, b = pair
    send_frames(a, [{"n": 1}, [2, "two"], None])
    reader = FrameReader(b, max_bytes=1 << 10)
    assert reader.recv(time.monotonic() + 5) == {"n": 1}
    # The rest came with the first read: no system call, no deadline needed.
    assert reader.buffered > 0
    assert reader.recv(time.monotonic() - 1) == [2, "two"]
    assert reader.recv(time.monotonic() - 1) is None
    assert reader.buffered == 0
    with pytest.raises(ChannelTimeout):
        reader.recv(time.monotonic() + 0.05)


def test_a_frame_trickled_byte_by_byte(pair: tuple[socket.socket, socket.socket]) -> None:
    a, b = pair
    message = {"text": "x" * 300_000, "tuple": codec.encode((1, 2))}
    body = codec.dumps(message)
    data = struct.pack(">I", len(body)) + body

    def trickle() -> None:
        for i in range(0, 64):
            a.sendall(data[i : i + 1])
        a.sendall(data[64:])

    sender = threading.Thread(target=trickle)
    sender.start()
    assert FrameReader(b, max_bytes=1 << 20).recv(time.monotonic() + 10) == message
    sender.join()


def test_the_cap_is_enforced_before_the_body_is_read(
    pair: tuple[socket.socket, socket.socket],
) -> None:
    a, b = pair
    a.sendall(struct.pack(">I", 1 << 30))  # announces a gigabyte, sends none of it
    with pytest.raises(FrameTooLarge, match="exceeds the 1024-byte cap"):
        FrameReader(b, max_bytes=1 << 10).recv(time.monotonic() + 5)


def test_a_peer_that_hangs_up_mid_frame(pair: tuple[socket.socket, socket.socket]) -> None:
    a, b = pair
    a.sendall(struct.pack(">I", 10) + b'{"a"')
    a.close()
    reader = FrameReader(b, max_bytes=1 << 10)
    with pytest.raises(ChannelClosed):
        reader.recv(time.monotonic() + 5)
    with pytest.raises(ChannelClosed):
        FrameReader(b, max_bytes=1 << 10).recv(None)


def test_a_forged_frame_behind_a_real_answer_is_caught(
    pair: tuple[socket.socket, socket.socket],
) -> None:
    ours, theirs = pair
    channel = Channel(ours, time.monotonic() + 5, max_bytes=1 << 20)
    send_frame(theirs, {"ready": True, "names": [["f", "callable"]]})
    assert channel.load().ok
    # The answer and an unsolicited frame arrive together, so the reader takes both
    # off the socket at once: the forged one sits in the buffer, not on the socket.
    send_frames(theirs, [{"ready": True, "names": []}, {"id": 0, "nonce": "x", "ok": True}])
    channel.load()
    channel.check_quiet()
    assert channel.broken is not None and channel.broken.reason == "garbled"
