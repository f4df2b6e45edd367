"""The WebSocket transport over real loopback sockets, under a real Connection."""

from __future__ import annotations

import contextlib
import json
import logging
import re
import socket
import ssl
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
import trio
import trio_websocket
import trustme
from structlog.testing import capture_logs
from wsproto import ConnectionType, WSConnection
from wsproto.events import AcceptConnection, Event, Request, TextMessage

from mcpl_host import Connection, ConnectionClosed, Reconnect, RequestError, TransportError
from mcpl_host.config import parse_config
from mcpl_host.events import Disconnected, Reconnected
from mcpl_host.protocol.errors import ConfigurationError
from mcpl_host.protocol.redact import REDACTION_MARK, Redactor
from mcpl_host.transports import open_transport, websocket
from mcpl_host.transports.targets import (
    DialRedactor,
    HttpTarget,
    WebSocketTarget,
    describe,
    parse_target,
    redactor_for,
)
from mcpl_host.transports.websocket import WebSocketTransport, frame_lines, open_websocket

CANARY = "canary-ws-5ec7e7-do-not-log"
HEADER_CANARY = "canary-hdr-91b2-do-not-log"

# A server's script: (ws, message, connection number) -> True when it handled the message.
Script = Callable[[trio_websocket.WebSocketConnection, dict[str, Any], int], Awaitable[bool]]


def init_result(message: dict[str, Any]) -> dict[str, Any]:
    return {
        "protocolVersion": message["params"]["protocolVersion"],
        "capabilities": {"tools": {}},
        "serverInfo": {"name": "ws-test", "version": "1"},
    }


def answer(message: dict[str, Any], result: Any) -> str:
    return json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result})


class Server:
    """A scripted MCP server on a loopback WebSocket that records what it is sent.

    By default it answers ``initialize`` and ``tools/list`` (a tool named after the
    connection's number); ``script`` may handle a message first.
    """

    def __init__(self, script: Script | None = None, *, reject: int | None = None) -> None:
        self.script = script
        self.reject = reject
        self.paths: list[str] = []
        self.headers: list[dict[str, str]] = []
        self.frames: list[str | bytes] = []
        self.close_codes: list[int | None] = []
        self.port = 0

    async def start(self, nursery: trio.Nursery, ssl_context: ssl.SSLContext | None = None) -> int:
        server = await nursery.start(
            trio_websocket.serve_websocket, self.handler, "127.0.0.1", 0, ssl_context
        )
        self.port = server.port
        return self.port

    def url(self, path: str = "/mcp", scheme: str = "ws") -> str:
        return f"{scheme}://127.0.0.1:{self.port}{path}"

    async def handler(self, request: trio_websocket.WebSocketRequest) -> None:
        self.paths.append(request.path)
        self.headers.append({k.decode().lower(): v.decode() for k, v in request.headers})
        number = len(self.paths)
        if self.reject is not None:
            await request.reject(self.reject, body=f"bad token in {request.path}".encode())
            return
        ws = await request.accept()
        try:
            while True:
                frame = await ws.get_message()
                self.frames.append(frame)
                message = json.loads(frame)
                if self.script is not None and await self.script(ws, message, number):
                    continue
                method = message.get("method")
                if method == "initialize":
                    await ws.send_message(answer(message, init_result(message)))
                elif method == "tools/list":
                    tools = [{"name": f"tool{number}", "inputSchema": {"type": "object"}}]
                    await ws.send_message(answer(message, {"tools": tools}))
                elif method == "server/discover":
                    # A handshake-era server refuses it (not answering costs 5 s).
                    error = {"code": -32601, "message": "Method not found"}
                    refused = {"jsonrpc": "2.0", "id": message["id"], "error": error}
                    await ws.send_message(json.dumps(refused))
        except trio_websocket.ConnectionClosed as exc:
            self.close_codes.append(exc.reason.code if exc.reason is not None else None)


class RawPeer:
    """A server side built on wsproto alone, for misbehaviour trio-websocket won't do."""

    def __init__(self, stream: trio.abc.Stream) -> None:
        self.stream = stream
        self.ws = WSConnection(ConnectionType.SERVER)
        self._events: list[Event] = []

    async def next_event(self) -> Event:
        while not self._events:
            data = await self.stream.receive_some()
            if not data:
                raise EOFError
            self.ws.receive_data(bytes(data))
            self._events.extend(self.ws.events())
        return self._events.pop(0)

    async def accept(self) -> None:
        assert isinstance(await self.next_event(), Request)
        await self.stream.send_all(self.ws.send(AcceptConnection()))

    async def recv(self) -> dict[str, Any]:
        event = await self.next_event()
        assert isinstance(event, TextMessage)
        return dict(json.loads(event.data))

    async def send(self, text: str) -> None:
        await self.stream.send_all(self.ws.send(TextMessage(data=text)))


