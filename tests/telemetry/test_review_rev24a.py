"""Review of issue 24's telemetry core and client-request path (reviewer rev24a).

Each test shows one defect and fails until it is fixed. Per-connection providers with
the SDK's in-memory exporter and reader (the global providers are never set); the
server is the in-memory scripted peer of tests/driver.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import msgspec
import pytest
import trio
from opentelemetry import metrics
from opentelemetry.metrics import _internal as metrics_internal

from mcpl_host import Connection, Reconnect, RequestError, StdioTarget
from mcpl_host.protocol.profiles import KNOWN_REVISIONS, handshake_era
from mcpl_host.protocol.redact import Redactor
from mcpl_host.telemetry import instruments_for

from ..driver.peer import Peer, PeerSupply, memory_connection
from .recorded import Recorded

SECRET = "s3cr3t-token-value-4242"


@asynccontextmanager
async def connected(telemetry: Any, **kwargs: Any) -> AsyncIterator[tuple[Connection, Peer]]:
    """A connection with ``telemetry`` that has finished its handshake with a scripted
    peer (the handshake era: no server/discover)."""
    kwargs.setdefault("versions", handshake_era(KNOWN_REVISIONS))
    conn, peer = memory_connection(telemetry=telemetry, **kwargs)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(peer.handshake)
        async with conn:
            yield conn, peer
        nursery.cancel_scope.cancel()


# -- 1. params JSON cannot carry: the span is never ended, the request counted forever ---


async def test_params_msgspec_refuses_with_a_type_error_still_end_the_span() -> None:
    """msgspec raises ``TypeError`` (not ``msgspec.EncodeError``) for a value of a type
    it cannot encode: Outbound.start catches only EncodeError, so the span it started is
    never ended and the in-flight gauge keeps the request for good."""
    rec = Recorded()
    with trio.fail_after(3):
        async with connected(rec.telemetry) as (conn, _peer):
            with pytest.raises(TypeError):
                await conn.request("tools/call", {"name": "echo", "arguments": {"x": object()}})
    assert rec.in_flight() == 0, "the refused request is still counted in flight"
    (span,) = rec.finished("tools/call echo")
    assert (span.attributes or {}).get("error.type") == "TypeError"


# -- 2. a tool error answered to Connection.request is a success on the span ----------


async def test_a_tool_error_is_an_error_whatever_the_result_type() -> None:
    """``conn.request("tools/call", ...)`` decodes the result as plain JSON (a dict):
    _tool_error looks for an ``is_error`` attribute, so ``isError: true`` is missed and
    the span and metric say the call succeeded (the conventions: ``tool_error``)."""
    rec = Recorded()
    with trio.fail_after(3):
        async with connected(rec.telemetry) as (conn, peer), trio.open_nursery() as nursery:
            nursery.start_soon(conn.request, "tools/call", {"name": "flaky", "arguments": {}})
            call = await peer.expect("tools/call")
            await peer.answer(
                call, {"content": [{"type": "text", "text": "boom"}], "isError": True}
            )
    (span,) = rec.finished("tools/call flaky")
    assert (span.attributes or {}).get("error.type") == "tool_error"
    (point,) = [
        p
        for p in rec.points("mcp.client.operation.duration")
        if p.attributes.get("mcp.method.name") == "tools/call"
    ]
    assert point.attributes.get("error.type") == "tool_error"


# -- 3. telemetry breaks a request a host without it sends -----------------------------


def _deep_params() -> msgspec.Raw:
    # Valid JSON, nested deeper than msgspec's decoder takes (the interpreter's limit).
    depth = 1200
    return msgspec.Raw(b'{"name":"echo","arguments":{"deep":' + b"[" * depth + b"]" * depth + b"}}")


async def _call_deep(telemetry: Any) -> bytes:
    """Send the deep Raw params; answer the line the peer gets (read without decoding
    it: too deep for the peer's decoder too); return that line."""
    async with connected(telemetry) as (conn, peer), trio.open_nursery() as nursery:
        nursery.start_soon(conn.request, "tools/call", _deep_params())
        line = await peer.recv_line()
        found = re.search(rb'"id":(\d+)', line)
        assert found is not None
        await peer.answer({"id": int(found.group(1))}, {"content": []})
    return line


async def test_raw_params_telemetry_cannot_decode_are_sent_as_written() -> None:
    """Without telemetry, Raw params go on the wire as the caller wrote them. With a
    span to carry, with_trace decodes them to add ``_meta``: for JSON nested past the
    decoder's depth that raises RecursionError out of Outbound.start, the request
    fails, and the span it had started is never ended (in flight for good)."""
    with trio.fail_after(3):
        assert b'"deep":[[[' in await _call_deep(False)  # a host without telemetry sends it
    rec = Recorded()
    with trio.fail_after(3):
        assert b'"deep":[[[' in await _call_deep(rec.telemetry)
    assert rec.in_flight() == 0
    assert len(rec.finished("tools/call")) == 1


# -- 4. the caller's method name is not escaped, cut or redacted -------------------------


async def test_the_method_name_is_made_safe_like_the_tool_name() -> None:
    """The tool name passes the Redactor (escaped, cut) before it names the span; the
    method, caller text too, goes as it is into the span name, ``mcp.method.name`` and
    every metric attribute set: a newline, a secret, any length."""
    rec = Recorded()
    method = f"x/{SECRET}\n" + "y" * 1000
    redactor = Redactor([SECRET])
    with trio.fail_after(3):
        async with connected(rec.telemetry) as (conn, peer):
            assert conn.telemetry is not None
            conn.telemetry.redactor = redactor  # the target's own secrets, as redactor_for

            async def ask() -> None:
                with pytest.raises(RequestError):  # the server does not know it
                    await conn.request(method, {})

            async with trio.open_nursery() as nursery:
                nursery.start_soon(ask)
                request = await peer.recv()
                await peer.send(
                    {
                        "jsonrpc": "2.0",
                        "id": request["id"],
                        "error": {"code": -32601, "message": "Method not found"},
                    }
                )
    texts = [s.name for s in rec.finished()] + [
        str(value)
        for attributes in [s.attributes or {} for s in rec.finished()]
        + [p.attributes for p in rec.points("mcp.client.operation.duration")]
        + [p.attributes for p in rec.points("mcpl_host.client.requests.active")]
        for value in attributes.values()
    ]
    assert not [t for t in texts if SECRET in t], "the secret is shown"
    assert not [t for t in texts if "\n" in t], "a raw newline is shown"
    assert not [t for t in texts if len(t) > 256], "1000 characters are shown"


# -- 5. a server picks the served-request metric's attributes ---------------------------


def test_method_names_make_a_bounded_set_of_metric_series() -> None:
    """The server's method names (and the caller's) are peer text: a server that sends a
    new name per request must not make a new series per request. The first 64 names a
    connection sees are kept in its metrics, any more are ``_OTHER``; spans keep every
    name (made safe)."""
    rec = Recorded()
    inst = instruments_for(rec.telemetry, server="s", target=object(), redactor=Redactor([]))
    assert inst is not None
    inst.serve("sampling/createMessage", 99, None).end()
    for n in range(100):
        inst.serve(f"made/up/{n}", n, None).end(-32601, "Method not found")
    methods = {p.attributes["mcp.method.name"] for p in rec.points("mcp.server.operation.duration")}
    assert "sampling/createMessage" in methods
    assert "_OTHER" in methods
    assert len(methods) == 65
    assert "made/up/99" in {s.name for s in rec.spans.get_finished_spans()}


# -- 6. the result of a failed tool is recorded as if it succeeded ------------------------


async def test_a_tool_errors_result_is_not_recorded_as_the_tools_result() -> None:
    """The conventions record ``gen_ai.tool.call.result`` "if execution was
    successful": RequestTrace.end records it for an ``isError: true`` result too."""
    rec = Recorded(record_content=True)
    with trio.fail_after(3):
        async with connected(rec.telemetry) as (conn, peer), trio.open_nursery() as nursery:
            nursery.start_soon(conn.call_tool, "flaky", {})
            call = await peer.expect("tools/call")
            await peer.answer(
                call, {"content": [{"type": "text", "text": "boom"}], "isError": True}
            )
    (span,) = rec.finished("tools/call flaky")
    attributes = span.attributes or {}
    assert attributes.get("error.type") == "tool_error"
    assert "gen_ai.tool.call.result" not in attributes


# -- 7. every connection leaks instruments into the global proxy meter provider -------------


def test_connections_on_the_global_providers_do_not_pile_up_proxy_meters() -> None:
    """With opentelemetry-api installed and no SDK configured (the default: telemetry on,
    global providers), every Connection made calls ``metrics.get_meter`` and creates
    its eight instruments: the API's proxy meter provider keeps every proxy meter (and
    its instruments) it hands out, for good, to forward them to an SDK set later. A
    process that makes connections as it goes (a connection per job, the shell) grows
    without bound (Instruments: "a meter provider gives back the instrument it made
    already" holds for the SDK, not the proxy)."""
    proxy = metrics.get_meter_provider()
    if not isinstance(proxy, metrics_internal._ProxyMeterProvider):
        pytest.skip("a global meter provider was set in this process")
    before = len(proxy._meters)
    for _ in range(50):
        conn = Connection(StdioTarget.of(["true"]))
        assert conn.telemetry is not None  # on by default: the API is installed
    grown = len(proxy._meters) - before
    assert grown <= 1, f"{grown} proxy meters kept for 50 connections"


# -- 8. the host's own background requests join whatever span was current at connect -----


async def test_the_hosts_own_requests_are_not_children_of_the_span_the_connection_opened_in() -> (
    None
):
    """The driver's tasks copy the context of the task that entered the connection: a
    request the host makes on its own (a subscription restored after a reconnect, the
    2026-07-28 listen) gets as parent whatever span was current at ``async with conn``
    (a web request's, a startup step's), ended long before: that trace grows children
    for the connection's whole life. They should start their own trace (linked to the
    connection's span once there is one)."""
    rec = Recorded()
    tracer = rec.tracer_provider.get_tracer("app")
    supply = PeerSupply()
    caps = {"resources": {"subscribe": True}}

    async def answer_all(peer: Peer) -> None:
        with contextlib.suppress(EOFError, trio.BrokenResourceError, trio.ClosedResourceError):
            while True:
                message = await peer.recv()
                if "id" in message:
                    await peer.answer(message, {})

    with trio.fail_after(3):
        async with trio.open_nursery() as nursery:
            conn = Connection(
                supply.factory,
                reconnect=Reconnect(initial=0.01, jitter=0.0),
                telemetry=rec.telemetry,
                versions=handshake_era(KNOWN_REVISIONS),
            )

            async def first_handshake() -> None:
                peer = await supply.next_peer()
                await peer.handshake(capabilities=caps)
                nursery.start_soon(answer_all, peer)
                await trio.sleep_forever()

            with tracer.start_as_current_span("startup") as startup:
                nursery.start_soon(first_handshake)
                await nursery.start(conn.run)
            await conn.subscribe_resource("file:///a")  # no span current: a root
            # Lose the transport: the next one is asked for the subscription again.
            conn_epoch = conn._epoch
            assert conn_epoch is not None
            await conn_epoch.transport.aclose()
            second = await supply.next_peer()
            await second.handshake(capabilities=caps)
            restore = await second.expect("resources/subscribe")
            await second.answer(restore, {})
            while len(rec.finished("resources/subscribe")) < 2:
                await trio.sleep(0.01)
            await conn.aclose()
            nursery.cancel_scope.cancel()
    _, restored = rec.finished("resources/subscribe")
    assert (
        restored.parent is None or restored.parent.span_id != startup.get_span_context().span_id
    ), "the restore, sent on the host's own, is a child of the 'startup' span"
