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

The HTTP/1.1 client is http_pool.py's (h11 over trio streams, a keep-alive pool); httpx
only runs the authorization flow's own requests, when the target has ``auth``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final, NamedTuple

import msgspec
import trio

from .._log import PeerLogBudget, get_logger
from ..auth.challenge import bearer_params, shown, wants_authorization
from ..auth.state import Tries
from ..protocol.discover import PROTOCOL_VERSION
from ..protocol.errors import (
    INTERNAL_ERROR,
    AuthorizationError,
    AuthorizationRequired,
    McplHostError,
    RequestError,
    TransportError,
)
from ..protocol.profiles import PROFILES
from ..protocol.redact import Redactor
from ..protocol.request_headers import VERSION_HEADER, ToolHeaders, request_headers
from ..protocol.sse import SseDecoder, SseEvent
from .http_body import content_kind, read_chunks
from .http_headers import Refused, echoable_event_id, session_id
from .http_legacy import LegacySession, NoStream, status_text
from .http_pool import (
    ConnectError,
    HttpClientError,
    HttpPool,
    HttpResponse,
    ReadError,
    RemoteProtocolError,
    environment_proxy,
)
from .http_target import HttpTarget, HttpTransportKind, describe_http
from .sse_reopen import Reopening, retry_seconds

if TYPE_CHECKING:
    import httpx

__all__ = ["KEEPALIVE_CONNECTIONS", "MAX_CONNECTIONS", "HttpStream", "HttpTransport", "open_http"]

_log = get_logger("mcpl_host.transports")

_ACCEPT_POST: Final = b"application/json, text/event-stream"
_ACCEPT_EVENTS: Final = b"text/event-stream"
_USER_AGENT: Final = b"mcpl-host"
_MAX_RESUMES: Final = 10  # resumptions of one POST's stream before its requests fail
_DELETE_BOUND: Final = 2.0
_INBOUND_BUFFER: Final = 64
# A refusal of initialize's POST with one of these (and a body that is not JSON-RPC: a
# Streamable HTTP server's own refusal is one) sends the host to the legacy transport
# (the specification's backwards compatibility rule, narrowed to these by 2025-11-25).
_FALLBACK_STATUSES: Final = frozenset({400, 404, 405})
_PATH_HINT: Final = (
    "check the URL's path (Streamable HTTP servers usually serve /mcp, legacy SSE servers /sse)"
)
# The pool (http_pool.py): HTTP/1.1 carries one exchange per connection, so this many requests
# (and streams) to one server at once; past it a request waits for a slot, within its
# timeout. Idle connections kept for reuse are the only sockets that outlive a request.
MAX_CONNECTIONS: Final = 100
KEEPALIVE_CONNECTIONS: Final = 20


class _Peek(msgspec.Struct):
    """What the transport needs of a message: its id, whether it is a request, and the
    params of the one notification it acts on (``notifications/cancelled``)."""

    id: Any = None
    method: str | None = None
    params: msgspec.Raw = msgspec.Raw(b"null")


class _CancelParams(msgspec.Struct):
    requestId: Any = None  # the wire's name


_VERSION_HEADER: Final = VERSION_HEADER.encode("ascii")
_peek_one = msgspec.json.Decoder(_Peek)
_peek_many = msgspec.json.Decoder(list[_Peek])
_cancel_params = msgspec.json.Decoder(_CancelParams | None)
_plain = msgspec.json.Decoder()

# A request of the stateless revision names it in its _meta: the cheap test before its
# params are decoded for the headers they give.
_STATELESS_MARK: Final = PROTOCOL_VERSION.encode()


def _is_json_rpc(body: bytes) -> bool:
    """Whether an error's body is a JSON-RPC message (or a batch of them): the refusal
    of a server that speaks MCP over this POST, never a reason to fall back."""
    try:
        value = _plain.decode(body)
    except (msgspec.DecodeError, RecursionError):
        return False
    values = value if isinstance(value, list) else [value]
    return any(isinstance(v, dict) and v.get("jsonrpc") == "2.0" for v in values)


