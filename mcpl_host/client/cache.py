"""The server's lists (tools, resources, resource templates, prompts) as last read.

A list is read once and kept until the server says it changed
(``notifications/<kind>/list_changed``) or the transport is replaced, and, on
2026-07-28, no longer than its pages' ``ttlMs`` allow (counted from when the read
began; absent means 0: not reused) unless the acknowledged ``subscriptions/listen``
covers that list's changes (then the server will say when it changes). Each kind
has a generation number: a read that was under way when the list changed does not
store what it read, which may already be stale. The last tool list read stays the
source of the tools' output schemas even once it is no longer fresh (call_tool would
otherwise list the tools before every call on a server that gives no ttlMs); a new
read replaces it.

The cache belongs to one Connection, and so to one set of credentials: a
``cacheScope: "private"`` result is never seen by another connection, and nothing is
shared between connections (the manager reads each server through its own).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final, Literal, TypeAlias

import trio

from .schema import UnsupportedSchema, Validator, validator_for
from .types import Tool

__all__ = ["ListCache", "ListKind", "key_of"]

ListKind: TypeAlias = Literal["tools", "resources", "resource_templates", "prompts"]
KINDS: Final[tuple[ListKind, ...]] = ("tools", "resources", "resource_templates", "prompts")


# What a call names an item of each kind by: its own key.
_KEYS: Final[dict[ListKind, str]] = {
    "tools": "name",
    "resources": "uri",
    "resource_templates": "uri_template",
    "prompts": "name",
}


def key_of(kind: ListKind, item: Any) -> str:
    """An item's own key: a tool's or prompt's name, a resource's URI, a template's
    ``uriTemplate``."""
    return str(getattr(item, _KEYS[kind]))


class ListCache:
    def __init__(self, clock: Callable[[], float] = trio.current_time) -> None:
        self._clock = clock
        self._lists: dict[ListKind, list[Any]] = {}
        self._expires: dict[ListKind, float] = {}  # 2026-07-28 lists only
        self._generation: dict[ListKind, int] = dict.fromkeys(KINDS, 0)
        # The last list kept of each kind by own key (the first of a key listed twice),
        # kept past its ttlMs as the tools' schemas are: what a call by name looks in.
        self._by_key: dict[ListKind, dict[str, Any]] = {}
        self._validators: dict[str, Validator | UnsupportedSchema | None] = {}

    def get(self, kind: ListKind) -> list[Any] | None:
        """The list as last read (a copy), or None when it must be read again."""
        items = self._lists.get(kind)
        expires = self._expires.get(kind)
        if items is None or (expires is not None and self._clock() >= expires):
            return None
        return list(items)

    def now(self) -> float:
        return self._clock()

    def generation(self, kind: ListKind) -> int:
        return self._generation[kind]

    def listed(self, kind: ListKind, key: str) -> Any | None:
        """The item of own key ``key`` (:func:`key_of`) in the last list of ``kind``
        kept, even past its ttlMs; None when it is not there or no list is kept (none
        read yet, or dropped since)."""
        return self._by_key.get(kind, {}).get(key)

    def store(
        self, kind: ListKind, generation: int, items: list[Any], expires: float | None = None
    ) -> None:
        """Keep ``items`` unless the list changed since the read began; ``expires``: the
        clock's time after which it is read again (None: until it changes)."""
        if generation != self._generation[kind]:
            return
        self._lists[kind] = list(items)
        if expires is None:
            self._expires.pop(kind, None)
        else:
            self._expires[kind] = expires
        by_key: dict[str, Any] = {}
        for item in items:
            by_key.setdefault(key_of(kind, item), item)
        self._by_key[kind] = by_key
        if kind == "tools":
            self._validators = {}

    def invalidate(self, *kinds: ListKind) -> None:
        for kind in kinds or KINDS:
            self._generation[kind] += 1
            self._lists.pop(kind, None)
            self._expires.pop(kind, None)
            self._by_key.pop(kind, None)
            if kind == "tools":
                self._validators = {}

    @property
    def has_tools(self) -> bool:
        return "tools" in self._lists

    def output_validator(self, tool: str) -> Validator | UnsupportedSchema | None:
        """The validator for ``tool``'s declared ``outputSchema``: None when the tool is
        unknown or declared none; the UnsupportedSchema when it cannot be checked. Built
        once per tool per list read (and shared by equal schemas)."""
        if tool in self._validators:
            return self._validators[tool]
        declared: Tool | None = self.listed("tools", tool)
        found: Validator | UnsupportedSchema | None = None
        if declared is not None and declared.output_schema is not None:
            try:
                found = validator_for(declared.output_schema)
            except UnsupportedSchema as exc:
                found = exc
        self._validators[tool] = found
        return found
