"""Newline-delimited JSON framing with a bounded buffer.

One JSON value per line. A line longer than ``max_message_bytes`` is never held whole:
once the pending bytes pass the bound they are dropped as they arrive, only counted,
until the line's newline, and the line is reported as :class:`OversizedLine`. The
buffer therefore never holds more than ``max_message_bytes`` plus one fed chunk.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

__all__ = ["DEFAULT_MAX_MESSAGE_BYTES", "LineDecoder", "OversizedLine"]

DEFAULT_MAX_MESSAGE_BYTES: Final = 16 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class OversizedLine:
    """A line that exceeded the bound and was dropped; ``size`` counts its bytes."""

    size: int


class LineDecoder:
    """Splits a byte stream into lines (``bytes`` without the newline).

    Feed it chunks of any size, byte by byte included: it yields the same lines. Empty
    lines (and a lone ``\\r``) are skipped; any other line, JSON or not, is yielded for
    the envelope to judge.
    """

    __slots__ = ("_buf", "_dropping", "_max", "_scanned")

    def __init__(self, max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES) -> None:
        if max_message_bytes < 1:
            raise ValueError("max_message_bytes must be positive")
        self._max = max_message_bytes
        self._buf = bytearray()
        self._scanned = 0  # bytes of _buf known to hold no newline
        self._dropping: int | None = None  # bytes dropped so far of an oversized line

    @property
    def buffered(self) -> int:
        """Bytes held right now (what the bound applies to)."""
        return len(self._buf)

    def feed(self, data: bytes | bytearray) -> list[bytes | OversizedLine]:
        """Take the next chunk; return the complete lines it finished, in order."""
        out: list[bytes | OversizedLine] = []
        if self._dropping is not None:
            nl = data.find(b"\n")
            if nl < 0:
                self._dropping += len(data)
                return out
            out.append(OversizedLine(self._dropping + nl))
            self._dropping = None
            data = data[nl + 1 :]
        buf = self._buf
        buf += data
        start = 0
        nl = buf.find(b"\n", self._scanned)
        while nl >= 0:
            self._emit(buf, start, nl, out)
            start = nl + 1
            nl = buf.find(b"\n", start)
        if start:
            del buf[:start]
        if len(buf) > self._max:
            # The line is already longer than allowed: stop keeping it.
            self._dropping = len(buf)
            buf.clear()
        self._scanned = len(buf)
        return out

    def close(self) -> list[bytes | OversizedLine]:
        """End of stream: a last line without a newline still counts."""
        out: list[bytes | OversizedLine] = []
        if self._dropping is not None:
            out.append(OversizedLine(self._dropping))
            self._dropping = None
        elif self._buf:
            self._emit(self._buf, 0, len(self._buf), out)
            self._buf.clear()
        self._scanned = 0
        return out

    def _emit(self, buf: bytearray, start: int, end: int, out: list[bytes | OversizedLine]) -> None:
        # The bound counts every byte before the newline, a CR included, so the verdict
        # does not depend on how the line was chunked.
        if end - start > self._max:
            out.append(OversizedLine(end - start))
            return
        if end > start and buf[end - 1] == 0x0D:  # tolerate CRLF
            end -= 1
        if end > start:
            out.append(bytes(buf[start:end]))
