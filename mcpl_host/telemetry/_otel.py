"""The OpenTelemetry side of :mod:`mcpl_host.telemetry`: the only module that imports it.

Names and attributes follow the OpenTelemetry semantic conventions for MCP (Development
status): a CLIENT span ``{mcp.method.name} {target}`` per request the host sends, a
SERVER span per request it serves, ``mcp.client.operation.duration`` and
``mcp.server.operation.duration``. What the conventions do not cover (connection spans,
in-flight requests, reconnects, refusals, bytes) is named under ``mcpl_host.``.

Cost: when nothing would record (no SDK: the tracer and meter providers are the API's
proxies or no-ops) a request costs two provider look-ups and a look at the current span,
and nothing else (:class:`_QuietTrace`): no attributes, no metric calls. With an SDK,
attributes only a recording span keeps are set only when it records.
bench/telemetry_overhead.py measures both.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import Token
from typing import Any, ClassVar, Final

import msgspec
from opentelemetry import context as otel_context
from opentelemetry import metrics, propagate, trace
from opentelemetry.metrics import NoOpMeterProvider
from opentelemetry.metrics import _internal as _metrics_api
from opentelemetry.trace import (
    INVALID_SPAN,
    Link,
    NoOpTracer,
    NoOpTracerProvider,
    ProxyTracerProvider,
    Span,
    SpanKind,
    Status,
    StatusCode,
)

from ..protocol.errors import InitializeError, McplHostError, RequestError, RequestTimeout
from ..protocol.redact import Redactor
from ..protocol.trace import trace_carrier

__all__ = ["ConnectionSpan", "Instruments", "RequestTrace", "ServeTrace"]

_SCOPE: Final = "mcpl_host"
# The conventions' advice for MCP operation durations, in seconds.
_DURATION_BUCKETS: Final = (0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60, 120, 300)
# Peer and caller text in attributes: names, URIs, messages, cut to these many chars.
_NAME_LIMIT: Final = 128
_TEXT_LIMIT: Final = 512
# Distinct method names a connection's metrics name (the caller and the server name
# methods); any more are _OTHER, the conventions' name for a value out of the known set.
_METHODS_KEPT: Final = 64
_OTHER: Final = "_OTHER"
# Progress events kept on one request's span (a server sends as many as it likes).
_PROGRESS_EVENTS: Final = 32
# Patterns an MCPL grant event lists, granted and denied each.
_GRANT_PATTERNS: Final = 64

# The methods whose params name a target (the span name's second part, low cardinality).
_NAMED: Final = {"tools/call": "gen_ai.tool.name", "prompts/get": "gen_ai.prompt.name"}
_URI_METHODS: Final = frozenset({"resources/read", "resources/subscribe", "resources/unsubscribe"})


class _IsError(msgspec.Struct):
    isError: Any = None


_IS_ERROR: Final = msgspec.json.Decoder(_IsError)
_GLOBAL_METERS: list[_Meters] = []  # the one set on the global provider (see _meters)


def _meters(provider: Any) -> _Meters:
    """The instruments of ``provider``. An SDK's provider gives back the meter and the
    instruments it made already under the same names; the API's global proxy keeps
    every meter it is asked for, for good: its instruments are made once."""
    if provider is not None:
        return _Meters(provider)
    if not _GLOBAL_METERS:
        _GLOBAL_METERS.append(_Meters(None))
    return _GLOBAL_METERS[0]


class _Meters:
    """The metric instruments of a meter provider."""

    def __init__(self, provider: Any) -> None:
        meter = metrics.get_meter(_SCOPE, meter_provider=provider)
        buckets = list(_DURATION_BUCKETS)
        self.client_duration = meter.create_histogram(
            "mcp.client.operation.duration",
            unit="s",
            description="MCP request duration as observed by the host, sent to answered",
            explicit_bucket_boundaries_advisory=buckets,
        )
        self.server_duration = meter.create_histogram(
            "mcp.server.operation.duration",
            unit="s",
            description="Duration of a server's request the host served, received to answered",
            explicit_bucket_boundaries_advisory=buckets,
        )
        self.session_duration = meter.create_histogram(
            "mcp.client.session.duration",
            unit="s",
            description="How long one transport to the server lasted, connected to lost or closed",
            explicit_bucket_boundaries_advisory=buckets,
        )
        self.client_active = meter.create_up_down_counter(
            "mcpl_host.client.requests.active",
            unit="{request}",
            description="Requests the host sent that are waiting for their answer",
        )
        self.server_active = meter.create_up_down_counter(
            "mcpl_host.server.requests.active",
            unit="{request}",
            description="Requests of the server's the host is serving",
        )
        self.reconnects = meter.create_counter(
            "mcpl_host.reconnects",
            unit="{attempt}",
            description="Attempts to replace a lost transport, by outcome",
        )
        self.refusals = meter.create_counter(
            "mcpl_host.refusals",
            unit="{message}",
            description="Messages of the server's the host refused or dropped, by reason",
        )
        self.io = meter.create_counter(
            "mcpl_host.transport.io",
            unit="By",
            description="Bytes of MCP messages written to and read from the server",
        )


# What the API's own no-op tracer gives: no span of its own, the current one continued.
_NOOP_TRACER: Final = NoOpTracer()
_NOOP_PROVIDERS: Final = (ProxyTracerProvider, NoOpTracerProvider, NoOpMeterProvider)
_UNKNOWN: Final = object()  # a global this API version does not have: assume it records
# The global providers are read from the API's private globals (None until one is set,
# as its proxies see them): the public getters look up the environment, which costs
# more per request than all the rest of a quiet request.
_TRACER_GLOBAL: Final = "_TRACER_PROVIDER"
_METER_GLOBAL: Final = "_METER_PROVIDER"


def _records(provider: Any) -> bool:
    return not isinstance(provider, _NOOP_PROVIDERS)


class Instruments:
    """One connection's tracer, meters and attributes (made by
    :func:`mcpl_host.telemetry.instruments_for`)."""

    def __init__(
        self,
        config: Any,
        *,
        server: str,
        attributes: Mapping[str, str | int],
        redactor: Redactor,
    ) -> None:
        self.tracer = trace.get_tracer(_SCOPE, tracer_provider=config.tracer_provider)
        self.meters = _meters(config.meter_provider)
        self.redactor = redactor
        self.record_content: bool = config.record_content
        self.content_limit: int = config.content_limit
        # On every span and metric of the connection: how the server is reached, and the
        # connection's own name (the embedder's, or one made from the target, redacted).
        self.attributes: dict[str, str | int] = {
            **attributes,
            "mcpl_host.server.name": redactor.log_value(server, _NAME_LIMIT),
        }
        self._by_method: dict[str, dict[str, str | int]] = {}
        self._other: dict[str, str | int] = {"mcp.method.name": _OTHER, **self.attributes}
        # Bytes are counted on every write and read: their attributes are made once.
        self._io = {
            direction: {**self.attributes, "network.io.direction": direction}
            for direction in ("transmit", "receive")
        }
        self.protocol_version: str | None = None
        self.connection: ConnectionSpan | None = None  # the current transport's span
        self._opened_in: otel_context.Context | None = None
        # Whether the providers given record; None: the global ones, looked at per request
        # (an SDK may be set up after the connection was made).
        self._tracing: bool | None = (
            None if config.tracer_provider is None else _records(config.tracer_provider)
        )
        self._metering: bool | None = (
            None if config.meter_provider is None else _records(config.meter_provider)
        )

    def quiet(self) -> bool:
        """Whether nothing would be recorded now: no SDK behind the tracer nor the meter."""
        tracing = self._tracing
        if tracing is None:
            provider = getattr(trace, _TRACER_GLOBAL, _UNKNOWN)
            tracing = provider is not None and not isinstance(provider, _NOOP_PROVIDERS)
        if tracing:
            return False
        metering = self._metering
        if metering is None:
            provider = getattr(_metrics_api, _METER_GLOBAL, _UNKNOWN)
            metering = provider is not None and not isinstance(provider, _NOOP_PROVIDERS)
        return not metering

    # -- requests the host sends ----------------------------------------------------------

    def request(self, method: str, params: Any, *, parent: Span | None = None) -> RequestTrace:
        """Start the CLIENT span of a request the caller is about to send: a child of
        ``parent`` (a connection step's span: the handshake's own requests), else of
        the caller's current span. When nothing records (:meth:`quiet`), a
        :class:`_QuietTrace`: only the caller's context, to carry (``.quiet`` is true:
        the driver may drop it once it has injected ``.carrier``)."""
        if self.quiet():
            upstream = trace.get_current_span() if parent is None else parent
            if not upstream.get_span_context().is_valid:  # no context: nothing to carry
                return _NO_CONTEXT
            return _QuietTrace(self, method, upstream)
        return RequestTrace(self, method, params, parent)

    # -- requests the host serves ---------------------------------------------------------

    def serve(self, method: str, request_id: Any, params: Any) -> ServeTrace:
        """Start the SERVER span of a server's request: the context the server put in
        ``_meta`` is its parent, the transport's span a link. When nothing records
        (:meth:`quiet`, decided once: an SDK set up meanwhile must not get the end of
        what it never saw start), only that context, current while it is served."""
        if self.quiet():
            return _QuietServe(params)
        return ServeTrace(self, method, request_id, params)

    # -- the connection -------------------------------------------------------------------

    def connection_span(
        self,
        name: str,
        *,
        links: list[Link] | None = None,
        parent: ConnectionSpan | None = None,
    ) -> ConnectionSpan:
        """An INTERNAL span of the connection's life: ``connect`` (one transport, from
        opening it to the end of the handshake), ``reconnect`` (from a loss to the next
        transport), with the steps in between as children (:meth:`step`). A child of
        ``parent`` (a reconnect's connect spans), else of the context the connection
        was opened in (:meth:`leave_ambient`)."""
        if parent is None:  # the first connect, where the connection was opened; later, none
            context, self._opened_in = self._opened_in, None
        else:
            context = trace.set_span_in_context(parent.span)
        span = self.tracer.start_span(
            f"mcpl_host.{name}",
            context=context,
            kind=SpanKind.INTERNAL,
            attributes=self.attributes,
            links=links,
        )
        return ConnectionSpan(self, span)

    def leave_ambient(self) -> None:
        """Called first in the connection's own run task: keep the context it was opened
        in (the first connect span's parent) and make an empty one current there, so that
        what the connection does later on its own (reconnects, restores, listens, the
        reader's links) is not the child of whatever span was current at opening."""
        self._opened_in = otel_context.get_current()
        otel_context.attach(otel_context.Context())  # dies with the task: no detach

    def grant_changed(
        self, granted: Any, denied: Any, *, request: RequestTrace | None = None
    ) -> None:
        """MCPL's grant changed: an event on the span of the ``featureSets/update`` that
        settled it (``request``), else on the current transport's span (which ends with
        the handshake, before any grant is settled: then there is none to carry it)."""
        span = request.span if request is not None else None
        if span is None or not span.is_recording():
            connection = self.connection
            span = None if connection is None else connection.span
        if span is None or not span.is_recording():
            return

        def shown(patterns: Any) -> list[str]:
            # The server's tree decides how many are denied: the same 64 kept each time.
            kept = sorted(str(pattern) for pattern in patterns)[:_GRANT_PATTERNS]
            return [self.redactor.log_value(pattern, _NAME_LIMIT) for pattern in kept]

        span.add_event(
            "mcpl_host.mcpl.grant",
            {"mcpl_host.mcpl.granted": shown(granted), "mcpl_host.mcpl.denied": shown(denied)},
        )

    def reconnect_attempt(self, outcome: str) -> None:
        self.meters.reconnects.add(1, {**self.attributes, "mcpl_host.outcome": outcome})

    def refused(self, reason: str) -> None:
        """The host refused or dropped a message of the server's (``reason``: one of the
        driver's fixed outcome names, never peer text)."""
        self.meters.refusals.add(1, {**self.attributes, "mcpl_host.reason": reason})

    def io(self, direction: str, size: int) -> None:
        """``size`` bytes written (``transmit``) or read (``receive``)."""
        self.meters.io.add(size, self._io[direction])

    def session_ended(self, seconds: float) -> None:
        attributes = dict(self.attributes)
        if self.protocol_version is not None:
            attributes["mcp.protocol.version"] = self.protocol_version
        self.meters.session_duration.record(seconds, attributes)

    def method_attributes(self, method: str) -> dict[str, str | int]:
        """The connection's attributes with ``mcp.method.name`` (the name made safe),
        made once per method. Method names are the caller's or the server's text: past
        :data:`_METHODS_KEPT` distinct ones, a metric names them all ``_OTHER``, so
        that no one can make a series per request."""
        attributes = self._by_method.get(method)
        if attributes is None:
            if len(self._by_method) >= _METHODS_KEPT:
                return self._other
            shown = self.text(method, _NAME_LIMIT)
            attributes = self._by_method[method] = {"mcp.method.name": shown, **self.attributes}
        return attributes

    def method_name(self, method: str) -> str:
        """``method`` made safe for a span's name and attributes."""
        shown = self.method_attributes(method)["mcp.method.name"]
        return shown if shown != _OTHER else self.text(method, _NAME_LIMIT)  # type: ignore[return-value]

    def text(self, value: str, limit: int = _TEXT_LIMIT) -> str:
        return self.redactor.log_value(value, limit)

    def content(self, value: Any) -> str:
        """Arguments or a result, as redacted JSON text cut to the configured limit."""
        try:
            raw = value if isinstance(value, bytes | msgspec.Raw) else msgspec.json.encode(value)
            text = bytes(raw).decode()
        except (TypeError, UnicodeDecodeError, msgspec.EncodeError):
            text = repr(value)
        return self.redactor.log_value(text, self.content_limit)


def _error_attributes(error: BaseException) -> tuple[dict[str, str], str | None]:
    """``error.type`` (and the JSON-RPC code) for how a request ended, and the status
    description (peer text, still to be made safe)."""
    if isinstance(error, RequestError) and error.code is not None:
        code = str(error.code)
        return {"error.type": code, "rpc.response.status_code": code}, error.error_message
    if isinstance(error, InitializeError) and error.code is not None:  # initialize's own
        code = str(error.code)
        return {"error.type": code, "rpc.response.status_code": code}, error.server_message
    if isinstance(error, RequestTimeout):
        return {"error.type": "timeout"}, None
    if isinstance(error, McplHostError):
        return {"error.type": type(error).__name__}, None
    if isinstance(error, BaseException) and not isinstance(error, Exception):
        return {"error.type": "cancelled"}, None  # trio.Cancelled, KeyboardInterrupt
    return {"error.type": type(error).__qualname__}, None


class RequestTrace:
    """The CLIENT span of one request the host sends, from the caller's call to its end
    (across rebinding and re-issues: one span, whatever ids it had on the wire)."""

    __slots__ = (
        "_ends",
        "_inst",
        "_moved",
        "_progress",
        "_start",
        "_target",
        "carrier",
        "method",
        "span",
    )
    #: True for a trace that records nothing (no SDK): only its ``carrier`` matters.
    quiet: ClassVar[bool] = False

    def __init__(
        self, inst: Instruments, method: str, params: Any, parent: Span | None = None
    ) -> None:
        self._inst = inst
        self.method = method
        # Only what a sampler may want is given at the start; the rest is set when the
        # span records (a no-op tracer's span never does: the common case costs little).
        name = inst.method_name(method)
        attributes: dict[str, Any] = {"mcp.method.name": name}
        self._target: tuple[str, str] | None = None
        key = _NAMED.get(method) or ("mcp.resource.uri" if method in _URI_METHODS else None)
        value = (
            params.get("uri" if key == "mcp.resource.uri" else "name")
            if key and isinstance(params, dict)
            else None
        )
        if key is not None and isinstance(value, str):
            uri = key == "mcp.resource.uri"
            shown = inst.redactor.log_value(value, _TEXT_LIMIT if uri else _NAME_LIMIT)
            attributes[key] = shown
            if not uri:  # a URI would make the span name high-cardinality
                name = f"{name} {shown}"
                self._target = (key, shown)
        span = self.span = inst.tracer.start_span(
            name,
            context=None if parent is None else trace.set_span_in_context(parent),
            kind=SpanKind.CLIENT,
            attributes=attributes,
        )
        self._start = time.perf_counter()
        self._ends = False
        self._moved = False
        self._progress = 0
        inst.meters.client_active.add(1, inst.method_attributes(method))
        # The trace context the request carries in ``_meta``: empty when there is no
        # valid span to continue (no SDK, nothing sampled upstream).
        self.carrier: dict[str, str] = {}
        if not span.get_span_context().is_valid:
            return
        propagate.inject(self.carrier, context=trace.set_span_in_context(span))
        if span.is_recording():
            span.set_attributes(inst.attributes)
            if method == "tools/call":
                span.set_attribute("gen_ai.operation.name", "execute_tool")
            if inst.protocol_version is not None:
                span.set_attribute("mcp.protocol.version", inst.protocol_version)
            if self._content() and isinstance(params, dict):
                arguments = inst.content(params.get("arguments"))
                span.set_attribute("gen_ai.tool.call.arguments", arguments)

    def _content(self) -> bool:
        """Whether arguments and results are recorded (the embedder opted in)."""
        return (
            self._inst.record_content and self.method == "tools/call" and self.span.is_recording()
        )

    def sent(self, request_id: int) -> None:
        """On the wire as ``request_id`` (again, after :meth:`moved`)."""
        span = self.span
        if not span.is_recording():
            return
        span.set_attribute("jsonrpc.request.id", str(request_id))
        connection = self._inst.connection
        if self._moved and connection is not None:
            # Rebound onto a new transport: linked to the span that opened it.
            span.add_link(connection.span.get_span_context(), {"mcpl_host.link": "transport"})
        self._moved = False

    def progress(self, progress: float, total: float | None, message: str | None) -> None:
        """An event per progress notification, for the first :data:`_PROGRESS_EVENTS`:
        the server decides how many come; the rest are only counted (at the end)."""
        if not self.span.is_recording():
            return
        self._progress += 1
        if self._progress > _PROGRESS_EVENTS:
            return
        attributes: dict[str, Any] = {"mcpl_host.progress": progress}
        if total is not None:
            attributes["mcpl_host.progress.total"] = total
        if message is not None:
            attributes["mcpl_host.progress.message"] = self._inst.text(message)
        self.span.add_event("mcpl_host.progress", attributes)

    def moved(self, old_id: int, *, reissued: bool) -> None:
        """Taken off the wire as ``old_id``, to be sent again with a new id: on the next
        transport after a reconnect (``mcpl_host.rebind``), or on the same one after its
        response stream broke (``mcpl_host.retry``)."""
        if not self.span.is_recording():
            return
        self.span.add_event(
            "mcpl_host.retry" if reissued else "mcpl_host.rebind",
            {"mcpl_host.previous_request_id": str(old_id)},
        )
        self._moved = not reissued

    def end(self, error: BaseException | None = None, result: Any = None) -> None:
        """The request is over: its status, error attributes and duration."""
        if self._ends:
            return
        self._ends = True
        inst, span = self._inst, self.span
        elapsed = time.perf_counter() - self._start
        metric = {**inst.method_attributes(self.method)}
        if self._target is not None:
            metric[self._target[0]] = self._target[1]
        if inst.protocol_version is not None:
            metric["mcp.protocol.version"] = inst.protocol_version
        succeeded = error is None
        if error is not None:
            attributes, message = _error_attributes(error)
            metric = {**metric, **attributes}
            if span.is_recording():
                span.set_attributes(attributes)
                shown = None if message is None else inst.text(message)
                span.set_status(Status(StatusCode.ERROR, shown))
        elif self.method == "tools/call" and _tool_error(result):
            succeeded = False  # the conventions: a result only of a tool that succeeded
            metric = {**metric, "error.type": "tool_error"}
            if span.is_recording():
                span.set_attribute("error.type", "tool_error")
                span.set_status(Status(StatusCode.ERROR))
        if succeeded and self._content():
            span.set_attribute("gen_ai.tool.call.result", inst.content(result))
        if self._progress > _PROGRESS_EVENTS:
            span.set_attribute("mcpl_host.progress.count", self._progress)
        span.end()
        inst.meters.client_duration.record(elapsed, metric)
        inst.meters.client_active.add(-1, inst.method_attributes(self.method))


class _QuietTrace(RequestTrace):
    """A request's trace when nothing records (no SDK): the no-op tracer's span, which
    continues the caller's context (an upstream traceparent is still carried to the
    server), and nothing else: no attributes, no events, no metrics."""

    __slots__ = ()
    quiet = True

    def __init__(
        self, inst: Instruments | None, method: str, upstream: Span = INVALID_SPAN
    ) -> None:
        self._inst = inst  # type: ignore[assignment]
        self.method = method
        self.carrier = {}
        if inst is None:  # the shared trace of requests with no context at all
            self.span = INVALID_SPAN
            return
        self.span = _NOOP_TRACER.start_span(method, context=trace.set_span_in_context(upstream))
        if self.span.get_span_context().is_valid:
            propagate.inject(self.carrier, context=trace.set_span_in_context(self.span))

    def sent(self, request_id: int) -> None:  # noqa: ARG002 - the interface
        return None

    def progress(self, progress: float, total: float | None, message: str | None) -> None:  # noqa: ARG002 - the interface
        return None

    def moved(self, old_id: int, *, reissued: bool) -> None:  # noqa: ARG002 - the interface
        return None

    def end(self, error: BaseException | None = None, result: Any = None) -> None:  # noqa: ARG002 - the interface
        return None


# Never written to: with_trace copies a carrier it uses, and an empty one it ignores.
_NO_CONTEXT: Final = _QuietTrace(None, "")


def _tool_error(result: Any) -> bool:
    """A ``tools/call`` result with ``isError: true`` (raw JSON or decoded)."""
    if isinstance(result, msgspec.Raw):
        try:
            return _IS_ERROR.decode(result).isError is True
        except msgspec.DecodeError:
            return False
    if isinstance(result, Mapping):  # a result decoded as plain JSON
        return result.get("isError") is True
    return getattr(result, "is_error", None) is True


def _extracted(params: Any) -> otel_context.Context | None:
    """The valid trace context a server's request carries in ``_meta``, or None."""
    carrier = trace_carrier(params)
    if carrier is None:
        return None
    try:
        extracted = propagate.extract(carrier)
    except (ValueError, TypeError):
        return None
    if not trace.get_current_span(extracted).get_span_context().is_valid:
        return None
    return extracted


class ServeTrace:
    """The SERVER span of one request of the server's that the host serves; current in
    the task that serves it (a hook's own spans are its children)."""

    __slots__ = ("_inst", "_metric", "_start", "_token", "method", "span")

    def __init__(self, inst: Instruments, method: str, request_id: Any, params: Any) -> None:
        self._inst = inst
        self.method = inst.method_name(method)
        attributes: dict[str, Any] = {"mcp.method.name": self.method, **inst.attributes}
        if isinstance(request_id, int | str) and not isinstance(request_id, bool):
            attributes["jsonrpc.request.id"] = inst.text(str(request_id), _NAME_LIMIT)
        if inst.protocol_version is not None:
            attributes["mcp.protocol.version"] = inst.protocol_version
        # The conventions: the parent is the context the server put in _meta, and the
        # ambient context is linked. The host reads in a task with no context of its
        # own (Instruments.leave_ambient): its ambient is the transport's, the span that
        # opened it. Without a context in _meta the span starts a trace of its own.
        parent = _extracted(params)
        ambient = trace.get_current_span().get_span_context()
        if not ambient.is_valid and inst.connection is not None:
            ambient = inst.connection.span.get_span_context()
        links = [Link(ambient)] if ambient.is_valid else []
        self.span: Span = inst.tracer.start_span(
            self.method, context=parent, kind=SpanKind.SERVER, attributes=attributes, links=links
        )
        self._metric = inst.method_attributes(method)  # a bounded set of names
        self._start = time.perf_counter()
        self._token: Token[otel_context.Context] | None = otel_context.attach(
            trace.set_span_in_context(self.span)
        )
        inst.meters.server_active.add(1, self._metric)

    def end(
        self, code: int | None = None, message: str | None = None, *, error_type: str | None = None
    ) -> None:
        """Answered: with an error ``code`` (and its message) when it was refused or failed;
        or never answered, for ``error_type`` (``cancelled``: the server cancelled it,
        or its transport ended first). Once: a second call does nothing."""
        if self._token is None:
            return
        otel_context.detach(self._token)
        self._token = None
        span, metric = self.span, self._metric
        if code is None and error_type is not None:
            metric = {**metric, "error.type": error_type}
            if span.is_recording():
                span.set_attribute("error.type", error_type)
                span.set_status(Status(StatusCode.ERROR))
        if code is not None:
            metric = {**metric, "error.type": str(code), "rpc.response.status_code": str(code)}
            if span.is_recording():
                span.set_attributes(
                    {"error.type": str(code), "rpc.response.status_code": str(code)}
                )
                span.set_status(
                    Status(StatusCode.ERROR, None if message is None else self._inst.text(message))
                )
        span.end()
        inst = self._inst
        inst.meters.server_duration.record(time.perf_counter() - self._start, metric)
        inst.meters.server_active.add(-1, self._metric)


class _QuietServe(ServeTrace):
    """A served request's trace when nothing records: the server's context made current
    (a hook's own requests carry it on), and nothing else."""

    __slots__ = ()

    def __init__(self, params: Any) -> None:
        parent = _extracted(params)
        self._token = None if parent is None else otel_context.attach(parent)

    def end(
        self,
        code: int | None = None,  # noqa: ARG002 - the interface
        message: str | None = None,  # noqa: ARG002 - the interface
        *,
        error_type: str | None = None,  # noqa: ARG002 - the interface
    ) -> None:
        if self._token is not None:
            otel_context.detach(self._token)
            self._token = None


class ConnectionSpan:
    """A span of the connection's life (``mcpl_host.connect``, ``mcpl_host.reconnect``)."""

    __slots__ = ("_inst", "span")

    def __init__(self, inst: Instruments, span: Span) -> None:
        self._inst = inst
        self.span = span

    @contextmanager
    def step(self, name: str, **attributes: str | int) -> Iterator[Span]:
        """A child span for one step (``spawn``, ``open``, ``handshake``), ended with the
        block; an exception marks it failed."""
        span = self._inst.tracer.start_span(
            f"mcpl_host.{name}",
            context=trace.set_span_in_context(self.span),
            kind=SpanKind.INTERNAL,
            attributes={**self._inst.attributes, **attributes},
        )
        try:
            yield span
        except BaseException as exc:
            fail(span, exc)
            raise
        finally:
            span.end()

    def event(self, name: str, **attributes: str | int | float) -> None:
        if self.span.is_recording():
            self.span.add_event(f"mcpl_host.{name}", attributes)

    def end(self, error: BaseException | None = None) -> None:
        if error is not None:
            fail(self.span, error)
        self.span.end()

    def link(self) -> Link:
        """A link to this span, for the next connection span or a rebound request."""
        return Link(self.span.get_span_context())


def fail(span: Span, error: BaseException) -> None:
    """Mark a span failed with ``error``'s type (never its text: it may quote a peer)."""
    if span.is_recording():
        attributes, _ = _error_attributes(error)
        span.set_attributes(attributes)
        span.set_status(Status(StatusCode.ERROR))
