"""MCPL on a real Connection, with a scripted MCPL peer over memory streams: the grant
before and after its receipt, -32002 with its data, reductions and expansions, removed
methods, routing to hooks, streaming, and planes held across a reconnect."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest
import trio

from mcpl_host import (
    Closed,
    ConfigurationError,
    Connection,
    Event,
    Mcpl,
    McplContext,
    McplGrantChanged,
    Reconnect,
)
from mcpl_host.mcpl.types import InferenceRequest, ManifestChanged, PushEvent
from mcpl_host.testing import Script, serve

from ..driver.peer import Peer, PeerSupply, memory_connection

SERVER_MCPL = {"version": "0.5", "pushEvents": True, "inferenceRequest": True, "modelInfo": True}
PUSH = {
    "featureSet": "mail",
    "eventId": "e-1",
    "timestamp": "2026-11-29T00:00:00Z",
    "payload": {"content": [{"type": "text", "text": "new mail"}]},
}


def request(id_: Any, method: str, params: Any) -> bytes:
    return msgspec.json.encode({"jsonrpc": "2.0", "id": id_, "method": method, "params": params})


async def mcpl_handshake(peer: Peer, tree: Any = SERVER_MCPL) -> dict[str, Any]:
    """Answer initialize as an MCPL server; return the host's featureSets/update request."""
    init = await peer.expect("initialize")
    await peer.send(
        {
            "jsonrpc": "2.0",
            "id": init["id"],
            "result": {
                "protocolVersion": "2024-11-05",
                "capabilities": {"tools": {}, "experimental": {"mcpl": tree}},
                "serverInfo": {"name": "mcpl-peer", "version": "1"},
            },
        }
    )
    await peer.expect("notifications/initialized")
    update: dict[str, Any] = await peer.expect("featureSets/update")
    return update


async def accept(peer: Peer, update: dict[str, Any], **extra: Any) -> None:
    await peer.send({"jsonrpc": "2.0", "id": update["id"], "result": {"accepted": True, **extra}})


class Hooks:
    def __init__(self) -> None:
        self.pushes: list[PushEvent] = []

    async def push(self, params: msgspec.Struct, _context: McplContext) -> Any:
        assert isinstance(params, PushEvent)
        self.pushes.append(params)
        return {"accepted": True, "inferenceId": "inf-1"}

    async def infer(self, params: msgspec.Struct, context: McplContext) -> Any:
        assert isinstance(params, InferenceRequest)
        if context.stream is not None:
            await context.stream("Hel")
            await context.stream("lo")
        return {"content": "Hello", "model": "m-1", "finishReason": "end_turn"}

    def config(
        self, grants: tuple[str, ...] = ("pushEvents", "inferenceRequest", "inferenceRequest.*")
    ) -> Mcpl:
        return Mcpl(
            grants=grants,
            hooks={"push/event": self.push, "inference/request": self.infer},
        )


async def grant_settled(events: list[Event], count: int = 1) -> None:
    while len([e for e in events if isinstance(e, McplGrantChanged)]) < count:
        await trio.sleep(0.001)


