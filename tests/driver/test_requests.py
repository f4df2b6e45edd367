"""Outbound requests: ids, answers, errors, timeouts, cancellation and progress."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest
import trio
import trio.testing
from structlog.testing import capture_logs

from mcpl_host import (
    Closed,
    Connection,
    ConnectionClosed,
    Disconnected,
    Event,
    ProtocolError,
    RequestError,
    RequestTimeout,
)
from mcpl_host.transports.memory import StreamTransport

from .conftest import connected
from .peer import Peer, memory_connection


async def test_round_trip_and_increasing_ids() -> None:
    with trio.fail_after(5):
        async with connected() as (conn, peer, nursery):

            async def server() -> None:
                for _ in range(3):
                    request = await peer.recv()
                    await peer.answer(request, {"echo": request["params"], "id": request["id"]})

            nursery.start_soon(server)
            results = [await conn.request("tools/call", {"name": "echo", "n": n}) for n in range(3)]
    assert [r["id"] for r in results] == [2, 3, 4]  # 1 was initialize
    assert results[1]["echo"] == {"name": "echo", "n": 1}
    assert peer.received[2] == (
        b'{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","n":0}}'
    )


async def test_request_without_params_omits_them_and_result_can_stay_raw() -> None:
    with trio.fail_after(5):
        async with connected() as (conn, peer, nursery):

            async def server() -> None:
                request = await peer.recv()
                await peer.answer(request, {"tools": []})

            nursery.start_soon(server)
            raw = await conn.request("tools/list", result_type=msgspec.Raw)
    assert bytes(raw) == b'{"tools":[]}'
    assert peer.received[2] == b'{"jsonrpc":"2.0","id":2,"method":"tools/list"}'


async def test_typed_result_and_mismatch_is_a_protocol_error() -> None:
    class Listing(msgspec.Struct):
        tools: list[str]

    with trio.fail_after(5):
        async with connected() as (conn, peer, nursery):

            async def server() -> None:
                await peer.answer(await peer.recv(), {"tools": ["a"]})
                await peer.answer(await peer.recv(), {"tools": 5})

            nursery.start_soon(server)
            assert await conn.request("tools/list", result_type=Listing) == Listing(["a"])
            with pytest.raises(ProtocolError, match="does not fit"):
                await conn.request("tools/list", result_type=Listing)


async def test_error_answer_raises_with_code_message_and_data() -> None:
    with trio.fail_after(5):
        async with connected(secrets=("canary-abcdef12",)) as (conn, peer, nursery):

            async def server() -> None:
                request = await peer.recv()
                await peer.send(
                    {
                        "jsonrpc": "2.0",
                        "id": request["id"],
                        "error": {
                            "code": -32602,
                            "message": "Unknown tool canary-abcdef12\nforged",
                            "data": {"tool": "nope"},
                        },
                    }
                )

            nursery.start_soon(server)
            with pytest.raises(RequestError) as info:
                await conn.request("tools/call", {"name": "nope"})
    assert info.value.code == -32602
    assert info.value.data == {"tool": "nope"}
    assert info.value.error_message == "Unknown tool ***\\u000aforged"
    assert "canary" not in str(info.value)


@pytest.mark.parametrize(
    "error",
    [{"message": "no code given"}, {"code": "E42", "message": "no code given"}],
)
async def test_an_error_without_a_code_says_so_instead_of_inventing_one(error: Any) -> None:
    with trio.fail_after(5):
        async with connected() as (conn, peer, nursery):

            async def server() -> None:
                request = await peer.recv()
                await peer.send({"jsonrpc": "2.0", "id": request["id"], "error": error})

            nursery.start_soon(server)
            with pytest.raises(RequestError) as info:
                await conn.request("tools/call", {"name": "x"})
    assert info.value.code is None
    assert info.value.error_message == "no code given"
    assert str(info.value) == "[custom] no code given (no code)"


async def test_a_result_beside_error_null_is_the_result() -> None:
    with trio.fail_after(5):
        async with connected() as (conn, peer, nursery):

            async def server() -> None:
                request = await peer.recv()
                await peer.send(
                    b'{"jsonrpc":"2.0","id":%d,"result":{"tools":[]},"error":null}' % request["id"]
                )

            nursery.start_soon(server)
            assert await conn.request("tools/list") == {"tools": []}


async def test_answer_with_neither_result_nor_error() -> None:
    with trio.fail_after(5):
        async with connected() as (conn, peer, nursery):

            async def server() -> None:
                request = await peer.recv()
                await peer.send({"jsonrpc": "2.0", "id": request["id"]})

            nursery.start_soon(server)
            with pytest.raises(ProtocolError, match="neither result nor error"):
                await conn.request("ping")


async def test_timeout_sends_cancelled_and_late_answer_is_quiet(
    autojump_clock: trio.abc.Clock,
) -> None:
    async with connected(request_timeout=60) as (conn, peer, _nursery):
        start = trio.current_time()
        with pytest.raises(RequestTimeout) as info:
            await conn.request("tools/call", {"name": "slow"})
        assert trio.current_time() - start == pytest.approx(60)
        assert info.value.method == "tools/call"
        request = await peer.recv()
        cancel = await peer.recv()
        assert cancel == {
            "jsonrpc": "2.0",
            "method": "notifications/cancelled",
            "params": {"requestId": request["id"], "reason": "timeout"},
        }
        with capture_logs() as logs:
            await peer.answer(request, {"late": True})
            await trio.sleep(1)
    late = [e for e in logs if e.get("outcome") == "response-unmatched"]
    assert late
    assert late[0]["log_level"] == "debug"
    assert "late answer" in late[0]["reason"]


async def test_per_call_timeout_override(autojump_clock: trio.abc.Clock) -> None:
    async with connected(request_timeout=60) as (conn, _peer, _nursery):
        start = trio.current_time()
        with pytest.raises(RequestTimeout):
            await conn.request("ping", timeout=2.5)
        assert trio.current_time() - start == pytest.approx(2.5)


async def test_caller_cancellation_sends_cancelled(autojump_clock: trio.abc.Clock) -> None:
    async with connected() as (conn, peer, _nursery):
        with trio.move_on_after(5):
            await conn.request("tools/call", {"name": "slow"})
        request = await peer.recv()
        cancel = await peer.recv()
        assert cancel["method"] == "notifications/cancelled"
        assert cancel["params"] == {"requestId": request["id"], "reason": "cancelled by the caller"}


async def test_progress_reaches_callback_and_resets_timeout_up_to_hard_max(
    autojump_clock: trio.abc.Clock,
) -> None:
    seen: list[tuple[float, float | None, str | None]] = []
    async with connected() as (conn, peer, nursery):

        async def server() -> None:
            request = await peer.recv()
            token = request["params"]["_meta"]["progressToken"]
            for step in range(1, 100):
                await trio.sleep(8)  # each gap is inside the 10 s timeout
                await peer.send(
                    {
                        "jsonrpc": "2.0",
                        "method": "notifications/progress",
                        "params": {
                            "progressToken": token,
                            "progress": step,
                            "total": 100,
                            "message": f"step {step}",
                        },
                    }
                )

        nursery.start_soon(server)
        start = trio.current_time()
        with pytest.raises(RequestTimeout):
            await conn.request(
                "tools/call",
                {"name": "long"},
                timeout=10,
                on_progress=lambda p, t, m: seen.append((p, t, m)),
                progress_resets_timeout=True,
                max_timeout=30,
            )
        assert trio.current_time() - start == pytest.approx(30)  # the hard maximum
    assert seen[:2] == [(1, 100, "step 1"), (2, 100, "step 2")]
    assert len(seen) == 3  # at 8, 16, 24 s; the 32 s one came after the hard maximum


async def test_progress_without_reset_keeps_the_deadline(autojump_clock: trio.abc.Clock) -> None:
    seen: list[float] = []
    async with connected() as (conn, peer, nursery):

        async def server() -> None:
            request = await peer.recv()
            token = request["params"]["_meta"]["progressToken"]
            await trio.sleep(5)
            await peer.send(
                {
                    "jsonrpc": "2.0",
                    "method": "notifications/progress",
                    "params": {"progressToken": token, "progress": 0.5},
                }
            )

        nursery.start_soon(server)
        start = trio.current_time()
        with pytest.raises(RequestTimeout):
            await conn.request("x", {}, timeout=10, on_progress=lambda p, t, m: seen.append(p))
        assert trio.current_time() - start == pytest.approx(10)
    assert seen == [0.5]


async def test_eof_fails_a_written_request_with_outcome_unknown() -> None:
    with trio.fail_after(5):
        async with connected() as (conn, peer, nursery):

            async def server() -> None:
                await peer.recv()
                await peer.stream.aclose()

            nursery.start_soon(server)
            with pytest.raises(ConnectionClosed) as info:
                await conn.request("tools/call", {"name": "x"})
            assert info.value.outcome_unknown
            assert info.value.reason == "eof"
            with pytest.raises(ConnectionClosed) as after:
                await conn.request("ping")
            assert not after.value.outcome_unknown


async def test_unencodable_params_raise_type_error_before_writing() -> None:
    with trio.fail_after(5):
        async with connected() as (conn, peer, _nursery):
            with pytest.raises(TypeError):
                await conn.request("x", {"bad": object()})
    assert len(peer.received) == 2


async def test_body_exception_propagates_bare_not_grouped() -> None:
    conn, peer = memory_connection()
    with trio.fail_after(5):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(peer.handshake)
            with pytest.raises(KeyError):
                async with conn:
                    raise KeyError("mine")


async def test_run_in_a_callers_nursery() -> None:
    conn, peer = memory_connection()
    with trio.fail_after(5):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(peer.handshake)
            started = await nursery.start(conn.run)
            assert started is conn
            assert conn.protocol_version == "2025-11-25"
            await conn.aclose()
            await conn.aclose()  # idempotent
        with pytest.raises(ConnectionClosed):
            await conn.request("ping")


class _WriteFails(trio.abc.Stream):
    """A stream whose writes fail after the handshake; reads come from the peer."""

    def __init__(self, inner: trio.abc.Stream) -> None:
        self.inner = inner
        self.broken = False

    async def send_all(self, data: bytes | bytearray | memoryview) -> None:
        if self.broken:
            raise trio.BrokenResourceError("pipe gone")
        await self.inner.send_all(data)

    async def wait_send_all_might_not_block(self) -> None:
        await self.inner.wait_send_all_might_not_block()

    async def receive_some(self, max_bytes: int | None = None) -> bytes | bytearray:
        return await self.inner.receive_some(max_bytes)

    async def aclose(self) -> None:
        await self.inner.aclose()


async def test_a_failed_write_ends_the_transport_and_is_never_silent() -> None:

    host, peer_end = trio.testing.memory_stream_pair()
    stream = _WriteFails(host)
    peer = Peer(peer_end)
    events: list[Event] = []

    async def opener() -> StreamTransport:
        return StreamTransport(stream)

    with trio.fail_after(5):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(peer.handshake)
            async with Connection(opener, on_event=events.append) as conn:
                stream.broken = True
                with pytest.raises(ConnectionClosed) as info:
                    await conn.request("ping")
                assert info.value.reason == "write-failed"
                assert not info.value.outcome_unknown
                while not any(isinstance(e, Closed) for e in events):
                    await trio.sleep(0.01)
    assert Disconnected(1, "write-failed") in events


async def test_a_raising_event_callback_never_breaks_the_connection() -> None:
    def raising(event: Event) -> None:
        raise RuntimeError("embedder bug")

    conn, peer = memory_connection(on_event=raising)
    with capture_logs() as logs, trio.fail_after(5):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(peer.handshake)
            async with conn:
                await peer.send({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
                await peer.send({"jsonrpc": "2.0", "id": 1, "method": "ping"})
                assert await peer.recv() == {"jsonrpc": "2.0", "id": 1, "result": {}}
    assert [e["kind"] for e in logs if e["event"] == "event callback failed"][:2] == [
        "Connected",
        "ListChanged",
    ]


async def test_an_array_answer_the_revision_refuses_fails_its_request_at_once() -> None:
    """On 2025-06-18 and later an array is refused whole (one -32600, id null) and none of
    its entries is taken: a request it carried the answer to fails at once with a
    ProtocolError instead of waiting for its timeout."""
    with trio.fail_after(5):
        async with connected("2025-11-25", request_timeout=60) as (conn, peer, nursery):

            async def server() -> None:
                request = await peer.recv()
                await peer.send([{"jsonrpc": "2.0", "id": request["id"], "result": {}}])

            nursery.start_soon(server)
            with pytest.raises(
                ProtocolError, match=r"batch was refused: .*does not allow JSON-RPC batches"
            ):
                await conn.request("tools/call", {"name": "x"})
            refusal = await peer.recv()
            assert refusal["id"] is None
            assert refusal["error"]["code"] == -32600
