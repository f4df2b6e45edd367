"""Following MCP's cursor pagination to the end of a list, within bounds.

A list method (``tools/list``, ``resources/list``, ``resources/templates/list``,
``prompts/list``) answers one page and, when more follow, a ``nextCursor`` to send back.
The cursor is opaque: any string is one, the empty string included. A server that
hands out a cursor it already gave, or pages without end, is broken; the caller gets a
typed error rather than a list that silently misses items.

What one listing may collect is bounded in total, across its pages: ``max_list_items``
items and ``max_list_bytes`` bytes of page JSON (:class:`ListLimits`, options of
:class:`~mcpl_host.Connection`). Each page is checked as it arrives, before its items are
decoded, so a server cannot make the host hold more than the bounds by sending one huge
page of tiny items: the items of a page are counted, each skipped as it is read, before
they are split. Every item must be a JSON object (MCP's lists hold nothing else).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from dataclasses import dataclass
from functools import cache
from typing import Any, Final, Protocol

import msgspec
from msgspec import UNSET, Raw, UnsetType

from ..protocol.errors import ConfigurationError, LimitExceeded, ProtocolError
from ..protocol.redact import Redactor, log_value

__all__ = [
    "DEFAULT_MAX_LIST_BYTES",
    "DEFAULT_MAX_LIST_ITEMS",
    "DEFAULT_MAX_PAGES",
    "ListLimits",
    "Lister",
    "collect",
    "collect_raw",
    "list_raw",
]

DEFAULT_MAX_PAGES: Final = 100
# Far past any real server's list (the largest seen list a few thousand tools, a few
# MB), and a bound on what one listing can make the host hold: see docs/client.md.
DEFAULT_MAX_LIST_ITEMS: Final = 100_000
DEFAULT_MAX_LIST_BYTES: Final = 32 * 1024 * 1024
# A cursor shown in an error message: enough to recognise it, never a whole blob.
_CURSOR_SHOWN: Final = 64
_ITEMS: Final = msgspec.json.Decoder(list[Raw])
_PLAIN: Final = msgspec.json.Decoder()

Fetch = Callable[[Any], Awaitable[Raw]]
"""Asks for one page: called with the params (none for the first page, else
``{"cursor": C}``), returns the page's raw result."""


@dataclass(frozen=True, slots=True)
class ListLimits:
    """The most one listing collects across all its pages: ``items`` items, ``bytes``
    bytes of the pages' JSON (each page's ``result`` as received).

    Raises :class:`~mcpl_host.ConfigurationError` for a bound below 1.
    """

    items: int = DEFAULT_MAX_LIST_ITEMS
    bytes: int = DEFAULT_MAX_LIST_BYTES

    def __post_init__(self) -> None:
        if self.items < 1:
            raise ConfigurationError("max_list_items must be at least 1")
        if self.bytes < 1:
            raise ConfigurationError("max_list_bytes must be at least 1")


_DEFAULTS: Final = ListLimits()


class Lister(Protocol):
    """What the listing functions need of a connection (a
    :class:`~mcpl_host.Connection` is one)."""

    name: str
    redactor: Redactor

    @property
    def list_limits(self) -> ListLimits: ...

    async def _request_raw(self, method: str, params: Any, *, timeout: float | None) -> Raw: ...


async def collect(
    conn: Lister,
    method: str,
    key: str,
    *,
    max_pages: int = DEFAULT_MAX_PAGES,
    timeout: float | None = None,
) -> list[Any]:
    """Every item of a paginated list, as plain JSON values: ``result[key]`` of each page,
    in order, within the connection's :class:`ListLimits`. ``timeout`` bounds each
    page's request.

    Raises what :func:`collect_raw` raises (an item that is not JSON is a
    :class:`~mcpl_host.ProtocolError`), and whatever :meth:`Connection.request
    <mcpl_host.Connection.request>` raises (:class:`~mcpl_host.RequestError`,
    :class:`~mcpl_host.RequestTimeout`, :class:`~mcpl_host.ConnectionClosed`).
    """
    items = await list_raw(conn, method, key, max_pages=max_pages, timeout=timeout)
    try:
        return [_PLAIN.decode(item) for item in items]
    except msgspec.DecodeError as exc:
        # Framing only checked the item's shape; a string in it may not be UTF-8.
        raise ProtocolError(
            f"an item of {method} is not JSON: {conn.redactor.log_value(str(exc))}",
            server=conn.name,
        ) from None


async def list_raw(
    conn: Lister,
    method: str,
    key: str,
    *,
    max_pages: int = DEFAULT_MAX_PAGES,
    timeout: float | None = None,
) -> list[Raw]:
    """Every item of a paginated list, each as its raw JSON (never decoded), within the
    connection's :class:`ListLimits`. Raises what :func:`collect` raises."""

    async def fetch(params: Any) -> Raw:
        return await conn._request_raw(method, params, timeout=timeout)

    return await collect_raw(
        fetch,
        method,
        key,
        max_pages=max_pages,
        limits=conn.list_limits,
        server=conn.name,
        safe=conn.redactor.log_value,
    )


