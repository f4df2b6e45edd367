"""The Streamable HTTP transport against a scripted HTTP server on loopback: what goes on
the wire (headers, sessions, DELETE), JSON and SSE answers, the GET stream, a 404
mid-session, a stream cut after its priming event and resumed, HTTP errors, batches on
2025-03-26, and credentials kept out of logs."""

from __future__ import annotations

import time
from typing import Any

import pytest
import trio
from structlog.testing import capture_logs

from mcpl_host import (
    Closed,
    Connection,
    ConnectionClosed,
    Disconnected,
    HttpTarget,
    ProtocolError,
    Reconnected,
    RequestError,
    TransportError,
    VersionError,
)
from mcpl_host.transports.sse_reopen import FLOOR

from .http_server import ScriptedHttpServer, Sse, Status

CANARY = "canary-http-7f3a9c"


def result(message: dict[str, Any], value: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": message["id"], "result": value}


async def test_json_answers_sessions_and_headers_on_the_wire() -> None:
    def answer(message: dict[str, Any], session: str | None) -> Any:
        if "id" not in message:
            return None  # a notification: 202
        return result(message, {"content": [{"type": "text", "text": "hi"}]})

    with ScriptedHttpServer(answer) as server, trio.fail_after(10):
        async with Connection(HttpTarget(server.url)) as conn:
            assert conn.protocol_version == "2025-11-25"
            out = await conn.request("tools/call", {"name": "echo"})  # a pretty-printed body
            assert out == {"content": [{"type": "text", "text": "hi"}]}
        init, initialized, call = (
            server.posted(m)[0] for m in ("initialize", "notifications/initialized", "tools/call")
        )
    assert "mcp-session-id" not in init.headers
    assert "mcp-protocol-version" not in init.headers  # not agreed yet
    assert init.headers["accept"] == "application/json, text/event-stream"
    assert init.headers["content-type"] == "application/json"
    session = initialized.headers["mcp-session-id"]
    for later in (initialized, call):
        assert later.headers["mcp-session-id"] == session
        assert later.headers["mcp-protocol-version"] == "2025-11-25"
    gets = [s for s in server.seen if s.method == "GET"]
    assert gets  # the GET stream was opened once initialized
    assert gets[0].headers["accept"] == "text/event-stream"
    deletes = [s for s in server.seen if s.method == "DELETE"]
    assert [d.headers["mcp-session-id"] for d in deletes] == [session]


async def test_a_session_id_on_a_refusal_is_not_kept() -> None:
    # As the official Python SDK's server answers a POST without a session that is not
    # initialize: 400, an id-less error, and a session id of its own. That id names no
    # session the host has; sent back with initialize it would get 404.
    def answer(message: dict[str, Any], session: str | None) -> Any:
        if message.get("method") == "server/discover":
            error = {"code": -32600, "message": "Bad Request: Missing session ID"}
            return Status(
                400, {"jsonrpc": "2.0", "id": None, "error": error}, {"Mcp-Session-Id": "stray"}
            )
        return None if "id" not in message else result(message, {})

    with ScriptedHttpServer(answer) as server, trio.fail_after(10):
        async with Connection(HttpTarget(server.url)) as conn:
            assert conn.protocol_version == "2025-11-25"
            await conn.request("tools/list")
        (init,) = server.posted("initialize")
    assert "mcp-session-id" not in init.headers
    assert server.posted("tools/list")[0].headers["mcp-session-id"] not in (None, "stray")


async def test_the_closing_delete_never_claims_a_refused_revision() -> None:
    def answer(message: dict[str, Any], session: str | None) -> Any:
        return None if "id" not in message else result(message, {})

    with ScriptedHttpServer(answer) as server, trio.fail_after(10):
        server.version = "2025-06-18"  # a revision with the header, outside the allowlist
        with pytest.raises(VersionError):
            async with Connection(HttpTarget(server.url), versions=["2025-11-25"]):
                pytest.fail("connected")
        refused = [s for s in server.seen if s.method == "DELETE"]
        server.version = "2025-11-25"
        async with Connection(HttpTarget(server.url), versions=["2025-11-25"]):
            pass
        agreed = [s for s in server.seen if s.method == "DELETE"][len(refused) :]
    assert len(refused) == 1  # the session the server opened is still ended
    assert "mcp-protocol-version" not in refused[0].headers  # never agreed
    assert [d.headers["mcp-protocol-version"] for d in agreed] == ["2025-11-25"]


async def test_sse_answers_and_a_server_request_on_the_get_stream() -> None:
    answered = trio.Event()

    def answer(message: dict[str, Any], session: str | None) -> Any:
        if message.get("method") == "tools/call":
            progress = {
                "jsonrpc": "2.0",
                "method": "notifications/progress",
                "params": {
                    "progressToken": message["params"]["_meta"]["progressToken"],
                    "progress": 1,
                    "total": 2,
                },
            }
            return Sse(events=[("1", progress), ("2", result(message, {"done": True}))])
        if "id" in message and "method" not in message:
            answered.set()  # the host's answer to our ping
        return None

    seen_progress: list[float] = []
    with ScriptedHttpServer(answer) as server, trio.fail_after(10):
        async with Connection(HttpTarget(server.url)) as conn:
            out = await conn.request(
                "tools/call",
                {"name": "slow"},
                on_progress=lambda p, total, message: seen_progress.append(p),
            )
            assert out == {"done": True}
            server.get_streams.put({"jsonrpc": "2.0", "id": "srv-1", "method": "ping"})
            while not answered.is_set():
                await trio.sleep(0.01)
    assert seen_progress == [1]
    answers = [s.body for s in server.seen if s.method == "POST" and "method" not in s.body]
    assert answers == [{"jsonrpc": "2.0", "id": "srv-1", "result": {}}]


async def test_a_404_mid_session_starts_a_new_session_and_rebinds_by_the_rule() -> None:
    def answer(message: dict[str, Any], session: str | None) -> Any:
        if "id" not in message:
            return None
        if message["method"] in ("ping", "tools/call"):
            # Answered late; by then the test has dropped the session: 404.
            first = sum(1 for s in server.posted(message["method"])) == 1
            if first:
                return Sse(events=[(None, result(message, {}))], delay=0.3)
        return result(message, {"again": True})

    events: list[object] = []
    with ScriptedHttpServer(answer) as server, trio.fail_after(15):
        async with Connection(HttpTarget(server.url), on_event=events.append) as conn:
            outcomes: dict[str, Any] = {}

            async def call(method: str, params: Any) -> None:
                try:
                    outcomes[method] = await conn.request(method, params)
                except ConnectionClosed as exc:
                    outcomes[method] = exc

            async with trio.open_nursery() as nursery:
                nursery.start_soon(call, "ping", None)  # safe to repeat
                nursery.start_soon(call, "tools/call", {"name": "write"})  # not safe
                await trio.sleep(0.1)
                server.drop_sessions()
    assert server.initializes == 2  # a fresh initialize, on a new session
    assert outcomes["ping"] == {"again": True}  # re-sent on the new session
    closed = outcomes["tools/call"]
    assert isinstance(closed, ConnectionClosed)
    assert closed.outcome_unknown
    assert any(isinstance(e, Disconnected) and e.reason == "session-expired" for e in events)
    assert any(isinstance(e, Reconnected) for e in events)


@pytest.mark.parametrize(
    ("retry_ms", "at_most"),
    [
        # Under the floor (0.5 s): the floor, well under the 1 s the transport waits when
        # the server names no retry.
        (50, 0.9),
        # Over that 1 s: a wait of the default alone falls short of it.
        (1200, None),
    ],
)
async def test_a_stream_cut_after_its_priming_event_is_resumed_after_the_servers_retry(
    retry_ms: int, at_most: float | None
) -> None:
    def answer(message: dict[str, Any], session: str | None) -> Any:
        if message.get("method") == "tools/call":
            server.resume["ev-1"] = [("ev-2", result(message, {"resumed": True}))]
            return Sse(events=[("ev-1", None)], retry=retry_ms)  # priming event, then cut
        return None if "id" not in message else result(message, {})

    with ScriptedHttpServer(answer) as server, trio.fail_after(10):
        async with Connection(HttpTarget(server.url)) as conn:
            began = time.monotonic()
            assert await conn.request("tools/call", {"name": "long"}) == {"resumed": True}
            waited = time.monotonic() - began
    resumes = [s for s in server.seen if s.method == "GET" and "last-event-id" in s.headers]
    assert [r.headers["last-event-id"] for r in resumes] == ["ev-1"]
    assert waited >= max(retry_ms / 1000, FLOOR)  # the server's retry was honoured...
    if at_most is not None:  # ...and not the default (the bound leaves time for a busy CPU)
        assert waited < at_most


async def test_http_errors_settle_the_request() -> None:
    def answer(message: dict[str, Any], session: str | None) -> Any:
        if message.get("method") == "tools/call":
            return 500
        if message.get("method") == "bad/params":
            error = {"code": -32602, "message": "no such thing"}
            return {"jsonrpc": "2.0", "id": message["id"], "error": error}
        return None if "id" not in message else result(message, {})

    with ScriptedHttpServer(answer) as server, trio.fail_after(10):
        async with Connection(HttpTarget(server.url)) as conn:
            with pytest.raises(RequestError) as failed:
                await conn.request("tools/call", {"name": "x"})
            assert failed.value.code == -32603
            assert "HTTP 500" in failed.value.message
            with pytest.raises(RequestError) as refused:
                await conn.request("bad/params")
            assert refused.value.code == -32602
            assert await conn.request("ping") == {}  # the session goes on


async def test_batches_on_2025_03_26_are_received_and_answered_as_one() -> None:
    def answer(message: Any, session: str | None) -> Any:
        return None  # notifications and the host's answers: 202

    with ScriptedHttpServer(answer) as server, trio.fail_after(10):
        server.version = "2025-03-26"
        async with Connection(HttpTarget(server.url)) as conn:
            assert conn.protocol_version == "2025-03-26"
            server.get_streams.put(
                [
                    {"jsonrpc": "2.0", "id": 1, "method": "ping"},
                    {"jsonrpc": "2.0", "id": 2, "method": "ping"},
                ]
            )
            while not any(isinstance(s.body, list) for s in server.seen if s.method == "POST"):
                await trio.sleep(0.01)
        batch = next(s for s in server.seen if s.method == "POST" and isinstance(s.body, list))
    assert sorted(a["id"] for a in batch.body) == [1, 2]
    # 2025-03-26 has no MCP-Protocol-Version header (it came with 2025-06-18)
    assert "mcp-protocol-version" not in batch.headers


@pytest.mark.parametrize("as_events", [False, True], ids=["json", "event-stream"])
async def test_an_array_answer_after_2025_03_26_settles_its_request_at_once(
    as_events: bool,
) -> None:
    def answer(message: dict[str, Any], session: str | None) -> Any:
        if message.get("method") == "tools/call":
            batch = [result(message, {"content": []})]
            return Sse(events=[("1", batch)]) if as_events else batch
        return None if "id" not in message else result(message, {})

    with ScriptedHttpServer(answer) as server, trio.fail_after(10):
        async with Connection(HttpTarget(server.url), request_timeout=60) as conn:
            assert conn.protocol_version == "2025-11-25"
            began = time.monotonic()
            with pytest.raises(ProtocolError) as refused:
                await conn.request("tools/call", {"name": "x"})
            assert time.monotonic() - began < 5  # not its 60 s timeout
            assert await conn.request("ping") == {}  # the session goes on

            def refusals() -> list[Any]:
                return [
                    s.body for s in list(server.seen) if s.method == "POST" and "error" in s.body
                ]

            # The refusal's POST runs beside the ping's, and may reach the server after
            # it: closing first would cut it (seen once in a loaded full run).
            while not refusals():
                await trio.sleep(0.01)
    assert "JSON-RPC batch" in str(refused.value)
    assert "2025-11-25" in str(refused.value)
    # The array itself met the batch rule: one -32600 with id null went back.
    assert [(r["id"], r["error"]["code"]) for r in refusals()] == [(None, -32600)]


async def test_an_array_answer_on_2025_03_26_is_the_answer() -> None:
    def answer(message: dict[str, Any], session: str | None) -> Any:
        if message.get("method") == "tools/call":
            return [result(message, {"batched": True})]
        return None if "id" not in message else result(message, {})

    with ScriptedHttpServer(answer) as server, trio.fail_after(10):
        server.version = "2025-03-26"
        async with Connection(HttpTarget(server.url)) as conn:
            assert await conn.request("tools/call", {"name": "x"}) == {"batched": True}


async def test_header_values_never_reach_the_logs() -> None:
    def answer(message: dict[str, Any], session: str | None) -> Any:
        return None if "id" not in message else 500

    target = HttpTarget("http://127.0.0.1:1/mcp", headers={"Authorization": f"Bearer {CANARY}"})
    assert CANARY not in repr(target)
    with ScriptedHttpServer(answer) as server, trio.fail_after(10), capture_logs() as logs:
        target = HttpTarget(server.url, headers={"Authorization": f"Bearer {CANARY}"})
        async with Connection(target) as conn:
            with pytest.raises(RequestError) as failed:
                await conn.request("tools/call", {"text": f"my key is {CANARY}"})
            assert CANARY not in str(failed.value)
        assert server.posted("initialize")[0].headers["authorization"] == f"Bearer {CANARY}"
    assert logs
    assert CANARY not in repr(logs)


def host_answers(server: ScriptedHttpServer) -> list[Any]:
    """What the host POSTed that is not a request or notification: its answers."""
    return [
        s.body
        for s in list(server.seen)
        if s.method == "POST" and (isinstance(s.body, list) or "method" not in s.body)
    ]


@pytest.mark.parametrize(
    ("version", "pushed", "expected"),
    [
        (
            "2025-11-25",
            {"jsonrpc": "2.0", "id": None, "method": "ping"},
            {"id": None, "result": {}},
        ),
        ("2025-11-25", {"jsonrpc": "2.0", "id": "p", "method": "ping"}, {"id": "p", "result": {}}),
        # A batch is judged by the revision: answered as one array on 2025-03-26 ...
        ("2025-03-26", [{"jsonrpc": "2.0", "id": 7, "method": "ping"}], [{"id": 7, "result": {}}]),
        # ... refused whole on 2025-11-25.
        (
            "2025-11-25",
            [{"jsonrpc": "2.0", "id": 7, "method": "ping"}],
            {"id": None, "code": -32600},
        ),
    ],
)
async def test_a_message_on_the_get_stream_as_it_opens_meets_the_negotiated_revision(
    version: str, pushed: Any, expected: Any
) -> None:
    def answer(message: Any, session: str | None) -> Any:
        return None  # notifications and the host's answers: 202

    def shape(body: Any) -> Any:
        if isinstance(body, list):
            return [shape(entry) for entry in body]
        if "error" in body:
            return {"id": body["id"], "code": body["error"]["code"]}
        return {"id": body["id"], "result": body["result"]}

    with ScriptedHttpServer(answer) as server, trio.fail_after(10):
        server.version = version
        server.get_streams.put(pushed)  # written the moment the GET stream opens
        async with Connection(HttpTarget(server.url)):
            while not host_answers(server):
                await trio.sleep(0.01)
        assert [shape(body) for body in host_answers(server)] == [expected]


async def test_a_server_refusing_every_renewed_session_is_renewed_a_bounded_number_of_times() -> (
    None
):
    """After the first session, the server forgets every new one at its
    notifications/initialized (404): each renewal is a failed attempt, and so is the first
    session (it lived less than ``stable``), so the built-in renewal's three attempts end
    the connection after two more sessions, where it used to renew without end."""

    def answer(message: Any, session: str | None) -> Any:
        if message.get("method") == "notifications/initialized" and server.initializes > 1:
            return 404
        return None if "id" not in message else result(message, {})

    events: list[object] = []
    with ScriptedHttpServer(answer) as server, trio.fail_after(10):
        async with Connection(HttpTarget(server.url), on_event=events.append) as conn:
            server.drop_sessions()
            with pytest.raises(ConnectionClosed):
                await conn.request("tools/call", {"name": "x"})
            while not any(isinstance(e, Closed) for e in events):
                await trio.sleep(0.01)
        assert server.initializes == 3
    closed = events[-1]
    assert isinstance(closed, Closed)
    assert closed.reason == "reconnect-failed"


async def test_a_404_on_notifications_initialized_fails_the_connect() -> None:
    def answer(message: Any, session: str | None) -> Any:
        return 404 if message.get("method") == "notifications/initialized" else None

    with ScriptedHttpServer(answer) as server, trio.fail_after(10):
        with pytest.raises(TransportError) as info:
            async with Connection(HttpTarget(server.url)):
                pytest.fail("connected")
        assert server.initializes == 1
    assert info.value.reason == "session-expired"


async def test_a_json_answer_past_the_bound_fails_its_request_naming_the_bound() -> None:
    def answer(message: dict[str, Any], session: str | None) -> Any:
        if message.get("method") == "tools/call":
            return result(message, {"content": [{"type": "text", "text": "x" * 10_000}]})
        return None if "id" not in message else result(message, {})

    with ScriptedHttpServer(answer) as server, trio.fail_after(10):
        async with Connection(HttpTarget(server.url), max_message_bytes=4096) as conn:
            with pytest.raises(RequestError) as failed:
                await conn.request("tools/call", {"name": "big"})
            assert await conn.request("ping") == {}
    assert failed.value.code == -32603
    assert "its answer is over max_message_bytes (4096 bytes)" in failed.value.error_message


async def test_an_event_past_the_bound_on_the_get_stream_is_dropped_with_one_log_line() -> None:
    def answer(message: Any, session: str | None) -> Any:
        return None  # notifications and the host's answers: 202

    big = {"jsonrpc": "2.0", "method": "notifications/message", "params": {"x": "x" * 10_000}}
    with ScriptedHttpServer(answer) as server, trio.fail_after(10), capture_logs() as logs:
        server.get_streams.put(big)
        server.get_streams.put({"jsonrpc": "2.0", "id": "after", "method": "ping"})
        async with Connection(HttpTarget(server.url), max_message_bytes=4096):
            while not host_answers(server):
                await trio.sleep(0.01)
        # The stream went on: the request after the oversized event was answered.
        assert [a["id"] for a in host_answers(server)] == ["after"]
    dropped = [e for e in logs if e["event"] == "SSE event dropped"]
    assert [(e["log_level"], e["stream"]) for e in dropped] == [("warning", "GET")]


async def test_an_http_refusal_is_traced_as_http_and_no_json_rpc_answer_is_made_up() -> None:
    # Issue 19: the request fails with the -32603 it always did, but the wire watch sees
    # the HTTP exchange, not a JSON-RPC error the server never sent.
    def answer(message: dict[str, Any], session: str | None) -> Any:
        if message.get("method") == "tools/call":
            return 500
        return None if "id" not in message else result(message, {})

    wire: list[tuple[str, bytes]] = []
    with ScriptedHttpServer(answer) as server, trio.fail_after(10):
        async with Connection(
            HttpTarget(server.url),
            versions=["2025-11-25"],
            on_wire=lambda direction, line: wire.append((direction, line)),
        ) as conn:
            with pytest.raises(RequestError) as refused:
                await conn.request("tools/call", {"name": "x"})
    assert refused.value.code == -32603
    assert "HTTP 500" in refused.value.error_message
    inbound = [line for direction, line in wire if direction == "in"]
    assert not any(b"no answer over HTTP" in line for line in inbound)
    http = [line.decode() for direction, line in wire if direction == "http"]
    assert http == [f"HTTP POST {server.url} -> 500"]
