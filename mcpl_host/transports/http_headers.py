"""Header values a Streamable HTTP server sets that the host sends back: checked first.

The server's ``Mcp-Session-Id`` goes back on every request, and an event's ``id`` goes
back as ``Last-Event-ID`` when a stream is resumed. Sent back unchecked, a value that
is not ASCII fails inside the HTTP client (a raw ``UnicodeEncodeError``), and one with a
control character or a line break could split or forge a header. MCP says a session id
holds only visible ASCII (0x21 to 0x7E); an event id may hold spaces too. Both are cut
at :data:`MAX_ECHOED_BYTES`: a value the host repeats on every request is not a place
for a server to park megabytes.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Final, NamedTuple

__all__ = ["MAX_ECHOED_BYTES", "Refused", "echoable_event_id", "session_id"]

MAX_ECHOED_BYTES: Final = 8192
_SESSION_ID: Final = re.compile(rb"[\x21-\x7e]+")
_SESSION_HEADER: Final = b"mcp-session-id"


class Refused(NamedTuple):
    """A header value the server set that cannot be used; ``why`` is safe to log (it
    names sizes, never the value)."""

    why: str


def session_id(raw_headers: Iterable[tuple[bytes, bytes]]) -> str | Refused | None:
    """The ``Mcp-Session-Id`` among a response's raw headers; None when it has none;
    :class:`Refused` when it is there but unusable: empty, repeated, longer than
    :data:`MAX_ECHOED_BYTES`, or holding anything but visible ASCII."""
    values = [value for name, value in raw_headers if name.lower() == _SESSION_HEADER]
    if not values:
        return None
    if len(values) > 1:
        return Refused(f"{len(values)} Mcp-Session-Id headers")
    value = values[0]
    if not value:
        return Refused("an empty Mcp-Session-Id")
    if len(value) > MAX_ECHOED_BYTES:
        return Refused(f"an Mcp-Session-Id of {len(value)} bytes (over {MAX_ECHOED_BYTES})")
    if not _SESSION_ID.fullmatch(value):
        return Refused(f"an Mcp-Session-Id of {len(value)} bytes, not all visible ASCII")
    return value.decode("ascii")


def echoable_event_id(event_id: str) -> bool:
    """Whether an event id can go back as ``Last-Event-ID``: printable ASCII, no space at
    either end (HTTP would strip it), at most :data:`MAX_ECHOED_BYTES` long."""
    return (
        0 < len(event_id) <= MAX_ECHOED_BYTES
        and event_id.isascii()
        and event_id.isprintable()
        and event_id.strip(" ") == event_id
    )
