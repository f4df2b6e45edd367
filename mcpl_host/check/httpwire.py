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
import functools
import hashlib
from collections import deque
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

import httpx
import msgspec
import trio

from ..protocol.profiles import KNOWN_REVISIONS
from ..protocol.redact import Redactor
from ..protocol.request_headers import request_headers
from ..protocol.sse import SseDecoder, SseEvent
from ..transports.targets import HttpTarget
from .wire import (
    KEPT_BYTES,
    MAX_LINE_BYTES,
    MODERN,
    UNANSWERED,
    Received,
    Wire,
    is_response,
    request_ids,
    same_id,
)

__all__ = ["Exchange", "HttpWire", "Posted"]

ACCEPT: Final = "application/json, text/event-stream"
# Lines waiting to be read; a POST's reader waits when the probe reads no more.
_QUEUE: Final = 256
# POSTs in flight at once past which the server's own requests go unanswered: a server
# streaming requests would otherwise have the checker open one POST for each.
MAX_POSTS: Final = 32
# Refusal bodies remembered (is_refusal), against a server that refuses every POST.
_REFUSALS: Final = 64


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


@dataclass(frozen=True, slots=True)
class Exchange:
    """One request of :meth:`HttpWire.http_request`: the status and headers, the events of
    an event stream (with their ids), or the messages of any other body."""

    posted: Posted
    events: list[SseEvent]
    body: list[bytes]

    def messages(self) -> list[Any]:
        """Every JSON value the answer carried (events' data, or the body); what is not
        JSON is left out (the transcript has it)."""
        out = []
        for raw in [e.data.encode() for e in self.events if e.data] + self.body:
            try:
                out.append(msgspec.json.decode(raw))
            except msgspec.DecodeError:
                continue
        return out


