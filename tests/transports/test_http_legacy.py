"""The legacy HTTP+SSE transport (MCP 2024-11-05) against a scripted loopback server:
the fallback from Streamable HTTP and its requests in order on the wire, an ``sse``
target used directly, the endpoint's checks, a hostile server's stream (no endpoint,
another origin, an oversized event, a stream closed mid-request), a reconnect, and the
messages when nothing is there to connect to."""

from __future__ import annotations

import json
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, ClassVar

import pytest
import trio
from structlog.testing import capture_logs

from mcpl_host import (
    AuthorizationRequired,
    Connection,
    ConnectionClosed,
    HttpTarget,
    Reconnect,
    Reconnected,
    RequestTimeout,
    TransportError,
)
from mcpl_host.transports.http_legacy import endpoint_path

from .http_server import ScriptedHttpServer
from .sse_server import CLOSE, ScriptedSseServer


def _tools(message: dict[str, Any]) -> Any:
    if message["method"] == "tools/list":
        return {"tools": [{"name": "echo", "inputSchema": {"type": "object"}}]}
    return {}


async def test_the_fallback_on_the_wire_post_refused_then_get_then_post_to_the_endpoint() -> None:
    with ScriptedSseServer(_tools) as server, trio.fail_after(10):
        target = HttpTarget(server.url, headers={"X-Api-Key": "k-1"})
        with capture_logs() as logs:
            async with Connection(target) as conn:
                assert conn.transport is not None
                assert getattr(conn.transport, "kind", None) == "sse"
                assert conn.protocol_version == "2024-11-05"
                assert [t.name for t in await conn.list_tools()] == ["echo"]
        wire = server.requests()
        seen = list(server.seen)
    assert wire == [
        # A dual-era host asks server/discover first: its refusal (405) stands as its
        # answer (Streamable HTTP servers refuse it too)...
        ("POST", "/sse", "server/discover"),
        # ...initialize is refused as well: the specification's rule, GET the URL...
        ("POST", "/sse", "initialize"),
        ("GET", "/sse", None),
        # ...and, the endpoint named, initialize goes to it again.
        ("POST", "/messages?session=1", "initialize"),
        ("POST", "/messages?session=1", "notifications/initialized"),
        ("POST", "/messages?session=1", "tools/list"),
    ]
    get = seen[2]
    assert get.headers["accept"] == "text/event-stream"
    for request in seen:
        assert request.headers["x-api-key"] == "k-1"  # the headers go on every request
    for post in seen[3:]:
        assert post.headers["content-type"] == "application/json"
        assert "mcp-session-id" not in post.headers
    assert any(e["event"] == "legacy transport in use" for e in logs)


async def test_the_first_message_is_sent_again_over_the_legacy_transport() -> None:
    # An allowlist of the handshake era: initialize is the first POST, refused (404 here,
    # as an Express server answers a POST it has no route for), and sent again.
    with ScriptedSseServer(_tools, post_status=404) as server, trio.fail_after(10):
        async with Connection(HttpTarget(server.url), versions=["2025-06-18", "2024-11-05"]):
            pass
        wire = server.requests()
        first, again = server.seen[0], server.seen[2]
    assert wire[:3] == [
        ("POST", "/sse", "initialize"),
        ("GET", "/sse", None),
        ("POST", "/messages?session=1", "initialize"),
    ]
    assert first.body == again.body  # the same message, its id included


async def test_an_sse_target_gets_the_stream_first_and_asks_no_discover() -> None:
    with ScriptedSseServer(_tools) as server, trio.fail_after(10):
        async with Connection(HttpTarget(server.url, transport="sse")) as conn:
            assert getattr(conn.transport, "kind", None) == "sse"
            await conn.list_tools()
        wire = server.requests()
        initialize = server.seen[1].body
    assert wire[:2] == [("GET", "/sse", None), ("POST", "/messages?session=1", "initialize")]
    assert not any(path == "/sse" and method == "POST" for method, path, _ in wire)
    # The newest handshake-era revision of the allowlist, as over any transport.
    assert initialize["params"]["protocolVersion"] == "2025-11-25"


