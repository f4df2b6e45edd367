"""A scripted MCP server for driver tests: the peer end of an in-memory stream."""

from __future__ import annotations

import os
from typing import Any, TypeVar

import msgspec
import trio
import trio.lowlevel

from mcpl_host import Connection, TransportError
from mcpl_host.protocol.framing import LineDecoder
from mcpl_host.transports._pipes import PipeStream
from mcpl_host.transports.memory import StreamTransport, memory_transport_pair

Json = Any

# Long enough for any host step a driver test waits for (its backoffs and timeouts are
# shorter), short enough that a missing line fails the test quickly.
RECV_TIMEOUT = 120.0


class Peer:
    """Reads the host's lines as JSON, writes whatever a test says (raw bytes included)."""

    def __init__(self, stream: trio.abc.Stream) -> None:
        self.stream = stream
        self._framer = LineDecoder()
        self._lines: list[bytes] = []
        self.received: list[bytes] = []  # every line the host wrote, in order

    async def recv_line(self, timeout: float = RECV_TIMEOUT) -> bytes:
        """The host's next line; fails (TooSlowError) if none comes within ``timeout``
        seconds of the test's clock, so a host that never writes fails the test at once
        under an autojump clock instead of spinning or hanging."""
        with trio.fail_after(timeout):
            while not self._lines:
                chunk = await self.stream.receive_some(65536)
                if not chunk:
                    raise EOFError("the host closed the stream")
                self._lines += [x for x in self._framer.feed(chunk) if isinstance(x, bytes)]
        line = self._lines.pop(0)
        self.received.append(line)
        return line

    async def recv(self, timeout: float = RECV_TIMEOUT) -> Json:
        return msgspec.json.decode(await self.recv_line(timeout))

    async def send(self, message: Json | bytes) -> None:
        data = message if isinstance(message, bytes) else msgspec.json.encode(message)
        await self.stream.send_all(data if data.endswith(b"\n") else data + b"\n")

    async def expect(self, method: str) -> Json:
        message = await self.recv()
        if method == "initialize" and message.get("method") == "server/discover":
            # A handshake-era server knows no server/discover: it refuses it, as real
            # ones do, and the host falls back to initialize.
            await self.refuse_discover(message)
            message = await self.recv()
        assert message.get("method") == method, message
        return message

    async def refuse_discover(self, discover: Json) -> None:
        await self.send(
            {
                "jsonrpc": "2.0",
                "id": discover["id"],
                "error": {"code": -32601, "message": "Method not found"},
            }
        )

    async def handshake(
        self, version: str = "2025-11-25", capabilities: Json | None = None
    ) -> Json:
        """Answer initialize and take notifications/initialized; return the initialize request."""
        init = await self.expect("initialize")
        await self.send(
            {
                "jsonrpc": "2.0",
                "id": init["id"],
                "result": {
                    "protocolVersion": version,
                    "capabilities": capabilities or {"tools": {}},
                    "serverInfo": {"name": "scripted", "version": "1.0"},
                    "instructions": "be nice",
                },
            }
        )
        await self.expect("notifications/initialized")
        return init

    async def discover(
        self,
        versions: list[str] | None = None,
        capabilities: Json | None = None,
        server_info: Json | None = None,
    ) -> Json:
        """Answer server/discover as a 2026-07-28 server; return the discover request."""
        request = await self.expect("server/discover")
        await self.answer(
            request,
            {
                "resultType": "complete",
                "supportedVersions": versions or ["2026-07-28"],
                "capabilities": capabilities or {"tools": {}},
                "instructions": "be stateless",
                "ttlMs": 0,
                "cacheScope": "public",
                "_meta": {
                    "io.modelcontextprotocol/serverInfo": server_info
                    or {"name": "stateless", "version": "2.0"}
                },
            },
        )
        return request

    async def answer(self, request: Json, result: Json) -> None:
        await self.send({"jsonrpc": "2.0", "id": request["id"], "result": result})


def memory_connection(**kwargs: Any) -> tuple[Connection, Peer]:
    """A Connection over an in-memory stream, and the scripted peer on its other end."""
    transport, peer_stream = memory_transport_pair()

    async def opener() -> Any:
        return transport

    return Connection(opener, **kwargs), Peer(peer_stream)


S = TypeVar("S", bound=PipeStream)


def pipe_pair(stream_type: type[S] = PipeStream) -> tuple[S, Peer]:  # type: ignore[assignment]
    """The host's stream over two real pipes (the stdio stream without a process: one
    its callers may read themselves), and the scripted peer on their other ends."""
    to_peer_r, to_peer_w = os.pipe()
    to_host_r, to_host_w = os.pipe()
    host = stream_type(trio.lowlevel.FdStream(to_peer_w), trio.lowlevel.FdStream(to_host_r))
    peer = PipeStream(trio.lowlevel.FdStream(to_host_w), trio.lowlevel.FdStream(to_peer_r))
    return host, Peer(peer)


class PeerSupply:
    """A transport factory that makes a fresh in-memory pair (or pair of pipes) per
    connect attempt.

    ``refuse`` connect attempts fail first (TransportError), then each attempt's peer end
    is handed to the test through :meth:`next_peer`.
    """

    def __init__(self, refuse: int = 0, *, pipes: bool = False) -> None:
        self.refuse = refuse
        self.pipes = pipes  # real pipes (callers may read them) rather than memory
        self.attempts = 0
        self.peers: list[Peer] = []
        self._handshaken = trio.Event()
        self._send, self._receive = trio.open_memory_channel[Peer](16)

    async def factory(self) -> Any:
        self.attempts += 1
        if self.refuse > 0:
            self.refuse -= 1
            raise TransportError("refused by the test", reason="connect-failed")
        if self.pipes:
            host, peer = pipe_pair()
            self._send.send_nowait(peer)
            return StreamTransport(host, "pipes")
        transport, peer_stream = memory_transport_pair()
        self._send.send_nowait(Peer(peer_stream))
        return transport

    async def next_peer(self) -> Peer:
        return await self._receive.receive()

    async def handshake_next(self, version: str = "2025-11-25") -> None:
        """Take the next connection and run the handshake on it (start it as a task
        before the host connects: the host's connect is what makes the peer)."""
        peer = await self.next_peer()
        await peer.handshake(version)
        self.peers.append(peer)
        self._handshaken.set()

    async def handshaken(self, index: int) -> Peer:
        """The ``index``-th peer, once handshake_next has finished with it."""
        while len(self.peers) <= index:
            await self._handshaken.wait()
            self._handshaken = trio.Event()
        return self.peers[index]
