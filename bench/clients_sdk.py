"""The official Python SDK (``mcp`` 2.3.0) as a benchmark child: ``ClientSession`` on
anyio (asyncio), over ``mcp.client.stdio.stdio_client`` or
``mcp.client.streamable_http.streamable_http_client`` (its default httpx2 client)."""

from __future__ import annotations

import time
from contextlib import AbstractAsyncContextManager
from typing import Any

from measure import SERVER, Report, Setup, check, timed_calls


def child_python_sdk(setup: Setup) -> None:
    started = time.perf_counter()
    import anyio
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client
    from mcp.client.streamable_http import streamable_http_client
    from mcp.types import TextContent

    report = Report(started)
    params = StdioServerParameters(command=SERVER[0], args=SERVER[1:])

    def transport() -> AbstractAsyncContextManager[Any]:
        return streamable_http_client(setup.url) if setup.http else stdio_client(params)

    async def measure(s: ClientSession) -> None:
        async def calls(n: int, text: str = "hello") -> None:
            for _ in range(n):
                result = await s.call_tool("echo", {"text": text})
                block = result.content[0]
                check(block.text if isinstance(block, TextContent) else "", len(text))

        await timed_calls(report, setup, calls, anyio.create_task_group)

    async def main() -> None:
        # Each handshake is the transport, initialize and initialized; the last
        # session stays open for the timed phases.
        for last in [False] * (setup.handshakes - 1) + [True]:
            began = time.perf_counter()
            async with transport() as (read, write), ClientSession(read, write) as s:
                await s.initialize()
                report.handshake(time.perf_counter() - began)
                if last:
                    await measure(s)
        report.emit()

    anyio.run(main)
