"""The loopback redirect of an interactive login (RFC 8252 section 7.3): the host listens
on a loopback address, sends a person's browser to the authorization server, and takes
the one redirect that comes back with the authorization code.

HTTP is parsed by h11; what a client may cost is bounded, because any local process can
connect: a request head of at most 16 KiB, 10 s per connection to send it, 16
connections served at once, and the whole wait bounded by ``timeout``. The redirect's
query holds the authorization code, so no log event here carries a request target.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from types import TracebackType
from typing import TYPE_CHECKING, Any, Final

import trio

from .._log import get_logger
from ..protocol.errors import AuthorizationRequired
from ..protocol.redact import log_value

# h11 and webbrowser are imported where a login uses them: `import mcpl_host.auth` (the
# CLI's, the faces') stays light.
if TYPE_CHECKING:
    import h11

__all__ = ["LoopbackRedirect"]

MAX_HEAD: Final = 16 * 1024
CONNECTION_DEADLINE: Final = 10.0
MAX_CONNECTIONS: Final = 16

_RECEIVE_SIZE: Final = 4096

_RECEIVED_PAGE: Final = (
    b"<!doctype html><html><head><meta charset=utf-8><title>mcpl-host</title></head>"
    b"<body><p>Authorization received, you can close this window.</p></body></html>"
)
_REFUSED_PAGE: Final = (
    b"<!doctype html><html><head><meta charset=utf-8><title>mcpl-host</title></head>"
    b"<body><p>This address only receives an authorization redirect.</p></body></html>"
)

_log = get_logger(__name__)


def _print_announcement(url: str) -> None:
    # Escaped: the URL is built from an authorization server's metadata, and a control
    # character in it must not reach a terminal raw. Not cut: a person must copy it whole.
    print(f"Open this URL to authorize: {log_value(url, sys.maxsize)}", file=sys.stderr, flush=True)


class LoopbackRedirect:
    """Receives one authorization redirect on a loopback listener.

    Use as an async context manager: entering binds ``host``:``port`` (0: a free port)
    and makes :attr:`redirect_uri` available, to register and send in the authorization
    request; leaving closes the listener. :meth:`authorize` may be called more than once
    while it is open.

    ``host`` should be a loopback IP literal (RFC 8252 section 8.3); the redirect URI
    names the address actually bound, so a name like ``localhost`` still gives a URI a
    browser reaches the same listener by. ``announce`` is called with the authorization
    URL every time, so a person can open it by hand (by default one line on stderr);
    with ``open_browser`` the browser is also asked to open it.
    """

    def __init__(
        self,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        path: str = "/callback",
        open_browser: bool = True,
        timeout: float = 300.0,
        announce: Callable[[str], None] | None = None,
    ) -> None:
        if not path.startswith("/"):
            raise ValueError(f"the callback path must start with '/', not {path!r}")
        self._host = host
        self._port = port
        self._path = path
        self._open_browser = open_browser
        self._timeout = timeout
        self._announce = announce if announce is not None else _print_announcement
        self._listener: trio.SocketListener | None = None
        self._origin = ""

    @property
    def redirect_uri(self) -> str:
        """``http://<address>:<port><path>`` of the open listener.

        Raises RuntimeError outside the ``async with`` block.
        """
        self._require_listener()
        return self._origin + self._path

    async def __aenter__(self) -> LoopbackRedirect:
        """Bind the listener.

        Raises OSError when the address cannot be bound (the port is taken).
        """
        if self._listener is not None:
            raise RuntimeError("LoopbackRedirect is already open")
        listeners = await trio.open_tcp_listeners(self._port, host=self._host)
        # A name may resolve to several addresses, each bound on its own port when the
        # port is 0; one listener and one URI naming its address is what a browser needs.
        for extra in listeners[1:]:
            await extra.aclose()
        self._listener = listeners[0]
        self._origin = _origin(self._listener.socket.getsockname())
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        listener, self._listener = self._listener, None
        if listener is not None:
            await listener.aclose()

    async def authorize(self, url: str) -> str:
        """Announce ``url`` (and open a browser on it), wait for the redirect and return
        the full URL it was made to, query included
        (``http://127.0.0.1:PORT/callback?code=...&state=...``). Requests to another path
        are answered 400 and the wait goes on.

        Raises AuthorizationRequired when no redirect arrived within ``timeout``
        seconds, and RuntimeError outside the ``async with`` block.
        """
        listener = self._require_listener()
        self._announce(url)
        received: list[str] = []
        async with trio.open_nursery() as nursery:
            if self._open_browser:
                nursery.start_soon(_open_browser, url)
            with trio.move_on_after(self._timeout):
                await self._serve(listener, received)
            # The redirect came, or the time is up: a browser still starting is not
            # waited for.
            nursery.cancel_scope.cancel()
        if not received:
            raise AuthorizationRequired(
                f"no authorization redirect arrived within {self._timeout:g} s"
            )
        return received[0]

    def _require_listener(self) -> trio.SocketListener:
        if self._listener is None:
            raise RuntimeError("LoopbackRedirect is not open: use it in 'async with'")
        return self._listener

    async def _serve(self, listener: trio.SocketListener, received: list[str]) -> None:
        """Serve connections until one brings the redirect (appended to ``received``)."""
        # Served concurrently: a browser may open a connection it sends nothing on
        # (a preconnect) before the one with the request, which must not wait behind it.
        slots = trio.Semaphore(MAX_CONNECTIONS)
        async with trio.open_nursery() as nursery:

            async def serve_one(stream: trio.SocketStream) -> None:
                try:
                    target = await self._exchange(stream)
                finally:
                    slots.release()
                if target is not None and not received:
                    received.append(self._origin + target)
                    nursery.cancel_scope.cancel()

            while True:
                await slots.acquire()
                stream = await listener.accept()
                nursery.start_soon(serve_one, stream)

    async def _exchange(self, stream: trio.SocketStream) -> str | None:
        """Read one request from ``stream`` and answer it; the request target when it
        was the redirect, else None. Never raises for what the client did."""
        import h11  # noqa: PLC0415

        conn = h11.Connection(h11.SERVER, max_incomplete_event_size=MAX_HEAD)
        target: str | None = None
        outcome = "timeout"
        async with stream:
            with trio.move_on_after(CONNECTION_DEADLINE):
                try:
                    request = await _receive_request(conn, stream)
                    if request is None:
                        outcome = "closed"
                    else:
                        target, outcome = self._classify(request)
                        page = _REFUSED_PAGE if target is None else _RECEIVED_PAGE
                        await _respond(conn, stream, 400 if target is None else 200, page)
                except h11.RemoteProtocolError as exc:
                    outcome = "malformed"
                    if conn.our_state in (h11.IDLE, h11.SEND_RESPONSE):
                        await _respond(conn, stream, exc.error_status_hint, _REFUSED_PAGE)
                except trio.BrokenResourceError:
                    # The browser went away after sending the redirect: it still counts.
                    outcome = "broken"
        # Only the outcome: the target carries the authorization code.
        _log.debug("loopback request", outcome=outcome)
        return target

    def _classify(self, request: h11.Request) -> tuple[str | None, str]:
        """The target when ``request`` is the redirect, and the outcome to log."""
        if request.method != b"GET":
            return None, "not GET"
        try:
            target = request.target.decode("ascii")
        except UnicodeDecodeError:  # h11 refuses such a target; this is belt and braces
            return None, "malformed"
        path, mark, query = target.partition("?")
        if path != self._path:
            return None, "other path"
        # A redirect always carries a code or an error, and the state; a bare GET of the
        # path is something else, and must not end the wait.
        if not mark or not query:
            return None, "no query"
        return target, "redirect"


async def _receive_request(conn: h11.Connection, stream: trio.SocketStream) -> h11.Request | None:
    """The request's head, or None when the client closed before sending one.

    Raises h11.RemoteProtocolError (a malformed or too large head) and
    trio.BrokenResourceError.
    """
    import h11  # noqa: PLC0415

    while True:
        event = conn.next_event()
        if event is h11.NEED_DATA:
            conn.receive_data(await stream.receive_some(_RECEIVE_SIZE))
            continue
        if isinstance(event, h11.Request):
            return event
        return None  # ConnectionClosed; h11 raises for anything else before a request


async def _respond(
    conn: h11.Connection, stream: trio.SocketStream, status: int, page: bytes
) -> None:
    headers = [
        ("content-type", "text/html; charset=utf-8"),
        ("content-length", str(len(page))),
        ("cache-control", "no-store"),
        # The page's address holds the code: no request the page might make carries it.
        ("referrer-policy", "no-referrer"),
        ("connection", "close"),
    ]
    import h11  # noqa: PLC0415

    data = conn.send(h11.Response(status_code=status, headers=headers))
    data += conn.send(h11.Data(data=page)) or b""
    data += conn.send(h11.EndOfMessage()) or b""
    await stream.send_all(data or b"")


async def _open_browser(url: str) -> None:
    import webbrowser  # noqa: PLC0415

    # In a thread that is abandoned on cancel: a console browser runs until it is closed.
    try:
        opened = await trio.to_thread.run_sync(webbrowser.open, url, abandon_on_cancel=True)
    except webbrowser.Error as exc:
        _log.debug("browser not opened", error=type(exc).__name__)
        return
    _log.debug("browser opened" if opened else "browser not opened")


def _origin(address: tuple[Any, ...]) -> str:
    """``http://host:port`` for a socket address, an IPv6 one in brackets."""
    host, port = str(address[0]), int(address[1])
    if ":" in host:
        host = f"[{host}]"
    return f"http://{host}:{port}"
