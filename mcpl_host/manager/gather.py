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
from ..client.cache import ListKind, key_of
from ..client.connection import Connection
from ..client.lists import declared
from ..config import CatalogueFilter
from ..protocol.errors import McplHostError
from .entries import (
    Entry,
    Listing,
    PromptEntry,
    ResourceEntry,
    ResourceTemplateEntry,
    ToolEntry,
)
from .naming import qualify

__all__ = ["ENTRIES", "Source", "gather", "read"]

Item: TypeAlias = Any  # a Tool, Resource, ResourceTemplate or Prompt

# What each kind's entries are made of.
ENTRIES: Final[dict[ListKind, Callable[[str, str, Any], Entry]]] = {
    "tools": ToolEntry,
    "resources": ResourceEntry,
    "resource_templates": ResourceTemplateEntry,
    "prompts": PromptEntry,
}


@dataclass(frozen=True, slots=True)
class Source:
    """One configured server as a listing sees it: its connection when it can be
    listed, else why not (``error``); and its filter."""

    name: str
    connection: Connection | None
    error: McplHostError | None
    filter: CatalogueFilter


async def read(
    conn: Connection, kind: ListKind, *, refresh: bool = False, timeout: float | None = None
) -> list[Item]:
    """The server's list of ``kind``, through its connection's cache (past it with
    ``refresh``); [] when the server does not declare ``kind``."""
    if not declared(conn.server_capabilities, kind):
        return []
    if kind == "tools":
        return await conn.list_tools(refresh=refresh, timeout=timeout)
    if kind == "resources":
        return await conn.list_resources(refresh=refresh, timeout=timeout)
    if kind == "resource_templates":
        return await conn.list_resource_templates(refresh=refresh, timeout=timeout)
    return await conn.list_prompts(refresh=refresh, timeout=timeout)


async def gather(
    kind: ListKind,
    sources: Sequence[Source],
    *,
    separator: str,
    log: RateLimited,
    timeout: float | None = None,
) -> Listing[Any]:
    """``kind``'s listing over ``sources`` (every configured server, in configuration
    order), each usable server read concurrently. Never raises a
    :class:`~mcpl_host.McplHostError`: every server's trouble ends in ``errors``."""
    lists: dict[str, list[Item]] = {}
    errors: dict[str, McplHostError] = {}

    async def one(source: Source, conn: Connection) -> None:
        try:
            lists[source.name] = await read(conn, kind, timeout=timeout)
        except McplHostError as exc:
            errors[source.name] = exc

    async with trio.open_nursery() as nursery:
        for source in sources:
            if source.connection is not None:
                nursery.start_soon(one, source, source.connection)
            elif source.error is not None:
                errors[source.name] = source.error
    make = ENTRIES[kind]
    entries = [
        make(qualify(source.name, key, separator), source.name, item)
        for source in sources
        for key, item in _kept(kind, source, lists.get(source.name, ()), log)
    ]
    order = [source.name for source in sources]
    return Listing(entries, {name: errors[name] for name in order if name in errors})


def _kept(
    kind: ListKind, source: Source, items: Sequence[Item], log: RateLimited
) -> list[tuple[str, Item]]:
    """The server's items its filter admits, each key once: a call by that key could
    not tell two apart (the first is kept, with a warning)."""
    kept: list[tuple[str, Item]] = []
    seen: set[str] = set()
    admits_all = source.filter.admits_all
    for item in items:
        key = key_of(kind, item)
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
