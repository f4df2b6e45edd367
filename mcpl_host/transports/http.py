"""The Streamable HTTP transport: MCP over HTTP POST and server-sent events (httpx).

The connection speaks newline-delimited JSON over a byte stream; this transport is that
stream over HTTP. Every line the connection writes (a message, or a batch on
2025-03-26) is POSTed on its own, with ``Accept: application/json, text/event-stream``;
the answer is JSON (one line for the connection), an event stream (one line per event,
resumed with ``Last-Event-ID`` after the server's ``retry`` when it is cut before every
request of the POST was answered), or 202 (a notification or a response: nothing
comes back). Once the session is initialized a GET stream carries what the server sends
on its own (405: the server has none). The server's ``Mcp-Session-Id`` goes back on
every request, ``MCP-Protocol-Version`` too where the agreed revision's profile says so
(2025-06-18 on), and closing sends DELETE (405 is an answer too). The agreed revision is
the one the connection accepted (:meth:`HttpTransport.use_revision`), never merely the
one the server answered: a revision outside the allowlist fails the connect, and the
closing DELETE must not claim it.

A 404 on a live session ends the transport with the reason ``session-expired``: the
connection starts a new session with a fresh initialize and rebinds what was pending by
the rule of a reconnect (docs/reconnect.md). An HTTP error to a POST settles its
requests with the server's JSON-RPC error when the body is one, else with a -32603
error naming the status, so no request waits for its timeout; an answer that is an array
where the revision in force has no batches is refused by the connection, and its
requests are settled the same way. Header values are
secrets: no log line, error or trace shows them.
"""

from __future__ import annotations

import contextlib
import math
from typing import Any, Final

import httpx
import msgspec
import trio

from .._log import get_logger
from ..protocol.errors import TransportError
from ..protocol.profiles import PROFILES
from ..protocol.redact import Redactor
from ..protocol.sse import SseDecoder
from .http_target import HttpTarget, describe_http

__all__ = ["HttpStream", "HttpTransport", "open_http"]

_log = get_logger("mcpl_host.transports")

_ACCEPT_POST: Final = "application/json, text/event-stream"
_DEFAULT_RETRY: Final = 1.0  # seconds before resuming a stream the server gave no retry for
_MAX_RESUMES: Final = 10  # resumptions of one POST's stream before its requests fail
_DELETE_BOUND: Final = 2.0
_INBOUND_BUFFER: Final = 64


class _Peek(msgspec.Struct):
    """What the transport needs of a message: its id and whether it is a request."""

    id: Any = None
    method: str | None = None


_peek_one = msgspec.json.Decoder(_Peek)
_peek_many = msgspec.json.Decoder(list[_Peek])


def _peek(line: bytes) -> list[_Peek]:
    """The messages of a line (a batch has several); nothing when it is not JSON-RPC."""
    try:
        if line.lstrip()[:1] == b"[":
            return _peek_many.decode(line)
        return [_peek_one.decode(line)]
    except (msgspec.DecodeError, ValueError):
        return []


class HttpStream(trio.abc.Stream):
    """The connection's byte stream: lines written become POSTs, what the server sends
    comes back as lines. ``end_reason`` says why the stream ended, when it did on the
    server's word (``session-expired``)."""

    def __init__(self, transport: HttpTransport) -> None:
        self._transport = transport
        self.end_reason: str | None = None

    async def send_all(self, data: bytes | bytearray | memoryview) -> None:
        await trio.lowlevel.checkpoint()
        for line in bytes(data).split(b"\n"):
            if not line.strip():
                continue
            messages = _peek(line)
            if any(m.method == "notifications/initialized" for m in messages):
                await self._transport.send_initialized(line, messages)
            else:
                self._transport.post(line, messages)

    async def wait_send_all_might_not_block(self) -> None:
        await trio.lowlevel.checkpoint()

    async def receive_some(self, max_bytes: int | None = None) -> bytes:  # noqa: ARG002
        # One message (a line) at a time, whatever max_bytes says: the framer takes it.
        try:
            return await self._transport.inbound.receive()
        except trio.EndOfChannel:
            return b""

    async def aclose(self) -> None:
        await self._transport.aclose()


