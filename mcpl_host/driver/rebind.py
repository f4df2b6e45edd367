"""The rebinding rule: which of a lost transport's pending requests are sent again.

| when its transport was lost | reconnecting | closed for good |
|---|---|---|
| never written | re-sent, new id | ConnectionClosed |
| written, safe to repeat | re-sent, new id | ConnectionClosed, outcome unknown |
| written, not safe | ConnectionClosed, outcome unknown | ConnectionClosed, outcome unknown |

Safe to repeat: ``ping``; a method whose last segment is ``list``, ``read``, ``get`` or
``complete``; ``tools/call`` of a tool whose annotations in the last ``tools/list`` said
``readOnlyHint`` or ``idempotentHint``; any request whose caller passed ``rebind=True``.
``rebind=False`` makes a written request fail rather than repeat (a never-written one is
still sent: the server never saw it).
"""

from __future__ import annotations

from typing import Any, Final

import msgspec

__all__ = ["ToolHints", "safe_to_repeat"]

_SAFE_SEGMENTS: Final = frozenset({"list", "read", "get", "complete"})


class _Hints(msgspec.Struct, rename="camel"):
    """Just what the rule reads of a tool's annotations (the whole type, for callers,
    is the client layer's ToolAnnotations)."""

    read_only_hint: bool | None = None
    idempotent_hint: bool | None = None


class _Tool(msgspec.Struct):
    """Just what the rule reads of a listed tool."""

    name: str
    annotations: _Hints | None = None


class _ToolList(msgspec.Struct):
    tools: list[_Tool]


_TOOL_LIST: Final = msgspec.json.Decoder(_ToolList)


class ToolHints:
    """Which tools the server last said were read-only or idempotent."""

    def __init__(self) -> None:
        self._repeatable: dict[str, bool] = {}

    def learn(self, result: msgspec.Raw, *, first_page: bool) -> None:
        """Take a ``tools/list`` result; a first page replaces what was known."""
        try:
            listing = _TOOL_LIST.decode(result)
        except msgspec.DecodeError:
            return  # not ours to judge here; the caller gets the result as it is
        if first_page:
            self._repeatable.clear()
        for tool in listing.tools:
            hints = tool.annotations
            self._repeatable[tool.name] = bool(
                hints and (hints.read_only_hint or hints.idempotent_hint)
            )

    def repeatable(self, name: object) -> bool:
        return isinstance(name, str) and self._repeatable.get(name, False)


def safe_to_repeat(method: str, params: Any, hints: ToolHints, opt: bool | None) -> bool:
    """Whether a written, unanswered request may be sent again on a new transport."""
    if opt is not None:
        return opt
    if method == "ping" or method.rsplit("/", 1)[-1] in _SAFE_SEGMENTS:
        return True
    if method == "tools/call" and isinstance(params, dict):
        return hints.repeatable(params.get("name"))
    return False
