"""The spans of :mod:`mcpl_host.telemetry`: a request the host sends (CLIENT), one it
serves (SERVER), and the connection's own (INTERNAL), named and attributed by the
OpenTelemetry semantic conventions for MCP; each has a quiet form for when nothing
records (no SDK), which carries the context and does nothing else."""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import Token
from typing import TYPE_CHECKING, Any, ClassVar, Final, Protocol

import msgspec
from opentelemetry import context as otel_context
from opentelemetry import propagate, trace
from opentelemetry.trace import (
    INVALID_SPAN,
    Link,
    NoOpTracer,
    Span,
    SpanKind,
    Status,
    StatusCode,
)

from ..protocol.errors import InitializeError, McplHostError, RequestError, RequestTimeout
from ..protocol.trace import trace_carrier

if TYPE_CHECKING:
    from opentelemetry.trace import Tracer

    from ..protocol.redact import Redactor
    from ._meters import Meters


class Instruments(Protocol):
    """What a span takes from its connection's instruments (``_otel.Instruments``; a
    protocol here, so that the two modules do not import each other)."""

    tracer: Tracer
    meters: Meters
    redactor: Redactor
    attributes: dict[str, str | int]
    record_content: bool
    protocol_version: str | None
    connection: ConnectionSpan | None

    def method_attributes(self, method: str) -> dict[str, str | int]: ...
    def method_name(self, method: str) -> str: ...
    def text(self, value: str, limit: int = ...) -> str: ...
    def content(self, value: Any) -> str: ...


__all__ = [
    "NAME_LIMIT",
    "NO_CONTEXT",
    "TEXT_LIMIT",
    "ConnectionSpan",
    "QuietServe",
    "QuietTrace",
    "RequestTrace",
    "ServeTrace",
]

# Peer and caller text in attributes: names, URIs, messages, cut to these many chars.
NAME_LIMIT: Final = 128
TEXT_LIMIT: Final = 512
# Progress events kept on one request's span (a server sends as many as it likes).
_PROGRESS_EVENTS: Final = 32

# The methods whose params name a target (the span name's second part, low cardinality).
_NAMED: Final = {"tools/call": "gen_ai.tool.name", "prompts/get": "gen_ai.prompt.name"}
_URI_METHODS: Final = frozenset({"resources/read", "resources/subscribe", "resources/unsubscribe"})


class _IsError(msgspec.Struct):
    isError: Any = None


_IS_ERROR: Final = msgspec.json.Decoder(_IsError)

# What the API's own no-op tracer gives: no span of its own, the current one continued.
_NOOP_TRACER: Final = NoOpTracer()


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
            shown = inst.redactor.log_value(value, TEXT_LIMIT if uri else NAME_LIMIT)
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


class QuietTrace(RequestTrace):
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
NO_CONTEXT: Final = QuietTrace(None, "")


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
            attributes["jsonrpc.request.id"] = inst.text(str(request_id), NAME_LIMIT)
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


class QuietServe(ServeTrace):
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