async def test_the_grant_gates_inbound_methods_before_and_after_its_receipt() -> None:
    hooks = Hooks()
    events: list[Event] = []
    conn, peer = memory_connection(mcpl=hooks.config(), on_event=events.append)
    with trio.fail_after(5):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(conn.run)
            update = await mcpl_handshake(peer)
            init = msgspec.json.decode(peer.received[0])
            assert init["params"]["capabilities"]["experimental"]["mcpl"]["version"] == "0.5"
            # sent as a Request, the grant the config and the server's tree allow
            assert isinstance(update["id"], int)
            assert update["params"]["effectiveCapabilities"] == [
                "inferenceRequest",
                "inferenceRequest.streaming",
                "pushEvents",
            ]
            assert update["params"]["deniedCapabilities"] == ["modelInfo", "tools"]

            # before the receipt: nothing is granted
            await peer.send(request(1, "push/event", PUSH))
            assert await peer.recv() == {
                "jsonrpc": "2.0",
                "id": 1,
                "error": {
                    "code": -32002,
                    "message": "Capability denied",
                    "data": {"capability": "pushEvents"},
                },
            }
            await accept(peer, update)
            await grant_settled(events)
            assert conn.mcpl_grant == {
                "pushEvents",
                "inferenceRequest",
                "inferenceRequest.streaming",
            }
            await peer.send(request(2, "push/event", PUSH))
            assert await peer.recv() == {
                "jsonrpc": "2.0",
                "id": 2,
                "result": {"accepted": True, "inferenceId": "inf-1"},
            }
            # the same eventId again: deduplicated, the hook is not called twice
            await peer.send(request(3, "push/event", PUSH))
            assert (await peer.recv())["result"] == {
                "accepted": False,
                "reason": "duplicate eventId",
            }
            assert [p.event_id for p in hooks.pushes] == ["e-1"]
            # not granted by the host's configuration
            await peer.send(request(4, "model/info", {}))
            assert (await peer.recv())["error"]["data"] == {"capability": "modelInfo"}
            # removed in 0.5
            await peer.send(request(5, "scope/elevate", {}))
            assert (await peer.recv())["error"]["code"] == -32601
            await peer.send(request(None, "featureSets/changed", {}))
            assert (await peer.recv())["error"] == {
                "code": -32601,
                "message": "featureSets/changed was removed in MCPL 0.5",
            }
            await conn.aclose()


async def test_inference_streams_chunks_but_an_id_null_request_gets_one_whole_answer() -> None:
    hooks = Hooks()
    events: list[Event] = []
    conn, peer = memory_connection(mcpl=hooks.config(), on_event=events.append)
    infer = {"featureSet": "f", "messages": [{"role": "user", "content": "hi"}], "stream": True}
    with trio.fail_after(5):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(conn.run)
            await accept(peer, await mcpl_handshake(peer))
            await grant_settled(events)
            await peer.send(request("r-7", "inference/request", infer))
            assert [await peer.recv_line() for _ in range(3)] == [
                b'{"jsonrpc":"2.0","method":"inference/chunk",'
                b'"params":{"requestId":"r-7","index":0,"delta":"Hel"}}',
                b'{"jsonrpc":"2.0","method":"inference/chunk",'
                b'"params":{"requestId":"r-7","index":1,"delta":"lo"}}',
                b'{"jsonrpc":"2.0","id":"r-7","result":'
                b'{"content":"Hello","model":"m-1","finishReason":"end_turn"}}',
            ]
            await peer.send(request(None, "inference/request", infer))
            assert await peer.recv_line() == (
                b'{"jsonrpc":"2.0","id":null,"result":'
                b'{"content":"Hello","model":"m-1","finishReason":"end_turn"}}'
            )
            await conn.aclose()


async def test_a_reduction_applies_at_once_and_an_expansion_on_its_receipt() -> None:
    hooks = Hooks()
    events: list[Event] = []
    conn, peer = memory_connection(mcpl=hooks.config(), on_event=events.append)
    with trio.fail_after(5):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(conn.run)
            await accept(peer, await mcpl_handshake(peer))
            await grant_settled(events)

            nursery.start_soon(conn.set_mcpl_grants, ("inferenceRequest",))
            reduce = await peer.expect("featureSets/update")
            assert reduce["params"]["effectiveCapabilities"] == ["inferenceRequest"]
            assert conn.mcpl_grant == {"inferenceRequest"}  # before the receipt
            await peer.send(request(1, "push/event", PUSH))
            assert (await peer.recv())["error"]["data"] == {"capability": "pushEvents"}
            await accept(peer, reduce)
            await grant_settled(events, 2)

            nursery.start_soon(conn.set_mcpl_grants, ("inferenceRequest", "pushEvents"))
            expand = await peer.expect("featureSets/update")
            assert conn.mcpl_grant == {"inferenceRequest"}  # not before its receipt
            await peer.send(request(2, "push/event", PUSH))
            assert (await peer.recv())["error"]["code"] == -32002
            # a receipt can narrow what is granted, never widen it
            await accept(peer, expand, mode="degraded", unavailableFeatures=["pushEvents"])
            await grant_settled(events, 3)
            assert conn.mcpl_grant == {"inferenceRequest"}
            await conn.aclose()


