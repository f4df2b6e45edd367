"""Reconnects: the supervisor, backoff, and rebinding of pending requests (DESIGN 3.9)."""

from __future__ import annotations

import itertools
from functools import partial
from typing import Any

import pytest
import trio
import trio.testing
from structlog.testing import capture_logs

from mcpl_host import (
    ConfigurationError,
    Connection,
    ConnectionClosed,
    Reconnect,
    RequestTimeout,
    ServerRequest,
    TransportError,
    VersionError,
)
from mcpl_host.events import (
    Closed,
    Connected,
    Disconnected,
    Event,
    Reconnected,
    Reconnecting,
)

from .peer import Peer, PeerSupply

# stable=0: these tests lose connections at once on purpose; the quick-death rule has its own.
NO_JITTER = Reconnect(initial=1.0, maximum=8.0, multiplier=2.0, jitter=0.0, stable=0)


def _connection(supply: PeerSupply, events: list[Event], **kwargs: Any) -> Connection:
    kwargs.setdefault("reconnect", NO_JITTER)
    return Connection(supply.factory, on_event=events.append, **kwargs)


async def _serve(peer: Peer, answers: dict[str, Any]) -> None:
    """Answer every request by method from ``answers`` until the host hangs up."""
    try:
        while True:
            message = await peer.recv()
            if "id" in message and message.get("method") in answers:
                await peer.answer(message, answers[message["method"]])
    except (EOFError, trio.BrokenResourceError, trio.ClosedResourceError):
        pass


async def test_rebinding_by_the_rule(autojump_clock: trio.abc.Clock) -> None:
    events: list[Event] = []
    supply = PeerSupply()
    conn = _connection(supply, events)
    outcomes: dict[str, Any] = {}

    async def call(label: str, method: str, params: Any = None, **kw: Any) -> None:
        try:
            outcomes[label] = await conn.request(method, params, **kw)
        except ConnectionClosed as exc:
            outcomes[label] = exc

    with trio.fail_after(600):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(supply.handshake_next)
            async with conn:
                first = await supply.handshaken(0)
                # learn which tools are safe to repeat
                nursery.start_soon(call, "listing", "tools/list")
                listing = await first.expect("tools/list")
                await first.answer(
                    listing,
                    {
                        "tools": [
                            {
                                "name": "lookup",
                                "inputSchema": {},
                                "annotations": {"readOnlyHint": True},
                            },
                            {"name": "charge", "inputSchema": {}},
                        ]
                    },
                )
                await trio.sleep(0.1)
                for label, method, params, kw in [
                    ("list", "resources/list", None, {}),
                    ("ping", "ping", None, {}),
                    ("read-only tool", "tools/call", {"name": "lookup"}, {}),
                    ("unsafe tool", "tools/call", {"name": "charge"}, {}),
                    ("opt-in", "tools/call", {"name": "charge"}, {"rebind": True}),
                    ("opt-out", "resources/read", {"uri": "x"}, {"rebind": False}),
                ]:
                    nursery.start_soon(partial(call, label, method, params, **kw))
                    await trio.sleep(0.01)
                written = [await first.recv() for _ in range(6)]
                old_ids = {m["id"] for m in written}
                await first.stream.aclose()  # the transport is lost with all six unanswered
                second = await supply.next_peer()
                await second.handshake()
                resent = [await second.recv() for _ in range(4)]
                assert [(m["method"], m.get("params")) for m in resent] == [
                    ("resources/list", None),
                    ("ping", None),
                    ("tools/call", {"name": "lookup"}),
                    ("tools/call", {"name": "charge"}),
                ]
                assert not old_ids & {m["id"] for m in resent}  # new ids, never reused
                assert min(m["id"] for m in resent) > max(old_ids)
                for message in resent:
                    await second.answer(message, {"again": message["id"]})
                await trio.sleep(0.1)
                nursery.cancel_scope.cancel()
    assert isinstance(outcomes["unsafe tool"], ConnectionClosed)
    assert outcomes["unsafe tool"].outcome_unknown
    assert isinstance(outcomes["opt-out"], ConnectionClosed)
    assert outcomes["opt-out"].outcome_unknown
    for label in ("list", "ping", "read-only tool", "opt-in"):
        assert isinstance(outcomes[label], dict), label
    kinds = [type(e) for e in events]
    assert kinds[:4] == [Connected, Disconnected, Reconnecting, Reconnected]
    assert events[2] == Reconnecting(1, 0.0)


async def test_requests_made_while_reconnecting_wait_for_the_new_transport(
    autojump_clock: trio.abc.Clock,
) -> None:
    events: list[Event] = []
    supply = PeerSupply()
    conn = _connection(supply, events)
    with trio.fail_after(600):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(supply.handshake_next)
            async with conn:
                first = await supply.handshaken(0)
                supply.refuse = 2  # two failed attempts: 1 s and 2 s of backoff
                await first.stream.aclose()
                result: list[Any] = []

                async def late_call() -> None:
                    result.append(await conn.request("tools/call", {"name": "x"}, timeout=30))

                started = trio.current_time()
                nursery.start_soon(late_call)
                second = await supply.next_peer()
                await second.handshake()
                nursery.start_soon(_serve, second, {"tools/call": {"ok": True}})
                while not result:
                    await trio.sleep(0.1)
                assert result == [{"ok": True}]
                assert trio.current_time() - started < 30
                nursery.cancel_scope.cancel()
    delays = [e.delay for e in events if isinstance(e, Reconnecting)]
    assert delays[:3] == [0.0, 1.0, 2.0]


