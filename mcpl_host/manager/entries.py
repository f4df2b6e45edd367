"""What the catalogue holds: one entry per tool, resource, resource template and prompt
of every server, under its catalogue name (:mod:`.naming`), and the listings of them."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Generic, TypeAlias, TypeVar

from ..client.types import Prompt, Resource, ResourceTemplate, Tool
from ..protocol.errors import McplHostError

__all__ = [
    "Catalogue",
    "Entry",
    "Listing",
    "PromptEntry",
    "ResourceEntry",
    "ResourceTemplateEntry",
    "ToolEntry",
]


@dataclass(frozen=True, slots=True)
class ToolEntry:
    """A tool: ``name`` its catalogue name (what ``call_tool`` takes), ``server`` the
    configured server's name, ``tool`` the tool as the server listed it (its own name
    is ``tool.name``)."""

    name: str
    server: str
    tool: Tool


@dataclass(frozen=True, slots=True)
class ResourceEntry:
    """A resource: ``name`` its catalogue name (what ``read_resource`` takes),
    ``server``, and ``resource`` as listed (its URI is ``resource.uri``)."""

    name: str
    server: str
    resource: Resource


@dataclass(frozen=True, slots=True)
class ResourceTemplateEntry:
    """A resource template: ``name`` its catalogue name (server, separator,
    ``uriTemplate``), ``server``, and ``template`` as listed. Read an expansion with
    ``read_resource(uri, server=entry.server)``."""

    name: str
    server: str
    template: ResourceTemplate


@dataclass(frozen=True, slots=True)
class PromptEntry:
    """A prompt: ``name`` its catalogue name (what ``get_prompt`` takes), ``server``,
    and ``prompt`` as listed (its own name is ``prompt.name``)."""

    name: str
    server: str
    prompt: Prompt


Entry: TypeAlias = ToolEntry | ResourceEntry | ResourceTemplateEntry | PromptEntry
E = TypeVar("E", ToolEntry, ResourceEntry, ResourceTemplateEntry, PromptEntry)


@dataclass(frozen=True, slots=True)
class Listing(Generic[E]):
    """One kind of the catalogue.

    ``entries``: every item of every server that listed it, in configuration order and
    then each server's own order, each under its catalogue name (unique in the list).
    ``errors``: by server name, why that server's items of this kind are missing (not
    usable: :class:`~mcpl_host.manager.ServerUnavailable`; its list request failed; a
    broken list): such a server contributes none, never a partial list. A server absent
    from ``errors`` is listed in full (or has none of this kind: a server that does not
    declare the capability contributes nothing and is no error).
    """

    entries: list[E] = field(default_factory=list)
    errors: dict[str, McplHostError] = field(default_factory=dict)
    _by_name: dict[str, E] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_by_name", {entry.name: entry for entry in self.entries})

    def names(self) -> list[str]:
        """The catalogue names, in order."""
        return [entry.name for entry in self.entries]

    def get(self, name: str) -> E | None:
        """The entry of that catalogue name, or None."""
        return self._by_name.get(name)


@dataclass(frozen=True, slots=True)
class Catalogue:
    """Every kind at once (what ``ConnectionManager.catalogue()`` returns)."""

    tools: Listing[ToolEntry]
    resources: Listing[ResourceEntry]
    resource_templates: Listing[ResourceTemplateEntry]
    prompts: Listing[PromptEntry]
