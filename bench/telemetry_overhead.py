#!/usr/bin/env python3
"""What telemetry costs a sequential call, measured in one process (issue 24: with
``opentelemetry-api`` installed and no SDK configured, under 5% of a sequential call).

Four connections to ``bench/server.py`` over stdio, open side by side in one trio run:

- ``off``: ``Connection(telemetry=False)``: no span, no metric, one ``is None`` per hook;
- ``off, again``: a second such connection, the control: how far two identical
  connections differ here is the noise floor of the ratios;
- ``no SDK``: the default with the API installed and no SDK configured: OpenTelemetry's
  own no-op tracer and meter take every call (``bench/run.py``'s ``mcpl_host``);
- ``SDK``: a real ``TracerProvider`` and ``MeterProvider`` of this process's own, spans
  through a ``SimpleSpanProcessor`` to an exporter that drops them: the cost of
  recording, without the cost of any exporter.

Calls go in rounds of ``--batch`` per connection, the connections taking turns, so that
the machine's drift hits each alike; the figures are medians over the rounds of the
wall time and the process's CPU time (user+system: the client's, the server being a
child process) per call, and their ratios to ``off``.

    .venv/bin/python bench/telemetry_overhead.py [--rounds 40] [--batch 250]
    .venv/bin/python bench/telemetry_overhead.py --profile 'no SDK'   # cProfile, top 25
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import statistics
import sys
import time
import timeit
from collections.abc import Sequence
from contextlib import AsyncExitStack

import trio
from measure import SERVER
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult

from mcpl_host import Connection, StdioTarget
from mcpl_host.protocol.trace import with_trace
from mcpl_host.telemetry import Telemetry, instruments_for
from mcpl_host.transports.targets import redactor_for

MODES = ("off", "off, again", "no SDK", "SDK")


class Discard(SpanExporter):
    """Takes every span and keeps none."""

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:  # noqa: ARG002 - the interface's
        return SpanExportResult.SUCCESS


def _option(mode: str) -> Telemetry | bool | None:
    if mode.startswith("off"):
        return False
    if mode == "no SDK":
        return None  # the default: on, the global providers (no-ops: none is configured)
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(Discard()))
    meter_provider = MeterProvider(metric_readers=[InMemoryMetricReader()])
    return Telemetry(tracer_provider=tracer_provider, meter_provider=meter_provider)


async def _calls(conn: Connection, n: int) -> None:
    for _ in range(n):
        result = await conn.call_tool("echo", {"text": "hello"})
        if result.text != "hello":
            raise AssertionError(f"echo answered {result.text!r}")


async def measure(
    rounds: int, batch: int, warmup: int
) -> dict[str, tuple[list[float], list[float]]]:
    """Per mode: the wall and the CPU seconds per call of each round."""
    figures: dict[str, tuple[list[float], list[float]]] = {mode: ([], []) for mode in MODES}
    async with AsyncExitStack() as stack:
        conns = {}
        for mode in MODES:
            conn = Connection(StdioTarget.of(SERVER), telemetry=_option(mode))
            conns[mode] = await stack.enter_async_context(conn)
            if (conn.telemetry is None) != mode.startswith("off"):
                raise AssertionError(f"{mode}: telemetry is {conn.telemetry!r}")
        for conn in conns.values():
            await _calls(conn, warmup)
        for round_ in range(rounds):
            # Each round in another order: no mode always runs right after another.
            turn = round_ % len(MODES)
            order = MODES[turn:] + MODES[:turn]
            for mode in order:
                wall, cpu = time.perf_counter(), time.process_time()
                await _calls(conns[mode], batch)
                figures[mode][0].append((time.perf_counter() - wall) / batch)
                figures[mode][1].append((time.process_time() - cpu) / batch)
    return figures


def hook_cost(n: int = 100_000) -> float:
    """Seconds per request of what the driver does for telemetry when no SDK is set up
    (``Outbound.start``: the trace, its carrier into the params, the quiet test): the
    same work as in a call, without the call's noise."""
    target = StdioTarget.of(SERVER)
    inst = instruments_for(None, server="bench", target=target, redactor=redactor_for(target))
    assert inst is not None
    params = {"name": "echo", "arguments": {"text": "hello"}}

    def hook() -> None:
        trace = inst.request("tools/call", params)
        with_trace(params, trace.carrier)
        if not trace.quiet:
            raise AssertionError("a request with no SDK was not quiet")

    return min(timeit.repeat(hook, number=n, repeat=5)) / n


async def profile(mode: str, calls: int) -> pstats.Stats:
    async with Connection(StdioTarget.of(SERVER), telemetry=_option(mode)) as conn:
        await _calls(conn, 200)
        profiler = cProfile.Profile()
        profiler.enable()
        await _calls(conn, calls)
        profiler.disable()
    return pstats.Stats(profiler)


def report(figures: dict[str, tuple[list[float], list[float]]], rounds: int, batch: int) -> str:
    # The baseline: both telemetry=False connections' rounds together (the control row
    # shows how far one of them is from that, i.e. the noise).
    wall_off = statistics.median(figures["off"][0] + figures["off, again"][0])
    cpu_off = statistics.median(figures["off"][1] + figures["off, again"][1])
    lines = [
        f"python {sys.version.split()[0]}; {rounds} rounds of {batch} sequential calls per "
        "mode over stdio; medians of the rounds; ratios to both 'off' connections' median",
        "",
        "| telemetry | wall µs/call | CPU µs/call | wall vs off | CPU vs off |",
        "|---|---|---|---|---|",
    ]
    for mode in MODES:
        wall = statistics.median(figures[mode][0])
        cpu = statistics.median(figures[mode][1])
        lines.append(
            f"| {mode} | {wall * 1e6:.1f} | {cpu * 1e6:.1f} | "
            f"{wall / wall_off:.3f}x | {cpu / cpu_off:.3f}x |"
        )
    wall = statistics.median(figures["no SDK"][0]) / wall_off
    cpu = statistics.median(figures["no SDK"][1]) / cpu_off
    verdict = "met" if max(wall, cpu) <= 1.05 else "not met"
    hook = hook_cost()
    lines += [
        "",
        f"target (issue 24): no SDK <= 1.05x of off: wall {wall:.3f}x, CPU {cpu:.3f}x: {verdict}",
        f"the no-SDK hook alone (timeit, best of 5): {hook * 1e6:.2f} µs per request, "
        f"{hook / cpu_off:.1%} of an 'off' call's CPU",
    ]
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=40)
    parser.add_argument("--batch", type=int, default=250, help="calls per mode per round")
    parser.add_argument("--warmup", type=int, default=200)
    parser.add_argument("--profile", choices=MODES, help="cProfile one mode instead")
    parser.add_argument("--calls", type=int, default=5000, help="calls profiled")
    args = parser.parse_args()
    if args.profile:
        stats = trio.run(profile, args.profile, args.calls)
        stats.sort_stats("tottime").print_stats(25)
        return 0
    figures = trio.run(measure, args.rounds, args.batch, args.warmup)
    print(report(figures, args.rounds, args.batch))
    return 0


if __name__ == "__main__":
    sys.exit(main())
