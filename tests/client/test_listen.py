"""Subscriptions on 2026-07-28: the one subscriptions/listen a connection keeps open, its
acknowledgement, notifications demultiplexed by subscription id, re-issued when the set
changes, its graceful ends (a result, the server's notifications/cancelled), re-listened
after a reconnect; over a scripted stateless peer."""

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
    ListChanged,
    Reconnect,
    RequestError,
    ResourceUpdated,
    Subscriptions,
)
from mcpl_host.protocol.subscriptions import SUBSCRIPTION_ID

from ..driver.peer import Peer, PeerSupply, memory_connection

Json = Any
R5 = "2026-07-28"
ALL_LISTS = {
    "tools": {"listChanged": True},
    "prompts": {"listChanged": True},
    "resources": {"listChanged": True, "subscribe": True},
}


def meta_of(conn: Connection) -> Json:
    return {
        "io.modelcontextprotocol/protocolVersion": R5,
        "io.modelcontextprotocol/clientCapabilities": conn.client_capabilities,
        "io.modelcontextprotocol/clientInfo": conn.client_info,
    }


def listen_line(conn: Connection, id_: int, notifications: Json) -> bytes:
    """The listen request's line, byte for byte as the host writes it."""
    params = {"notifications": notifications, "_meta": meta_of(conn)}
    return msgspec.json.encode(
        {"jsonrpc": "2.0", "id": id_, "method": "subscriptions/listen", "params": params}
    )


def note(method: str, sid: Any, **params: Any) -> Json:
    if sid is not None:
        params["_meta"] = {SUBSCRIPTION_ID: sid}
    return {"jsonrpc": "2.0", "method": method, "params": params}


def ack(sid: int, notifications: Json) -> Json:
    return note("notifications/subscriptions/acknowledged", sid, notifications=notifications)


@asynccontextmanager
async def stateless(
    capabilities: Json, **kwargs: Any
) -> AsyncIterator[tuple[Connection, Peer, list[Event]]]:
    events: list[Event] = []
    conn, peer = memory_connection(on_event=events.append, **kwargs)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(peer.discover, None, capabilities)
        async with conn:
            assert conn.protocol_version == R5
            yield conn, peer, events
        nursery.cancel_scope.cancel()


async def until(predicate: Any) -> None:
    while not predicate():
        await trio.sleep(0.001)


async def test_the_listen_opens_at_connect_and_delivers_what_the_server_acknowledged() -> None:
    with trio.fail_after(10):
        async with stateless(ALL_LISTS) as (conn, peer, events):
            assert await peer.recv_line() == listen_line(
                conn,
                2,
                {
                    "toolsListChanged": True,
                    "promptsListChanged": True,
                    "resourcesListChanged": True,
                },
            )
            assert conn.acknowledged_subscriptions is None  # not acknowledged yet
            # Before its acknowledgement nothing it carries is in force.
            await peer.send(note("notifications/tools/list_changed", 2))
            # The server honours tools and prompts only.
            await peer.send(ack(2, {"toolsListChanged": True, "promptsListChanged": True}))
            await until(lambda: conn.acknowledged_subscriptions is not None)
            assert conn.acknowledged_subscriptions == Subscriptions(
                tools_list_changed=True, prompts_list_changed=True
            )

            async def list_tools_answered() -> None:
                listing = await peer.recv()
                assert listing["method"] == "tools/list"
                await peer.answer(listing, {"tools": [{"name": "t", "inputSchema": {}}]})

            async with trio.open_nursery() as nursery:
                nursery.start_soon(list_tools_answered)
                assert [t.name for t in await conn.list_tools()] == ["t"]
            assert [t.name for t in await conn.list_tools()] == ["t"]  # cached

            with capture_logs() as logs:
                await peer.send(note("notifications/resources/list_changed", 2))  # not acked
                await peer.send(note("notifications/tools/list_changed", 99))  # unknown id
                await peer.send(note("notifications/tools/list_changed", "2"))  # not the id
                await peer.send(note("notifications/tools/list_changed", None))  # names none
                await peer.send(note("notifications/prompts/list_changed", 2))
                await until(lambda: ListChanged("prompts") in events)
            dropped = [e["outcome"] for e in logs if e["event"] == "notification dropped"]
            assert dropped == ["not-acknowledged"] + ["unknown-subscription"] * 3
            assert [e for e in events if isinstance(e, ListChanged)] == [ListChanged("prompts")]

            await peer.send(note("notifications/tools/list_changed", 2))
            await until(lambda: ListChanged("tools") in events)
            async with trio.open_nursery() as nursery:  # the cache was dropped: asked again
                nursery.start_soon(list_tools_answered)
                await conn.list_tools()