async def test_a_stream_closed_mid_request_fails_the_request_typed() -> None:
    def answer(message: dict[str, Any]) -> Any:
        return CLOSE if message["method"] == "tools/call" else {}

    with ScriptedSseServer(answer) as server, trio.fail_after(10):
        async with Connection(HttpTarget(server.url, transport="sse")) as conn:
            with pytest.raises(ConnectionClosed) as caught:
                await conn.request("tools/call", {"name": "echo"})
    assert caught.value.outcome_unknown
    assert caught.value.reason == "eof"


async def test_a_closed_stream_is_reconnected_with_a_new_session() -> None:
    calls = 0

    def answer(message: dict[str, Any]) -> Any:
        nonlocal calls
        if message["method"] != "tools/list":
            return {}
        calls += 1
        return CLOSE if calls == 1 else {"tools": []}

    events: list[Any] = []
    with ScriptedSseServer(answer) as server, trio.fail_after(10):
        policy = Reconnect(initial=0.01, maximum=0.05, jitter=0)
        async with Connection(server.url, reconnect=policy, on_event=events.append) as conn:
            assert await conn.list_tools() == []  # read-only: sent again once reconnected
        wire = server.requests()
    assert any(isinstance(e, Reconnected) for e in events)
    gets = [path for method, path, _ in wire if method == "GET"]
    assert gets == ["/sse", "/sse"]
    assert ("POST", "/messages?session=2", "initialize") in wire


async def test_a_404_from_the_endpoint_starts_a_new_session() -> None:
    with ScriptedSseServer(_tools) as server, trio.fail_after(10):
        async with Connection(HttpTarget(server.url, transport="sse")) as conn:
            server.forget_sessions()
            # Without a reconnect policy too, as for a Streamable HTTP session's 404.
            assert [t.name for t in await conn.list_tools()] == ["echo"]
        wire = server.requests()
    assert wire[3:] == [
        ("POST", "/messages?session=1", "tools/list"),  # -> 404
        ("GET", "/sse", None),
        ("POST", "/messages?session=2", "initialize"),
        ("POST", "/messages?session=2", "notifications/initialized"),
        ("POST", "/messages?session=2", "tools/list"),
    ]


@pytest.mark.parametrize(
    ("first", "reason", "words"),
    [
        (b": a comment, and no endpoint\n\n", "no-endpoint", "no endpoint event"),
        (
            b"event: endpoint\ndata: http://elsewhere.test/messages\n\n",
            "endpoint-refused",
            "origin",
        ),
        (b"event: endpoint\ndata: /m?" + b"x" * 20000 + b"\n\n", "endpoint-refused", "over 8192"),
        (b"event: endpoint\ndata: /m?" + b"x" * (4 << 20), "endpoint-refused", "over 8192"),
    ],
    ids=["no-endpoint", "other-origin", "long-endpoint", "endless-event"],
)
async def test_a_hostile_stream_fails_the_connect_typed(
    first: bytes, reason: str, words: str
) -> None:
    with ScriptedSseServer(first=first) as server, trio.fail_after(10):
        for target in (
            HttpTarget(server.url, transport="sse", timeout=0.5),
            HttpTarget(server.url, timeout=0.5),  # the fallback finds it so too
        ):
            started = trio.current_time()
            with pytest.raises(TransportError) as caught:
                async with Connection(target):
                    pytest.fail("connected")
            assert caught.value.reason == reason
            assert words in caught.value.message
            assert trio.current_time() - started < 3
        # Nothing was ever POSTed to another origin, nor to a refused endpoint.
        assert all(path.startswith("/sse") for _, path, _ in server.requests())


