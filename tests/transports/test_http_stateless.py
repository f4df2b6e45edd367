"""Streamable HTTP on 2026-07-28, over a real loopback server: the headers on the wire,
no session, cancelling by closing the stream, and broken streams (docs/http.md)."""

from __future__ import annotations

import base64
from typing import Any

import pytest
import trio
from structlog.testing import capture_logs

from mcpl_host import Connection, ConnectionClosed, HttpTarget, InvalidToolError

from .http_server import ScriptedHttpServer, Seen, Sse

R5 = "2026-07-28"
META_VERSION = "io.modelcontextprotocol/protocolVersion"

ANNOTATED = {
    "name": "annotated",
    "inputSchema": {
        "type": "object",
        "properties": {
            "region": {"type": "string", "x-mcp-header": "Region"},
            "priority": {"type": "integer", "x-mcp-header": "Priority"},
            "verbose": {"type": "boolean", "x-mcp-header": "Verbose"},
            "debug": {"type": "boolean", "x-mcp-header": "Debug"},
            "greeting": {"type": "string", "x-mcp-header": "Greeting"},
            "padded": {"type": "string", "x-mcp-header": "Padded"},
            "lines": {"type": "string", "x-mcp-header": "Lines"},
            "missing": {"type": "string", "x-mcp-header": "Missing"},
            "nothing": {"type": "string", "x-mcp-header": "Nothing"},
            "query": {"type": "string"},
            "nested": {
                "type": "object",
                "properties": {"zone": {"type": "string", "x-mcp-header": "Zone"}},
            },
        },
    },
}
INVALID = [
    {
        "name": "bad_space",
        "inputSchema": {"properties": {"v": {"type": "string", "x-mcp-header": "A B"}}},
    },
    {
        "name": "bad_number",
        "inputSchema": {"properties": {"v": {"type": "number", "x-mcp-header": "N"}}},
    },
]
PLAIN = {"name": "plain", "inputSchema": {"type": "object"}}
READ_ONLY = {
    "name": "reader",
    "inputSchema": {"type": "object"},
    "annotations": {"readOnlyHint": True},
}


