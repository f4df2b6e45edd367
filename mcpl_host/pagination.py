"""Following MCP's cursor pagination to the end of a list.

A list method (``tools/list``, ``resources/list``, ``resources/templates/list``,
``prompts/list``) answers one page and, when more follow, a ``nextCursor`` to send back.
The cursor is opaque: any string is one, the empty string included. A server that
hands out a cursor it already gave, or pages without end, is broken; the caller gets a
typed error rather than a list that silently misses items.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

from msgspec import UNSET

from .protocol.errors import ProtocolError

if TYPE_CHECKING:
    from .connection import Connection

__all__ = ["DEFAULT_MAX_PAGES", "collect"]

DEFAULT_MAX_PAGES: Final = 100
# A cursor shown in an error message: enough to recognise it, never a whole blob.
_CURSOR_SHOWN: Final = 64


async def collect(
    conn: Connection,
    method: str,
    key: str,
    *,
    max_pages: int = DEFAULT_MAX_PAGES,
    timeout: float | None = None,
) -> list[Any]:
    """Every item of a paginated list: ``result[key]`` of each page, in order.

    The first page is asked for without params; each later one with ``{"cursor": C}``,
    ``C`` the previous page's ``nextCursor``. A page without ``nextCursor`` (or with
    ``null``) is the last. ``timeout`` bounds each page's request.

    Raises :class:`~mcpl_host.ProtocolError` when a page is not an object with a
    ``key`` list, a ``nextCursor`` is not a string, a cursor repeats, or the list runs
    past ``max_pages`` pages; whatever :meth:`Connection.request
    <mcpl_host.Connection.request>` raises (:class:`~mcpl_host.RequestError`,
    :class:`~mcpl_host.RequestTimeout`, :class:`~mcpl_host.ConnectionClosed`); and
    ``ValueError`` when ``max_pages`` is less than 1. Never a partial list.
    """
    if max_pages < 1:
        raise ValueError("max_pages must be at least 1")
    items: list[Any] = []
    seen: set[str] = set()
    cursor: str | None = None
    for page in range(1, max_pages + 1):
        params: Any = UNSET if cursor is None else {"cursor": cursor}
        result = await conn.request(method, params, timeout=timeout)
        entries = result.get(key) if isinstance(result, dict) else None
        if not isinstance(entries, list):
            raise ProtocolError(f"page {page} of {method} has no {key!r} list", server=conn.name)
        items.extend(entries)
        cursor = result.get("nextCursor")
        if cursor is None:
            return items
        if not isinstance(cursor, str):
            raise ProtocolError(
                f"page {page} of {method}: nextCursor must be a string, not {_json_kind(cursor)}",
                server=conn.name,
            )
        if cursor in seen:
            shown = conn.redactor.log_value(cursor, _CURSOR_SHOWN)
            raise ProtocolError(
                f"page {page} of {method} repeats the cursor {shown!r}: the list would never end",
                server=conn.name,
            )
        seen.add(cursor)
    raise ProtocolError(
        f"{method} has more than {max_pages} pages: the list was not collected",
        server=conn.name,
    )


def _json_kind(value: object) -> str:
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__
