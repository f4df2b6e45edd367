"""A server reached over a socket: TCP, or a Unix domain socket.

Only connecting is translated here: once open, the stream's own errors (trio's Broken
and Closed) reach the connection, which knows what a loss means. On POSIX the socket is
read and written through :class:`DirectSocketStream` (the system calls of
:class:`~mcpl_host.transports._nonblocking.NonblockingStream`: no scheduling round
around a ``recv`` that succeeds, and a read side the task waiting for an answer may
drive itself); elsewhere through trio's own ``SocketStream``.
"""

from __future__ import annotations

import contextlib
import sys

import trio

from ..protocol.errors import TransportError
from ._nonblocking import NonblockingStream
from .targets import TcpTarget, UnixTarget, describe

__all__ = ["DirectSocketStream", "SocketTransport", "open_tcp", "open_unix"]


class DirectSocketStream(NonblockingStream):
    """A connected socket, read and written with ``read(2)`` and ``write(2)`` (POSIX).

    trio's ``SocketStream`` keeps owning the socket (its options, its closing)."""

    def __init__(self, stream: trio.SocketStream) -> None:
        fd = stream.socket.fileno()
        super().__init__(fd, fd)
        self.socket_stream = stream

    async def aclose(self) -> None:
        self._send_closed = self._receive_closed = True
        await self.socket_stream.aclose()


def _direct(stream: trio.SocketStream) -> trio.abc.Stream:
    return stream if sys.platform == "win32" else DirectSocketStream(stream)


class SocketTransport:
    """An open socket to a server: ``stream`` carries the bytes both ways."""

    def __init__(self, stream: trio.abc.Stream, *, description: str) -> None:
        self.stream = stream
        self.description = description
        self._closed = False

    async def aclose(self) -> None:
        """Close the socket. Idempotent; raises nothing (a broken socket is closed too)."""
        if self._closed:
            return
        self._closed = True
        # A socket the peer already broke is released all the same.
        with contextlib.suppress(trio.BrokenResourceError, trio.ClosedResourceError, OSError):
            await self.stream.aclose()


async def open_tcp(target: TcpTarget) -> SocketTransport:
    """Connect to ``target`` over TCP.

    Raises:
        TransportError: ``reason="connect-failed"`` when the name does not resolve or
            every address refuses or is unreachable.
    """
    label = describe(target)
    try:
        stream = await trio.open_tcp_stream(target.host, target.port)
    except OSError as exc:
        raise TransportError(
            f"cannot connect to {label}: {_reason(exc)}", reason="connect-failed"
        ) from exc
    return SocketTransport(_direct(stream), description=label)


async def open_unix(target: UnixTarget) -> SocketTransport:
    """Connect to the Unix domain socket at ``target.path``.

    Raises:
        TransportError: ``reason="connect-failed"`` when nothing listens there (missing
            path, refused, not a socket, no permission).
    """
    label = describe(target)
    try:
        stream = await trio.open_unix_socket(target.path)
    except OSError as exc:
        raise TransportError(
            f"cannot connect to {label}: {_reason(exc)}", reason="connect-failed"
        ) from exc
    return SocketTransport(_direct(stream), description=label)


def _reason(exc: OSError) -> str:
    # strerror, not str(exc): trio's "all attempts failed" text lists every address.
    return exc.strerror or str(exc) or type(exc).__name__
