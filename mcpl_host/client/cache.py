"""The server's lists (tools, resources, resource templates, prompts) as last read.

A list is read once and kept until the server says it changed
(``notifications/<kind>/list_changed``) or the transport is replaced. Each kind has a
generation number: a read that was under way when the list changed does not store
what it read, which may already be stale.
"""

from __future__ import annotations

from typing import Any, Final, Literal, TypeAlias

from .schema import UnsupportedSchema, Validator, validator_for
from .types import Tool

__all__ = ["ListCache", "ListKind"]

ListKind: TypeAlias = Literal["tools", "resources", "resource_templates", "prompts"]
KINDS: Final[tuple[ListKind, ...]] = ("tools", "resources", "resource_templates", "prompts")


class ListCache:
    def __init__(self) -> None:
        self._lists: dict[ListKind, list[Any]] = {}
        self._generation: dict[ListKind, int] = dict.fromkeys(KINDS, 0)
        self._tools: dict[str, Tool] = {}
        self._validators: dict[str, Validator | UnsupportedSchema | None] = {}

    def get(self, kind: ListKind) -> list[Any] | None:
        """The list as last read (a copy), or None when it must be read again."""
        items = self._lists.get(kind)
        return None if items is None else list(items)

    def generation(self, kind: ListKind) -> int:
        return self._generation[kind]

    def store(self, kind: ListKind, generation: int, items: list[Any]) -> None:
        """Keep ``items`` unless the list changed since the read began."""
        if generation != self._generation[kind]:
            return
        self._lists[kind] = list(items)
        if kind == "tools":
            self._tools = {tool.name: tool for tool in items}
            self._validators = {}

    def invalidate(self, *kinds: ListKind) -> None:
        for kind in kinds or KINDS:
            self._generation[kind] += 1
            self._lists.pop(kind, None)
            if kind == "tools":
                self._tools = {}
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
        declared = self._tools.get(tool)
        found: Validator | UnsupportedSchema | None = None
        if declared is not None and declared.output_schema is not None:
            try:
                found = validator_for(declared.output_schema)
            except UnsupportedSchema as exc:
                found = exc
        self._validators[tool] = found
        return found
