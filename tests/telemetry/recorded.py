"""What one test's telemetry recorded: the OpenTelemetry SDK with an in-memory span
exporter and metric reader, given per connection (``rec.telemetry``), never as the
global providers (they can be set once per process, and the suite runs in two); and the
lines the connection wrote and read (``on_wire=rec.on_wire``)."""

from __future__ import annotations

import json
from typing import Any

from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from mcpl_host.telemetry import Telemetry


class Recorded:
    def __init__(self, **options: Any) -> None:
        self.spans = InMemorySpanExporter()
        self.tracer_provider = TracerProvider()
        self.tracer_provider.add_span_processor(SimpleSpanProcessor(self.spans))
        self.metrics = InMemoryMetricReader()
        self.telemetry = Telemetry(
            tracer_provider=self.tracer_provider,
            meter_provider=MeterProvider(metric_readers=[self.metrics]),
            **options,
        )
        self.wire: list[tuple[str, bytes]] = []

    def on_wire(self, direction: str, line: bytes) -> None:
        self.wire.append((direction, line))

    def lines(self, direction: str) -> list[bytes]:
        return [line for d, line in self.wire if d == direction]

    def sent(self, method: str) -> list[dict[str, Any]]:
        """The messages of ``method`` the connection wrote, decoded."""
        out = [json.loads(line) for line in self.lines("out")]
        return [m for m in out if m.get("method") == method]

    def all(self) -> list[ReadableSpan]:
        return list(self.spans.get_finished_spans())

    def finished(self, name: str | None = None) -> list[ReadableSpan]:
        return [s for s in self.all() if name is None or s.name == name]

    def points(self, metric: str) -> list[Any]:
        data = self.metrics.get_metrics_data()
        if data is None:
            return []
        return [
            point
            for resource in data.resource_metrics
            for scope in resource.scope_metrics
            for m in scope.metrics
            if m.name == metric
            for point in m.data.data_points
        ]

    def counted(self, metric: str, key: str) -> dict[str, int]:
        """A counter's values by one attribute."""
        return {str(p.attributes[key]): p.value for p in self.points(metric)}

    def in_flight(self) -> int:
        return sum(p.value for p in self.points("mcpl_host.client.requests.active"))

    def everything(self) -> str:
        """Every span's name, attributes, events and status, and every metric point, as
        one text to search for what must never be there."""
        parts: list[str] = []
        for span in self.all():
            parts.append(span.name)
            parts.append(repr(dict(span.attributes or {})))
            parts.extend(f"{e.name} {dict(e.attributes or {})}" for e in span.events)
            parts.append(span.status.description or "")
        data = self.metrics.get_metrics_data()
        if data is not None:
            parts.append(data.to_json())
        return "\n".join(parts)
