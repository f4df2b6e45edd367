"""The driver's telemetry seams: the SERVER span of each request the host serves, the
refusals and bytes it counts, the connect and reconnect spans with their steps, the
handshake's own CLIENT spans, a request rebound across a reconnect or re-issued after
a broken stream, and MCPL grant changes. The real SDK's in-memory exporter and reader,
per connection (the global providers are never set in the test processes)."""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path
from typing import Any

import msgspec
import pytest
import trio
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import SpanKind, StatusCode

from mcpl_host import (
    Closed,
    Connection,
    CreateMessageParams,
    Event,
    HookContext,
    HttpTarget,
    Reconnect,
    RequestError,
    ServerRequest,
    SpawnError,
    StdioTarget,
)

from ..driver.peer import Peer, PeerSupply, memory_connection
from ..mcpl.test_connection import PUSH, Hooks, accept, grant_settled, mcpl_handshake, request
from ..transports.http_server import ScriptedHttpServer
from ..transports.test_http_stateless import cut_once
from .recorded import Recorded

DEMO = [sys.executable, "-m", "mcpl_host.demo"]
SECRET = "s3cr3t-seams-token-9191"
# The context a server puts on a request it makes of the host (W3C traceparent).
SERVER_TRACE = 0x4BF92F3577B34DA6A3CE929D0E0E4736
SERVER_SPAN = 0x00F067AA0BA902B7
TRACEPARENT = f"00-{SERVER_TRACE:032x}-{SERVER_SPAN:016x}-01"


def children(spans: list[ReadableSpan], parent: ReadableSpan) -> list[ReadableSpan]:
    return [s for s in spans if s.parent is not None and s.parent.span_id == parent.context.span_id]


# -- requests the host serves ---------------------------------------------------------


async def _answer_of(peer: Peer, request_id: str) -> dict[str, Any]:
    while True:
        message: dict[str, Any] = await peer.recv()
        if message.get("id") == request_id:
            return message


async def test_a_served_request_is_a_server_span_under_the_context_the_server_sent() -> None:
    rec = Recorded()
    tracer = rec.tracer_provider.get_tracer("host app")

    async def sample(_params: CreateMessageParams, _context: HookContext) -> Any:
        with tracer.start_as_current_span("the hook's own work"):
            return {"role": "assistant", "content": {"type": "text", "text": "hi"}, "model": "m"}

    async def refuse(_request: ServerRequest) -> Any:
        raise RequestError(-32042, f"no: {SECRET}")

    conn, peer = memory_connection(
        versions=["2025-11-25"],
        sampling=sample,
        handlers={"x/refuse": refuse},
        telemetry=rec.telemetry,
        secrets=(SECRET,),
    )
    sampling = {
        "messages": [{"role": "user", "content": {"type": "text", "text": "q"}}],
        "maxTokens": 5,
        "_meta": {"traceparent": TRACEPARENT, "tracestate": "srv=1"},
    }
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(peer.handshake, "2025-11-25")
            # The context the connection is opened in: not the served span's (it may be
            # long over when the server asks); the transport's connect span is linked.
            with tracer.start_as_current_span("host"):
                async with conn:
                    await peer.send(request("s-1", "sampling/createMessage", sampling))
                    assert "result" in await _answer_of(peer, "s-1")
                    await peer.send(request("s-2", "x/refuse", {}))
                    answer = await _answer_of(peer, "s-2")
                    assert answer["error"]["code"] == -32042
            nursery.cancel_scope.cancel()

    (served,) = rec.finished("sampling/createMessage")
    assert served.kind is SpanKind.SERVER
    assert served.parent is not None
    assert served.parent.is_remote
    assert (served.context.trace_id, served.parent.span_id) == (SERVER_TRACE, SERVER_SPAN)
    (connect,) = rec.finished("mcpl_host.connect")
    assert [link.context.span_id for link in served.links] == [connect.context.span_id]
    attributes = dict(served.attributes or {})
    assert attributes["mcp.method.name"] == "sampling/createMessage"
    assert attributes["jsonrpc.request.id"] == "s-1"
    assert attributes["mcp.protocol.version"] == "2025-11-25"
    assert served.status.status_code is StatusCode.UNSET
    (hook,) = rec.finished("the hook's own work")  # current in the serving task
    assert hook.parent is not None
    assert hook.parent.span_id == served.context.span_id

    (failed,) = rec.finished("x/refuse")  # no context sent: the host's own is the parent
    assert failed.kind is SpanKind.SERVER
    assert failed.parent is None  # no context in its _meta: a trace of its own
    assert [link.context.span_id for link in failed.links] == [connect.context.span_id]
    assert dict(failed.attributes or {})["error.type"] == "-32042"  # the code on the wire
    assert dict(failed.attributes or {})["rpc.response.status_code"] == "-32042"
    assert failed.status.status_code is StatusCode.ERROR

    durations = {
        (p.attributes["mcp.method.name"], p.attributes.get("error.type")): p.count
        for p in rec.points("mcp.server.operation.duration")
    }
    assert durations == {("sampling/createMessage", None): 1, ("x/refuse", "-32042"): 1}
    assert {p.value for p in rec.points("mcpl_host.server.requests.active")} == {0}
    assert SECRET not in rec.everything()