async def serve_raw(nursery: trio.Nursery, behaviour: Callable[[RawPeer], Awaitable[None]]) -> int:
    async def handle(stream: trio.SocketStream) -> None:
        async with stream:
            with contextlib.suppress(EOFError, trio.BrokenResourceError, trio.ClosedResourceError):
                await behaviour(RawPeer(stream))

    listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
    nursery.start_soon(trio.serve_listeners, handle, listeners)
    return int(listeners[0].socket.getsockname()[1])


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def wait_for(condition: Callable[[], bool]) -> None:
    while not condition():
        await trio.sleep(0.01)


# -- a real Connection over a WebSocket -------------------------------------------------


async def test_handshake_and_request_over_a_websocket(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="trio-websocket")
    server = Server()
    events: list[Any] = []
    with capture_logs() as logs, trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            await server.start(nursery)
            target = WebSocketTarget(
                server.url("/mcp?tenant=a"),
                token=CANARY,
                headers={"Authorization": f"Bearer {HEADER_CANARY}", "X-Client": HEADER_CANARY},
            )
            async with Connection(target, on_event=events.append) as conn:
                assert conn.server_info["name"] == "ws-test"
                assert conn.name == f"ws://127.0.0.1:{server.port}/mcp"
                assert conn.transport is not None
                assert conn.transport.description == conn.name
                listing = await conn.request("tools/list")
                assert [t["name"] for t in listing["tools"]] == ["tool1"]
            nursery.cancel_scope.cancel()
    assert server.paths == [f"/mcp?tenant=a&token={CANARY}"]
    assert server.headers[0]["authorization"] == f"Bearer {HEADER_CANARY}"
    assert server.headers[0]["x-client"] == HEADER_CANARY
    # one message per frame, none with a newline
    methods = [json.loads(frame)["method"] for frame in server.frames]
    # server/discover first (the test server refuses it: a handshake-era server)
    assert methods == ["server/discover", "initialize", "notifications/initialized", "tools/list"]
    assert all(isinstance(f, str) and "\n" not in f for f in server.frames)
    assert server.close_codes == [1000]
    for text in (repr(logs), repr(events), caplog.text):
        assert CANARY not in text
        assert HEADER_CANARY not in text


@pytest.mark.parametrize("binary", [False, True])
async def test_a_frame_carrying_several_messages_delivers_each(binary: bool) -> None:
    seen: list[dict[str, Any]] = []

    async def script(ws: trio_websocket.WebSocketConnection, msg: dict[str, Any], n: int) -> bool:
        if msg.get("method") not in ("tools/list", "prompts/list"):
            return False
        seen.append(msg)
        if len(seen) == 2:  # both asked: answer both in one frame
            first, second = sorted(seen, key=lambda m: str(m["method"]))
            text = (
                f"\n   {answer(first, {'prompts': []})}  \n\n\t\n"
                f"  {answer(second, {'tools': []})}\r\n  \n"
            )
            await ws.send_message(text.encode() if binary else text)
        return True

    server = Server(script)
    results: dict[str, Any] = {}
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            await server.start(nursery)
            async with Connection(server.url()) as conn:

                async def call(method: str) -> None:
                    results[method] = await conn.request(method)

                async with trio.open_nursery() as calls:
                    calls.start_soon(call, "tools/list")
                    calls.start_soon(call, "prompts/list")
            nursery.cancel_scope.cancel()
    assert results == {"tools/list": {"tools": []}, "prompts/list": {"prompts": []}}


