"""Catalogue names: ``server__key``, one per item of one kind across every server.

Pure. A name is the server's name, the separator and the item's own key: a tool's or a
prompt's name, a resource's URI, a resource template's ``uriTemplate``; each kind is
named on its own (a tool and a prompt may share a name). A server's name must not hold
the separator, nor end with the start of it (``a_`` with ``__``): then the first
separator in a catalogue name always ends the server's name, so a name has exactly one
reading, two servers can never give the same name, and a name held since an older
listing either still means the same server's item or nothing at all.
"""

from __future__ import annotations

from typing import Final

__all__ = ["SEPARATOR", "name_problem", "qualify", "split"]

SEPARATOR: Final = "__"


def name_problem(server: str, separator: str = SEPARATOR) -> str | None:
    """Why ``server`` cannot be a server's name under ``separator``, or None."""
    if separator in server + separator[:-1]:
        return (
            f"a server's name must not hold the catalogue separator {separator!r}, nor end"
            f" with its start: its catalogue names ({server}{separator}...) could be read"
            " as another server's; rename it, or give the manager another separator="
        )
    return None


def qualify(server: str, key: str, separator: str = SEPARATOR) -> str:
    """The catalogue name of ``server``'s item with own key ``key``."""
    return f"{server}{separator}{key}"


def split(name: str, separator: str = SEPARATOR) -> tuple[str, str] | None:
    """The server's name and the own key a catalogue name stands for; None when it
    holds no separator."""
    server, found, key = name.partition(separator)
    return (server, key) if found else None
