"""The Streamable HTTP transport's HTTP/1.1 client: h11 over trio streams, a keep-alive pool.

Why not httpx here: a POST through ``httpx.AsyncClient`` spent about half of a call's
client CPU in httpx and httpcore (building and merging the request, cookies, the auth and
redirect layers, a timeout scope per socket operation, the head and the body in two
writes, a chain of async generators for the body), none of which this transport uses:
it sends to one origin, follows no redirect, keeps no cookie, bounds each exchange with
one deadline of its own. docs/performance.md has the figures. httpx still runs the
authorization flow's own requests (mcpl_host/auth) and builds the default TLS context.

What it keeps of httpcore's behaviour: HTTP/1.1 only, one exchange per connection at a
time; at most ``max_connections`` connections, a request waiting for a free one; up to
``max_keepalive`` idle connections kept for reuse, each for ``keepalive_expiry`` seconds,
and one that has become readable while idle (the server closed it, or sent something
unasked) is dropped rather than reused; a response closed before its end closes its
connection; response headers up to 100 KiB. What it adds: the head and a small body in
one ``send_all``. Bodies are read as sent (``Content-Length``, chunked, or until close);
the request asks for ``Accept-Encoding: identity`` and a compressed answer (gzip,
deflate) is still decoded.

Errors: :class:`HttpClientError` and its kinds (:class:`ConnectError`,
:class:`ReadError`, :class:`WriteError`, :class:`RemoteProtocolError`), each the cause of
the trio or h11 error chained; cancellation is trio's. No timeouts of its own: the caller
bounds an exchange (HttpCore.open).
"""

from __future__ import annotations

import base64
import os
import select
import socket
import ssl
import zlib
from typing import Final
from urllib.parse import unquote, urlsplit
from urllib.request import getproxies

import h11
import trio

__all__ = [
    "ConnectError",
    "HttpClientError",
    "HttpPool",
    "HttpResponse",
    "ReadError",
    "RemoteProtocolError",
    "WriteError",
    "environment_proxy",
]

_READ_BYTES: Final = 65536
_MAX_HEAD_BYTES: Final = 100 * 1024  # httpcore's bound on a response's head
_COALESCE_BYTES: Final = 65536  # a body up to this goes in the head's write
DECODED_PIECE: Final = 1 << 20  # bytes of a compressed body decoded at a time
KEEPALIVE_EXPIRY: Final = 5.0  # seconds an idle connection is kept (httpx's default)

Headers = list[tuple[bytes, bytes]]


class HttpClientError(Exception):
    """An exchange failed below HTTP's semantics: the connection, or the peer's bytes."""


class ConnectError(HttpClientError):
    """No connection could be made (refused, unreachable, TLS handshake failed).

    ``why`` says what went wrong in a few words (``"connection refused"``), ``where``
    the ``host:port`` it was tried on (the proxy's when there is one): the text a person
    reads, never a repr."""

    def __init__(self, message: str, *, why: str = "", where: str = "") -> None:
        super().__init__(message)
        self.why = why or message
        self.where = where


def _why(exc: BaseException) -> str:
    """What an OSError of connecting says, in a few words: trio's own ("all attempts to
    connect to ... failed") hides the errno's text in the group it chains."""
    seen: list[BaseException] = [exc]
    while seen:
        found = seen.pop(0)
        if isinstance(found, OSError) and found.strerror:
            # trio's strerror names the address too ("Error connecting to (...): ..."):
            # the errno's own words, where it has one (a resolver's error has not).
            text = found.strerror
            if found.errno and found.errno > 0 and not isinstance(found, socket.gaierror):
                text = os.strerror(found.errno)
            return text[:1].lower() + text[1:]
        if isinstance(found, BaseExceptionGroup):
            seen.extend(found.exceptions)
        if found.__cause__ is not None:
            seen.append(found.__cause__)
    return str(exc) or type(exc).__name__


class WriteError(HttpClientError):
    """The request could not be written: the connection broke."""


class ReadError(HttpClientError):
    """The response could not be read: the connection broke."""


class RemoteProtocolError(HttpClientError):
    """The server broke HTTP/1.1 (a bad head, a body cut short, no response at all)."""