async def test_the_token_is_resolved_at_each_dial_and_never_shown(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG, logger="trio-websocket")
    issued: list[str] = []

    async def provider() -> str:
        issued.append(f"{CANARY}-{len(issued) + 1}/+")
        return issued[-1]

    async def script(ws: trio_websocket.WebSocketConnection, msg: dict[str, Any], n: int) -> bool:
        if n == 1 and msg.get("method") == "notifications/initialized":
            await ws.aclose()  # a clean close: the host reconnects
            return True
        if msg.get("method") == "resources/list":
            # a server that echoes the token it was given, in an error
            text = f"token {issued[-1]} has expired"
            await ws.send_message(
                json.dumps(
                    {"jsonrpc": "2.0", "id": msg["id"], "error": {"code": 1, "message": text}}
                )
            )
            return True
        return False

    server = Server(script)
    events: list[Any] = []
    with capture_logs() as logs, trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            await server.start(nursery)
            target = WebSocketTarget(server.url(), token=provider)
            policy = Reconnect(initial=0.0, jitter=0.0, max_attempts=3)
            async with Connection(target, reconnect=policy, on_event=events.append) as conn:
                await wait_for(lambda: any(isinstance(e, Reconnected) for e in events))
                listing = await conn.request("tools/list")
                assert [t["name"] for t in listing["tools"]] == ["tool2"]
                with pytest.raises(RequestError) as info:
                    await conn.request("resources/list")
                assert CANARY not in str(info.value)
                assert REDACTION_MARK in str(info.value)
                assert conn.redactor.redact(issued[0]) == REDACTION_MARK
                assert CANARY not in conn.name
                assert CANARY not in describe(target)
                assert CANARY not in repr(target)
            nursery.cancel_scope.cancel()
    assert len(issued) == 2
    encoded = [token.replace("/", "%2F").replace("+", "%2B") for token in issued]
    assert server.paths == [f"/mcp?token={token}" for token in encoded]
    for text in (repr(logs), repr(events), caplog.text):
        assert CANARY not in text


async def test_a_refused_dial_is_a_transport_error_without_the_token() -> None:
    port = closed_port()
    target = WebSocketTarget(f"ws://127.0.0.1:{port}/mcp?api_key={CANARY}", token=CANARY)
    events: list[Any] = []
    with capture_logs() as logs, trio.fail_after(10), pytest.raises(TransportError) as info:
        async with Connection(target, on_event=events.append):
            pytest.fail("connected")
    assert info.value.reason == "connect-failed"
    assert f"ws://127.0.0.1:{port}/mcp" in str(info.value)
    for text in (str(info.value), repr(info.value), repr(logs), repr(events)):
        assert CANARY not in text


async def test_a_token_provider_failure_is_a_transport_error() -> None:
    def provider() -> str:
        raise RuntimeError(CANARY)

    with trio.fail_after(10):
        with pytest.raises(TransportError) as info:
            async with Connection(WebSocketTarget("ws://127.0.0.1:1/x", token=provider)):
                pytest.fail("connected")
    assert "token provider raised RuntimeError" in str(info.value)
    assert CANARY not in str(info.value)
    assert info.value.__cause__ is None


async def test_a_refused_upgrade_names_the_status_not_the_body() -> None:
    server = Server(reject=401)
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            await server.start(nursery)
            with pytest.raises(TransportError) as info:
                async with Connection(WebSocketTarget(server.url(), token=CANARY)):
                    pytest.fail("connected")
            nursery.cancel_scope.cancel()
    assert "HTTP 401" in str(info.value)
    assert info.value.reason == "connect-failed"
    assert CANARY not in str(info.value)


async def test_a_close_during_the_upgrade_fails_at_once() -> None:
    async def hang_up(peer: RawPeer) -> None:
        await peer.stream.receive_some()  # the upgrade request, unanswered

    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            port = await serve_raw(nursery, hang_up)
            # a long initialize timeout: the failure must not wait for it
            with trio.fail_after(5), pytest.raises(TransportError) as info:
                async with Connection(f"ws://127.0.0.1:{port}/", initialize_timeout=60):
                    pytest.fail("connected")
            nursery.cancel_scope.cancel()
    assert "closed during the WebSocket handshake" in str(info.value)


async def test_an_open_timeout_bounds_a_silent_server() -> None:
    async def silent(peer: RawPeer) -> None:
        await trio.sleep_forever()

    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            port = await serve_raw(nursery, silent)
            target = WebSocketTarget(f"ws://127.0.0.1:{port}/", open_timeout=0.2)
            with pytest.raises(TransportError) as info:
                async with Connection(target, initialize_timeout=60):
                    pytest.fail("connected")
            assert info.value.reason == "connect-timeout"
            # without its own bound, the connection's open timeout applies
            with pytest.raises(TransportError) as info:
                async with Connection(f"ws://127.0.0.1:{port}/", initialize_timeout=0.3):
                    pytest.fail("connected")
            assert info.value.reason == "connect-timeout"
            nursery.cancel_scope.cancel()


