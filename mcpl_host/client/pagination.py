"""Following MCP's cursor pagination to the end of a list.

A list method (``tools/list``, ``resources/list``, ``resources/templates/list``,
``prompts/list``) answers one page and, when more follow, a ``nextCursor`` to send back.
The cursor is opaque: any string is one, the empty string included. A server that
hands out a cursor it already gave, or pages without end, is broken; the caller gets a
typed error rather than a list that silently misses items.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Final

import msgspec
from msgspec import UNSET, Raw

from ..protocol.errors import ProtocolError
from ..protocol.redact import log_value

if TYPE_CHECKING:
    from ..driver.core import Driver

__all__ = ["DEFAULT_MAX_PAGES", "collect", "collect_raw"]

DEFAULT_MAX_PAGES: Final = 100
# A cursor shown in an error message: enough to recognise it, never a whole blob.
_CURSOR_SHOWN: Final = 64
_PAGE: Final = msgspec.json.Decoder(dict[str, Raw])
_ITEMS: Final = msgspec.json.Decoder(list[Raw])
_PLAIN: Final = msgspec.json.Decoder()

Fetch = Callable[[Any], Awaitable[Raw]]
"""Asks for one page: called with the params (none for the first page, else
``{"cursor": C}``), returns the page's raw result."""


async def collect(
    conn: Driver,
    method: str,
    key: str,
    *,
    max_pages: int = DEFAULT_MAX_PAGES,
    timeout: float | None = None,
) -> list[Any]:
    """Every item of a paginated list, as plain JSON values: ``result[key]`` of each page,
    in order. ``timeout`` bounds each page's request.

    Raises what :func:`collect_raw` raises, and whatever :meth:`Connection.request
    <mcpl_host.Connection.request>` raises (:class:`~mcpl_host.RequestError`,
    :class:`~mcpl_host.RequestTimeout`, :class:`~mcpl_host.ConnectionClosed`).
    """

    async def fetch(params: Any) -> Raw:
        page: Raw = await conn.request(method, params, result_type=Raw, timeout=timeout)
        return page

    items = await collect_raw(
        fetch, method, key, max_pages=max_pages, server=conn.name, safe=conn.redactor.log_value
    )
    return [_PLAIN.decode(item) for item in items]


async def collect_raw(
    fetch: Fetch,
    method: str,
    key: str,
    *,
    max_pages: int = DEFAULT_MAX_PAGES,
    server: str | None = None,
    safe: Callable[[str, int], str] = log_value,
) -> list[Raw]:
    """Every item of a paginated list, each as its raw JSON.

    The first page is asked for without params; each later one with ``{"cursor": C}``,
    ``C`` the previous page's ``nextCursor``. A page without ``nextCursor`` (or with
    ``null``) is the last. ``safe`` makes a cursor fit for an error message.

    Raises :class:`~mcpl_host.ProtocolError` when a page is not an object with a
    ``key`` list, a ``nextCursor`` is not a string, a cursor repeats, or the list runs
    past ``max_pages`` pages; whatever ``fetch`` raises; and ``ValueError`` when
    ``max_pages`` is less than 1. Never a partial list.
    """
    if max_pages < 1:
        raise ValueError("max_pages must be at least 1")
    items: list[Raw] = []
    seen: set[str] = set()
    cursor: str | None = None
    for page_number in range(1, max_pages + 1):
        result = await fetch(UNSET if cursor is None else {"cursor": cursor})
        try:
            page = _PAGE.decode(result)
            items.extend(_ITEMS.decode(page[key]))
        except (msgspec.DecodeError, KeyError):
            raise ProtocolError(
                f"page {page_number} of {method} has no {key!r} list", server=server
            ) from None
        cursor = _cursor(page.get("nextCursor"))
        if cursor is None:
            return items
        if not isinstance(cursor, str):
            raise ProtocolError(
                f"page {page_number} of {method}: nextCursor must be a string, "
                f"not {_json_kind(cursor)}",
                server=server,
            )
        if cursor in seen:
            raise ProtocolError(
                f"page {page_number} of {method} repeats the cursor "
                f"{safe(cursor, _CURSOR_SHOWN)!r}: the list would never end",
                server=server,
            )
        seen.add(cursor)
    raise ProtocolError(
        f"{method} has more than {max_pages} pages: the list was not collected",
        server=server,
    )


def _cursor(raw: Raw | None) -> Any:
    return None if raw is None else _PLAIN.decode(raw)


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
