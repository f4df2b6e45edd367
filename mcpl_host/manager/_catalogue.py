"""The manager's catalogue: listings of every kind, and calls routed by catalogue name.

Currency comes from each Connection's list caches: a server's ``list_changed``, a
replaced transport and a 2026-07-28 listen's gap drop its cached list, and the next
listing reads it again. The manager keeps, per kind, the last listing it built with a
stamp of what it was built from (each usable server's connection and its cache
generation for that kind). A call by name resolves against that listing
while the stamp holds, and rebuilds it (reading again only the lists that changed)
when it does not: nothing is read per call, nothing runs in the background, and a
server spamming ``list_changed`` costs at most one list read per call it precedes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
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
from .gather import Source, gather

__all__ = ["CatalogueMethods"]

_log = get_logger("mcpl_host.manager")

_UNKNOWN: Final[dict[ListKind, type[UnknownName]]] = {
    "tools": UnknownTool,
    "resources": UnknownResource,
    "prompts": UnknownPrompt,
}
_ALL: Final = CatalogueFilter()


@dataclass(frozen=True, slots=True)
class _Built:
    stamp: tuple[Any, ...]
    listing: Listing[Any]


class CatalogueMethods:
    """The catalogue part of :class:`~mcpl_host.manager.ConnectionManager`."""

    _servers: dict[str, ManagedServer]
    _separator: str

    def _init_catalogue(self, filters: Mapping[str, CatalogueFilter]) -> None:
        self._filters = dict(filters)
        self._built: dict[ListKind, _Built] = {}  # one per kind: bounded however often called
        self._rebuilding = {kind: trio.Lock() for kind in KINDS}
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
        resource template is read), which its filter must admit.

        Raises :class:`UnknownResource` for a name not in the catalogue (as
        :meth:`call_tool` raises UnknownTool) or a URI the server's filter leaves out
        (nothing sent), :class:`UnknownServer`, :class:`ServerUnavailable`, and what
        Connection.read_resource raises (:class:`~mcpl_host.ResourceNotFound`, ...).
        """
        if server is not None:
            self._server(server)  # UnknownServer first
            if not self._filters.get(server, _ALL).admits("resources", name_or_uri):
                raise UnknownResource(name_or_uri, server=server)
            return await self.connection(server).read_resource(name_or_uri, timeout=timeout)
        entry: ResourceEntry = await self._resolve("resources", name_or_uri, timeout)
        return await self.connection(entry.server).read_resource(
            entry.resource.uri, timeout=timeout
        )

    # -- the listings kept ---------------------------------------------------------------

    def _stamp(self, kind: ListKind) -> tuple[Any, ...]:
        """What a listing of ``kind`` is made from: each usable server's connection and
        its cache generation of ``kind`` (a change of either makes it old). A server
        that goes ``reconnecting`` keeps its stamp: a call by a name it listed waits for
        the new transport, as a request does; the new transport drops its lists."""
        stamp: list[Any] = []
        for server in self._servers.values():
            conn = server.connection
            if server.status.usable and conn is not None:
                stamp.append((conn, conn.list_generation(kind)))
            else:
                stamp.append(None)
        return tuple(stamp)

    def _sources(self) -> list[Source]:
        """Each server as a listing sees it: ready ones are read, the others
        (``reconnecting`` too: its lists are about to be dropped) are errors."""
        sources: list[Source] = []
        for name, server in self._servers.items():
            status, conn = server.status, server.connection
            catalogue_filter = self._filters.get(name, _ALL)
            if status.usable and status.state != "reconnecting" and conn is not None:
                sources.append(Source(name, conn, None, catalogue_filter))
            else:
                error = ServerUnavailable(name, status.state, status.error)
                sources.append(Source(name, None, error, catalogue_filter))
        return sources

    async def _build(
        self, kind: ListKind, timeout: float | None, refresh: frozenset[str] = frozenset()
    ) -> Listing[Any]:
        # The stamp is taken before reading: a list that changes meanwhile makes it old.
        stamp, sources = self._stamp(kind), self._sources()
        listing = await gather(
            kind,
            sources,
            separator=self._separator,
            log=self._catalogue_log,
            timeout=timeout,
            refresh=refresh,
        )
        self._built[kind] = _Built(stamp, listing)
        return listing

    async def _current(self, kind: ListKind, timeout: float | None) -> Listing[Any]:
        """The last listing of ``kind`` while nothing it was made from changed, else a
        new one (one at a time: concurrent callers share it)."""
        built = self._built.get(kind)
        if built is not None and built.stamp == self._stamp(kind):
            return built.listing
        async with self._rebuilding[kind]:
            built = self._built.get(kind)
            if built is not None and built.stamp == self._stamp(kind):
                return built.listing
            return await self._build(kind, timeout)

    def _candidates(self, kind: ListKind, name: str) -> list[str]:
        """The servers that could have given ``name``: those whose name and separator
        start it, and whose filter admits an own key it could stand for (the rest, or
        the rest without its collision suffixes). Only these are read afresh (past
        their connection's cache) on a miss; an excluded name sends nothing at all."""
        found: list[str] = []
        for position, server in enumerate(self._servers, start=1):
            prefix = server + self._separator
            if not name.startswith(prefix):
                continue
            key, suffix = name[len(prefix) :], f"_{position}"
            keys = [key]
            while key.endswith(suffix):
                key = key[: -len(suffix)]
                keys.append(key)
            admits = self._filters.get(server, _ALL).admits
            if any(admits(kind, key) for key in keys):
                found.append(server)
        return found

    async def _resolve(self, kind: ListKind, name: str, timeout: float | None) -> Any:
        entry = (await self._current(kind, timeout)).get(name)
        if entry is not None:
            return entry
        candidates = self._candidates(kind, name)
        if candidates:
            listing = await self._build(kind, timeout, refresh=frozenset(candidates))
            entry = listing.get(name)
            if entry is not None:
                return entry
            for candidate in candidates:
                error = listing.errors.get(candidate)
                if isinstance(error, ServerUnavailable):
                    # It may well be that server's: say it is down, not that it is unknown.
                    status = self._servers[candidate].status
                    raise ServerUnavailable(candidate, status.state, status.error)
        raise _UNKNOWN[kind](name)