class _Connection:
    """One keep-alive connection: a trio stream and its h11 state."""

    __slots__ = ("_socket", "h11", "idle_since", "stream")

    def __init__(self, stream: trio.abc.Stream, socket: trio.socket.SocketType) -> None:
        self.stream = stream
        self._socket = socket
        self.h11 = h11.Connection(h11.CLIENT, max_incomplete_event_size=_MAX_HEAD_BYTES)
        self.idle_since = 0.0

    def readable(self) -> bool:
        """Whether the idle connection has something to read: the server's close (or
        bytes nobody asked for), so it cannot carry another exchange."""
        fd = self._socket.fileno()
        if fd < 0:
            return True
        poller = select.poll()
        poller.register(fd, select.POLLIN)
        return bool(poller.poll(0))

    def close(self) -> None:
        """Close at once, without I/O (a TLS connection goes without close_notify: what
        is closed here is never read again)."""
        self._socket.close()

    async def send(self, request: h11.Request, body: bytes | None) -> None:
        conn = self.h11
        try:
            pieces = [conn.send(request) or b""]
            if body:
                # The body itself goes out as given (passed through, not copied by h11).
                pieces += conn.send_with_data_passthrough(h11.Data(data=body)) or []
            pieces.append(conn.send(h11.EndOfMessage()) or b"")
        except h11.LocalProtocolError as exc:  # a header h11 refuses: the caller's doing
            raise ValueError(f"cannot send this HTTP request: {exc}") from None
        try:
            if body and len(body) > _COALESCE_BYTES:
                for piece in pieces:
                    if piece:
                        await self.stream.send_all(piece)
            else:
                await self.stream.send_all(b"".join(pieces))
        except (trio.BrokenResourceError, trio.ClosedResourceError, OSError) as exc:
            raise WriteError(f"the connection broke while writing: {exc!r}") from exc

    async def next_event(self) -> h11.Event | type[h11.NEED_DATA] | type[h11.PAUSED]:
        """The next event of the response, reading as h11 needs (never NEED_DATA)."""
        conn = self.h11
        while True:
            try:
                event = conn.next_event()
            except h11.RemoteProtocolError as exc:
                raise RemoteProtocolError(str(exc)) from exc
            if event is not h11.NEED_DATA:
                return event
            try:
                data = await self.stream.receive_some(_READ_BYTES)
            except (trio.BrokenResourceError, trio.ClosedResourceError, OSError) as exc:
                raise ReadError(f"the connection broke while reading: {exc!r}") from exc
            try:
                conn.receive_data(bytes(data))
            except h11.RemoteProtocolError as exc:
                raise RemoteProtocolError(str(exc)) from exc


class HttpResponse:
    """A response whose head has arrived; its body is read with :meth:`read_chunk`.
    :meth:`close` gives the connection back to the pool when the body was read to its
    end, else closes it."""

    __slots__ = (
        "_connection",
        "_decoder",
        "_ended",
        "_pool",
        "raw_headers",
        "status_code",
    )

    def __init__(self, pool: HttpPool, connection: _Connection, head: h11.Response) -> None:
        self._pool = pool
        self._connection: _Connection | None = connection
        self.status_code: int = head.status_code
        # h11 gives the names lowercased; the values as sent.
        self.raw_headers: Headers = [(name, value) for name, value in head.headers]
        self._ended = False
        self._decoder = _decoder(self.header(b"content-encoding"))

    def header(self, name: bytes) -> str | None:
        """The first value of header ``name`` (lowercase), decoded as Latin-1 (any bytes
        decode), or None."""
        for key, value in self.raw_headers:
            if key == name:
                return value.decode("latin-1")
        return None

    def header_list(self, name: bytes) -> list[str]:
        """Every value of header ``name`` (lowercase), decoded as Latin-1."""
        return [value.decode("latin-1") for key, value in self.raw_headers if key == name]

    async def read_chunk(self) -> bytes:
        """The next piece of the body (decoded when it was compressed, at most
        :data:`DECODED_PIECE` bytes a piece: a small compressed chunk may stand for
        gigabytes); b"" at its end.

        Raises:
            ReadError, RemoteProtocolError: the body could not be read to its end.
        """
        decoder = self._decoder
        while True:
            if decoder is not None and (decoder.unconsumed_tail or self._ended):
                # What the last compressed piece held past one decoded piece, or, at the
                # end, what the decoder still has.
                tail = decoder.unconsumed_tail
                data = _decode(decoder, tail)
                if data:
                    return data
                if self._ended:
                    self._decoder = decoder = None
                elif decoder.unconsumed_tail == tail:
                    raise RemoteProtocolError("a compressed body that does not decode")
                continue
            connection = self._connection
            if connection is None or self._ended:
                await trio.lowlevel.checkpoint()
                return b""
            event = await connection.next_event()
            if type(event) is h11.Data:
                data = bytes(event.data)
                if decoder is not None:
                    data = _decode(decoder, data)
                if data:
                    return data
                continue  # nothing yet (an empty piece, or a decoder's partial input)
            if type(event) is not h11.EndOfMessage:
                raise RemoteProtocolError(f"unexpected HTTP event {type(event).__name__}")
            self._ended = True

    def __enter__(self) -> HttpResponse:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def release(self) -> bool:
        """Give the connection back when the exchange is complete (no I/O); True when
        nothing more is to be done, False when :meth:`close` must close it."""
        connection = self._connection
        if connection is None:
            return True
        if not self._ended:
            return False
        self._connection = None
        self._pool.release(connection)
        return True

    def close(self) -> None:
        """Close the response: its connection goes back to the pool, or is closed when
        the body was not read to its end. Idempotent; no I/O, so it never waits."""
        if not self.release():
            connection = self._connection
            self._connection = None
            assert connection is not None
            self._pool.discard(connection)


