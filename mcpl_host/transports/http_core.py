"""The exchange core both carriers of the HTTP transport share.

:class:`~.http.HttpTransport` carries lines in one of two ways: Streamable HTTP
(http_streamable.py) or the legacy HTTP+SSE transport (http_legacy.py), which the
fallback (http_fallback.py) may switch to in the middle of a connect. Whichever carries
them, an exchange is the same: the request's headers (the target's, the session id and
revision in force, an event id to resume from, the stateless revision's own), one
request under the target's timeout with authorization in the loop, a body read within
``max_message_bytes``; and the connection's side of it: what the server sent handed on
as lines, the requests a POST will never answer settled through the connection, a
refusal answered, the transport ended on the server's word. One :class:`HttpCore` per
transport, so there is one log budget, one session id and revision, one inbound channel
and one end, whichever carrier is in use.

Header values are secrets: no log line, error or trace shows them.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final

import msgspec
import trio

from .._log import PeerLogBudget, get_logger
from ..auth.challenge import bearer_params, shown, wants_authorization
from ..auth.state import Tries
from ..protocol.errors import (
    INTERNAL_ERROR,
    AuthorizationRequired,
    McplHostError,
    RequestError,
    TransportError,
)
from ..protocol.profiles import PROFILES
from ..protocol.redact import Redactor
from ..protocol.request_headers import VERSION_HEADER
from ..protocol.sse import SseEvent
from .http_body import read_chunks
from .http_peek import peek
from .http_pool import ConnectError, HttpPool, HttpResponse
from .http_target import HttpTarget, describe_http

if TYPE_CHECKING:
    import httpx

__all__ = ["HttpCore"]

_log = get_logger("mcpl_host.transports")

_INBOUND_BUFFER: Final = 64
_VERSION_HEADER: Final = VERSION_HEADER.encode("ascii")


class HttpCore:
    """One HTTP transport's exchanges and its side of the connection, for the carrier
    in use. ``session_id`` and ``protocol_version`` are the header state: the
    Streamable HTTP carrier keeps the session id, the connection sets the revision
    (through ``HttpTransport.use_revision``). ``closed`` is set once the transport
    closes; ``end_reason`` says why it ended on the server's word, when it did."""

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
        self.max_message_bytes = max_message_bytes
        self._redactor = redactor
        self._pool = pool
        self._auth_client = auth_client
        # The configured headers, encoded once (HttpTarget checked them: ASCII).
        self._fixed: list[tuple[bytes, bytes]] = [
            (name.encode("ascii"), value.encode("ascii")) for name, value in target.headers.items()
        ]
        self._session_header: tuple[bytes, bytes] | None = None
        self._send, self.inbound = trio.open_memory_channel[bytes](_INBOUND_BUFFER)
        self.session_id: str | None = None
        # The revision in force: set by the connection once it accepted the server's
        # answer, so a refused revision never reaches a header.
        self.protocol_version: str | None = None
        self.closed = False
        self.end_reason: str | None = None
        # A server decides how many of this transport's warnings there are.
        self._log_budget = PeerLogBudget()
        self.log = self._log_budget.wrap(_log.bind(target=self.description))
        # The connection's: where requests failed by a typed error, not by an answer
        # (authorization), are settled; and where HTTP exchanges are traced.
        self.on_failed: Callable[[list[Any], McplHostError], None] | None = None
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
                on_http=self.trace_http,
            )

    @property
    def stateless(self) -> bool:
        """The revision in force is 2026-07-28's: no session, no GET stream, cancelling
        by closing a response stream."""
        profile = PROFILES.get(self.protocol_version) if self.protocol_version else None
        return profile is not None and profile.stateless

    def target_of(self, path: str) -> bytes:
        """The request target for ``path`` on the target's origin (the pool's rule: the
        whole URL through an ``http://`` proxy)."""
        return self._pool.target_of(path)

    def end(self, reason: str) -> None:
        """The session is over on the server's word: the connection reads the end."""
        if self.end_reason is None:
            self.end_reason = reason
        self._send.close()

    async def release(self) -> None:
        """Close the inbound channel, the pool's sockets and the auth flow's client: the
        last step of closing the transport, after its tasks are cancelled."""
        self._send.close()
        self._pool.close()
        if self._auth_client is not None:
            await self._auth_client.aclose()

    def flush_log(self) -> None:
        self._log_budget.flush()

    def trace_http(self, text: str) -> None:
        if self.on_http is not None:
            self.on_http(text)

    def safe(self, text: str) -> str:
        return self._redactor.log_value(text)

    def unreachable(self, exc: ConnectError) -> TransportError:
        where = f"{exc.where} ({self.description})" if exc.where else self.description
        return TransportError(f"cannot connect to {where}: {exc.why}", reason="connect-failed")

    # -- exchanges --------------------------------------------------------------------

    def headers(
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

    async def open(
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
        The caller closes the response (``with await core.open(...) as response``),
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
            self.trace_http(f"HTTP {name} {self.description} -> {status}")
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

    async def body(self, response: HttpResponse) -> bytes | None:
        """The whole body, or None past ``max_message_bytes`` (read no further)."""
        body = bytearray()

        async def take(chunk: bytes) -> bool:
            body.extend(chunk)
            return len(body) <= self.max_message_bytes

        await read_chunks(response, take)
        if len(body) > self.max_message_bytes:
            self.log.warning("HTTP body dropped", reason=f"over {self.max_message_bytes} bytes")
            return None
        return bytes(body)

    def oversized(self, what: str) -> str:
        return f"{what} is over max_message_bytes ({self.max_message_bytes} bytes)"

    # -- the connection's side --------------------------------------------------------

    async def json(self, body: bytes, waiting: set[Any]) -> None:
        """A JSON answer: handed on, and the requests it left out settled."""
        await self.take(body, waiting)
        await self.unanswered(waiting, "the server's JSON answer left it out")

    async def refused(self, status: int, body: bytes, waiting: set[Any]) -> None:
        """An HTTP error to a POST: its JSON-RPC answers when the body holds some for the
        requests it carried, else each request fails naming the status."""
        answers = [m for m in peek(body) if m.method is None and m.id in waiting]
        if answers:
            await self.json(body, waiting)
            return
        self.log.warning("HTTP error", status=status)
        self.trace_http(f"HTTP POST {self.description} -> {status}")
        await self.unanswered(waiting, f"HTTP {status}")

    async def take(self, payload: bytes, waiting: set[Any]) -> int:
        """Hand ``payload`` (a JSON body, or an event's data) to the connection and
        strike the requests it answers off ``waiting``; return the messages it held. An
        array that the revision in force refuses answers nothing; the reader fails the
        requests it carried answers to, as on every transport."""
        messages = peek(payload)
        # A server request may reuse an id; an id of another kind answers nothing of ours.
        waiting -= {m.id for m in messages if m.method is None and type(m.id) in (int, str)}
        await self.deliver(payload)
        return len(messages)

    async def take_event(self, event: SseEvent, waiting: set[Any] | None) -> int:
        """An event of a stream: its data taken when it is a message (``waiting``: the
        POST's requests, or None on a stream that answers no POST)."""
        if event.event != "message" or not event.data.strip():
            return 0  # a priming event, or one that is not a message
        return await self.take(event.data.encode(), waiting if waiting is not None else set())

    async def dropped_event(self, waiting: set[Any] | None) -> bool:
        """An event passed the bound: one log line; a POST's requests fail at once (True:
        read no more of it), the GET stream goes on without the event."""
        self.log.warning(
            "SSE event dropped",
            reason=f"over max_message_bytes ({self.max_message_bytes} bytes)",
            stream="GET" if waiting is None else "POST",
        )
        if waiting is None:
            return False
        await self.unanswered(waiting, self.oversized("an event of its stream"))
        return True

    async def unanswered(
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
        if self.on_failed is not None:
            self.on_failed(
                ids, error or RequestError(INTERNAL_ERROR, f"no answer over HTTP: {why}")
            )
            return
        for request_id in ids:
            member = {"code": INTERNAL_ERROR, "message": f"no answer over HTTP: {why}"}
            answer = {"jsonrpc": "2.0", "id": request_id, "error": member}
            await self.deliver(msgspec.json.encode(answer))

    async def deliver(self, payload: bytes) -> None:
        """Hand one message (or batch) to the connection as one line."""
        if not payload.strip():
            return
        # JSON allows CR and LF only between tokens: as spaces the message is one line.
        line = payload.replace(b"\r", b" ").replace(b"\n", b" ") + b"\n"
        with contextlib.suppress(trio.ClosedResourceError, trio.BrokenResourceError):
            await self._send.send(line)


def _as_httpx(response: HttpResponse) -> httpx.Response:
    """The answer's status and headers as the auth session reads them (httpx's type):
    made only when the target has ``auth``."""
    import httpx  # noqa: PLC0415 - the auth flow's library, loaded with it

    return httpx.Response(response.status_code, headers=response.raw_headers)