class HttpTransport:
    """One session with a Streamable HTTP server."""

    def __init__(
        self,
        target: HttpTarget,
        *,
        redactor: Redactor,
        max_message_bytes: int,
        client: httpx.AsyncClient,
    ) -> None:
        self.target = target
        self.description = describe_http(target)
        self._redactor = redactor
        self._max = max_message_bytes
        self._client = client
        self.stream = HttpStream(self)
        self._send, self.inbound = trio.open_memory_channel[bytes](_INBOUND_BUFFER)
        self.session_id: str | None = None
        # The revision in force: set by the connection once it accepted the server's
        # answer, so a refused revision never reaches a header.
        self.protocol_version: str | None = None
        self._listening = False
        self._listen_ready = trio.Event()  # the GET stream answered (or failed)
        self._tasks: trio.Nursery | None = None
        self._closed = False
        self._done = trio.Event()
        self._log = _log.bind(target=self.description)

    # -- lifetime ---------------------------------------------------------------------

    async def serve(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Run the transport's tasks (POSTs, the GET stream) until it is closed."""
        async with trio.open_nursery() as tasks:
            self._tasks = tasks
            task_status.started()
            await self._done.wait()
            tasks.cancel_scope.cancel()

    async def aclose(self) -> None:
        """End the session (DELETE, bounded; 405 accepted) and every task; idempotent."""
        if self._closed:
            return
        self._closed = True
        with trio.CancelScope(shield=True):
            if self.session_id is not None:
                with trio.move_on_after(_DELETE_BOUND), contextlib.suppress(httpx.HTTPError):
                    response = await self._client.delete(self.target.url, headers=self._headers())
                    self._log.debug("session deleted", status=response.status_code)
            self._done.set()
            self._send.close()
            await self._client.aclose()

    def use_revision(self, revision: str) -> None:
        """The connection accepted ``revision`` for this session: from now on its
        requests say so in ``MCP-Protocol-Version`` where the revision has the header."""
        self.protocol_version = revision

    def _end(self, reason: str) -> None:
        """The session is over on the server's word: the connection reads the end."""
        if self.stream.end_reason is None:
            self.stream.end_reason = reason
        self._send.close()

    # -- requests ---------------------------------------------------------------------

    def _headers(
        self, accept: str | None = None, last_event_id: str | None = None
    ) -> dict[str, str]:
        headers = dict(self.target.headers)
        if accept is not None:
            headers["Accept"] = accept
        if self.session_id is not None:
            headers["Mcp-Session-Id"] = self.session_id
        version = self.protocol_version
        profile = PROFILES.get(version) if version is not None else None
        if version is not None and profile is not None and profile.version_header:
            headers["MCP-Protocol-Version"] = version
        if last_event_id is not None:
            headers["Last-Event-ID"] = last_event_id
        return headers

    def post(self, line: bytes, messages: list[_Peek]) -> None:
        """POST one line in a task of its own (requests never wait for each other)."""
        if self._tasks is None or self._closed:
            raise trio.ClosedResourceError("the HTTP transport is closed")
        self._tasks.start_soon(self._post, line, messages)

    async def _post(self, line: bytes, messages: list[_Peek]) -> None:
        waiting = {m.id for m in messages if m.method is not None and m.id is not None}
        headers = self._headers(_ACCEPT_POST)
        headers["Content-Type"] = "application/json"
        try:
            async with self._client.stream(
                "POST", self.target.url, content=line, headers=headers
            ) as response:
                if self._expired(response):
                    return
                if self.session_id is None and "mcp-session-id" in response.headers:
                    self.session_id = response.headers["mcp-session-id"]
                status = response.status_code
                kind = _kind(response)
                if status == 202 or (200 <= status < 300 and not waiting and kind == ""):
                    return
                if 200 <= status < 300 and kind == "text/event-stream":
                    await self._events(response, waiting)
                elif 200 <= status < 300 and kind == "application/json":
                    await self._json(await self._body(response), waiting)
                else:
                    body = await self._body(response)
                    await self._refused(status, body, waiting)
        except Exception as exc:  # httpx's errors, or a bug: never out of the transport
            self._log.warning(
                "HTTP request failed", error=type(exc).__name__, detail=self._safe(str(exc))
            )
            self._end("read-failed")

    async def send_initialized(self, line: bytes, messages: list[_Peek]) -> None:
        """``notifications/initialized``, then the GET stream opened (or refused) before
        the handshake ends: a server may send its first request on it at once."""
        if self._tasks is None or self._closed:
            raise trio.ClosedResourceError("the HTTP transport is closed")
        await self._post(line, messages)
        if not self._listening:
            self._listening = True
            self._tasks.start_soon(self._listen)
            with trio.move_on_after(self.target.timeout):
                await self._listen_ready.wait()

    def _expired(self, response: httpx.Response) -> bool:
        if response.status_code == 404 and self.session_id is not None:
            self._log.info("session expired (404): a new session starts")
            self._end("session-expired")
            return True
        return False

    async def _body(self, response: httpx.Response) -> bytes:
        body = bytearray()
        async for chunk in response.aiter_bytes():
            body += chunk
            if len(body) > self._max:
                self._log.warning("HTTP body dropped", reason=f"over {self._max} bytes")
                return b""
        return bytes(body)

    async def _json(self, body: bytes, waiting: set[Any]) -> None:
        await self._take(body, waiting)
        await self._unanswered(waiting, "the server's JSON answer left it out")

    async def _refused(self, status: int, body: bytes, waiting: set[Any]) -> None:
        answers = [m for m in _peek(body) if m.method is None and m.id in waiting]
        if answers:
            await self._json(body, waiting)
            return
        self._log.warning("HTTP error", status=status)
        await self._unanswered(waiting, f"HTTP {status}")

    async def _take(self, payload: bytes, waiting: set[Any]) -> None:
        """Hand ``payload`` (a JSON body, or an event's data) to the connection and
        strike the requests it answers off ``waiting``. An array that the revision in
        force refuses answers nothing; the reader fails the requests it carried answers
        to, as on every transport."""
        messages = _peek(payload)
        # A server request may reuse an id; an id of another kind answers nothing of ours.
        waiting -= {m.id for m in messages if m.method is None and type(m.id) in (int, str)}
        await self._deliver(payload)

    async def _unanswered(self, waiting: set[Any], why: str) -> None:
        """Settle the requests a POST will never answer, rather than let them wait."""
        for request_id in sorted(waiting, key=repr):
            error = {"code": -32603, "message": f"no answer over HTTP: {why}"}
            answer = {"jsonrpc": "2.0", "id": request_id, "error": error}
            await self._deliver(msgspec.json.encode(answer))
        waiting.clear()

    async def _deliver(self, payload: bytes) -> None:
        if not payload.strip():
            return
        # JSON allows CR and LF only between tokens: as spaces the message is one line.
        line = payload.replace(b"\r", b" ").replace(b"\n", b" ") + b"\n"
        with contextlib.suppress(trio.ClosedResourceError, trio.BrokenResourceError):
            await self._send.send(line)

    # -- event streams ----------------------------------------------------------------

    async def _events(self, response: httpx.Response, waiting: set[Any]) -> None:
        """An answer as an event stream; resumed while requests of it wait."""
        decoder = SseDecoder(self._max)
        await self._read_events(response, decoder, waiting)
        resumes = 0
        while waiting and not self._closed:
            if decoder.last_event_id is None or resumes == _MAX_RESUMES:
                await self._unanswered(waiting, "its event stream ended before the answer")
                return
            resumes += 1
            await trio.sleep(_retry_seconds(decoder))
            headers = self._headers("text/event-stream", decoder.last_event_id)
            async with self._client.stream("GET", self.target.url, headers=headers) as resumed:
                if self._expired(resumed):
                    return
                kind = _kind(resumed)
                if resumed.status_code != 200 or kind != "text/event-stream":
                    await self._unanswered(
                        waiting, f"resuming its stream: HTTP {resumed.status_code}"
                    )
                    return
                self._log.debug("event stream resumed", attempt=resumes)
                await self._read_events(resumed, decoder, waiting)

    async def _read_events(
        self, response: httpx.Response, decoder: SseDecoder, waiting: set[Any]
    ) -> None:
        with contextlib.suppress(httpx.ReadError, httpx.RemoteProtocolError):
            async for chunk in response.aiter_bytes():
                for event in decoder.feed(chunk):
                    if event.event != "message" or not event.data.strip():
                        continue  # a priming event, or one that is not a message
                    await self._take(event.data.encode(), waiting)

    async def _listen(self) -> None:
        """The GET stream: what the server sends outside any answer."""
        decoder = SseDecoder(self._max)
        try:
            while not self._closed:
                headers = self._headers("text/event-stream", decoder.last_event_id)
                try:
                    async with self._client.stream("GET", self.target.url, headers=headers) as r:
                        self._listen_ready.set()
                        if self._expired(r):
                            return
                        if r.status_code != 200 or _kind(r) != "text/event-stream":
                            self._log.debug("no GET stream", status=r.status_code)
                            return
                        await self._read_events(r, decoder, set())
                except Exception as exc:  # httpx's errors, or a bug: try again later
                    self._log.debug("GET stream failed", error=type(exc).__name__)
                    self._listen_ready.set()
                await trio.sleep(_retry_seconds(decoder))
        finally:
            self._listen_ready.set()

    def _safe(self, text: str) -> str:
        return self._redactor.log_value(text)


def _kind(response: httpx.Response) -> str:
    kind: str = response.headers.get("content-type", "")
    return kind.split(";", maxsplit=1)[0].strip().lower()


def _retry_seconds(decoder: SseDecoder) -> float:
    retry = decoder.retry_ms
    seconds = retry / 1000 if retry is not None else _DEFAULT_RETRY
    return seconds if math.isfinite(seconds) else _DEFAULT_RETRY


async def open_http(
    target: HttpTarget,
    *,
    nursery: trio.Nursery,
    redactor: Redactor,
    max_message_bytes: int | None = None,
) -> HttpTransport:
    """Open a session with the server at ``target`` (nothing is sent until the
    connection writes initialize). The transport's tasks run in ``nursery``.

    Raises:
        TransportError: the HTTP client could not be set up.
    """
    timeout = httpx.Timeout(target.timeout, read=None)  # a stream may stay quiet
    verify: Any = target.ssl_context if target.ssl_context is not None else True
    try:
        client = httpx.AsyncClient(timeout=timeout, verify=verify, follow_redirects=False)
    except (OSError, ValueError) as exc:
        raise TransportError(
            f"cannot set up HTTP for {describe_http(target)}: {type(exc).__name__}",
            reason="connect-failed",
        ) from None
    transport = HttpTransport(
        target,
        redactor=redactor,
        max_message_bytes=max_message_bytes or 16 * 1024 * 1024,
        client=client,
    )
    await nursery.start(transport.serve)
    return transport