async def test_a_waiting_request_times_out_without_a_cancel_notice(
    autojump_clock: trio.abc.Clock,
) -> None:
    events: list[Event] = []
    supply = PeerSupply()
    conn = _connection(supply, events, reconnect=Reconnect(initial=100, jitter=0, stable=0))
    with trio.fail_after(600):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(supply.handshake_next)
            async with conn:
                first = await supply.handshaken(0)
                supply.refuse = 1
                await first.stream.aclose()
                await trio.sleep(0)
                with pytest.raises(RequestTimeout):
                    await conn.request("ping", timeout=5)
                second = await supply.next_peer()  # after 100 s of backoff
                await second.handshake()
                nursery.start_soon(_serve, second, {"ping": {}})
                assert await conn.request("ping", timeout=5) == {}
                nursery.cancel_scope.cancel()
    # the timed-out ping was never written: no notifications/cancelled for it anywhere
    assert all(b"notifications/cancelled" not in line for line in second.received)


async def test_backoff_grows_to_the_cap_and_attempts_run_out(
    autojump_clock: trio.abc.Clock,
) -> None:
    events: list[Event] = []
    supply = PeerSupply()
    policy = Reconnect(
        initial=1.0, maximum=4.0, multiplier=2.0, jitter=0.0, max_attempts=5, stable=0
    )
    conn = _connection(supply, events, reconnect=policy)
    with trio.fail_after(600):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(supply.handshake_next)
            async with conn:
                first = await supply.handshaken(0)
                supply.refuse = 100
                pending: list[BaseException] = []

                async def doomed() -> None:
                    try:
                        await conn.request("ping", timeout=1000)
                    except ConnectionClosed as exc:
                        pending.append(exc)

                await first.stream.aclose()
                await trio.sleep(0)
                nursery.start_soon(doomed)
                while not any(isinstance(e, Closed) for e in events):
                    await trio.sleep(1)
                while not pending:  # the waiting request wakes in a later scheduling round
                    await trio.sleep(0.1)
                assert pending[0].reason == "reconnect-failed"  # type: ignore[attr-defined]
                with pytest.raises(ConnectionClosed):
                    await conn.request("ping")
    delays = [e.delay for e in events if isinstance(e, Reconnecting)]
    assert delays == [0.0, 1.0, 2.0, 4.0, 4.0]
    assert supply.attempts == 6  # the first connect, then five reconnect attempts
    closed = events[-1]
    assert isinstance(closed, Closed)
    assert closed.reason == "reconnect-failed"
    assert isinstance(closed.error, TransportError)  # the last attempt's error


async def test_version_error_on_reconnect_is_permanent(autojump_clock: trio.abc.Clock) -> None:
    events: list[Event] = []
    supply = PeerSupply()
    conn = _connection(supply, events, versions=["2025-11-25"])
    with trio.fail_after(600):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(supply.handshake_next)
            async with conn:
                first = await supply.handshaken(0)
                await first.stream.aclose()
                second = await supply.next_peer()
                init = await second.expect("initialize")
                await second.send(
                    {
                        "jsonrpc": "2.0",
                        "id": init["id"],
                        "result": {"protocolVersion": "2024-11-05"},
                    }
                )
                while not any(isinstance(e, Closed) for e in events):
                    await trio.sleep(0.1)
    assert supply.attempts == 2  # never retried
    closed = events[-1]
    assert isinstance(closed, Closed)
    assert closed.reason == "reconnect-failed"
    assert isinstance(closed.error, VersionError)


async def test_close_stops_a_reconnect_in_progress(autojump_clock: trio.abc.Clock) -> None:
    events: list[Event] = []
    supply = PeerSupply()
    conn = _connection(supply, events, reconnect=Reconnect(initial=1000, jitter=0, stable=0))
    with trio.fail_after(600):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(supply.handshake_next)
            async with conn:
                first = await supply.handshaken(0)
                supply.refuse = 1
                await first.stream.aclose()
                await trio.sleep(10)  # now sleeping 1000 s before attempt 2
                started = trio.current_time()
                await conn.aclose()
                assert trio.current_time() - started < 1
    assert events[-1] == Closed("closed")
    assert supply.attempts == 2


