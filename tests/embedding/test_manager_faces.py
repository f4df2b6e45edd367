"""The manager, and everything it hands out, alike from trio, asyncio and sync code: one
scenario on all three faces against the demo server (a real subprocess) and a server
whose program is missing."""

from __future__ import annotations

import asyncio
import inspect
import json
import threading
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
import trio

from mcpl_host import (
    CallToolResult,
    ConnectionClosed,
    GetPromptResult,
    Prompt,
    ReadResourceResult,
    Resource,
    ServerLog,
    StdioTarget,
    Tool,
    aio,
    sync,
)
from mcpl_host._portal import Portal
from mcpl_host.manager import ConnectionManager, ServerUnavailable, UnknownServer

from .conftest import DEMO, wait_for_line

SERVERS = {"demo": DEMO, "missing": StdioTarget.of(["/nonexistent/mcp-server"])}


def text_of(result: Any) -> str:
    """A tool result's text: a CallToolResult, or the raw dict manager.call_tool gives
    until the catalogue's typed results land."""
    if isinstance(result, CallToolResult):
        return result.text
    return str(result["content"][0]["text"])


# What the manager and the connection it hands out are asked, on every face: (what, the
# call, what its result must be). A new manager method is one more line here.
CALLS: list[tuple[str, Callable[[Any], Any], Callable[[Any], bool]]] = [
    ("status()", lambda m: m.status(), lambda r: r["demo"].usable and not r["missing"].usable),
    ("list_tools()", lambda m: m.list_tools(), lambda r: "demo__echo" in r.names()),
    ("list_tools().errors", lambda m: m.list_tools(), lambda r: set(r.errors) == {"missing"}),
    (
        "call_tool()",
        lambda m: m.call_tool("demo__echo", {"text": "m"}),
        lambda r: text_of(r) == "m",
    ),
    ("request()", lambda m: m.request("demo", "ping"), lambda r: r == {}),
    (
        "connection().list_tools()",
        lambda m: m.connection("demo").list_tools(),
        lambda r: isinstance(r[0], Tool) and r[0].name == "echo",
    ),
    (
        "connection().call_tool()",
        lambda m: m.connection("demo").call_tool("add", {"a": 2, "b": 40}),
        lambda r: isinstance(r, CallToolResult) and r.structured_content == {"sum": 42},
    ),
    (
        "connection().list_resources()",
        lambda m: m.connection("demo").list_resources(),
        lambda r: isinstance(r[0], Resource) and r[0].uri == "demo://readme",
    ),
    (
        "connection().read_resource()",
        lambda m: m.connection("demo").read_resource("demo://readme"),
        lambda r: isinstance(r, ReadResourceResult) and len(r.contents) == 1,
    ),
    (
        "connection().list_prompts()",
        lambda m: m.connection("demo").list_prompts(),
        lambda r: isinstance(r[0], Prompt) and r[0].name == "greet",
    ),
    (
        "connection().get_prompt()",
        lambda m: m.connection("demo").get_prompt("greet", {"name": "Ada"}),
        lambda r: isinstance(r, GetPromptResult) and r.description == "Greet Ada",
    ),
    (
        "connection().request()",
        lambda m: m.connection("demo").request("tools/list"),
        lambda r: r["tools"][0]["name"] == "echo",
    ),
]

# (what, the call, the typed error it raises), on every face.
ERRORS: list[tuple[str, Callable[[Any], Any], type[Exception]]] = [
    ("connection(missing)", lambda m: m.connection("missing"), ServerUnavailable),
    ("connection(unknown)", lambda m: m.connection("nope"), UnknownServer),
    ("request(missing)", lambda m: m.request("missing", "ping"), ServerUnavailable),
    ("request(unknown)", lambda m: m.request("nope", "ping"), UnknownServer),
]


async def settle(value: Any) -> Any:
    """What a face's call gives: awaited on the trio and asyncio faces, as it is on the
    sync face."""
    return await value if inspect.isawaitable(value) else value


async def scenario(manager: Any) -> Any:
    """Every call of CALLS and ERRORS; returns the connection it was handed out."""
    await settle(manager.wait_ready("demo", timeout=20))
    for what, call, check in CALLS:
        result = await settle(call(manager))
        assert check(result), f"{what} gave {result!r}"
    for what, call, error in ERRORS:
        with pytest.raises(error):  # noqa: PT012 - the call, or its awaiting, raises
            await settle(call(manager))
            pytest.fail(f"{what} raised nothing")
    # Not held: the face object (and its wrapped methods) is still not made anew per
    # call of manager.connection(name).
    first = manager.connection("demo").call_tool
    assert manager.connection("demo").call_tool == first
    conn = manager.connection("demo")
    assert manager.connection("demo") is conn  # one face object per connection
    await settle(manager.close_server("demo"))  # the connection closed, the manager not
    with pytest.raises(ConnectionClosed):
        await settle(conn.call_tool("echo", {"text": "x"}))
    return conn


