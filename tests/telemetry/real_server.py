"""A real MCP server that reads the trace context in ``_meta``: the official Python SDK
(``mcp`` 2.3.0, whose low-level server wraps every request in a SERVER span whose parent
is the context in ``params._meta``: ``mcp/server/_otel.py``).

    python tests/telemetry/real_server.py SPANS.jsonl               # stdio
    python tests/telemetry/real_server.py SPANS.jsonl --http PORT   # Streamable HTTP at /mcp

It configures the OpenTelemetry SDK globally, in its own process, with an exporter that
appends every finished span to SPANS.jsonl as one JSON line (name, trace and span ids in
hex, the parent's span id, kind, attributes). Its tool ``whoami`` answers with the ids of
the span current while it runs: what the server itself believes its trace to be.
"""

from __future__ import annotations

import functools
import json
import sys
import warnings
from collections.abc import Sequence
from typing import IO

import anyio
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult


class JsonLines(SpanExporter):
    """Each finished span as a JSON line, flushed at once (the test reads the file while
    the server still runs)."""

    def __init__(self, out: IO[str]) -> None:
        self._out = out

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        for span in spans:
            context = span.get_span_context()
            assert context is not None
            record = {
                "name": span.name,
                "trace_id": f"{context.trace_id:032x}",
                "span_id": f"{context.span_id:016x}",
                "parent_span_id": None if span.parent is None else f"{span.parent.span_id:016x}",
                "parent_remote": None if span.parent is None else span.parent.is_remote,
                "kind": span.kind.name,
                "attributes": dict(span.attributes or {}),
            }
            self._out.write(json.dumps(record, default=str) + "\n")
        self._out.flush()
        return SpanExportResult.SUCCESS


def main(argv: list[str]) -> None:
    # Before the SDK's modules make their tracer: theirs is a proxy that follows the
    # global provider set here either way.
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(JsonLines(open(argv[0], "a"))))  # noqa: SIM115 - lives as long as the process
    trace.set_tracer_provider(provider)

    from mcp.server.mcpserver import MCPServer  # noqa: PLC0415 - after the provider is set
    from mcp.shared.exceptions import MCPDeprecationWarning  # noqa: PLC0415

    warnings.filterwarnings("ignore", category=MCPDeprecationWarning)
    server = MCPServer("mcpl-telemetry-proof")

    @server.tool()
    def whoami() -> str:
        """The trace id and span id of the span current in the tool, as hex."""
        context = trace.get_current_span().get_span_context()
        return f"{context.trace_id:032x} {context.span_id:016x}"

    if argv[1:2] == ["--http"]:
        anyio.run(functools.partial(server.run_streamable_http_async, port=int(argv[2])))
    else:
        anyio.run(server.run_stdio_async)


if __name__ == "__main__":
    main(sys.argv[1:])
