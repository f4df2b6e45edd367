"""With opentelemetry-api and no SDK, a request costs almost nothing (bench/
telemetry_overhead.py) and still carries an upstream context to the server: the no-op
tracer continues the caller's span context, so a traceparent that reached the host (a
NonRecordingSpan, as an extracted context is) reaches the server unchanged."""

from __future__ import annotations

import json
import sys

from opentelemetry import trace
from opentelemetry.metrics import NoOpMeterProvider
from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags

from mcpl_host import Connection, StdioTarget
from mcpl_host.telemetry import Telemetry

from .sdk_fixtures import Sdk, sdk_fixture  # noqa: F401 - the fixture "sdk"

DEMO = StdioTarget.of([sys.executable, "-m", "mcpl_host.demo"])
UPSTREAM = SpanContext(
    trace_id=0x4BF92F3577B34DA6A3CE929D0E0E4736,
    span_id=0x00F067AA0BA902B7,
    is_remote=True,
    trace_flags=TraceFlags(TraceFlags.SAMPLED),
)


def _metas(lines: list[bytes]) -> list[object]:
    """The ``_meta`` of every tools/call written (None where there is none)."""
    calls = [json.loads(line) for line in lines]
    return [
        message["params"].get("_meta")
        for message in calls
        if isinstance(message, dict) and message.get("method") == "tools/call"
    ]


async def test_no_sdk_carries_an_upstream_context_and_nothing_else() -> None:
    wire: list[bytes] = []
    # Telemetry on, both providers the API's no-ops: what "no SDK configured" is.
    quiet = Telemetry(
        tracer_provider=trace.NoOpTracerProvider(), meter_provider=NoOpMeterProvider()
    )
    async with Connection(
        DEMO, telemetry=quiet, on_wire=lambda d, line: wire.append(line) if d == "out" else None
    ) as conn:
        assert conn.telemetry is not None
        assert conn.telemetry.quiet()
        await conn.call_tool("echo", {"text": "no context"})
        with trace.use_span(NonRecordingSpan(UPSTREAM)):
            await conn.call_tool("echo", {"text": "upstream"})
        own = {"traceparent": "00-11111111111111111111111111111111-2222222222222222-01"}
        with trace.use_span(NonRecordingSpan(UPSTREAM)):
            await conn.request(
                "tools/call", {"name": "echo", "arguments": {"text": "x"}, "_meta": own}
            )
    no_context, upstream, caller_own = _metas(wire)
    assert no_context is None  # nothing to carry: params as the caller wrote them
    assert upstream == {"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}
    assert caller_own == own  # the caller's own traceparent wins


def test_quiet_only_when_neither_tracer_nor_meter_records(sdk: Sdk) -> None:
    def quiet(**providers: object) -> bool:
        conn = Connection(DEMO, telemetry=Telemetry(**providers))  # type: ignore[arg-type]
        assert conn.telemetry is not None
        return conn.telemetry.quiet()

    noop_tracer, noop_meter = trace.NoOpTracerProvider(), NoOpMeterProvider()
    assert quiet(tracer_provider=noop_tracer, meter_provider=noop_meter)
    assert not quiet(tracer_provider=sdk.tracer_provider, meter_provider=noop_meter)
    assert not quiet(tracer_provider=noop_tracer, meter_provider=sdk.meter_provider)
    assert Connection(DEMO, telemetry=False).telemetry is None
