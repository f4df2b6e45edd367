"""Many servers from one configuration, each supervised on its own (docs/manager.md).

:class:`ConnectionManager` keeps one :class:`~mcpl_host.Connection` per configured
server, retries first connects, reports a :class:`ServerStatus` per server, and
gathers their tools, resources, resource templates and prompts into one catalogue under
unambiguous names. One server's failure never reaches the
others, nor the caller of ``async with``.
"""

from __future__ import annotations

from ..config import CatalogueFilter
from ._manager import DEFAULT_RECONNECT, ConnectionManager
from ._server import ManagerEventCallback
from ._specs import ServerSpec
from .entries import (
    Catalogue,
    Listing,
    PromptEntry,
    ResourceEntry,
    ResourceTemplateEntry,
    ToolEntry,
)
from .errors import (
    ServerUnavailable,
    UnknownName,
    UnknownPrompt,
    UnknownResource,
    UnknownServer,
    UnknownTool,
)
from .naming import SEPARATOR, qualify, split
from .status import ServerState, ServerStatus

__all__ = [
    "DEFAULT_RECONNECT",
    "SEPARATOR",
    "Catalogue",
    "CatalogueFilter",
    "ConnectionManager",
    "Listing",
    "ManagerEventCallback",
    "PromptEntry",
    "ResourceEntry",
    "ResourceTemplateEntry",
    "ServerSpec",
    "ServerState",
    "ServerStatus",
    "ServerUnavailable",
    "ToolEntry",
    "UnknownName",
    "UnknownPrompt",
    "UnknownResource",
    "UnknownServer",
    "UnknownTool",
    "qualify",
    "split",
]