def _decoder(encoding: str | None) -> zlib._Decompress | None:
    if encoding is None:
        return None
    kind = encoding.strip().lower()
    if kind in ("gzip", "x-gzip"):
        return zlib.decompressobj(zlib.MAX_WBITS | 16)
    if kind == "deflate":
        return zlib.decompressobj()
    return None  # identity, or one not known: the bytes as sent (httpx does the same)


def _decode(decoder: zlib._Decompress, data: bytes) -> bytes:
    try:
        return decoder.decompress(data, DECODED_PIECE)
    except zlib.error as exc:
        raise RemoteProtocolError(f"a compressed body: {exc}") from exc


async def _head(connection: _Connection) -> h11.Response:
    while True:
        event = await connection.next_event()
        if type(event) is h11.Response:
            return event
        if type(event) is not h11.InformationalResponse:  # 1xx: the answer follows
            raise RemoteProtocolError("the server closed the connection without a response")


def environment_proxy(url: str) -> str | None:
    """The proxy the environment names for ``url``, or None: ``HTTPS_PROXY`` or
    ``HTTP_PROXY`` by the URL's scheme, else ``ALL_PROXY`` (as urllib finds them, any
    case), unless ``NO_PROXY`` names the host (``*``; a host, which covers its
    subdomains; ``.domain`` for subdomains only; an address). A proxy given without a
    scheme is an ``http://`` one. httpx's reading, less its scheme prefixes in
    ``NO_PROXY``."""
    proxies = getproxies()
    parts = urlsplit(url)
    found = proxies.get(parts.scheme.lower()) or proxies.get("all")
    if not found or _bypassed((parts.hostname or "").lower(), proxies.get("no", "")):
        return None
    return found if "://" in found else f"http://{found}"


def _bypassed(host: str, no_proxy: str) -> bool:
    for entry in no_proxy.split(","):
        name = entry.strip().lower().strip("[]")
        if name == "*":
            return True
        if not name:
            continue
        if name.startswith("."):
            if host.endswith(name):
                return True
        elif host == name or host.endswith("." + name):
            return True
    return False


