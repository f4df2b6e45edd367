"""A server reached over a WebSocket (``ws://``, ``wss://``), seen as a line stream.

The connection reads and writes newline-delimited JSON on a ``trio.abc.Stream``; this
module adapts WebSocket frames to that (the MCPL host's rule, spec section 2):

- each incoming frame (text, or binary taken as UTF-8) is split on ``\\n``, each part is
  stripped of surrounding whitespace, blank parts are skipped, and every other part is
  delivered as one line ending in ``\\n``;
- each line the host writes becomes one text frame, without its newline.

The token is resolved at each dial (a provider is called every time) and sent as the
``token`` query parameter. The dialled URL is never logged nor put in a message: errors
name the target as :func:`~mcpl_host.transports.targets.describe` shows it, and the
token is added to the connection's redactor before anything can echo it.

The handshake and the frame reader run in a task of the caller's nursery, inside a
nursery of their own, so a failing handshake or reader is translated here and never
reaches the caller's nursery.
"""

from __future__ import annotations

import contextlib
import inspect
import math
import ssl
from collections.abc import Callable
from typing import Any, Final, cast

import trio
import trio_websocket
import wsproto.utilities

from ..protocol.errors import ConfigurationError, TransportError
from ..protocol.framing import DEFAULT_MAX_MESSAGE_BYTES
from ..protocol.redact import Redactor
from .targets import (
    DialRedactor,
    WebSocketTarget,
    WebSocketURL,
    basic_credentials,
    describe,
    split_websocket_url,
    token_secrets,
    websocket_resource,
)

__all__ = ["CLOSE_TIMEOUT", "WebSocketTransport", "open_websocket"]

CLOSE_TIMEOUT: Final = 2.0
"""How long ``aclose()`` waits for the closing handshake, and then for the reader."""

# A peer that closes with one of these has ended the stream cleanly: end of file.
_CLEAN_CLOSE: Final = frozenset({1000, 1001})
_RECEIVE_BUFFER: Final = 64 * 1024
_SEND_ERRORS: Final = (trio_websocket.ConnectionClosed, wsproto.utilities.LocalProtocolError)


