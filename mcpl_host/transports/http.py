"""The Streamable HTTP transport: MCP over HTTP POST and server-sent events.

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

On 2026-07-28 (stateless) there is no session, no GET stream and no DELETE: each POST
carries the headers its own line gives (``MCP-Protocol-Version`` from its ``_meta``,
``Mcp-Method``, ``Mcp-Name``, ``Mcp-Param-*`` from the called tool's annotations, which
the connection hands over: protocol/request_headers.py), a request given up on is
cancelled by closing its response (its ``notifications/cancelled`` is not POSTed), and a
response stream that ends before its answer is not resumed but reported to the
connection, which re-issues or fails each request by the rebinding rule.

Bounded against a hostile server (docs/http.md, "Bounds"): response headers are due
within the target's timeout; a request the host gave up (its ``notifications/cancelled``
goes by here) ends its POST and closes its socket; a POST's stream is closed once its
requests are answered; a body or an event past ``max_message_bytes`` fails its POST's
requests at once; the GET stream is reopened after the server's ``retry`` with a floor
and a backoff (sse_reopen.py); the session id and event ids are checked before they go
back in a header (http_headers.py).

When the server refuses the POST of ``initialize`` with 400, 404 or 405 (and a body that
is not JSON-RPC) before any answer proved the transport, the transport GETs the URL for
a legacy HTTP+SSE server's event stream and, given its endpoint, carries the session
over that transport (http_legacy.py); an ``"sse"`` target uses it from the start.
``kind`` says which is in use.

This module is the transport as the connection sees it: the stream, the lines it is
given (each POSTed in a task of its own, ended when the host gives up on its requests),
the failures of an exchange, the lifetime. The rest has a module each: the exchange
core both carriers share (http_core.py: headers, authorization, delivering and settling
messages, refusals), the Streamable HTTP carrier (http_streamable.py), the fallback
(http_fallback.py) and the legacy carrier (http_legacy.py); what a line holds is peeked
by http_peek.py.

The HTTP/1.1 client is http_pool.py's (h11 over trio streams, a keep-alive pool); httpx
only runs the authorization flow's own requests, when the target has ``auth``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Final

import trio

from ..protocol.errors import (
    AuthorizationError,
    AuthorizationRequired,
    McplHostError,
    TransportError,
)
from ..protocol.redact import Redactor
from ..protocol.request_headers import ToolHeaders
from .http_core import HttpCore
from .http_fallback import Fallback
from .http_peek import Peek, cancelled_id, peek
from .http_pool import ConnectError, HttpPool, environment_proxy
from .http_streamable import StreamableHttp
from .http_target import HttpTarget, HttpTransportKind, describe_http

if TYPE_CHECKING:
    import httpx

__all__ = ["KEEPALIVE_CONNECTIONS", "MAX_CONNECTIONS", "HttpStream", "HttpTransport", "open_http"]

_USER_AGENT: Final = b"mcpl-host"
# The pool (http_pool.py): HTTP/1.1 carries one exchange per connection, so this many requests
# (and streams) to one server at once; past it a request waits for a slot, within its
# timeout. Idle connections kept for reuse are the only sockets that outlive a request.
MAX_CONNECTIONS: Final = 100
KEEPALIVE_CONNECTIONS: Final = 20


class _InFlight:
    """One POST: the requests it carried that still wait for an answer, and the scope
    that ends it once the host has given up on every one of them."""

    __slots__ = ("scope", "waiting")

    def __init__(self, waiting: set[Any]) -> None:
        self.waiting = waiting
        self.scope = trio.CancelScope()


class HttpStream(trio.abc.Stream):
    """The connection's byte stream: lines written become POSTs, what the server sends
    comes back as lines. ``end_reason`` says why the stream ended, when it did on the
    server's word (``session-expired``) or on a header the host cannot use
    (``invalid-session-id``)."""

    def __init__(self, transport: HttpTransport) -> None:
        self._transport = transport

    @property
    def end_reason(self) -> str | None:
        # Kept by the core: whichever carrier ends the transport, the reason is one.
        return self._transport._core.end_reason

    async def send_all(self, data: bytes | bytearray | memoryview) -> None:
        await trio.lowlevel.checkpoint()
        for line in bytes(data).split(b"\n"):
            if not line.strip():
                continue
            messages = peek(line)
            for message in messages:
                # The host gave up on a request: the POST carrying it need not be read.
                self._transport.abandon(cancelled_id(message))
            if self._transport.stateless and any(
                m.method == "notifications/cancelled" for m in messages
            ):
                # 2026-07-28 over HTTP cancels by closing the request's response stream
                # (just done), never by a notification.
                continue
            if any(m.method == "notifications/initialized" for m in messages):
                await self._transport.send_initialized(line, messages)
            else:
                await self._transport.post(line, messages)

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
    """One session with a Streamable HTTP server, or with a legacy HTTP+SSE one
    (http_legacy.py): ``kind`` says which is in use."""

    def __init__(
        self,
        target: HttpTarget,
        *,
        redactor: Redactor,
        max_message_bytes: int,
        pool: HttpPool,
        auth_client: httpx.AsyncClient | None = None,
    ) -> None:
        self._core = core = HttpCore(
            target,
            redactor=redactor,
            max_message_bytes=max_message_bytes,
            pool=pool,
            auth_client=auth_client,
        )
        self.target = target
        self.description = core.description
        self.inbound = core.inbound
        self.stream = HttpStream(self)
        self._fallback = Fallback(core, self._start_soon)
        self._streamable = StreamableHttp(core, self._fallback)
        self._tasks: trio.Nursery | None = None
        self._in_flight: dict[Any, _InFlight] = {}  # by the id of a request it carries
        self._done = trio.Event()
        self._unawaited = trio.Semaphore(MAX_CONNECTIONS)  # see post()

    @property
    def kind(self) -> HttpTransportKind:
        """``"sse"`` once the legacy transport carries the session (from the start for an
        ``"sse"`` target, after the fallback for a ``"streamable-http"`` one)."""
        return "sse" if self._fallback.legacy is not None else "streamable-http"

    @property
    def session_id(self) -> str | None:
        """The server's ``Mcp-Session-Id``, once a Streamable HTTP answer gave one."""
        return self._core.session_id

    @property
    def protocol_version(self) -> str | None:
        """The revision in force, as the connection accepted it (:meth:`use_revision`)."""
        return self._core.protocol_version

    @property
    def on_http(self) -> Callable[[str], None] | None:
        """The connection's: where HTTP exchanges are traced."""
        return self._core.on_http

    @on_http.setter
    def on_http(self, trace: Callable[[str], None] | None) -> None:
        self._core.on_http = trace

    # -- lifetime ---------------------------------------------------------------------

    async def serve(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Run the transport's tasks (POSTs, the GET stream) until it is closed."""
        async with trio.open_nursery() as tasks:
            self._tasks = tasks
            task_status.started()
            await self._done.wait()
            tasks.cancel_scope.cancel()

    def _start_soon(self, task: Callable[[], Awaitable[None]]) -> None:
        assert self._tasks is not None
        self._tasks.start_soon(task)

    async def aclose(self) -> None:
        """End the session (DELETE, bounded; 405 accepted) and every task; idempotent."""
        core = self._core
        if core.closed:
            return
        core.closed = True
        with trio.CancelScope(shield=True):
            await self._streamable.end_session()
            self._done.set()
            if self._tasks is not None:
                # Before the pool closes its sockets: a task still reading one would
                # otherwise fail with "another task closed this fd" and log it.
                self._tasks.cancel_scope.cancel()
            await core.release()
        core.flush_log()

    @property
    def handshake_only(self) -> bool:
        """The legacy transport is in use: it is 2024-11-05's, and carries only the
        handshake era (the connection asks no ``server/discover`` over it)."""
        return self._fallback.legacy is not None

    async def open_legacy(self) -> None:
        """Open the legacy session of an ``"sse"`` target; raises as
        :meth:`Fallback.open_legacy <mcpl_host.transports.http_fallback.Fallback.open_legacy>`."""
        await self._fallback.open_legacy()

    def use_revision(self, revision: str) -> None:
        """The connection accepted ``revision`` for this session: from now on its
        requests say so in ``MCP-Protocol-Version`` where the revision has the header."""
        self._core.protocol_version = revision

    @property
    def stateless(self) -> bool:
        """The revision in force is 2026-07-28's: no session, no GET stream, cancelling
        by closing a response stream."""
        return self._core.stateless

    def use_tool_headers(self, lookup: Callable[[object], ToolHeaders | None]) -> None:
        """``lookup(name)``: the called tool's annotations, for its ``Mcp-Param-*``."""
        self._streamable.tool_headers = lookup

    def on_broken_streams(self, report: Callable[[list[Any]], None]) -> None:
        """``report(ids)``: on the stateless revision a response stream that ends before
        its answers cannot be resumed; the connection re-issues or fails its requests."""
        self._streamable.on_broken = report

    def on_failed_requests(self, report: Callable[[list[Any], McplHostError], None]) -> None:
        """``report(ids, error)``: requests that failed at the HTTP level (a refusal, a
        timeout, authorization, a body past the bound), settled with that error: no
        JSON-RPC answer is made up for them."""
        self._core.on_failed = report

    # -- requests ---------------------------------------------------------------------

    def _track(self, messages: list[Peek]) -> _InFlight:
        """Register a POST by the requests it carries, before it starts: a cancel notice
        may follow at once."""
        flight = _InFlight({m.id for m in messages if m.method is not None and m.id is not None})
        for request_id in flight.waiting:
            self._in_flight[request_id] = flight
        return flight

    def abandon(self, request_id: Any) -> None:
        """The host gave up on ``request_id`` (a timeout, a cancel): when its POST
        carries nothing else still waited for, that POST ends and its socket closes."""
        try:
            flight = self._in_flight.pop(request_id, None)
        except TypeError:  # an id that cannot be a key is none of ours
            return
        if flight is None:
            return
        flight.waiting.discard(request_id)
        if not flight.waiting:
            flight.scope.cancel()

    async def post(self, line: bytes, messages: list[Peek]) -> None:
        """POST one line in a task of its own (requests never wait for each other).

        A line that carries no request (the host's answers, its notifications) first
        takes one of ``MAX_CONNECTIONS`` slots: a server that floods requests over its
        stream then makes the connection's writer wait here (and its reader stop, at
        ``max_owed_answers``), rather than cost a task per answer."""
        flight = self._track(messages)
        stateless = self._streamable.message_headers(messages)
        slot = not flight.waiting
        if slot:
            await self._unawaited.acquire()
        if self._tasks is None or self._core.closed:
            if slot:
                self._unawaited.release()
            raise trio.ClosedResourceError("the HTTP transport is closed")
        self._tasks.start_soon(self._post, line, flight, slot, stateless)

    async def _post(
        self,
        line: bytes,
        flight: _InFlight,
        slot: bool = False,
        stateless: dict[str, str] | None = None,
    ) -> None:
        carried = set(flight.waiting)
        try:
            with flight.scope:
                if carried:
                    await self._exchange(line, flight.waiting, stateless)
                else:
                    # Nothing waits for the answer to a notification or a response: the
                    # whole exchange is bounded, or a server could hold a socket forever.
                    with trio.move_on_after(self.target.timeout) as bounded:
                        await self._exchange(line, flight.waiting, stateless)
                    if bounded.cancelled_caught:
                        self._core.log.warning("HTTP answer cut", reason="not done within timeout")
        finally:
            if slot:
                self._unawaited.release()
            for request_id in carried:
                if self._in_flight.get(request_id) is flight:
                    del self._in_flight[request_id]

    async def _exchange(
        self, line: bytes, waiting: set[Any], stateless: dict[str, str] | None = None
    ) -> None:
        """One line's exchange over the carrier in use; however it fails, the failure
        stays in the transport: its requests are settled, or the transport ends."""
        core = self._core
        try:
            legacy = self._fallback.legacy
            if legacy is not None:
                await legacy.exchange(line, waiting)
                return
            await self._streamable.exchange(line, waiting, stateless)
        except trio.TooSlowError as exc:
            # A slow answer fails the requests it carried, not the session.
            core.log.warning("HTTP request timed out", error=type(exc).__name__)
            why = f"no response within {self.target.timeout:g} s"
            core.trace_http(f"HTTP POST {self.description} -> {why}")
            await core.unanswered(waiting, why)
        except (AuthorizationRequired, AuthorizationError) as exc:
            # Not the session's end either: each request it carried fails with the
            # typed error (a later request may find the server authorized).
            core.log.info("HTTP request not authorized", error=type(exc).__name__)
            await core.unanswered(waiting, exc.message, error=exc)
        except ConnectError as exc:
            if not self._fallback.proven:
                # Nothing of the server was ever seen: the connect fails with these
                # words (a server lost later is the connection's to reconnect to).
                core.log.info("HTTP connect failed", detail=core.safe(exc.why))
                await core.unanswered(waiting, exc.why, error=core.unreachable(exc))
            else:
                core.log.warning("HTTP connect failed", detail=core.safe(exc.why))
            core.end("connect-failed")
        except TransportError as exc:  # the fallback found no legacy server either
            core.log.info("HTTP transport failed", reason=exc.reason)
            await core.unanswered(waiting, exc.message, error=exc)
            core.end(exc.reason)
        except Exception as exc:  # HttpClientError, or a bug: never out of the transport
            core.log.warning(
                "HTTP request failed", error=type(exc).__name__, detail=core.safe(str(exc))
            )
            core.end("read-failed")

    async def send_initialized(self, line: bytes, messages: list[Peek]) -> None:
        """``notifications/initialized``, then the GET stream opened (or refused) before
        the handshake ends: a server may send its first request on it at once."""
        if self._tasks is None or self._core.closed:
            raise trio.ClosedResourceError("the HTTP transport is closed")
        await self._post(line, self._track(messages))
        if self._fallback.legacy is None:  # the legacy GET is open already
            await self._streamable.listen_once(self._tasks)


async def open_http(
    target: HttpTarget,
    *,
    nursery: trio.Nursery,
    redactor: Redactor,
    max_message_bytes: int | None = None,
) -> HttpTransport:
    """Open a session with the server at ``target`` (for a Streamable HTTP one nothing
    is sent until the connection writes its first message; for a legacy ``"sse"`` one
    the event stream is opened and its endpoint read). The transport's tasks run in
    ``nursery``.

    Raises:
        TransportError: the HTTP client could not be set up; for an ``"sse"`` target,
            see :meth:`HttpTransport.open_legacy`.
        AuthorizationRequired, AuthorizationError: an ``"sse"`` target's GET was not
            authorized.
    """
    try:
        context = target.ssl_context
        if context is None and target.url[:6].lower() == "https:":
            import httpx  # noqa: PLC0415 - only for its default TLS context

            # httpx's verification, as before: SSL_CERT_FILE / SSL_CERT_DIR, else certifi.
            context = httpx.create_ssl_context()
        pool = HttpPool(
            target.url,
            ssl_context=context,
            max_connections=MAX_CONNECTIONS,
            max_keepalive=KEEPALIVE_CONNECTIONS,
            user_agent=_USER_AGENT,
            proxy=environment_proxy(target.url),
        )
        auth_client = None
        if target.auth is not None:
            import httpx  # noqa: PLC0415 - the authorization flow's own requests

            auth_client = httpx.AsyncClient(
                timeout=httpx.Timeout(target.timeout, read=None),
                verify=context if context is not None else True,
                follow_redirects=False,
            )
    except (OSError, ValueError) as exc:
        raise TransportError(
            f"cannot set up HTTP for {describe_http(target)}: {type(exc).__name__}",
            reason="connect-failed",
        ) from None
    transport = HttpTransport(
        target,
        redactor=redactor,
        max_message_bytes=max_message_bytes or 16 * 1024 * 1024,
        pool=pool,
        auth_client=auth_client,
    )
    await nursery.start(transport.serve)
    if target.transport == "sse":
        try:
            await transport.open_legacy()
        except BaseException:
            await transport.aclose()
            raise
    return transport
