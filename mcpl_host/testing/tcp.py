"""The socket mode: the scripted server listens on a loopback TCP port.

``target`` is a :class:`~mcpl_host.TcpTarget` for ``127.0.0.1`` and the port the
system picked. A clean ``drop()`` half-closes the socket (the host reads end of file);
``crash()`` and refused attempts reset it (``SO_LINGER`` 0), which the host sees as a
failed read or write. Once the script has ended or failed the listening socket is
closed, so later attempts are refused by the system.
"""

from __future__ import annotations

import contextlib
import socket
import struct
from collections.abc import Callable
from typing import Final

import trio

from ..transports.targets import TcpTarget
from ._trio_driver import Link, Listener
from .runner import BackgroundServer

__all__ = ["TcpServer"]

# After a clean half-close, how long to read (and discard) until the host closes its
# side too: closing a socket with unread input resets it instead.
_DRAIN: Final = 0.5
_RESET: Final = struct.pack("ii", 1, 0)  # SO_LINGER on, 0 s: close() sends RST
_OS_ERRORS: Final = (trio.BrokenResourceError, trio.ClosedResourceError, OSError)


class _SocketLink:
    def __init__(self, stream: trio.SocketStream) -> None:
        self._stream = stream

    @property
    def stream(self) -> trio.abc.Stream:
        return self._stream

    async def hangup(self, *, abrupt: bool) -> None:
        if abrupt:
            await _reset(self._stream)
            return
        with contextlib.suppress(*_OS_ERRORS):
            await self._stream.send_eof()
            with trio.move_on_after(_DRAIN):
                while await self._stream.receive_some(65536):
                    pass
        with contextlib.suppress(*_OS_ERRORS):
            await self._stream.aclose()


class _TcpListener:
    def __init__(self, listener: trio.SocketListener, on_refused: Callable[[], None]) -> None:
        self.refusals = 0
        self._listener = listener
        self._on_refused = on_refused
        self.port: int = listener.socket.getsockname()[1]

    async def accept(self) -> Link:
        while True:
            stream = await self._listener.accept()
            if self.refusals <= 0:
                return _SocketLink(stream)
            self.refusals -= 1
            self._on_refused()
            await _reset(stream)

    async def stop(self) -> None:
        await self._listener.aclose()


async def _reset(stream: trio.SocketStream) -> None:
    with contextlib.suppress(*_OS_ERRORS):
        stream.socket.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, _RESET)
        await stream.aclose()


class TcpServer(BackgroundServer):
    """The script on a loopback TCP listener; ``target`` is its ``TcpTarget``."""

    mode = "tcp"

    async def _open_listener(self) -> Listener:
        (listener,) = await trio.open_tcp_listeners(0, host="127.0.0.1")
        tcp = _TcpListener(listener, self._count_refused)
        self._target = TcpTarget("127.0.0.1", tcp.port)
        return tcp
