"""What the server forgot: after a reconnect the new transport is asked again for the
resource subscriptions and the logging level the embedder set, before the rebound
requests; a failure to restore is logged and reported as an event, never raised."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import msgspec
import pytest
import trio
from structlog.testing import capture_logs

from mcpl_host import (
    ConfigurationError,
    Connection,
    Event,
    LimitExceeded,
    Reconnect,
    RequestError,
    RestoreFailed,
)
from mcpl_host.client.restore import SessionState

from ..driver.peer import Peer, PeerSupply

CAPS = {"resources": {"subscribe": True}, "logging": {}}
Json = Any


def line(id_: int, method: str, params: Json) -> bytes:
    """The request line the host writes (its members in the host's order)."""
    return msgspec.json.encode({"jsonrpc": "2.0", "id": id_, "method": method, "params": params})


async def answer_all(peer: Peer, refuse: dict[str, Json] | None = None) -> None:
    """Answer every request ``{}`` (or with an error, when its params are in ``refuse``),
    except ``resources/read``, which is left waiting."""
    while True:
        message = await peer.recv()
        if "id" not in message or message.get("method") == "resources/read":
            continue
        if refuse and message.get("params") in refuse.values():
            error = {"code": -32602, "message": "no such thing"}
            await peer.send({"jsonrpc": "2.0", "id": message["id"], "error": error})
        else:
            await peer.answer(message, {})


async def open_first(nursery: trio.Nursery, conn: Connection, supply: PeerSupply) -> Peer:
    """Start ``conn``; return its first peer once the handshake is over on both ends."""
    send, receive = trio.open_memory_channel[Peer](1)

    async def handshake() -> None:
        peer = await supply.next_peer()
        await peer.handshake(capabilities=CAPS)
        send.send_nowait(peer)

    nursery.start_soon(handshake)
    await nursery.start(conn.run)
    return await receive.receive()


@asynccontextmanager
async def answering(peer: Peer, refuse: dict[str, Json] | None = None) -> AsyncIterator[None]:
    """The peer answers (see answer_all) while the block runs, and stops after it."""
    async with trio.open_nursery() as nursery:
        nursery.start_soon(answer_all, peer, refuse)
        yield
        nursery.cancel_scope.cancel()


async def test_the_new_transport_is_asked_again_before_the_rebound_requests(
    autojump_clock: trio.abc.Clock,
) -> None:
    events: list[Event] = []
    supply = PeerSupply()
    conn = Connection(
        supply.factory, reconnect=Reconnect(initial=0.01, jitter=0.0), on_event=events.append
    )
    read: dict[str, Any] = {}

    async def read_a() -> None:
        read["result"] = await conn.read_resource("file:///a")

    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            first = await open_first(nursery, conn, supply)
            async with answering(first, {"x": {"uri": "file:///x"}}):
                await conn.subscribe_resource("file:///a")
                await conn.subscribe_resource("file:///b")
                with pytest.raises(RequestError):  # refused: the server has no such
                    await conn.subscribe_resource("file:///x")  # subscription to forget
                await conn.set_logging_level("debug")
                await conn.set_logging_level("warning")  # the last one set counts
                await conn.subscribe_resource("file:///c")
                await conn.subscribe_resource("file:///a")  # again: still one
                await conn.unsubscribe_resource("file:///b")  # not restored
                nursery.start_soon(read_a)  # in flight at the loss: rebound
                while not any(b"resources/read" in x for x in first.received):
                    await trio.sleep(0.001)
            await first.stream.aclose()

            second = await supply.next_peer()
            await second.handshake(capabilities=CAPS)
            lines = [await second.recv_line() for _ in range(4)]
            first_id = msgspec.json.decode(lines[0])["id"]
            assert lines == [
                line(first_id, "logging/setLevel", {"level": "warning"}),
                line(first_id + 1, "resources/subscribe", {"uri": "file:///a"}),
                line(first_id + 2, "resources/subscribe", {"uri": "file:///c"}),
                line(first_id + 3, "resources/read", {"uri": "file:///a"}),
            ]
            contents = {"contents": [{"uri": "file:///a", "text": "A"}]}
            await second.answer(msgspec.json.decode(lines[3]), contents)
            for restored in lines[:3]:
                await second.answer(msgspec.json.decode(restored), {})
            while "result" not in read:
                await trio.sleep(0.001)
            assert read["result"].contents[0].text == "A"

            # the unsubscribed and the refused are asked for on no later transport either
            await second.stream.aclose()
            third = await supply.next_peer()
            await third.handshake(capabilities=CAPS)
            assert [msgspec.json.decode(await third.recv_line())["params"] for _ in range(3)] == [
                {"level": "warning"},
                {"uri": "file:///a"},
                {"uri": "file:///c"},
            ]
            async with trio.open_nursery() as pinging:
                pinging.start_soon(conn.ping)
                await third.answer(await third.expect("ping"), {})  # nothing else was written
            await conn.aclose()
    assert not any(isinstance(e, RestoreFailed) for e in events)


async def test_a_restore_that_fails_is_logged_and_reported_and_the_connection_goes_on(
    autojump_clock: trio.abc.Clock,
) -> None:
    events: list[Event] = []
    supply = PeerSupply()
    with trio.fail_after(60), capture_logs() as logs:
        conn = Connection(
            supply.factory, reconnect=Reconnect(initial=0.01, jitter=0.0), on_event=events.append
        )
        async with trio.open_nursery() as nursery:
            first = await open_first(nursery, conn, supply)
            async with answering(first):
                await conn.set_logging_level("info")
                await conn.subscribe_resource("file:///gone")
                await conn.subscribe_resource("file:///kept")
            await first.stream.aclose()

            # the new server has no logging, and no longer has one of the resources
            second = await supply.next_peer()
            await second.handshake(capabilities=CAPS)
            level = await second.expect("logging/setLevel")
            await second.send(
                {
                    "jsonrpc": "2.0",
                    "id": level["id"],
                    "error": {"code": -32601, "message": "Method not found"},
                }
            )
            gone = await second.expect("resources/subscribe")
            assert gone["params"] == {"uri": "file:///gone"}
            await second.send(
                {
                    "jsonrpc": "2.0",
                    "id": gone["id"],
                    "error": {"code": -32002, "message": "Resource not found"},
                }
            )
            kept = await second.expect("resources/subscribe")
            await second.answer(kept, {})
            while sum(isinstance(e, RestoreFailed) for e in events) < 2:
                await trio.sleep(0.001)
            failed = [e for e in events if isinstance(e, RestoreFailed)]
            assert [(e.method, e.params) for e in failed] == [
                ("logging/setLevel", {"level": "info"}),
                ("resources/subscribe", {"uri": "file:///gone"}),
            ]
            assert [type(e.error) for e in failed] == [RequestError, RequestError]
            assert [e.error.code for e in failed if isinstance(e.error, RequestError)] == [
                -32601,
                -32002,
            ]
            async with trio.open_nursery() as pinging:  # the connection goes on
                pinging.start_soon(conn.ping)
                await second.answer(await second.expect("ping"), {})

            # what the server refused is forgotten; the rest is asked for again
            await second.stream.aclose()
            third = await supply.next_peer()
            await third.handshake(capabilities=CAPS)
            again = await third.expect("resources/subscribe")
            assert again["params"] == {"uri": "file:///kept"}
            await conn.aclose()
    warnings = [
        e for e in logs if e["event"] == "state not restored" and e["log_level"] == "warning"
    ]
    assert [(e["method"], e["log_level"]) for e in warnings] == [
        ("logging/setLevel", "warning"),
        ("resources/subscribe", "warning"),
    ]


async def test_a_transport_lost_while_restoring_is_asked_again_by_the_next(
    autojump_clock: trio.abc.Clock,
) -> None:
    events: list[Event] = []
    supply = PeerSupply()
    conn = Connection(
        supply.factory, reconnect=Reconnect(initial=0.01, jitter=0.0), on_event=events.append
    )
    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            first = await open_first(nursery, conn, supply)
            async with answering(first):
                await conn.subscribe_resource("file:///a")
            await first.stream.aclose()
            second = await supply.next_peer()
            await second.handshake(capabilities=CAPS)
            await second.expect("resources/subscribe")
            await second.stream.aclose()  # gone before answering
            third = await supply.next_peer()
            await third.handshake(capabilities=CAPS)
            assert (await third.expect("resources/subscribe"))["params"] == {"uri": "file:///a"}
            await conn.aclose()
    # the loss is reported as such (Disconnected), not as a failed restore
    assert not any(isinstance(e, RestoreFailed) for e in events)


async def test_subscriptions_are_bounded_and_past_the_bound_nothing_is_written() -> None:
    supply = PeerSupply()
    conn = Connection(supply.factory, max_subscriptions=2)
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            peer = await open_first(nursery, conn, supply)
            async with answering(peer):
                await conn.subscribe_resource("file:///a")
                await conn.subscribe_resource("file:///b")
                await conn.subscribe_resource("file:///a")  # already counted
                written = len(peer.received)
                with pytest.raises(LimitExceeded) as info:
                    await conn.subscribe_resource("file:///c")
                assert (info.value.limit, info.value.value) == ("max_subscriptions", 2)
                assert len(peer.received) == written
                await conn.unsubscribe_resource("file:///a")
                await conn.subscribe_resource("file:///c")
            await conn.aclose()
    subscribed = [
        msgspec.json.decode(x)["params"]["uri"] for x in peer.received if b"/subscribe" in x
    ]
    assert subscribed == ["file:///a", "file:///b", "file:///a", "file:///c"]
    with pytest.raises(ConfigurationError, match="max_subscriptions"):
        Connection(supply.factory, max_subscriptions=0)


def test_the_record_follows_the_embedders_latest_word() -> None:
    """The bookkeeping alone: answers that come after a newer call change nothing."""
    state = SessionState(max_subscriptions=3)
    early = state.subscribing("u:1")
    state.unsubscribing("u:1")  # while the subscribe waits for its answer
    state.subscribe_answered("u:1", early, accepted=True)
    assert state.subscriptions == ()

    first = state.subscribing("u:2")
    second = state.subscribing("u:2")  # again, before the first is answered
    state.subscribe_answered("u:2", first, accepted=True)
    assert state.subscriptions == ()  # the newer call decides
    state.subscribe_answered("u:2", second, accepted=True)
    refused = state.subscribing("u:3")
    state.subscribe_answered("u:3", refused, accepted=False)
    assert state.subscriptions == ("u:2",)

    state.level_set("debug")
    (level, sub) = state.restore()
    state.level_set("error")  # set again after the restore went out
    state.refused(level)  # the refusal of the older one forgets nothing newer
    state.refused(sub)
    assert (state.level, state.subscriptions) == ("error", ())
    assert [(r.method, r.params) for r in state.restore()] == [
        ("logging/setLevel", {"level": "error"})
    ]