class HttpPool:
    """Keep-alive HTTP/1.1 connections to the origin of one URL, directly or through an
    ``http://`` proxy (a CONNECT tunnel for ``https://``, the absolute URL for
    ``http://``).

    Raises:
        ValueError: an ``https://`` URL without an ``ssl_context``, or a proxy that is not
            an ``http://`` URL with a host.
    """

    def __init__(
        self,
        url: str,
        *,
        ssl_context: ssl.SSLContext | None,
        max_connections: int,
        max_keepalive: int,
        user_agent: bytes,
        proxy: str | None = None,
    ) -> None:
        parts = urlsplit(url)
        self.tls = parts.scheme.lower() == "https"
        host = parts.hostname or ""
        self._host = host
        self._port = parts.port or (443 if self.tls else 80)
        if self.tls and ssl_context is None:
            raise ValueError("an https:// pool needs an ssl_context")
        self._ssl_context = ssl_context
        # The request target: the path and query as written (already printable ASCII).
        target = parts.path or "/"
        if parts.query:
            target += "?" + parts.query
        self.target = target.encode("ascii")
        netloc = f"[{host}]" if ":" in host else host
        default_port = self._port == (443 if self.tls else 80)
        self.host_header = (netloc if default_port else f"{netloc}:{self._port}").encode("ascii")
        self.base_headers: Headers = [
            (b"Host", self.host_header),
            (b"User-Agent", user_agent),
            (b"Accept-Encoding", b"identity"),
        ]
        self._proxy: tuple[str, int] | None = None
        self._proxy_headers: Headers = []
        if proxy is not None:
            via = urlsplit(proxy)
            if via.scheme.lower() != "http" or not via.hostname:
                raise ValueError("only an http:// proxy is supported")
            self._proxy = (via.hostname, via.port or 80)
            if via.username is not None:
                secret = f"{unquote(via.username)}:{unquote(via.password or '')}"
                basic = b"Basic " + base64.b64encode(secret.encode())
                self._proxy_headers.append((b"Proxy-Authorization", basic))
            if not self.tls:
                # Through the proxy: the whole URL as the target, its credentials on
                # every request (a tunnel carries them once, on CONNECT).
                self.target = b"http://" + self.host_header + self.target
                self.base_headers += self._proxy_headers
        self._slots = trio.Semaphore(max_connections)
        self._max_keepalive = max_keepalive
        self._idle: list[_Connection] = []
        self._closed = False

    def target_of(self, path: str) -> bytes:
        """The request target for ``path`` (a path and query, printable ASCII) on this
        pool's origin: as it is, or the whole URL through an ``http://`` proxy."""
        if self._proxy is not None and not self.tls:
            return b"http://" + self.host_header + path.encode("ascii")
        return path.encode("ascii")

    async def request(
        self, method: bytes, headers: Headers, body: bytes | None, target: bytes | None = None
    ) -> HttpResponse:
        """Send one request (``headers`` after :attr:`base_headers`; ``Content-Length``
        is added for a body) and return once its response's head has arrived. The caller
        closes the response (:meth:`HttpResponse.close`). ``target``: another request
        target on the same origin (:meth:`target_of`) than the pool's URL.

        Raises:
            ConnectError, WriteError, ReadError, RemoteProtocolError: as their names say.
            trio.ClosedResourceError: the pool is closed.
        """
        if self._closed:
            raise trio.ClosedResourceError("the HTTP pool is closed")
        try:
            self._slots.acquire_nowait()
        except trio.WouldBlock:
            await self._slots.acquire()
        connection: _Connection | None = None
        try:
            connection = self._reusable()
            if connection is None:
                connection = await self._connect()
            all_headers = self.base_headers + headers
            if body is not None:
                all_headers.append((b"Content-Length", b"%d" % len(body)))
            request = h11.Request(method=method, target=target or self.target, headers=all_headers)
            await connection.send(request, body)
            return HttpResponse(self, connection, await _head(connection))
        except BaseException:
            if connection is not None:
                connection.close()
            self._slots.release()
            raise

    def _reusable(self) -> _Connection | None:
        now = trio.current_time()
        idle = self._idle
        while idle:
            connection = idle.pop()  # the most recent: the least likely to be closed
            if now - connection.idle_since < KEEPALIVE_EXPIRY and not connection.readable():
                return connection
            connection.close()
        return None

    async def _connect(self) -> _Connection:
        host, port = self._proxy or (self._host, self._port)
        try:
            tcp = await trio.open_tcp_stream(host, port)
        except OSError as exc:
            where = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
            if self._proxy is not None:
                where = f"the proxy at {where}"
            why = _why(exc)
            raise ConnectError(f"cannot connect to {where}: {why}", why=why, where=where) from exc
        if self._ssl_context is None:
            return _Connection(tcp, tcp.socket)
        if self._proxy is not None:
            try:
                await self._tunnel(tcp)
            except BaseException:
                tcp.socket.close()
                raise
        tls = trio.SSLStream(
            tcp, self._ssl_context, server_hostname=self._host, https_compatible=True
        )
        try:
            await tls.do_handshake()
        except BaseException as exc:
            tcp.socket.close()
            if isinstance(exc, (trio.BrokenResourceError, OSError)):
                why = f"the TLS handshake failed: {_why(exc)}"
                where = f"{self._host}:{self._port}"
                raise ConnectError(f"{where}: {why}", why=why, where=where) from exc
            raise
        return _Connection(tls, tcp.socket)

    async def _tunnel(self, tcp: trio.SocketStream) -> None:
        """Ask the proxy for a tunnel to the origin (CONNECT), for TLS to go through."""
        tunnel = _Connection(tcp, tcp.socket)
        authority = f"{self._host}:{self._port}".encode("ascii")
        if ":" in self._host:
            authority = f"[{self._host}]:{self._port}".encode("ascii")
        headers = [(b"Host", authority), *self._proxy_headers]
        await tunnel.send(h11.Request(method=b"CONNECT", target=authority, headers=headers), None)
        head = await _head(tunnel)
        if not 200 <= head.status_code < 300:
            raise ConnectError(f"the proxy refused the tunnel: HTTP {head.status_code}")
        if tunnel.h11.trailing_data[0]:
            raise RemoteProtocolError("the proxy sent bytes before the tunnel was used")

    def release(self, connection: _Connection) -> None:
        """A response read to its end gives its connection back."""
        self._slots.release()
        conn = connection.h11
        if (
            self._closed
            or conn.our_state is not h11.DONE
            or conn.their_state is not h11.DONE
            or len(self._idle) >= self._max_keepalive
        ):
            connection.close()
            return
        try:
            conn.start_next_cycle()
        except h11.LocalProtocolError:
            connection.close()
            return
        connection.idle_since = trio.current_time()
        self._idle.append(connection)

    def discard(self, connection: _Connection) -> None:
        """A response closed before its end: its connection cannot be reused."""
        connection.close()
        self._slots.release()

    def close(self) -> None:
        """Close the idle connections; those still in use close with their responses."""
        self._closed = True
        while self._idle:
            self._idle.pop().close()
