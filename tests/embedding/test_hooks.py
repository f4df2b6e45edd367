"""MCPL hooks on both faces: an asyncio (or plain) hook gets a context whose stream it can
use from its own side, and what it returns reaches trio."""

from __future__ import annotations

import asyncio
import functools
import threading
from typing import Any

import trio

from mcpl_host import Mcpl, McplContext, aio, sync
from mcpl_host._portal import adapt_hooks


def chunks_sender(chunks: list[Any]) -> Any:
    async def send(chunk: Any) -> None:
        trio.lowlevel.current_task()  # raises outside trio: the chunk must arrive in trio
        chunks.append(chunk)

    return send


def test_an_asyncio_mcpl_hook_streams_and_answers() -> None:
    async def infer(params: Any, context: McplContext) -> Any:
        assert asyncio.current_task() is not None  # an asyncio task on the loop
        assert context.stream is not None
        await context.stream({"index": 0, "delta": "he"})
        await context.stream({"index": 1, "delta": "llo"})
        return {"text": "hello", "params": params}

    mcpl = adapt_hooks({"mcpl": Mcpl(hooks={"inference/request": infer})}, aio.asyncio_hook)
    hook = mcpl["mcpl"].hooks["inference/request"]
    chunks: list[Any] = []

    async def main() -> Any:
        run = await aio._acquire()
        try:
            context = McplContext(server="s", request_id=7, stream=chunks_sender(chunks))
            return await aio._in_trio(run, functools.partial(hook, "p", context))
        finally:
            await aio._release(run)

    assert asyncio.run(main()) == {"text": "hello", "params": "p"}
    assert chunks == [{"index": 0, "delta": "he"}, {"index": 1, "delta": "llo"}]


def test_a_plain_mcpl_hook_on_the_sync_face_runs_in_a_worker_thread() -> None:
    seen: list[str] = []

    def infer(params: Any, context: McplContext) -> Any:
        seen.append(threading.current_thread().name)
        assert context.stream is not None
        context.stream({"index": 0, "delta": "hi"})  # a plain blocking call here
        return {"text": "hi"}

    mcpl = adapt_hooks({"mcpl": Mcpl(hooks={"inference/request": infer})}, sync.threaded_hook)
    hook = mcpl["mcpl"].hooks["inference/request"]
    chunks: list[Any] = []
    run = sync._TrioThread.acquire()
    try:
        context = McplContext(server="s", request_id=7, stream=chunks_sender(chunks))
        assert sync._call(run, functools.partial(hook, "p", context)) == {"text": "hi"}
    finally:
        run.release()
    assert chunks == [{"index": 0, "delta": "hi"}]
    assert seen
    assert seen[0] not in ("MainThread", "mcpl_host trio")
