"""Real servers on the legacy HTTP+SSE transport (MCP 2024-11-05) on loopback: the
official Python SDK's SSE app and server-everything's ``sse`` mode, reached directly
(``sse+http://``) and by the fallback from Streamable HTTP; the real CLI on both, and
its messages when nothing listens or the path is wrong."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest
import trio

from mcpl_host import (
    Connection,
    CreateMessageParams,
    CreateMessageResult,
    HookContext,
    HttpTarget,
    TextContent,
    aio,
)

from ..cli.helpers import run, run_json
from .servers import everything_sse, sdk_server_sse


@pytest.fixture(scope="module")
def sse_url() -> Iterator[str]:
    """One SDK server for the module: it starts in about a second."""
    with sdk_server_sse() as url:
        yield url


async def test_the_python_sdks_sse_server_directly_and_by_the_fallback(sse_url: str) -> None:
    async def sample(params: CreateMessageParams, context: HookContext) -> CreateMessageResult:
        return CreateMessageResult(role="assistant", content=TextContent(text="Paris"), model="m")

    url = sse_url
    with trio.fail_after(30):
        for target in (HttpTarget(url, transport="sse"), HttpTarget(url)):
            async with Connection(target, sampling=sample) as conn:
                assert getattr(conn.transport, "kind", None) == "sse"
                assert conn.protocol_version == "2025-11-25"
                assert "add" in [tool.name for tool in await conn.list_tools()]
                added = await conn.call_tool("add", {"a": 2, "b": 40})
                assert added.structured_content == {"result": 42}
                seen: list[float] = []
                await conn.call_tool(
                    "progress", {"steps": 3}, on_progress=lambda p, t, m, seen=seen: seen.append(p)
                )
                assert seen == [1, 2, 3]  # notifications on the GET stream
                # The server asks the host on the stream; the answer is POSTed back.
                sampled = await conn.call_tool("sample", {"prompt": "Capital of France?"})
                assert sampled.structured_content is not None
                assert sampled.structured_content["text"] == "Paris"


async def test_server_everything_in_sse_mode_by_the_fallback() -> None:
    with everything_sse() as url, trio.fail_after(30):
        # Express answers the POST to /sse with 404: the fallback's GET finds the stream.
        async with Connection(url) as conn:
            assert getattr(conn.transport, "kind", None) == "sse"
            assert conn.server_info["name"] == "mcp-servers/everything"
            assert (await conn.call_tool("echo", {"message": "hi"})).text == "Echo: hi"


def test_the_asyncio_face_over_the_legacy_transport(sse_url: str) -> None:
    import asyncio  # noqa: PLC0415 - this test's own loop

    async def main(url: str) -> str:
        async with aio.Connection(HttpTarget(url, transport="sse")) as conn:
            return (await conn.call_tool("echo", {"text": "hi"})).text

    assert asyncio.run(asyncio.wait_for(main(sse_url), 30)) == "hi"


def test_the_cli_connects_with_and_without_the_sse_prefix(sse_url: str) -> None:
    report, done = run_json("connect", "sse+" + sse_url, "--json")
    assert done.returncode == 0, done.stderr
    assert report["ok"] is True
    assert report["transport"] == "sse"
    assert report["target"] == "sse+" + sse_url
    assert "add" in [tool["name"] for tool in report["tools"]]
    shown = run("connect", sse_url)  # by the fallback
    assert shown.returncode == 0, shown.stderr
    assert "transport     legacy HTTP+SSE (2024-11-05)" in shown.stdout
    assert "add" in shown.stdout
    called, done = run_json(
        "call", sse_url, "--tool", "add", "--args", '{"a": 1, "b": 2}', "--json"
    )
    assert done.returncode == 0, done.stderr
    assert called["transport"] == "sse"


def test_the_cli_says_what_is_wrong_with_the_url(sse_url: str) -> None:
    wrong = run("connect", sse_url.replace("/sse", "/mcp"))
    assert wrong.returncode != 0
    text = " ".join(wrong.stdout.split())
    assert "POST http://127.0.0.1:" in text
    assert "/mcp -> 404 Not Found and no SSE stream there (GET -> 404 Not Found)" in text
    assert "legacy SSE servers /sse" in text
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # closed again: nothing listens there
    report, done = run_json("connect", f"http://127.0.0.1:{port}/mcp", "--json")
    assert done.returncode != 0
    assert report["error"]["reason"] == "connect-failed"
    message = report["error"]["message"]
    assert message == (
        f"cannot connect to 127.0.0.1:{port} (http://127.0.0.1:{port}/mcp): connection refused"
    )
