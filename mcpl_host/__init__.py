"""mcpl_host: a trio-based, host-side connection manager for MCP and MCPL servers."""

from __future__ import annotations

from .connection import Connection, TransportFactory
from .events import (
    Closed,
    Connected,
    Disconnected,
    Event,
    Reconnected,
    Reconnecting,
    ServerNotification,
    StderrLine,
)
from .manager import (
    ConnectionManager,
    ServerState,
    ServerStatus,
    ServerUnavailable,
    ToolEntry,
    ToolListing,
    UnknownServer,
    UnknownTool,
)
from .protocol.envelope import Outcome, RequestId
from .protocol.errors import (
    ConfigurationError,
    ConnectionClosed,
    InitializeError,
    McplHostError,
    ProtocolError,
    RequestError,
    RequestTimeout,
    SpawnError,
    TransportError,
    VersionError,
)
from .protocol.framing import DEFAULT_MAX_MESSAGE_BYTES
from .protocol.profiles import KNOWN_REVISIONS, PROFILES, Profile
from .protocol.redact import Redactor
from .reconnect import Reconnect
from .responder import Handler, Responder, ServerRequest
from .transports.targets import StdioTarget, Target, TcpTarget, UnixTarget, parse_target

__all__ = [
    "DEFAULT_MAX_MESSAGE_BYTES",
    "KNOWN_REVISIONS",
    "PROFILES",
    "Closed",
    "ConfigurationError",
    "Connected",
    "Connection",
    "ConnectionClosed",
    "ConnectionManager",
    "Disconnected",
    "Event",
    "Handler",
    "InitializeError",
    "McplHostError",
    "Outcome",
    "Profile",
    "ProtocolError",
    "Reconnect",
    "Reconnected",
    "Reconnecting",
    "Redactor",
    "RequestError",
    "RequestId",
    "RequestTimeout",
    "Responder",
    "ServerNotification",
    "ServerRequest",
    "ServerState",
    "ServerStatus",
    "ServerUnavailable",
    "SpawnError",
    "StderrLine",
    "StdioTarget",
    "Target",
    "TcpTarget",
    "ToolEntry",
    "ToolListing",
    "TransportError",
    "TransportFactory",
    "UnixTarget",
    "UnknownServer",
    "UnknownTool",
    "VersionError",
    "parse_target",
]

__version__ = "0.1.0.dev0"
