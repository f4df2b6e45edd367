#!/usr/bin/env python3
"""The benchmark's Streamable HTTP server: ``bench/server.py``'s answers over a
hand-written HTTP/1.1 on one asyncio protocol, as cheap per request as Python allows, so
that what a benchmark measures is the client.

    python bench/http_server.py [--port 0]   # prints "http://127.0.0.1:PORT/mcp", serves

What it speaks of Streamable HTTP (MCP 2025-03-26 to 2025-11-25), enough for every client
of ``bench/run.py`` and no more:

- ``POST /mcp`` with one JSON-RPC message: a request is answered with ``200`` and an
  ``application/json`` body (never an event stream), a notification or a response with
  ``202``; ``initialize`` issues an ``Mcp-Session-Id`` (and agrees to the client's
  revision when it is 2025-03-26, 2025-06-18 or 2025-11-25), and a later request naming
  an unknown session gets ``404``; one naming none is served (the benchmark's clients
  all send it);
- methods it does not know (``server/discover``, which mcpl_host and the Python SDK may
  ask first) get JSON-RPC ``-32601`` at once, so no client waits on a timeout;
- ``GET /mcp`` is ``405`` (no standalone event stream), ``DELETE /mcp`` ends the session
  with ``200``;
- keep-alive, and pipelined requests (each chunk read is parsed for every complete
  request, and their answers go out in one write). Bodies need ``Content-Length``
  (every client sends it); ``Transfer-Encoding: chunked`` gets ``411`` and a close.

No framework: one ``asyncio.Protocol`` per connection; the headers are searched, not
parsed into a mapping (three are read: ``Content-Length``, ``Mcp-Session-Id``,
``Connection``). docs/performance.md says why this and not node's ``http`` module.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import sys

import msgspec
import server  # bench/server.py, beside this script: the same answers as over stdio

SUPPORTED = (b"2025-11-25", b"2025-06-18", b"2025-03-26")
PATH = b"/mcp"
_CHUNKED = b"\r\ntransfer-encoding: chunked"
_PARSE_ERROR = b'{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}'
_NO_SESSION = b'{"jsonrpc":"2.0","id":null,"error":{"code":-32001,"message":"Session not found"}}'


def _response(status: bytes, body: bytes = b"", extra: bytes = b"") -> bytes:
    head = b"HTTP/1.1 " + status + b"\r\n" + extra
    if body:
        head += b"Content-Type: application/json\r\n"
    return head + b"Content-Length: %d\r\n\r\n" % len(body) + body


_ACCEPTED = _response(b"202 Accepted")
_DELETED = _response(b"200 OK")
_NOT_ALLOWED = _response(b"405 Method Not Allowed", extra=b"Allow: POST, DELETE\r\n")
_NOT_FOUND = _response(b"404 Not Found")
_LENGTH_REQUIRED = _response(b"411 Length Required", extra=b"Connection: close\r\n")
_BAD_REQUEST = _response(b"400 Bad Request", extra=b"Connection: close\r\n")


def _header(head: bytes, lowered: bytes, name: bytes) -> bytes | None:
    """The value of header ``name`` (lower case, as ``b"\\r\\nname:"``), found in the
    lowered copy of ``head`` and read from ``head`` itself."""
    at = lowered.find(name)
    if at < 0:
        return None
    start = at + len(name)
    end = head.find(b"\r\n", start)
    return head[start : end if end >= 0 else len(head)].strip()


class Sessions:
    """The sessions issued by ``initialize`` and not ended by ``DELETE``."""

    def __init__(self) -> None:
        self._live: set[bytes] = set()

    def issue(self) -> bytes:
        session = os.urandom(16).hex().encode()
        self._live.add(session)
        return session

    def known(self, session: bytes) -> bool:
        return session in self._live

    def end(self, session: bytes) -> None:
        self._live.discard(session)


def serve_post(body: bytes, session: bytes | None, sessions: Sessions) -> bytes:
    """The HTTP response to one POST's JSON-RPC body."""
    if session is not None and not sessions.known(session):
        return _response(b"404 Not Found", _NO_SESSION)
    try:
        msg = server.decode(body)
    except msgspec.DecodeError:
        return _response(b"400 Bad Request", _PARSE_ERROR)
    answer = server.respond(msg, SUPPORTED)
    if not answer:
        return _ACCEPTED
    if msg.method == "initialize":
        return _response(b"200 OK", answer, b"Mcp-Session-Id: " + sessions.issue() + b"\r\n")
    return _response(b"200 OK", answer)


class HttpMcp(asyncio.Protocol):
    """One keep-alive connection: requests out of the bytes received, answers back."""

    trace = False  # --trace: one line per request on stderr

    def __init__(self, sessions: Sessions) -> None:
        self._sessions = sessions
        self._buffer = bytearray()
        self._scanned = 0  # the buffer's bytes already searched for the end of the head
        self._transport: asyncio.Transport | None = None
        self._request = b""

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self._transport = transport
        if self.trace:
            print("connection opened", file=sys.stderr)

    def data_received(self, data: bytes) -> None:
        assert self._transport is not None
        self._buffer += data
        out: list[bytes] = []
        close = False
        while not close:
            answer, close = self._next()
            if answer is None:
                break
            out.append(answer)
            if self.trace:
                print(f"{self._request!r} -> {answer[9:12].decode()}", file=sys.stderr)
        if out:
            self._transport.write(b"".join(out))
        if close:
            self._transport.close()

    def _next(self) -> tuple[bytes | None, bool]:
        """The answer to the buffer's first complete request, and whether to close
        after it; ``(None, False)`` while the request is not all there."""
        buffer = self._buffer
        end = buffer.find(b"\r\n\r\n", max(0, self._scanned - 3))
        if end < 0:
            self._scanned = len(buffer)
            return None, False
        head = bytes(buffer[:end])
        lowered = head.lower()
        if _CHUNKED in lowered:
            return _LENGTH_REQUIRED, True
        length = _header(head, lowered, b"\r\ncontent-length:")
        if length is not None and not length.isdigit():
            return _BAD_REQUEST, True
        size = int(length) if length else 0
        start = end + 4
        if len(buffer) < start + size:
            self._scanned = end  # the end of the head is found again at once
            return None, False
        body = bytes(buffer[start : start + size])
        del buffer[: start + size]
        self._scanned = 0
        close = _header(lowered, lowered, b"\r\nconnection:") == b"close"
        if self.trace:
            self._request = head.partition(b" HTTP/")[0] + b" " + body[:90]
        method, _, rest = head.partition(b" ")
        path = rest.partition(b" ")[0].partition(b"?")[0]
        if path != PATH:
            return _NOT_FOUND, close
        session = _header(head, lowered, b"\r\nmcp-session-id:")
        if method == b"POST":
            return serve_post(body, session, self._sessions), close
        if method == b"DELETE":
            if session is not None:
                self._sessions.end(session)
            return _DELETED, close
        return _NOT_ALLOWED, close


async def serve(port: int) -> None:
    sessions = Sessions()
    loop = asyncio.get_running_loop()
    listener = await loop.create_server(
        lambda: HttpMcp(sessions), "127.0.0.1", port, backlog=1024, reuse_address=True
    )
    bound = listener.sockets[0].getsockname()[1]
    print(f"http://127.0.0.1:{bound}/mcp", flush=True)
    async with listener:
        await listener.serve_forever()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--port", type=int, default=0, help="0: any free port")
    parser.add_argument("--trace", action="store_true", help="each request on stderr")
    args = parser.parse_args()
    HttpMcp.trace = args.trace
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(serve(args.port))


if __name__ == "__main__":
    main()
