"""Review of issue 24's served requests, connection spans, faces and CLI (reviewer rev24b).

Each test shows one defect and fails until it is fixed. Per-connection providers with
the SDK's in-memory exporter and reader (the global providers are never set); the
server is the in-memory scripted peer of tests/driver.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import trio

from mcpl_host import Closed, Connection, Event, Reconnect, RequestTimeout

from ..driver.peer import PeerSupply, memory_connection
from .test_driver import Recorded


def _request(request_id: str, method: str, params: bytes) -> bytes:
    return (
        b'{"jsonrpc":"2.0","id":"'
        + request_id.encode()
        + b'","method":"'
        + method.encode()
        + b'","params":'
        + params
        + b"}"
    )


# -- 1. a ping whose _meta is too deep for the trace extraction is never answered ----


async def test_a_ping_whose_meta_is_too_deep_to_extract_is_still_answered() -> None:
    """The reader serves ``ping`` itself. ServeTrace.__init__ reads the trace context
    in ``_meta`` with trace_carrier, which catches msgspec.DecodeError but not the
    RecursionError msgspec raises for nesting past its depth; that depth depends on the
    stack, and the reader's is a few frames deeper there than where the envelope was
    decoded, so a ``_meta`` just shallow enough for the envelope is too deep for it.
    The RecursionError goes to Inbound.on_line's catch-all (an "internal error" log)
    and the ping is never answered, where a host without telemetry answers it. (The
    same ServeTrace is made before the ``try`` in Inbound._serve: there a RecursionError
    would escape the serving task and take the connection down.)

    The pings cover a range of depths around msgspec's limit: each must get an answer,
    a result or the envelope's -32600 for a message nested too deep."""
    rec = Recorded()
    conn, peer = memory_connection(versions=["2025-11-25"], telemetry=rec.telemetry)
    depths = range(900, 1000)
    with trio.fail_after(3):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(peer.handshake, "2025-11-25")
            async with conn:
                for n in depths:
                    deep = b'{"_meta":' + b"[" * n + b"]" * n + b"}"
                    await peer.send(_request(f"p{n}", "ping", deep))
                await peer.send(_request("end", "ping", b"{}"))
                answers = []
                while (answer := await peer.recv()).get("id") != "end":
                    answers.append(answer)
            nursery.cancel_scope.cancel()
    assert len(answers) == len(depths), f"{len(depths) - len(answers)} pings got no answer at all"


# -- 2. the reconnect span is a child of the span the connection was opened in --------


async def test_a_reconnect_span_is_not_a_child_of_the_span_current_at_opening(
    autojump_clock: trio.abc.Clock,
) -> None:
    """docs/observability.md: "nothing the connection does later on its own
    (reconnects, ...) is a child of that span, which may be long over". But
    Instruments.connection_span starts every span without a ``parent`` in
    ``_opened_in`` (the context at opening): the reconnect span, hours later, is a
    child of the caller's span that opened the connection."""
    rec = Recorded()
    tracer = rec.tracer_provider.get_tracer("host app")
    supply = PeerSupply()
    events: list[Event] = []
    policy = Reconnect(initial=1.0, maximum=2.0, jitter=0.0, max_attempts=1, stable=0)
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
            with tracer.start_as_current_span("opening"):
                async with conn:
                    first = await supply.handshaken(0)
                    supply.refuse = 100
                    await first.stream.aclose()
                    while not any(isinstance(e, Closed) for e in events):
                        await trio.sleep(0.5)
    (opening,) = rec.finished("opening")
    (reconnect,) = rec.finished("mcpl_host.reconnect")
    assert reconnect.parent is None or reconnect.parent.span_id != opening.context.span_id, (
        "the reconnect span is a child of the span current when the connection was opened"
    )


# -- 3. a handshake that times out: its initialize span says "cancelled" -------------


async def test_an_initialize_that_times_out_is_a_timeout_on_its_span(
    autojump_clock: trio.abc.Clock,
) -> None:
    """docs/observability.md: ``error.type`` is ``timeout`` for a request that timed out.
    The handshake's bound is the ``trio.fail_after(initialize_timeout)`` in
    Connection._open_epoch_in, around Negotiator._exchange, which waits with no limit of
    its own: the deadline arrives there as trio.Cancelled, so the initialize CLIENT span
    ends ``error.type = cancelled``, while the connection raises RequestTimeout and
    the connect span says ``timeout``."""
    rec = Recorded()
    conn, peer = memory_connection(
        versions=["2025-11-25"], initialize_timeout=1.0, telemetry=rec.telemetry
    )
    with trio.fail_after(30):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(peer.expect, "initialize")  # read, never answered
            with pytest.raises(RequestTimeout):
                async with conn:
                    pass
            nursery.cancel_scope.cancel()
    (connect,) = rec.finished("mcpl_host.connect")
    assert dict(connect.attributes or {})["error.type"] == "timeout"
    (initialize,) = rec.finished("initialize")
    assert dict(initialize.attributes or {}).get("error.type") == "timeout", dict(
        initialize.attributes or {}
    )


