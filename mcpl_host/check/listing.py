"""What the utilities and content probes share: one exchange read whole, and a server's
lists read through their pages (server/utilities/pagination).

A list is read as a client would, following ``nextCursor``, but bounded against a
hostile server: at most :data:`MAX_PAGES` pages, a cursor seen twice ends the reading
(it would loop forever), and at most :data:`MAX_ITEMS` items are kept. What cannot be
read (no answer, an error, a page that is not a list) is a :class:`Listing` with a
``problem``, never an exception: the probes turn it into a finding.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from .rules import Line
from .wire import EVIDENCE_CHARS, Received, Wire, error_code

__all__ = [
    "LISTS",
    "MAX_ITEMS",
    "MAX_PAGES",
    "METHOD_NOT_FOUND",
    "ListKind",
    "Listing",
    "declared_lists",
    "exchange",
    "peer_line",
    "read_list",
]

MAX_PAGES: Final = 1000
MAX_ITEMS: Final = 10_000
# Items are kept from at most this many bytes of pages; later pages are still read (the
# list must end), their items counted for duplicates but not kept.
MAX_KEPT_BYTES: Final = 32 * 1024 * 1024
_IDENT_CHARS: Final = 200
METHOD_NOT_FOUND: Final = -32601


@dataclass(frozen=True, slots=True)
class ListKind:
    """One list method: the capability that declares it, the result's member holding
    the items, and the item's member that names it (its identity for duplicates).
    ``optional``: a server with the capability may leave the method out (answer -32601):
    resource templates are an optional part of resources."""

    capability: str
    method: str
    key: str
    ident: str
    optional: bool = False


LISTS: Final = (
    ListKind("tools", "tools/list", "tools", "name"),
    ListKind("resources", "resources/list", "resources", "uri"),
    ListKind(
        "resources", "resources/templates/list", "resourceTemplates", "uriTemplate", optional=True
    ),
    ListKind("prompts", "prompts/list", "prompts", "name"),
)


def declared_lists(capabilities: dict[str, Any]) -> list[ListKind]:
    """The lists whose capability the server declared."""
    return [kind for kind in LISTS if kind.capability in capabilities]


@dataclass(slots=True)
class Listing:
    """A list as read: ``items`` (those kept), ``problem`` (why it is not whole and
    right: None when it is), ``duplicates`` (identities seen twice), ``pages`` read,
    ``error`` (the JSON-RPC error a page was answered with, if any) and the lines.
    ``absent``: an optional list the server does not serve (no items, no problem).
    ``bounded``: the problem is the checker's own page bound, reached with no cursor
    repeated: the list was not shown to loop, so a rule it decides is not settled."""

    kind: ListKind
    items: list[Any] = field(default_factory=list)
    problem: str | None = None
    duplicates: list[str] = field(default_factory=list)
    pages: int = 0
    error: Any = None
    absent: bool = False
    bounded: bool = False
    evidence: tuple[Line, ...] = ()


async def exchange(
    wire: Wire, message: dict[str, Any], timeout: float
) -> tuple[dict[str, Any] | None, list[Received]]:
    """Send the request ``message``; its response (None: none came within ``timeout``)
    and the lines read meanwhile (bounded: :meth:`.Wire.received_within`), the response
    last."""
    await wire.send(message)
    return await wire.answer_and_lines(message["id"], timeout)


def peer_line(ctx: Any, line: Received) -> Line:
    """A received line as evidence, redacted, escaped and cut as the transcript's are."""
    text = line.raw[: 4 * EVIDENCE_CHARS].decode("utf-8", "replace")
    return Line("←", ctx.redactor.log_value(text, EVIDENCE_CHARS))


def _digest(text: str) -> bytes:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()


async def read_list(
    wire: Wire, kind: ListKind, timeout: float, *, first_params: dict[str, Any] | None = None
) -> Listing:
    """Read ``kind``'s list on ``wire`` through every page (bounded as the module says).
    ``first_params`` are the first page's params (a progress token, say)."""
    listing = Listing(kind)
    mark = wire.mark()
    # Digests, not the values: a cursor or a name may be megabytes long, and two long
    # names that share a prefix are not the same name.
    seen_cursors: set[bytes] = set()
    seen: set[bytes] = set()
    cursor: str | None = None
    kept_bytes = 0
    while True:
        params: dict[str, Any] = dict(first_params or {}) if cursor is None else {}
        if cursor is not None:
            params["cursor"] = cursor
        answer, lines = await exchange(wire, wire.request(kind.method, params), timeout)
        listing.pages += 1
        listing.problem = _page_problem(kind, answer, listing)
        if listing.problem is not None or answer is None:
            if listing.pages == 1 and kind.optional and error_code(answer) == METHOD_NOT_FOUND:
                listing.problem, listing.absent = None, True
            break
        result = answer["result"]
        kept_bytes += len(lines[-1].raw)
        for item in result[kind.key]:
            ident = item.get(kind.ident) if isinstance(item, dict) else None
            if isinstance(ident, str):
                digest = _digest(ident)
                if digest in seen and len(listing.duplicates) < 10:
                    listing.duplicates.append(ident[:_IDENT_CHARS])
                if len(seen) < MAX_ITEMS * 10:
                    seen.add(digest)
            if len(listing.items) < MAX_ITEMS and kept_bytes <= MAX_KEPT_BYTES:
                listing.items.append(item)
        cursor = result.get("nextCursor")
        if cursor is None:
            break
        if not isinstance(cursor, str):
            listing.problem = f"page {listing.pages}'s nextCursor is not a string"
            break
        if _digest(cursor) in seen_cursors:
            listing.problem = f"page {listing.pages} repeats an earlier cursor: it would loop"
            break
        if listing.pages >= MAX_PAGES:
            listing.problem = (
                f"{kind.method} still has a nextCursor after {MAX_PAGES} pages (no cursor "
                "repeated): the checker reads no more"
            )
            listing.bounded = True
            break
        seen_cursors.add(_digest(cursor))
    listing.evidence = _cut(wire.since(mark))
    return listing


def _page_problem(kind: ListKind, answer: dict[str, Any] | None, listing: Listing) -> str | None:
    page = f"{kind.method} (page {listing.pages})"
    if answer is None:
        return f"{page} was not answered"
    if "error" in answer:
        listing.error = answer["error"]
        return f"{page} was answered with an error"
    result = answer.get("result")
    if not isinstance(result, dict):
        return f"{page} was answered with a result that is not an object"
    if not isinstance(result.get(kind.key), list):
        return f"{page}'s result has no {kind.key} list"
    return None


def _cut(lines: Sequence[Line], keep: int = 12) -> tuple[Line, ...]:
    """The first and last lines of a long exchange (a list of many pages)."""
    if len(lines) <= keep:
        return tuple(lines)
    half = keep // 2
    skipped = Line("·", f"({len(lines) - keep} lines left out)")
    return (*lines[:half], skipped, *lines[-half:])
