"""An in-memory transport: a trio memory stream pair, for tests and scripted peers."""

from __future__ import annotations

import trio
import trio.testing

__all__ = ["StreamTransport", "memory_transport_pair"]


class StreamTransport:
    """Any trio byte stream as a transport; closing it closes the stream."""

    def __init__(self, stream: trio.abc.Stream, description: str = "memory") -> None:
        self.stream = stream
        self.description = description
        self._closed = False

    async def aclose(self) -> None:
        if self._closed:
            return
        self._closed = True
        with trio.CancelScope(shield=True):
            await self.stream.aclose()


def memory_transport_pair(description: str = "memory") -> tuple[StreamTransport, trio.abc.Stream]:
    """(the host's transport, the peer's end of the same in-memory byte stream)."""
    host, peer = trio.testing.memory_stream_pair()
    return StreamTransport(host, description), peer
