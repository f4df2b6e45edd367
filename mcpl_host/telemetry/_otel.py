"""The OpenTelemetry side of :mod:`mcpl_host.telemetry`: where the instruments of one
connection are made (the package's modules are the only ones that import it).

Names and attributes follow the OpenTelemetry semantic conventions for MCP (Development
status): a CLIENT span ``{mcp.method.name} {target}`` per request the host sends, a
SERVER span per request it serves, ``mcp.client.operation.duration`` and
``mcp.server.operation.duration``. What the conventions do not cover (connection spans,
in-flight requests, reconnects, refusals, bytes) is named under ``mcpl_host.``.

Cost: when nothing would record (no SDK: the tracer and meter providers are the API's
proxies or no-ops) a request costs two provider look-ups and a look at the current span,
and nothing else (:class:`QuietTrace`): no attributes, no metric calls. With an SDK,
attributes only a recording span keeps are set only when it records.
bench/telemetry_overhead.py measures both.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

import msgspec
from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.metrics import NoOpMeterProvider
from opentelemetry.metrics import _internal as _metrics_api
from opentelemetry.trace import Link, NoOpTracerProvider, ProxyTracerProvider, Span, SpanKind

from ..protocol.redact import Redactor
from ._meters import SCOPE, meters
from ._spans import (
    NAME_LIMIT,
    NO_CONTEXT,
    TEXT_LIMIT,
    ConnectionSpan,
    QuietServe,
    QuietTrace,
    RequestTrace,
    ServeTrace,
)

__all__ = ["ConnectionSpan", "Instruments", "RequestTrace", "ServeTrace"]

# Distinct method names a connection's metrics name (the caller and the server name
# methods); any more are _OTHER, the conventions' name for a value out of the known set.
_METHODS_KEPT: Final = 64
_OTHER: Final = "_OTHER"
# Patterns an MCPL grant event lists, granted and denied each.
_GRANT_PATTERNS: Final = 64

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
        self.tracer = trace.get_tracer(SCOPE, tracer_provider=config.tracer_provider)
        self.meters = meters(config.meter_provider)
        self.redactor = redactor
        self.record_content: bool = config.record_content
        self.content_limit: int = config.content_limit
        # On every span and metric of the connection: how the server is reached, and the
        # connection's own name (the embedder's, or one made from the target, redacted).
        self.attributes: dict[str, str | int] = {
            **attributes,
            "mcpl_host.server.name": redactor.log_value(server, NAME_LIMIT),
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
        :class:`QuietTrace`: only the caller's context, to carry (``.quiet`` is true:
        the driver may drop it once it has injected ``.carrier``)."""
        if self.quiet():
            upstream = trace.get_current_span() if parent is None else parent
            if not upstream.get_span_context().is_valid:  # no context: nothing to carry
                return NO_CONTEXT
            return QuietTrace(self, method, upstream)
        return RequestTrace(self, method, params, parent)

    # -- requests the host serves ---------------------------------------------------------

    def serve(self, method: str, request_id: Any, params: Any) -> ServeTrace:
        """Start the SERVER span of a server's request: the context the server put in
        ``_meta`` is its parent, the transport's span a link. When nothing records
        (:meth:`quiet`, decided once: an SDK set up meanwhile must not get the end of
        what it never saw start), only that context, current while it is served."""
        if self.quiet():
            return QuietServe(params)
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
            return [self.redactor.log_value(pattern, NAME_LIMIT) for pattern in kept]

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
            shown = self.text(method, NAME_LIMIT)
            attributes = self._by_method[method] = {"mcp.method.name": shown, **self.attributes}
        return attributes

    def method_name(self, method: str) -> str:
        """``method`` made safe for a span's name and attributes."""
        shown = self.method_attributes(method)["mcp.method.name"]
        return shown if shown != _OTHER else self.text(method, NAME_LIMIT)  # type: ignore[return-value]

    def text(self, value: str, limit: int = TEXT_LIMIT) -> str:
        return self.redactor.log_value(value, limit)

    def content(self, value: Any) -> str:
        """Arguments or a result, as redacted JSON text cut to the configured limit."""
        try:
            raw = value if isinstance(value, bytes | msgspec.Raw) else msgspec.json.encode(value)
            text = bytes(raw).decode()
        except (TypeError, UnicodeDecodeError, msgspec.EncodeError):
            text = repr(value)
        return self.redactor.log_value(text, self.content_limit)
