"""The CLIENT span and metrics of every request the host sends, against the real demo
server over stdio, with the SDK's in-memory exporter and reader (per connection: the
global providers are never set in the test processes)."""

from __future__ import annotations

import sys
from typing import Any

import pytest
import trio
from opentelemetry.trace import SpanKind, StatusCode

from mcpl_host import Connection, ConnectionManager, RequestError, RequestTimeout, StdioTarget

from .recorded import Recorded

DEMO = StdioTarget.of([sys.executable, "-m", "mcpl_host.demo"])
SECRET = "s3cr3t-token-value-4242"


def connect(rec: Recorded, target: StdioTarget = DEMO, **options: Any) -> Connection:
    return Connection(target, telemetry=rec.telemetry, on_wire=rec.on_wire, **options)


async def test_a_tool_call_is_a_client_span_under_the_callers_span_and_its_context_is_on_the_wire() -> (
    None
):
    rec = Recorded()
    tracer = rec.tracer_provider.get_tracer("agent")
    with trio.fail_after(10):
        async with connect(rec) as conn:
            with tracer.start_as_current_span("agent step") as outer:
                assert (await conn.call_tool("echo", {"text": "hi"})).text == "hi"
            version = conn.protocol_version
    (span,) = rec.finished("tools/call echo")
    assert span.kind is SpanKind.CLIENT
    assert span.parent is not None
    assert span.parent.span_id == outer.get_span_context().span_id
    assert span.context.trace_id == outer.get_span_context().trace_id
    (line,) = rec.sent("tools/call")
    attributes = dict(span.attributes or {})
    assert attributes == {
        "mcp.method.name": "tools/call",
        "gen_ai.tool.name": "echo",
        "gen_ai.operation.name": "execute_tool",
        "jsonrpc.request.id": str(line["id"]),
        "mcp.protocol.version": version,
        "network.transport": "pipe",
        "mcpl_host.server.name": conn.name,
    }
    assert span.status.status_code is StatusCode.UNSET
    # The W3C context of this very span, unprefixed in _meta (SEP-414), arguments intact.
    traceparent = line["params"]["_meta"]["traceparent"]
    version, trace_id, span_id, _flags = traceparent.split("-")
    assert (version, int(trace_id, 16), int(span_id, 16)) == (
        "00",
        span.context.trace_id,
        span.context.span_id,
    )
    assert line["params"]["arguments"] == {"text": "hi"}


async def test_errors_are_typed_on_the_span_and_in_the_duration_metric() -> None:
    rec = Recorded()
    with trio.fail_after(10):
        async with connect(rec) as conn:
            with pytest.raises(RequestError):
                await conn.request("tools/nonexistent", {})
            tool_error = await conn.call_tool("sleep", {"seconds": 999})
            assert tool_error.is_error
            with pytest.raises(RequestTimeout):
                await conn.call_tool("sleep", {"seconds": 5}, timeout=0.2)
            with trio.move_on_after(0.2):
                await conn.call_tool("sleep", {"seconds": 5})
    (refused,) = rec.finished("tools/nonexistent")
    assert refused.attributes is not None
    assert refused.attributes["error.type"] == refused.attributes["rpc.response.status_code"]
    assert refused.attributes["error.type"] == "-32601"
    assert refused.status.status_code is StatusCode.ERROR
    assert refused.status.description  # the server's message, made safe
    tool_error_span, timed_out, cancelled = rec.finished("tools/call sleep")
    assert tool_error_span.attributes is not None
    assert timed_out.attributes is not None
    assert tool_error_span.attributes["error.type"] == "tool_error"
    assert "rpc.response.status_code" not in tool_error_span.attributes
    assert timed_out.attributes["error.type"] == "timeout"
    assert cancelled.attributes is not None
    assert cancelled.attributes["error.type"] == "cancelled"
    outcomes = sorted(
        (p.attributes["mcp.method.name"], p.attributes.get("error.type", ""), p.count)
        for p in rec.points("mcp.client.operation.duration")
        if p.attributes["mcp.method.name"] in ("tools/call", "tools/nonexistent")
    )
    assert outcomes == [
        ("tools/call", "cancelled", 1),
        ("tools/call", "timeout", 1),
        ("tools/call", "tool_error", 1),
        ("tools/nonexistent", "-32601", 1),
    ]
    # Every request is over: nothing counted in flight any more.
    assert all(p.value == 0 for p in rec.points("mcpl_host.client.requests.active"))


