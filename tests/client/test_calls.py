"""Typed MCP calls over a memory stream: the bytes the host writes, the values it returns."""

from __future__ import annotations

import time
from typing import Any

import msgspec
import pytest
import trio
from structlog.testing import capture_logs

from mcpl_host import (
    CallToolResult,
    Event,
    ListChanged,
    OutputSchemaError,
    PromptRef,
    ProtocolError,
    RequestError,
    ResourceTemplateRef,
    ResourceUpdated,
    TextContent,
)
from mcpl_host.client import (
    AudioContent,
    EmbeddedResource,
    ImageContent,
    ResourceLink,
    ResultDecodeError,
    UnknownContent,
    cache,
)

from ..driver.conftest import connected
from .helpers import Answers, schema_server

TOOLS_PAGE_1 = {
    "tools": [
        {
            "name": "add",
            "description": "adds",
            "inputSchema": {"type": "object", "properties": {"a": {"type": "integer"}}},
            "outputSchema": {
                "type": "object",
                "properties": {"sum": {"type": "integer"}},
                "required": ["sum"],
            },
            "annotations": {"readOnlyHint": True, "title": "Add"},
            "_meta": {"com.example/x": 1},
            "x-vendor": {"kept": True},
        }
    ],
    "nextCursor": "",
}
TOOLS_PAGE_2 = {"tools": [{"name": "echo", "inputSchema": {"type": "object"}}]}


def tools_pages(request: Any) -> Any:
    cursor = (request.get("params") or {}).get("cursor")
    return TOOLS_PAGE_1 if cursor is None else TOOLS_PAGE_2


async def test_list_tools_follows_an_empty_string_cursor_and_keeps_unknown_members() -> None:
    with trio.fail_after(5):
        async with connected() as (conn, peer, nursery):
            server = Answers(peer, {"tools/list": tools_pages})
            nursery.start_soon(server.run)
            tools = await conn.list_tools()
    assert peer.received[2] == b'{"jsonrpc":"2.0","id":2,"method":"tools/list"}'
    assert peer.received[3] == (
        b'{"jsonrpc":"2.0","id":3,"method":"tools/list","params":{"cursor":""}}'
    )
    assert [t.name for t in tools] == ["add", "echo"]
    add = tools[0]
    assert add.description == "adds"
    assert add.output_schema is not None
    assert add.output_schema["required"] == ["sum"]
    assert add.annotations is not None
    assert add.annotations.read_only_hint is True
    assert add.annotations.title == "Add"
    assert add.meta == {"com.example/x": 1}
    assert add.extra == {"x-vendor": {"kept": True}}
    assert msgspec.json.decode(add.raw or b"") == TOOLS_PAGE_1["tools"][0]
    assert tools[1].extra == {}
    assert tools[1].output_schema is None