async def test_an_abnormal_close_ends_the_connection_with_a_typed_error() -> None:
    async def script(ws: trio_websocket.WebSocketConnection, msg: dict[str, Any], n: int) -> bool:
        if msg.get("method") == "tools/list":
            await ws.aclose(code=1011, reason="internal error")
            return True
        return False

    server = Server(script)
    events: list[Any] = []
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            await server.start(nursery)
            async with Connection(server.url(), on_event=events.append) as conn:
                with pytest.raises(ConnectionClosed) as info:
                    await conn.request("tools/list")
                assert info.value.reason == "read-failed"
            nursery.cancel_scope.cancel()
    assert Disconnected(1, "read-failed") in events


async def test_a_dropped_socket_during_initialize_is_a_transport_error() -> None:
    async def drop(peer: RawPeer) -> None:
        await peer.accept()
        await peer.recv()  # initialize
        await trio.aclose_forcefully(peer.stream)  # no close frame

    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            port = await serve_raw(nursery, drop)
            with pytest.raises(TransportError) as info:
                async with Connection(f"ws://127.0.0.1:{port}/", initialize_timeout=60):
                    pytest.fail("connected")
            nursery.cancel_scope.cancel()
    assert info.value.reason == "read-failed"


async def test_a_clean_close_is_end_of_file() -> None:
    async def script(ws: trio_websocket.WebSocketConnection, msg: dict[str, Any], n: int) -> bool:
        if msg.get("method") == "tools/list":
            await ws.aclose()
            return True
        return False

    server = Server(script)
    events: list[Any] = []
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            await server.start(nursery)
            async with Connection(server.url(), on_event=events.append) as conn:
                with pytest.raises(ConnectionClosed) as info:
                    await conn.request("tools/list")
                assert info.value.reason == "eof"
            nursery.cancel_scope.cancel()
    assert Disconnected(1, "eof") in events


async def test_an_oversized_frame_closes_the_socket_instead_of_being_held() -> None:
    async def script(ws: trio_websocket.WebSocketConnection, msg: dict[str, Any], n: int) -> bool:
        if msg.get("method") == "tools/list":
            await ws.send_message(answer(msg, {"tools": [], "pad": "x" * 5000}))
            return True
        return False

    server = Server(script)
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            await server.start(nursery)
            target = WebSocketTarget(server.url(), max_message_bytes=1000)
            async with Connection(target) as conn:
                with pytest.raises(ConnectionClosed) as info:
                    await conn.request("tools/list")
                assert info.value.reason == "read-failed"
            nursery.cancel_scope.cancel()
    assert server.close_codes == [1009]


async def test_wss_with_a_trusted_certificate_and_refused_without() -> None:
    ca = trustme.CA()
    server_context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("127.0.0.1").configure_cert(server_context)
    client_context = ssl.create_default_context()
    ca.configure_trust(client_context)
    server = Server()
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            await server.start(nursery, server_context)
            url = server.url(scheme="wss")
            async with Connection(
                WebSocketTarget(url, token=CANARY, ssl_context=client_context)
            ) as conn:
                assert conn.name == f"wss://127.0.0.1:{server.port}/mcp"
                assert (await conn.request("tools/list"))["tools"][0]["name"] == "tool1"
            with pytest.raises(TransportError) as info:
                async with Connection(WebSocketTarget(url, token=CANARY)):
                    pytest.fail("connected")
            nursery.cancel_scope.cancel()
    assert "TLS failed" in str(info.value)
    assert info.value.reason == "connect-failed"
    assert CANARY not in str(info.value)
    assert server.paths == [f"/mcp?token={CANARY}"]  # the refused one never sent it


# -- the transport's stream -------------------------------------------------------------


async def open_to(server: Server, nursery: trio.Nursery, **kwargs: Any) -> WebSocketTransport:
    transport = await open_transport(
        WebSocketTarget(server.url(), **kwargs),
        nursery=nursery,
        on_stderr=lambda line: None,
        redactor=Redactor(),
    )
    assert isinstance(transport, WebSocketTransport)
    return transport


