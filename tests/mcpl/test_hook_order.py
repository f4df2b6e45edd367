"""MCPL notification hooks run one at a time, in the order the notifications arrived on
the connection (each ``channels/changed`` delta applies to the state the one before it
left), released held notifications included; the queue that waits for them is bounded."""

from __future__ import annotations

from typing import Any

import msgspec
import trio
import trio.testing
from structlog.testing import capture_logs

from mcpl_host import Connection, Event, Mcpl, McplContext, Reconnect
from mcpl_host.mcpl.types import ChannelsChanged

from ..driver.peer import Peer, PeerSupply, memory_connection
from .test_connection import accept, grant_settled, mcpl_handshake

TREE = {"version": "0.5", "channels": True}


def added(channel: str) -> dict[str, Any]:
    return {"added": [{"id": channel, "type": "chat"}]}


def removed(channel: str) -> dict[str, Any]:
    return {"removed": [channel]}


# What the server does to its channels, in order: applied out of order, "removed" before
# "added" leaves a channel the server no longer has.
DELTAS = [added("a"), removed("a"), added("b"), removed("b"), added("c")]
APPLIED = ["+a", "-a", "+b", "-b", "+c"]


def changed(delta: dict[str, Any]) -> bytes:
    return msgspec.json.encode({"jsonrpc": "2.0", "method": "channels/changed", "params": delta})


class Recorder:
    """A ``channels/changed`` hook that records each delta as it starts; the first call
    waits for ``gate``, so whatever runs meanwhile shows up in ``seen``."""

    def __init__(self) -> None:
        self.seen: list[str] = []
        self.gate = trio.Event()

    async def hook(self, params: msgspec.Struct, _context: McplContext) -> Any:
        assert isinstance(params, ChannelsChanged)
        label = f"+{params.added[0].id}" if params.added else f"-{params.removed[0]}"
        self.seen.append(label)
        if len(self.seen) == 1:
            await self.gate.wait()

    def config(self, **options: Any) -> Mcpl:
        return Mcpl(grants=("channels.register",), hooks={"channels/changed": self.hook}, **options)


async def read_up_to_here(peer: Peer, label: str) -> None:
    """The host has read (and dispatched) everything sent before this: a ping sent now is
    answered only after; then every task the lines started has run as far as it can."""
    await peer.send({"jsonrpc": "2.0", "id": label, "method": "ping"})
    assert await peer.recv() == {"jsonrpc": "2.0", "id": label, "result": {}}
    await trio.testing.wait_all_tasks_blocked()


async def test_notification_hooks_run_one_at_a_time_in_arrival_order() -> None:
    recorder = Recorder()
    events: list[Event] = []
    conn, peer = memory_connection(mcpl=recorder.config(), on_event=events.append)
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(conn.run)
            await accept(peer, await mcpl_handshake(peer, TREE))
            await grant_settled(events)
            for delta in DELTAS:
                await peer.send(changed(delta))
            await read_up_to_here(peer, "after-deltas")
            # the first hook has not returned: the later deltas wait their turn
            assert recorder.seen == ["+a"]
            recorder.gate.set()
            await trio.testing.wait_all_tasks_blocked()
            assert recorder.seen == APPLIED
            await conn.aclose()


async def test_notifications_released_from_the_hold_keep_their_order(
    autojump_clock: trio.abc.Clock,
) -> None:
    recorder = Recorder()
    events: list[Event] = []
    supply = PeerSupply()
    conn = Connection(
        supply.factory,
        mcpl=recorder.config(),
        on_event=events.append,
        reconnect=Reconnect(initial=0.01, jitter=0.0),
    )
    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(conn.run)
            first = await supply.next_peer()
            await accept(first, await mcpl_handshake(first, TREE))
            await grant_settled(events)
            await first.stream.aclose()

            second = await supply.next_peer()
            update = await mcpl_handshake(second, TREE)
            for delta in DELTAS:  # held until the new grant's receipt
                await second.send(changed(delta))
            await read_up_to_here(second, "held")
            assert recorder.seen == []
            await accept(second, update)
            await grant_settled(events, 2)
            await trio.testing.wait_all_tasks_blocked()
            assert recorder.seen == ["+a"]
            recorder.gate.set()
            await trio.testing.wait_all_tasks_blocked()
            assert recorder.seen == APPLIED
            await conn.aclose()


async def test_past_the_bound_the_oldest_waiting_notification_is_dropped_and_logged() -> None:
    recorder = Recorder()
    events: list[Event] = []
    with trio.fail_after(10), capture_logs() as logs:
        # made inside capture_logs: a connection binds its logger when it is made
        conn, peer = memory_connection(
            mcpl=recorder.config(max_queued_notifications=2), on_event=events.append
        )
        async with trio.open_nursery() as nursery:
            nursery.start_soon(conn.run)
            await accept(peer, await mcpl_handshake(peer, TREE))
            await grant_settled(events)
            # the first runs (and waits); two wait for it; the fourth pushes out the second
            for delta in DELTAS[:4]:
                await peer.send(changed(delta))
            await read_up_to_here(peer, "after-deltas")
            assert recorder.seen == ["+a"]
            recorder.gate.set()
            await trio.testing.wait_all_tasks_blocked()
            assert recorder.seen == ["+a", "+b", "-b"]
            await conn.aclose()
    dropped = [entry for entry in logs if entry["event"] == "notification dropped"]
    assert dropped == [
        {
            "event": "notification dropped",
            "log_level": "warning",
            "server": "custom",
            "method": "channels/changed",
            "reason": "more than 2 notifications waiting for their hooks",
        }
    ]
