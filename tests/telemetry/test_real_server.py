"""A real server that reads the ``_meta`` traceparent (the official Python SDK, mcp
2.3.0: tests/telemetry/real_server.py) shows the same trace on both sides: its SERVER
span for ``tools/call`` continues the host's trace under the host's CLIENT span, and the
tool itself sees that trace as current. Over stdio, and over Streamable HTTP."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import trio
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import SpanKind

from mcpl_host import Connection, HttpTarget, StdioTarget
from tests.interop.servers import _free_port, over_http

from .sdk_fixtures import Sdk, sdk_fixture  # noqa: F401 - the fixture "sdk"

SERVER = Path(__file__).with_name("real_server.py")
# In the target's configuration, never in a span, an event or a metric.
SECRET = "proof-secret-7f3a9c1d"


def _server_spans(spans_file: Path, name: str, timeout: float = 10.0) -> list[dict[str, Any]]:
    """The server's finished spans named ``name`` (its exporter writes them as they end,
    which may be just after the host read the answer)."""
    deadline = time.monotonic() + timeout
    while True:
        found = [
            record
            for line in spans_file.read_text().splitlines()
            if (record := json.loads(line))["name"] == name
        ]
        if found or time.monotonic() > deadline:
            return found
        time.sleep(0.02)


def _no_secret(spans: list[ReadableSpan]) -> None:
    for span in spans:
        texts = [span.name, *map(str, (span.attributes or {}).values())]
        for event in span.events:
            texts += [event.name, *map(str, (event.attributes or {}).values())]
        assert not [text for text in texts if SECRET in text], span.name


async def _same_trace(sdk: Sdk, target: Any, spans_file: Path) -> None:
    tracer = sdk.tracer_provider.get_tracer("agent")
    with trio.fail_after(20):
        async with Connection(target, telemetry=sdk.telemetry()) as conn:
            with tracer.start_as_current_span("agent turn") as turn:
                result = await conn.call_tool("whoami", {})
    seen_trace, seen_span = str(result.text).split()

    client = sdk.one("tools/call whoami")
    assert client.kind is SpanKind.CLIENT
    assert client.parent is not None
    assert client.parent.span_id == turn.get_span_context().span_id
    trace_id = f"{client.context.trace_id:032x}"
    span_id = f"{client.context.span_id:016x}"
    assert trace_id == f"{turn.get_span_context().trace_id:032x}"

    (server,) = await trio.to_thread.run_sync(_server_spans, spans_file, "tools/call whoami")
    assert server["kind"] == "SERVER"
    assert server["trace_id"] == trace_id  # the same trace on both sides
    assert server["parent_span_id"] == span_id  # under the host's CLIENT span
    assert server["parent_remote"] is True
    assert server["attributes"]["gen_ai.tool.name"] == "whoami"
    # What the tool itself saw as current: the server's span, in the host's trace.
    assert (seen_trace, seen_span) == (trace_id, server["span_id"])
    _no_secret(sdk.spans())


async def test_stdio_server_continues_the_hosts_trace(sdk: Sdk, tmp_path: Path) -> None:
    spans_file = tmp_path / "spans.jsonl"
    spans_file.touch()
    target = StdioTarget.of(
        [sys.executable, str(SERVER), str(spans_file)], env={"PROOF_API_TOKEN": SECRET}
    )
    await _same_trace(sdk, target, spans_file)
    # Every request the host traced, not only the call (tools/list, the listen stream):
    # the server's span of it is in the same trace, under the host's span.
    server = {
        record["parent_span_id"]: record
        for line in spans_file.read_text().splitlines()
        if (record := json.loads(line))["parent_span_id"] is not None
    }
    # (Not the listen stream's: its server span ends only when the server does, which
    # may be by SIGTERM.)
    clients = [
        span
        for span in sdk.spans()
        if span.kind is SpanKind.CLIENT and span.name != "subscriptions/listen"
    ]
    assert {span.name for span in clients} >= {"tools/call whoami", "tools/list"}
    for span in clients:
        theirs = server[f"{span.context.span_id:016x}"]
        assert theirs["name"] == span.name
        assert theirs["trace_id"] == f"{span.context.trace_id:032x}"


async def test_http_server_continues_the_hosts_trace(sdk: Sdk, tmp_path: Path) -> None:
    spans_file = tmp_path / "spans.jsonl"
    spans_file.touch()
    port = _free_port()
    serving: Callable[[], Any] = lambda: over_http(  # noqa: E731
        [sys.executable, str(SERVER), str(spans_file), "--http", str(port)], port
    )
    with serving() as url:
        target = HttpTarget(url, headers={"Authorization": f"Bearer {SECRET}"})
        await _same_trace(sdk, target, spans_file)
