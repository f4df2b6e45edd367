"""Interop with @modelcontextprotocol/server-everything (npm, pinned), over stdio with node.

No mocks: the real server, the typed calls, the hooks. Results are asserted as the server
produces them (tests/interop/README.md has the wire facts they come from).
"""

from __future__ import annotations

import base64
import hashlib
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
import trio
from structlog.testing import capture_logs

from mcpl_host import (
    Connection,
    CreateMessageParams,
    CreateMessageResult,
    ElicitParams,
    ElicitResult,
    Event,
    HookContext,
    PromptRef,
    RequestError,
    ResourceTemplateRef,
    ResourceUpdated,
    Root,
    ServerLog,
    TextContent,
)
from mcpl_host.client import EmbeddedResource, ImageContent, ResourceLink

from .servers import everything

STATIC = [
    "echo",
    "get-annotated-message",
    "get-env",
    "get-resource-links",
    "get-resource-reference",
    "get-structured-content",
    "get-sum",
    "get-tiny-image",
    "gzip-file-as-resource",
    "toggle-simulated-logging",
    "toggle-subscriber-updates",
    "trigger-long-running-operation",
]
FEATURES = "demo://resource/static/document/features.md"


@asynccontextmanager
async def connect(**kwargs: Any) -> AsyncIterator[Connection]:
    async with Connection(everything(), name="everything", **kwargs) as conn:
        yield conn


async def tool_names(conn: Connection, expected: int) -> list[str]:
    """The tool list once the server has registered its capability-dependent tools (it
    does so after notifications/initialized, announcing each with list_changed)."""
    while True:
        names = [tool.name for tool in await conn.list_tools()]
        if len(names) >= expected:
            return names
        await trio.sleep(0.02)


async def test_handshake_tools_and_results() -> None:
    seen: list[tuple[float, float | None, str | None]] = []
    with trio.fail_after(30):
        async with connect() as conn:
            assert conn.protocol_version == "2025-11-25"
            assert conn.server_info["name"] == "mcp-servers/everything"
            assert (conn.instructions or "").startswith("# Everything Server")
            assert conn.server_capabilities["resources"] == {"subscribe": True, "listChanged": True}

            names = await tool_names(conn, 13)  # no hooks: one conditional tool only
            assert names == [*STATIC, "simulate-research-query"]
            tools = {tool.name: tool for tool in await conn.list_tools()}
            echo = tools["echo"]
            assert echo.title == "Echo Tool"
            assert echo.annotations is not None
            assert echo.annotations.read_only_hint is True
            assert echo.annotations.destructive_hint is False
            assert echo.execution == {"taskSupport": "forbidden"}
            assert echo.input_schema["required"] == ["message"]
            assert tools["get-structured-content"].output_schema is not None

            assert (await conn.call_tool("echo", {"message": "hello"})).text == "Echo: hello"
            summed = await conn.call_tool("get-sum", {"a": 2, "b": 3})
            assert summed.text == "The sum of 2 and 3 is 5."
            assert summed.is_error is False

            # checked against its draft-07 outputSchema (additionalProperties: false)
            weather = await conn.call_tool("get-structured-content", {"location": "New York"})
            assert weather.structured_content == {
                "temperature": 33,
                "conditions": "Cloudy",
                "humidity": 82,
            }

            bad = await conn.call_tool("get-structured-content", {"location": "Paris"})
            assert bad.is_error
            assert "Input validation error" in bad.text

            image = await conn.call_tool("get-tiny-image")
            assert [type(block) for block in image.content] == [
                TextContent,
                ImageContent,
                TextContent,
            ]
            png = image.content[1]
            assert isinstance(png, ImageContent)
            assert png.mime_type == "image/png"
            assert hashlib.sha256(base64.b64decode(png.data)).hexdigest() == (
                "4466be3b7a0e51778f8634f5e984197ec35c748caf4c3b32763f89c577d29614"
            )

            links = await conn.call_tool("get-resource-links", {"count": 3})
            assert [b.uri for b in links.content if isinstance(b, ResourceLink)] == [
                "demo://resource/dynamic/blob/1",
                "demo://resource/dynamic/text/2",
                "demo://resource/dynamic/blob/3",
            ]

            done = await conn.call_tool(
                "trigger-long-running-operation",
                {"duration": 0.4, "steps": 2},
                on_progress=lambda p, t, m: seen.append((p, t, m)),
            )
            assert done.text == (
                "Long running operation completed. Duration: 0.4 seconds, Steps: 2."
            )
    assert seen == [(1, 2, None), (2, 2, None)]


