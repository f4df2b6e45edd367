"""What the shell reads from the servers, in one place: the manager's catalogue (every
usable server's tools, resources, resource templates and prompts under catalogue
names) and the calls routed by those names. The rest of the shell sees plain JSON
values only: each item and result as the server sent it (kept raw by the typed
objects), decoded when shown.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Final

import msgspec

from ...manager import (
    ConnectionManager,
    Listing,
    PromptEntry,
    ResourceEntry,
    ResourceTemplateEntry,
    ToolEntry,
)
from ...protocol.errors import McplHostError

__all__ = ["KINDS", "Catalogue", "Data", "Entry"]

# The kinds, as render.py names them.
KINDS: Final = ("tools", "resources", "resourceTemplates", "prompts")

# A call's own deadline: none in the library. The shell bounds each command itself,
# leaving out the time the person spends on a server's questions (.session).
_UNBOUNDED: Final = math.inf

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
        return {kind: sum(e.server == server for e in self.of(kind)) for kind in KINDS}


def _plain(value: Any) -> Any:
    """A typed MCP value as the JSON it came as (built ones: as they encode)."""
    raw = getattr(value, "raw", None)
    if raw is not None:
        return msgspec.json.decode(raw)
    return msgspec.to_builtins(value)


class Data:
    """The shell's access to a manager. ``catalogue`` is the last one read (what
    completion offers); :meth:`refresh` reads it again."""

    def __init__(self, manager: ConnectionManager) -> None:
        self._manager = manager
        self.catalogue = Catalogue()

    async def refresh(self) -> Catalogue:
        """Read the manager's catalogue. Raises nothing for a server: its trouble is in
        ``errors`` (a server that is not usable is left out without one)."""
        found = await self._manager.catalogue()
        listings: dict[str, Listing[Any]] = {
            "tools": found.tools,
            "resources": found.resources,
            "resourceTemplates": found.resource_templates,
            "prompts": found.prompts,
        }
        usable = {name for name, s in self._manager.status().items() if s.usable}
        shown = Catalogue()
        for kind, listing in listings.items():
            shown.entries[kind] = [
                Entry(entry.name, entry.server, _plain(_item(entry))) for entry in listing.entries
            ]
            for server, error in listing.errors.items():
                if server in usable:
                    shown.errors.setdefault(server, str(error))
        self.catalogue = shown
        return shown

    async def call_tool(self, name: str, arguments: dict[str, Any], on_progress: Progress) -> Any:
        """The tool's result as plain JSON. Raises what the manager's call_tool raises
        (UnknownTool, ServerUnavailable, OutputSchemaError, RequestError...)."""
        result = await self._manager.call_tool(
            name, arguments, on_progress=on_progress, timeout=_UNBOUNDED
        )
        return _plain(result)

    async def get_prompt(self, name: str, arguments: dict[str, Any]) -> Any:
        return _plain(await self._manager.get_prompt(name, arguments, timeout=_UNBOUNDED))

    async def read_resource(self, name_or_uri: str) -> Any:
        """By catalogue name; or a URI: on the server that lists it, else on the server
        of a template it fits by the template's fixed start, else on the only usable
        server. Raises ``LookupError`` when no server is found for a URI."""
        if self.catalogue.get("resources", name_or_uri) is not None:
            return _plain(await self._manager.read_resource(name_or_uri, timeout=_UNBOUNDED))
        server = self._server_for(name_or_uri)
        return _plain(
            await self._manager.read_resource(name_or_uri, server=server, timeout=_UNBOUNDED)
        )

    def _server_for(self, uri: str) -> str:
        for entry in self.catalogue.of("resources"):
            if entry.item.get("uri") == uri:
                return entry.server
        for entry in self.catalogue.of("resourceTemplates"):
            template = str(entry.item.get("uriTemplate", ""))
            if "{" in template and uri.startswith(template.split("{", 1)[0]):
                return entry.server
        servers = [name for name, s in self._manager.status().items() if s.usable]
        if len(servers) == 1:
            return servers[0]
        raise LookupError(uri)

    async def set_level(self, server: str, level: str) -> None:
        """Raises McplHostError as the manager's request does."""
        await self._manager.request(server, "logging/setLevel", {"level": level})


def _item(entry: Any) -> Any:
    match entry:
        case ToolEntry(tool=item) | PromptEntry(prompt=item):
            return item
        case ResourceEntry(resource=item) | ResourceTemplateEntry(template=item):
            return item
    raise McplHostError(f"an entry of no known kind: {type(entry).__name__}")
