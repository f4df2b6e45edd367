"""The handshake as the driver runs it: bytes on the wire, typed failures, no hang."""

from __future__ import annotations

import msgspec
import pytest
import trio
import trio.testing
from structlog.testing import capture_logs

from mcpl_host import Connection, InitializeError, Mcpl, RequestTimeout, VersionError
from mcpl_host.events import Connected, Event
from mcpl_host.protocol.errors import TransportError
from mcpl_host.transports.memory import StreamTransport

from .peer import Peer, memory_connection


async def test_connect_writes_initialize_then_initialized() -> None:
    events: list[Event] = []
    conn, peer = memory_connection(on_event=events.append, versions=["2025-06-18", "2025-03-26"])
    with trio.fail_after(5):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(peer.handshake, "2025-03-26")
            async with conn:
                assert conn.protocol_version == "2025-03-26"
                assert conn.server_info == {"name": "scripted", "version": "1.0"}
                assert conn.instructions == "be nice"
                assert conn.server_capabilities == {"tools": {}}
                assert set(conn.timings_ms) == {"connect", "initialize", "total"}
    assert peer.received[0] == (
        b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18",'
        b'"capabilities":{},"clientInfo":{"name":"mcpl_host","version":"0.1.0"}}}'
    )
    assert peer.received[1] == b'{"jsonrpc":"2.0","method":"notifications/initialized"}'
    assert isinstance(events[0], Connected)
    assert events[0].protocol_version == "2025-03-26"


@pytest.mark.parametrize(
    "answer",
    [
        b'{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}',
        b'{"jsonrpc":"2.0","error":{"code":-32700,"message":"Parse error"}}',
    ],
)
async def test_id_less_error_fails_the_connect_at_once(answer: bytes) -> None:
    conn, peer = memory_connection(initialize_timeout=30)

    async def server() -> None:
        await peer.expect("initialize")
        await peer.send(answer)

    with trio.fail_after(2):  # far below the 30 s initialize timeout
        async with trio.open_nursery() as nursery:
            nursery.start_soon(server)
            with pytest.raises(InitializeError) as info:
                async with conn:
                    pytest.fail("connected")
    assert info.value.code == -32700
    assert info.value.server_message == "Parse error"
    assert not info.value.request_id_present


async def test_log_lines_and_ping_while_waiting_then_the_answer() -> None:
    conn, peer = memory_connection()

    async def server() -> None:
        init = await peer.expect("initialize")
        await peer.send(b"starting up (not JSON)")
        await peer.send(b'{"id":null,"error":{"code":1,"message":"a log line"}}')
        await peer.send(b'{"jsonrpc":"2.0","id":null,"method":"ping"}')
        assert await peer.recv_line() == b'{"jsonrpc":"2.0","id":null,"result":{}}'
        await peer.send(b'{"jsonrpc":"2.0","id":{"x":1},"method":"ping"}')  # ignored
        await peer.send(b'{"jsonrpc":"2.0","id":9,"method":"roots/list"}')  # ignored
        await peer.send(
            {"jsonrpc": "2.0", "id": init["id"], "result": {"protocolVersion": "2025-11-25"}}
        )
        await peer.expect("notifications/initialized")

    with capture_logs() as logs, trio.fail_after(5):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(server)
            async with conn:
                assert conn.protocol_version == "2025-11-25"
    outcomes = [e.get("outcome") for e in logs if e["event"] == "message"]
    # The first is the refused server/discover's answer (tests/driver/peer.py).
    assert outcomes[:6] == [
        "response-matched",
        "ignored",
        "response-unmatched",
        "dispatched",
        "ignored",
        "ignored",
    ]


async def test_handshake_timeout_is_typed_and_closes(autojump_clock: trio.abc.Clock) -> None:
    conn, peer = memory_connection(initialize_timeout=30)

    async def server() -> None:
        await peer.expect("initialize")
        with pytest.raises(EOFError):
            await peer.recv_line()  # the host hangs up after the timeout

    async with trio.open_nursery() as nursery:
        nursery.start_soon(server)
        start = trio.current_time()
        with pytest.raises(RequestTimeout) as info:
            async with conn:
                pass
        assert trio.current_time() - start == pytest.approx(30)
    assert info.value.method == "initialize"


async def test_version_outside_allowlist_fails_permanently() -> None:
    conn, peer = memory_connection(versions=["2025-11-25"])

    async def server() -> None:
        init = await peer.expect("initialize")
        await peer.send(
            {"jsonrpc": "2.0", "id": init["id"], "result": {"protocolVersion": "2024-11-05"}}
        )

    with trio.fail_after(5):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(server)
            with pytest.raises(VersionError) as info:
                async with conn:
                    pass
    assert info.value.permanent
    assert info.value.answered == "2024-11-05"


async def test_eof_during_handshake_fails_at_once() -> None:
    conn, peer = memory_connection()

    async def server() -> None:
        await peer.expect("initialize")
        await peer.stream.aclose()

    with trio.fail_after(5):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(server)
            with pytest.raises(TransportError, match="during initialize"):
                async with conn:
                    pass