async def test_sampling_and_elicitation_through_hooks() -> None:
    asked: list[Any] = []

    async def sample(params: CreateMessageParams, context: HookContext) -> CreateMessageResult:
        asked.append((params, context))
        return CreateMessageResult(
            role="assistant", content=TextContent(text="Paris."), model="test-model"
        )

    async def elicit(params: ElicitParams, context: HookContext) -> ElicitResult:
        asked.append(params)
        if params.mode == "url":
            return ElicitResult(action="decline")
        return ElicitResult(action="accept", content={"name": "Ada", "check": True})

    with trio.fail_after(30):
        async with connect(sampling=sample, elicitation=elicit, url_elicitation=True) as conn:
            names = await tool_names(conn, 16)
            assert names[len(STATIC) :] == [
                "trigger-elicitation-request",
                "trigger-url-elicitation",
                "trigger-sampling-request",
                "simulate-research-query",
            ]

            sampled = await conn.call_tool(
                "trigger-sampling-request", {"prompt": "Capital of France?", "maxTokens": 20}
            )
            assert sampled.text.startswith("LLM sampling result: \n")
            assert '"model": "test-model"' in sampled.text
            assert '"text": "Paris."' in sampled.text
            params, context = asked.pop(0)
            assert params.messages[0].content == TextContent(
                text="Resource trigger-sampling-request context: Capital of France?"
            )
            assert params.system_prompt == "You are a helpful test server."
            assert (params.max_tokens, params.temperature) == (20, 0.7)
            assert context.server == "everything"
            assert context.protocol_version == "2025-11-25"

            form = await conn.call_tool("trigger-elicitation-request")
            assert [b.text for b in form.content if isinstance(b, TextContent)][:2] == [
                "✅ User provided the requested information!",
                "User inputs:\n- Name: Ada\n- Agreed to terms: true",
            ]
            request = asked.pop(0)
            assert request.mode == "form"
            assert request.message == "Please provide inputs for the following fields:"
            assert request.requested_schema["required"] == ["name"]
            assert len(request.requested_schema["properties"]) == 13

            url = await conn.call_tool(
                "trigger-url-elicitation",
                {"url": "https://example.com/auth", "elicitationId": "elic-1"},
            )
            assert url.content[0] == TextContent(
                text="❌ User declined to open the URL (Elicitation ID: elic-1)."
            )
            request = asked.pop(0)
            assert (request.mode, request.url, request.elicitation_id) == (
                "url",
                "https://example.com/auth",
                "elic-1",
            )


async def test_roots_are_asked_for_and_a_change_is_picked_up() -> None:
    events: list[Event] = []

    async def roots_text(conn: Connection) -> str:
        return (await conn.call_tool("get-roots-list")).text

    with trio.fail_after(30):
        async with connect(
            roots=[Root(uri="file:///tmp/a", name="A")], on_event=events.append
        ) as conn:
            await tool_names(conn, 14)
            # the server asks roots/list by itself, about 350 ms after initialized
            while "Current MCP Roots (1 total)" not in (text := await roots_text(conn)):
                await trio.sleep(0.05)
            assert "1. A\n   URI: file:///tmp/a" in text

            await conn.set_roots(["file:///tmp/b", Root(uri="file:///tmp/c", name="C")])
            while "Current MCP Roots (2 total)" not in (text := await roots_text(conn)):
                await trio.sleep(0.05)
            assert "1. Unnamed Root\n   URI: file:///tmp/b" in text
            assert "2. C\n   URI: file:///tmp/c" in text
    logs = [e for e in events if isinstance(e, ServerLog)]
    assert (
        ServerLog("info", "everything-server", "Roots updated: 1 root(s) received from client")
        in logs
    )
    assert (
        ServerLog("info", "everything-server", "Roots updated: 2 root(s) received from client")
        in logs
    )


