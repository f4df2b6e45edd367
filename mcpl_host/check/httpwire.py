"""The wire over Streamable HTTP: each line sent is one POST, each message of its answer
(a JSON body, or the events of an event stream) one line received.

Like :class:`~.wire.StreamWire` it sends what it is given, as it is given: the checker
needs the server's answer to a broken body, not a transport's opinion of it. It adds
only the headers a client on the revision in use sends (``Accept``, ``Content-Type``,
the session id the server handed out, ``MCP-Protocol-Version`` from 2025-06-18 on, and
on 2026-07-28 ``Mcp-Method`` and ``Mcp-Name``), which an HTTP probe may replace or drop.
Each POST runs in a task of its own, so a request can be in flight while the next line
goes out (a cancellation, say). HTTP statuses and content types are in the transcript.

httpx is the HTTP client (already a dependency, for the authorization flow): a probe of
the HTTP rules needs every header and status as they were, which this transport's own
h11 pool hides behind the connection's needs.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from typing import Any, Final

import httpx
import msgspec
import trio

from ..protocol.redact import Redactor
from ..protocol.sse import SseDecoder
from ..transports.targets import HttpTarget
from .wire import MAX_LINE_BYTES, MODERN, UNANSWERED, Wire, same_id

__all__ = ["HttpWire", "Posted"]

ACCEPT: Final = "application/json, text/event-stream"
# Lines waiting to be read; a POST's reader waits when the probe reads no more.
_QUEUE: Final = 256


class _Ended:
    """Queued after a POST's last line: the request ids the POST carried."""

    def __init__(self, ids: list[Any]) -> None:
        self.ids = ids


class Posted:
    """What one POST came back with: its status, headers and content type."""

    def __init__(self, status: int, headers: httpx.Headers) -> None:
        self.status = status
        self.headers = headers
        self.content_type = headers.get("content-type", "").split(";")[0].strip().lower()


class HttpWire(Wire):
    """A wire to a Streamable HTTP endpoint. ``client`` (the wire's own: closed with it)
    is open for the HTTP probes' own requests; ``session_id`` is what the server handed
    out, ``posts`` every POST's outcome in the order they completed."""

    def __init__(
        self,
        target: HttpTarget,
        client: httpx.AsyncClient,
        nursery: trio.Nursery,
        redactor: Redactor,
    ) -> None:
        super().__init__(redactor)
        self.target = target
        self.url = target.url
        self.client = client
        self.session_id: str | None = None
        self.posts: list[Posted] = []
        self._nursery = nursery
        self._send_lines, self._lines = trio.open_memory_channel[bytes | _Ended](_QUEUE)
        self._open_posts = 0

    def headers(self, line: bytes | None = None) -> dict[str, str]:
        """The headers a client sends with ``line`` (None: a GET or DELETE)."""
        headers = {**self.target.headers, "Accept": ACCEPT}
        if line is not None:
            headers["Content-Type"] = "application/json"
        if self.session_id is not None:
            headers["Mcp-Session-Id"] = self.session_id
        if self.version is not None and self.version >= "2025-06-18":
            headers["MCP-Protocol-Version"] = self.version
        if self.version == MODERN and line is not None:
            headers.update(_modern_headers(line))
        return headers

    async def _write(self, data: bytes) -> None:
        line = data.rstrip(b"\n")
        self._open_posts += 1
        self._nursery.start_soon(self._post, line, self.headers(line))

    async def post(
        self, line: bytes, headers: Mapping[str, str]
    ) -> tuple[Posted, list[bytes]] | None:
        """POST ``line`` with exactly ``headers``; the outcome and the messages of the
        answer, read whole (None if the server could not be reached)."""
        out: list[bytes] = []
        try:
            async with self.client.stream("POST", self.url, content=line, headers=headers) as r:
                posted = Posted(r.status_code, r.headers)
                self._note_status("POST", posted)
                await self._read_body(r, posted, out.append)
        except httpx.HTTPError as exc:
            self.note("·", f"POST failed: {exc.__class__.__name__}")
            return None
        return posted, out

    async def _post(self, line: bytes, headers: dict[str, str]) -> None:
        try:
            async with self.client.stream("POST", self.url, content=line, headers=headers) as r:
                posted = Posted(r.status_code, r.headers)
                self.posts.append(posted)
                self._note_status("POST", posted)
                session = r.headers.get("mcp-session-id")
                if session is not None and self.session_id is None:
                    self.session_id = session
                await self._read_body(r, posted, self._send_lines.send)
        except httpx.HTTPError as exc:
            self.note("·", f"POST failed: {exc.__class__.__name__}")
        finally:
            self._open_posts -= 1
        # A request whose POST ended without its answer gets none: say so to answer().
        with contextlib.suppress(trio.ClosedResourceError, trio.BrokenResourceError):
            await self._send_lines.send(_Ended(_request_ids(line)))

    def _note_status(self, verb: str, posted: Posted) -> None:
        shown = posted.content_type or "no content type"
        self.note("·", f"{verb} → HTTP {posted.status} ({shown})")

    async def _read_body(self, response: httpx.Response, posted: Posted, deliver: Any) -> None:
        if posted.content_type == "text/event-stream":
            decoder = SseDecoder(MAX_LINE_BYTES)
            async for chunk in response.aiter_bytes():
                for event in decoder.feed(chunk):
                    if event.data:
                        await deliver(event.data.encode())
            return
        body = bytearray()
        async for chunk in response.aiter_bytes():
            body += chunk
            if len(body) > MAX_LINE_BYTES:
                self.note("·", f"a body of over {MAX_LINE_BYTES} bytes, dropped")
                return
        if body.strip():
            await deliver(bytes(body).strip())

    async def _read(self) -> Any:
        while True:
            item = await self._lines.receive()
            if not isinstance(item, _Ended):
                return item
            if any(same_id(self.awaiting, i) for i in item.ids):
                return UNANSWERED

    async def aclose(self) -> None:
        """End the wire and its client (which it owns)."""
        await self._send_lines.aclose()
        await self._lines.aclose()
        await self.client.aclose()


def _request_ids(line: bytes) -> list[Any]:
    """The ids of the requests ``line`` holds (a message or a batch)."""
    try:
        value = msgspec.json.decode(line)
    except msgspec.DecodeError:
        return []
    messages = value if isinstance(value, list) else [value]
    return [m["id"] for m in messages if isinstance(m, dict) and "id" in m and "method" in m]


def _modern_headers(line: bytes) -> dict[str, str]:
    """2026-07-28's ``Mcp-Method`` and ``Mcp-Name`` for the request on ``line``."""
    try:
        message = msgspec.json.decode(line)
    except msgspec.DecodeError:
        return {}
    if not isinstance(message, dict) or not isinstance(message.get("method"), str):
        return {}
    headers = {"Mcp-Method": message["method"]}
    params = message.get("params")
    if isinstance(params, dict):
        name = params.get("uri" if message["method"] == "resources/read" else "name")
        if isinstance(name, str) and name.isascii() and name.isprintable():
            headers["Mcp-Name"] = name
    return headers