async def test_each_written_line_is_one_frame() -> None:
    async def echo(ws: trio_websocket.WebSocketConnection, msg: dict[str, Any], n: int) -> bool:
        await ws.send_message(json.dumps(msg))
        return True

    server = Server(echo)
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            await server.start(nursery)
            transport = await open_to(server, nursery)
            stream = transport.stream
            await stream.send_all(b'{"a":1}\n\n{"b":2}\n{"c"')
            await stream.send_all(b":3}\n")
            received = b""
            while received.count(b"\n") < 3:
                chunk = await stream.receive_some(5)
                assert 0 < len(chunk) <= 5
                received += chunk
            assert received == b'{"a": 1}\n{"b": 2}\n{"c": 3}\n'
            await transport.aclose()
            await transport.aclose()
            with pytest.raises(trio.ClosedResourceError):
                await stream.send_all(b"{}\n")
            with pytest.raises(trio.ClosedResourceError):
                await stream.receive_some()
            await wait_for(lambda: bool(server.close_codes))
            nursery.cancel_scope.cancel()
    assert server.frames == ['{"a":1}', '{"b":2}', '{"c":3}']
    assert server.close_codes == [1000]


async def test_after_a_clean_close_reads_end_and_writes_break() -> None:
    async def bye(ws: trio_websocket.WebSocketConnection, msg: dict[str, Any], n: int) -> bool:
        await ws.send_message(" \n ")  # blank parts only: no line at all
        await ws.send_message('{"last":true}')
        await ws.aclose()
        return True

    server = Server(bye)
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            await server.start(nursery)
            transport = await open_to(server, nursery)
            await transport.stream.send_all(b"{}\n")
            assert await transport.stream.receive_some() == b'{"last":true}\n'
            assert await transport.stream.receive_some() == b""
            assert await transport.stream.receive_some() == b""
            with pytest.raises(trio.BrokenResourceError):
                await transport.stream.send_all(b"{}\n")
            await transport.aclose()
            nursery.cancel_scope.cancel()


async def test_close_is_bounded_when_the_peer_never_answers(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(websocket, "CLOSE_TIMEOUT", 0.2)

    async def deaf(peer: RawPeer) -> None:
        await peer.accept()
        await trio.sleep_forever()  # never reads the close frame

    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            port = await serve_raw(nursery, deaf)
            target = WebSocketTarget(f"ws://127.0.0.1:{port}/")
            transport = await open_websocket(target, nursery=nursery, redactor=Redactor())
            started = trio.current_time()
            with trio.CancelScope() as scope:
                scope.cancel()  # a cancelled caller still closes, and is not held
                await transport.aclose()
            assert trio.current_time() - started < 2
            nursery.cancel_scope.cancel()


async def test_the_dial_redactor_learns_a_provided_token() -> None:
    server = Server()
    target = WebSocketTarget("ws://127.0.0.1:1/", token=lambda: CANARY)
    redactor = redactor_for(target)
    assert isinstance(redactor, DialRedactor)
    assert redactor.redact(CANARY) == CANARY  # not known before the dial
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            await server.start(nursery)
            transport = await open_websocket(
                WebSocketTarget(server.url(), token=lambda: CANARY),
                nursery=nursery,
                redactor=redactor,
            )
            await transport.aclose()
            nursery.cancel_scope.cancel()
    assert redactor.redact(f"x {CANARY} y") == f"x {REDACTION_MARK} y"


def test_frame_lines_splits_strips_and_skips_blanks() -> None:
    assert frame_lines(' {"a":1} \n\n\t{"b":2}\r\n  ') == b'{"a":1}\n{"b":2}\n'
    assert frame_lines(b"") == b""
    assert frame_lines("é") == "é\n".encode()


# -- targets, parsing, redaction, configuration ----------------------------------------


def test_parse_target_gives_websocket_targets() -> None:
    assert parse_target("ws://example.com:8080/mcp") == WebSocketTarget("ws://example.com:8080/mcp")
    secure = parse_target("wss://example.com/mcp")
    assert isinstance(secure, WebSocketTarget)
    assert describe(secure) == "wss://example.com/mcp"
    assert describe(parse_target("WS://[::1]:9/")) == "ws://[::1]:9/"
    assert describe(parse_target("ws://h")) == "ws://h/"


def test_describe_and_repr_never_show_credentials() -> None:
    target = WebSocketTarget(
        f"wss://user:{CANARY}@example.com:8443/mcp?token={CANARY}",
        token=CANARY,
        headers={"X-Api-Key": HEADER_CANARY},
    )
    assert describe(target) == "wss://example.com:8443/mcp"
    for text in (describe(target), repr(target)):
        assert CANARY not in text
        assert HEADER_CANARY not in text


def test_redactor_for_knows_every_configured_secret() -> None:
    token = "tok en/+" + CANARY
    target = WebSocketTarget(
        f"ws://{CANARY}u:{CANARY}p@example.com/mcp?access_token={CANARY}q",
        token=token,
        headers={"Authorization": f"Bearer {HEADER_CANARY}", "X-Tenant": "acme-tenant"},
    )
    redactor = redactor_for(target)
    for secret in (
        token,
        "tok%20en%2F%2B" + CANARY,
        f"{CANARY}p",
        f"{CANARY}q",
        HEADER_CANARY,
        "acme-tenant",
    ):
        assert redactor.redact(f"<{secret}>") == f"<{REDACTION_MARK}>", secret


@pytest.mark.parametrize(
    ("url", "match"),
    [
        ("http://example.com/", "ws://HOST"),
        ("ws:example.com", "ws://HOST"),
        ("ws://", "not a valid host"),
        ("ws://ho st/", "printable ASCII"),
        ("ws://example.com:0/", "1..65535"),
        ("ws://example.com:x/", "1..65535"),
        ("ws://example.com:+80/", "1..65535"),
        ("ws://[::1/", "not a valid WebSocket URL"),
        ("ws://[nope]/", "not a valid WebSocket URL"),
        ("ws://[::1]x/", "1..65535"),
        (f"ws://example.com/#{CANARY}", "fragment"),
        (f"ws://example.com:99999/?token={CANARY}", "1..65535"),
        (f"ws://u:{CANARY}@:80/", "not a valid host"),
    ],
)
def test_websocket_urls_are_validated(url: str, match: str) -> None:
    with pytest.raises(ConfigurationError, match=match) as info:
        WebSocketTarget(url)
    assert CANARY not in str(info.value)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"token": ""},
        {"token": 5},
        {"headers": {"Bad Name": "x"}},
        {"headers": {"X-Ok": f"a\r\n{CANARY}"}},
        {"headers": {"Host": "evil"}},
        {"headers": {"Sec-WebSocket-Key": "x"}},
        {"headers": ["not", "a", "mapping"]},
        {"open_timeout": 0},
        {"open_timeout": float("nan")},
        {"max_message_bytes": 0},
        {"ssl_context": "yes"},
    ],
)
def test_websocket_target_options_are_validated(kwargs: dict[str, Any]) -> None:
    with pytest.raises(ConfigurationError) as info:
        WebSocketTarget("ws://example.com/", **kwargs)
    assert CANARY not in str(info.value)


