"""What the last ``tools/list`` said of each tool's ``x-mcp-header`` annotations.

On the stateless revision a ``tools/call`` over HTTP mirrors the annotated arguments
into ``Mcp-Param-*`` headers, and a tool whose annotations are malformed must not be
used (the rule: :mod:`mcpl_host.protocol.request_headers`). The connection reads every
``tools/list`` answer it gets (the typed ``list_tools`` and a raw ``request`` alike), so
the table is learned where answers are read, as the rebinding hints are
(:mod:`mcpl_host.driver.rebind`); the HTTP transport asks it for a tool's headers, the
typed client for the tools to leave out, and :meth:`Outbound.start` refuses a call to
a rejected tool before anything is written.

Only annotated tools are kept (a schema with no ``x-mcp-header`` in its bytes is not
even decoded), so the table holds no more than the listing's own annotations.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

import msgspec

from ..protocol.request_headers import InvalidToolHeaders, ToolHeaders, tool_headers

__all__ = ["ToolHeaderTable"]

# A key written with escapes ("x-mcp-h\u0065ader") is the same key once decoded: a
# schema with any escape is decoded too, so no spelling slips past the rule.
_MARKS: Final = (b"x-mcp-header", b"\\u")


class _Tool(msgspec.Struct, gc=False):
    name: str
    inputSchema: msgspec.Raw = msgspec.Raw(b"{}")  # the wire's name


class _Listing(msgspec.Struct, gc=False):
    tools: list[_Tool]


_LISTING: Final = msgspec.json.Decoder(_Listing)
_PLAIN: Final = msgspec.json.Decoder()


class ToolHeaderTable:
    """Per tool name: its :class:`ToolHeaders`, or why it was rejected."""

    def __init__(self) -> None:
        self._plans: dict[str, ToolHeaders] = {}
        self._rejected: dict[str, str] = {}

    def learn(
        self, result: msgspec.Raw, *, first_page: bool, safe: Callable[[str], str]
    ) -> list[tuple[str, str]]:
        """Take a ``tools/list`` result (a first page replaces what was known); return
        the tools it newly rejects, with why (a tool rejected again for the same reason
        is not returned: one warning per tool, not one per listing)."""
        before = dict(self._rejected)
        if first_page:  # even when the page is refused below: what was known is stale
            self._plans.clear()
            self._rejected.clear()
        try:
            listing = _LISTING.decode(result)
        except (msgspec.DecodeError, RecursionError):
            return []  # not ours to judge here: the caller gets the result as it is
        fresh: list[tuple[str, str]] = []
        for tool in listing.tools:
            self._plans.pop(tool.name, None)
            self._rejected.pop(tool.name, None)
            raw = bytes(tool.inputSchema)
            if not any(mark in raw for mark in _MARKS):
                continue
            try:
                schema = _PLAIN.decode(raw)
            except (msgspec.DecodeError, RecursionError):
                # Nested past the decoder's depth: its annotations cannot be checked.
                found: ToolHeaders | InvalidToolHeaders | None = InvalidToolHeaders(
                    "its input schema is nested too deep to check its x-mcp-header annotations"
                )
            else:
                found = tool_headers(schema, safe)
            if isinstance(found, ToolHeaders):
                self._plans[tool.name] = found
            elif isinstance(found, InvalidToolHeaders):
                self._rejected[tool.name] = found.reason
                if before.get(tool.name) != found.reason:
                    fresh.append((tool.name, found.reason))
        return fresh

    def plan(self, name: object) -> ToolHeaders | None:
        """The headers tool ``name`` mirrors (None: none, or a tool never listed)."""
        return self._plans.get(name) if isinstance(name, str) else None

    def rejected(self, name: object) -> str | None:
        """Why tool ``name`` must not be used, or None."""
        return self._rejected.get(name) if isinstance(name, str) else None

    def clear(self) -> None:
        self._plans.clear()
        self._rejected.clear()