async def test_subscribe_re_issues_the_listen_and_reports_what_was_acknowledged() -> None:
    caps = {"resources": {"subscribe": True}}  # no listChanged anywhere: nothing to ask for
    with trio.fail_after(10):
        async with stateless(caps) as (conn, peer, events):
            subscribed: list[bool] = []

            async def subscribe(uri: str) -> None:
                subscribed.append(await conn.subscribe_resource(uri))

            async with trio.open_nursery() as nursery:
                nursery.start_soon(subscribe, "file:///a")
                # Nothing was sent at connect: the first line is the subscribe's listen.
                assert await peer.recv_line() == listen_line(
                    conn, 2, {"resourceSubscriptions": ["file:///a"]}
                )
                await peer.send(ack(2, {"resourceSubscriptions": ["file:///a", "file:///z"]}))
            assert subscribed == [True]
            # A URI the host never asked for is not held.
            assert conn.acknowledged_subscriptions == Subscriptions(resources=("file:///a",))
            await peer.send(note("notifications/resources/updated", 2, uri="file:///a"))
            await until(lambda: ResourceUpdated("file:///a") in events)

            async with trio.open_nursery() as nursery:
                nursery.start_soon(subscribe, "file:///b")
                first, second = await peer.recv(), await peer.recv()
                by_method = {m["method"]: m for m in (first, second)}
                # The old listen is cancelled, a new one asks for both.
                assert by_method["notifications/cancelled"]["params"]["requestId"] == 2
                relisten = by_method["subscriptions/listen"]
                assert relisten["id"] == 3
                assert relisten["params"]["notifications"] == {
                    "resourceSubscriptions": ["file:///a", "file:///b"]
                }
                await peer.send(ack(3, {"resourceSubscriptions": ["file:///a"]}))
            assert subscribed == [True, False]  # b left out: not in force
            await peer.send(note("notifications/resources/updated", 2, uri="file:///a"))  # old
            await peer.send(note("notifications/resources/updated", 3, uri="file:///b"))
            await peer.send(note("notifications/resources/updated", 3, uri="file:///a/part"))
            await until(lambda: ResourceUpdated("file:///a/part") in events)
            updates = [e for e in events if isinstance(e, ResourceUpdated)]
            assert updates == [ResourceUpdated("file:///a"), ResourceUpdated("file:///a/part")]

            # b was not recorded: dropping a leaves nothing to ask for; the listen goes.
            await conn.unsubscribe_resource("file:///a")
            cancelled = await peer.recv()
            assert cancelled["method"] == "notifications/cancelled"
            assert cancelled["params"]["requestId"] == 3
            assert conn.acknowledged_subscriptions is None
            async with trio.open_nursery() as nursery:
                nursery.start_soon(conn.ping)
                await peer.answer(await peer.expect("ping"), {})  # and no other listen
            assert not any(b"resources/subscribe" in x for x in peer.received)


async def test_graceful_ends_reopen_the_listen_a_bounded_number_of_times(
    autojump_clock: trio.abc.Clock,
) -> None:
    caps = {"tools": {"listChanged": True}}
    with trio.fail_after(120):
        async with stateless(caps, max_relistens=2) as (conn, peer, events):
            assert (await peer.recv())["id"] == 2
            await peer.send(ack(2, {"toolsListChanged": True}))
            await until(lambda: conn.acknowledged_subscriptions is not None)
            # The server ends it with a result: a new listen follows after a second.
            ended = trio.current_time()
            await peer.answer({"id": 2}, {"resultType": "complete", "_meta": {SUBSCRIPTION_ID: 2}})
            again = await peer.recv()
            assert (again["method"], again["id"]) == ("subscriptions/listen", 3)
            assert trio.current_time() - ended == pytest.approx(1.0, abs=0.1)
            await peer.send(ack(3, {"toolsListChanged": True}))
            await until(lambda: conn.acknowledged_subscriptions is not None)
            # ... or with notifications/cancelled naming it: the next after two seconds.
            ended = trio.current_time()
            await peer.send(note("notifications/cancelled", None, requestId=3))
            again = await peer.recv()
            assert (again["method"], again["id"]) == ("subscriptions/listen", 4)
            assert trio.current_time() - ended == pytest.approx(2.0, abs=0.1)
            await peer.send(ack(4, {"toolsListChanged": True}))
            await peer.send(note("notifications/tools/list_changed", 4))
            await until(lambda: ListChanged("tools") in events)
            # A third end in a row: max_relistens=2 reached, no other listen.
            with capture_logs() as logs:
                await peer.answer({"id": 4}, {"resultType": "complete"})
                await trio.sleep(60)
            assert any(e["event"] == "subscriptions/listen not reopened" for e in logs)
            assert conn.acknowledged_subscriptions is None
            async with trio.open_nursery() as nursery:
                nursery.start_soon(conn.ping)
                assert (await peer.recv())["method"] == "ping"  # no listen before it
                nursery.cancel_scope.cancel()
            # A cancel for the server's own answered listen went nowhere: none was sent.
            assert not any(b"notifications/cancelled" in x for x in peer.received)