async def test_a_refusing_receipt_is_obeyed() -> None:
    events: list[Event] = []
    conn, peer = memory_connection(mcpl=Hooks().config(), on_event=events.append)
    with trio.fail_after(5):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(conn.run)
            update = await mcpl_handshake(peer)
            await peer.send(
                {
                    "jsonrpc": "2.0",
                    "id": update["id"],
                    "result": {"accepted": False, "fallback": "close"},
                }
            )
            while not any(isinstance(e, Closed) for e in events):
                await trio.sleep(0.001)
    assert McplGrantChanged(frozenset(), "close") in events


async def test_a_plain_mcp_peer_gets_no_grant_and_mcpl_methods_are_unknown() -> None:
    conn, peer = memory_connection(mcpl=Hooks().config())
    with trio.fail_after(5):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(peer.handshake, "2024-11-05")
            async with conn:
                await peer.send(request(1, "push/event", PUSH))
                answer = await peer.recv()
                assert answer["error"]["code"] == -32601
                assert all(b"featureSets/update" not in line for line in peer.received)
            nursery.cancel_scope.cancel()


async def test_planes_are_held_across_a_reconnect_and_released_against_the_new_grant(
    autojump_clock: trio.abc.Clock,
) -> None:
    hooks = Hooks()
    events: list[Event] = []
    supply = PeerSupply()
    conn = Connection(
        supply.factory, reconnect=Reconnect(), mcpl=hooks.config(), on_event=events.append
    )
    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(conn.run)
            first = await supply.next_peer()
            await accept(first, await mcpl_handshake(first))
            await grant_settled(events)
            await first.stream.aclose()  # the server goes away

            second = await supply.next_peer()
            update = await mcpl_handshake(second)
            # before the new receipt: held, neither answered nor refused
            await second.send(request("held-1", "push/event", PUSH | {"eventId": "e-2"}))
            await second.send(request(None, "push/event", PUSH | {"eventId": "e-3"}))
            await second.send(request(None, "model/info", {}))  # not granted
            await trio.sleep(1)
            assert len(second.received) == 3  # initialize, initialized, the update
            await accept(second, update)
            answers = [await second.recv() for _ in range(3)]
            refused = [a for a in answers if "error" in a]
            assert refused == [
                {
                    "jsonrpc": "2.0",
                    "id": None,
                    "error": {
                        "code": -32002,
                        "message": "Capability denied",
                        "data": {"capability": "modelInfo"},
                    },
                }
            ]
            accepted = [a for a in answers if "result" in a]
            assert sorted(a["id"] or "" for a in accepted) == ["", "held-1"]
            assert all(a["result"]["accepted"] is True for a in accepted)

            # a request held on a transport that dies before its receipt is answered on
            # neither that transport nor the next one
            await second.stream.aclose()
            third = await supply.next_peer()
            third_update = await mcpl_handshake(third)
            await third.send(request("on-third", "push/event", PUSH | {"eventId": "e-4"}))
            await third.stream.aclose()  # dies before its receipt
            fourth = await supply.next_peer()
            await accept(fourth, await mcpl_handshake(fourth))
            await fourth.send(request("on-fourth", "push/event", PUSH | {"eventId": "e-5"}))
            assert (await fourth.recv())["id"] == "on-fourth"
            await trio.sleep(1)
            assert all(b"on-third" not in line for line in fourth.received)
            assert third_update["method"] == "featureSets/update"
            await conn.aclose()
    assert sorted(p.event_id for p in hooks.pushes) == ["e-2", "e-3", "e-5"]


