"""The asyncio face against real stdio servers, under plain asyncio.run (no uvloop)."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import threading
from pathlib import Path
from typing import Any

import pytest

from mcpl_host import (
    ConnectionClosed,
    CreateMessageParams,
    CreateMessageResult,
    ElicitParams,
    ElicitResult,
    HookContext,
    RequestError,
    SpawnError,
    StdioTarget,
    TextContent,
    aio,
)

from .conftest import DEMO, gone, leftover_threads, wait_for_line


def run(main: Any) -> Any:
    return asyncio.run(asyncio.wait_for(main(), 60))


def test_calls_hooks_and_64_at_once() -> None:
    async def sample(params: CreateMessageParams, context: HookContext) -> CreateMessageResult:
        await asyncio.sleep(0.01)  # an asyncio coroutine: runs as an asyncio task
        assert asyncio.current_task() is not None
        return CreateMessageResult(role="assistant", content=TextContent(text="hi"), model="m")

    def elicit(params: ElicitParams, context: HookContext) -> ElicitResult:
        return ElicitResult(action="accept", content={"name": "Ada"})  # a plain callable

    async def main() -> None:
        loop = asyncio.get_running_loop()
        assert type(loop).__module__.startswith("asyncio")  # not uvloop
        async with aio.Connection(DEMO, sampling=sample, elicitation=elicit) as conn:
            assert conn.server_info["name"] == "mcpl-host-demo"
            assert (await conn.call_tool("echo", {"text": "hello"})).text == "hello"
            assert [t.name for t in await conn.list_tools()][:2] == ["echo", "add"]
            answers = await asyncio.gather(
                *(conn.call_tool("add", {"a": n, "b": 1}) for n in range(64))
            )
            assert [a.structured_content for a in answers] == [{"sum": n + 1} for n in range(64)]
            said = await conn.call_tool("ask", {"what": "sample"})
            assert said.text == "model m said: hi"
            assert (await conn.call_tool("ask", {"what": "elicit"})).text == "hello, Ada"
            with pytest.raises(RequestError) as error:
                await conn.request("no/such/method")
            assert error.value.code == -32601

    before = set(threading.enumerate())
    run(main)
    assert leftover_threads(before) == []


def test_two_connections_share_one_trio_run_and_a_manager_works_too() -> None:
    async def main() -> None:
        async with aio.Connection(DEMO) as a, aio.Connection(DEMO) as b:
            runs = set(aio._RUNS.values())
            assert len(runs) == 1
            assert (await a.call_tool("echo", {"text": "a"})).text == "a"
            assert (await b.call_tool("echo", {"text": "b"})).text == "b"
        assert aio._RUNS == {}  # the last one out ended the trio run
        servers = {"one": DEMO, "two": DEMO}
        async with aio.ConnectionManager(servers) as manager:
            await manager.wait_ready()
            listing = await manager.list_tools()
            assert {"one__echo", "two__echo"} <= set(listing.names())
            answer = await manager.call_tool("two__echo", {"text": "x"})
            assert answer.text == "x"

    run(main)


def test_cancelling_the_asyncio_task_sends_notifications_cancelled(
    recorder: tuple[StdioTarget, Path],
) -> None:
    target, record = recorder

    async def main() -> None:
        async with aio.Connection(target) as conn:
            call = asyncio.ensure_future(conn.request("tools/call", {"name": "wait"}))
            line = await asyncio.to_thread(wait_for_line, record, '"tools/call"')
            call.cancel()
            with pytest.raises(asyncio.CancelledError):
                await call
            cancelled = await asyncio.to_thread(wait_for_line, record, "notifications/cancelled")
            assert json.loads(cancelled)["params"]["requestId"] == json.loads(line)["id"]
            # the connection goes on
            assert await conn.request("tools/list") == {"tools": []}

    run(main)


def test_a_cancelled_call_is_announced_before_the_tasks_next_step(
    recorder: tuple[StdioTarget, Path],
) -> None:
    """The cancelled task's next call, and its leaving ``async with``, come after trio
    has taken the cancellation: notifications/cancelled is on the wire before them.

    Deterministic: had the task gone on without waiting for trio, its cancellation and
    its next call would reach trio together, the next call would be written first (the
    notice is written by a task spawned only once the cancelled call has ended) and the
    close could even overtake the notice."""
    target, record = recorder

    async def use() -> None:
        async with aio.Connection(target) as conn:
            try:
                await conn.request("tools/call", {"name": "wait"})  # never answered
            except asyncio.CancelledError:
                await conn.notify("notifications/after")  # what this task does next
                raise

    async def main() -> None:
        task = asyncio.ensure_future(use())
        await asyncio.to_thread(wait_for_line, record, '"tools/call"')
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    run(main)
    # Closed, and the server gone: everything it was sent is in the record.
    sent = [json.loads(x) for x in record.read_text().splitlines()]
    call_id = next(m["id"] for m in sent if m.get("method") == "tools/call")
    after_call = [(m["method"], m.get("params")) for m in sent[-2:]]
    assert after_call == [
        ("notifications/cancelled", {"requestId": call_id, "reason": "cancelled by the caller"}),
        ("notifications/after", None),
    ]


def test_a_crashed_server_is_the_typed_error_and_nothing_is_left() -> None:
    async def main() -> int:
        async with aio.Connection(DEMO) as conn:
            pid = conn.transport.pid
            call = asyncio.ensure_future(conn.call_tool("sleep", {"seconds": 30}))
            await asyncio.sleep(0.2)
            os.kill(pid, signal.SIGKILL)
            with pytest.raises(ConnectionClosed):
                await call
            with pytest.raises(ConnectionClosed):
                await conn.call_tool("echo", {"text": "x"})
        return pid

    before = set(threading.enumerate())
    pid = run(main)
    assert gone(pid)
    assert leftover_threads(before) == []


def test_a_failed_start_raises_the_typed_error() -> None:
    async def main() -> None:
        with pytest.raises(SpawnError):
            async with aio.Connection(StdioTarget.of(["/nonexistent/server"])):
                pass
        assert aio._RUNS == {}

    run(main)