async def test_a_refused_listen_is_not_repeated_and_subscribe_raises_the_refusal() -> None:
    caps = {"tools": {"listChanged": True}}
    refusal = {"code": -32601, "message": "Method not found"}
    with trio.fail_after(10):
        async with stateless(caps) as (conn, peer, _):
            listen = await peer.recv()
            await peer.send({"jsonrpc": "2.0", "id": listen["id"], "error": refusal})
            async with trio.open_nursery() as nursery:  # the refusal is read before its answer
                nursery.start_soon(conn.ping)
                await peer.answer(await peer.expect("ping"), {})

            async def refuse_next() -> None:
                again = await peer.recv()
                assert again["method"] == "subscriptions/listen"  # the set changed: asked
                await peer.send({"jsonrpc": "2.0", "id": again["id"], "error": refusal})

            async with trio.open_nursery() as nursery:
                nursery.start_soon(refuse_next)
                with pytest.raises(RequestError) as caught:
                    await conn.subscribe_resource("file:///a")
            assert caught.value.code == -32601
            async with trio.open_nursery() as nursery:
                nursery.start_soon(conn.ping)
                assert (await peer.recv())["method"] == "ping"  # not asked a third time
                nursery.cancel_scope.cancel()
            assert conn.acknowledged_subscriptions is None


async def test_the_listen_is_reopened_on_a_new_transport_with_the_subscriptions(
    autojump_clock: trio.abc.Clock,
) -> None:
    caps = {"tools": {"listChanged": True}, "resources": {"subscribe": True}}
    events: list[Event] = []
    supply = PeerSupply()
    conn = Connection(
        supply.factory, reconnect=Reconnect(initial=0.01, jitter=0.0), on_event=events.append
    )
    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:

            async def first_discover() -> None:
                peer = await supply.next_peer()
                await peer.discover(capabilities=caps)
                supply.peers.append(peer)

            nursery.start_soon(first_discover)
            await nursery.start(conn.run)
            await until(lambda: supply.peers)
            first = supply.peers[0]
            assert (await first.recv())["id"] == 2
            await first.send(ack(2, {"toolsListChanged": True}))

            async def ack_subscribe() -> None:
                messages = [await first.recv(), await first.recv()]
                listen = next(m for m in messages if m["method"] == "subscriptions/listen")
                await first.send(ack(listen["id"], listen["params"]["notifications"]))

            async with trio.open_nursery() as inner:
                inner.start_soon(ack_subscribe)
                assert await conn.subscribe_resource("file:///a") is True
            await first.stream.aclose()

            second = await supply.next_peer()
            await second.discover(capabilities=caps)
            listen = await second.recv()
            assert listen["method"] == "subscriptions/listen"  # no resources/subscribe
            assert listen["params"]["notifications"] == {
                "toolsListChanged": True,
                "resourceSubscriptions": ["file:///a"],
            }
            await second.send(ack(listen["id"], listen["params"]["notifications"]))
            await second.send(note("notifications/resources/updated", 3, uri="file:///a"))  # old
            await second.send(
                note("notifications/resources/updated", listen["id"], uri="file:///a")
            )
            await until(lambda: ResourceUpdated("file:///a") in events)
            assert [e for e in events if isinstance(e, ResourceUpdated)] == [
                ResourceUpdated("file:///a")
            ]
            await conn.aclose()


async def test_bounds_hold_on_the_stateless_revision() -> None:
    with pytest.raises(ConfigurationError):
        Connection("stdio:python3", max_relistens=-1)
    caps = {"resources": {"subscribe": True}}
    with trio.fail_after(10):
        async with stateless(caps, max_subscriptions=1) as (conn, peer, _):

            async def ack_it() -> None:
                listen = await peer.recv()
                await peer.send(ack(listen["id"], listen["params"]["notifications"]))

            async with trio.open_nursery() as nursery:
                nursery.start_soon(ack_it)
                assert await conn.subscribe_resource("file:///a")
            written = len(peer.received)
            with pytest.raises(LimitExceeded):
                await conn.subscribe_resource("file:///b")
            await trio.sleep(0.01)
            assert len(peer.received) == written  # nothing was written for it


async def test_closing_the_connection_ends_an_unanswered_listen() -> None:
    with trio.fail_after(10):
        async with stateless({"tools": {"listChanged": True}}) as (conn, peer, _):
            assert (await peer.recv())["method"] == "subscriptions/listen"
            # never answered, never acknowledged: leaving the block must not hang
        assert conn.acknowledged_subscriptions is None


async def test_dropped_notifications_cost_a_bounded_number_of_log_lines() -> None:
    with trio.fail_after(10):
        async with stateless({"tools": {"listChanged": True}}) as (_conn, peer, events):
            listen = await peer.recv()
            await peer.send(ack(listen["id"], {"toolsListChanged": True}))
            with capture_logs() as logs:
                for _ in range(200):  # a server naming a subscription that is not open
                    await peer.send(note("notifications/tools/list_changed", 12345))
                await peer.send(note("notifications/tools/list_changed", listen["id"]))
                await until(lambda: ListChanged("tools") in events)
            dropped = [e for e in logs if e["event"] == "notification dropped"]
            assert len(dropped) == 5  # the log budget's burst; the rest only counted
            assert [e for e in events if isinstance(e, ListChanged)] == [ListChanged("tools")]
