"""A real OTLP/HTTP receiver for the tests of ``mcpl-host --otel``: a loopback HTTP server
that takes POST /v1/traces and /v1/metrics, keeps each request's headers and raw body,
and decodes the protobuf bodies with the collector's own message types
(opentelemetry-proto, installed with the exporter)."""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
    ExportMetricsServiceResponse,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue

KINDS = {1: "INTERNAL", 2: "SERVER", 3: "CLIENT", 4: "PRODUCER", 5: "CONSUMER"}


@dataclass
class Received:
    path: str
    headers: dict[str, str]  # lower-case names
    body: bytes


@dataclass
class Span:
    name: str
    kind: str
    trace_id: str
    span_id: str
    parent_id: str
    attributes: dict[str, Any]
    resource: dict[str, Any]
    events: list[str] = field(default_factory=list)
    status: int = 0  # 0 unset, 1 ok, 2 error


@dataclass
class Point:
    """One data point of a metric: its attributes, and its count (histograms) or value."""

    metric: str
    attributes: dict[str, Any]
    count: int | None
    value: float | None


def value_of(value: AnyValue) -> Any:
    which = value.WhichOneof("value")
    if which == "array_value":
        return [value_of(v) for v in value.array_value.values]
    return None if which is None else getattr(value, which)


def attributes_of(pairs: Any) -> dict[str, Any]:
    return {pair.key: value_of(pair.value) for pair in pairs if isinstance(pair, KeyValue)}


class Receiver:
    """The receiver; :func:`receiver` serves it for a block."""

    def __init__(self) -> None:
        self.received: list[Received] = []
        self._lock = threading.Lock()
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length)
                headers = {k.lower(): v for k, v in self.headers.items()}
                with owner._lock:
                    owner.received.append(Received(self.path, headers, body))
                if self.path == "/v1/traces":
                    answer = ExportTraceServiceResponse().SerializeToString()
                elif self.path == "/v1/metrics":
                    answer = ExportMetricsServiceResponse().SerializeToString()
                else:
                    self.send_response(404)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._httpd.server_address[1]}"

    def requests(self, path: str) -> list[Received]:
        with self._lock:
            return [r for r in self.received if r.path == path]

    def spans(self) -> list[Span]:
        found: list[Span] = []
        for request in self.requests("/v1/traces"):
            decoded = ExportTraceServiceRequest.FromString(request.body)
            for resource_spans in decoded.resource_spans:
                resource = attributes_of(resource_spans.resource.attributes)
                for scope in resource_spans.scope_spans:
                    for span in scope.spans:
                        found.append(
                            Span(
                                name=span.name,
                                kind=KINDS.get(span.kind, str(span.kind)),
                                trace_id=span.trace_id.hex(),
                                span_id=span.span_id.hex(),
                                parent_id=span.parent_span_id.hex(),
                                attributes=attributes_of(span.attributes),
                                resource=resource,
                                events=[event.name for event in span.events],
                                status=span.status.code,
                            )
                        )
        return found

    def points(self) -> list[Point]:
        found: list[Point] = []
        for request in self.requests("/v1/metrics"):
            decoded = ExportMetricsServiceRequest.FromString(request.body)
            for resource_metrics in decoded.resource_metrics:
                for scope in resource_metrics.scope_metrics:
                    for metric in scope.metrics:
                        found.extend(_points(metric))
        return found

    def wait_for(self, path: str, deadline: float = 10.0) -> None:
        """Until a request to ``path`` came (the exporter's POST ends before the command
        exits, but its handler thread may still be storing it)."""
        end = time.monotonic() + deadline
        while not self.requests(path) and time.monotonic() < end:
            time.sleep(0.02)


def _points(metric: Any) -> list[Point]:
    which = metric.WhichOneof("data")
    data = getattr(metric, which)
    points: list[Point] = []
    for point in data.data_points:
        attributes = attributes_of(point.attributes)
        if which == "histogram":
            points.append(Point(metric.name, attributes, point.count, point.sum))
        else:
            number = point.as_int if point.WhichOneof("value") == "as_int" else point.as_double
            points.append(Point(metric.name, attributes, None, number))
    return points


@contextlib.contextmanager
def receiver() -> Iterator[Receiver]:
    """A :class:`Receiver` serving on 127.0.0.1 until the block ends."""
    found = Receiver()
    httpd = found._httpd
    thread = threading.Thread(target=httpd.serve_forever, name="OTLP receiver", daemon=True)
    thread.start()
    try:
        yield found
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(5)


@contextlib.contextmanager
def silent_collector() -> Iterator[str]:
    """A URL where a socket accepts connections and never answers: a collector that hangs."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(16)
        yield f"http://127.0.0.1:{listener.getsockname()[1]}"