class HttpWire(Wire):
    """A wire to a Streamable HTTP endpoint. ``client`` (the wire's own: closed with it)
    is open for the HTTP probes' own requests; ``session_id`` is what the server handed
    out, ``posts`` every POST's outcome in the order they completed."""

    is_http = True

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
        self._nursery = nursery
        self._new_post = trio.Event()  # set (and replaced) as each POST begins answering
        self._send_lines, self._lines = trio.open_memory_channel[bytes | _Ended](_QUEUE)
        # The bytes of the lines waiting to be read: past KEPT_BYTES the POSTs' readers
        # wait (as they do past _QUEUE lines), so a server's unread lines hold at most
        # that much plus the line each reader has in hand.
        self.queued_bytes = 0
        self._drained = trio.Event()
        self._open_posts = 0
        # The digests of the last bodies of 4xx answers to notifications (not the bodies:
        # a pooled wire lives the whole run).
        self._refusals: deque[bytes] = deque(maxlen=_REFUSALS)

    def headers(self, line: bytes | None = None) -> dict[str, str]:
        """The headers a client sends with ``line`` (None: a GET or DELETE)."""
        headers = {**self.target.headers, "Accept": ACCEPT}
        if line is not None:
            headers["Content-Type"] = "application/json"
        if self.session_id is not None:
            headers["Mcp-Session-Id"] = self.session_id
        # Only a revision the checker knows: what the server answered may be anything,
        # and made-up text in a header would break the request, not judge the server.
        if self.version in KNOWN_REVISIONS and self.version >= "2025-06-18":
            headers["MCP-Protocol-Version"] = self.version
        if self.version == MODERN and line is not None:
            headers.update(_modern_headers(line))
        return headers

    def busy(self) -> bool:
        return self._open_posts >= MAX_POSTS

    async def _write(self, data: bytes) -> None:
        line = data.rstrip(b"\n")
        self._open_posts += 1
        self._nursery.start_soon(self._post, line, self.headers(line))

    async def http_request(
        self,
        verb: str,
        headers: Mapping[str, str],
        line: bytes | None = None,
        *,
        wait: float | None = None,
        until: Callable[[list[SseEvent]], bool] | None = None,
    ) -> Exchange | None:
        """One HTTP request with exactly ``headers`` (and ``line`` as its body), outside
        the wire's session bookkeeping: for the probes of the HTTP rules themselves.

        Two limits: the status and headers must come within the client's timeout (the
        check's); then a JSON body is read whole (bounded), an event stream until it
        ends, ``until(events so far)`` is true, or ``wait`` seconds (default: the
        client's timeout) pass, which suits a GET stream that never ends. None if the
        server could not be reached or sent no headers in time. Everything goes into
        the transcript."""
        if line is not None:
            self.note("→", line.decode("utf-8", "replace"))
            ids = _request_ids(line)
            if until is None and ids:
                # A stream held open after the response would cost the whole wait.
                until = functools.partial(_answered, ids)
        events: list[SseEvent] = []
        body: list[bytes] = []
        posted: Posted | None = None
        limit = self.client.timeout.read or 5.0

        async def deliver(data: bytes) -> None:
            body.append(data)

        with trio.move_on_after(limit) as scope:
            try:
                async with self.client.stream(verb, self.url, content=line, headers=headers) as r:
                    posted = Posted(r.status_code, r.headers)
                    self._note_status(verb, posted)
                    # The headers came in time: ``wait`` bounds the reading alone.
                    scope.deadline = trio.current_time() + (limit if wait is None else wait)
                    if posted.content_type == "text/event-stream":
                        await self._read_events(r, events, until)
                    else:
                        await self._read_body(r, posted, deliver)
            except (httpx.HTTPError, ValueError, UnicodeError) as exc:  # as in _post
                self.note("·", f"{verb} failed: {exc.__class__.__name__}")
                return None
        if posted is None:
            self.note("·", f"{verb}: no answer within {limit:g} s")
            return None
        for data in body:
            self.note("←", data.decode("utf-8", "replace"))
        return Exchange(posted, events, body)

    async def _read_events(
        self,
        response: httpx.Response,
        events: list[SseEvent],
        until: Callable[[list[SseEvent]], bool] | None,
    ) -> None:
        if until is not None and until(events):
            return  # nothing to wait for: the status was the point
        kept = 0

        async def keep(event: SseEvent) -> bool:
            nonlocal kept
            size = len(event.data or "")
            if len(events) >= _QUEUE or kept + size > KEPT_BYTES:
                # Bounded: a stream that never stops talking.
                self.note(
                    "·", f"past {_QUEUE} events or {KEPT_BYTES // 2**20} MiB: the rest unread"
                )
                return False
            kept += size
            events.append(event)
            shown = f"id {event.id}: " if event.id is not None else ""
            self.note("←", shown + (event.data or "(no data)"))
            return until is None or not until(events)

        await _each_event(response, keep)

    async def _post(self, line: bytes, headers: dict[str, str]) -> None:
        try:
            async with self.client.stream("POST", self.url, content=line, headers=headers) as r:
                posted = Posted(r.status_code, r.headers)
                self.posts.append(posted)
                self._new_post.set()
                self._new_post = trio.Event()
                self._note_status("POST", posted)
                session = r.headers.get("mcp-session-id")
                if session is not None and self.session_id is None:
                    self.session_id = session
                deliver = self._queue
                if 400 <= posted.status < 500 and _only_notifications(line):
                    # "If the server cannot accept the input, it MUST return an HTTP error
                    # status code ... The HTTP response body MAY comprise a JSON-RPC error
                    # response that has no id": the POST's refusal, not an answer.
                    deliver = functools.partial(self._deliver_refusal, deliver)
                await self._read_body(r, posted, deliver)
        except (httpx.HTTPError, ValueError, UnicodeError) as exc:
            # ValueError, UnicodeError: a header httpx cannot send (text of the server's
            # own, say) fails this request, not the probe.
            self.note("·", f"POST failed: {exc.__class__.__name__}")
        finally:
            self._open_posts -= 1
        # A request whose POST ended without its answer gets none: say so to answer().
        with contextlib.suppress(trio.ClosedResourceError, trio.BrokenResourceError):
            await self._send_lines.send(_Ended(_request_ids(line)))

    async def _queue(self, data: bytes) -> None:
        while self.queued_bytes > KEPT_BYTES:
            await self._drained.wait()
        self.queued_bytes += len(data)
        await self._send_lines.send(data)

    async def _deliver_refusal(
        self, deliver: Callable[[bytes], Awaitable[None]], data: bytes
    ) -> None:
        self._refusals.append(hashlib.sha256(data).digest())
        await deliver(data)

    def is_refusal(self, line: Received) -> bool:
        value = line.value
        return (
            hashlib.sha256(line.raw).digest() in self._refusals
            and isinstance(value, dict)
            and "error" in value
            and value.get("id") is None
        )

    def _note_status(self, verb: str, posted: Posted) -> None:
        shown = posted.content_type or "no content type"
        self.note("·", f"{verb} → HTTP {posted.status} ({shown})")

    async def _read_body(self, response: httpx.Response, posted: Posted, deliver: Any) -> None:
        if posted.content_type == "text/event-stream":

            async def forward(event: SseEvent) -> bool:
                if event.data:
                    try:
                        await deliver(event.data.encode())
                    except trio.ClosedResourceError:
                        return False  # the probe is done with this wire
                return True

            await _each_event(response, forward)
            return
        body = bytearray()
        with trio.CancelScope() as reading:  # a cancel, not a return: see _each_event
            async for chunk in response.aiter_bytes():
                if reading.cancel_called:
                    continue  # chunks already buffered come without a checkpoint
                body += chunk
                if len(body) > MAX_LINE_BYTES:
                    self.note("·", f"a body of over {MAX_LINE_BYTES} bytes, dropped")
                    body.clear()
                    reading.cancel()
        if body.strip():
            with contextlib.suppress(trio.ClosedResourceError, trio.BrokenResourceError):
                await deliver(bytes(body).strip())  # closed: the probe is done with the wire

    async def settle(self, timeout: float) -> None:
        # Each POST runs in its own task, so a notification may still be on its way
        # when the probe's next request goes out (and a DELETE could overtake it).
        with trio.move_on_after(timeout):
            while self._open_posts:
                await trio.sleep(0.01)

    async def posted(self, count: int, timeout: float) -> None:
        with trio.move_on_after(timeout):
            while len(self.posts) < count:
                await self._new_post.wait()

    async def _read(self) -> Any:
        while True:
            item = await self._lines.receive()
            if not isinstance(item, _Ended):
                self.queued_bytes -= len(item)
                self._drained.set()
                self._drained = trio.Event()
                return item
            self.forget(item.ids)  # the POST ended: no answer to them can come any more
            if any(same_id(self.awaiting, i) for i in item.ids):
                return UNANSWERED

    async def aclose(self) -> None:
        """End the wire and its client (which it owns)."""
        await self._send_lines.aclose()
        await self._lines.aclose()
        await self.client.aclose()