# A stdio server that, asked to call "ask", asks the host for its roots first, in the
# trace of the call: the traceparent it read, with a span id of its own.
ASKING_SERVER = r"""
import json, sys
for line in sys.stdin:
    message = json.loads(line)
    method, request_id = message.get("method"), message.get("id")
    if request_id is None:
        continue
    if method == "initialize":
        result = {"protocolVersion": message["params"]["protocolVersion"],
                  "capabilities": {"tools": {}}, "serverInfo": {"name": "asking"}}
    elif method == "tools/call":
        _, trace_id, _, flags = message["params"]["_meta"]["traceparent"].split("-")
        meta = {"traceparent": f"00-{trace_id}-%s-{flags}" % sys.argv[1]}
        print(json.dumps({"jsonrpc": "2.0", "id": "srv-1", "method": "roots/list",
                          "params": {"_meta": meta}}), flush=True)
        roots = json.loads(sys.stdin.readline())["result"]["roots"]
        result = {"content": [{"type": "text", "text": roots[0]["uri"]}]}
    else:
        result = {}
    print(json.dumps({"jsonrpc": "2.0", "id": request_id, "result": result}), flush=True)
"""


async def test_a_real_servers_request_in_the_trace_of_a_call_is_served_in_that_trace(
    tmp_path: Path,
) -> None:
    rec = Recorded()
    script = tmp_path / "server.py"
    script.write_text(ASKING_SERVER)
    server_span = f"{SERVER_SPAN:016x}"
    target = StdioTarget.of([sys.executable, str(script), server_span])
    with trio.fail_after(15):
        async with Connection(
            target, versions=["2025-11-25"], roots=["file:///work"], telemetry=rec.telemetry
        ) as conn:
            assert (await conn.call_tool("ask")).text == "file:///work"
    (call,) = rec.finished("tools/call ask")
    (served,) = rec.finished("roots/list")
    assert served.kind is SpanKind.SERVER
    assert served.parent is not None
    # The same trace on both sides: the server continued the call's, the host followed.
    assert served.context.trace_id == call.context.trace_id
    assert served.parent.span_id == SERVER_SPAN
    assert dict(served.attributes or {})["jsonrpc.request.id"] == "srv-1"
    assert served.status.status_code is StatusCode.UNSET


