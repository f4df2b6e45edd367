"""Many servers from one configuration, each supervised on its own (docs/manager.md).

:class:`ConnectionManager` keeps one :class:`~mcpl_host.Connection` per configured
server, retries first connects, reports a :class:`ServerStatus` per server, and
aggregates their tools under unambiguous names. One server's failure never reaches the
others, nor the caller of ``async with``.
"""

from __future__ import annotations

from ._manager import DEFAULT_RECONNECT, ConnectionManager
from ._server import ManagerEventCallback
from ._specs import ServerSpec
from .errors import ServerUnavailable, UnknownServer, UnknownTool
from .naming import TOOL_SEPARATOR, ToolEntry, qualify
from .status import ServerState, ServerStatus
from .tools import ToolListing

__all__ = [
    "DEFAULT_RECONNECT",
    "TOOL_SEPARATOR",
    "ConnectionManager",
    "ManagerEventCallback",
    "ServerSpec",
    "ServerState",
    "ServerStatus",
    "ServerUnavailable",
    "ToolEntry",
    "ToolListing",
    "UnknownServer",
    "UnknownTool",
    "qualify",
]
