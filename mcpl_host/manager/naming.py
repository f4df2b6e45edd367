"""Catalogue names: ``server__key``, unique per kind across every server of a manager.

Pure: the same servers listing the same keys always get the same names.

A name is the server's name, the separator and the item's own key: a tool's or a
prompt's name, a resource's URI, a resource template's ``uriTemplate``. Each kind is
named on its own (a tool and a prompt may share a name). Two different servers can
still produce the same name when a key holds the separator at its edge (server ``a``
with tool ``b__c`` and server ``a__b`` with tool ``c`` both give ``a__b__c``). Then
*every* entry of that group gets a suffix ``_N``, N being its server's position in the
configuration (from 1), and none keeps the bare name. This makes a name depend only on
its own server and on the collision, never on which other servers happened to answer:
a caller holding a stale name gets "unknown tool" rather than another server's tool.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Final, NamedTuple

__all__ = ["SEPARATOR", "TOOL_SEPARATOR", "Named", "qualify"]

SEPARATOR: Final = "__"
TOOL_SEPARATOR: Final = SEPARATOR
"""The name :data:`SEPARATOR` had when the manager listed tools only."""


class Named(NamedTuple):
    """One item's catalogue ``name``, its ``server`` and its own ``key`` there."""

    name: str
    server: str
    key: str


def qualify(
    servers: Sequence[str],
    keys: Mapping[str, Sequence[str]],
    *,
    separator: str = SEPARATOR,
) -> list[Named]:
    """Name the items of ``keys`` (by server, each item's own key), in the order of
    ``servers`` (every configured server, in configuration order) and then of each
    server's list. Servers missing from ``keys`` add nothing but keep their position,
    so the suffixes of the others do not move. Every name returned is unique, even for
    a key a server gives twice."""
    positions = {server: index for index, server in enumerate(servers, start=1)}
    bare = [(server, key) for server in servers for key in keys.get(server, ())]
    counts = Counter(f"{server}{separator}{key}" for server, key in bare)
    taken = {name for name, count in counts.items() if count == 1}
    named: list[Named] = []
    for server, key in bare:
        qualified = f"{server}{separator}{key}"
        if counts[qualified] > 1:
            suffix = f"_{positions[server]}"
            qualified += suffix
            # Only when a real name already looks like our suffixed one (or a server
            # listed one key twice): extend it the same way until it is free.
            while qualified in taken:
                qualified += suffix
            taken.add(qualified)
        named.append(Named(qualified, server, key))
    return named