class WebSocketTransport:
    """An open WebSocket to a server: ``stream`` carries lines both ways.

    Built by :func:`open_websocket`; :meth:`aclose` sends a normal close (1000) and
    releases the socket within :data:`CLOSE_TIMEOUT` seconds (twice that at worst).
    """

    def __init__(self, *, description: str, redactor: Redactor) -> None:
        self.description = description
        self._redactor = redactor
        self._ws: trio_websocket.WebSocketConnection | None = None
        self._stream: _LineStream | None = None
        self._reader_scope: trio.CancelScope | None = None
        self._finished = trio.Event()
        self._close_started = False
        self._closed = trio.Event()

    @property
    def stream(self) -> trio.abc.Stream:
        """The server's lines, both ways (a line per frame)."""
        assert self._stream is not None, "the transport is not open yet"
        return self._stream

    async def aclose(self) -> None:
        """Close the WebSocket (code 1000) and the socket under it. Idempotent; raises
        nothing; bounded; runs shielded, so a cancelled caller still closes."""
        if self._close_started:
            with trio.CancelScope(shield=True), trio.move_on_after(2 * CLOSE_TIMEOUT):
                await self._closed.wait()
            return
        self._close_started = True
        try:
            with trio.CancelScope(shield=True):
                if self._stream is not None:
                    self._stream.closed = True
                if self._ws is not None:
                    with (
                        trio.move_on_after(CLOSE_TIMEOUT),
                        contextlib.suppress(
                            trio.BrokenResourceError,
                            trio.ClosedResourceError,
                            OSError,
                            trio_websocket.HandshakeError,
                            *_SEND_ERRORS,
                        ),
                    ):
                        await self._ws.aclose(1000)
                if self._reader_scope is not None:
                    self._reader_scope.cancel()
                with trio.move_on_after(CLOSE_TIMEOUT):
                    await self._finished.wait()
        finally:
            self._closed.set()

    async def _run(
        self,
        stream: trio.abc.Stream,
        url: WebSocketURL,
        resource: str,
        headers: list[tuple[bytes, bytes]],
        max_message_size: int,
        *,
        task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        """Run the handshake, then keep the frame reader going until closed.

        Raises (before ``started``) :class:`TransportError` when the handshake fails;
        afterwards raises nothing but cancellation.
        """
        reader = _ReaderWatch()
        opened = False
        try:
            async with trio.open_nursery() as nursery:
                self._reader_scope = nursery.cancel_scope
                with trio.CancelScope() as handshake:
                    reader.on_exit = handshake.cancel
                    ws = await trio_websocket.wrap_client_stream(
                        reader.nursery(nursery),
                        cast(trio.SocketStream, stream),  # any trio stream will do
                        url.authority,
                        resource,
                        extra_headers=headers,
                        max_message_size=max_message_size,
                        receive_buffer_size=_RECEIVE_BUFFER,
                    )
                    opened = True
                if opened:
                    self._ws = ws
                    self._stream = _LineStream(ws, self.aclose)
                    task_status.started()
                    await trio.sleep_forever()
        finally:
            with trio.CancelScope(shield=True):
                await trio.aclose_forcefully(stream)
            self._finished.set()
        if not opened:
            # Still the opener's task (started() was not called): this reaches it.
            raise _handshake_failure(self.description, reader.error, self._redactor)


class _ReaderWatch:
    """Runs trio-websocket's reader task so that its end is seen and its error kept.

    The reader raises the handshake's rejection in its own task; here that is caught, so
    that it reaches the opener as a :class:`TransportError`, not through a nursery.
    """

    def __init__(self) -> None:
        self.error: BaseException | None = None
        self.on_exit: Callable[[], None] = lambda: None

    def nursery(self, nursery: trio.Nursery) -> trio.Nursery:
        watch = self

        class _Spawner:
            def start_soon(self, fn: Callable[..., Any], *args: Any) -> None:
                nursery.start_soon(watch._watched, fn, *args)

        return cast(trio.Nursery, _Spawner())

    async def _watched(self, fn: Callable[..., Any], *args: Any) -> None:
        try:
            await fn(*args)
        except Exception as exc:
            self.error = exc
        finally:
            self.on_exit()


def _handshake_failure(label: str, error: BaseException | None, redactor: Redactor) -> Exception:
    if isinstance(error, trio_websocket.ConnectionRejected):
        why = f"the server refused the WebSocket upgrade (HTTP {error.status_code})"
    elif error is None or isinstance(error, trio_websocket.ConnectionClosed):
        why = "the connection closed during the WebSocket handshake"
    else:
        why = f"the WebSocket handshake failed ({type(error).__name__})"
    return TransportError(
        redactor.log_value(f"cannot connect to {label}: {why}"), reason="connect-failed"
    )


class _LineStream(trio.abc.Stream):
    """A WebSocket as a newline-delimited byte stream (see the module's docstring)."""

    def __init__(self, ws: trio_websocket.WebSocketConnection, close: Callable[[], Any]) -> None:
        self._ws = ws
        self._close = close
        self._received = bytearray()  # whole lines, not yet handed out
        self._unsent = bytearray()  # the host's unfinished line
        self._eof = False
        self._receiving = False
        self._sending = False
        self.closed = False

    async def receive_some(self, max_bytes: int | None = None) -> bytes:
        if max_bytes is not None and max_bytes < 1:
            raise ValueError("max_bytes must be at least 1")
        if self._receiving:
            raise trio.BusyResourceError("another task is already receiving")
        self._receiving = True
        try:
            await trio.lowlevel.checkpoint()
            while not self._received:
                if self.closed:
                    raise trio.ClosedResourceError("the WebSocket is closed")
                if self._eof:
                    return b""
                try:
                    message = await self._ws.get_message()
                except trio_websocket.ConnectionClosed as exc:
                    if self.closed:
                        raise trio.ClosedResourceError("the WebSocket is closed") from None
                    code = exc.reason.code if exc.reason is not None else None
                    if code in _CLEAN_CLOSE:
                        self._eof = True
                        continue
                    raise trio.BrokenResourceError(
                        f"the WebSocket closed abnormally (code {code})"
                    ) from None
                self._received += frame_lines(message)
            if self.closed:
                raise trio.ClosedResourceError("the WebSocket is closed")
            size = len(self._received) if max_bytes is None else max_bytes
            chunk = bytes(self._received[:size])
            del self._received[:size]
            return chunk
        finally:
            self._receiving = False

    async def send_all(self, data: bytes | bytearray | memoryview) -> None:
        if self._sending:
            raise trio.BusyResourceError("another task is already sending")
        if self.closed:
            raise trio.ClosedResourceError("the WebSocket is closed")
        self._sending = True
        try:
            self._unsent += data
            *lines, rest = bytes(self._unsent).split(b"\n")
            self._unsent = bytearray(rest)
            sent = False
            for line in lines:
                if not line.strip():
                    continue
                try:
                    await self._ws.send_message(_frame(line))
                except _SEND_ERRORS:
                    if self.closed:
                        raise trio.ClosedResourceError("the WebSocket is closed") from None
                    raise trio.BrokenResourceError("the WebSocket is closed") from None
                sent = True
            if not sent:
                await trio.lowlevel.checkpoint()
        finally:
            self._sending = False

    async def wait_send_all_might_not_block(self) -> None:
        if self.closed:
            raise trio.ClosedResourceError("the WebSocket is closed")
        await trio.lowlevel.checkpoint()

    async def aclose(self) -> None:
        self.closed = True
        await self._close()


def frame_lines(message: str | bytes) -> bytes:
    """An incoming frame as the lines it carries, each ending in ``\\n``."""
    data = message.encode() if isinstance(message, str) else bytes(message)
    out = bytearray()
    for part in data.split(b"\n"):
        line = part.strip()
        if line:
            out += line
            out += b"\n"
    return bytes(out)


def _frame(line: bytes) -> str | bytes:
    # The host writes UTF-8 JSON: a text frame. Anything else goes out as it is.
    try:
        return line.decode()
    except UnicodeDecodeError:
        return line


async def open_websocket(
    target: WebSocketTarget,
    *,
    nursery: trio.Nursery,
    redactor: Redactor,
    max_message_bytes: int | None = None,
) -> WebSocketTransport:
    """Dial ``target`` and complete the WebSocket handshake.

    The token (a provider is called now) goes in the query; the frame reader runs in
    ``nursery`` until :meth:`WebSocketTransport.aclose`. A frame larger than the
    target's ``max_message_bytes`` (else ``max_message_bytes``, else the framing
    default) closes the socket (code 1009) instead of being held. ``redactor`` learns
    the token when it is a :class:`~mcpl_host.transports.targets.DialRedactor` (what
    ``redactor_for`` builds for a WebSocket target).

    Raises:
        TransportError: ``reason="connect-failed"`` when the name does not resolve, the
            address refuses, TLS fails, the server refuses the upgrade or closes during
            it, or the token provider raises; ``reason="connect-timeout"`` past the
            target's ``open_timeout``.
        ConfigurationError: the token provider returned something other than a
            non-empty string.
    """
    label = describe(target)
    url = split_websocket_url(target.url)
    token = await _resolve_token(target, label)
    secrets = token_secrets(token) if token is not None else []
    if isinstance(redactor, DialRedactor):
        redactor.learn(secrets)
    local = Redactor([*redactor.secrets, *secrets])  # for this module's own messages
    headers = _headers(target, url)
    limit = target.max_message_bytes or max_message_bytes or DEFAULT_MAX_MESSAGE_BYTES
    transport = WebSocketTransport(description=label, redactor=local)
    timeout = target.open_timeout if target.open_timeout is not None else math.inf
    try:
        with trio.fail_after(timeout):
            stream = await _dial(target, url, label, local)
            try:
                await nursery.start(
                    transport._run, stream, url, websocket_resource(url, token), headers, limit
                )
            except BaseException:
                await trio.aclose_forcefully(stream)
                raise
    except trio.TooSlowError:
        raise TransportError(
            f"cannot connect to {label}: no WebSocket within {timeout:g} s",
            reason="connect-timeout",
        ) from None
    return transport


async def _resolve_token(target: WebSocketTarget, label: str) -> str | None:
    token = target.token
    if token is None or isinstance(token, str):
        return token
    try:
        value: object = token()
        if inspect.isawaitable(value):
            value = await value
    except Exception as exc:
        raise TransportError(
            f"cannot connect to {label}: the token provider raised {type(exc).__name__}",
            reason="connect-failed",
        ) from None
    if not isinstance(value, str) or not value:
        raise ConfigurationError(
            f"the token provider of {label} returned {type(value).__name__}, not a non-empty string"
        )
    return value


def _headers(target: WebSocketTarget, url: WebSocketURL) -> list[tuple[bytes, bytes]]:
    headers = [(name.encode(), value.encode()) for name, value in target.headers.items()]
    basic = basic_credentials(url)
    if basic is not None and not any(n.lower() == "authorization" for n in target.headers):
        headers.append((b"Authorization", basic.encode()))
    return headers


async def _dial(
    target: WebSocketTarget, url: WebSocketURL, label: str, redactor: Redactor
) -> trio.abc.Stream:
    """The TCP (and TLS) connection under the WebSocket."""
    try:
        if not url.secure:
            return await trio.open_tcp_stream(url.host, url.port)
        context = target.ssl_context or _default_context()
        tls = await trio.open_ssl_over_tcp_stream(
            url.host, url.port, ssl_context=context, https_compatible=True
        )
    except OSError as exc:
        raise TransportError(
            f"cannot connect to {label}: {_reason(exc, redactor)}", reason="connect-failed"
        ) from None
    try:
        await tls.do_handshake()
    except trio.BrokenResourceError as exc:
        await trio.aclose_forcefully(tls)
        cause = exc.__cause__ or exc
        raise TransportError(
            f"cannot connect to {label}: TLS failed: {_reason(cause, redactor)}",
            reason="connect-failed",
        ) from None
    except BaseException:
        await trio.aclose_forcefully(tls)
        raise
    return tls


def _default_context() -> ssl.SSLContext:
    return ssl.create_default_context()


def _reason(exc: BaseException, redactor: Redactor) -> str:
    # strerror, not str(exc): trio's "all attempts failed" text lists every address.
    text = getattr(exc, "strerror", None) or getattr(exc, "reason", None) or str(exc)
    return redactor.log_value(str(text) or type(exc).__name__, 200)