async def test_old_epoch_ids_are_unmatched_on_the_new_transport(
    autojump_clock: trio.abc.Clock,
) -> None:
    events: list[Event] = []
    supply = PeerSupply()
    conn = _connection(supply, events)
    with trio.fail_after(600):
        with capture_logs() as logs:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(supply.handshake_next)
                async with conn:
                    first = await supply.handshaken(0)
                    result: list[Any] = []

                    async def call() -> None:
                        result.append(await conn.request("tools/list"))

                    nursery.start_soon(call)
                    old = await first.expect("tools/list")
                    await first.stream.aclose()
                    second = await supply.next_peer()
                    await second.handshake()
                    new = await second.expect("tools/list")
                    # the server answers the old id on the new transport: it settles nothing
                    await second.send(
                        {"jsonrpc": "2.0", "id": old["id"], "result": {"tools": ["old"]}}
                    )
                    await second.answer(new, {"tools": []})
                    while not result:
                        await trio.sleep(0.1)
                    nursery.cancel_scope.cancel()
    assert result == [{"tools": []}]
    stray = [e for e in logs if e.get("outcome") == "response-unmatched"]
    assert [e["id"] for e in stray] == [old["id"]]
    assert stray[0]["reason"] == "an id from an earlier transport"


async def test_responder_of_the_old_epoch_never_writes_to_the_new_one(
    autojump_clock: trio.abc.Clock,
) -> None:
    events: list[Event] = []
    supply = PeerSupply()
    entered = trio.Event()
    release = trio.Event()

    async def slow(request: ServerRequest) -> Any:
        entered.set()
        with trio.CancelScope(shield=True):
            await release.wait()
        await request.responder.respond({"late": True})

    conn = _connection(supply, events, handlers={"x/slow": slow})
    with trio.fail_after(600):
        with capture_logs() as logs:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(supply.handshake_next)
                async with conn:
                    first = await supply.handshaken(0)
                    await first.send({"jsonrpc": "2.0", "id": 7, "method": "x/slow"})
                    await entered.wait()
                    await first.stream.aclose()
                    second = await supply.next_peer()
                    await second.handshake()
                    release.set()
                    await second.send({"jsonrpc": "2.0", "id": 8, "method": "ping"})
                    assert await second.recv() == {"jsonrpc": "2.0", "id": 8, "result": {}}
                    await trio.sleep(1)
                    nursery.cancel_scope.cancel()
    assert all(b'"id":7' not in line for line in second.received)
    lines = [e for e in logs if e["event"] == "not answering request"]
    assert [(e["request_id"], e["epoch"]) for e in lines] == [(7, 1)]


async def test_without_a_policy_the_connection_ends_with_its_transport() -> None:
    events: list[Event] = []
    supply = PeerSupply()
    conn = Connection(supply.factory, on_event=events.append)
    with trio.fail_after(5):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(supply.handshake_next)
            async with conn:
                first = await supply.handshaken(0)
                await first.stream.aclose()
                while not any(isinstance(e, Closed) for e in events):
                    await trio.sleep(0.01)
                with pytest.raises(ConnectionClosed) as info:
                    await conn.request("ping")
                assert info.value.reason == "eof"
    assert supply.attempts == 1
    assert events[-1] == Closed("eof")


def test_bad_policy_is_a_configuration_error() -> None:
    with pytest.raises(ConfigurationError):
        Reconnect(initial=-1)
    with pytest.raises(ConfigurationError):
        Reconnect(max_attempts=0)


async def test_a_connection_that_dies_quickly_counts_as_a_failed_attempt(
    autojump_clock: trio.abc.Clock,
) -> None:
    """Connections that end within ``stable`` seconds of their handshake carry the count
    on: the waits grow and ``max_attempts`` ends it; one that lives ``stable`` seconds
    starts afresh (attempt 1, at once)."""
    events: list[Event] = []
    supply = PeerSupply()
    policy = Reconnect(initial=1.0, multiplier=2.0, jitter=0.0, max_attempts=4, stable=5.0)
    conn = _connection(supply, events, reconnect=policy)
    handshakes: list[float] = []

    async def server(lives: float) -> None:
        peer = await supply.next_peer()
        await peer.handshake()
        handshakes.append(trio.current_time())
        await trio.sleep(lives)
        await peer.stream.aclose()

    with trio.fail_after(600):
        async with trio.open_nursery() as nursery:
            for lives in (0.1, 6.0, 0.1, 0.1, 0.1, 0.1):
                nursery.start_soon(server, lives)
                await trio.testing.wait_all_tasks_blocked()
            async with conn:
                while not any(isinstance(e, Closed) for e in events):
                    await trio.sleep(1)
            nursery.cancel_scope.cancel()
    attempts = [(e.attempt, e.delay) for e in events if isinstance(e, Reconnecting)]
    # the first dies quickly (attempt 2, after 1 s); the second lives 6 s (afresh:
    # attempt 1 at once); then three quick deaths: attempts 2, 3, 4, and the fourth quick
    # death leaves none.
    assert attempts == [(2, 1.0), (1, 0.0), (2, 1.0), (3, 2.0), (4, 4.0)]
    assert supply.attempts == 6
    gaps = [round(b - a, 3) for a, b in itertools.pairwise(handshakes)]
    assert gaps == [1.1, 6.0, 1.1, 2.1, 4.1]
    closed = events[-1]
    assert isinstance(closed, Closed)
    assert closed.reason == "reconnect-failed"
    assert isinstance(closed.error, TransportError)
    assert closed.error.reason == "unstable"
