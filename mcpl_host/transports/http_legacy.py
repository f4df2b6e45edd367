"""The legacy HTTP+SSE transport of MCP 2024-11-05, as a mode of the HTTP transport.

A mode, not a transport of its own: it is :class:`~.http.HttpTransport` with another
way to carry lines, so that the fallback (http_fallback.py) can switch to it in the
middle of a connect, under the connection's feet. What it shares with Streamable HTTP
(the headers, an exchange with authorization, delivering and settling requests, the
transport's end) it uses through the core's public surface (http_core.py).

The host GETs the server's URL with ``Accept: text/event-stream``. The stream's first
event, ``endpoint``, names (as a URI reference resolved against that URL) where every
message of the host's goes, each in a POST of its own (answered 2xx, typically 202,
with nothing of MCP in the body); what the server sends (its answers included) arrives
as ``message`` events on the GET stream. The stream's end is the session's end: the
transport ends, and the connection's reconnect rule applies as on any transport.

What is checked, as the official SDKs check it and a little more: the endpoint must be
on the SSE URL's origin (scheme, host and port: the TypeScript SDK's rule; another
origin would receive the host's messages, credentials included), printable ASCII, at
most :data:`ENDPOINT_MAX_BYTES`; it must come within the target's timeout, before the
stream ends, and before the host has held more than that bound of the stream's first
event. Each is a :class:`~mcpl_host.TransportError` with its own ``reason``, never a
wait without end. Everything else is the Streamable HTTP transport's own: its headers,
``auth`` (a 401 on the GET or a POST answered by the same machinery), the pool, the
event decoder and its bound, the redaction.
"""

from __future__ import annotations

from http import HTTPStatus
from typing import TYPE_CHECKING, Any, Final, NamedTuple
from urllib.parse import urljoin, urlsplit

import trio

from ..protocol.errors import TransportError
from ..protocol.origins import origin
from ..protocol.redact import log_value
from ..protocol.sse import SseDecoder, SseEvent
from .http_body import content_kind, read_chunks
from .http_pool import HttpResponse, ReadError, RemoteProtocolError

__all__ = [
    "ENDPOINT_MAX_BYTES",
    "LegacySession",
    "NoStream",
    "endpoint_path",
    "status_text",
]

if TYPE_CHECKING:
    from .http_core import HttpCore


ENDPOINT_MAX_BYTES: Final = 8192  # the endpoint goes in every POST's request line
_ACCEPT_EVENTS: Final = b"text/event-stream"
_DRAINED: Final = 65536  # bytes of a POST's answer read to keep its connection


class NoStream(NamedTuple):
    """The GET was answered, but not with an event stream: no legacy server there."""

    status: int
    kind: str  # the answer's media type

    def describe(self) -> str:
        shown = status_text(self.status)
        if self.status == 200:
            return f"{shown}, {log_value(self.kind or 'no Content-Type', 64)}"
        return shown


def status_text(status: int) -> str:
    """``404 Not Found``: the status with its phrase, where HTTP has one."""
    try:
        return f"{status} {HTTPStatus(status).phrase}"
    except ValueError:
        return str(status)


def endpoint_path(sse_url: str, data: str) -> str:
    """The path and query to POST to, from the ``endpoint`` event's data.

    Raises:
        TransportError: ``reason="endpoint-refused"``: empty, too long, not printable
            ASCII, or on another origin than ``sse_url``.
    """
    reference = data.strip()
    if not reference:
        raise _refused("the endpoint event is empty")
    if len(reference.encode()) > ENDPOINT_MAX_BYTES:
        raise _refused(f"the endpoint is over {ENDPOINT_MAX_BYTES} bytes")
    if not reference.isascii() or any(ord(ch) <= 0x20 or ord(ch) == 0x7F for ch in reference):
        raise _refused("the endpoint is not printable ASCII")
    try:
        resolved = urljoin(sse_url, reference)
        found = origin(resolved)
    except ValueError:
        raise _refused("the endpoint is not a URI reference") from None
    if found != origin(sse_url):
        where = log_value(found, 120)
        raise _refused(f"the endpoint is on another origin ({where}) than the SSE stream")
    parts = urlsplit(resolved)
    return (parts.path or "/") + (f"?{parts.query}" if parts.query else "")


def _no_endpoint(core: HttpCore) -> TransportError:
    return TransportError(
        f"no endpoint event on the SSE stream of {core.description} "
        f"within {core.target.timeout:g} s",
        reason="no-endpoint",
    )


def _refused(why: str) -> TransportError:
    return TransportError(
        f"the legacy SSE server's endpoint was refused: {why}", reason="endpoint-refused"
    )


class _Opened(NamedTuple):
    path: str
    early: list[SseEvent]  # events read with the endpoint's, after it


