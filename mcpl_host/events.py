"""What a Connection tells its embedder, through the ``on_event`` callback.

The callback is called synchronously from the connection's own tasks, so it must be
quick and must not block; to consume events elsewhere, hand them to your own channel
(``send_channel.send_nowait(event)``). An exception from the callback is logged and
otherwise ignored: it never breaks the connection.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeAlias

import msgspec

from .protocol.errors import McplHostError
from .protocol.profiles import era_of

__all__ = [
    "Closed",
    "Connected",
    "Disconnected",
    "Event",
    "EventCallback",
    "ListChanged",
    "McplGrantChanged",
    "Reconnected",
    "Reconnecting",
    "ResourceUpdated",
    "RestoreFailed",
    "ServerLog",
    "ServerNotification",
    "StderrLine",
]


@dataclass(frozen=True, slots=True)
class Connected:
    """The handshake (or, on 2026-07-28, ``server/discover``) succeeded on transport
    epoch ``epoch``."""

    epoch: int
    protocol_version: str
    server_info: dict[str, Any]

    @property
    def era(self) -> str:
        """``"stateless"`` (2026-07-28 on) or ``"handshake"`` (``initialize``)."""
        return era_of(self.protocol_version)


@dataclass(frozen=True, slots=True)
class Disconnected:
    """Transport epoch ``epoch`` ended. ``reason``: ``closed`` (by the host), ``eof``,
    ``read-failed``, ``write-failed``."""

    epoch: int
    reason: str


@dataclass(frozen=True, slots=True)
class StderrLine:
    """One line a stdio server wrote on stderr, redacted (credentials masked) but neither
    escaped nor cut: escape it (``mcpl_host.protocol.redact.log_value``) before writing
    it anywhere control characters matter."""

    line: str


@dataclass(frozen=True, slots=True)
class ServerNotification:
    """A notification from the server that no other event stands for (cancellation and
    progress are consumed by the connection; list changes, resource updates and log
    messages have events of their own). ``params`` is raw JSON; decode it with
    ``msgspec.json.decode``."""

    method: str
    params: msgspec.Raw | None


@dataclass(frozen=True, slots=True)
class ListChanged:
    """The server said a list changed; the cached copy is dropped. ``kind``: ``tools``,
    ``resources`` (resource templates included) or ``prompts``."""

    kind: str


@dataclass(frozen=True, slots=True)
class ResourceUpdated:
    """``notifications/resources/updated``: a subscribed resource changed; read it again."""

    uri: str


@dataclass(frozen=True, slots=True)
class ServerLog:
    """``notifications/message``: a log message from the server (also logged through
    structlog under ``mcpl_host.server``). ``data`` is the server's JSON value, as sent."""

    level: str
    logger: str | None
    data: Any


@dataclass(frozen=True, slots=True)
class McplGrantChanged:
    """A ``featureSets/update`` was settled: ``granted`` is the MCPL grant in force now;
    ``state`` is ``active``, ``awaiting`` (the update failed), ``mcp-only`` or ``close``
    (the server refused MCPL)."""

    granted: frozenset[str]
    state: str


@dataclass(frozen=True, slots=True)
class Reconnecting:
    """Attempt ``attempt`` to re-establish the connection starts after ``delay`` seconds."""

    attempt: int
    delay: float


@dataclass(frozen=True, slots=True)
class Reconnected:
    """The connection is back, on transport epoch ``epoch``; pending requests are rebound."""

    epoch: int
    protocol_version: str
    server_info: dict[str, Any]

    @property
    def era(self) -> str:
        """``"stateless"`` or ``"handshake"``, as :attr:`Connected.era`."""
        return era_of(self.protocol_version)


@dataclass(frozen=True, slots=True)
class RestoreFailed:
    """After a reconnect, asking the new transport again for what the embedder had set
    (``resources/subscribe`` of one URI, or ``logging/setLevel``; ``params`` as sent)
    failed with ``error``. A refusal (:class:`~mcpl_host.RequestError`) is forgotten: no
    later transport is asked again; a timeout is asked again after the next reconnect."""

    method: str
    params: dict[str, Any]
    error: McplHostError


@dataclass(frozen=True, slots=True)
class Closed:
    """The connection is closed for good: ``closed`` (by the host), the transport's loss
    reason when there is no reconnect policy, or ``reconnect-failed`` (``error`` is then
    the last attempt's error)."""

    reason: str
    error: McplHostError | None = None


Event: TypeAlias = (
    Connected
    | Disconnected
    | StderrLine
    | ServerNotification
    | ListChanged
    | ResourceUpdated
    | ServerLog
    | McplGrantChanged
    | Reconnecting
    | Reconnected
    | RestoreFailed
    | Closed
)
EventCallback: TypeAlias = Callable[[Event], None]
