"""Length-prefixed messages over a stream socket, with a size cap and a deadline.

A frame is a 4-byte big-endian length and that many bytes of JSON. The reader
enforces the cap before reading the body, so a flood from the sandbox costs the
trusted side nothing, and a deadline, so a silent sandbox cannot hang it.

A :class:`FrameReader` reads through a buffer: one ``recv`` takes whatever has
arrived, often several frames (the answers to calls sent ahead), and the next
frames come out of the buffer without a system call.

A deadline is an absolute ``time.monotonic()``, or an object whose ``at()``
says it (a run's deadline, which moves later as the run is credited with
time it waited for a CPU: see :mod:`arbiter.graders.sandbox.clock`); it is read again
after every wait, so a wait that reaches a deadline that has moved goes on.
"""

from __future__ import annotations

import os
import select
import socket
import struct
import time
from typing import TYPE_CHECKING, Any

from arbiter.graders.sandbox._codec import DecodeError, dumps, loads

if TYPE_CHECKING:  # the template loads this module, never the clock's
    from arbiter.graders.sandbox.clock import Moving

    Deadline = float | Moving | None

__all__ = [
    "CONTROL_MAX_BYTES",
    "ChannelClosed",
    "ChannelTimeout",
    "FrameReader",
    "FrameTooLarge",
    "recv_frame",
    "send_frame",
    "send_frames",
]

_HEADER = struct.Struct(">I")
#: The largest frame either end of a zygote's control channel accepts.
CONTROL_MAX_BYTES = 64 << 20


class ChannelClosed(EOFError):
    """The other end closed the socket (or died) before a whole frame arrived."""


class ChannelTimeout(TimeoutError):
    """No whole frame arrived before the deadline."""


class FrameTooLarge(DecodeError):
    """A frame announced more bytes than the reader accepts."""


def _framed(message: Any) -> bytes:
    body = dumps(message)
    return _HEADER.pack(len(body)) + body


def send_frames(sock: socket.socket, messages: list[Any]) -> None:
    """Send several JSON messages with one system call."""
    sock.sendall(b"".join(_framed(m) for m in messages))


def send_frame(sock: socket.socket, message: Any, fds: list[int] | None = None) -> None:
    """Send one JSON message, optionally passing file descriptors with it (SCM_RIGHTS)."""
    data = _framed(message)
    if fds:
        sent = socket.send_fds(sock, [data], fds)
        data = data[sent:]
    if data:
        sock.sendall(data)


def _left(deadline: float | Moving) -> float:
    """Return the seconds left before ``deadline`` (read now, if it moves)."""
    at = deadline if isinstance(deadline, float | int) else deadline.at()
    return at - time.monotonic()


def _recv_some(sock: socket.socket, size: int, deadline: Deadline) -> bytes:
    """Return what has arrived, up to ``size`` bytes; wait for something until ``deadline``."""
    try:
        if deadline is None:
            chunk = sock.recv(size)
        else:
            try:
                chunk = sock.recv(size, socket.MSG_DONTWAIT)
            except BlockingIOError:
                while True:
                    left = _left(deadline)
                    if left <= 0:
                        raise ChannelTimeout("no reply before the deadline") from None
                    if select.select([sock], [], [], left)[0]:
                        break
                chunk = sock.recv(size)
    except (ConnectionResetError, BrokenPipeError) as e:
        raise ChannelClosed(str(e)) from None
    if not chunk:
        raise ChannelClosed("the other end closed the channel")
    return chunk


def _recv_exact(sock: socket.socket, n: int, deadline: Deadline) -> bytes:
    chunks: list[bytes] = []
    while n:
        chunk = _recv_some(sock, min(n, 1 << 20), deadline)
        chunks.append(chunk)
        n -= len(chunk)
    return b"".join(chunks)


def _check_length(length: int, max_bytes: int) -> None:
    if length > max_bytes:
        raise FrameTooLarge(f"a {length}-byte message exceeds the {max_bytes}-byte cap")


def recv_frame(sock: socket.socket, *, max_bytes: int, deadline: Deadline = None) -> Any:
    """Read one message before ``deadline``.

    Raises:
        ChannelClosed: end of stream.
        ChannelTimeout: nothing whole before ``deadline``.
        FrameTooLarge: the announced length exceeds ``max_bytes``.
        DecodeError: the body is not valid JSON.
    """
    (length,) = _HEADER.unpack(_recv_exact(sock, _HEADER.size, deadline))
    _check_length(length, max_bytes)
    return loads(_recv_exact(sock, length, deadline))


class FrameReader:
    """Reads frames from one stream socket through a buffer, with a size cap per frame."""

    #: Bytes asked of the socket per read when no longer frame is under way.
    CHUNK = 1 << 16

    def __init__(self, sock: socket.socket, *, max_bytes: int) -> None:
        self.sock = sock
        self.max_bytes = max_bytes
        self._buffer = bytearray()

    @property
    def buffered(self) -> int:
        """Return how many bytes have arrived that no frame returned yet holds."""
        return len(self._buffer)

    def recv(self, deadline: Deadline = None) -> Any:
        """Return the next message; the errors are those of :func:`recv_frame`."""
        buffer = self._buffer
        while True:
            wanted = _HEADER.size
            if len(buffer) >= wanted:
                (length,) = _HEADER.unpack_from(buffer)
                _check_length(length, self.max_bytes)
                wanted += length
                if len(buffer) >= wanted:
                    body = bytes(buffer[_HEADER.size : wanted])
                    del buffer[:wanted]
                    return loads(body)
            size = max(self.CHUNK, min(wanted - len(buffer), 1 << 20))
            buffer += _recv_some(self.sock, size, deadline)


def recv_frame_with_fds(sock: socket.socket, *, max_bytes: int) -> tuple[Any, list[int]]:
    """Read one message that may carry file descriptors (the zygote's control channel)."""
    head, fds, _flags, _addr = socket.recv_fds(sock, _HEADER.size, 4)
    if not head:
        raise ChannelClosed("the other end closed the channel")
    if len(head) < _HEADER.size:
        head += _recv_exact(sock, _HEADER.size - len(head), None)
    (length,) = _HEADER.unpack(head)
    try:
        _check_length(length, max_bytes)
    except FrameTooLarge:
        for fd in fds:
            os.close(fd)
        raise
    return loads(_recv_exact(sock, length, None)), list(fds)