async def test_progress_is_an_event_of_the_span() -> None:
    rec = Recorded()
    seen: list[float] = []
    with trio.fail_after(10):
        async with connect(rec) as conn:
            await conn.call_tool(
                "countdown",
                {"steps": 3, "delay": 0},
                on_progress=lambda progress, total, message: seen.append(progress),
            )
    (span,) = rec.finished("tools/call countdown")
    events = [e for e in span.events if e.name == "mcpl_host.progress"]
    assert [e.attributes["mcpl_host.progress"] for e in events if e.attributes] == seen
    assert len(seen) == 3


async def test_a_context_the_caller_wrote_wins_and_no_span_means_no_context() -> None:
    rec = Recorded()
    own = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
    with trio.fail_after(10):
        async with connect(rec) as conn:
            await conn.request(
                "tools/call",
                {"name": "echo", "arguments": {"text": "a"}, "_meta": {"traceparent": own}},
            )
    (line,) = rec.sent("tools/call")
    assert line["params"]["_meta"] == {"traceparent": own}

    # The global provider of a process with no SDK: a no-op tracer, no context to carry,
    # and the line is the one a host without telemetry writes.
    lines: dict[bool | None, list[bytes]] = {None: [], False: []}
    for option, out in lines.items():
        with trio.fail_after(10):
            async with Connection(
                DEMO,
                telemetry=option,
                on_wire=lambda d, line, out=out: out.append(line) if d == "out" else None,
            ) as conn:
                assert (conn.telemetry is None) is (option is False)
                await conn.call_tool("echo", {"text": "b"})
    assert lines[None] == lines[False]
    assert b"traceparent" not in b"".join(lines[None])


async def test_peer_and_caller_text_is_redacted_and_content_only_on_opt_in() -> None:
    target = StdioTarget.of(
        [sys.executable, "-m", "mcpl_host.demo"], env={"DEMO_TOKEN": SECRET}, inherit_env=True
    )
    quiet, loud = Recorded(), Recorded(record_content=True, content_limit=64)
    for rec in (quiet, loud):
        with trio.fail_after(10):
            async with connect(rec, target) as conn:
                await conn.call_tool("echo", {"text": f"{SECRET} " + "x" * 500})
                with pytest.raises(RequestError):
                    await conn.request("tools/call", {"name": f"no-{SECRET}\n"})
    for rec in (quiet, loud):
        assert SECRET not in rec.everything()
    (echo,) = quiet.finished("tools/call echo")
    assert echo.attributes is not None
    assert "gen_ai.tool.call.arguments" not in echo.attributes
    (echo,) = loud.finished("tools/call echo")
    assert echo.attributes is not None
    arguments, result = (
        echo.attributes["gen_ai.tool.call.arguments"],
        echo.attributes["gen_ai.tool.call.result"],
    )
    assert isinstance(arguments, str)
    assert isinstance(result, str)
    assert arguments.startswith('{"text":"')
    assert len(arguments) <= 64
    assert '"content"' in result
    assert len(result) <= 64
    (odd,) = [s for s in loud.spans.get_finished_spans() if s.name.startswith("tools/call no-")]
    assert "\n" not in odd.name  # escaped


async def test_a_resource_read_names_its_uri_in_an_attribute_not_in_the_span_name() -> None:
    rec = Recorded()
    with trio.fail_after(10):
        async with connect(rec) as conn:
            (resource, *_) = await conn.list_resources()
            await conn.read_resource(resource.uri)
    (span,) = rec.finished("resources/read")
    assert span.attributes is not None
    assert span.attributes["mcp.resource.uri"] == resource.uri


async def test_a_manager_gives_every_server_its_telemetry_under_its_own_name() -> None:
    rec = Recorded()
    with trio.fail_after(15):
        async with ConnectionManager(
            {"one": DEMO, "two": DEMO}, telemetry=rec.telemetry
        ) as manager:
            await manager.wait_ready()
            await manager.call_tool("one__echo", {"text": "a"})
            await manager.call_tool("two__echo", {"text": "b"})
    names = sorted(
        str((s.attributes or {})["mcpl_host.server.name"]) for s in rec.finished("tools/call echo")
    )
    assert names == ["one", "two"]
    points = rec.points("mcp.client.operation.duration")
    assert sorted(
        str(p.attributes["mcpl_host.server.name"])
        for p in points
        if p.attributes["mcp.method.name"] == "tools/call"
    ) == ["one", "two"]