def result(message: dict[str, Any], value: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": message["id"], "result": {"resultType": "complete", **value}}


def answers(message: dict[str, Any], _session: str | None) -> Any:
    method = message.get("method")
    if "id" not in message:
        return None
    if method == "tools/list":
        return result(message, {"tools": [ANNOTATED, *INVALID, PLAIN, READ_ONLY]})
    if method == "resources/read":
        return result(message, {"contents": []})
    if method == "prompts/get":
        return result(message, {"messages": []})
    return result(message, {"content": []})


def decoded(value: str) -> str:
    assert value.startswith("=?base64?"), value
    assert value.endswith("?="), value
    return base64.b64decode(value[len("=?base64?") : -2]).decode()


def mcp_headers(seen: Seen) -> dict[str, str]:
    return {k: v for k, v in seen.headers.items() if k.startswith("mcp-")}


async def test_every_post_names_its_revision_method_and_name_and_no_session() -> None:
    with ScriptedHttpServer(answers, stateless=True) as server, trio.fail_after(10):
        async with Connection(HttpTarget(server.url)) as conn:
            assert conn.protocol_version == R5
            await conn.list_tools()
            await conn.call_tool("my-hyphenated tool")
            await conn.read_resource("file:///a%20b.txt?x=1")
            await conn.get_prompt("prompt")
        seen = list(server.seen)
    posts = [s for s in seen if s.method == "POST"]
    expected = [
        {"mcp-protocol-version": R5, "mcp-method": "server/discover"},
        {"mcp-protocol-version": R5, "mcp-method": "tools/list"},
        {
            "mcp-protocol-version": R5,
            "mcp-method": "tools/call",
            "mcp-name": "my-hyphenated tool",  # an inner space is safe as it is
        },
        {
            "mcp-protocol-version": R5,
            "mcp-method": "resources/read",
            "mcp-name": "file:///a%20b.txt?x=1",
        },
        {"mcp-protocol-version": R5, "mcp-method": "prompts/get", "mcp-name": "prompt"},
    ]
    assert [mcp_headers(p) for p in posts] == expected  # no mcp-session-id, ever
    for post in posts:
        assert post.headers["mcp-protocol-version"] == post.body["params"]["_meta"][META_VERSION]
        assert len(post.raw_headers) == len(post.headers)  # no header sent twice
    # POST only: no GET stream, no closing DELETE (the server's Mcp-Session-Id ignored).
    assert [s.method for s in seen] == ["POST"] * len(posts)


async def test_annotated_arguments_are_mirrored_into_mcp_param_headers() -> None:
    arguments = {
        "region": "us-west1",
        "priority": 42,
        "verbose": False,
        "debug": True,
        "greeting": "Hello, 世界",
        "padded": " padded ",
        "lines": "line1\r\nline2",
        "nothing": None,  # null: no header
        "query": "SELECT 1",  # not annotated: no header
        "nested": {"zone": "=?base64?abc?="},  # looks encoded: encoded, so it reads back
    }
    with ScriptedHttpServer(answers, stateless=True) as server, trio.fail_after(10):
        async with Connection(HttpTarget(server.url)) as conn:
            await conn.list_tools()
            await conn.call_tool("annotated", arguments)
        (call,) = server.posted("tools/call")
    params = {k: v for k, v in call.headers.items() if k.startswith("mcp-param-")}
    assert {k: v for k, v in params.items() if not v.startswith("=?")} == {
        "mcp-param-region": "us-west1",
        "mcp-param-priority": "42",
        "mcp-param-verbose": "false",
        "mcp-param-debug": "true",
    }
    encoded = {k: decoded(v) for k, v in params.items() if v.startswith("=?")}
    assert encoded == {
        "mcp-param-greeting": "Hello, 世界",
        "mcp-param-padded": " padded ",
        "mcp-param-lines": "line1\r\nline2",
        "mcp-param-zone": "=?base64?abc?=",
    }
    assert call.body["params"]["arguments"] == arguments  # the body as the caller wrote it


async def test_tools_with_malformed_annotations_are_dropped_and_never_called() -> None:
    with ScriptedHttpServer(answers, stateless=True) as server, trio.fail_after(10):
        async with Connection(HttpTarget(server.url)) as conn:
            with capture_logs() as logs:
                names = [t.name for t in await conn.list_tools()]
                await conn.list_tools(refresh=True)  # the same verdict: no second warning
            assert names == ["annotated", "plain", "reader"]
            with pytest.raises(InvalidToolError) as raised:
                await conn.call_tool("bad_space", {"v": "x"})
            assert raised.value.tool == "bad_space"
            assert "not a header name" in raised.value.reason
            with pytest.raises(InvalidToolError, match="not on type 'number'"):
                await conn.request("tools/call", {"name": "bad_number"})  # raw calls too
        assert server.posted("tools/call") == []  # nothing was sent
    dropped = [e for e in logs if e["event"] == "tool dropped"]
    assert sorted(e["tool"] for e in dropped) == ["bad_number", "bad_space"]
    assert all(e["log_level"] == "warning" for e in dropped)


async def test_a_cancelled_request_closes_its_stream_and_posts_no_notification() -> None:
    def slow(message: dict[str, Any], session: str | None) -> Any:
        if message.get("method") == "tools/call":
            return Sse(events=[(None, None)], delay=0.5)  # nothing useful, slowly
        return answers(message, session)

    with ScriptedHttpServer(slow, stateless=True) as server, trio.fail_after(10):
        async with Connection(HttpTarget(server.url)) as conn:
            with trio.move_on_after(0.1) as scope:
                await conn.call_tool("plain")
            assert scope.cancelled_caught
            await trio.sleep(0.7)  # the server answered the closed stream meanwhile
            await conn.list_tools()  # the connection goes on
        methods = [s.body.get("method") for s in server.seen if s.method == "POST"]
    assert "notifications/cancelled" not in methods
    assert methods == ["server/discover", "tools/call", "tools/list"]


def cut_once(method: str) -> Any:
    """Answers whose first ``method`` POST gets a stream that ends with no answer."""
    cut: list[int] = []

    def answer(message: dict[str, Any], session: str | None) -> Any:
        if message.get("method") == method and not cut:
            cut.append(message["id"])
            return Sse(events=[("1", None)])  # a priming event, then the stream ends
        return answers(message, session)

    return answer


@pytest.mark.parametrize("tool", ["reader", None])
async def test_a_broken_stream_reissues_what_is_safe_with_a_new_id(tool: str | None) -> None:
    method = "tools/call" if tool else "tools/list"
    with ScriptedHttpServer(cut_once(method), stateless=True) as server, trio.fail_after(10):
        async with Connection(HttpTarget(server.url)) as conn:
            if tool:
                await conn.list_tools()  # readOnlyHint: safe to repeat
                out = await conn.call_tool(tool)
                assert out.content == []
            else:
                assert next(t.name for t in await conn.list_tools()) == "annotated"
        posts = server.posted(method)
    assert len(posts) == 2
    first, second = (p.body["id"] for p in posts)
    assert first != second
    assert [s.method for s in server.seen] == ["POST"] * len(server.seen)  # never resumed by GET


async def test_a_broken_stream_fails_what_is_not_safe_to_repeat() -> None:
    with (
        ScriptedHttpServer(cut_once("tools/call"), stateless=True) as server,
        trio.fail_after(10),
    ):
        async with Connection(HttpTarget(server.url)) as conn:
            await conn.list_tools()
            with pytest.raises(ConnectionClosed) as raised:
                await conn.call_tool("plain")
            assert raised.value.outcome_unknown
            assert raised.value.reason == "stream-broken"
            await conn.list_tools(refresh=True)  # only that request failed
        assert len(server.posted("tools/call")) == 1


async def test_a_server_that_always_cuts_is_reissued_a_bounded_number_of_times() -> None:
    def always(message: dict[str, Any], session: str | None) -> Any:
        if message.get("method") == "tools/list":
            return Sse(events=[("1", None)])
        return answers(message, session)

    with ScriptedHttpServer(always, stateless=True) as server, trio.fail_after(10):
        async with Connection(HttpTarget(server.url)) as conn:
            with pytest.raises(ConnectionClosed, match="stream broke"):
                await conn.list_tools()
        assert len(server.posted("tools/list")) == 4  # the first, then 3 re-issues


async def test_schemas_are_kept_as_sent_and_a_network_ref_is_never_fetched() -> None:
    canary: list[str] = []

    def answer(message: dict[str, Any], session: str | None) -> Any:
        if message.get("method") == "tools/list":
            return result(message, {"tools": [schema_tool]})
        if message.get("method") == "tools/call":
            return result(message, {"content": [], "structuredContent": {"p": 1}})
        return answers(message, session)

    with ScriptedHttpServer(answer, stateless=True) as server, trio.fail_after(10):
        ref = server.url.replace("/mcp", "/canary/profile-schema.json")
        input_schema = {
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "$defs": {"id": {"type": "string", "pattern": "^[a-z]+$"}},
            "properties": {"id": {"$ref": "#/$defs/id"}, "profile": {"$ref": ref}},
            "prefixItems": [{"type": "string"}],
            "unevaluatedProperties": False,
        }
        schema_tool = {
            "name": "lookup",
            "inputSchema": input_schema,
            "outputSchema": {"type": "object", "properties": {"p": {"$ref": ref}}},
        }
        async with Connection(HttpTarget(server.url)) as conn:
            (tool,) = await conn.list_tools()
            assert tool.input_schema == input_schema  # every 2020-12 keyword as sent
            with capture_logs() as logs:
                await conn.call_tool("lookup", {"id": "a"})  # its outputSchema: not checkable
            canary = [s.method for s in server.seen if s.method != "POST"]
    assert canary == []  # no GET of the $ref, nor anything else
    assert any(e["event"] == "tool result not validated" for e in logs)
