"""Host-to-server MCPL methods are sent only if granted (MCPL §5.3): a method the grant in
force lacks is refused locally with CapabilityDenied and nothing is written; a granted
one is bound to the transport whose grant allowed it."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest
import trio

from mcpl_host import (
    CapabilityDenied,
    Connection,
    ConnectionClosed,
    Event,
    Mcpl,
    McplHostError,
    Reconnect,
)

from ..driver.peer import PeerSupply, memory_connection
from .test_connection import accept, grant_settled, mcpl_handshake

TREE = {"version": "0.5", "channels": True, "pushEvents": True}
PUBLISH = {"conversationId": "c-1", "content": [{"type": "text", "text": "hi"}]}


async def unanswered(conn: Connection, method: str, params: Any = msgspec.UNSET) -> None:
    """A request the test reads on the wire and never answers (closing ends it)."""
    with pytest.raises(ConnectionClosed):
        await conn.request(method, params)


async def test_a_method_the_grant_lacks_is_refused_and_nothing_is_written() -> None:
    events: list[Event] = []
    conn, peer = memory_connection(mcpl=Mcpl(grants=("channels.register",)), on_event=events.append)
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(conn.run)
            update = await mcpl_handshake(peer, TREE)  # initialize is id 1, the update 2
            # before the receipt nothing is granted, channels.register included
            with pytest.raises(CapabilityDenied) as before:
                await conn.request("channels/list")
            assert before.value.capabilities == ("channels.register",)
            await accept(peer, update)
            await grant_settled(events)
            assert conn.mcpl_grant == {"channels.register"}

            with pytest.raises(CapabilityDenied) as denied:
                await conn.request("channels/publish", PUBLISH)
            error = denied.value
            assert isinstance(error, McplHostError)
            assert (error.method, error.capabilities, error.capability) == (
                "channels/publish",
                ("channels.publish",),
                "channels.publish",
            )
            assert error.server == "custom"
            assert str(error) == (
                "[custom] channels/publish is not granted: it needs channels.publish"
            )
            with pytest.raises(CapabilityDenied) as typing:
                await conn.notify("channels/typing", {"conversationId": "c-1"})
            assert typing.value.capabilities == ("channels.typing",)
            with pytest.raises(CapabilityDenied) as hook:
                await conn.request("context/beforeInference", {})
            assert len(hook.value.capabilities) == 4  # any one of its leaves would do

            # a granted method goes out, and it is the next line on the wire: the refused
            # ones wrote nothing and took no id
            nursery.start_soon(unanswered, conn, "channels/list")
            assert await peer.recv_line() == b'{"jsonrpc":"2.0","id":3,"method":"channels/list"}'
            assert len(peer.received) == 4  # initialize, initialized, the update, this
            # ungated methods are not MCPL's to refuse
            nursery.start_soon(unanswered, conn, "state/rollback", {"featureSet": "f"})
            assert (await peer.recv())["method"] == "state/rollback"
            await conn.aclose()


async def test_without_mcpl_the_names_are_plain_mcp_methods() -> None:
    """A connection made without ``mcpl`` does not speak MCPL: nothing is gated."""
    conn, peer = memory_connection()
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(peer.handshake)
            async with conn:
                nursery.start_soon(unanswered, conn, "channels/publish", PUBLISH)
                assert (await peer.recv())["method"] == "channels/publish"
            nursery.cancel_scope.cancel()


async def test_a_granted_request_never_moves_to_a_transport_whose_grant_is_not_settled(
    autojump_clock: trio.abc.Clock,
) -> None:
    events: list[Event] = []
    supply = PeerSupply()
    conn = Connection(
        supply.factory,
        mcpl=Mcpl(grants=("channels.*",)),
        on_event=events.append,
        reconnect=Reconnect(initial=0.01, jitter=0.0),
    )
    outcome: dict[str, Any] = {}

    async def listing() -> None:
        try:
            outcome["result"] = await conn.request("channels/list")
        except McplHostError as exc:
            outcome["error"] = exc

    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(conn.run)
            first = await supply.next_peer()
            await accept(first, await mcpl_handshake(first, TREE))
            await grant_settled(events)
            nursery.start_soon(listing)
            await first.expect("channels/list")  # written, unanswered; a list is safe
            await first.stream.aclose()  # to repeat, but not on another grant

            second = await supply.next_peer()
            update = await mcpl_handshake(second, TREE)
            error = outcome["error"]
            assert isinstance(error, ConnectionClosed)
            assert error.outcome_unknown
            # the new transport's grant is not settled: refused, not queued
            with pytest.raises(CapabilityDenied):
                await conn.request("channels/list")
            await accept(second, update)
            await grant_settled(events, 2)
            nursery.start_soon(unanswered, conn, "channels/list")
            assert (await second.recv())["method"] == "channels/list"
            assert all(b"channels/list" not in line for line in second.received[:-1])
            await conn.aclose()