def _peek(line: bytes) -> list[_Peek]:
    """The messages of a line (a batch has several); nothing when it is not JSON-RPC."""
    try:
        if line.lstrip()[:1] == b"[":
            return _peek_many.decode(line)
        return [_peek_one.decode(line)]
    except (msgspec.DecodeError, ValueError):
        return []


def _cancelled_id(message: _Peek) -> Any:
    """The request a ``notifications/cancelled`` of the host's gives up on, else None."""
    if message.method != "notifications/cancelled":
        return None
    try:
        params = _cancel_params.decode(message.params)
    except (msgspec.DecodeError, ValueError):
        return None
    return params.requestId if params is not None else None


class _InFlight:
    """One POST: the requests it carried that still wait for an answer, and the scope
    that ends it once the host has given up on every one of them."""

    __slots__ = ("scope", "waiting")

    def __init__(self, waiting: set[Any]) -> None:
        self.waiting = waiting
        self.scope = trio.CancelScope()


class _Read(NamedTuple):
    """How reading one event stream went."""

    messages: int  # messages handed to the connection
    settled: bool  # an oversized event failed the POST's requests: read no more


class HttpStream(trio.abc.Stream):
    """The connection's byte stream: lines written become POSTs, what the server sends
    comes back as lines. ``end_reason`` says why the stream ended, when it did on the
    server's word (``session-expired``) or on a header the host cannot use
    (``invalid-session-id``)."""

    def __init__(self, transport: HttpTransport) -> None:
        self._transport = transport
        self.end_reason: str | None = None

    async def send_all(self, data: bytes | bytearray | memoryview) -> None:
        await trio.lowlevel.checkpoint()
        for line in bytes(data).split(b"\n"):
            if not line.strip():
                continue
            messages = _peek(line)
            for message in messages:
                # The host gave up on a request: the POST carrying it need not be read.
                self._transport.abandon(_cancelled_id(message))
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
        self.target = target
        self.description = describe_http(target)
        # "sse" once the legacy transport carries the session (from the start for an
        # "sse" target, after the fallback for a "streamable-http" one).
        self.kind: HttpTransportKind = "streamable-http"
        self._legacy: LegacySession | None = None
        self._probed: LegacySession | NoStream | None = None  # the fallback's GET, once
        self._probing = trio.Lock()
        self._proven = False  # a POST was answered 2xx: the fallback is over
        self._redactor = redactor
        self._max = max_message_bytes
        self._pool = pool
        self._auth_client = auth_client
        # The configured headers, encoded once (HttpTarget checked them: ASCII).
        self._fixed: list[tuple[bytes, bytes]] = [
            (name.encode("ascii"), value.encode("ascii")) for name, value in target.headers.items()
        ]
        self._session_header: tuple[bytes, bytes] | None = None
        self.stream = HttpStream(self)
        self._send, self.inbound = trio.open_memory_channel[bytes](_INBOUND_BUFFER)
        self.session_id: str | None = None
        # The revision in force: set by the connection once it accepted the server's
        # answer, so a refused revision never reaches a header.
        self.protocol_version: str | None = None
        self._listening = False
        self._listen_ready = trio.Event()  # the GET stream answered (or failed)
        self._tasks: trio.Nursery | None = None
        self._in_flight: dict[Any, _InFlight] = {}  # by the id of a request it carries
        self._closed = False
        self._done = trio.Event()
        self._unawaited = trio.Semaphore(MAX_CONNECTIONS)  # see post()
        # A server decides how many of this transport's warnings there are.
        self._log_budget = PeerLogBudget()
        self._log = self._log_budget.wrap(_log.bind(target=self.description))
        # The connection's, on the stateless revision: a tool's x-mcp-header annotations
        # (for Mcp-Param-*), and where requests whose response stream broke are reported.
        self._tool_headers: Callable[[object], ToolHeaders | None] = lambda _name: None
        self._broken: Callable[[list[Any]], None] | None = None
        # The connection's: where requests failed by a typed error, not by an answer
        # (authorization), are settled; and where HTTP exchanges are traced.
        self._failed: Callable[[list[Any], McplHostError], None] | None = None
        self.on_http: Callable[[str], None] | None = None
        self._auth = None
        if target.auth is not None:
            if auth_client is None:
                raise ValueError("an HTTP target with auth needs an auth_client")
            self._auth = target.auth.session(
                target.url,
                client=auth_client,
                redactor=redactor,
                timeout=target.timeout,
                on_http=self._trace_http,
            )

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
                with trio.move_on_after(_DELETE_BOUND):
                    try:
                        # The answer's body is never read: closing is no time to hold one.
                        with await self._open(b"DELETE", self._headers()) as response:
                            self._log.debug("session deleted", status=response.status_code)
                    except Exception as exc:  # an answer or none: the session is over
                        self._log.debug("DELETE failed", error=type(exc).__name__)
            self._done.set()
            if self._tasks is not None:
                # Before the pool closes its sockets: a task still reading one would
                # otherwise fail with "another task closed this fd" and log it.
                self._tasks.cancel_scope.cancel()
            self._send.close()
            self._pool.close()
            if self._auth_client is not None:
                await self._auth_client.aclose()
        self._log_budget.flush()

    @property
    def handshake_only(self) -> bool:
        """The legacy transport is in use: it is 2024-11-05's, and carries only the
        handshake era (the connection asks no ``server/discover`` over it)."""
        return self._legacy is not None

    async def open_legacy(self) -> None:
        """Open the legacy session (an ``"sse"`` target): GET the URL and read its
        stream up to the endpoint event.

        Raises:
            TransportError: no connection (``reason="connect-failed"``), no event stream
                at the URL or no endpoint event in time (``"no-endpoint"``), an endpoint
                refused (``"endpoint-refused"``).
            AuthorizationRequired, AuthorizationError: the GET was not authorized.
        """
        found = await self._probe()
        if isinstance(found, NoStream):
            raise TransportError(
                f"GET {self.description} -> {found.describe()}: no SSE stream there; check "
                "the URL's path (legacy SSE servers usually serve /sse; for a Streamable "
                "HTTP server, usually at /mcp, drop the sse+ prefix)",
                reason="no-endpoint",
            )
        self._use_legacy(found)

    async def _probe(self) -> LegacySession | NoStream:
        """GET the URL for a legacy server's event stream, once per transport: a
        message refused while the GET is under way waits for its outcome.

        Raises:
            TransportError: no connection (``reason="connect-failed"``), no answer or
                no endpoint event in time, an answer that broke off (``"no-endpoint"``),
                an endpoint refused (``"endpoint-refused"``).
            AuthorizationRequired, AuthorizationError: the GET was not authorized.
        """
        async with self._probing:
            if self._probed is not None:
                return self._probed
            try:
                self._probed = await LegacySession.open(self)
            except ConnectError as exc:
                raise self._unreachable(exc) from None
            except trio.TooSlowError:
                raise TransportError(
                    f"GET {self.description}: no response within {self.target.timeout:g} s",
                    reason="no-endpoint",
                ) from None
            except HttpClientError as exc:
                raise TransportError(
                    f"GET {self.description}: the answer broke off ({type(exc).__name__})",
                    reason="no-endpoint",
                ) from None
            return self._probed

    def _use_legacy(self, session: LegacySession) -> None:
        assert self._tasks is not None
        self._legacy = session
        self.kind = "sse"
        self._proven = True
        self._tasks.start_soon(session.listen)

    def _unreachable(self, exc: ConnectError) -> TransportError:
        where = f"{exc.where} ({self.description})" if exc.where else self.description
        return TransportError(f"cannot connect to {where}: {exc.why}", reason="connect-failed")

    def use_revision(self, revision: str) -> None:
        """The connection accepted ``revision`` for this session: from now on its
        requests say so in ``MCP-Protocol-Version`` where the revision has the header."""
        self.protocol_version = revision

    @property
    def stateless(self) -> bool:
        """The revision in force is 2026-07-28's: no session, no GET stream, cancelling
        by closing a response stream."""
        profile = PROFILES.get(self.protocol_version) if self.protocol_version else None
        return profile is not None and profile.stateless

    def use_tool_headers(self, lookup: Callable[[object], ToolHeaders | None]) -> None:
        """``lookup(name)``: the called tool's annotations, for its ``Mcp-Param-*``."""
        self._tool_headers = lookup

    def on_broken_streams(self, report: Callable[[list[Any]], None]) -> None:
        """``report(ids)``: on the stateless revision a response stream that ends before
        its answers cannot be resumed; the connection re-issues or fails its requests."""
        self._broken = report

    def on_failed_requests(self, report: Callable[[list[Any], McplHostError], None]) -> None:
        """``report(ids, error)``: requests that failed at the HTTP level (a refusal, a
        timeout, authorization, a body past the bound), settled with that error: no
        JSON-RPC answer is made up for them."""
        self._failed = report

    def _trace_http(self, text: str) -> None:
        if self.on_http is not None:
            self.on_http(text)

    def _message_headers(self, messages: list[_Peek]) -> dict[str, str]:
        """The headers of the stateless revision for a line of one message: its
        revision, method, name and annotated arguments (protocol/request_headers.py);
        none for a handshake-era line."""
        if len(messages) != 1 or messages[0].method is None:
            return {}
        message = messages[0]
        method = message.method
        assert method is not None
        revision = self.protocol_version if self.stateless else None
        raw = bytes(message.params)
        if revision is None and _STATELESS_MARK not in raw:
            return {}
        try:
            params = _plain.decode(raw)
        except (msgspec.DecodeError, RecursionError):
            params = None
        tool = None
        if method == "tools/call" and isinstance(params, dict):
            tool = self._tool_headers(params.get("name"))
        return request_headers(method, params, tool, revision=revision)

    def _end(self, reason: str) -> None:
        """The session is over on the server's word: the connection reads the end."""
        if self.stream.end_reason is None:
            self.stream.end_reason = reason
        self._send.close()

    # -- requests ---------------------------------------------------------------------

    def _headers(
        self,
        accept: bytes | None = None,
        last_event_id: str | None = None,
        stateless: dict[str, str] | None = None,
    ) -> list[tuple[bytes, bytes]]:
        """A request's headers after the pool's own (Host, User-Agent, Accept-Encoding).
        Every value is ASCII: the target's were checked, the session id and event id
        are (http_headers.py), the stateless ones are encoded to be (request_headers)."""
        headers = list(self._fixed)
        if accept is not None:
            headers.append((b"Accept", accept))
        if stateless:
            # 2026-07-28 has no session, and the line names its own revision.
            headers.extend((k.encode("ascii"), v.encode("ascii")) for k, v in stateless.items())
            return headers
        session = self.session_id
        if session is not None:
            cached = self._session_header
            if cached is None or cached[1] != session.encode("ascii"):
                cached = self._session_header = (b"Mcp-Session-Id", session.encode("ascii"))
            headers.append(cached)
        version = self.protocol_version
        profile = PROFILES.get(version) if version is not None else None
        if version is not None and profile is not None and profile.version_header:
            headers.append((_VERSION_HEADER, version.encode("ascii")))
        if last_event_id is not None:
            headers.append((b"Last-Event-ID", last_event_id.encode("ascii")))
        return headers

    async def _open(
        self,
        method: bytes,
        headers: list[tuple[bytes, bytes]],
        content: bytes | None = None,
        *,
        may_authorize: bool = False,
        target: bytes | None = None,
    ) -> HttpResponse:
        """One exchange, its response's headers due within the target's timeout (a read
        timeout would bound every quiet moment of a stream too): connecting, a free
        connection of the pool, writing and the headers, all under the one deadline.
        The caller closes the response (``with await self._open(...) as response``),
        however the exchange ends, so no socket outlives it (closing does no I/O:
        nothing to shield or bound).

        With ``auth``, each attempt carries its headers, and a 401 or 403 is the auth
        session's to answer (the request is sent again once it has new tokens).

        Raises:
            trio.TooSlowError: no response headers within the timeout.
            AuthorizationRequired: 401 and no way to authorize (or still refused).
            AuthorizationError: the authorization flow failed.
        """
        # Only a POST carrying requests someone waits on may run the flow. The GET
        # stream, the closing DELETE and the POSTs of answers and notifications only
        # refresh (a server refusing them must not make the host ask the person again at
        # every reopening of the stream).
        if self._auth is None:
            # The common case: one attempt, no header of the answer to read here.
            response = await self._request(method, headers, content, target)
            if response.status_code not in (401, 403):
                return response
            return await self._authorize(
                method, headers, content, response, may_authorize, target=target
            )
        return await self._authorize(method, headers, content, None, may_authorize, target=target)

    async def _request(
        self,
        method: bytes,
        headers: list[tuple[bytes, bytes]],
        content: bytes | None,
        target: bytes | None = None,
    ) -> HttpResponse:
        """Raises trio.TooSlowError when the response's head is not there in time."""
        # A plain scope rather than trio.fail_after: no generator per exchange.
        with trio.CancelScope(deadline=trio.current_time() + self.target.timeout) as bounded:
            return await self._pool.request(method, headers, content, target)
        assert bounded.cancelled_caught
        raise trio.TooSlowError

    async def _authorize(
        self,
        method: bytes,
        headers: list[tuple[bytes, bytes]],
        content: bytes | None,
        response: HttpResponse | None,
        may_authorize: bool,
        *,
        target: bytes | None = None,
    ) -> HttpResponse:
        """The exchange with authorization in the loop: each attempt carries the auth
        session's headers, and a 401 or 403 is the session's to answer (``response``:
        the first attempt's, when it was made without a session)."""
        tries = Tries(may_authorize=may_authorize)
        name = method.decode("ascii")
        while True:
            if response is None:
                sent = await self._auth.headers(name, self.target.url) if self._auth else {}
                extra = [(k.encode("ascii"), v.encode("ascii")) for k, v in sent.items()]
                response = await self._request(method, headers + extra, content, target)
            else:
                sent = {}
            if self._auth is not None:
                self._auth.observe(self.target.url, _as_httpx(response))
            status = response.status_code
            if status not in (401, 403):
                return response
            params = bearer_params(response.header_list(b"www-authenticate"))
            if not wants_authorization(status, params):
                return response
            self._trace_http(f"HTTP {name} {self.description} -> {status}")
            response.close()
            if self._auth is None:
                raise AuthorizationRequired(
                    "the server requires authorization: give the target an auth "
                    "(docs/auth.md) or run `mcpl-host auth login` for it",
                    status=status,
                    challenge=shown(params, self._redactor),
                )
            await self._auth.rejected(_as_httpx(response), sent, tries)
            response = None

    def _track(self, messages: list[_Peek]) -> _InFlight:
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

    async def post(self, line: bytes, messages: list[_Peek]) -> None:
        """POST one line in a task of its own (requests never wait for each other).

        A line that carries no request (the host's answers, its notifications) first
        takes one of ``MAX_CONNECTIONS`` slots: a server that floods requests over its
        stream then makes the connection's writer wait here (and its reader stop, at
        ``max_owed_answers``), rather than cost a task per answer."""
        flight = self._track(messages)
        stateless = self._message_headers(messages)
        slot = not flight.waiting
        if slot:
            await self._unawaited.acquire()
        if self._tasks is None or self._closed:
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
                        self._log.warning("HTTP answer cut", reason="not done within timeout")
        finally:
            if slot:
                self._unawaited.release()
            for request_id in carried:
                if self._in_flight.get(request_id) is flight:
                    del self._in_flight[request_id]

    async def _exchange(
        self, line: bytes, waiting: set[Any], stateless: dict[str, str] | None = None
    ) -> None:
        try:
            if self._legacy is not None:
                await self._legacy.exchange(line, waiting)
                return
            headers = self._headers(_ACCEPT_POST, stateless=stateless)
            headers.append((b"Content-Type", b"application/json"))
            with await self._open(b"POST", headers, line, may_authorize=bool(waiting)) as response:
                await self._answer(response, line, waiting, stateless=bool(stateless))
        except trio.TooSlowError as exc:
            # A slow answer fails the requests it carried, not the session.
            self._log.warning("HTTP request timed out", error=type(exc).__name__)
            why = f"no response within {self.target.timeout:g} s"
            self._trace_http(f"HTTP POST {self.description} -> {why}")
            await self._unanswered(waiting, why)
        except (AuthorizationRequired, AuthorizationError) as exc:
            # Not the session's end either: each request it carried fails with the
            # typed error (a later request may find the server authorized).
            self._log.info("HTTP request not authorized", error=type(exc).__name__)
            await self._unanswered(waiting, exc.message, error=exc)
        except ConnectError as exc:
            if not self._proven:
                # Nothing of the server was ever seen: the connect fails with these
                # words (a server lost later is the connection's to reconnect to).
                self._log.info("HTTP connect failed", detail=self._safe(exc.why))
                await self._unanswered(waiting, exc.why, error=self._unreachable(exc))
            else:
                self._log.warning("HTTP connect failed", detail=self._safe(exc.why))
            self._end("connect-failed")
        except TransportError as exc:  # the fallback found no legacy server either
            self._log.info("HTTP transport failed", reason=exc.reason)
            await self._unanswered(waiting, exc.message, error=exc)
            self._end(exc.reason)
        except Exception as exc:  # HttpClientError, or a bug: never out of the transport
            self._log.warning(
                "HTTP request failed", error=type(exc).__name__, detail=self._safe(str(exc))
            )
            self._end("read-failed")

    async def _answer(
        self, response: HttpResponse, line: bytes, waiting: set[Any], *, stateless: bool = False
    ) -> None:
        status = response.status_code
        if 200 <= status < 300:
            self._proven = True
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
            body = await self._body(response)
            if body is None:
                await self._unanswered(waiting, self._oversized("its answer"))
            else:
                await self._json(body, waiting)
        else:
            body = await self._body(response)
            if (
                status in _FALLBACK_STATUSES
                and not self._proven
                and self.target.transport == "streamable-http"
                and not _is_json_rpc(body or b"")
                # The specification's rule is for initialize; server/discover, asked
                # first by a dual-era host, is refused by Streamable HTTP servers too.
                and not any(m.method == "server/discover" for m in _peek(line))
            ):
                response.close()  # its connection is free for the GET
                await self._fall_back(status, line, waiting)
                return
            await self._refused(status, body or b"", waiting)

    async def _fall_back(self, status: int, line: bytes, waiting: set[Any]) -> None:
        """A POST (``initialize``, before any answer proved the transport) was refused
        with 400, 404 or 405: GET the URL for a legacy server's event stream (once), and
        send the message again over it when its endpoint event comes.

        Raises:
            TransportError: no event stream at the URL either (``reason="no-endpoint"``:
                the message names both answers), or as :meth:`_probe`.
        """
        self._log.info("POST refused: looking for a legacy SSE stream", status=status)
        found = await self._probe()
        if isinstance(found, NoStream):
            raise TransportError(
                f"POST {self.description} -> {status_text(status)} and no SSE stream there "
                f"(GET -> {found.describe()}): {_PATH_HINT}",
                reason="no-endpoint",
            )
        if self._legacy is None:
            self._log.info(
                "legacy transport in use",
                transport="sse",
                reason=f"POST -> {status}; GET gave an SSE stream and its endpoint",
            )
            self._use_legacy(found)
        await found.exchange(line, waiting)

    def _take_session_id(self, response: HttpResponse) -> bool:
        """Keep the server's first ``Mcp-Session-Id``; False (the transport ending) when
        it is one that cannot go back in a header."""
        if self.session_id is not None:
            return True
        found = session_id(response.raw_headers)
        if isinstance(found, Refused):
            self._log.warning("HTTP header refused", reason=found.why)
            self._end("invalid-session-id")
            return False
        self.session_id = found
        return True

    async def send_initialized(self, line: bytes, messages: list[_Peek]) -> None:
        """``notifications/initialized``, then the GET stream opened (or refused) before
        the handshake ends: a server may send its first request on it at once."""
        if self._tasks is None or self._closed:
            raise trio.ClosedResourceError("the HTTP transport is closed")
        await self._post(line, self._track(messages))
        if not self._listening and self._legacy is None:  # the legacy GET is open already
            self._listening = True
            self._tasks.start_soon(self._listen)
            with trio.move_on_after(self.target.timeout):
                await self._listen_ready.wait()

    def _expired(self, response: HttpResponse) -> bool:
        if response.status_code == 404 and self.session_id is not None:
            self._log.info("session expired (404): a new session starts")
            self._end("session-expired")
            return True
        return False

    async def _body(self, response: HttpResponse) -> bytes | None:
        """The whole body, or None past ``max_message_bytes`` (read no further)."""
        body = bytearray()

        async def take(chunk: bytes) -> bool:
            body.extend(chunk)
            return len(body) <= self._max

        await read_chunks(response, take)
        if len(body) > self._max:
            self._log.warning("HTTP body dropped", reason=f"over {self._max} bytes")
            return None
        return bytes(body)

    def _oversized(self, what: str) -> str:
        return f"{what} is over max_message_bytes ({self._max} bytes)"

    async def _json(self, body: bytes, waiting: set[Any]) -> None:
        await self._take(body, waiting)
        await self._unanswered(waiting, "the server's JSON answer left it out")

    async def _refused(self, status: int, body: bytes, waiting: set[Any]) -> None:
        answers = [m for m in _peek(body) if m.method is None and m.id in waiting]
        if answers:
            await self._json(body, waiting)
            return
        self._log.warning("HTTP error", status=status)
        self._trace_http(f"HTTP POST {self.description} -> {status}")
        await self._unanswered(waiting, f"HTTP {status}")

    async def _take(self, payload: bytes, waiting: set[Any]) -> int:
        """Hand ``payload`` (a JSON body, or an event's data) to the connection and
        strike the requests it answers off ``waiting``; return the messages it held. An
        array that the revision in force refuses answers nothing; the reader fails the
        requests it carried answers to, as on every transport."""
        messages = _peek(payload)
        # A server request may reuse an id; an id of another kind answers nothing of ours.
        waiting -= {m.id for m in messages if m.method is None and type(m.id) in (int, str)}
        await self._deliver(payload)
        return len(messages)

    async def _unanswered(
        self, waiting: set[Any], why: str, error: McplHostError | None = None
    ) -> None:
        """Settle the requests a POST will never answer, rather than let them wait:
        through the connection when there is one, with ``error`` (else a -32603
        :class:`RequestError` naming ``why``), so no JSON-RPC answer is made up on the
        wire; without a connection above, with a -32603 answer line."""
        ids = sorted(waiting, key=repr)
        waiting.clear()
        if not ids:
            return
        if self._failed is not None:
            self._failed(ids, error or RequestError(INTERNAL_ERROR, f"no answer over HTTP: {why}"))
            return
        for request_id in ids:
            member = {"code": INTERNAL_ERROR, "message": f"no answer over HTTP: {why}"}
            answer = {"jsonrpc": "2.0", "id": request_id, "error": member}
            await self._deliver(msgspec.json.encode(answer))

    async def _deliver(self, payload: bytes) -> None:
        if not payload.strip():
            return
        # JSON allows CR and LF only between tokens: as spaces the message is one line.
        line = payload.replace(b"\r", b" ").replace(b"\n", b" ") + b"\n"
        with contextlib.suppress(trio.ClosedResourceError, trio.BrokenResourceError):
            await self._send.send(line)

    # -- event streams ----------------------------------------------------------------

    async def _events(
        self, response: HttpResponse, waiting: set[Any], *, stateless: bool = False
    ) -> None:
        """An answer as an event stream; resumed while requests of it wait (on the
        stateless revision, which has no resumption, its requests are reported broken)."""
        decoder = SseDecoder(self._max)
        if (await self._read_events(response, decoder, waiting)).settled:
            return
        if stateless and waiting and not self._closed:
            await self._stream_broke(waiting)
            return
        resumes = 0
        while waiting and not self._closed:
            last = decoder.last_event_id
            if not last or resumes == _MAX_RESUMES:
                await self._unanswered(waiting, "its event stream ended before the answer")
                return
            if not echoable_event_id(last):
                self._log.warning("HTTP header refused", reason="an event id not fit to send back")
                await self._unanswered(
                    waiting, "its event stream ended, and its event id cannot go in Last-Event-ID"
                )
                return
            resumes += 1
            await trio.sleep(retry_seconds(decoder.retry_ms))
            headers = self._headers(_ACCEPT_EVENTS, last)
            with await self._open(b"GET", headers) as resumed:
                if self._expired(resumed):
                    return
                kind = content_kind(resumed)
                if resumed.status_code != 200 or kind != "text/event-stream":
                    await self._unanswered(
                        waiting, f"resuming its stream: HTTP {resumed.status_code}"
                    )
                    return
                self._log.debug("event stream resumed", attempt=resumes)
                if (await self._read_events(resumed, decoder, waiting)).settled:
                    return

    async def _stream_broke(self, waiting: set[Any]) -> None:
        """A stateless POST's stream ended before its answers: the connection re-issues
        what is safe to repeat, with new ids, and fails the rest (driver/rebind.py)."""
        self._log.info("response stream broke", unanswered=len(waiting))
        if self._broken is None:  # no connection above to decide: they fail
            await self._unanswered(waiting, "its event stream ended before the answer")
            return
        ids = sorted(waiting, key=repr)
        waiting.clear()
        self._broken(ids)

    async def _read_events(
        self, response: HttpResponse, decoder: SseDecoder, waiting: set[Any] | None
    ) -> _Read:
        """Read one event stream: a POST's (``waiting``: the requests it carried) until
        each is answered, or the GET stream (None) until it ends. An event past the bound
        fails the POST's requests at once; on the GET stream it is dropped."""
        messages = 0
        dropped = decoder.dropped
        settled = False

        async def take(chunk: bytes) -> bool:
            nonlocal messages, dropped, settled
            for event in decoder.feed(chunk):
                messages += await self._take_event(event, waiting)
            if decoder.dropped != dropped:
                dropped = decoder.dropped
                settled = await self._dropped_event(waiting)
                if settled:
                    return False
            # A POST's stream whose every request is answered owes nobody what follows.
            return waiting is None or bool(waiting)

        with contextlib.suppress(ReadError, RemoteProtocolError):
            await read_chunks(response, take)
        return _Read(messages, settled)

    async def _take_event(self, event: SseEvent, waiting: set[Any] | None) -> int:
        if event.event != "message" or not event.data.strip():
            return 0  # a priming event, or one that is not a message
        return await self._take(event.data.encode(), waiting if waiting is not None else set())

    async def _dropped_event(self, waiting: set[Any] | None) -> bool:
        """An event passed the bound: one log line; a POST's requests fail at once (True:
        read no more of it), the GET stream goes on without the event."""
        self._log.warning(
            "SSE event dropped",
            reason=f"over max_message_bytes ({self._max} bytes)",
            stream="GET" if waiting is None else "POST",
        )
        if waiting is None:
            return False
        await self._unanswered(waiting, self._oversized("an event of its stream"))
        return True

    async def _listen(self) -> None:
        """The GET stream: what the server sends outside any answer. Reopened when it
        ends, after the server's ``retry`` with a floor and a backoff (sse_reopen.py)."""
        decoder = SseDecoder(self._max)
        reopening = Reopening()
        try:
            while not self._closed:
                last = decoder.last_event_id
                resume_from = last if last and echoable_event_id(last) else None
                headers = self._headers(_ACCEPT_EVENTS, resume_from)
                opened = trio.current_time()
                read = _Read(0, settled=False)
                try:
                    with await self._open(b"GET", headers) as r:
                        self._listen_ready.set()
                        if self._expired(r):
                            return
                        if r.status_code != 200 or content_kind(r) != "text/event-stream":
                            self._log.debug("no GET stream", status=r.status_code)
                            return
                        read = await self._read_events(r, decoder, None)
                except Exception as exc:  # HttpClientError, or a bug: try again later
                    self._log.debug("GET stream failed", error=type(exc).__name__)
                    self._listen_ready.set()
                reopening.ended(lived=trio.current_time() - opened, delivered=read.messages > 0)
                await trio.sleep(reopening.delay(decoder.retry_ms))
        finally:
            self._listen_ready.set()

    def _safe(self, text: str) -> str:
        return self._redactor.log_value(text)


def _as_httpx(response: HttpResponse) -> httpx.Response:
    """The answer's status and headers as the auth session reads them (httpx's type):
    made only when the target has ``auth``."""
    import httpx  # noqa: PLC0415 - the auth flow's library, loaded with it

    return httpx.Response(response.status_code, headers=response.raw_headers)


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
