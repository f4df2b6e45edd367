"""Real servers over Streamable HTTP on loopback: server-everything in its streamableHttp
mode, and a server written with the official Python SDK; the CLI on an http:// target."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import trio

from mcpl_host import (
    Connection,
    CreateMessageParams,
    CreateMessageResult,
    HookContext,
    HttpTarget,
    TextContent,
)

from .servers import everything_http, sdk_server_http


async def test_server_everything_over_streamable_http() -> None:
    with everything_http() as url, trio.fail_after(30):
        async with Connection(HttpTarget(url)) as conn:
            assert conn.protocol_version == "2025-11-25"
            assert conn.server_info["name"] == "mcp-servers/everything"
            names = [tool.name for tool in await conn.list_tools()]
            assert "echo" in names
            assert (await conn.call_tool("echo", {"message": "hi"})).text == "Echo: hi"
            assert (await conn.call_tool("get-sum", {"a": 1, "b": 2})).text == (
                "The sum of 1 and 2 is 3."
            )
            seen: list[Any] = []
            done = await conn.call_tool(
                "trigger-long-running-operation",
                {"duration": 0.3, "steps": 3},
                on_progress=lambda p, t, m: seen.append((p, t)),
            )
            assert not done.is_error
            assert seen == [(1, 3), (2, 3), (3, 3)]  # progress on the POST's event stream
            resources = await conn.list_resources()
            assert resources


def test_the_cli_connects_to_an_http_target() -> None:
    with everything_http() as url:
        out = subprocess.run(
            [sys.executable, "-m", "mcpl_host.cli", "connect", url, "--json"],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    assert report["ok"] is True
    assert "echo" in [tool["name"] for tool in report["tools"]]


async def test_a_server_written_with_the_official_python_sdk_over_http() -> None:
    async def sample(params: CreateMessageParams, context: HookContext) -> CreateMessageResult:
        return CreateMessageResult(role="assistant", content=TextContent(text="Paris"), model="m")

    with sdk_server_http() as url, trio.fail_after(30):
        # Its handshake era: the server asks the host while answering a POST.
        async with Connection(HttpTarget(url), versions=["2025-11-25"], sampling=sample) as conn:
            added = await conn.call_tool("add", {"a": 2, "b": 40})
            assert added.structured_content == {"result": 42}  # validated against its schema
            seen: list[float] = []
            await conn.call_tool(
                "progress", {"steps": 3}, on_progress=lambda p, t, m: seen.append(p)
            )
            assert seen == [1, 2, 3]
            # The server asks the host while answering a POST: over that POST's stream.
            sampled = await conn.call_tool("sample", {"prompt": "Capital of France?"})
            assert sampled.structured_content is not None
            assert sampled.structured_content["text"] == "Paris"
            assert (await conn.read_resource("resource://static/greeting")).contents[0].text