async def test_an_oversized_message_event_is_dropped_and_its_request_times_out() -> None:
    def answer(message: dict[str, Any]) -> Any:
        return {"blob": "x" * 5000} if message["method"] == "tools/call" else {"tools": []}

    with ScriptedSseServer(answer) as server, trio.fail_after(10):
        target = HttpTarget(server.url, transport="sse")
        async with Connection(target, max_message_bytes=4096) as conn:
            with capture_logs() as logs, pytest.raises(RequestTimeout):
                await conn.request("tools/call", {"name": "big"}, timeout=0.5)
            assert await conn.list_tools() == []  # the stream goes on
    assert any(e["event"] == "SSE event dropped" for e in logs)


async def test_no_stream_at_the_url_names_both_answers_and_the_path() -> None:
    with ScriptedSseServer(post_status=404) as server, trio.fail_after(10):
        url = server.origin + "/mcp"
        with pytest.raises(TransportError) as caught:
            async with Connection(HttpTarget(url)):
                pytest.fail("connected")
        with pytest.raises(TransportError) as direct:
            async with Connection(HttpTarget(url, transport="sse")):
                pytest.fail("connected")
    assert caught.value.reason == "no-endpoint"
    assert caught.value.message == (
        f"POST {url} -> 404 Not Found and no SSE stream there (GET -> 404 Not Found): "
        "check the URL's path (Streamable HTTP servers usually serve /mcp, legacy SSE "
        "servers /sse)"
    )
    assert direct.value.reason == "no-endpoint"
    assert "no SSE stream there" in direct.value.message


@pytest.mark.parametrize("transport", ["streamable-http", "sse"])
async def test_a_refused_connection_reads_connection_refused(transport: Any) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # closed again: nothing listens there
    with trio.fail_after(10), pytest.raises(TransportError) as caught:
        async with Connection(HttpTarget(f"http://127.0.0.1:{port}/mcp", transport=transport)):
            pytest.fail("connected")
    assert caught.value.reason == "connect-failed"
    assert f"cannot connect to 127.0.0.1:{port}" in caught.value.message
    assert caught.value.message.endswith("connection refused")


def test_the_endpoint_is_resolved_against_the_stream_url_and_kept_on_its_origin() -> None:
    url = "http://Host.test/a/sse?k=1"
    assert endpoint_path(url, "/messages/?session_id=ab") == "/messages/?session_id=ab"
    assert endpoint_path(url, "messages?s=1") == "/a/messages?s=1"
    assert endpoint_path(url, "http://host.test:80/m#frag") == "/m"  # same origin, spelt out
    assert endpoint_path("https://h.test/sse", "//h.test:443/m") == "/m"
    for other in ("https://host.test/m", "http://host.test:8080/m", "//evil.test/m", "/m x", "é"):
        with pytest.raises(TransportError) as caught:
            endpoint_path(url, other)
        assert caught.value.reason == "endpoint-refused"


async def test_a_json_rpc_refusal_is_a_streamable_servers_and_never_falls_back() -> None:
    # The scripted Streamable HTTP server refuses server/discover with 400 and a JSON-RPC
    # error, as the official SDKs' servers do: initialize follows over Streamable HTTP,
    # with no GET in between (its GET stream would hold no endpoint event).
    def answer(message: dict[str, Any], session: str | None) -> Any:
        if "id" not in message or message["method"] == "server/discover":
            return None  # a notification: 202; discover: 400 and a JSON-RPC error
        return {"jsonrpc": "2.0", "id": message["id"], "result": {}}

    with ScriptedHttpServer(answer) as server, trio.fail_after(10):
        async with Connection(HttpTarget(server.url)) as conn:
            assert getattr(conn.transport, "kind", None) == "streamable-http"
        wire = [(s.method, s.body.get("method") if s.body else None) for s in server.seen]
    assert wire[:2] == [("POST", "server/discover"), ("POST", "initialize")]