async def test_initialize_error_with_server_data() -> None:
    conn, peer = memory_connection()

    async def server() -> None:
        init = await peer.expect("initialize")
        await peer.send(
            {
                "jsonrpc": "2.0",
                "id": init["id"],
                "error": {
                    "code": -32602,
                    "message": "Unsupported protocol version",
                    "data": {"supported": ["2024-11-05"]},
                },
            }
        )

    with trio.fail_after(5):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(server)
            with pytest.raises(InitializeError) as info:
                async with conn:
                    pass
    assert info.value.code == -32602
    assert info.value.data == {"supported": ["2024-11-05"]}


@pytest.mark.parametrize(
    ("version", "after", "answer"),
    [
        # A ping in the same write as the answer (the seam: the connecting task has not yet
        # written notifications/initialized when the reader gets to it).
        ("2025-11-25", b'{"jsonrpc":"2.0","id":null,"method":"ping"}', b'"result":{}'),
        ("2025-11-25", b'{"jsonrpc":"2.0","id":"p","method":"ping"}', b'"result":{}'),
        # A batch is judged by the negotiated revision: answered on 2025-03-26 ...
        ("2025-03-26", b'[{"jsonrpc":"2.0","id":7,"method":"ping"}]', b'[{"jsonrpc"'),
        # ... refused as a whole on 2025-11-25.
        ("2025-11-25", b'[{"jsonrpc":"2.0","id":7,"method":"ping"}]', b'"code":-32600'),
    ],
)
async def test_a_message_in_the_same_write_as_the_answer_meets_the_negotiated_revision(
    version: str, after: bytes, answer: bytes
) -> None:
    conn, peer = memory_connection()

    async def server() -> None:
        init = await peer.expect("initialize")
        result = {"protocolVersion": version, "capabilities": {}}
        line = b'{"jsonrpc":"2.0","id":%d,"result":%s}' % (init["id"], msgspec.json.encode(result))
        await peer.send(line + b"\n" + after + b"\n")
        lines = {await peer.recv_line(5), await peer.recv_line(5)}
        assert b'{"jsonrpc":"2.0","method":"notifications/initialized"}' in lines
        (reply,) = lines - {b'{"jsonrpc":"2.0","method":"notifications/initialized"}'}
        assert answer in reply

    with capture_logs() as logs, trio.fail_after(5):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(server)
            async with conn:
                pass
    assert not [e for e in logs if e["log_level"] in ("error", "critical")]


class _DiesAfterInitialized(trio.abc.Stream):
    """The host's end of a memory stream whose server hangs up the moment
    notifications/initialized is written, and lets the host's reader see the end of the
    stream before the write returns (the order a busy machine can produce)."""

    def __init__(self, inner: trio.abc.Stream, peer: trio.abc.Stream) -> None:
        self.inner, self.peer = inner, peer

    async def send_all(self, data: bytes | bytearray | memoryview) -> None:
        await self.inner.send_all(data)
        if b"notifications/initialized" in bytes(data):
            await self.peer.aclose()
            await trio.testing.wait_all_tasks_blocked()

    async def wait_send_all_might_not_block(self) -> None:
        await self.inner.wait_send_all_might_not_block()

    async def receive_some(self, max_bytes: int | None = None) -> bytes | bytearray:
        return await self.inner.receive_some(max_bytes)

    async def aclose(self) -> None:
        await self.inner.aclose()


async def test_a_transport_lost_right_after_initialized_is_a_failed_connect() -> None:
    """Not a connection that was up: no Connected event, no MCPL grant left pending on
    the dead transport, a typed error at once."""
    events: list[Event] = []
    host, peer_stream = trio.testing.memory_stream_pair()
    peer = Peer(peer_stream)

    async def opener() -> StreamTransport:
        return StreamTransport(_DiesAfterInitialized(host, peer_stream))

    conn = Connection(opener, on_event=events.append, mcpl=Mcpl(grants=("pushEvents",)))
    with trio.fail_after(5):
        async with trio.open_nursery() as nursery:

            async def server() -> None:  # answers initialize; the wrapper hangs up
                init = await peer.expect("initialize")
                result = {
                    "protocolVersion": "2024-11-05",
                    "capabilities": {"experimental": {"mcpl": {}}},
                }
                await peer.send({"jsonrpc": "2.0", "id": init["id"], "result": result})

            nursery.start_soon(server)
            with pytest.raises(TransportError) as info:
                async with conn:
                    pytest.fail("connected")
    assert info.value.reason == "eof"
    assert not [e for e in events if isinstance(e, Connected)]
    assert conn._outbound.pending == {}


async def test_a_request_after_a_refused_answer_is_ignored_not_an_internal_error() -> None:
    conn, peer = memory_connection(versions=["2025-11-25"])

    async def server() -> None:
        init = await peer.expect("initialize")
        refused = {"jsonrpc": "2.0", "id": init["id"], "result": {"protocolVersion": "1999-01-01"}}
        then = b'{"jsonrpc":"2.0","id":5,"method":"roots/list"}'
        await peer.send(msgspec.json.encode(refused) + b"\n" + then)

    with capture_logs() as logs, trio.fail_after(5):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(server)
            with pytest.raises(VersionError):
                async with conn:
                    pytest.fail("connected")
    assert not [e for e in logs if e["log_level"] in ("error", "critical")]
    ignored = [e for e in logs if e.get("reason") == "the handshake failed"]
    assert [e["method"] for e in ignored] == ["roots/list"]
