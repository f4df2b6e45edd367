"""One kind of the catalogue, read from every usable server at once: each server's list
through its Connection's typed list method (cached there until the server says it
changed, pages followed, list bounds enforced), filtered, each key once, then named by
:mod:`.naming`."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Final, TypeAlias

import trio

from .._log import RateLimited
from ..client.cache import ListKind
from ..client.connection import Connection
from ..config import CatalogueFilter
from ..protocol.errors import METHOD_NOT_FOUND, McplHostError, RequestError
from .entries import (
    Entry,
    Listing,
    PromptEntry,
    ResourceEntry,
    ResourceTemplateEntry,
    ToolEntry,
)
from .naming import qualify

__all__ = ["CAPABILITIES", "Source", "gather", "own_key"]

Item: TypeAlias = Any  # a Tool, Resource, ResourceTemplate or Prompt

# The server capability that declares each kind.
CAPABILITIES: Final[dict[ListKind, str]] = {
    "tools": "tools",
    "resources": "resources",
    "resource_templates": "resources",
    "prompts": "prompts",
}
# What each kind's entries are made of.
_ENTRIES: Final[dict[ListKind, Callable[[str, str, Any], Entry]]] = {
    "tools": ToolEntry,
    "resources": ResourceEntry,
    "resource_templates": ResourceTemplateEntry,
    "prompts": PromptEntry,
}


def own_key(kind: ListKind, item: Item) -> str:
    """What the item is called on its server, the catalogue name's last part."""
    if kind == "resources":
        return str(item.uri)
    if kind == "resource_templates":
        return str(item.uri_template)
    return str(item.name)


@dataclass(frozen=True, slots=True)
class Source:
    """One configured server as a listing sees it: its connection when it can be
    listed, else why not (``error``); and its filter."""

    name: str
    connection: Connection | None
    error: McplHostError | None
    filter: CatalogueFilter


async def _read(
    conn: Connection, kind: ListKind, *, refresh: bool, timeout: float | None
) -> list[Item]:
    if kind == "tools":
        return await conn.list_tools(refresh=refresh, timeout=timeout)
    if kind == "resources":
        return await conn.list_resources(refresh=refresh, timeout=timeout)
    if kind == "resource_templates":
        try:
            return await conn.list_resource_templates(refresh=refresh, timeout=timeout)
        except RequestError as exc:
            # A server with resources but no templates may not know the method at all.
            if exc.code == METHOD_NOT_FOUND:
                return []
            raise
    return await conn.list_prompts(refresh=refresh, timeout=timeout)


def declares(conn: Connection, kind: ListKind) -> bool:
    """Whether the server declared the capability ``kind`` needs."""
    return isinstance(conn.server_capabilities.get(CAPABILITIES[kind]), dict)


async def gather(
    kind: ListKind,
    sources: Sequence[Source],
    *,
    separator: str,
    log: RateLimited,
    timeout: float | None = None,
    refresh: frozenset[str] = frozenset(),
) -> Listing[Any]:
    """``kind``'s listing over ``sources`` (every configured server, in configuration
    order), each usable server read concurrently (those named in ``refresh`` past their
    connection's cache). Never raises a :class:`~mcpl_host.McplHostError`: every
    server's trouble ends in ``errors``."""
    lists: dict[str, list[Item]] = {}
    errors: dict[str, McplHostError] = {}

    async def one(source: Source, conn: Connection) -> None:
        try:
            lists[source.name] = await _read(
                conn, kind, refresh=source.name in refresh, timeout=timeout
            )
        except McplHostError as exc:
            errors[source.name] = exc

    async with trio.open_nursery() as nursery:
        for source in sources:
            if source.connection is not None:
                if declares(source.connection, kind):
                    nursery.start_soon(one, source, source.connection)
            elif source.error is not None:
                errors[source.name] = source.error
    kept: dict[str, list[tuple[str, Item]]] = {}
    for source in sources:
        items = lists.get(source.name)
        if items is not None:
            kept[source.name] = _kept(kind, source, items, log)
    order = [source.name for source in sources]
    named = qualify(
        order,
        {name: [key for key, _ in pairs] for name, pairs in kept.items()},
        separator=separator,
    )
    items_in_order = [item for name in order for _, item in kept.get(name, ())]
    make = _ENTRIES[kind]
    return Listing(
        [make(n.name, n.server, item) for n, item in zip(named, items_in_order, strict=True)],
        {name: errors[name] for name in order if name in errors},
    )


def _kept(
    kind: ListKind, source: Source, items: list[Item], log: RateLimited
) -> list[tuple[str, Item]]:
    """The server's items its filter admits, each key once: a call by that key could
    not tell two apart (the first is kept, with a warning)."""
    kept: list[tuple[str, Item]] = []
    seen: set[str] = set()
    admits_all = source.filter.admits_all
    for item in items:
        key = own_key(kind, item)
        if not admits_all and not source.filter.admits(kind, key):
            continue
        if key in seen:
            assert source.connection is not None  # it was read
            log.warning(
                "catalogue item left out",
                server=source.name,
                kind=kind,
                reason="listed twice",
                key=source.connection.redactor.log_value(key),
            )
            continue
        seen.add(key)
        kept.append((key, item))
    return kept
