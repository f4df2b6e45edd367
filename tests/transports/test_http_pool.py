"""The HTTP/1.1 client of the Streamable HTTP transport (http_pool.py) against scripted
servers on loopback sockets: keep-alive reuse, a kept-alive socket the server closed,
Content-Length, chunked and close-delimited bodies, compressed bodies, a response closed
early, a slow server under the caller's deadline, the keep-alive limit and expiry, 1xx
answers, broken answers, and TLS (the pool directly and a whole session)."""

from __future__ import annotations

import contextlib
import gzip
import ssl
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import pytest
import trio
import trustme

from mcpl_host import Connection, HttpTarget
from mcpl_host.transports import http_pool
from mcpl_host.transports.http_pool import (
    ConnectError,
    HttpPool,
    HttpResponse,
    RemoteProtocolError,
)

from .http_server import ScriptedHttpServer

Handler = Callable[["Peer"], Awaitable[None]]


class Peer:
    """The server's side of one accepted connection: read requests, write raw bytes."""

    def __init__(self, stream: trio.abc.Stream) -> None:
        self.stream = stream
        self._buffer = bytearray()

    async def request(self) -> tuple[bytes, bytes] | None:
        """The next request's head and body (by Content-Length); None at EOF."""
        while b"\r\n\r\n" not in self._buffer:
            data = await self.stream.receive_some(65536)
            if not data:
                return None
            self._buffer += data
        head, _, rest = bytes(self._buffer).partition(b"\r\n\r\n")
        length = 0
        for line in head.split(b"\r\n")[1:]:
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value)
        while len(rest) < length:
            data = await self.stream.receive_some(65536)
            assert data, "the client closed in the middle of a body"
            rest += data
        self._buffer = bytearray(rest[length:])
        return head, rest[:length]

    async def send(self, data: bytes) -> None:
        await self.stream.send_all(data)


def ok(body: bytes, extra: bytes = b"") -> bytes:
    return b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n%s\r\n%s" % (len(body), extra, body)


class Server:
    def __init__(self, handler: Handler, context: ssl.SSLContext | None = None) -> None:
        self.handler = handler
        self.context = context
        self.connections = 0
        self.closed_by_client = 0
        self.url = ""

    async def _serve(self, stream: trio.SocketStream) -> None:
        self.connections += 1
        wrapped: trio.abc.Stream = stream
        if self.context is not None:
            wrapped = trio.SSLStream(stream, self.context, server_side=True)
        peer = Peer(wrapped)
        try:
            await self.handler(peer)
            # Then wait for the client to close (or the test to end).
            while await wrapped.receive_some(65536):
                pass
            self.closed_by_client += 1
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            self.closed_by_client += 1
        finally:
            await trio.aclose_forcefully(wrapped)


@asynccontextmanager
async def serving(handler: Handler, context: ssl.SSLContext | None = None) -> AsyncIterator[Server]:
    server = Server(handler, context)
    async with trio.open_nursery() as nursery:
        listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
        port = listeners[0].socket.getsockname()[1]
        scheme = "https" if context is not None else "http"
        server.url = f"{scheme}://127.0.0.1:{port}/mcp?x=1"
        nursery.start_soon(trio.serve_listeners, server._serve, listeners)
        yield server
        nursery.cancel_scope.cancel()


def pool_for(
    server: Server,
    *,
    max_connections: int = 10,
    max_keepalive: int = 5,
    context: ssl.SSLContext | None = None,
) -> HttpPool:
    return HttpPool(
        server.url,
        ssl_context=context,
        max_connections=max_connections,
        max_keepalive=max_keepalive,
        user_agent=b"test",
    )


async def body(response: HttpResponse) -> bytes:
    out = b""
    while chunk := await response.read_chunk():
        out += chunk
    return out


async def exchange(pool: HttpPool, content: bytes = b"{}") -> tuple[int, bytes]:
    response = await pool.request(b"POST", [(b"Content-Type", b"application/json")], content)
    try:
        return response.status_code, await body(response)
    finally:
        response.close()


async def refused_by(handler: Handler) -> None:
    """One exchange with a server that answers it with ``handler``: it must fail with
    RemoteProtocolError, and the connection must not go back to the pool."""
    with trio.fail_after(10):
        async with serving(handler) as server:
            pool = pool_for(server, max_connections=1)
            with pytest.raises(RemoteProtocolError):
                await exchange(pool)
            assert not pool._idle
            pool.close()