async def after_close(manager: Any, conn: Any) -> None:
    """What was handed out, used once the manager was left: the typed error, at once."""
    with pytest.raises(ConnectionClosed):
        await settle(conn.list_tools(refresh=True))
    with pytest.raises(ConnectionClosed):
        await settle(manager.request("demo", "ping"))
    assert manager.status()["demo"].state == "closed"  # plain reads go on working


def on_trio() -> None:
    async def main() -> None:
        with trio.fail_after(30):
            async with ConnectionManager(SERVERS) as manager:
                conn = await scenario(manager)
            await after_close(manager, conn)

    trio.run(main)


def on_asyncio() -> None:
    async def main() -> None:
        async with aio.ConnectionManager(SERVERS) as manager:
            conn = await scenario(manager)
            assert len(aio._RUNS) == 1  # the connection handed out shares the face's run
        await after_close(manager, conn)
        assert aio._RUNS == {}

    asyncio.run(asyncio.wait_for(main(), 30))


def on_sync() -> None:
    # The scenario is a coroutine only so that it is written once: on this face every
    # call blocks and gives its result, which settle() passes through.
    with sync.ConnectionManager(SERVERS) as manager:
        conn = asyncio.run(scenario(manager))
    asyncio.run(after_close(manager, conn))
    assert sync._TrioThread.current is None


@pytest.mark.parametrize("face", [on_trio, on_asyncio, on_sync], ids=["trio", "asyncio", "sync"])
def test_the_manager_and_its_connections_alike_on_every_face(face: Callable[[], None]) -> None:
    face()


def test_a_connection_of_a_face_used_after_its_block_is_the_typed_error_at_once() -> None:
    async def main() -> Any:
        async with aio.Connection(DEMO) as conn:
            pass
        with pytest.raises(ConnectionClosed, match="the Connection was closed"):
            await conn.call_tool("echo", {"text": "x"})
        with pytest.raises(ConnectionClosed):
            await conn.notify("notifications/ping")

    asyncio.run(asyncio.wait_for(main(), 30))
    with sync.Connection(DEMO) as conn:
        pass
    with pytest.raises(ConnectionClosed, match="the Connection was closed"):
        conn.ping()  # was a hang: the trio thread had ended


# -- asyncio -----------------------------------------------------------------------------


def test_cancelling_the_asyncio_task_awaiting_a_managers_connection_sends_cancelled(
    recorder: tuple[StdioTarget, Path],
) -> None:
    target, record = recorder

    async def main() -> None:
        async with aio.ConnectionManager({"rec": target}) as manager:
            await manager.wait_ready()
            call = asyncio.ensure_future(manager.connection("rec").call_tool("wait"))
            line = await asyncio.to_thread(wait_for_line, record, '"tools/call"')
            call.cancel()
            with pytest.raises(asyncio.CancelledError):
                await call
            cancelled = await asyncio.to_thread(wait_for_line, record, "notifications/cancelled")
            assert json.loads(cancelled)["params"]["requestId"] == json.loads(line)["id"]
            assert await manager.connection("rec").request("tools/list") == {"tools": []}

    asyncio.run(asyncio.wait_for(main(), 30))


def test_a_managers_connection_is_awaited_by_the_asyncio_task_with_no_trio_task() -> None:
    spawned: list[str] = []

    class Spawned(trio.abc.Instrument):
        def task_spawned(self, task: trio.lowlevel.Task) -> None:
            spawned.append(task.name)

    async def main() -> None:
        async with aio.ConnectionManager({"demo": DEMO}) as manager:
            await manager.wait_ready()
            conn = manager.connection("demo")
            await conn.list_tools()
            trio.lowlevel.add_instrument(Spawned())  # the loop's thread holds trio's run
            assert (await conn.call_tool("echo", {"text": "x"})).text == "x"
            assert (await manager.connection("demo").read_resource("demo://readme")).contents
            assert spawned == []
            await manager.list_tools()  # the manager's own methods run in trio tasks
            assert spawned != []

    asyncio.run(asyncio.wait_for(main(), 30))


def test_asyncio_callbacks_run_on_the_loop_and_can_start_calls_of_the_face() -> None:
    """on_event and on_status are called on the loop's thread, inside trio's tick: they
    cannot await, but may start asyncio tasks that use the face."""
    seen: list[tuple[str, Any]] = []
    holder: dict[str, Any] = {}
    started: list[asyncio.Task[Any]] = []

    def on_event(name: str, event: object) -> None:
        seen.append((threading.current_thread().name, type(event).__name__))
        if isinstance(event, ServerLog):
            manager = holder["manager"]
            started.append(asyncio.get_running_loop().create_task(manager.connection(name).ping()))

    def on_status(status: Any) -> None:
        seen.append((threading.current_thread().name, status.state))

    async def main() -> None:
        async with aio.ConnectionManager(
            {"demo": DEMO}, on_event=on_event, on_status=on_status
        ) as manager:
            holder["manager"] = manager
            await manager.wait_ready()
            await manager.call_tool("demo__log", {"level": "error", "text": "hi"})
            while not started:
                await asyncio.sleep(0.01)
            assert await started[0] is None  # the ping the callback started

    asyncio.run(asyncio.wait_for(main(), 30))
    assert {thread for thread, _ in seen} == {threading.main_thread().name}
    assert ("MainThread", "ServerLog") in seen