async def test_lists_are_cached_until_the_server_says_they_changed() -> None:
    events: list[Event] = []
    with trio.fail_after(5):
        async with connected(on_event=events.append) as (conn, peer, nursery):
            server = Answers(peer, {"tools/list": TOOLS_PAGE_2, "prompts/list": {"prompts": []}})
            nursery.start_soon(server.run)
            first = await conn.list_tools()
            again = await conn.list_tools()
            assert len(server.requests("tools/list")) == 1
            assert [t.name for t in again] == [t.name for t in first]
            await peer.send({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
            while not any(isinstance(e, ListChanged) for e in events):
                await trio.sleep(0.001)
            await conn.list_tools()
            assert len(server.requests("tools/list")) == 2
            await conn.list_tools(refresh=True)
            assert len(server.requests("tools/list")) == 3
            # another kind's change leaves the tools alone
            await peer.send({"jsonrpc": "2.0", "method": "notifications/prompts/list_changed"})
            while [e for e in events if isinstance(e, ListChanged)][-1].kind != "prompts":
                await trio.sleep(0.001)
            await conn.list_tools()
            assert len(server.requests("tools/list")) == 3
    assert [e.kind for e in events if isinstance(e, ListChanged)] == ["tools", "prompts"]


async def test_a_change_during_a_read_keeps_what_was_read_out_of_the_cache() -> None:
    with trio.fail_after(5):
        async with connected() as (conn, peer, nursery):
            reads = 0

            async def server() -> None:
                nonlocal reads
                while True:
                    try:
                        request = await peer.recv()
                    except EOFError:
                        return
                    reads += 1
                    if reads == 1:  # the list changes while its first read is answered
                        await peer.send(
                            {"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}
                        )
                    await peer.answer(request, {"tools": [{"name": f"v{reads}"}]})

            nursery.start_soon(server)
            assert [t.name for t in await conn.list_tools()] == ["v1"]
            assert [t.name for t in await conn.list_tools()] == ["v2"]
            assert [t.name for t in await conn.list_tools()] == ["v2"]
            assert reads == 2


@pytest.mark.parametrize(
    ("pages", "message"),
    [
        ({None: "a", "a": "b", "b": "a"}, "repeats the cursor 'a'"),
        ({None: "", "": ""}, "repeats the cursor ''"),
    ],
)
async def test_a_repeated_cursor_is_an_error_never_a_partial_list(
    pages: dict[str | None, str], message: str
) -> None:
    def page(request: Any) -> Any:
        cursor = (request.get("params") or {}).get("cursor")
        return {"resources": [{"uri": f"x://{cursor}", "name": "r"}], "nextCursor": pages[cursor]}

    with trio.fail_after(5):
        async with connected() as (conn, peer, nursery):
            nursery.start_soon(Answers(peer, {"resources/list": page}).run)
            with pytest.raises(ProtocolError, match=message):
                await conn.list_resources()


async def test_more_pages_than_allowed_is_an_error() -> None:
    def page(request: Any) -> Any:
        cursor = (request.get("params") or {}).get("cursor") or "0"
        return {"prompts": [{"name": cursor}], "nextCursor": str(int(cursor) + 1)}

    with trio.fail_after(5):
        async with connected() as (conn, peer, nursery):
            server = Answers(peer, {"prompts/list": page})
            nursery.start_soon(server.run)
            with pytest.raises(ProtocolError, match="more than 3 pages"):
                await conn.list_prompts(max_pages=3)
            assert len(server.requests("prompts/list")) == 3
            # nothing was cached from the broken list
            with pytest.raises(ProtocolError):
                await conn.list_prompts(max_pages=3)


CONTENT = [
    {"type": "text", "text": "hello", "annotations": {"audience": ["user"], "priority": 0.5}},
    {"type": "image", "data": "aGk=", "mimeType": "image/png"},
    {"type": "audio", "data": "aGk=", "mimeType": "audio/wav"},
    {"type": "resource_link", "uri": "file:///a", "name": "a", "mimeType": "text/plain"},
    {"type": "resource", "resource": {"uri": "file:///b", "text": "bee"}},
    {"type": "hologram", "frames": 3},
]


async def test_call_tool_writes_name_and_arguments_and_decodes_every_content_block() -> None:
    with trio.fail_after(5):
        async with connected() as (conn, peer, nursery):
            table = {
                "tools/list": {"tools": [{"name": "show"}]},
                "tools/call": {"content": CONTENT, "_meta": {"k": "v"}, "extraTop": 1},
            }
            nursery.start_soon(Answers(peer, table).run)
            result = await conn.call_tool("show", {"what": ["all"]})
    assert peer.received[2] == (
        b'{"jsonrpc":"2.0","id":2,"method":"tools/call",'
        b'"params":{"name":"show","arguments":{"what":["all"]}}}'
    )
    text, image, audio, link, embedded, unknown = result.content
    assert isinstance(text, TextContent)
    assert text.text == "hello"
    assert text.annotations is not None
    assert text.annotations.audience == ["user"]
    assert isinstance(image, ImageContent)
    assert image.mime_type == "image/png"
    assert isinstance(audio, AudioContent)
    assert audio.data == "aGk="
    assert isinstance(link, ResourceLink)
    assert link.uri == "file:///a"
    assert isinstance(embedded, EmbeddedResource)
    assert embedded.resource.text == "bee"
    assert unknown == UnknownContent(data={"type": "hologram", "frames": 3})
    assert unknown.kind == "hologram"
    assert result.is_error is False
    assert result.meta == {"k": "v"}
    assert result.extra == {"extraTop": 1}
    assert result.text == "hello"


async def test_a_tool_error_is_a_result_and_a_malformed_result_a_typed_error() -> None:
    with trio.fail_after(5):
        async with connected() as (conn, peer, nursery):
            answers = iter(
                [
                    {"content": [{"type": "text", "text": "boom"}], "isError": True},
                    {"content": [{"type": "text", "text": 5}]},  # a known type, malformed
                    {"content": "not a list"},
                ]
            )
            table = {"tools/list": {"tools": []}, "tools/call": lambda r: next(answers)}
            nursery.start_soon(Answers(peer, table).run)
            failed = await conn.call_tool("x")
            assert failed.is_error
            assert failed.text == "boom"
            with pytest.raises(ResultDecodeError) as caught:
                await conn.call_tool("x")
            assert msgspec.json.decode(caught.value.raw) == {
                "content": [{"type": "text", "text": 5}]
            }
            with pytest.raises(ProtocolError, match="does not fit"):
                await conn.call_tool("x")


SCHEMA_TOOLS = {
    "tools": [
        {
            "name": "add",
            "inputSchema": {"type": "object"},
            "outputSchema": {
                "type": "object",
                "properties": {"sum": {"type": "integer"}},
                "required": ["sum"],
            },
        },
        {"name": "free", "inputSchema": {"type": "object"}},
    ]
}


async def test_structured_content_is_checked_against_the_declared_output_schema() -> None:
    with trio.fail_after(5):
        async with connected() as (conn, peer, nursery):
            answers = iter(
                [
                    {"content": [], "structuredContent": {"sum": 3}},
                    {"content": [], "structuredContent": {"sum": "three"}},
                    {"content": [{"type": "text", "text": "no structure"}]},
                    {"content": [], "structuredContent": {"wrong": 1}, "isError": True},
                    {"content": [], "structuredContent": {"anything": 1}},
                    {"content": [], "structuredContent": {"sum": "three"}},
                ]
            )
            server = Answers(
                peer, {"tools/list": SCHEMA_TOOLS, "tools/call": lambda r: next(answers)}
            )
            nursery.start_soon(server.run)
            ok = await conn.call_tool("add", {"a": 1, "b": 2})
            assert ok.structured_content == {"sum": 3}
            # the tool list was read once, for the schema, before the first check
            assert len(server.requests("tools/list")) == 1

            with pytest.raises(OutputSchemaError) as caught:
                await conn.call_tool("add")
            error = caught.value
            assert error.tool == "add"
            assert isinstance(error.result, CallToolResult)
            assert error.result.structured_content == {"sum": "three"}
            assert [(v.path, v.keyword) for v in error.violations] == [("/sum", "type")]
            assert "/sum" in str(error)

            with pytest.raises(OutputSchemaError, match="no structuredContent") as missing:
                await conn.call_tool("add")
            assert missing.value.result.text == "no structure"

            failed = await conn.call_tool("add")  # isError: never validated
            assert failed.is_error
            free = await conn.call_tool("free")  # no outputSchema declared
            assert free.structured_content == {"anything": 1}
            unchecked = await conn.call_tool("add", validate_output=False)
            assert unchecked.structured_content == {"sum": "three"}
            assert len(server.requests("tools/list")) == 1


async def test_the_output_validator_is_built_once_per_tool_list(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    built: list[Any] = []
    real = cache.validator_for

    def counting(schema: Any) -> Any:
        built.append(schema)
        return real(schema)

    monkeypatch.setattr(cache, "validator_for", counting)
    with trio.fail_after(5):
        async with connected() as (conn, peer, nursery):
            table = {
                "tools/list": SCHEMA_TOOLS,
                "tools/call": {"content": [], "structuredContent": {"sum": 1}},
            }
            nursery.start_soon(Answers(peer, table).run)
            for _ in range(5):
                await conn.call_tool("add")
            assert len(built) == 1
            await conn.list_tools(refresh=True)  # a new list: its schemas are looked up anew
            await conn.call_tool("add")
            assert len(built) == 2


async def test_a_mismatching_value_never_reaches_the_error() -> None:
    secret = "ghp_" + "Z" * 36
    table = {
        "tools/list": SCHEMA_TOOLS,
        "tools/call": {"content": [], "structuredContent": {"sum": secret}},
    }
    with trio.fail_after(5):
        async with connected() as (conn, peer, nursery):
            nursery.start_soon(Answers(peer, table).run)
            with pytest.raises(OutputSchemaError) as caught:
                await conn.call_tool("add")
    error = caught.value
    assert [(v.path, v.keyword) for v in error.violations] == [("/sum", "type")]
    assert secret not in str(error)
    assert all(secret not in v.message for v in error.violations)
    assert error.result.structured_content == {"sum": secret}  # the caller still has it


async def test_an_output_schema_naming_another_document_is_never_fetched() -> None:
    with schema_server() as (url, hits):
        tools = {
            "tools": [
                {
                    "name": "remote",
                    "inputSchema": {"type": "object"},
                    "outputSchema": {"$ref": f"{url}/result.json"},
                }
            ]
        }
        table = {
            "tools/list": tools,
            "tools/call": {"content": [], "structuredContent": {"anything": 1}},
        }
        with capture_logs() as logs, trio.fail_after(5):
            async with connected() as (conn, peer, nursery):
                nursery.start_soon(Answers(peer, table).run)
                result = await conn.call_tool("remote")
                await conn.call_tool("remote")
        assert result.structured_content == {"anything": 1}  # returned, unchecked
        warnings = [e for e in logs if e["event"] == "tool result not validated"]
        assert len(warnings) == 2
        assert "never fetched" in warnings[0]["reason"]
        time.sleep(0.05)  # a stray fetch would have arrived by now
        assert hits == []


async def test_resources_read_subscribe_and_updated_events() -> None:
    events: list[Event] = []
    table = {
        "resources/list": {"resources": [{"uri": "file:///r", "name": "r", "size": 3}]},
        "resources/templates/list": {
            "resourceTemplates": [{"uriTemplate": "file:///{path}", "name": "files"}]
        },
        "resources/read": {
            "contents": [
                {"uri": "file:///r", "mimeType": "text/plain", "text": "abc"},
                {"uri": "file:///r.bin", "blob": "AAE="},
            ]
        },
        "resources/subscribe": {},
        "resources/unsubscribe": {},
    }
    with trio.fail_after(5):
        async with connected(on_event=events.append) as (conn, peer, nursery):
            nursery.start_soon(Answers(peer, table).run)
            resources = await conn.list_resources()
            templates = await conn.list_resource_templates()
            read = await conn.read_resource("file:///r")
            await conn.subscribe_resource("file:///r")
            await peer.send(
                {
                    "jsonrpc": "2.0",
                    "method": "notifications/resources/updated",
                    "params": {"uri": "file:///r"},
                }
            )
            await conn.unsubscribe_resource("file:///r")
            while not any(isinstance(e, ResourceUpdated) for e in events):
                await trio.sleep(0.001)
    assert resources[0].uri == "file:///r"
    assert resources[0].size == 3
    assert templates[0].uri_template == "file:///{path}"
    assert [(c.uri, c.mime_type, c.text, c.blob) for c in read.contents] == [
        ("file:///r", "text/plain", "abc", None),
        ("file:///r.bin", None, None, "AAE="),
    ]
    wire = peer.received[2:]
    assert b'"method":"resources/read","params":{"uri":"file:///r"}' in wire[2]
    assert b'"method":"resources/subscribe","params":{"uri":"file:///r"}' in wire[3]
    assert b'"method":"resources/unsubscribe","params":{"uri":"file:///r"}' in wire[4]
    assert ResourceUpdated("file:///r") in events


async def test_prompts_and_completion() -> None:
    table = {
        "prompts/list": {
            "prompts": [
                {
                    "name": "greet",
                    "arguments": [{"name": "who", "required": True, "description": "whom"}],
                }
            ]
        },
        "prompts/get": {
            "description": "a greeting",
            "messages": [
                {"role": "user", "content": {"type": "text", "text": "Hello, Ada"}},
                {"role": "assistant", "content": {"type": "sketch", "lines": 2}},
            ],
        },
        "completion/complete": {"completion": {"values": ["Ada", "Alan"], "hasMore": True}},
    }
    with trio.fail_after(5):
        async with connected() as (conn, peer, nursery):
            nursery.start_soon(Answers(peer, table).run)
            prompts = await conn.list_prompts()
            got = await conn.get_prompt("greet", {"who": "Ada"})
            by_prompt = await conn.complete(PromptRef(name="greet"), "who", "A")
            by_template = await conn.complete(
                ResourceTemplateRef(uri="file:///{path}"), "path", "s", context={"root": "/"}
            )
    assert prompts[0].arguments is not None
    assert (prompts[0].arguments[0].name, prompts[0].arguments[0].required) == ("who", True)
    assert got.description == "a greeting"
    first, second = got.messages
    assert first.role == "user"
    assert first.content == TextContent(text="Hello, Ada")
    assert second.content == UnknownContent(data={"type": "sketch", "lines": 2})
    assert by_prompt.values == ["Ada", "Alan"]
    assert by_prompt.has_more is True
    assert by_template.total is None
    wire = peer.received[2:]
    assert wire[1].endswith(b'"params":{"name":"greet","arguments":{"who":"Ada"}}}')
    assert wire[2].endswith(
        b'"params":{"ref":{"type":"ref/prompt","name":"greet"},'
        b'"argument":{"name":"who","value":"A"}}}'
    )
    assert wire[3].endswith(
        b'"params":{"ref":{"type":"ref/resource","uri":"file:///{path}"},'
        b'"argument":{"name":"path","value":"s"},"context":{"arguments":{"root":"/"}}}}'
    )


async def test_ping_and_logging_level() -> None:
    with trio.fail_after(5):
        async with connected() as (conn, peer, nursery):
            nursery.start_soon(Answers(peer, {"ping": {}, "logging/setLevel": {}}).run)
            await conn.ping()
            await conn.set_logging_level("warning")
    assert peer.received[2] == b'{"jsonrpc":"2.0","id":2,"method":"ping"}'
    assert peer.received[3] == (
        b'{"jsonrpc":"2.0","id":3,"method":"logging/setLevel","params":{"level":"warning"}}'
    )


async def test_progress_reaches_the_caller_of_call_tool() -> None:
    seen: list[tuple[float, float | None, str | None]] = []
    with trio.fail_after(5):
        async with connected() as (conn, peer, nursery):

            async def server() -> None:
                request = await peer.expect("tools/call")
                token = request["params"]["_meta"]["progressToken"]
                for step in (1, 2):
                    await peer.send(
                        {
                            "jsonrpc": "2.0",
                            "method": "notifications/progress",
                            "params": {
                                "progressToken": token,
                                "progress": step,
                                "total": 2,
                                "message": f"step {step}",
                            },
                        }
                    )
                await peer.answer(request, {"content": [], "isError": False})
                await peer.answer(await peer.expect("tools/list"), {"tools": []})

            nursery.start_soon(server)
            await conn.call_tool("slow", on_progress=lambda p, t, m: seen.append((p, t, m)))
    assert seen == [(1, 2, "step 1"), (2, 2, "step 2")]


async def test_a_server_without_templates_has_none_and_is_not_asked_again() -> None:
    # Declares resources, never implemented resources/templates/list (-32601).
    table: dict[str, Any] = {"resources/list": {"resources": []}}
    with trio.fail_after(5):
        async with connected() as (conn, peer, nursery):
            answers = Answers(peer, table)
            nursery.start_soon(answers.run)
            assert await conn.list_resource_templates() == []
            assert await conn.list_resource_templates() == []
            assert len(answers.requests("resources/templates/list")) == 1
            # The rule is the templates' alone: another list's -32601 is the caller's.
            with pytest.raises(RequestError) as refused:
                await conn.list_prompts()
            assert refused.value.code == -32601
