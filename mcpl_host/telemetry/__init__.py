"""OpenTelemetry for connections: a span and metrics for every request sent and served,
connection spans, and the trace context carried to servers in ``_meta``.

Optional: it needs ``opentelemetry-api`` (``pip install 'mcpl-host[otel]'``). This
module never imports it; :func:`instruments_for` does, when a connection is made with
telemetry on (the default whenever the API is installed). Without the API nothing is
imported and every hook in the driver is skipped by one ``is None`` test. With the API
and no SDK configured, OpenTelemetry's own no-op tracer and meter take the calls.

Everything a peer or a caller wrote passes the connection's Redactor, escaped and cut,
before it becomes an attribute or an event; arguments and results are recorded only
when the embedder opts in (:attr:`Telemetry.record_content`). docs/observability.md.
"""

from __future__ import annotations

import contextlib
import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final
from urllib.parse import urlsplit

from ..protocol.errors import ConfigurationError
from ..protocol.redact import Redactor
from ..transports.http_target import HttpTarget
from ..transports.targets import StdioTarget, TcpTarget, UnixTarget, WebSocketTarget

if TYPE_CHECKING:
    from ._otel import Instruments

__all__ = ["Telemetry", "attach_context", "capture_context", "detach_context", "instruments_for"]

#: The most characters of arguments or results recorded when the embedder opts in.
DEFAULT_CONTENT_LIMIT: Final = 4096


@dataclass(frozen=True, slots=True)
class Telemetry:
    """How a connection reports to OpenTelemetry (``Connection(telemetry=...)``).

    ``tracer_provider`` and ``meter_provider``: where spans and metrics go (default:
    the global ones, which are no-ops until an SDK is configured).
    ``record_content``: also record a ``tools/call``'s arguments and result
    (``gen_ai.tool.call.arguments`` / ``.result``), redacted and cut to
    ``content_limit`` characters. Off by default: they may hold what the user typed.
    """

    tracer_provider: Any = None
    meter_provider: Any = None
    record_content: bool = False
    content_limit: int = DEFAULT_CONTENT_LIMIT

    def __post_init__(self) -> None:
        if self.content_limit < 16:
            raise ConfigurationError("Telemetry.content_limit must be at least 16")


def instruments_for(
    option: Telemetry | bool | None, *, server: str, target: object, redactor: Redactor
) -> Instruments | None:
    """The instruments of one connection, or None when telemetry is off.

    ``option``: None (the default) is on when ``opentelemetry-api`` is installed and off
    otherwise; False is off; True or a :class:`Telemetry` is on, and raises
    :class:`~mcpl_host.ConfigurationError` when the API is not installed."""
    if option is False:
        return None
    try:
        from ._otel import Instruments  # noqa: PLC0415 - only when asked for
    except ImportError:
        if option is None:
            return None
        raise ConfigurationError(
            "telemetry needs opentelemetry-api: pip install 'mcpl-host[otel]'"
        ) from None
    config = option if isinstance(option, Telemetry) else Telemetry()
    return Instruments(
        config, server=server, attributes=connection_attributes(target), redactor=redactor
    )


def connection_attributes(target: object) -> dict[str, str | int]:
    """The network attributes of the semantic conventions for a target: how it is
    reached, never a credential (no URL path, query or user information)."""
    if isinstance(target, StdioTarget):
        return {"network.transport": "pipe"}
    if isinstance(target, TcpTarget):
        return {
            "network.transport": "tcp",
            "server.address": target.host,
            "server.port": target.port,
        }
    if isinstance(target, UnixTarget):
        return {"network.transport": "unix", "server.address": target.path}
    if isinstance(target, WebSocketTarget | HttpTarget):
        parts = urlsplit(target.url)
        secure = parts.scheme in ("https", "wss")
        attributes: dict[str, str | int] = {
            "network.transport": "tcp",
            "network.protocol.name": "websocket" if isinstance(target, WebSocketTarget) else "http",
        }
        if parts.hostname:
            attributes["server.address"] = parts.hostname
            with contextlib.suppress(ValueError):  # a port the target itself refuses later
                attributes["server.port"] = parts.port or (443 if secure else 80)
        return attributes
    return {}  # a transport of the embedder's making


def capture_context() -> object | None:
    """The caller's OpenTelemetry context, for a face to carry into the trio task that
    runs its call (a trio task does not see an asyncio task's or a thread's context
    variables); None when OpenTelemetry is not loaded, at the cost of a dict lookup."""
    context = sys.modules.get("opentelemetry.context")
    if context is None:
        return None
    return context.get_current()  # type: ignore[no-any-return]


def attach_context(captured: object) -> object:
    """Make a captured context current in this task; the token is for :func:`detach_context`."""
    context = sys.modules["opentelemetry.context"]
    return context.attach(captured)


def detach_context(token: object) -> None:
    sys.modules["opentelemetry.context"].detach(token)