def test_a_config_entry_with_a_websocket_url() -> None:
    servers = parse_config(
        {
            "mcpServers": {
                "ws": {
                    "url": "wss://example.com/mcp",
                    "headers": {"Authorization": f"Bearer {HEADER_CANARY}"},
                    "token": CANARY,
                },
                "plain": {"url": "ws://127.0.0.1:9000"},
                "web": {"url": "https://example.com/mcp"},
            }
        }
    )
    assert servers["ws"].target == WebSocketTarget(
        "wss://example.com/mcp",
        token=CANARY,
        headers={"Authorization": f"Bearer {HEADER_CANARY}"},
    )
    assert servers["ws"].problem is None
    assert servers["plain"].target == WebSocketTarget("ws://127.0.0.1:9000")
    assert servers["web"].target == HttpTarget("https://example.com/mcp")  # docs/http.md


@pytest.mark.parametrize(
    ("entry", "names"),
    [
        ({"url": "ws://h/", "headers": ["x"]}, "'mcpServers.s'.headers"),
        ({"url": "ws://h/", "headers": {"X-Key": 5}}, "'mcpServers.s'.headers"),
        ({"url": "ws://h/", "token": 5}, "'mcpServers.s'.token"),
        ({"url": "ws://h/", "headers": {"Host": CANARY}}, "'mcpServers.s'"),
        ({"url": f"ws://h:0/?token={CANARY}"}, "'mcpServers.s'"),
    ],
)
def test_bad_websocket_config_entries_name_the_key_only(entry: dict[str, Any], names: str) -> None:
    # The entry is that server's problem (the file's others stay usable), said as the
    # CLI says it: the file, the key, never the value.
    config = parse_config({"mcpServers": {"s": entry}}, source="f.json")["s"]
    assert config.target is None
    assert config.problem is not None
    message = f"{config.source}: {config.problem}"
    assert re.search(names, message)
    assert CANARY not in message
