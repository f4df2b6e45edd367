"""mcpl_host: a trio-based, host-side connection manager for MCP and MCPL servers."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from .client import (
    CallToolResult,
    Completion,
    CreateMessageParams,
    CreateMessageResult,
    ElicitationHook,
    ElicitParams,
    ElicitResult,
    GetPromptResult,
    HookContext,
    Prompt,
    PromptRef,
    ReadResourceResult,
    Resource,
    ResourceTemplate,
    ResourceTemplateRef,
    Root,
    SamplingHook,
    Task,
    TaskError,
    TextContent,
    Tool,
)
from .client.connection import Connection, TransportFactory
from .driver.reconnect import Reconnect
from .driver.responder import Handler, Responder, ServerRequest
from .events import (
    Closed,
    Connected,
    Disconnected,
    Event,
    ListChanged,
    McplGrantChanged,
    Reconnected,
    Reconnecting,
    ResourceUpdated,
    RestoreFailed,
    ServerLog,
    ServerNotification,
    StderrLine,
)
from .mcpl.host import Mcpl, McplContext
from .protocol.envelope import Outcome, RequestId
from .protocol.errors import (
    AuthorizationError,
    AuthorizationRequired,
    CapabilityDenied,
    ConfigurationError,
    ConnectionClosed,
    HeaderMismatch,
    InitializeError,
    InputRequestError,
    InvalidToolError,
    LimitExceeded,
    McplHostError,
    MissingClientCapability,
    OutputSchemaError,
    ProtocolError,
    RequestError,
    RequestTimeout,
    ResourceNotFound,
    SpawnError,
    TransportError,
    UnsupportedVersion,
    VersionError,
)
from .protocol.framing import DEFAULT_MAX_MESSAGE_BYTES
from .protocol.profiles import KNOWN_REVISIONS, PROFILES, Profile
from .protocol.redact import Redactor
from .protocol.subscriptions import Subscriptions
from .telemetry import Telemetry
from .transports.targets import (
    HttpTarget,
    StdioTarget,
    Target,
    TcpTarget,
    UnixTarget,
    WebSocketTarget,
    parse_target,
)

if TYPE_CHECKING:
    from .manager import (
        Catalogue,
        CatalogueFilter,
        ConnectionManager,
        Listing,
        PromptEntry,
        ResourceEntry,
        ResourceTemplateEntry,
        ServerState,
        ServerStatus,
        ServerUnavailable,
        ToolEntry,
        UnknownName,
        UnknownPrompt,
        UnknownResource,
        UnknownServer,
        UnknownTool,
    )

# Loaded on first use (``from mcpl_host import ConnectionManager`` included): a host
# with one Connection never pays for the manager and the config loader it brings.
_LAZY = {
    "Catalogue": ".manager",
    "CatalogueFilter": ".manager",
    "ConnectionManager": ".manager",
    "Listing": ".manager",
    "PromptEntry": ".manager",
    "ResourceEntry": ".manager",
    "ResourceTemplateEntry": ".manager",
    "UnknownName": ".manager",
    "UnknownPrompt": ".manager",
    "UnknownResource": ".manager",
    "ServerState": ".manager",
    "ServerStatus": ".manager",
    "ServerUnavailable": ".manager",
    "ToolEntry": ".manager",
    "UnknownServer": ".manager",
    "UnknownTool": ".manager",
}


if not TYPE_CHECKING:  # a type checker sees the imports above, and no catch-all

    def __getattr__(name: str) -> Any:
        module = _LAZY.get(name)
        if module is None:
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module, __name__), name)
        globals()[name] = value
        return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})


__all__ = [
    "DEFAULT_MAX_MESSAGE_BYTES",
    "KNOWN_REVISIONS",
    "PROFILES",
    "AuthorizationError",
    "AuthorizationRequired",
    "CallToolResult",
    "CapabilityDenied",
    "Catalogue",
    "CatalogueFilter",
    "Closed",
    "Completion",
    "ConfigurationError",
    "Connected",
    "Connection",
    "ConnectionClosed",
    "ConnectionManager",
    "CreateMessageParams",
    "CreateMessageResult",
    "Disconnected",
    "ElicitParams",
    "ElicitResult",
    "ElicitationHook",
    "Event",
    "GetPromptResult",
    "Handler",
    "HeaderMismatch",
    "HookContext",
    "HttpTarget",
    "InitializeError",
    "InputRequestError",
    "InvalidToolError",
    "LimitExceeded",
    "ListChanged",
    "Listing",
    "Mcpl",
    "McplContext",
    "McplGrantChanged",
    "McplHostError",
    "MissingClientCapability",
    "Outcome",
    "OutputSchemaError",
    "Profile",
    "Prompt",
    "PromptEntry",
    "PromptRef",
    "ProtocolError",
    "ReadResourceResult",
    "Reconnect",
    "Reconnected",
    "Reconnecting",
    "Redactor",
    "RequestError",
    "RequestId",
    "RequestTimeout",
    "Resource",
    "ResourceEntry",
    "ResourceNotFound",
    "ResourceTemplate",
    "ResourceTemplateEntry",
    "ResourceTemplateRef",
    "ResourceUpdated",
    "Responder",
    "RestoreFailed",
    "Root",
    "SamplingHook",
    "ServerLog",
    "ServerNotification",
    "ServerRequest",
    "ServerState",
    "ServerStatus",
    "ServerUnavailable",
    "SpawnError",
    "StderrLine",
    "StdioTarget",
    "Subscriptions",
    "Target",
    "Task",
    "TaskError",
    "TcpTarget",
    "Telemetry",
    "TextContent",
    "Tool",
    "ToolEntry",
    "TransportError",
    "TransportFactory",
    "UnixTarget",
    "UnknownName",
    "UnknownPrompt",
    "UnknownResource",
    "UnknownServer",
    "UnknownTool",
    "UnsupportedVersion",
    "VersionError",
    "WebSocketTarget",
    "parse_target",
]

__version__ = "0.1.0.dev0"