async def test_a_notification_held_on_a_transport_that_closes_is_dropped_not_handled(
    autojump_clock: trio.abc.Clock,
) -> None:
    """mcpl/manifestChanged needs no grant, so nothing but its transport's end keeps a
    held one from its hook: the hold of that transport ends (its update fails) after the
    transport has closed."""
    revisions: list[str | None] = []

    async def manifest_changed(params: msgspec.Struct, _context: McplContext) -> Any:
        assert isinstance(params, ManifestChanged)
        revisions.append(params.revision)

    events: list[Event] = []
    supply = PeerSupply()
    config = Mcpl(grants=("pushEvents",), hooks={"mcpl/manifestChanged": manifest_changed})
    conn = Connection(supply.factory, reconnect=Reconnect(), mcpl=config, on_event=events.append)
    changed = {"jsonrpc": "2.0", "method": "mcpl/manifestChanged"}
    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(conn.run)
            first = await supply.next_peer()
            await accept(first, await mcpl_handshake(first))
            await grant_settled(events)
            await first.stream.aclose()

            second = await supply.next_peer()
            await mcpl_handshake(second)  # its update is never answered: all is held
            await second.send(changed | {"params": {"revision": "held"}})
            # Read in order: once the ping is answered the notification has been held.
            await second.send({"jsonrpc": "2.0", "id": "p", "method": "ping"})
            assert (await second.recv())["id"] == "p"
            await second.stream.aclose()

            third = await supply.next_peer()
            await accept(third, await mcpl_handshake(third))
            await third.send(changed | {"params": {"revision": "live"}})
            while not revisions:  # the hook runs: this one came on a live transport
                await trio.sleep(0.01)
            await trio.sleep(1)
            await conn.aclose()
    assert revisions == ["live"]


async def test_the_grant_through_the_harness_with_a_real_subprocess() -> None:
    """The same rules with a scripted MCPL server run as a real stdio subprocess."""
    hooks = Hooks()
    script = (
        Script()
        .handshake("2024-11-05", capabilities={"experimental": {"mcpl": SERVER_MCPL}})
        .send_request("push/event", PUSH, id="early")
        .expect_answer()
        .expect("featureSets/update")
        .reply({"accepted": True})
        .send_request("push/event", PUSH, id=None)
        .expect_answer()
        .expect_close()
    )
    with trio.fail_after(20):
        async with serve(script, "stdio") as server:
            async with Connection(server.target, mcpl=hooks.config()):
                while len(server.record.answers()) < 2:
                    await trio.sleep(0.01)
            await server.wait_done()
    early, late = server.record.answers()
    assert early == {
        "jsonrpc": "2.0",
        "id": "early",
        "error": {
            "code": -32002,
            "message": "Capability denied",
            "data": {"capability": "pushEvents"},
        },
    }
    assert late == {
        "jsonrpc": "2.0",
        "id": None,
        "result": {"accepted": True, "inferenceId": "inf-1"},
    }
    update = server.record.requests("featureSets/update")[0]
    assert "pushEvents" in update["params"]["effectiveCapabilities"]
    # MCPL rides on initialize: with the default versions (2026-07-28 among them) an
    # MCPL connection never asks server/discover, and offers its handshake revision.
    opening = server.record.requests()[0]
    assert opening["method"] == "initialize"
    assert opening["params"]["protocolVersion"] == "2025-11-25"
    assert server.record.requests("server/discover") == []


def test_an_mcpl_connection_needs_a_handshake_era_revision() -> None:
    with pytest.raises(ConfigurationError, match="MCPL needs a handshake-era revision"):
        Connection("tcp://127.0.0.1:9", mcpl=Hooks().config(), versions=["2026-07-28"])