async def test_refused_messages_are_counted_by_a_fixed_reason_and_get_no_span() -> None:
    rec = Recorded()
    made_up = f"evil/{SECRET}"
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            conn, peer = memory_connection(
                versions=["2025-11-25"],
                telemetry=rec.telemetry,
                secrets=(SECRET,),
                max_message_bytes=4096,
            )
            nursery.start_soon(peer.handshake, "2025-11-25")
            async with conn:
                await peer.send(request("r-1", made_up, {}))  # no such method: -32601
                await peer.send(b'{"jsonrpc":"2.0","id":7,"method":3}')  # invalid: -32600
                await peer.send(b'{"jsonrpc":"2.0","method":"x","params":"' + b"a" * 5000 + b'"}')
                await peer.send(b'{"jsonrpc":"2.0","id":999,"result":{}}')  # answers nothing
                await peer.send(b'{"jsonrpc":"2.0","id":"p","method":"ping"}')
                answers = [await peer.recv() for _ in range(3)]
            nursery.cancel_scope.cancel()
    assert [a.get("error", {}).get("code") for a in answers] == [-32601, -32600, None]
    assert rec.counted("mcpl_host.refusals", "mcpl_host.reason") == {
        "method-not-found": 1,
        "answered-invalid": 1,
        "oversized": 1,
        "response-unmatched": 1,
    }
    served = [s for s in rec.all() if s.kind is SpanKind.SERVER]
    assert [s.name for s in served] == ["ping"]  # the refused ones have none
    assert SECRET not in rec.everything()
    assert "evil" not in rec.everything()


async def test_a_request_past_the_bound_is_busy_and_a_cancelled_one_ends_cancelled() -> None:
    rec = Recorded()
    started = trio.Event()

    async def forever(_request: ServerRequest) -> Any:
        started.set()
        await trio.sleep_forever()

    conn, peer = memory_connection(
        versions=["2025-11-25"],
        handlers={"x/slow": forever},
        max_server_requests=1,
        telemetry=rec.telemetry,
    )
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(peer.handshake, "2025-11-25")
            async with conn:
                await peer.send(request("a", "x/slow", {}))
                await started.wait()
                await peer.send(request("b", "x/slow", {}))  # past max_server_requests
                assert (await peer.recv())["error"]["code"] == -32603
                await peer.send(
                    b'{"jsonrpc":"2.0","method":"notifications/cancelled",'
                    b'"params":{"requestId":"a"}}'
                )
                while not rec.finished("x/slow"):
                    await trio.sleep(0.01)
            nursery.cancel_scope.cancel()
    (cancelled,) = rec.finished("x/slow")  # the refused one has none
    assert dict(cancelled.attributes or {})["jsonrpc.request.id"] == "a"
    assert dict(cancelled.attributes or {})["error.type"] == "cancelled"
    assert cancelled.status.status_code is StatusCode.ERROR
    assert rec.counted("mcpl_host.refusals", "mcpl_host.reason") == {"busy": 1}


# -- bytes ------------------------------------------------------------------------------


async def test_bytes_counted_equal_the_lines_on_the_wire() -> None:
    rec = Recorded()
    with trio.fail_after(15):
        async with Connection(
            StdioTarget.of(DEMO), telemetry=rec.telemetry, on_wire=rec.on_wire
        ) as conn:
            await conn.list_tools()
            async with trio.open_nursery() as nursery:  # writes grouped, reads in bursts
                for n in range(8):
                    nursery.start_soon(conn.call_tool, "echo", {"text": "x" * n})
    io = rec.counted("mcpl_host.transport.io", "network.io.direction")
    # A line on the wire is the line and its newline.
    assert io == {
        "transmit": sum(len(line) + 1 for line in rec.lines("out")),
        "receive": sum(len(line) + 1 for line in rec.lines("in")),
    }
    assert io["transmit"] > 0
    assert io["receive"] > 0


# -- connecting -------------------------------------------------------------------------


