"""The four paginated lists of MCP: for each kind, its method, the result member that
holds the items, and the server capability that declares it. One table for every
reader (Connection's typed lists, the manager's catalogue, the CLI's raw listings)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final, NamedTuple

from ..protocol.errors import METHOD_NOT_FOUND, McplHostError, RequestError
from .cache import ListKind

__all__ = ["LISTS", "ListSpec", "declared", "has_none"]


class ListSpec(NamedTuple):
    method: str
    key: str
    capability: str


LISTS: Final[dict[ListKind, ListSpec]] = {
    "tools": ListSpec("tools/list", "tools", "tools"),
    "resources": ListSpec("resources/list", "resources", "resources"),
    "resource_templates": ListSpec("resources/templates/list", "resourceTemplates", "resources"),
    "prompts": ListSpec("prompts/list", "prompts", "prompts"),
}


def declared(capabilities: Mapping[str, Any], kind: ListKind) -> bool:
    """Whether a server with ``capabilities`` declared the lists of ``kind``."""
    return isinstance(capabilities.get(LISTS[kind].capability), dict)


def has_none(kind: ListKind, error: McplHostError) -> bool:
    """Whether ``error``, in answer to listing ``kind``, says the server has none of it:
    many servers that declare resources never implemented templates (added to the
    revisions after resources/list) and answer -32601."""
    return (
        kind == "resource_templates"
        and isinstance(error, RequestError)
        and error.code == METHOD_NOT_FOUND
    )
