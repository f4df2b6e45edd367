"""What the shell reads from the servers, in one place: the catalogue (every ready
server's tools, resources, resource templates and prompts under catalogue names) and
the calls routed by those names. The rest of the shell sees plain JSON values only.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Final

from ...manager import ConnectionManager
from ...protocol.errors import METHOD_NOT_FOUND, McplHostError, RequestError

__all__ = ["KINDS", "Catalogue", "Data", "Entry"]

SEPARATOR: Final = "__"
# (kind, list method, result key, the member that is an item's own key)
KINDS: Final = (
    ("tools", "tools/list", "tools", "name"),
    ("resources", "resources/list", "resources", "uri"),
    ("resourceTemplates", "resources/templates/list", "resourceTemplates", "uriTemplate"),
    ("prompts", "prompts/list", "prompts", "name"),
)
# Pages of one listing followed at most: the connection bounds items and bytes too.
_MAX_PAGES: Final = 100

Progress = Callable[[float, float | None, str | None], None]


@dataclass(frozen=True, slots=True)
class Entry:
    """One item of the catalogue: its catalogue name, its server, the item as listed."""

    name: str
    server: str
    item: dict[str, Any]


@dataclass(slots=True)
class Catalogue:
    """Every kind's entries (keys of :data:`KINDS`), and why a server is missing."""

    entries: dict[str, list[Entry]] = field(default_factory=dict)
    errors: dict[str, str] = field(default_factory=dict)

    def of(self, kind: str) -> list[Entry]:
        return self.entries.get(kind, [])

    def get(self, kind: str, name: str) -> Entry | None:
        return next((entry for entry in self.of(kind) if entry.name == name), None)

    def count(self, server: str) -> dict[str, int]:
        return {kind: sum(e.server == server for e in self.of(kind)) for kind, *_ in KINDS}


class Data:
    """The shell's access to a manager. ``catalogue`` is the last one read (what
    completion offers); :meth:`refresh` reads it again."""

    def __init__(self, manager: ConnectionManager) -> None:
        self._manager = manager
        self.catalogue = Catalogue()

    async def refresh(self) -> Catalogue:
        """Read every usable server's lists. Raises nothing for a server: its trouble is
        in ``errors``."""
        found = Catalogue(entries={kind: [] for kind, *_ in KINDS})
        for name, status in self._manager.status().items():
            if not status.usable:
                continue
            try:
                for kind, method, key, own in KINDS:
                    for item in await self._list(name, method, key):
                        if isinstance(item, dict):
                            entry = Entry(f"{name}{SEPARATOR}{item.get(own)}", name, item)
                            found.entries[kind].append(entry)
            except McplHostError as exc:
                found.errors[name] = str(exc)
        self.catalogue = found
        return found

    async def _list(self, server: str, method: str, key: str) -> list[Any]:
        items: list[Any] = []
        params: dict[str, Any] = {}
        for _ in range(_MAX_PAGES):
            try:
                page = await self._manager.request(server, method, params)
            except RequestError as exc:
                if exc.code == METHOD_NOT_FOUND:
                    return items  # the server does not have this kind
                raise
            if not isinstance(page, dict):
                break
            got = page.get(key)
            items += got if isinstance(got, list) else []
            cursor = page.get("nextCursor")
            if not isinstance(cursor, str):
                break
            params = {"cursor": cursor}
        return items

    def _route(self, kind: str, name: str) -> Entry:
        entry = self.catalogue.get(kind, name)
        if entry is None:
            raise LookupError(name)
        return entry

    async def call_tool(self, name: str, arguments: dict[str, Any], on_progress: Progress) -> Any:
        """The tool's result as plain JSON. Raises ``LookupError`` for a name not in the
        catalogue, and what the manager raises."""
        entry = self._route("tools", name)
        params = {"name": entry.item.get("name"), "arguments": arguments}
        return await self._manager.request(
            entry.server, "tools/call", params, on_progress=on_progress
        )

    async def get_prompt(self, name: str, arguments: dict[str, Any]) -> Any:
        entry = self._route("prompts", name)
        params = {"name": entry.item.get("name"), "arguments": arguments}
        return await self._manager.request(entry.server, "prompts/get", params)

    async def read_resource(self, name_or_uri: str) -> Any:
        """By catalogue name, or by URI: the server that lists it, else (a template's
        URI) the server of the one template it fits by prefix, else the only server."""
        entry = self.catalogue.get("resources", name_or_uri)
        if entry is not None:
            server, uri = entry.server, entry.item.get("uri")
        else:
            uri = name_or_uri
            server = self._server_for(name_or_uri)
        return await self._manager.request(server, "resources/read", {"uri": uri})

    def _server_for(self, uri: str) -> str:
        for entry in self.catalogue.of("resources"):
            if entry.item.get("uri") == uri:
                return entry.server
        for entry in self.catalogue.of("resourceTemplates"):
            template = str(entry.item.get("uriTemplate", ""))
            if uri.startswith(template.split("{", 1)[0]) and "{" in template:
                return entry.server
        servers = [name for name, s in self._manager.status().items() if s.usable]
        if len(servers) == 1:
            return servers[0]
        raise LookupError(uri)

    async def set_level(self, server: str, level: str) -> None:
        await self._manager.request(server, "logging/setLevel", {"level": level})