async def test_the_connect_span_has_spawn_and_handshake_steps_and_the_handshake_requests() -> None:
    rec = Recorded()
    target = StdioTarget.of(DEMO, env={"SEAMS_API_TOKEN": SECRET}, inherit_env=True)
    with trio.fail_after(15):
        async with Connection(target, telemetry=rec.telemetry, on_wire=rec.on_wire) as conn:
            assert conn.telemetry is not None
            (connect,) = rec.finished("mcpl_host.connect")  # over once connected
            assert conn.telemetry.connection is not None
            assert conn.telemetry.connection.span.get_span_context() == connect.context
            await conn.list_tools()
    spans = rec.all()
    assert connect.kind is SpanKind.INTERNAL
    assert connect.parent is None
    assert connect.status.status_code is StatusCode.UNSET
    assert dict(connect.attributes or {})["network.transport"] == "pipe"
    steps = children(spans, connect)
    assert [s.name for s in steps] == ["mcpl_host.spawn", "mcpl_host.handshake"]
    spawn, handshake = steps
    assert spawn.end_time is not None
    assert handshake.start_time is not None
    assert spawn.end_time <= handshake.start_time
    exchange = children(spans, handshake)
    assert [(s.name, s.kind) for s in exchange] == [
        ("server/discover", SpanKind.CLIENT),  # the demo refuses it: initialize follows
        ("initialize", SpanKind.CLIENT),
        ("notifications/initialized", SpanKind.CLIENT),
    ]
    discover, initialize, initialized = exchange
    assert dict(discover.attributes or {})["error.type"] == "-32600"
    assert discover.status.status_code is StatusCode.ERROR
    assert initialize.status.status_code is StatusCode.UNSET
    (init_line,) = rec.sent("initialize")
    assert dict(initialize.attributes or {})["jsonrpc.request.id"] == str(init_line["id"])
    # The initialize span's own context, unprefixed in the request's _meta.
    _, trace_id, span_id, _ = init_line["params"]["_meta"]["traceparent"].split("-")
    assert (int(trace_id, 16), int(span_id, 16)) == (
        initialize.context.trace_id,
        initialize.context.span_id,
    )
    (discover_line,) = rec.sent("server/discover")
    assert discover_line["params"]["_meta"]["traceparent"].split("-")[2] == (
        f"{discover.context.span_id:016x}"
    )
    assert "jsonrpc.request.id" not in dict(initialized.attributes or {})
    assert initialized.end_time is not None
    assert handshake.end_time is not None
    assert initialized.end_time <= handshake.end_time
    # The one transport was connected, then closed: one session's duration.
    (session,) = rec.points("mcp.client.session.duration")
    assert session.count == 1
    assert session.attributes["mcp.protocol.version"] == "2025-11-25"
    assert SECRET not in rec.everything()


async def test_a_failed_connect_ends_its_span_and_its_step_failed(tmp_path: Path) -> None:
    rec = Recorded()
    missing = StdioTarget.of([str(tmp_path / "no-such-program")])
    with trio.fail_after(10), pytest.raises(SpawnError):
        async with Connection(missing, telemetry=rec.telemetry):
            pass  # pragma: no cover - never connected
    (connect,) = rec.finished("mcpl_host.connect")
    assert connect.status.status_code is StatusCode.ERROR
    assert dict(connect.attributes or {})["error.type"] == "SpawnError"
    (spawn,) = children(rec.all(), connect)  # no handshake was begun
    assert spawn.name == "mcpl_host.spawn"
    assert spawn.status.status_code is StatusCode.ERROR
    assert rec.points("mcp.client.session.duration") == []  # never connected


