"""The synchronous face against real stdio servers: blocking calls, threads, Ctrl-C."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import threading
import time
from concurrent.futures import ThreadPoolExecutor
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
    StdioTarget,
    TextContent,
    _portal,
    sync,
)

from .conftest import DEMO, gone, leftover_threads, wait_for_line


def test_blocking_calls_hooks_and_calls_from_many_threads() -> None:
    hook_threads: list[str] = []

    def sample(params: CreateMessageParams, context: HookContext) -> CreateMessageResult:
        hook_threads.append(threading.current_thread().name)
        return CreateMessageResult(role="assistant", content=TextContent(text="hi"), model="m")

    async def elicit(params: ElicitParams, context: HookContext) -> ElicitResult:
        await asyncio.sleep(0.01)  # a coroutine hook: run with asyncio.run in a worker
        return ElicitResult(action="accept", content={"name": "Ada"})

    before = set(threading.enumerate())
    with sync.Connection(DEMO, sampling=sample, elicitation=elicit) as conn:
        assert conn.protocol_version == "2025-11-25"
        assert conn.call_tool("echo", {"text": "hello"}).text == "hello"
        assert conn.list_tools()[0].name == "echo"
        with ThreadPoolExecutor(8) as pool:
            sums = list(pool.map(lambda n: conn.call_tool("add", {"a": n, "b": 1}), range(64)))
        assert [s.structured_content for s in sums] == [{"sum": n + 1} for n in range(64)]
        assert conn.call_tool("ask", {"what": "sample"}).text == "model m said: hi"
        assert conn.call_tool("ask", {"what": "elicit"}).text == "hello, Ada"
        pid = conn.transport.pid
    assert hook_threads
    assert "mcpl_host trio" not in hook_threads  # hooks run off trio's thread
    assert gone(pid)
    assert leftover_threads(before) == []


def test_ctrl_c_during_a_call_cancels_it_and_shuts_the_server_down(
    recorder: tuple[StdioTarget, Path],
) -> None:
    target, record = recorder
    main = threading.main_thread()

    def interrupt_once_sent() -> None:
        wait_for_line(record, '"tools/call"')
        signal.pthread_kill(main.ident or 0, signal.SIGINT)

    before = set(threading.enumerate())
    with pytest.raises(KeyboardInterrupt), sync.Connection(target) as conn:  # noqa: PT012
        pid = conn.transport.pid
        threading.Thread(target=interrupt_once_sent).start()
        conn.request("tools/call", {"name": "wait"})
    sent = json.loads(wait_for_line(record, '"tools/call"'))
    cancelled = json.loads(wait_for_line(record, "notifications/cancelled"))
    assert cancelled["params"]["requestId"] == sent["id"]
    assert gone(pid)
    assert [t for t in leftover_threads(before) if t.is_alive()] == []


@pytest.mark.parametrize("queued", [True, False], ids=["just-after-queued", "before-queued"])
def test_ctrl_c_as_the_call_is_handed_to_trio_still_cancels_it(
    recorder: tuple[StdioTarget, Path], monkeypatch: pytest.MonkeyPatch, queued: bool
) -> None:
    """A Ctrl-C lands between any two bytecodes: here, just after (or just before) trio
    queued the call. Once queued, the server must still hear of its cancellation; never
    queued, nothing reaches it, and the block is left at once (no wait for a call that
    will not run)."""
    target, record = recorder
    real_run_soon = _portal.Portal.run_soon
    armed = False

    def run_soon(self: _portal.Portal, fn: Any, *args: Any) -> bool:
        nonlocal armed
        if not (armed and getattr(fn, "__func__", None) is _portal.Portal._start):
            return real_run_soon(self, fn, *args)
        armed = False
        if not queued:
            raise KeyboardInterrupt
        real_run_soon(self, fn, *args)
        raise KeyboardInterrupt

    monkeypatch.setattr(_portal.Portal, "run_soon", run_soon)
    with pytest.raises(KeyboardInterrupt), sync.Connection(target) as conn:  # noqa: PT012
        pid = conn.transport.pid
        armed = True
        started = time.monotonic()
        conn.request("tools/call", {"name": "wait"})
    assert time.monotonic() - started < 3.0
    assert gone(pid)
    if queued:
        sent = json.loads(wait_for_line(record, '"tools/call"'))
        cancelled = json.loads(wait_for_line(record, "notifications/cancelled"))
        assert cancelled["params"]["requestId"] == sent["id"]
    else:
        assert '"tools/call"' not in record.read_text()


def test_an_exception_in_the_block_still_shuts_the_server_down() -> None:
    with pytest.raises(ZeroDivisionError), sync.Connection(DEMO) as conn:  # noqa: PT012
        pid = conn.transport.pid
        _ = 1 / 0
    assert gone(pid)


def test_a_crashed_server_is_the_typed_error() -> None:
    with sync.Connection(DEMO) as conn:
        os.kill(conn.transport.pid, signal.SIGKILL)
        with pytest.raises(ConnectionClosed):
            conn.call_tool("sleep", {"seconds": 30})
