"""The manager's catalogue: listings of every kind, and calls routed by catalogue name.

Currency comes from each Connection's list caches: a server's ``list_changed``, a
replaced transport and a 2026-07-28 listen's gap drop its cached list, and the next
listing reads it again. A call by name reads its name (:mod:`.naming`: the server, then
the item's own key), checks the server's filter, and finds the key in the list that
server's connection keeps (``Connection.listed``; read again when the key is not
there): no other server is read, waited for or locked, and nothing runs in the
background.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final

import trio

from .._log import PeerLogBudget, get_logger
from ..client.cache import KINDS, ListKind, key_of
from ..client.connection import Connection
from ..client.lists import LISTS, declared
from ..client.types import CallToolResult, GetPromptResult, ReadResourceResult
from ..config import CatalogueFilter
from ..driver.pending import ProgressCallback
from ..protocol.errors import RequestTimeout
from ._server import ManagedServer
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
    UnknownTool,
)
from .gather import ENTRIES, Source, gather, read
from .naming import split

__all__ = ["CatalogueMethods"]

_log = get_logger("mcpl_host.manager")

_UNKNOWN: Final[dict[ListKind, type[UnknownName]]] = {
    "tools": UnknownTool,
    "resources": UnknownResource,
    "resource_templates": UnknownResource,
    "prompts": UnknownPrompt,
}


class CatalogueMethods:
    """The catalogue part of :class:`~mcpl_host.manager.ConnectionManager`."""

    _servers: dict[str, ManagedServer]
    _separator: str

    def _init_catalogue(self, filters: Mapping[str, CatalogueFilter]) -> None:
        self._filters = dict(filters)
        # One reading at a time of a server's list for calls by name (servers x kinds).
        self._reading: dict[tuple[str, ListKind], trio.Lock] = {}
        # One budget for the whole manager: a server listing duplicates on every read
        # costs a few lines a minute.
        self._catalogue_log = PeerLogBudget().wrap(_log)

    if TYPE_CHECKING:  # ConnectionManager's

        def connection(self, name: str) -> Connection: ...

        def _server(self, name: str) -> ManagedServer: ...

    # -- listings ------------------------------------------------------------------------

    async def list_tools(self, *, timeout: float | None = None) -> Listing[ToolEntry]:
        """Every usable server's tools, each under its catalogue name.

        Each server declaring ``tools`` is read through its connection (from the
        connection's cache unless the list changed since, else every page, within
        ``timeout`` each; default: the request timeout), concurrently; its filter is
        applied. A server that is not ``ready`` (``ServerUnavailable``) or whose list
        could not be read is in the listing's ``errors``, with no entries: nothing is
        raised for a server.
        """
        return await self._build("tools", timeout)

    async def list_resources(self, *, timeout: float | None = None) -> Listing[ResourceEntry]:
        """Every usable server's resources (as :meth:`list_tools`; capability
        ``resources``)."""
        return await self._build("resources", timeout)

    async def list_resource_templates(
        self, *, timeout: float | None = None
    ) -> Listing[ResourceTemplateEntry]:
        """Every usable server's resource templates (as :meth:`list_tools`; capability
        ``resources``; a server answering ``resources/templates/list`` with -32601 has
        none)."""
        return await self._build("resource_templates", timeout)

    async def list_prompts(self, *, timeout: float | None = None) -> Listing[PromptEntry]:
        """Every usable server's prompts (as :meth:`list_tools`; capability
        ``prompts``)."""
        return await self._build("prompts", timeout)

    async def catalogue(self, *, timeout: float | None = None) -> Catalogue:
        """The four listings at once (each as :meth:`list_tools`)."""
        built: dict[ListKind, Listing[Any]] = {}

        async def one(kind: ListKind) -> None:
            built[kind] = await self._build(kind, timeout)

        async with trio.open_nursery() as nursery:
            for kind in KINDS:
                nursery.start_soon(one, kind)
        return Catalogue(
            tools=built["tools"],
            resources=built["resources"],
            resource_templates=built["resource_templates"],
            prompts=built["prompts"],
        )

    # -- calls by name -------------------------------------------------------------------

    async def call_tool(
        self,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        timeout: float | None = None,
        on_progress: ProgressCallback | None = None,
        progress_resets_timeout: bool = False,
        max_timeout: float | None = None,
        rebind: bool | None = None,
        validate_output: bool = True,
        task: bool | None = None,
    ) -> CallToolResult:
        """Call the tool of catalogue name ``name`` on its server, under the server's own
        name for it: :meth:`mcpl_host.Connection.call_tool` (a tool's own failure is a
        result with ``is_error``; the result is checked against the tool's
        ``outputSchema`` unless ``validate_output=False``).

        ``timeout`` bounds the call, and each page of the server's tool list when the
        name is not in the one its connection keeps (then read once more).

        Raises :class:`UnknownTool` for a name not in the catalogue,
        :class:`ServerUnavailable` when its server is down, the list's own error when it
        cannot be read, and what Connection.call_tool raises
        (:class:`~mcpl_host.OutputSchemaError`, RequestError, RequestTimeout, ...).
        """
        entry: ToolEntry = await self._resolve("tools", name, timeout)
        return await self.connection(entry.server).call_tool(
            entry.tool.name,
            arguments,
            timeout=timeout,
            on_progress=on_progress,
            progress_resets_timeout=progress_resets_timeout,
            max_timeout=max_timeout,
            rebind=rebind,
            validate_output=validate_output,
            task=task,
        )

    async def get_prompt(
        self,
        name: str,
        arguments: Mapping[str, str] | None = None,
        *,
        timeout: float | None = None,
    ) -> GetPromptResult:
        """``prompts/get`` of the prompt of catalogue name ``name``, on its server.

        Raises :class:`UnknownPrompt` (as :meth:`call_tool` raises UnknownTool),
        :class:`ServerUnavailable`, and what Connection.get_prompt raises.
        """
        entry: PromptEntry = await self._resolve("prompts", name, timeout)
        return await self.connection(entry.server).get_prompt(
            entry.prompt.name, arguments, timeout=timeout
        )

    async def read_resource(
        self, name_or_uri: str, *, server: str | None = None, timeout: float | None = None
    ) -> ReadResourceResult:
        """``resources/read``: of the resource of catalogue name ``name_or_uri``; or, with
        ``server``, of the URI ``name_or_uri`` on that server (how an expansion of a
        resource template is read), which its filter must admit (as written and in its
        normalised spelling: :meth:`CatalogueFilter.admits`); it is sent as written.

        Raises :class:`UnknownResource` for a name not in the catalogue (as
        :meth:`call_tool` raises UnknownTool) or a URI the server's filter leaves out
        (nothing sent), :class:`UnknownServer`, :class:`ServerUnavailable`, and what
        Connection.read_resource raises (:class:`~mcpl_host.ResourceNotFound`, ...).
        """
        if server is not None:
            self._server(server)  # UnknownServer first
            if not self._filters[server].admits("resources", name_or_uri):
                raise UnknownResource(name_or_uri, server=server)
            return await self.connection(server).read_resource(name_or_uri, timeout=timeout)
        entry: ResourceEntry = await self._resolve("resources", name_or_uri, timeout)
        return await self.connection(entry.server).read_resource(
            entry.resource.uri, timeout=timeout
        )

    # -- finding a name ------------------------------------------------------------------

    def _sources(self) -> list[Source]:
        """Each server as a listing sees it: ready ones are read, the others
        (``reconnecting`` too: its lists are about to be dropped) are errors."""
        sources: list[Source] = []
        for name, server in self._servers.items():
            status, conn = server.status, server.connection
            catalogue_filter = self._filters[name]
            if status.state == "ready" and conn is not None:
                sources.append(Source(name, conn, None, catalogue_filter))
            else:
                error = ServerUnavailable(name, status.state, status.error)
                sources.append(Source(name, None, error, catalogue_filter))
        return sources

    async def _build(self, kind: ListKind, timeout: float | None) -> Listing[Any]:
        return await gather(
            kind,
            self._sources(),
            separator=self._separator,
            log=self._catalogue_log,
            timeout=timeout,
        )

    async def _resolve(self, kind: ListKind, name: str, timeout: float | None) -> Any:
        """The entry of catalogue name ``name``. Only its own server's list is looked
        in: the one its connection keeps, read again (past its cache) when the key is
        not there.

        Raises the Unknown* error of ``kind`` for a name no configured server could
        have given, a key its filter leaves out or its server does not list (nothing
        sent but that list's reading); ServerUnavailable when the server is down; the
        list's own error when it cannot be read (the name may well be there: it is not
        called unknown)."""
        parsed = split(name, self._separator)
        if parsed is None or parsed[0] not in self._servers:
            raise _UNKNOWN[kind](name)
        server, key = parsed
        if not self._filters[server].admits(kind, key):
            raise _UNKNOWN[kind](name)
        conn = self.connection(server)  # a reconnecting one's list waits for it
        if not declared(conn.server_capabilities, kind):
            raise _UNKNOWN[kind](name)
        item = conn.listed(kind, key)
        if item is None:
            item = await self._read_for(server, conn, kind, key, timeout)
            if item is None:
                raise _UNKNOWN[kind](name)
        return ENTRIES[kind](name, server, item)

    async def _read_for(
        self, server: str, conn: Connection, kind: ListKind, key: str, timeout: float | None
    ) -> Any | None:
        """``key``'s item after reading the server's list of ``kind`` again, past its
        cache. One reading at a time per server and kind: calls arriving together wait
        for it (within their own ``timeout``) and find their keys in what it kept."""
        lock = self._reading.setdefault((server, kind), trio.Lock())
        try:
            with trio.fail_after(math.inf if timeout is None else timeout):
                await lock.acquire()
        except trio.TooSlowError:
            raise RequestTimeout(
                f"the server's {kind} list was still being read after {timeout} s",
                method=LISTS[kind].method,
                timeout=timeout or 0.0,
                server=server,
            ) from None
        try:
            item = conn.listed(kind, key)  # read meanwhile, for the call before this one
            if item is None:
                items = await read(conn, kind, refresh=True, timeout=timeout)
                # Searched as read: a list that changed meanwhile was not kept.
                item = next((i for i in items if key_of(kind, i) == key), None)
        finally:
            lock.release()
        return item