async def test_a_reconnect_that_gives_up_has_an_event_per_failed_attempt(
    autojump_clock: trio.abc.Clock,
) -> None:
    rec = Recorded()
    supply = PeerSupply()
    events: list[Event] = []
    policy = Reconnect(initial=1.0, maximum=2.0, jitter=0.0, max_attempts=2, stable=0)
    conn = Connection(
        supply.factory,
        versions=["2025-11-25"],
        reconnect=policy,
        telemetry=rec.telemetry,
        on_event=events.append,
    )
    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(supply.handshake_next)
            async with conn:
                first = await supply.handshaken(0)
                supply.refuse = 100
                await first.stream.aclose()
                while not any(isinstance(e, Closed) for e in events):
                    await trio.sleep(0.5)
    (reconnect,) = rec.finished("mcpl_host.reconnect")
    assert reconnect.status.status_code is StatusCode.ERROR
    assert dict(reconnect.attributes or {})["error.type"] == "TransportError"
    attempts = [dict(e.attributes or {}) for e in reconnect.events]
    assert attempts == [
        {"mcpl_host.attempt": n, "mcpl_host.outcome": "failure", "error.type": "TransportError"}
        for n in (1, 2)
    ]
    assert rec.counted("mcpl_host.reconnects", "mcpl_host.outcome") == {"failure": 2}
    first_connect, *failed = rec.finished("mcpl_host.connect")
    assert [link.context.span_id for link in reconnect.links] == [first_connect.context.span_id]
    assert len(failed) == 2
    for span in failed:
        assert span.parent is not None
        assert span.parent.span_id == reconnect.context.span_id
        assert span.status.status_code is StatusCode.ERROR
        assert [s.name for s in children(rec.all(), span)] == ["mcpl_host.open"]


# A stdio server that answers tools/call "wait" only in a process started after the
# one that first read it (a marker file says so): the call is pending across a kill -9.
RESTARTED_SERVER = r"""
import json, os, sys
marker = sys.argv[1]
for line in sys.stdin:
    message = json.loads(line)
    method, request_id = message.get("method"), message.get("id")
    if request_id is None:
        continue
    if method == "initialize":
        result = {"protocolVersion": message["params"]["protocolVersion"],
                  "capabilities": {"tools": {}}, "serverInfo": {"name": "restarted"}}
    elif method == "tools/list":
        result = {"tools": [{"name": "wait", "inputSchema": {"type": "object"},
                             "annotations": {"readOnlyHint": True}}]}
    elif method == "tools/call":
        if not os.path.exists(marker):
            open(marker, "w").close()
            continue  # never answered by this process
        result = {"content": [{"type": "text", "text": "after restart"}]}
    else:
        print(json.dumps({"jsonrpc": "2.0", "id": request_id,
                          "error": {"code": -32601, "message": "Method not found"}}), flush=True)
        continue
    print(json.dumps({"jsonrpc": "2.0", "id": request_id, "result": result}), flush=True)
"""


async def test_a_reconnect_links_the_lost_connect_span_and_a_rebound_request_the_new_one(
    tmp_path: Path,
) -> None:
    rec = Recorded()
    script = tmp_path / "server.py"
    script.write_text(RESTARTED_SERVER)
    marker = tmp_path / "first-call-read"
    target = StdioTarget.of([sys.executable, str(script), str(marker)])
    policy = Reconnect(initial=0.05, maximum=0.1, jitter=0.0, stable=0)
    events: list[Event] = []
    with trio.fail_after(20):
        async with Connection(
            target,
            versions=["2025-11-25"],
            reconnect=policy,
            telemetry=rec.telemetry,
            on_wire=rec.on_wire,
            on_event=events.append,
        ) as conn:
            await conn.list_tools()  # readOnlyHint: the call is safe to repeat
            outcome: list[Any] = []

            async def call() -> None:
                outcome.append(await conn.call_tool("wait"))

            async with trio.open_nursery() as nursery:
                nursery.start_soon(call)
                while not marker.exists():  # the first process read it, and holds it
                    await trio.sleep(0.01)
                assert conn.transport is not None
                os.kill(conn.transport.pid, signal.SIGKILL)
            assert outcome[0].text == "after restart"

    spans = rec.all()
    first, second = rec.finished("mcpl_host.connect")
    (reconnect,) = rec.finished("mcpl_host.reconnect")
    assert reconnect.kind is SpanKind.INTERNAL
    assert [link.context.span_id for link in reconnect.links] == [first.context.span_id]
    assert second.parent is not None
    assert second.parent.span_id == reconnect.context.span_id  # the new transport's
    assert [s.name for s in children(spans, second)] == ["mcpl_host.spawn", "mcpl_host.handshake"]
    attempts = [e for e in reconnect.events if e.name == "mcpl_host.attempt"]
    assert [dict(e.attributes or {}) for e in attempts] == [
        {"mcpl_host.attempt": 1, "mcpl_host.outcome": "success"}
    ]
    assert rec.counted("mcpl_host.reconnects", "mcpl_host.outcome") == {"success": 1}

    old, new = (line["id"] for line in rec.sent("tools/call"))
    assert old != new
    (call_span,) = rec.finished("tools/call wait")
    rebinds = [e for e in call_span.events if e.name == "mcpl_host.rebind"]
    assert [dict(e.attributes or {}) for e in rebinds] == [
        {"mcpl_host.previous_request_id": str(old)}
    ]
    assert dict(call_span.attributes or {})["jsonrpc.request.id"] == str(new)
    assert [(link.context.span_id, dict(link.attributes or {})) for link in call_span.links] == [
        (second.context.span_id, {"mcpl_host.link": "transport"})
    ]
    assert call_span.status.status_code is StatusCode.UNSET
    # Two transports were connected and are over: two sessions.
    (session,) = rec.points("mcp.client.session.duration")
    assert session.count == 2