async def test_logging_levels_and_resource_subscriptions() -> None:
    events: list[Event] = []

    def count(kind: type) -> int:
        return len([e for e in events if isinstance(e, kind)])

    with capture_logs() as logs, trio.fail_after(30):
        async with connect(on_event=events.append) as conn:
            await conn.set_logging_level("info")
            await conn.subscribe_resource(FEATURES)
            while not count(ServerLog):
                await trio.sleep(0.01)
            assert [e for e in events if isinstance(e, ServerLog)] == [
                ServerLog("info", None, f"Received Subscribe Resource request for URI: {FEATURES} ")
            ]

            # updates start at once (before the tool answers), for the subscribed URI
            started = await conn.call_tool("toggle-subscriber-updates")
            assert started.text.startswith("Started simulated resource updated notifications")
            while not count(ResourceUpdated):
                await trio.sleep(0.01)
            assert ResourceUpdated(FEATURES) in events
            await conn.call_tool("toggle-subscriber-updates")  # stop

            # below the level set: the server drops its own info line
            await conn.set_logging_level("warning")
            await conn.unsubscribe_resource(FEATURES)
            await conn.ping()
            assert count(ServerLog) == 1

            await conn.set_logging_level("debug")
            await conn.call_tool("toggle-simulated-logging")  # one message at once
            while count(ServerLog) < 2:
                await trio.sleep(0.01)
            await conn.call_tool("toggle-simulated-logging")  # stop
    simulated = [e for e in events if isinstance(e, ServerLog)][1]
    assert simulated.level in {
        "debug",
        "info",
        "notice",
        "warning",
        "error",
        "critical",
        "alert",
        "emergency",
    }
    assert isinstance(simulated.data, str)
    assert re.fullmatch(r"\w+[- ]level[- ]message", simulated.data)
    records = [entry for entry in logs if entry["event"] == "server log"]
    assert records[0]["server"] == "everything"
    assert records[0]["log_level"] == "info"
    assert records[0]["data"] == f'"Received Subscribe Resource request for URI: {FEATURES} "'


async def test_resources_prompts_and_completion() -> None:
    with trio.fail_after(30):
        async with connect() as conn:
            resources = await conn.list_resources()
            assert [r.name for r in resources] == [
                "architecture.md",
                "extension.md",
                "features.md",
                "how-it-works.md",
                "instructions.md",
                "startup.md",
                "structure.md",
            ]
            assert resources[0].mime_type == "text/markdown"
            templates = await conn.list_resource_templates()
            assert [t.uri_template for t in templates] == [
                "demo://resource/dynamic/text/{resourceId}",
                "demo://resource/dynamic/blob/{resourceId}",
            ]

            doc = await conn.read_resource(resources[0].uri)
            assert (doc.contents[0].text or "").startswith("# Everything Server – Architecture")
            blob = await conn.read_resource("demo://resource/dynamic/blob/2")
            decoded = base64.b64decode(blob.contents[0].blob or "").decode()
            assert decoded.startswith("Resource 2: This is a base64 blob created at ")
            with pytest.raises(RequestError) as missing:
                await conn.read_resource("demo://nope")
            assert missing.value.code == -32602

            prompts = await conn.list_prompts()
            assert [p.name for p in prompts] == [
                "simple-prompt",
                "args-prompt",
                "completable-prompt",
                "resource-prompt",
            ]
            args = prompts[1].arguments or []
            assert [(a.name, a.required) for a in args] == [("city", True), ("state", False)]
            simple = await conn.get_prompt("simple-prompt")
            assert simple.messages[0].content == TextContent(
                text="This is a simple prompt without arguments."
            )
            weather = await conn.get_prompt("args-prompt", {"city": "Austin", "state": "TX"})
            assert weather.messages[0].content == TextContent(text="What's weather in Austin, TX?")
            embedded = await conn.get_prompt(
                "resource-prompt", {"resourceType": "Text", "resourceId": "3"}
            )
            block = embedded.messages[1].content
            assert isinstance(block, EmbeddedResource)
            assert block.resource.uri == "demo://resource/dynamic/text/3"
            assert (block.resource.text or "").startswith("Resource 3: This is a plaintext")

            team = PromptRef(name="completable-prompt")
            departments = await conn.complete(team, "department", "S")
            assert (departments.values, departments.total) == (["Sales", "Support"], 2)
            people = await conn.complete(team, "name", "", context={"department": "Engineering"})
            assert people.values == ["Alice", "Bob", "Charlie"]
            ids = await conn.complete(
                ResourceTemplateRef(uri="demo://resource/dynamic/text/{resourceId}"),
                "resourceId",
                "12",
            )
            assert (ids.values, ids.has_more) == (["12"], False)