async def _each_event(
    response: httpx.Response, handle: Callable[[SseEvent], Awaitable[bool]]
) -> None:
    """Hand each event of ``response``'s event stream to ``handle`` until the stream ends
    or ``handle`` returns False."""
    decoder = SseDecoder(MAX_LINE_BYTES)
    # Reading stops by a cancel, not a return: the cancel ends httpx's chain of stream
    # iterators, where a return would leave them to the garbage collector.
    with trio.CancelScope() as reading:
        async for chunk in response.aiter_bytes():
            for event in decoder.feed(chunk):
                if reading.cancel_called:
                    break  # chunks already buffered come without a checkpoint
                if not await handle(event):
                    reading.cancel()


def _answered(ids: list[Any], events: list[SseEvent]) -> bool:
    """Whether one of ``events`` is a response to one of ``ids``."""
    for event in events:
        try:
            value = msgspec.json.decode(event.data) if event.data else None
        except msgspec.DecodeError:
            continue
        if any(is_response(value, i) for i in ids):
            return True
    return False


def _only_notifications(line: bytes) -> bool:
    """Whether ``line`` holds notifications alone (a message or a batch)."""
    try:
        value = msgspec.json.decode(line)
    except msgspec.DecodeError:
        return False
    messages = value if isinstance(value, list) else [value]
    return bool(messages) and all(
        isinstance(m, dict) and "method" in m and "id" not in m for m in messages
    )


def _request_ids(line: bytes) -> list[Any]:
    """The ids of the requests ``line`` holds (a message or a batch)."""
    try:
        return request_ids(msgspec.json.decode(line))
    except msgspec.DecodeError:
        return []


def _modern_headers(line: bytes) -> dict[str, str]:
    """2026-07-28's headers for the message on ``line``, as the host's own transport
    derives them (protocol/request_headers.py: ``Mcp-Method``, ``Mcp-Name``, encoded
    where a value is not plain ASCII)."""
    try:
        message = msgspec.json.decode(line)
    except msgspec.DecodeError:
        return {}
    if not isinstance(message, dict) or not isinstance(message.get("method"), str):
        return {}
    return request_headers(message["method"], message.get("params"), revision=MODERN)