def test_an_asyncio_face_used_off_its_loop_or_its_protocols_is_a_plain_error() -> None:
    async def main() -> None:
        async with aio.ConnectionManager({"demo": DEMO}) as manager:
            await manager.wait_ready()
            conn = manager.connection("demo")

            def elsewhere(calls: Callable[[], Awaitable[Any]]) -> str:
                try:
                    asyncio.run(calls())
                except RuntimeError as error:
                    return str(error)
                return "no error"

            said = await asyncio.to_thread(elsewhere, conn.list_tools)
            assert "was awaited on another asyncio loop" in said
            said = await asyncio.to_thread(elsewhere, manager.list_tools)
            assert "on the loop it was entered on" in said
            with pytest.raises(RuntimeError, match="outside any asyncio loop"):
                await asyncio.to_thread(trio.run, conn.ping)
            with pytest.raises(NotImplementedError, match="async with of a Connection"):
                async with conn:
                    pass
            with pytest.raises(NotImplementedError, match="async iteration"):
                async for _ in conn:  # type: ignore[attr-defined]
                    pass
            assert (await conn.call_tool("echo", {"text": "still"})).text == "still"

    asyncio.run(asyncio.wait_for(main(), 30))


# -- sync --------------------------------------------------------------------------------


def test_a_sync_callback_calling_back_into_the_face_fails_at_once() -> None:
    """on_event runs in trio's thread: a blocking call from it would wait for itself. It
    raises RuntimeError at once; plain reads (status(), connection()) work there."""
    tried: list[str] = []
    holder: dict[str, Any] = {}

    def on_event(name: str, event: object) -> None:
        if not isinstance(event, ServerLog):
            return
        manager = holder["manager"]
        assert manager.status()[name].usable
        try:
            manager.connection(name).list_tools()
        except RuntimeError as error:
            tried.append(str(error))
        try:
            with sync.Connection(DEMO):
                pass
        except RuntimeError as error:
            tried.append(str(error))

    with sync.ConnectionManager({"demo": DEMO}, on_event=on_event) as manager:
        holder["manager"] = manager
        manager.wait_ready()
        manager.call_tool("demo__log", {"level": "error", "text": "hi"})
        manager.connection("demo").ping()  # the log notice came before this answer
        assert len(tried) == 2
        assert all("in trio's thread" in said for said in tried)
        assert "a blocking call of a Connection" in tried[0]
        assert "would wait for itself" in tried[0]
        assert "entering a with block" in tried[1]


# -- the rule ----------------------------------------------------------------------------


class _Stream:
    """A service handed out by a method: async iteration and an async generator."""

    def __aiter__(self) -> AsyncIterator[int]:
        return self.items()

    async def items(self) -> AsyncIterator[int]:
        yield 1


class _Service:
    """A trio-side service with every kind of return value, entered as the faces enter
    a manager."""

    name = "svc"

    async def run(self, *, task_status: trio.TaskStatus[Any] = trio.TASK_STATUS_IGNORED) -> None:
        task_status.started(self)

    async def aclose(self) -> None:
        pass

    def stream(self) -> _Stream:
        return _Stream()

    async def streams(self) -> dict[str, Any]:
        await trio.sleep(0)
        return {"a": _Stream(), "n": 1}

    def data(self) -> list[int]:
        return [1, 2]

    async def owns(self, item: object) -> bool:
        await trio.sleep(0)
        return isinstance(item, _Stream)


def test_service_values_are_wrapped_wherever_they_are_handed_out_and_data_is_not() -> None:
    with sync._Service(_Service()) as service:
        stream = service.stream()
        assert type(stream).__name__ == "Facade"
        assert service.data() == [1, 2]
        streams = service.streams()
        assert streams["n"] == 1
        assert type(streams["a"]).__name__ == "Facade"
        assert service.owns(stream)  # given back, the trio side gets its own object
        assert service.owns(item=streams["a"])
        with pytest.raises(NotImplementedError, match="async generator items"):
            stream.items()
        with pytest.raises(NotImplementedError, match="async iteration of a _Stream"):
            stream.__aiter__()
    with pytest.raises(ConnectionClosed, match="the _Service was closed"):
        service.streams()


def test_the_portal_answers_a_call_after_its_run_ended_with_the_typed_error() -> None:
    """The faces' last guard: whatever reaches a portal whose trio run has ended (or is
    ending) gets ConnectionClosed, never silence (a hang) or trio's Cancelled."""
    portal = Portal()
    ready = threading.Event()
    thread = threading.Thread(target=trio.run, args=(portal.serve, ready.set))
    thread.start()
    ready.wait(10)
    outcomes: list[Any] = []
    finished = threading.Event()

    def done(result: Any) -> None:
        outcomes.append(result)
        finished.set()

    portal.submit(trio.sleep_forever, done)  # running when the run ends
    portal.stop()
    thread.join(10)
    assert finished.wait(10)
    portal.submit(trio.sleep_forever, done)  # after: answered on the spot
    assert [type(o.error) for o in outcomes] == [ConnectionClosed, ConnectionClosed]
