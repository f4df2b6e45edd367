"""The aggregated tool list: every connected server's ``tools/list``, page after page and
server beside server, named by :mod:`.naming`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Final

import msgspec
import trio

from .._log import PeerLogBudget, get_logger
from ..client.connection import Connection
from ..client.pagination import list_raw
from ..protocol.errors import McplHostError, ProtocolError
from .naming import TOOL_SEPARATOR, ToolEntry, qualify

__all__ = ["MAX_PAGES", "ToolListing", "gather_tools", "list_server_tools"]

_log = get_logger("mcpl_host.manager")
_PLAIN: Final = msgspec.json.Decoder()

MAX_PAGES: Final = 1000
"""A server handing out new cursors forever must not keep the manager listing forever."""


@dataclass(frozen=True, slots=True)
class ToolListing:
    """What ``ConnectionManager.list_tools()`` found.

    ``tools``: every tool of every server that answered, in configuration order, each
    with its aggregated name. ``errors``: by server name, why that server's tools are
    missing or incomplete (not connected: :class:`~mcpl_host.manager.ServerUnavailable`;
    its ``tools/list`` failed; a cursor repeated). A server absent from ``errors`` is
    listed in full.
    """

    tools: list[ToolEntry] = field(default_factory=list)
    errors: dict[str, McplHostError] = field(default_factory=dict)

    def names(self) -> list[str]:
        """The aggregated names, in order."""
        return [entry.name for entry in self.tools]


async def gather_tools(
    servers: Mapping[str, Connection | McplHostError],
    *,
    timeout: float | None = None,
    separator: str = TOOL_SEPARATOR,
    max_pages: int = MAX_PAGES,
) -> ToolListing:
    """List the tools of every server given a Connection, concurrently; a server given
    an error instead is reported with it. Never raises a
    :class:`~mcpl_host.McplHostError`: every server's trouble ends in ``errors``."""
    listings: dict[str, list[tuple[str, bytes]]] = {}
    errors: dict[str, McplHostError] = {}

    async def one(name: str, conn: Connection) -> None:
        tools, error = await list_server_tools(conn, timeout=timeout, max_pages=max_pages)
        listings[name] = tools
        if error is not None:
            errors[name] = error

    async with trio.open_nursery() as nursery:
        for name, conn in servers.items():
            if isinstance(conn, Connection):
                nursery.start_soon(one, name, conn)
            else:
                errors[name] = conn
    order: Sequence[str] = list(servers)
    return ToolListing(
        qualify(order, listings, separator=separator),
        {name: errors[name] for name in order if name in errors},
    )


async def list_server_tools(
    conn: Connection, *, timeout: float | None = None, max_pages: int = MAX_PAGES
) -> tuple[list[tuple[str, bytes]], McplHostError | None]:
    """One server's whole tool list (name and JSON of each tool), or no tools and
    why (never raises a :class:`~mcpl_host.McplHostError`): never a partial list.

    The error is the request's own (:class:`~mcpl_host.RequestError`,
    :class:`~mcpl_host.RequestTimeout`, :class:`~mcpl_host.ConnectionClosed`) or the
    :class:`~mcpl_host.ProtocolError` of a broken list (a repeated cursor, too many
    pages, a malformed page, an entry that is not an object) or the
    :class:`~mcpl_host.LimitExceeded` of one past the connection's list bounds. Objects
    without a string ``name`` are left out, and so is a name already listed by this
    server (``tools/call`` could not tell the two apart), each with a warning.
    """
    log = PeerLogBudget().wrap(_log).bind(server=conn.name)
    try:
        listed = await list_raw(conn, "tools/list", "tools", max_pages=max_pages, timeout=timeout)
    except McplHostError as exc:
        return [], exc
    tools: list[tuple[str, bytes]] = []
    names: set[str] = set()
    for item in listed:
        # Decoded once to check it and read its name, then kept as its JSON (ToolEntry).
        try:
            name = _PLAIN.decode(item).get("name")  # list_raw passes objects only
        except msgspec.DecodeError as exc:  # a string in it that is not UTF-8
            error = f"a tool of tools/list is not JSON: {conn.redactor.log_value(str(exc))}"
            return [], ProtocolError(error, server=conn.name)
        if not isinstance(name, str):
            log.warning("tool left out", reason="not an object with a string name")
        elif name in names:
            log.warning("tool left out", reason="listed twice", tool=conn.redactor.log_value(name))
        else:
            names.add(name)
            tools.append((name, bytes(item)))
    return tools, None