async def test_a_broken_response_stream_reissue_is_a_retry_event() -> None:
    rec = Recorded()
    with (
        ScriptedHttpServer(cut_once("tools/list"), stateless=True) as server,
        trio.fail_after(10),
    ):
        async with Connection(HttpTarget(server.url), telemetry=rec.telemetry) as conn:
            await conn.list_tools()
        first, second = (p.body["id"] for p in server.posted("tools/list"))
    (span,) = rec.finished("tools/list")
    retries = [dict(e.attributes or {}) for e in span.events if e.name == "mcpl_host.retry"]
    assert retries == [{"mcpl_host.previous_request_id": str(first)}]
    assert dict(span.attributes or {})["jsonrpc.request.id"] == str(second)
    assert not span.links  # the same transport: no new connect span to link
    (connect,) = rec.finished("mcpl_host.connect")
    steps = children(rec.all(), connect)
    assert [s.name for s in steps] == ["mcpl_host.open", "mcpl_host.handshake"]
    assert [s.name for s in children(rec.all(), steps[1])] == ["server/discover"]


# -- MCPL -------------------------------------------------------------------------------


async def test_mcpl_grant_changes_are_events_and_denied_methods_are_refusals() -> None:
    rec = Recorded()
    hooks = Hooks()
    events: list[Event] = []
    conn, peer = memory_connection(
        mcpl=hooks.config(), on_event=events.append, telemetry=rec.telemetry
    )
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(conn.run)
            update = await mcpl_handshake(peer)
            await peer.send(request(1, "push/event", PUSH))  # before the receipt: denied
            assert (await peer.recv())["error"]["code"] == -32002
            await accept(peer, update)
            await grant_settled(events)
            await peer.send(request(2, "push/event", {**PUSH, "eventId": "e-2"}))
            assert (await peer.recv())["result"]["accepted"] is True
            await conn.aclose()
            nursery.cancel_scope.cancel()
    (update_span,) = rec.finished("featureSets/update")
    (grant,) = [e for e in update_span.events if e.name == "mcpl_host.mcpl.grant"]
    attributes = dict(grant.attributes or {})
    assert sorted(attributes["mcpl_host.mcpl.granted"]) == [
        "inferenceRequest",
        "inferenceRequest.streaming",
        "pushEvents",
    ]
    assert list(attributes["mcpl_host.mcpl.denied"]) == ["modelInfo", "tools"]
    assert rec.counted("mcpl_host.refusals", "mcpl_host.reason") == {"denied-by-policy": 1}
    (served,) = rec.finished("push/event")  # only the admitted one reached its hook
    assert served.kind is SpanKind.SERVER
    assert dict(served.attributes or {})["jsonrpc.request.id"] == "2"
    assert msgspec.json.decode(peer.received[0])["params"]["_meta"]["traceparent"]