async def _endpoint(
    response: HttpResponse, decoder: SseDecoder, core: HttpCore, deadline: float
) -> _Opened:
    """Read the stream up to its ``endpoint`` event, by ``deadline``; the endpoint resolved."""
    with trio.move_on_at(deadline):
        data, early = await _endpoint_event(response, decoder, core.description)
        return _Opened(endpoint_path(core.target.url, data), early)
    raise _no_endpoint(core)


async def _endpoint_event(
    response: HttpResponse, decoder: SseDecoder, description: str
) -> tuple[str, list[SseEvent]]:
    while True:
        try:
            chunk = await response.read_chunk()
        except (ReadError, RemoteProtocolError):
            chunk = b""
        if not chunk:
            raise TransportError(
                f"the SSE stream of {description} ended before its endpoint event",
                reason="no-endpoint",
            )
        events = decoder.feed(chunk)
        for index, event in enumerate(events):
            if event.event == "endpoint":
                return event.data, events[index + 1 :]
        # Nothing could have been asked yet: what comes before the endpoint is not
        # an answer to anything, and held only up to the endpoint's bound.
        if decoder.dropped or decoder.held > ENDPOINT_MAX_BYTES + len(b"data: "):
            raise _refused(f"its first event is over {ENDPOINT_MAX_BYTES} bytes")


class LegacySession:
    """One HTTP+SSE session: the GET stream (read by :meth:`listen`) and the endpoint
    every message is POSTed to (:meth:`exchange`)."""

    def __init__(
        self,
        core: HttpCore,
        response: HttpResponse,
        decoder: SseDecoder,
        opened: _Opened,
    ) -> None:
        self._core = core
        self._response = response
        self._decoder = decoder
        self._early = opened.early
        self.path = opened.path
        self._target = core.target_of(opened.path)

    @classmethod
    async def open(cls, core: HttpCore) -> LegacySession | NoStream:
        """GET the target's URL, and read its stream up to the endpoint event, within
        the target's timeout. :class:`NoStream` when the answer is not an event stream.

        Raises:
            TransportError: the endpoint was refused, or did not come in time
                (``reason="no-endpoint"``).
            AuthorizationRequired, AuthorizationError: the GET was not authorized.
            HttpClientError: the GET itself failed (``ConnectError``: no connection).
        """
        target = core.target
        deadline = trio.current_time() + target.timeout
        headers = core.headers(_ACCEPT_EVENTS)
        response = await core.open(b"GET", headers, may_authorize=True)
        try:
            kind = content_kind(response)
            if response.status_code != 200 or kind != "text/event-stream":
                response.close()
                return NoStream(response.status_code, kind)
            decoder = SseDecoder(core.max_message_bytes)
            opened = await _endpoint(response, decoder, core, deadline)
        except BaseException:
            response.close()
            raise
        return cls(core, response, decoder, opened)

    async def listen(self) -> None:
        """Read the GET stream to its end, handing each ``message`` event to the
        connection; its end (or a broken read) ends the transport."""
        core = self._core
        decoder = self._decoder
        dropped = decoder.dropped
        reason = "eof"

        async def take(chunk: bytes) -> bool:
            nonlocal dropped
            for event in decoder.feed(chunk):
                await self._take(event)
            if decoder.dropped != dropped:
                dropped = decoder.dropped
                await core.dropped_event(None)
            return True

        with self._response:
            try:
                for event in self._early:
                    await self._take(event)
                self._early = []
                await read_chunks(self._response, take)
            except (ReadError, RemoteProtocolError):
                reason = "read-failed"
        core.end(reason)

    async def _take(self, event: SseEvent) -> None:
        await self._core.take_event(event, None)  # a message, else nothing

    async def exchange(self, line: bytes, waiting: set[Any]) -> None:
        """POST ``line`` to the endpoint. Its answers come on the GET stream; an HTTP
        error settles the requests it carried at once, but a 404 (the server forgot the
        session), which ends the transport."""
        core = self._core
        headers = core.headers()
        headers.append((b"Content-Type", b"application/json"))
        response = await core.open(
            b"POST", headers, line, may_authorize=bool(waiting), target=self._target
        )
        with response:
            status = response.status_code
            if 200 <= status < 300:
                waiting.clear()  # answered on the GET stream, or never (a notification)
                # Read to its end (bounded) so that the connection is kept for the next.
                seen = 0

                async def drain(chunk: bytes) -> bool:
                    nonlocal seen
                    seen += len(chunk)
                    return seen <= _DRAINED

                with trio.move_on_after(core.target.timeout):
                    await read_chunks(response, drain)
                return
            body = await core.body(response)
        if status == 404:
            # The server forgot the session: as for Streamable HTTP, the transport ends
            # and its requests are the connection's to rebind or fail (a new session).
            core.log.info("legacy session gone (404): the transport ends")
            core.end("session-expired")
            return
        await core.refused(status, body or b"", waiting)
