"""The memory mode: the scripted server on the far end of in-memory streams.

``target`` is an async callable, as ``Connection`` takes one: each call is one
connection attempt and returns a fresh in-memory transport (a trio memory stream pair,
as :func:`mcpl_host.transports.memory.memory_transport_pair` builds). No threads and no
real time: under trio's autojump clock every wait is instant.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable

import trio
import trio.testing

from ..protocol.errors import TransportError
from ..transports import Transport
from ..transports.memory import StreamTransport
from ._trio_driver import Link, Listener
from .runner import BackgroundServer

__all__ = ["MemoryServer"]

_HostStream = trio.StapledStream[trio.testing.MemorySendStream, trio.testing.MemoryReceiveStream]


class _Attempt:
    """One call of the target, waiting for the server to take it or turn it away."""

    def __init__(self) -> None:
        self.decided = trio.Event()
        self.transport: Transport | None = None
        self.abandoned = False


class _MemoryLink:
    def __init__(self, peer: _HostStream, host: _HostStream) -> None:
        self._peer = peer
        self._host = host

    @property
    def stream(self) -> trio.abc.Stream:
        return self._peer

    async def hangup(self, *, abrupt: bool) -> None:
        if abrupt:
            # What a reset looks like from the host's side: its next read fails
            # (rather than reading end of file), and so does its next write.
            self._host.receive_stream.close()
        await self._peer.aclose()


class _MemoryListener:
    def __init__(self, on_refused: Callable[[], None]) -> None:
        self.refusals = 0
        self._on_refused = on_refused
        self._attempts: deque[_Attempt] = deque()
        self._arrived = trio.Event()
        self._open = True
        self._accepted = 0

    async def connect(self) -> Transport:
        """The target: one connection attempt.

        Raises :class:`~mcpl_host.TransportError` (``reason="connect-failed"``) when
        the script refuses it, or has ended or failed.
        """
        if not self._open:
            raise _refused("the scripted server takes no more connections")
        attempt = _Attempt()
        self._attempts.append(attempt)
        self._arrived.set()
        try:
            await attempt.decided.wait()
        except BaseException:
            # The host gave up on this attempt: the server must not wait on it.
            attempt.abandoned = True
            if attempt.transport is not None:
                await attempt.transport.aclose()
            raise
        if attempt.transport is None:
            raise _refused("the scripted server refused the connection")
        return attempt.transport

    async def accept(self) -> Link:
        while True:
            while not self._attempts:
                self._arrived = trio.Event()
                await self._arrived.wait()
            attempt = self._attempts.popleft()
            if attempt.abandoned:
                continue
            if self.refusals > 0:
                self.refusals -= 1
                self._refuse(attempt)
                continue
            self._accepted += 1
            host, peer = trio.testing.memory_stream_pair()
            attempt.transport = StreamTransport(host, f"scripted memory #{self._accepted}")
            attempt.decided.set()
            return _MemoryLink(peer, host)

    async def stop(self) -> None:
        self._open = False
        while self._attempts:
            attempt = self._attempts.popleft()
            if not attempt.abandoned:
                self._refuse(attempt)

    def _refuse(self, attempt: _Attempt) -> None:
        self._on_refused()
        attempt.decided.set()


def _refused(message: str) -> TransportError:
    return TransportError(message, reason="connect-failed")


class MemoryServer(BackgroundServer):
    """The script on in-memory streams; ``target`` opens one connection per call."""

    mode = "memory"

    async def _open_listener(self) -> Listener:
        listener = _MemoryListener(self._count_refused)
        self._target = listener.connect
        return listener
