"""The faces carry the caller's trace into trio: a tools/call made inside an asyncio
task's or a thread's current span is that span's child, and its ``_meta.traceparent``
names it on the wire (the real demo server over stdio)."""

from __future__ import annotations

import asyncio
import json
import sys
import threading
from typing import Any

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import SpanKind

from mcpl_host import StdioTarget, aio, sync

from .sdk_fixtures import Sdk, sdk_fixture  # noqa: F401 - the fixture "sdk"

DEMO = StdioTarget.of([sys.executable, "-m", "mcpl_host.demo"])


class Wire:
    """The traceparent of every tools/call the host wrote, by JSON-RPC id."""

    def __init__(self) -> None:
        self.lines: list[bytes] = []

    def __call__(self, direction: str, line: bytes) -> None:
        if direction == "out":
            self.lines.append(line)

    def traceparents(self) -> dict[str, str]:
        found = {}
        for line in self.lines:
            message = json.loads(line)
            if isinstance(message, dict) and message.get("method") == "tools/call":
                found[str(message["id"])] = message["params"]["_meta"]["traceparent"]
        return found


def _traceparent(span: ReadableSpan) -> str:
    context = span.get_span_context()
    assert context is not None
    return f"00-{context.trace_id:032x}-{context.span_id:016x}-{context.trace_flags:02x}"


def _calls_under(sdk: Sdk, wire: Wire, parents: dict[str, int]) -> None:
    """Each caller span named in ``parents`` is the parent of that many ``tools/call
    echo`` CLIENT spans, in its trace, and the traceparent on the wire names each."""
    callers = {span.context.span_id: span for span in sdk.spans() if span.name in parents}
    assert sorted(span.name for span in callers.values()) == sorted(parents)
    on_wire = wire.traceparents()
    seen: dict[str, int] = {}
    for span in sdk.named("tools/call echo"):
        assert span.kind is SpanKind.CLIENT
        if span.parent is None:
            continue
        caller = callers[span.parent.span_id]
        assert span.context.trace_id == caller.context.trace_id
        assert span.attributes is not None
        assert on_wire[str(span.attributes["jsonrpc.request.id"])] == _traceparent(span)
        seen[caller.name] = seen.get(caller.name, 0) + 1
    assert seen == parents


def test_asyncio_callers_spans_are_the_parents(sdk: Sdk) -> None:
    tracer = sdk.tracer_provider.get_tracer("app")
    wire = Wire()

    async def caller(conn: Any, name: str) -> None:
        with tracer.start_as_current_span(name):
            # call_tool runs in this asyncio task itself; call_tool_raw in a trio task
            # the portal starts: both must see this task's span.
            assert (await conn.call_tool("echo", {"text": name})).text == name
            await asyncio.sleep(0)
            assert json.loads(bytes(await conn.call_tool_raw("echo", {"text": name})))["content"]

    async def main() -> None:
        async with aio.Connection(DEMO, telemetry=sdk.telemetry(), on_wire=wire) as conn:
            await asyncio.gather(caller(conn, "task-a"), caller(conn, "task-b"))
            await conn.call_tool("echo", {"text": "no span"})

    asyncio.run(asyncio.wait_for(main(), 30))
    _calls_under(sdk, wire, {"task-a": 2, "task-b": 2})
    # Outside any span: a root span of its own, not a leftover of an earlier call.
    (root,) = [s for s in sdk.named("tools/call echo") if s.parent is None]
    assert root.context.trace_id not in {s.context.trace_id for s in sdk.named("task-a")}


def test_sync_threads_spans_are_the_parents(sdk: Sdk) -> None:
    tracer = sdk.tracer_provider.get_tracer("app")
    wire = Wire()
    failures: list[BaseException] = []

    def caller(conn: Any, name: str) -> None:
        try:
            with tracer.start_as_current_span(name):
                assert conn.call_tool("echo", {"text": name}).text == name
                assert json.loads(bytes(conn.call_tool_raw("echo", {"text": name})))["content"]
        except BaseException as exc:  # pragma: no cover - reported below
            failures.append(exc)

    with sync.Connection(DEMO, telemetry=sdk.telemetry(), on_wire=wire) as conn:
        threads = [
            threading.Thread(target=caller, args=(conn, f"thread-{n}"), daemon=True)
            for n in range(3)
        ]
        for thread in threads:
            thread.start()
        caller(conn, "main")
        for thread in threads:
            thread.join(30)
    assert not failures
    _calls_under(sdk, wire, {"main": 2, "thread-0": 2, "thread-1": 2, "thread-2": 2})
