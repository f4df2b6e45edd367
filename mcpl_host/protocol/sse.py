"""Server-sent events (the ``text/event-stream`` format), decoded without I/O.

Streamable HTTP servers answer a POST, and serve their GET stream, as server-sent
events: each event's ``data`` is one JSON-RPC message, its ``id`` lets a client resume
the stream after a cut (``Last-Event-ID``), and a ``retry`` field says how long to wait
before resuming. This follows the WHATWG interpretation of the format: lines end with
CRLF, LF or CR; a blank line dispatches the event; ``:`` starts a comment; one space
after the colon is dropped; an ``id`` holding NUL is ignored; ``retry`` counts only when
all digits; an event without data is not dispatched (but its ``id`` still counts: the
"priming" event a server sends so that a client can resume).

Bounded: an event whose data grows past ``max_event_bytes`` (bytes, as on the wire) is
dropped as it arrives, and so is a line past what is left of the bound; the drop is
counted (:attr:`SseDecoder.dropped`) the moment the bound is passed, so a reader can act
at once rather than after the rest of a huge event. The decoder never holds more than
the bound (plus the six bytes of ``data: ``) of one event.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

__all__ = ["SseDecoder", "SseEvent"]

_EOL: Final = re.compile(rb"\r\n|\r|\n")
# A data line's field name, colon and space are not data: the line in progress may be
# that much longer than what is left of its event's bound.
_FIELD_ROOM: Final = len(b"data: ")
# A retry of more digits is read as the longest one: int() refuses 4,300 digits, and a
# float of a few hundred overflows. About 11.5 days: a server asking for more means never.
_RETRY_DIGITS: Final = 9
_RETRY_MAX: Final = 10**_RETRY_DIGITS - 1


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
    stream said so far; :attr:`dropped` counts the events that passed the bound, from
    the moment each passed it."""

    def __init__(self, max_event_bytes: int = 16 * 1024 * 1024) -> None:
        if max_event_bytes < 1:
            raise ValueError("max_event_bytes must be positive")
        self._max = max_event_bytes
        self._line = bytearray()
        self._after_cr = False  # the last byte was a CR: a following LF ends nothing
        self._line_oversized = False
        self._data = bytearray()  # the event's data lines, each followed by LF
        self._has_data = False  # a data field was seen (it may be empty)
        self._oversized = False
        self._event = ""
        self.last_event_id: str | None = None
        self.retry_ms: int | None = None
        self.dropped = 0

    @property
    def held(self) -> int:
        """Bytes of the event and the line in progress held now: at most the bound plus
        the length of ``data: ``."""
        return len(self._data) + len(self._line)

    def feed(self, chunk: bytes) -> list[SseEvent]:
        events: list[SseEvent] = []
        if not chunk:
            return events  # nothing read: a CR just before still waits for its LF
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
        if self._line_oversized or not piece:
            return
        room = min(self._max, self._max - len(self._data) + _FIELD_ROOM)
        if len(self._line) + len(piece) > room:
            self._line_oversized = True
            self._line.clear()
            self._drop()
        else:
            self._line += piece

    def _drop(self) -> None:
        """The event in progress passed the bound: count it now, hold nothing more of it."""
        if not self._oversized:
            self._oversized = True
            self.dropped += 1
        self._data.clear()

    def _end_line(self, events: list[SseEvent]) -> None:
        if self._line_oversized:
            self._line_oversized = False
            return
        line = bytes(self._line)
        self._line.clear()
        if not line:
            self._dispatch(events)
            return
        if line.startswith(b":"):
            return
        name, colon, value = line.partition(b":")
        if colon and value.startswith(b" "):
            value = value[1:]
        if name == b"data":
            self._has_data = True
            if len(self._data) + len(value) + 1 > self._max:
                self._drop()
            elif not self._oversized:
                self._data += value
                self._data += b"\n"
        elif name == b"event":
            self._event = value.decode("utf-8", errors="replace")
        elif name == b"id":
            if b"\0" not in value:
                self.last_event_id = value.decode("utf-8", errors="replace")
        elif name == b"retry" and value.isdigit():
            self.retry_ms = int(value) if len(value) <= _RETRY_DIGITS else _RETRY_MAX

    def _dispatch(self, events: list[SseEvent]) -> None:
        if self._has_data and not self._oversized:
            # Decoded whole: a line end never falls inside a UTF-8 sequence, so this is
            # the text the WHATWG rule (decode, then split into lines) gives.
            data = self._data[:-1].decode("utf-8", errors="replace")
            events.append(SseEvent(data, self._event or "message", self.last_event_id))
        self._data.clear()
        self._has_data = False
        self._oversized = False
        self._event = ""