async def test_authorization_goes_on_the_get_and_every_post() -> None:
    with ScriptedSseServer(_tools, token="t-1") as server, trio.fail_after(10):
        with pytest.raises(AuthorizationRequired) as caught:
            async with Connection(HttpTarget(server.url, transport="sse")):
                pytest.fail("connected")
        assert caught.value.status == 401
        bearer = {"Authorization": "Bearer t-1"}
        for target in (
            HttpTarget(server.url, headers=bearer, transport="sse"),
            HttpTarget(server.url, headers=bearer),
        ):
            async with Connection(target) as conn:
                await conn.list_tools()
        authorized = server.seen[1:]
    assert len(authorized) >= 9
    assert all(s.headers["authorization"] == "Bearer t-1" for s in authorized)


class _PlainRefusal(BaseHTTPRequestHandler):
    """A Streamable HTTP server behind something that answers server/discover with a
    plain-text 400, and whose GET stream is open but quiet (no endpoint event ever)."""

    protocol_version = "HTTP/1.1"
    wire: ClassVar[list[tuple[str, str | None]]] = []

    def log_message(self, *args: Any) -> None:
        pass

    def _send(self, status: int, kind: str, body: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self) -> None:
        message = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.wire.append(("POST", message.get("method")))
        if message.get("method") == "server/discover":
            self._send(400, "text/plain", b"Bad Request")
        elif message.get("method") == "initialize":
            result = {
                "protocolVersion": message["params"]["protocolVersion"],
                "capabilities": {},
                "serverInfo": {"name": "plain", "version": "1"},
            }
            answer = {"jsonrpc": "2.0", "id": message["id"], "result": result}
            self._send(200, "application/json", json.dumps(answer).encode())
        else:
            self._send(202, "text/plain", b"")

    def do_GET(self) -> None:
        self.wire.append(("GET", None))
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.end_headers()
        self.wfile.flush()
        time.sleep(5)  # quiet: a legacy probe here would wait out its timeout


async def test_a_refused_discover_never_sends_the_host_to_the_legacy_transport() -> None:
    # The specification's fallback is for a refused initialize: a Streamable HTTP server
    # whose discover is refused in plain text (not JSON-RPC) is still reached over it.
    _PlainRefusal.wire = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _PlainRefusal)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        target = HttpTarget(f"http://127.0.0.1:{server.server_port}/mcp", timeout=3)
        with trio.fail_after(10):
            async with Connection(target) as conn:
                assert conn.server_info is not None
                assert conn.server_info["name"] == "plain"
                assert getattr(conn.transport, "kind", None) == "streamable-http"
        assert _PlainRefusal.wire[:2] == [("POST", "server/discover"), ("POST", "initialize")]
    finally:
        server.shutdown()
        server.server_close()


class _Objecting(BaseHTTPRequestHandler):
    """Refuses every POST with a plain-text 400 that says why (a token echoed in it),
    and has no event stream."""

    protocol_version = "HTTP/1.1"

    def log_message(self, *args: Any) -> None:
        pass

    def _send(self, status: int, body: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers["Content-Length"]))
        self._send(400, b"missing header X-Tenant (got Authorization: Bearer tok-5e1f9a)\n")

    def do_GET(self) -> None:
        self._send(404, b"Not Found")


async def test_no_stream_after_a_400_shows_what_the_server_said_redacted() -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Objecting)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_port}/mcp"
        target = HttpTarget(url, headers={"Authorization": "Bearer tok-5e1f9a"})
        with trio.fail_after(10), pytest.raises(TransportError) as caught:
            async with Connection(target):
                pytest.fail("connected")
    finally:
        server.shutdown()
        server.server_close()
    assert caught.value.reason == "no-endpoint"
    assert caught.value.message == (
        f"POST {url} -> 400 Bad Request and no SSE stream there (GET -> 404 Not Found): "
        "the server said 'missing header X-Tenant (got Authorization: ***)'"
    )
