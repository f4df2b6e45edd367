"""Aggregated tool names: ``server__tool``, unique across every server of a manager.

Pure: the same servers listing the same tools always get the same names.

A name is the server's name, the separator and the tool's own name. Two different
servers can still produce the same name when a name holds the separator at its edge
(server ``a`` with tool ``b__c`` and server ``a__b`` with tool ``c`` both give
``a__b__c``). Then *every* entry of that group gets a suffix ``_N``, N being its
server's position in the configuration (from 1), and none keeps the bare name. This
makes a name depend only on its own server and on the collision, never on which other
servers happened to answer: a caller holding a stale name gets "unknown tool" rather
than another server's tool.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

import msgspec

__all__ = ["TOOL_SEPARATOR", "ToolEntry", "qualify"]

TOOL_SEPARATOR: Final = "__"


@dataclass(frozen=True, slots=True)
class ToolEntry:
    """One tool in the aggregated list.

    ``name``: the aggregated name, unique in the list (what ``call_tool`` takes);
    ``server``: the configured server's name; ``tool``: the server's own name for it;
    ``definition``: the tool object as the server listed it (``description``,
    ``inputSchema``, ``annotations``...), decoded anew from ``json`` on each use: kept
    as its JSON, a catalogue of schemas costs its bytes, where decoded it could cost
    thirty times that (a schema of empty arrays and objects).
    """

    name: str
    server: str
    tool: str
    json: bytes

    @property
    def definition(self) -> dict[str, Any]:
        value: dict[str, Any] = msgspec.json.decode(self.json)
        return value


def qualify(
    servers: Sequence[str],
    listings: Mapping[str, Sequence[tuple[str, bytes]]],
    *,
    separator: str = TOOL_SEPARATOR,
) -> list[ToolEntry]:
    """Name the tools of ``listings`` (by server; each tool its own name and its
    JSON), in the order of ``servers`` (every configured server, in configuration
    order) and then of each server's list. Servers missing from ``listings`` add
    nothing but keep their position, so the suffixes of the others do not move."""
    positions = {server: index for index, server in enumerate(servers, start=1)}
    bare: list[tuple[str, str, bytes]] = [
        (server, name, tool) for server in servers for name, tool in listings.get(server, ())
    ]
    counts = Counter(f"{server}{separator}{name}" for server, name, _ in bare)
    taken = {name for name, count in counts.items() if count == 1}
    entries: list[ToolEntry] = []
    for server, name, tool in bare:
        qualified = f"{server}{separator}{name}"
        if counts[qualified] > 1:
            suffix = f"_{positions[server]}"
            qualified += suffix
            # Only when a real name already looks like our suffixed one (or a server
            # listed one name twice): extend it the same way until it is free.
            while qualified in taken:
                qualified += suffix
            taken.add(qualified)
        entries.append(ToolEntry(qualified, server, name, tool))
    return entries
