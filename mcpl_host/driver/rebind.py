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

from contextvars import ContextVar
from typing import Any, Final

import msgspec

__all__ = ["MAX_HINTED_TOOLS", "ToolHints", "safe_to_repeat"]

_SAFE_SEGMENTS: Final = frozenset({"list", "read", "get", "complete"})


class _Hints(msgspec.Struct, rename="camel"):
    """Just what the rule reads of a tool's annotations (the whole type, for callers,
    is the client layer's ToolAnnotations)."""

    read_only_hint: bool | None = None
    idempotent_hint: bool | None = None


# A page of more tools than this is not read for hints (its tools stay not repeatable):
# far past any real server's list (the client refuses a listing past 100,000 items by
# default), it bounds what one page's reading holds.
MAX_HINTED_TOOLS: Final = 100_000


class _TooMany(Exception):
    pass


# How many more tools the page being read may hold (see ToolHints.learn).
_ROOM: Final[ContextVar[list[int]]] = ContextVar("mcpl_host_hint_room")


class _Tool(msgspec.Struct, gc=False):
    """Just what the rule reads of a listed tool (every other member skipped unread)."""

    name: str
    annotations: _Hints | None = None

    def __post_init__(self) -> None:
        room = _ROOM.get()
        room[0] -= 1
        if room[0] < 0:
            raise _TooMany


class _ToolList(msgspec.Struct):
    tools: list[_Tool]


_TOOL_LIST: Final = msgspec.json.Decoder(_ToolList)


class ToolHints:
    """Which tools the server last said were read-only or idempotent. Only those names
    are kept: a server's huge ``tools/list`` page costs nothing here once read."""

    def __init__(self) -> None:
        self._repeatable: set[str] = set()

    def learn(self, result: msgspec.Raw, *, first_page: bool) -> None:
        """Take a ``tools/list`` result; a first page replaces what was known."""
        if first_page:  # even when the page is refused below: the old hints are stale
            self._repeatable.clear()
        token = _ROOM.set([MAX_HINTED_TOOLS])
        try:
            listing = _TOOL_LIST.decode(result)
        except (msgspec.DecodeError, _TooMany):
            return  # not ours to judge here; the caller gets the result as it is
        finally:
            _ROOM.reset(token)
        for tool in listing.tools:
            hints = tool.annotations
            if hints and (hints.read_only_hint or hints.idempotent_hint):
                self._repeatable.add(tool.name)
            else:
                self._repeatable.discard(tool.name)

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
