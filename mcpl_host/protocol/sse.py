"""Server-sent events (the ``text/event-stream`` format), decoded without I/O.

Streamable HTTP servers answer a POST, and serve their GET stream, as server-sent
events: each event's ``data`` is one JSON-RPC message, its ``id`` lets a client resume
the stream after a cut (``Last-Event-ID``), and a ``retry`` field says how long to wait
before resuming. This follows the WHATWG interpretation of the format: lines end with
CRLF, LF or CR; a blank line dispatches the event; ``:`` starts a comment; one space
after the colon is dropped; an ``id`` holding NUL is ignored; ``retry`` counts only when
all digits; an event without data is not dispatched (but its ``id`` still counts: the
"priming" event a server sends so that a client can resume).

Bounded: an event whose data grows past ``max_event_bytes`` is dropped as it arrives
(counted in :attr:`SseDecoder.dropped`), and so is a line past the bound.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

__all__ = ["SseDecoder", "SseEvent"]

_EOL: Final = re.compile(rb"\r\n|\r|\n")


@dataclass(frozen=True, slots=True)
class SseEvent:
    """One dispatched event: its ``data`` (lines joined by LF), ``event`` type and the
    last event id in force when it was dispatched."""

    data: str
    event: str = "message"
    id: str | None = None


class SseDecoder:
    """Feed it the bytes of an event stream, in chunks of any size; it returns the
    events they complete. :attr:`last_event_id` and :attr:`retry_ms` hold what the
    stream said so far."""

    def __init__(self, max_event_bytes: int = 16 * 1024 * 1024) -> None:
        if max_event_bytes < 1:
            raise ValueError("max_event_bytes must be positive")
        self._max = max_event_bytes
        self._line = bytearray()
        self._after_cr = False  # the last byte was a CR: a following LF ends nothing
        self._line_oversized = False
        self._data: list[str] = []
        self._size = 0
        self._oversized = False
        self._event = ""
        self.last_event_id: str | None = None
        self.retry_ms: int | None = None
        self.dropped = 0

    def feed(self, chunk: bytes) -> list[SseEvent]:
        if not chunk:
            return []  # nothing read: a CR just before still waits for its LF
        events: list[SseEvent] = []
        if not chunk:
            return events  # a CR just seen still waits for the LF that may follow it
        if self._after_cr and chunk.startswith(b"\n"):
            chunk = chunk[1:]  # the LF of a CRLF cut between two chunks
        self._after_cr = False
        start = 0
        for end in _EOL.finditer(chunk):
            self._take(chunk[start : end.start()])
            self._end_line(events)
            start = end.end()
            self._after_cr = end.group() == b"\r" and start == len(chunk)
        self._take(chunk[start:])
        return events

    def _take(self, piece: bytes) -> None:
        if len(self._line) + len(piece) > self._max:
            self._line_oversized = True
        elif piece:
            self._line += piece

    def _end_line(self, events: list[SseEvent]) -> None:
        raw = bytes(self._line)
        self._line.clear()
        if self._line_oversized:
            self._line_oversized = False
            self._oversized = True
            return
        line = raw.decode("utf-8", errors="replace")
        if not line:
            self._dispatch(events)
            return
        if line.startswith(":"):
            return
        name, colon, value = line.partition(":")
        if colon and value.startswith(" "):
            value = value[1:]
        if name == "data":
            self._size += len(value) + 1
            if self._size > self._max:
                self._oversized = True
            elif not self._oversized:
                self._data.append(value)
        elif name == "event":
            self._event = value
        elif name == "id":
            if "\0" not in value:
                self.last_event_id = value
        elif name == "retry" and value.isascii() and value.isdigit():
            self.retry_ms = int(value)

    def _dispatch(self, events: list[SseEvent]) -> None:
        if self._oversized:
            self.dropped += 1
        elif self._data:
            events.append(
                SseEvent("\n".join(self._data), self._event or "message", self.last_event_id)
            )
        self._data.clear()
        self._size = 0
        self._oversized = False
        self._event = ""