# -- 4. a server adds an event per message to one long span -------------------------


async def test_a_server_cannot_add_an_event_per_progress_notification() -> None:
    """RequestTrace.progress adds one ``mcpl_host.progress`` event (attributes built,
    the message redacted) for every progress notification of the request: a server
    that floods one long tools/call with notifications makes the host do that work,
    and append to that one span, once per message, without a bound of the host's own
    (the SDK's default SpanLimits drop past 128, after the work is done; an embedder
    that lifts the limit keeps them all). The host should record a bounded number
    (the first few, then a count)."""
    rec = Recorded()
    flood = 500
    conn, peer = memory_connection(versions=["2025-11-25"], telemetry=rec.telemetry)
    seen: list[float] = []
    with trio.fail_after(3):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(peer.handshake, "2025-11-25")
            async with conn:

                async def serve() -> None:
                    call = await peer.expect("tools/call")
                    token = call["params"]["_meta"]["progressToken"]
                    lines = b"".join(
                        b'{"jsonrpc":"2.0","method":"notifications/progress","params":'
                        b'{"progressToken":%d,"progress":%d,"message":"step"}}\n' % (token, n)
                        for n in range(flood)
                    )
                    await peer.stream.send_all(lines)
                    await peer.answer(call, {"content": []})

                nursery.start_soon(serve)
                await conn.request(
                    "tools/call",
                    {"name": "long", "arguments": {}},
                    on_progress=lambda progress, _total, _message: seen.append(progress),
                )
            nursery.cancel_scope.cancel()
    assert len(seen) == flood
    (span,) = rec.finished("tools/call long")
    added = len(span.events) + span.dropped_events
    assert added <= 128, f"{added} progress events added to one span"


# -- 5. the served in-flight gauge drifts below zero when the SDK comes late ---------

# Run in a process of its own: it sets the global meter provider, which the test
# process must never do.
LATE_SDK = r"""
import sys
sys.path.insert(0, sys.argv[1])
import trio
from opentelemetry import metrics
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from tests.driver.peer import memory_connection

async def main():
    started, release = trio.Event(), trio.Event()
    async def slow(_request):
        started.set()
        await release.wait()
        return {}
    conn, peer = memory_connection(versions=["2025-11-25"], handlers={"x/slow": slow})
    reader = InMemoryMetricReader()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(peer.handshake, "2025-11-25")
        async with conn:
            await peer.send(b'{"jsonrpc":"2.0","id":"a","method":"x/slow","params":{}}')
            await started.wait()
            # The application configures its SDK while the request is being served.
            metrics.set_meter_provider(MeterProvider(metric_readers=[reader]))
            release.set()
            while (await peer.recv()).get("id") != "a":
                pass
        nursery.cancel_scope.cancel()
    data = reader.get_metrics_data()
    print(sum(
        point.value
        for resource in data.resource_metrics
        for scope in resource.scope_metrics
        for metric in scope.metrics
        if metric.name == "mcpl_host.server.requests.active"
        for point in metric.data.data_points
    ))

trio.run(main)
"""


async def test_the_served_in_flight_gauge_never_goes_below_zero_when_the_sdk_comes_late(
    tmp_path: Path,
) -> None:
    """The docs support an SDK set up after the connection was made (the global
    providers are looked at per request). RequestTrace is quiet or not for its whole
    life, but ServeTrace has no quiet form: it adds +1 to
    ``mcpl_host.server.requests.active`` on the API's proxy (dropped, no SDK yet) and
    -1 on the SDK's once it is there. A sampling or elicitation request waiting for a
    person while the application starts its SDK leaves the gauge at -1 for good."""
    script = tmp_path / "late_sdk.py"
    script.write_text(LATE_SDK)
    root = str(Path(__file__).resolve().parents[2])
    with trio.fail_after(10):
        done = await trio.run_process(
            [sys.executable, str(script), root], capture_stdout=True, capture_stderr=True
        )
    lines = done.stdout.decode().split()
    assert lines, done.stderr.decode()[-2000:]
    assert int(lines[-1]) == 0, f"requests.active ends at {lines[-1]}"
