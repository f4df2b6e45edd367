"""The little of HTTP/1.1 the floor clients speak to ``bench/http_server.py``: prepared
POSTs, and the end of a response found in a buffer. Pure bytes, no I/O."""

from __future__ import annotations

from typing import Final
from urllib.parse import urlsplit

VERSION: Final = b"2025-11-25"


class Endpoint:
    """``url``'s host, port and path, and the requests to it."""

    def __init__(self, url: str) -> None:
        parts = urlsplit(url)
        assert parts.hostname is not None
        assert parts.port is not None
        self.host, self.port = parts.hostname, parts.port
        self._start = (
            b"POST "
            + parts.path.encode()
            + b" HTTP/1.1\r\nHost: "
            + parts.netloc.encode()
            + b"\r\n"
            b"Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"
        )

    def post(self, body: bytes, session: bytes | None = None) -> bytes:
        """A POST of ``body``, in the session (with its revision) when one is given."""
        headers = self._start
        if session is not None:
            headers += b"Mcp-Session-Id: " + session + b"\r\nMCP-Protocol-Version: " + VERSION
            headers += b"\r\n"
        return headers + b"Content-Length: %d\r\n\r\n" % len(body) + body


def header(head: bytes, name: bytes) -> bytes | None:
    """The value of header ``name`` (lower case) in a response's head."""
    lowered = head.lower()
    at = lowered.find(b"\r\n" + name + b":")
    if at < 0:
        return None
    start = at + len(name) + 3
    end = head.find(b"\r\n", start)
    return head[start : end if end >= 0 else len(head)].strip()


def response_end(buffer: bytes | bytearray) -> tuple[int, int] | None:
    """Where the first response of ``buffer`` ends its head and itself (its body is
    sized by ``Content-Length``), or None while its head is not all there."""
    end = buffer.find(b"\r\n\r\n")
    if end < 0:
        return None
    length = header(bytes(buffer[:end]), b"content-length")
    return end, end + 4 + int(length or 0)


def status(head: bytes) -> int:
    return int(head[9:12])
