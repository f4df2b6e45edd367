"""The asyncio face's fast path: trio polled by the loop itself (mcpl_host/_guest.py),
and requests awaited by the asyncio task with no trio task of their own
(mcpl_host/driver/foreign.py). Real stdio servers, plain asyncio.run."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import trio

from mcpl_host import (
    ElicitParams,
    ElicitResult,
    HookContext,
    OutputSchemaError,
    RequestError,
    RequestTimeout,
    StdioTarget,
    _guest,
    aio,
)

from .conftest import DEMO, wait_for_line

STATELESS = StdioTarget.of([sys.executable, str(Path(__file__).with_name("stateless_server.py"))])


def run(main: Any) -> Any:
    return asyncio.run(asyncio.wait_for(main(), 60))


class Spawned(trio.abc.Instrument):
    def __init__(self) -> None:
        self.tasks: list[str] = []

    def task_spawned(self, task: trio.lowlevel.Task) -> None:
        self.tasks.append(task.name)


def test_the_typed_calls_are_awaited_by_the_asyncio_task_with_no_trio_task() -> None:
    spawned = Spawned()

    async def main() -> None:
        async with aio.Connection(DEMO) as conn:
            # The loop's own thread holds trio's run state between ticks.
            trio.lowlevel.add_instrument(spawned)
            for n in range(20):
                assert (await conn.call_tool("echo", {"text": f"x{n}"})).text == f"x{n}"
            assert [t.name for t in await conn.list_tools(refresh=True)][:1] == ["echo"]
            assert (await conn.call_tool("add", {"a": 1, "b": 2})).structured_content == {"sum": 3}
            await conn.ping()
            assert (await conn.read_resource("demo://readme")).contents
            assert (await conn.get_prompt("greet", {"name": "Ada"})).messages
            assert await conn.request("tools/list") is not None
            assert spawned.tasks == []
            await conn.notify("notifications/ping")  # not a host-loop method: a trio task runs it
            assert spawned.tasks != []

    run(main)


def test_trio_waits_on_the_loop_not_in_a_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    threads: list[object] = []
    start_thread_soon = trio.lowlevel.start_thread_soon

    def counted(*args: Any, **kwargs: Any) -> None:
        threads.append(args[0])
        start_thread_soon(*args, **kwargs)

    # trio's own guest ticks wait for I/O through this (trio/_core/_run.py).
    monkeypatch.setattr("trio._core._run.start_thread_soon", counted)

    async def main() -> None:
        async with aio.Connection(DEMO) as conn:
            assert _guest.Guest is type(aio._RUNS[asyncio.get_running_loop()].guest)
            assert aio._RUNS[asyncio.get_running_loop()].guest.driver is not None
            threads.clear()  # the spawn of the server runs Popen in a thread
            for _ in range(20):
                await conn.call_tool("echo", {"text": "x"})
            # a trio sleep: trio's deadline is a timer of the loop's
            await conn.call_tool("sleep", {"seconds": 0.05})
            assert threads == []

    run(main)


def test_without_the_loops_driver_trios_own_guest_ticks_serve(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(_guest._LoopDriver, "take", classmethod(lambda cls, loop, state: None))

    async def main() -> None:
        async with aio.Connection(DEMO) as conn:
            assert aio._RUNS[asyncio.get_running_loop()].guest.driver is None
            assert (await conn.call_tool("echo", {"text": "x"})).text == "x"
            await conn.call_tool("sleep", {"seconds": 0.05})

    run(main)


def test_a_timeout_and_typed_errors_on_the_loop(recorder: tuple[StdioTarget, Path]) -> None:
    target, record = recorder

    async def main() -> None:
        async with aio.Connection(target) as conn:
            with pytest.raises(RequestTimeout):
                await conn.request("tools/call", {"name": "wait"}, timeout=0.2)
        async with aio.Connection(DEMO) as conn:
            with pytest.raises(RequestError) as error:
                await conn.request("no/such/method")
            assert error.value.code == -32601
            with pytest.raises(OutputSchemaError):
                await conn.call_tool("wrong_shape")

    run(main)
    notice = json.loads(wait_for_line(record, "notifications/cancelled"))
    assert notice["params"]["reason"] == "timeout"


def test_progress_reaches_the_callback_of_a_call_awaited_on_the_loop() -> None:
    seen: list[tuple[float, float | None]] = []

    async def main() -> None:
        async with aio.Connection(DEMO) as conn:
            await conn.call_tool(
                "countdown",
                {"steps": 3, "delay": 0.01},
                on_progress=lambda progress, total, message: seen.append((progress, total)),
            )

    run(main)
    assert len(seen) == 3


def test_input_rounds_and_a_task_of_a_2026_07_28_server_run_in_trio() -> None:
    """The parts of a call that wait on more than its answer (the hooks of an input
    round, a task's polling) run in a trio task; the asyncio hook still runs on the
    loop."""

    async def elicit(params: ElicitParams, context: HookContext) -> ElicitResult:
        await asyncio.sleep(0)
        return ElicitResult(action="accept", content={"name": "Ada"})

    async def main() -> None:
        async with aio.Connection(STATELESS, elicitation=elicit) as conn:
            assert conn.profile is not None
            assert conn.profile.stateless
            assert (await conn.call_tool("echo", {"text": "x"}, validate_output=False)).text == "x"
            assert (await conn.call_tool("ask", validate_output=False)).text == "Ada"
            assert (await conn.call_tool("slow", validate_output=False)).text == "done"

    run(main)


def test_the_reader_task_keeps_reading_for_calls_awaited_on_the_loop() -> None:
    """A caller in trio reads its own answer when nobody reads (driver/reading.py); an
    asyncio caller cannot, so the reader task never leaves it the role (else each of its
    answers would wait for the reader's linger)."""

    async def main() -> None:
        async with aio.Connection(DEMO) as conn:
            for _ in range(20):
                await conn.call_tool("echo", {"text": "x"})
                reading = conn._epoch.reading
                assert reading.holder is not None
                assert reading.holder is reading._reader

    run(main)


def test_an_answer_in_the_iteration_of_a_cancellation_is_taken_and_the_cancel_kept() -> None:
    """As for a trio caller rescheduled with its answer and then cancelled: the wait
    returns, and the cancellation is raised at the task's next wait (where, for a call
    the server made a task of, the task is cancelled: tasks/cancel)."""
    steps: list[str] = []

    async def main() -> None:
        pending = SimpleNamespace(finished=False, waiter=None)
        host = aio._LoopHost(SimpleNamespace(loop=asyncio.get_running_loop()))  # type: ignore[arg-type]

        async def caller() -> None:
            await host.park(pending)  # type: ignore[arg-type]
            steps.append("answer taken")
            await asyncio.sleep(0)
            steps.append("not cancelled")

        task = asyncio.ensure_future(caller())
        await asyncio.sleep(0)
        assert pending.waiter is not None
        pending.finished = True
        pending.waiter()  # the reader settles it ...
        task.cancel()  # ... and the task is cancelled before it runs again
        with pytest.raises(asyncio.CancelledError):
            await task
        assert task.cancelling() == 1

    run(main)
    assert steps == ["answer taken"]