async def echo_forever(peer: Peer) -> None:
    while (got := await peer.request()) is not None:
        head, content = got
        await peer.send(ok(content, b"X-Head-Bytes: %d\r\n" % len(head)))


async def test_keep_alive_reuses_one_connection_and_sends_what_the_server_needs() -> None:
    heads: list[bytes] = []

    async def handler(peer: Peer) -> None:
        while (got := await peer.request()) is not None:
            heads.append(got[0])
            await peer.send(ok(got[1]))

    with trio.fail_after(10):
        async with serving(handler) as server:
            pool = pool_for(server)
            for n in range(5):
                assert await exchange(pool, b'{"n":%d}' % n) == (200, b'{"n":%d}' % n)
            pool.close()
    assert server.connections == 1
    first = heads[0].split(b"\r\n")
    assert first[0] == b"POST /mcp?x=1 HTTP/1.1"
    lowered = [line.lower() for line in first[1:]]
    assert b"host: 127.0.0.1:%d" % int(server.url.split(":")[2].split("/")[0]) in lowered
    assert b"content-length: 7" in lowered
    assert b"accept-encoding: identity" in lowered


async def test_a_kept_alive_socket_the_server_closed_is_not_reused() -> None:
    async def answer_once_then_close(peer: Peer) -> None:
        got = await peer.request()
        assert got is not None
        await peer.send(ok(b"one"))
        await peer.stream.aclose()

    with trio.fail_after(10):
        async with serving(answer_once_then_close) as server:
            pool = pool_for(server)
            assert await exchange(pool) == (200, b"one")
            await trio.sleep(0.1)  # the server's FIN arrives while the connection idles
            assert await exchange(pool) == (200, b"one")  # on a fresh connection
            pool.close()
    assert server.connections == 2


async def test_chunked_content_length_and_close_delimited_bodies() -> None:
    answers = [
        ok(b'{"a":1}'),
        b'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\n{"b\r\n4\r\n":2}\r\n0\r\n\r\n',
        b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n" + b"x" * 100_000,
    ]

    async def handler(peer: Peer) -> None:
        for answer in answers:
            assert await peer.request() is not None
            await peer.send(answer)
            if b"Connection: close" in answer:
                await peer.stream.aclose()
                return

    with trio.fail_after(10):
        async with serving(handler) as server:
            pool = pool_for(server)
            assert await exchange(pool) == (200, b'{"a":1}')
            assert await exchange(pool) == (200, b'{"b":2}')
            assert await exchange(pool) == (200, b"x" * 100_000)
            assert not pool._idle  # a close-delimited body leaves nothing to reuse
            pool.close()
    assert server.connections == 1


async def test_a_compressed_body_is_decoded() -> None:
    packed = gzip.compress(b'{"zipped":true}' * 100)

    async def handler(peer: Peer) -> None:
        while await peer.request() is not None:
            await peer.send(ok(packed, b"Content-Encoding: gzip\r\n"))

    with trio.fail_after(10):
        async with serving(handler) as server:
            pool = pool_for(server)
            assert await exchange(pool) == (200, b'{"zipped":true}' * 100)
            pool.close()


async def test_a_compressed_body_is_decoded_a_bounded_piece_at_a_time() -> None:
    unpacked = bytes(range(256)) * 4 + b"\0" * 20_000_000
    packed = gzip.compress(unpacked)
    assert len(packed) < 100_000

    async def handler(peer: Peer) -> None:
        while await peer.request() is not None:
            await peer.send(ok(packed, b"Content-Encoding: gzip\r\n"))

    with trio.fail_after(20):
        async with serving(handler) as server:
            pool = pool_for(server)
            for _ in range(2):  # and the connection is reused after it
                response = await pool.request(b"POST", [], b"{}")
                with response:
                    pieces = []
                    while piece := await response.read_chunk():
                        assert len(piece) <= http_pool.DECODED_PIECE
                        pieces.append(piece)
                assert b"".join(pieces) == unpacked
            pool.close()
    assert server.connections == 1


async def test_a_compressed_body_that_does_not_decode_is_a_remote_protocol_error() -> None:
    async def handler(peer: Peer) -> None:
        while await peer.request() is not None:
            await peer.send(ok(b"not gzip at all", b"Content-Encoding: gzip\r\n"))

    await refused_by(handler)