async def collect_raw(
    fetch: Fetch,
    method: str,
    key: str,
    *,
    max_pages: int = DEFAULT_MAX_PAGES,
    limits: ListLimits = _DEFAULTS,
    server: str | None = None,
    safe: Callable[[str, int], str] = log_value,
) -> list[Raw]:
    """Every item of a paginated list, each as its raw JSON.

    The first page is asked for without params; each later one with ``{"cursor": C}``,
    ``C`` the previous page's ``nextCursor``. A page without ``nextCursor`` (or with
    ``null``) is the last. ``safe`` makes a cursor fit for an error message.

    Raises :class:`~mcpl_host.LimitExceeded` (``limit`` ``"max_list_items"`` or
    ``"max_list_bytes"``) as soon as a page would take the list past ``limits``, no
    further page asked for; :class:`~mcpl_host.ProtocolError` when a page is not an
    object with a ``key`` list of objects, a ``nextCursor`` is not a string, a cursor repeats, or
    the list runs past ``max_pages`` pages; whatever ``fetch`` raises; and
    ``ValueError`` when ``max_pages`` is less than 1. Never a partial list.
    """
    if max_pages < 1:
        raise ValueError("max_pages must be at least 1")
    page_type = _page_decoder(key)
    items: list[Raw] = []
    size = 0
    seen: set[str] = set()
    cursor: str | None = None
    for page_number in range(1, max_pages + 1):
        result = await fetch(UNSET if cursor is None else {"cursor": cursor})
        size += len(result)
        if size > limits.bytes:
            raise LimitExceeded(
                f"{method} is more than {limits.bytes} bytes (max_list_bytes): "
                "the list was not collected",
                limit="max_list_bytes",
                value=limits.bytes,
                server=server,
            )
        try:
            page = page_type.decode(result)
        except msgspec.DecodeError:
            page = _Page()
        listed = page.items
        if isinstance(listed, UnsetType):
            raise _no_list(method, key, page_number, server)
        try:
            if not _fits(listed, limits.items - len(items)):
                raise _too_many(method, limits, server)
            items.extend(_ITEMS.decode(listed))
        except msgspec.DecodeError:
            raise _no_list(method, key, page_number, server) from None
        if len(items) > limits.items:
            raise _too_many(method, limits, server)
        cursor = _cursor(page.next_cursor, method, page_number, server)
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


def _no_list(method: str, key: str, number: int, server: str | None) -> ProtocolError:
    return ProtocolError(f"page {number} of {method} has no {key!r} list of objects", server=server)


def _too_many(method: str, limits: ListLimits, server: str | None) -> LimitExceeded:
    return LimitExceeded(
        f"{method} has more than {limits.items} items (max_list_items): the list was not collected",
        limit="max_list_items",
        value=limits.items,
        server=server,
    )


class _Page(msgspec.Struct):
    """A page: the items' JSON and ``nextCursor``'s, every other member skipped unread."""

    items: Raw | UnsetType = UNSET
    next_cursor: Raw | UnsetType = msgspec.field(default=UNSET, name="nextCursor")


@cache
def _page_decoder(key: str) -> msgspec.json.Decoder[_Page]:
    # A Struct rather than dict[str, Raw]: a page of many members costs nothing per member.
    page = msgspec.defstruct(
        "Page",
        [("items", Raw | UnsetType, msgspec.field(default=UNSET, name=key))],
        bases=(_Page,),
    )
    return msgspec.json.Decoder(page)


class _PastBound(Exception):
    pass


# How many more items the count under way may see (see _fits).
_ROOM: Final[ContextVar[list[int]]] = ContextVar("mcpl_host_list_room")


class _Item(msgspec.Struct, gc=False):
    """One listed item, counted: every member skipped unread, nothing kept."""

    def __post_init__(self) -> None:
        room = _ROOM.get()
        room[0] -= 1
        if room[0] < 0:
            raise _PastBound


_COUNT: Final = msgspec.json.Decoder(list[_Item])


def _fits(listed: Raw, room: int) -> bool:
    """Whether the JSON array ``listed`` holds at most ``room`` items. Each item is
    skipped as it is read (no member is decoded, so one huge item costs nothing) and
    the count stops one past ``room``.

    Raises ``msgspec.ValidationError`` when ``listed`` is not an array of objects:
    every MCP list item is an object, and only objects can be counted this cheaply.
    """
    token = _ROOM.set([room])
    try:
        _COUNT.decode(listed)
    except _PastBound:
        return False
    finally:
        _ROOM.reset(token)
    return True


def _cursor(raw: Raw | UnsetType, method: str, number: int, server: str | None) -> Any:
    if isinstance(raw, UnsetType):
        return None
    try:
        return _PLAIN.decode(raw)
    except msgspec.DecodeError:
        # The page's framing passed; a string in it may still not be UTF-8.
        raise ProtocolError(
            f"page {number} of {method}: nextCursor is not JSON", server=server
        ) from None


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
