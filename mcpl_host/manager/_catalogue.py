"""The manager's catalogue: listings of every kind, and calls routed by catalogue name.

Currency comes from each Connection's list caches: a server's ``list_changed``, a
replaced transport and a 2026-07-28 listen's gap drop its cached list, and the next
listing reads it again. A call by name reads its name (:mod:`.naming`: the server, then
the item's own key), checks the server's filter, and finds the key in that server's
list alone, through the same cache: no other server is read, waited for or locked, and
nothing runs in the background. The index kept of each server's list (to find a key
without a scan per call) is rebuilt when the connection's list version changes.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final

import trio

from .._log import PeerLogBudget, get_logger
from ..client.cache import KINDS, ListKind
from ..client.connection import Connection
from ..client.types import CallToolResult, GetPromptResult, ReadResourceResult
from ..config import CatalogueFilter
from ..driver.pending import ProgressCallback
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
from .gather import ENTRIES as _ENTRY
from .gather import Source, gather, own_key, read
from .naming import split

__all__ = ["CatalogueMethods"]

_log = get_logger("mcpl_host.manager")

_UNKNOWN: Final[dict[ListKind, type[UnknownName]]] = {
    "tools": UnknownTool,
    "resources": UnknownResource,
    "resource_templates": UnknownResource,
    "prompts": UnknownPrompt,
}
_ALL: Final = CatalogueFilter()


class CatalogueMethods:
    """The catalogue part of :class:`~mcpl_host.manager.ConnectionManager`."""

    _servers: dict[str, ManagedServer]
    _separator: str

    def _init_catalogue(self, filters: Mapping[str, CatalogueFilter]) -> None:
        self._filters = dict(filters)
        # Per server and kind: the connection and list version it was made from, and
        # the server's items by own key (the first of a key listed twice, as listings).
        self._index: dict[tuple[str, ListKind], tuple[Connection, int, dict[str, Any]]] = {}
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

        ``timeout`` bounds the call, and each page of a listing it needs first (the
        name is resolved against the last listing while no server's list changed).

        Raises :class:`UnknownTool` for a name not in the catalogue (looked up once
        more, its server's list read afresh, first), :class:`ServerUnavailable` when its
        server is down, and what Connection.call_tool raises
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
        resource template is read), which its filter must admit: when the server has
        resource patterns, the URI is judged, and sent, in its normalised spelling
        (scheme and host lower-cased, dot segments removed, unreserved escapes decoded),
        and one with a path separator escaped is refused.

        Raises :class:`UnknownResource` for a name not in the catalogue (as
        :meth:`call_tool` raises UnknownTool) or a URI the server's filter leaves out
        (nothing sent), :class:`UnknownServer`, :class:`ServerUnavailable`, and what
        Connection.read_resource raises (:class:`~mcpl_host.ResourceNotFound`, ...).
        """
        if server is not None:
            self._server(server)  # UnknownServer first
            uri = self._filters.get(server, _ALL).admitted_uri(name_or_uri)
            if uri is None:
                raise UnknownResource(name_or_uri, server=server)
            return await self.connection(server).read_resource(uri, timeout=timeout)
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
            catalogue_filter = self._filters.get(name, _ALL)
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
        """The entry of catalogue name ``name``. Only its own server is read: through
        the connection's cache, and once more past it when the key is not there.

        Raises the Unknown* error of ``kind`` for a name no configured server could
        have given, a key its filter leaves out (nothing sent) or one it does not list;
        ServerUnavailable when the server is down; the list's own error when it cannot
        be read (the name may well be there: it is not called unknown)."""
        parsed = split(name, self._separator)
        if parsed is None or parsed[0] not in self._servers:
            raise _UNKNOWN[kind](name)
        server, key = parsed
        if not self._filters.get(server, _ALL).admits(kind, key):
            raise _UNKNOWN[kind](name)
        conn = self.connection(server)  # a reconnecting one's list waits for it
        for refresh in (False, True):
            items = await read(conn, kind, refresh=refresh, timeout=timeout)
            item = self._indexed(server, conn, kind, items).get(key)
            if item is not None:
                return _ENTRY[kind](name, server, item)
        raise _UNKNOWN[kind](name)

    def _indexed(
        self, server: str, conn: Connection, kind: ListKind, items: list[Any]
    ) -> dict[str, Any]:
        version = conn.list_version(kind)
        kept = self._index.get((server, kind))
        if kept is not None and kept[0] is conn and kept[1] == version:
            return kept[2]
        index: dict[str, Any] = {}
        for item in items:
            index.setdefault(own_key(kind, item), item)
        self._index[server, kind] = (conn, version, index)
        return index
