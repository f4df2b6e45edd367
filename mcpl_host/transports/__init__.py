"""Transports: each opens a byte stream to one server (DESIGN 2).

A transport is a ``trio.abc.Stream`` plus a label and a way to end it. The connection
frames messages over the stream and never needs to know whether a process, a TCP socket,
a Unix socket or a WebSocket is behind it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

import trio

from ..protocol.errors import ConfigurationError
from ..protocol.redact import Redactor
from .environment import child_environment
from .sockets import SocketTransport, open_tcp, open_unix
from .stdio import StdioTransport, open_stdio
from .targets import (
    HttpTarget,
    StdioTarget,
    Target,
    TcpTarget,
    UnixTarget,
    WebSocketTarget,
    describe,
    parse_target,
    redactor_for,
)

if TYPE_CHECKING:
    from .websocket import WebSocketTransport, open_websocket

__all__ = [
    "HttpTarget",
    "SocketTransport",
    "StdioTarget",
    "StdioTransport",
    "Target",
    "TcpTarget",
    "Transport",
    "UnixTarget",
    "WebSocketTarget",
    "WebSocketTransport",
    "child_environment",
    "describe",
    "open_stdio",
    "open_tcp",
    "open_transport",
    "open_unix",
    "open_websocket",
    "parse_target",
    "redactor_for",
]


def __getattr__(name: str) -> Any:
    # The WebSocket transport (trio-websocket, wsproto, h11: a sixth of the package's
    # import time) is imported when first used, not by every embedder.
    if name in ("WebSocketTransport", "open_websocket"):
        from . import websocket  # noqa: PLC0415 - lazy on purpose

        return getattr(websocket, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class Transport(Protocol):
    """What the connection needs from any transport."""

    @property
    def stream(self) -> trio.abc.Stream:
        """The server's bytes, both ways."""
        ...

    @property
    def description(self) -> str:
        """A short label, safe for logs."""
        ...

    async def aclose(self) -> None:
        """End the transport and release everything it holds; idempotent."""
        ...


async def open_transport(
    target: Target,
    *,
    nursery: trio.Nursery,
    on_stderr: Callable[[str], None],
    redactor: Redactor,
    max_message_bytes: int | None = None,
) -> Transport:
    """Open the transport ``target`` names.

    ``nursery``, ``on_stderr`` and ``redactor`` serve stdio targets (the stderr reader
    runs in ``nursery``); a WebSocket target runs its frame reader in ``nursery``, adds
    a token resolved at the dial to ``redactor`` and bounds a frame by
    ``max_message_bytes`` (unless the target sets its own bound); plain socket targets
    use none of them.

    Raises:
        SpawnError: a stdio server's program could not be started.
        TransportError: a socket or WebSocket could not be connected
            (``reason="connect-failed"``, or ``"connect-timeout"`` past a WebSocket
            target's ``open_timeout``).
        ConfigurationError: ``target`` is not a known target type, or a WebSocket token
            provider returned no token.
    """
    if isinstance(target, StdioTarget):
        return await open_stdio(target, nursery=nursery, on_stderr=on_stderr, redactor=redactor)
    if isinstance(target, TcpTarget):
        return await open_tcp(target)
    if isinstance(target, UnixTarget):
        return await open_unix(target)
    if isinstance(target, HttpTarget):
        from .http import open_http  # noqa: PLC0415 - lazy on purpose: httpx is heavy

        return await open_http(
            target, nursery=nursery, redactor=redactor, max_message_bytes=max_message_bytes
        )
    if isinstance(target, WebSocketTarget):
        from .websocket import open_websocket  # noqa: PLC0415 - lazy on purpose

        return await open_websocket(
            target, nursery=nursery, redactor=redactor, max_message_bytes=max_message_bytes
        )
    raise ConfigurationError(f"unsupported transport target {type(target).__name__}")