async def test_a_response_closed_before_its_end_closes_its_connection() -> None:
    async def handler(peer: Peer) -> None:
        while await peer.request() is not None:
            await peer.send(ok(b"y" * 1_000_000))

    with trio.fail_after(10):
        async with serving(handler) as server:
            pool = pool_for(server)
            response = await pool.request(b"POST", [], b"{}")
            assert await response.read_chunk()  # a piece, not the whole
            response.close()
            assert not pool._idle
            assert await exchange(pool) == (200, b"y" * 1_000_000)
            pool.close()
            await trio.sleep(0.1)
    assert server.connections == 2
    assert server.closed_by_client >= 1


async def test_a_slow_server_is_cut_by_the_callers_deadline_and_frees_its_connection() -> None:
    calls = 0

    async def handler(peer: Peer) -> None:
        nonlocal calls
        calls += 1
        if calls == 1:
            assert await peer.request() is not None
            await trio.sleep_forever()  # never answers
        await echo_forever(peer)

    with trio.fail_after(10):
        async with serving(handler) as server:
            pool = pool_for(server, max_connections=1)
            with trio.move_on_after(0.2) as cut:
                await exchange(pool)
            assert cut.cancelled_caught
            # The one slot is free again, and the cut connection is closed, not reused.
            assert await exchange(pool, b"again") == (200, b"again")
            pool.close()
    assert server.connections == 2


async def test_requests_past_max_connections_wait_for_a_free_one() -> None:
    release = trio.Event()

    async def handler(peer: Peer) -> None:
        await release.wait()
        await echo_forever(peer)

    with trio.fail_after(10):
        async with serving(handler) as server:
            pool = pool_for(server, max_connections=2, max_keepalive=2)
            done: list[int] = []

            async def one() -> None:
                done.append((await exchange(pool))[0])

            async with trio.open_nursery() as nursery:
                for _ in range(5):
                    nursery.start_soon(one)
                await trio.sleep(0.2)
                assert server.connections == 2  # three requests wait for a connection
                release.set()
            assert done == [200] * 5
            pool.close()
    assert server.connections == 2


async def test_idle_connections_past_the_keepalive_limit_or_expiry_are_closed() -> None:
    with trio.fail_after(10):
        async with serving(echo_forever) as server:
            pool = pool_for(server, max_keepalive=1)
            async with trio.open_nursery() as nursery:
                for _ in range(3):
                    nursery.start_soon(exchange, pool)
            assert server.connections == 3
            assert len(pool._idle) == 1  # the other two were closed
            pool._idle[0].idle_since -= http_pool.KEEPALIVE_EXPIRY + 1
            assert await exchange(pool) == (200, b"{}")
            assert server.connections == 4  # the expired one was not reused
            pool.close()


async def test_informational_answers_are_skipped() -> None:
    async def handler(peer: Peer) -> None:
        while await peer.request() is not None:
            await peer.send(b"HTTP/1.1 100 Continue\r\n\r\n" + ok(b"after"))

    with trio.fail_after(10):
        async with serving(handler) as server:
            pool = pool_for(server)
            assert await exchange(pool) == (200, b"after")
            pool.close()


