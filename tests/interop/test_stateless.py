"""Interop on 2026-07-28: the official Python SDK's server (mcp==2.3.0), which is dual-era,
reached with the host's default versions over stdio and Streamable HTTP. The same
Connection code negotiates the stateless revision with ``server/discover``; every
request names the revision, the client's capabilities and the client in ``_meta``
(the SDK's server refuses a request without them), and the typed calls decode what it
sends. tests/interop/test_sdk_server.py is the same server's handshake era."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest
import trio

from mcpl_host import Connected, Connection, Event, HttpTarget, PromptRef, RequestError
from mcpl_host.transports.targets import StdioTarget

from .servers import sdk_server, sdk_server_http

TRANSPORTS = ["stdio", "http"]


@asynccontextmanager
async def stateless(transport: str, events: list[Event]) -> AsyncIterator[Connection]:
    if transport == "stdio":
        target: StdioTarget | HttpTarget = sdk_server()
        async with Connection(target, on_event=events.append) as conn:
            yield conn
        return
    with sdk_server_http() as url:
        async with Connection(HttpTarget(url), on_event=events.append) as conn:
            yield conn


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_the_sdk_server_on_2026_07_28(transport: str) -> None:
    events: list[Event] = []
    with trio.fail_after(30):
        async with stateless(transport, events) as conn:
            assert conn.protocol_version == "2026-07-28"
            assert conn.server_info["name"] == "mcpl-interop-sdk-server"
            assert conn.server_capabilities["tools"] == {"listChanged": True}
            assert conn.instructions is not None

            tools = {tool.name: tool for tool in await conn.list_tools()}
            assert {"add", "weather", "progress", "fail"} <= set(tools)
            added = await conn.call_tool("add", {"a": 2, "b": 40})
            assert added.structured_content == {"result": 42}  # checked against its schema
            weather = await conn.call_tool("weather", {"city": "Oslo"})
            assert weather.structured_content is not None
            assert weather.structured_content["city"] == "Oslo"
            failed = await conn.call_tool("fail", {"message": "no"})
            assert failed.is_error

            seen: list[float] = []
            done = await conn.call_tool(
                "progress", {"steps": 3}, on_progress=lambda p, t, m: seen.append(p)
            )
            assert seen == [1, 2, 3]  # on the request's own stream
            assert done.content[0].text == "done after 3 steps"  # type: ignore[union-attr]

            greeting = await conn.read_resource("resource://static/greeting")
            assert greeting.contents[0].text
            prompt = await conn.get_prompt("greet", {"name": "Ada"})
            assert "Ada" in prompt.messages[0].content.text  # type: ignore[union-attr]
            completion = await conn.complete(PromptRef(name="greet"), "style", "f")
            assert completion.values
            with pytest.raises(RequestError) as missing:
                await conn.read_resource("resource://users/nobody/profile")
            # Resource not found is -32602 on 2026-07-28 (-32002 before).
            assert missing.value.code in (-32602, -32002)
    (connected,) = [e for e in events if isinstance(e, Connected)]
    assert (connected.era, connected.protocol_version) == ("stateless", "2026-07-28")
