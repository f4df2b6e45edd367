"""The Streamable HTTP carrier: POST exchanges, the GET stream, resumption, the session id.

Each line goes in a POST of its own with ``Accept: application/json,
text/event-stream``; the answer is JSON, an event stream (resumed with
``Last-Event-ID`` after the server's ``retry`` when it is cut before every request of
the POST was answered; on 2026-07-28, which has no resumption, reported to the
connection instead), or 202. The server's first ``Mcp-Session-Id`` is kept for every
later request (http_headers.py checks it first); a 404 on a live session ends the
transport with ``session-expired``. Once the session is initialized a GET stream
carries what the server sends on its own, reopened after the server's ``retry`` with a
floor and a backoff (sse_reopen.py); closing sends DELETE.

A refusal the fallback rule names (http_fallback.py) is handed to the fallback, which
may carry this POST, and every later line, over the legacy transport instead.
Everything an exchange shares with that transport is the core's (http_core.py).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final, NamedTuple

import msgspec
import trio

from ..protocol.discover import PROTOCOL_VERSION
from ..protocol.request_headers import ToolHeaders, request_headers
from ..protocol.sse import SseDecoder
from .http_body import content_kind, read_chunks
from .http_headers import Refused, echoable_event_id, session_id
from .http_pool import HttpResponse, ReadError, RemoteProtocolError
from .sse_reopen import Reopening, retry_seconds

if TYPE_CHECKING:
    from .http_core import HttpCore
    from .http_fallback import Fallback
    from .http_peek import Peek

__all__ = ["StreamableHttp"]

_ACCEPT_POST: Final = b"application/json, text/event-stream"
_ACCEPT_EVENTS: Final = b"text/event-stream"
_MAX_RESUMES: Final = 10  # resumptions of one POST's stream before its requests fail
_DELETE_BOUND: Final = 2.0
_plain = msgspec.json.Decoder()

# A request of the stateless revision names it in its _meta: the cheap test before its
# params are decoded for the headers they give.
_STATELESS_MARK: Final = PROTOCOL_VERSION.encode()


class _Read(NamedTuple):
    """How reading one event stream went."""

    messages: int  # messages handed to the connection
    settled: bool  # an oversized event failed the POST's requests: read no more


class StreamableHttp:
    """One transport's Streamable HTTP exchanges and its GET stream."""

    def __init__(self, core: HttpCore, fallback: Fallback) -> None:
        self._core = core
        self._fallback = fallback
        self._listening = False
        self._listen_ready = trio.Event()  # the GET stream answered (or failed)
        # The connection's, on the stateless revision: a tool's x-mcp-header annotations
        # (for Mcp-Param-*), and where requests whose response stream broke are reported.
        self.tool_headers: Callable[[object], ToolHeaders | None] = lambda _name: None
        self.on_broken: Callable[[list[Any]], None] | None = None

    def message_headers(self, messages: list[Peek]) -> dict[str, str]:
        """The headers of the stateless revision for a line of one message: its
        revision, method, name and annotated arguments (protocol/request_headers.py);
        none for a handshake-era line."""
        if len(messages) != 1 or messages[0].method is None:
            return {}
        message = messages[0]
        method = message.method
        assert method is not None
        revision = self._core.protocol_version if self._core.stateless else None
        raw = bytes(message.params)
        if revision is None and _STATELESS_MARK not in raw:
            return {}
        try:
            params = _plain.decode(raw)
        except (msgspec.DecodeError, RecursionError):
            params = None
        tool = None
        if method == "tools/call" and isinstance(params, dict):
            tool = self.tool_headers(params.get("name"))
        return request_headers(method, params, tool, revision=revision)

    async def exchange(
        self, line: bytes, waiting: set[Any], stateless: dict[str, str] | None = None
    ) -> None:
        """POST ``line`` and read its answer.

        Raises:
            as :meth:`HttpCore.open`, and HttpClientError (http_pool) when the exchange
            failed; TransportError when the fallback found no legacy server either.
        """
        core = self._core
        headers = core.headers(_ACCEPT_POST, stateless=stateless)
        headers.append((b"Content-Type", b"application/json"))
        with await core.open(b"POST", headers, line, may_authorize=bool(waiting)) as response:
            await self._answer(response, line, waiting, stateless=bool(stateless))

    async def _answer(
        self, response: HttpResponse, line: bytes, waiting: set[Any], *, stateless: bool = False
    ) -> None:
        core = self._core
        status = response.status_code
        if 200 <= status < 300:
            self._fallback.proven = True
        # A stateless POST has no session: an Mcp-Session-Id on its answer is not one to
        # keep (nor to end with DELETE), and a 404 is only that request's answer. Nor is
        # a session opened by a refusal: a server may set one on its 400 to a request
        # without a session, and it names nothing the host has.
        if not stateless:
            if self._expired(response):
                return
            if 200 <= status < 300 and not self._take_session_id(response):
                return
        kind = content_kind(response)
        if status == 202 or (200 <= status < 300 and not waiting and kind != "application/json"):
            return  # nothing is owed on it: an event stream here is left unread
        if 200 <= status < 300 and kind == "text/event-stream":
            await self._events(response, waiting, stateless=stateless)
        elif 200 <= status < 300 and kind == "application/json":
            body = await core.body(response)
            if body is None:
                await core.unanswered(waiting, core.oversized("its answer"))
            else:
                await core.json(body, waiting)
        else:
            body = await core.body(response)
            if self._fallback.applies(status, body or b"", line):
                response.close()  # its connection is free for the GET
                await self._fallback.fall_back(status, body or b"", line, waiting)
                return
            await core.refused(status, body or b"", waiting)

    def _take_session_id(self, response: HttpResponse) -> bool:
        """Keep the server's first ``Mcp-Session-Id``; False (the transport ending) when
        it is one that cannot go back in a header."""
        core = self._core
        if core.session_id is not None:
            return True
        found = session_id(response.raw_headers)
        if isinstance(found, Refused):
            core.log.warning("HTTP header refused", reason=found.why)
            core.end("invalid-session-id")
            return False
        core.session_id = found
        return True

    def _expired(self, response: HttpResponse) -> bool:
        if response.status_code == 404 and self._core.session_id is not None:
            self._core.log.info("session expired (404): a new session starts")
            self._core.end("session-expired")
            return True
        return False

    async def end_session(self) -> None:
        """DELETE the session, when there is one (bounded; 405 is an answer too). The
        caller shields it: closing runs it."""
        core = self._core
        if core.session_id is not None:
            with trio.move_on_after(_DELETE_BOUND):
                try:
                    # The answer's body is never read: closing is no time to hold one.
                    with await core.open(b"DELETE", core.headers()) as response:
                        core.log.debug("session deleted", status=response.status_code)
                except Exception as exc:  # an answer or none: the session is over
                    core.log.debug("DELETE failed", error=type(exc).__name__)

    # -- event streams ----------------------------------------------------------------

    async def _events(
        self, response: HttpResponse, waiting: set[Any], *, stateless: bool = False
    ) -> None:
        """An answer as an event stream; resumed while requests of it wait (on the
        stateless revision, which has no resumption, its requests are reported broken)."""
        core = self._core
        decoder = SseDecoder(core.max_message_bytes)
        if (await self._read_events(response, decoder, waiting)).settled:
            return
        if stateless and waiting and not core.closed:
            await self._stream_broke(waiting)
            return
        resumes = 0
        while waiting and not core.closed:
            last = decoder.last_event_id
            if not last or resumes == _MAX_RESUMES:
                await core.unanswered(waiting, "its event stream ended before the answer")
                return
            if not echoable_event_id(last):
                core.log.warning("HTTP header refused", reason="an event id not fit to send back")
                await core.unanswered(
                    waiting, "its event stream ended, and its event id cannot go in Last-Event-ID"
                )
                return
            resumes += 1
            await trio.sleep(retry_seconds(decoder.retry_ms))
            headers = core.headers(_ACCEPT_EVENTS, last)
            with await core.open(b"GET", headers) as resumed:
                if self._expired(resumed):
                    return
                kind = content_kind(resumed)
                if resumed.status_code != 200 or kind != "text/event-stream":
                    await core.unanswered(
                        waiting, f"resuming its stream: HTTP {resumed.status_code}"
                    )
                    return
                core.log.debug("event stream resumed", attempt=resumes)
                if (await self._read_events(resumed, decoder, waiting)).settled:
                    return

    async def _stream_broke(self, waiting: set[Any]) -> None:
        """A stateless POST's stream ended before its answers: the connection re-issues
        what is safe to repeat, with new ids, and fails the rest (driver/rebind.py)."""
        self._core.log.info("response stream broke", unanswered=len(waiting))
        if self.on_broken is None:  # no connection above to decide: they fail
            await self._core.unanswered(waiting, "its event stream ended before the answer")
            return
        ids = sorted(waiting, key=repr)
        waiting.clear()
        self.on_broken(ids)

    async def _read_events(
        self, response: HttpResponse, decoder: SseDecoder, waiting: set[Any] | None
    ) -> _Read:
        """Read one event stream: a POST's (``waiting``: the requests it carried) until
        each is answered, or the GET stream (None) until it ends. An event past the bound
        fails the POST's requests at once; on the GET stream it is dropped."""
        core = self._core
        messages = 0
        dropped = decoder.dropped
        settled = False

        async def take(chunk: bytes) -> bool:
            nonlocal messages, dropped, settled
            for event in decoder.feed(chunk):
                messages += await core.take_event(event, waiting)
            if decoder.dropped != dropped:
                dropped = decoder.dropped
                settled = await core.dropped_event(waiting)
                if settled:
                    return False
            # A POST's stream whose every request is answered owes nobody what follows.
            return waiting is None or bool(waiting)

        with contextlib.suppress(ReadError, RemoteProtocolError):
            await read_chunks(response, take)
        return _Read(messages, settled)

    async def listen_once(self, nursery: trio.Nursery) -> None:
        """Open the GET stream (once per transport) in ``nursery``, and wait, within the
        target's timeout, for its answer: a server may send its first request on it as
        soon as the handshake ends."""
        if not self._listening:
            self._listening = True
            nursery.start_soon(self._listen)
            with trio.move_on_after(self._core.target.timeout):
                await self._listen_ready.wait()

    async def _listen(self) -> None:
        """The GET stream: what the server sends outside any answer. Reopened when it
        ends, after the server's ``retry`` with a floor and a backoff (sse_reopen.py)."""
        core = self._core
        decoder = SseDecoder(core.max_message_bytes)
        reopening = Reopening()
        try:
            while not core.closed:
                last = decoder.last_event_id
                resume_from = last if last and echoable_event_id(last) else None
                headers = core.headers(_ACCEPT_EVENTS, resume_from)
                opened = trio.current_time()
                read = _Read(0, settled=False)
                try:
                    with await core.open(b"GET", headers) as r:
                        self._listen_ready.set()
                        if self._expired(r):
                            return
                        if r.status_code != 200 or content_kind(r) != "text/event-stream":
                            core.log.debug("no GET stream", status=r.status_code)
                            return
                        read = await self._read_events(r, decoder, None)
                except Exception as exc:  # HttpClientError, or a bug: try again later
                    core.log.debug("GET stream failed", error=type(exc).__name__)
                    self._listen_ready.set()
                reopening.ended(lived=trio.current_time() - opened, delivered=read.messages > 0)
                await trio.sleep(reopening.delay(decoder.retry_ms))
        finally:
            self._listen_ready.set()
