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


class _Read:
    """A listed tool, once its hints were read (see :meth:`ToolHints.learn`)."""


_READ: Final = _Read()


class _ToolList(msgspec.Struct):
    tools: list[_Read]


class ToolHints:
    """Which tools the server last said were read-only or idempotent. Only those names
    are kept, and a page's tools are read one at a time, nothing kept per tool: a
    server's huge ``tools/list`` page costs no memory here beyond its hinted names."""

    def __init__(self) -> None:
        self._repeatable: set[str] = set()

    def learn(self, result: msgspec.Raw, *, first_page: bool) -> None:
        """Take a ``tools/list`` result; a first page replaces what was known."""
        # The page's last word on each name that is, or was, repeatable.
        changes: dict[str, bool] = {}

        def read(_type: type, value: Any) -> _Read:
            tool = msgspec.convert(value, _Tool)  # ValidationError: the page is not read
            hints = tool.annotations
            repeatable = bool(hints and (hints.read_only_hint or hints.idempotent_hint))
            if repeatable or tool.name in changes or tool.name in self._repeatable:
                changes[tool.name] = repeatable
            return _READ

        try:
            msgspec.json.Decoder(_ToolList, dec_hook=read).decode(result)
        except msgspec.DecodeError:
            return  # not ours to judge here; the caller gets the result as it is
        if first_page:
            self._repeatable.clear()
        for name, repeatable in changes.items():
            if repeatable:
                self._repeatable.add(name)
            else:
                self._repeatable.discard(name)

    def repeatable(self, name: object) -> bool:
        return isinstance(name, str) and name in self._repeatable


def safe_to_repeat(method: str, params: Any, hints: ToolHints, opt: bool | None) -> bool:
    """Whether a written, unanswered request may be sent again on a new transport."""
    if opt is not None:
        return opt
    if method == "ping" or method.rsplit("/", 1)[-1] in _SAFE_SEGMENTS:
        return True
    if method == "tools/call" and isinstance(params, dict):
        return hints.repeatable(params.get("name"))
    return False
