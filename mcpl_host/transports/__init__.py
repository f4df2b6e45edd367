"""Transports: each opens a byte stream to one server (DESIGN 2).

A transport is a ``trio.abc.Stream`` plus a label and a way to end it. The connection
frames messages over the stream and never needs to know whether a process, a TCP socket
or a Unix socket is behind it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

import trio

from ..protocol.errors import ConfigurationError
from ..protocol.redact import Redactor
from .environment import child_environment
from .sockets import SocketTransport, open_tcp, open_unix
from .stdio import StdioTransport, open_stdio
from .targets import (
    StdioTarget,
    Target,
    TcpTarget,
    UnixTarget,
    describe,
    parse_target,
    redactor_for,
)

__all__ = [
    "SocketTransport",
    "StdioTarget",
    "StdioTransport",
    "Target",
    "TcpTarget",
    "Transport",
    "UnixTarget",
    "child_environment",
    "describe",
    "open_stdio",
    "open_tcp",
    "open_transport",
    "open_unix",
    "parse_target",
    "redactor_for",
]


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
) -> Transport:
    """Open the transport ``target`` names.

    ``nursery``, ``on_stderr`` and ``redactor`` serve stdio targets (the stderr reader
    runs in ``nursery``); socket targets do not use them.

    Raises:
        SpawnError: a stdio server's program could not be started.
        TransportError: a socket could not be connected (``reason="connect-failed"``).
        ConfigurationError: ``target`` is not a known target type.
    """
    if isinstance(target, StdioTarget):
        return await open_stdio(target, nursery=nursery, on_stderr=on_stderr, redactor=redactor)
    if isinstance(target, TcpTarget):
        return await open_tcp(target)
    if isinstance(target, UnixTarget):
        return await open_unix(target)
    raise ConfigurationError(f"unsupported transport target {type(target).__name__}")