def initialize_answer(init: dict[str, Any]) -> bytes:
    return msgspec.json.encode(
        {
            "jsonrpc": "2.0",
            "id": init["id"],
            "result": {
                "protocolVersion": "2024-11-05",
                "capabilities": {"experimental": {"mcpl": SERVER_MCPL}},
                "serverInfo": {"name": "mcpl-peer", "version": "1"},
            },
        }
    )


async def test_an_mcpl_request_in_the_same_write_as_the_answer_meets_this_transports_grant() -> (
    None
):
    """The seam after the initialize answer: on the first transport a push read in the same
    read as the answer is judged by MCPL against the empty grant (-32002), never handed to
    plain MCP (-32601); after a reconnect it is held until the new grant's receipt, then
    admitted against that grant, never against the previous transport's."""
    hooks = Hooks()
    events: list[Event] = []
    supply = PeerSupply()
    conn = Connection(
        supply.factory,
        mcpl=hooks.config(),
        on_event=events.append,
        reconnect=Reconnect(initial=0.01, jitter=0),
    )
    with trio.fail_after(5):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(conn.run)
            first = await supply.next_peer()
            init = await first.expect("initialize")
            await first.send(initialize_answer(init) + b"\n" + request("early", "push/event", PUSH))
            lines = [await first.recv(), await first.recv()]
            assert {"jsonrpc": "2.0", "method": "notifications/initialized"} in lines
            (denied,) = [m for m in lines if m.get("id") == "early"]
            assert denied["error"]["code"] == -32002
            await accept(first, await first.expect("featureSets/update"))
            await grant_settled(events)

            # The first transport's grant allows pushEvents; the second's must settle first.
            await first.stream.aclose()
            second = await supply.next_peer()
            init = await second.expect("initialize")
            push = PUSH | {"eventId": "e-9"}
            await second.send(
                initialize_answer(init) + b"\n" + request("raced", "push/event", push)
            )
            await second.expect("notifications/initialized")
            update = await second.expect("featureSets/update")
            assert hooks.pushes == []  # held: the previous grant does not count here
            await accept(second, update)
            answer = await second.recv()
            assert answer == {
                "jsonrpc": "2.0",
                "id": "raced",
                "result": {"accepted": True, "inferenceId": "inf-1"},
            }
            await conn.aclose()
    assert [p.event_id for p in hooks.pushes] == ["e-9"]


async def test_requests_held_for_the_receipt_are_bounded_by_max_server_requests(
    autojump_clock: trio.abc.Clock,
) -> None:
    """Each held request owes an answer: past max_server_requests of them the next is
    refused "host busy" at once, instead of being held without bound."""
    hooks = Hooks()
    events: list[Event] = []
    supply = PeerSupply()
    conn = Connection(
        supply.factory,
        reconnect=Reconnect(),
        mcpl=hooks.config(),
        on_event=events.append,
        max_server_requests=4,
    )
    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(conn.run)
            first = await supply.next_peer()
            await accept(first, await mcpl_handshake(first))
            await grant_settled(events)
            await first.stream.aclose()

            second = await supply.next_peer()
            update = await mcpl_handshake(second)
            for n in range(10):
                await second.send(request(f"p-{n}", "push/event", PUSH | {"eventId": f"e-{n}"}))
            busy = [await second.recv() for _ in range(6)]  # at once, before the receipt
            assert [b["id"] for b in busy] == [f"p-{n}" for n in range(4, 10)]
            assert all(b["error"]["code"] == -32603 for b in busy)
            assert all("host busy" in b["error"]["message"] for b in busy)
            await accept(second, update)
            held = [await second.recv() for _ in range(4)]
            assert sorted(h["id"] for h in held) == [f"p-{n}" for n in range(4)]
            assert all(h["result"]["accepted"] is True for h in held)
            await conn.aclose()