@pytest.mark.parametrize(
    "answer",
    [b"", b"not http at all\r\n\r\n", b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort"],
)
async def test_a_broken_answer_is_a_remote_protocol_error(answer: bytes) -> None:
    async def handler(peer: Peer) -> None:
        assert await peer.request() is not None
        await peer.send(answer)
        await peer.stream.aclose()

    await refused_by(handler)


async def test_a_head_past_100_kib_is_refused() -> None:
    async def handler(peer: Peer) -> None:
        assert await peer.request() is not None
        await peer.send(b"HTTP/1.1 200 OK\r\nX-Big: " + b"a" * 200_000 + b"\r\n\r\n")

    await refused_by(handler)


async def test_a_refused_connection_is_a_connect_error() -> None:
    listener = trio.socket.socket()
    await listener.bind(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    listener.close()  # nothing listens there now
    pool = HttpPool(
        f"http://127.0.0.1:{port}/mcp",
        ssl_context=None,
        max_connections=1,
        max_keepalive=1,
        user_agent=b"test",
    )
    with trio.fail_after(10), pytest.raises(ConnectError):
        await exchange(pool)
    with trio.fail_after(10), pytest.raises(ConnectError):  # and the slot was given back
        await exchange(pool)


def tls_contexts() -> tuple[ssl.SSLContext, ssl.SSLContext]:
    ca = trustme.CA()
    server_context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("127.0.0.1").configure_cert(server_context)
    client_context = ssl.create_default_context()
    ca.configure_trust(client_context)
    return server_context, client_context


async def test_tls_with_the_targets_context_and_keep_alive() -> None:
    server_context, client_context = tls_contexts()
    with trio.fail_after(10):
        async with serving(echo_forever, server_context) as server:
            pool = pool_for(server, context=client_context)
            for _ in range(3):
                assert await exchange(pool, b"sealed") == (200, b"sealed")
            pool.close()
    assert server.connections == 1


async def test_tls_refuses_a_server_the_context_does_not_trust() -> None:
    server_context, _ = tls_contexts()
    with trio.fail_after(10):
        async with serving(echo_forever, server_context) as server:
            pool = pool_for(server, context=ssl.create_default_context())
            with pytest.raises(ConnectError):
                await exchange(pool)
            pool.close()


async def test_a_whole_session_over_tls() -> None:
    server_context, client_context = tls_contexts()

    def answer(message: dict[str, Any], session: str | None) -> Any:
        if "id" not in message:
            return None
        return {"jsonrpc": "2.0", "id": message["id"], "result": {"content": []}}

    with ScriptedHttpServer(answer) as server:
        http = server._http
        http.socket = server_context.wrap_socket(http.socket, server_side=True)
        url = server.url.replace("http://", "https://")
        with trio.fail_after(10):
            target = HttpTarget(url, ssl_context=client_context)
            async with Connection(target) as conn:
                assert await conn.request("tools/call", {"name": "x"}) == {"content": []}
        assert server.posted("tools/call")


async def test_an_http_target_through_a_proxy_gets_the_whole_url_and_its_credentials() -> None:
    heads: list[bytes] = []

    async def proxy(peer: Peer) -> None:
        while (got := await peer.request()) is not None:
            heads.append(got[0])
            await peer.send(ok(b"proxied"))

    with trio.fail_after(10):
        async with serving(proxy) as via:
            proxy_url = via.url.replace("http://", "http://us%40er:pa%3Ass@").split("/mcp")[0]
            pool = HttpPool(
                "http://origin.example:8080/mcp?x=1",
                ssl_context=None,
                max_connections=2,
                max_keepalive=2,
                user_agent=b"test",
                proxy=proxy_url,
            )
            assert await exchange(pool) == (200, b"proxied")
            assert await exchange(pool) == (200, b"proxied")
            pool.close()
    assert via.connections == 1
    lines = heads[0].split(b"\r\n")
    assert lines[0] == b"POST http://origin.example:8080/mcp?x=1 HTTP/1.1"
    lowered = [line.lower() for line in lines]
    assert b"host: origin.example:8080" in lowered
    # base64 of "us@er:pa:ss"
    assert b"proxy-authorization: basic dxnazxi6cge6c3m=" in lowered


async def test_an_https_target_through_a_proxy_goes_through_a_connect_tunnel() -> None:
    server_context, client_context = tls_contexts()
    connects: list[bytes] = []

    async def tunnel(peer: Peer, origin: str) -> None:
        got = await peer.request()
        assert got is not None
        connects.append(got[0])
        host, port = origin.split("//")[1].split("/", maxsplit=1)[0].split(":")
        upstream = await trio.open_tcp_stream(host, int(port))
        await peer.send(b"HTTP/1.1 200 Connection established\r\n\r\n")

        async def pump(source: trio.abc.Stream, sink: trio.abc.Stream) -> None:
            try:
                with contextlib.suppress(trio.BrokenResourceError, trio.ClosedResourceError):
                    while data := await source.receive_some(65536):
                        await sink.send_all(data)
            finally:
                await trio.aclose_forcefully(sink)

        async with trio.open_nursery() as nursery:
            nursery.start_soon(pump, peer.stream, upstream)
            nursery.start_soon(pump, upstream, peer.stream)

    with trio.fail_after(10):
        async with (
            serving(echo_forever, server_context) as origin,
            serving(lambda peer: tunnel(peer, origin.url)) as via,
        ):
            pool = HttpPool(
                origin.url,
                ssl_context=client_context,
                max_connections=2,
                max_keepalive=2,
                user_agent=b"test",
                proxy=via.url.split("/mcp")[0],
            )
            for _ in range(2):
                assert await exchange(pool, b"tunnelled") == (200, b"tunnelled")
            pool.close()
    port = origin.url.split(":")[2].split("/")[0]
    assert connects == [
        b"CONNECT 127.0.0.1:%s HTTP/1.1\r\nHost: 127.0.0.1:%s" % (port.encode(), port.encode())
    ]
    assert origin.connections == 1


async def test_a_proxy_refusing_the_tunnel_is_a_connect_error() -> None:
    async def refuse(peer: Peer) -> None:
        assert await peer.request() is not None
        await peer.send(b"HTTP/1.1 407 Proxy Authentication Required\r\nContent-Length: 0\r\n\r\n")

    with trio.fail_after(10):
        async with serving(refuse) as via:
            pool = HttpPool(
                "https://origin.example/mcp",
                ssl_context=ssl.create_default_context(),
                max_connections=1,
                max_keepalive=1,
                user_agent=b"test",
                proxy=via.url.split("/mcp")[0],
            )
            with pytest.raises(ConnectError, match="407"):
                await exchange(pool)


@pytest.mark.parametrize(
    ("env", "url", "expected"),
    [
        ({}, "http://a.example/mcp", None),
        ({"HTTP_PROXY": "proxy:3128"}, "http://a.example/mcp", "http://proxy:3128"),
        ({"HTTP_PROXY": "http://p:1"}, "https://a.example/mcp", None),
        ({"HTTPS_PROXY": "http://p:1"}, "https://a.example/mcp", "http://p:1"),
        ({"ALL_PROXY": "http://p:1"}, "https://a.example/mcp", "http://p:1"),
        ({"HTTP_PROXY": "http://p:1", "NO_PROXY": "*"}, "http://a.example/mcp", None),
        ({"HTTP_PROXY": "http://p:1", "NO_PROXY": "example"}, "http://a.example/mcp", None),
        ({"HTTP_PROXY": "http://p:1", "NO_PROXY": "a.example"}, "http://a.example/mcp", None),
        (
            {"HTTP_PROXY": "http://p:1", "NO_PROXY": ".a.example"},
            "http://a.example/mcp",
            "http://p:1",
        ),
        ({"HTTP_PROXY": "http://p:1", "NO_PROXY": "b, 127.0.0.1"}, "http://127.0.0.1/m", None),
        ({"HTTP_PROXY": "http://p:1", "NO_PROXY": "::1"}, "http://[::1]:80/m", None),
    ],
)
def test_the_environment_proxy(
    monkeypatch: pytest.MonkeyPatch, env: dict[str, str], url: str, expected: str | None
) -> None:
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY"):
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.lower(), raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert http_pool.environment_proxy(url) == expected


def test_only_an_http_proxy_is_taken() -> None:
    with pytest.raises(ValueError, match="http:// proxy"):
        HttpPool(
            "http://a.example/mcp",
            ssl_context=None,
            max_connections=1,
            max_keepalive=1,
            user_agent=b"test",
            proxy="socks5://p:1080",
        )


@pytest.mark.parametrize(("size", "writes"), [(100, 1), (200_000, 2)])
async def test_the_head_and_a_small_body_go_in_one_write(
    monkeypatch: pytest.MonkeyPatch, size: int, writes: int
) -> None:
    counted: list[int] = []
    send_all = trio.SocketStream.send_all

    async def counting(self: trio.SocketStream, data: bytes | bytearray | memoryview) -> None:
        if self.socket.getpeername()[1] == port:  # the client's side, not the server's
            counted.append(len(data))
        await send_all(self, data)

    with trio.fail_after(10):
        async with serving(echo_forever) as server:
            port = int(server.url.split(":")[2].split("/")[0])
            pool = pool_for(server)
            monkeypatch.setattr(trio.SocketStream, "send_all", counting)
            content = b"z" * size
            assert await exchange(pool, content) == (200, content)
            pool.close()
    # A large body goes as it is, after the head: no copy of it into one buffer.
    assert len(counted) == writes
    assert counted[-1] >= size
