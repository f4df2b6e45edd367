"""Tasks over a scripted server: what the host writes (params.task, the tasks/get cadence,
tasks/result, tasks/cancel) and what the caller gets. Under an autojump clock, so the
poll intervals are the real ones and take no time."""

from __future__ import annotations

import itertools
from typing import Any

import pytest
import trio

from mcpl_host import (
    CallToolResult,
    ElicitParams,
    ElicitResult,
    HookContext,
    LimitExceeded,
    OutputSchemaError,
    RequestError,
    RequestTimeout,
    ServerNotification,
    Task,
    TaskError,
)
from mcpl_host.client import ResultDecodeError
from mcpl_host.protocol.tasks import (
    DEFAULT_POLL_INTERVAL,
    MAX_POLL_INTERVAL,
    MIN_POLL_INTERVAL,
    RELATED_TASK,
    poll_delay,
)

from ..driver.conftest import connected
from ..driver.peer import Json, Peer, memory_connection

R4, R5 = "2025-11-25", "2026-07-28"
TASK_CAPS = {"tools": {}, "tasks": {"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}}}
SCHEMA = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
TOOLS = {
    "tools": [
        {
            "name": "research",
            "inputSchema": {"type": "object"},
            "outputSchema": SCHEMA,
            "execution": {"taskSupport": "required"},
        },
        {
            "name": "maybe",
            "inputSchema": {"type": "object"},
            "execution": {"taskSupport": "optional"},
        },
        {
            "name": "never",
            "inputSchema": {"type": "object"},
            "execution": {"taskSupport": "forbidden"},
        },
        {"name": "plain", "inputSchema": {"type": "object"}},
    ]
}
RESULT = {"content": [{"type": "text", "text": "done"}], "structuredContent": {"n": 7}}


def task(status: str = "working", poll: int | None = 2000, **more: Any) -> Json:
    state: Json = {
        "taskId": "t-1",
        "status": status,
        "createdAt": "2025-11-25T10:00:00Z",
        "lastUpdatedAt": "2025-11-25T10:00:00Z",
        "ttl": 60000,
    }
    if poll is not None:
        state["pollInterval"] = poll
    return state | more


async def r4_peer(**kwargs: Any) -> tuple[Any, Peer]:
    conn, peer = memory_connection(versions=[R4], **kwargs)
    return conn, peer


async def serve_tools(peer: Peer) -> Json:
    """Answer the tool list the host reads first; return the tools/call that follows."""
    await peer.answer(await peer.expect("tools/list"), TOOLS)
    return await peer.expect("tools/call")


def times(peer_log: list[tuple[float, Json]], method: str) -> list[float]:
    return [t for t, m in peer_log if m.get("method") == method]


async def test_a_required_task_tool_is_created_polled_at_its_interval_and_its_result_fetched(
    autojump_clock: trio.abc.Clock,
) -> None:
    conn, peer = await r4_peer()
    log: list[tuple[float, Json]] = []
    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(peer.handshake, R4, TASK_CAPS)
            async with conn:

                async def server() -> None:
                    call = await serve_tools(peer)
                    log.append((trio.current_time(), call))
                    await peer.answer(call, {"task": task()})
                    for status in ("working", "working", "completed"):
                        get = await peer.expect("tasks/get")
                        log.append((trio.current_time(), get))
                        await peer.answer(get, task(status))
                    result = await peer.expect("tasks/result")
                    log.append((trio.current_time(), result))
                    await peer.answer(result, RESULT)

                nursery.start_soon(server)
                got = await conn.call_tool("research", {"q": "x"})
            nursery.cancel_scope.cancel()
    assert isinstance(got, CallToolResult)
    assert (got.text, got.structured_content) == ("done", {"n": 7})
    call = log[0][1]
    assert call["params"] == {"name": "research", "arguments": {"q": "x"}, "task": {}}
    gets = times(log, "tasks/get")
    assert [round(b - a, 6) for a, b in zip([log[0][0], *gets], gets, strict=False)] == [2, 2, 2]
    assert all(m["params"] == {"taskId": "t-1"} for _, m in log[1:])
    assert times(log, "tasks/result")[0] == gets[-1]  # at once, no further wait


async def test_a_task_result_is_checked_against_the_output_schema(
    autojump_clock: trio.abc.Clock,
) -> None:
    conn, peer = await r4_peer()
    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(peer.handshake, R4, TASK_CAPS)
            async with conn:

                async def server() -> None:
                    await peer.answer(await serve_tools(peer), {"task": task("completed")})
                    await peer.answer(
                        await peer.expect("tasks/result"),
                        {"content": [], "structuredContent": {"n": "seven"}},
                    )

                nursery.start_soon(server)
                with pytest.raises(OutputSchemaError) as caught:
                    await conn.call_tool("research")
            nursery.cancel_scope.cancel()
    assert [v.path for v in caught.value.violations] == ["/n"]


@pytest.mark.parametrize(
    ("suggested", "expected"),
    [
        (2000, 2.0),
        (0, MIN_POLL_INTERVAL),
        (10**9, MAX_POLL_INTERVAL),
        (None, DEFAULT_POLL_INTERVAL),
        (-5, DEFAULT_POLL_INTERVAL),
        ("1000", DEFAULT_POLL_INTERVAL),
        (True, DEFAULT_POLL_INTERVAL),
        (float("nan"), DEFAULT_POLL_INTERVAL),
    ],
)
def test_the_poll_interval_is_kept_between_a_floor_and_a_cap(
    suggested: object, expected: float
) -> None:
    assert poll_delay(suggested) == expected


async def test_a_server_asking_for_no_wait_is_polled_at_the_floor(
    autojump_clock: trio.abc.Clock,
) -> None:
    conn, peer = await r4_peer()
    gets: list[float] = []
    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(peer.handshake, R4, TASK_CAPS)
            async with conn:

                async def server() -> None:
                    await peer.answer(await serve_tools(peer), {"task": task(poll=0)})
                    for status in ("working", "working", "completed"):
                        get = await peer.expect("tasks/get")
                        gets.append(trio.current_time())
                        await peer.answer(get, task(status, poll=0))
                    await peer.answer(await peer.expect("tasks/result"), RESULT)

                nursery.start_soon(server)
                await conn.call_tool("research")
            nursery.cancel_scope.cancel()
    assert [round(b - a, 6) for a, b in itertools.pairwise(gets)] == [0.1, 0.1]


async def test_progress_reaches_the_caller_for_as_long_as_the_task_runs(
    autojump_clock: trio.abc.Clock,
) -> None:
    conn, peer = await r4_peer()
    seen: list[tuple[float, float | None, str | None]] = []
    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(peer.handshake, R4, TASK_CAPS)
            async with conn:

                async def server() -> None:
                    call = await serve_tools(peer)
                    token = call["params"]["_meta"]["progressToken"]
                    assert isinstance(token, str)  # the host's own: it outlives the request
                    await peer.answer(call, {"task": task()})
                    await peer.send(
                        {
                            "jsonrpc": "2.0",
                            "method": "notifications/progress",
                            "params": {"progressToken": token, "progress": 1, "total": 2},
                        }
                    )
                    get = await peer.expect("tasks/get")
                    await peer.send(
                        {
                            "jsonrpc": "2.0",
                            "method": "notifications/progress",
                            "params": {"progressToken": token, "progress": 2, "message": "m"},
                        }
                    )
                    await peer.answer(get, task("completed"))
                    await peer.answer(await peer.expect("tasks/result"), RESULT)

                nursery.start_soon(server)
                await conn.call_tool("research", on_progress=lambda *p: seen.append(p))
            nursery.cancel_scope.cancel()
    assert seen == [(1, 2, None), (2, None, "m")]


async def test_cancelling_the_caller_cancels_the_task(autojump_clock: trio.abc.Clock) -> None:
    conn, peer = await r4_peer()
    cancels: list[Json] = []
    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(peer.handshake, R4, TASK_CAPS)
            async with conn:
                polled = trio.Event()

                async def server() -> None:
                    await peer.answer(await serve_tools(peer), {"task": task()})
                    await peer.answer(await peer.expect("tasks/get"), task())
                    polled.set()
                    cancel = await peer.expect("tasks/cancel")
                    cancels.append(cancel)
                    await peer.answer(cancel, task("cancelled"))

                nursery.start_soon(server)
                with trio.CancelScope() as scope:

                    async def stop() -> None:
                        await polled.wait()
                        scope.cancel()

                    nursery.start_soon(stop)
                    await conn.call_tool("research")
                assert scope.cancelled_caught
                with trio.fail_after(10):
                    while not cancels:
                        await trio.sleep(0.01)
            nursery.cancel_scope.cancel()
    assert cancels[0]["params"] == {"taskId": "t-1"}


async def test_a_task_that_never_ends_times_out_and_is_cancelled(
    autojump_clock: trio.abc.Clock,
) -> None:
    conn, peer = await r4_peer()
    cancels: list[Json] = []
    gets = 0
    with trio.fail_after(300):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(peer.handshake, R4, TASK_CAPS)
            async with conn:

                async def server() -> None:
                    nonlocal gets
                    await peer.answer(await serve_tools(peer), {"task": task(poll=5000)})
                    while True:
                        message = await peer.recv()
                        if message.get("method") == "tasks/cancel":
                            cancels.append(message)
                            await peer.answer(message, task("cancelled"))
                            return
                        gets += 1
                        await peer.answer(message, task(poll=5000))

                nursery.start_soon(server)
                started = trio.current_time()
                with pytest.raises(RequestTimeout) as caught:
                    await conn.call_tool("research", timeout=20)
                assert trio.current_time() - started == pytest.approx(20)
                with trio.fail_after(10):
                    while not cancels:
                        await trio.sleep(0.01)
            nursery.cancel_scope.cancel()
    assert caught.value.method == "tools/call"
    assert gets == 3  # at 5, 10, 15 s; the next poll would be past the timeout


async def test_input_required_waits_in_tasks_result_while_the_hooks_answer(
    autojump_clock: trio.abc.Clock,
) -> None:
    asked: list[tuple[str, Any]] = []

    async def elicit(params: ElicitParams, context: HookContext) -> ElicitResult:
        asked.append((params.message, (params.meta or {}).get(RELATED_TASK)))
        return ElicitResult(action="accept", content={"interpretation": "snake"})

    conn, peer = await r4_peer(elicitation=elicit)
    answered: list[Json] = []
    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(peer.handshake, R4, TASK_CAPS)
            async with conn:

                async def server() -> None:
                    await peer.answer(await serve_tools(peer), {"task": task()})
                    await peer.answer(await peer.expect("tasks/get"), task("input_required"))
                    result = await peer.expect("tasks/result")
                    await peer.send(
                        {
                            "jsonrpc": "2.0",
                            "id": 0,
                            "method": "elicitation/create",
                            "params": {
                                "message": "which python?",
                                "requestedSchema": {"type": "object", "properties": {}},
                                "_meta": {RELATED_TASK: {"taskId": "t-1"}},
                            },
                        }
                    )
                    answered.append(await peer.recv())
                    await peer.answer(result, RESULT)

                nursery.start_soon(server)
                got = await conn.call_tool("research")
            nursery.cancel_scope.cancel()
    assert got.structured_content == {"n": 7}
    assert asked == [("which python?", {"taskId": "t-1"})]
    assert answered[0]["result"]["content"] == {"interpretation": "snake"}


async def test_a_status_notification_is_taken_without_waiting_for_the_next_poll(
    autojump_clock: trio.abc.Clock,
) -> None:
    conn, peer = await r4_peer()
    events: list[Any] = []
    conn._on_event = events.append
    done_at: list[float] = []
    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(peer.handshake, R4, TASK_CAPS)
            async with conn:

                async def server() -> None:
                    await peer.answer(await serve_tools(peer), {"task": task(poll=30000)})
                    await trio.sleep(1)
                    await peer.send(
                        {
                            "jsonrpc": "2.0",
                            "method": "notifications/tasks/status",
                            "params": task("completed"),
                        }
                    )
                    result = await peer.expect("tasks/result")  # no tasks/get before it
                    done_at.append(trio.current_time())
                    await peer.answer(result, RESULT)

                nursery.start_soon(server)
                started = trio.current_time()
                await conn.call_tool("research")
            nursery.cancel_scope.cancel()
    assert done_at[0] - started == pytest.approx(1)
    assert [e.method for e in events if isinstance(e, ServerNotification)] == [
        "notifications/tasks/status"
    ]


async def test_a_task_error_is_the_callers_request_error(autojump_clock: trio.abc.Clock) -> None:
    conn, peer = await r4_peer()
    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(peer.handshake, R4, TASK_CAPS)
            async with conn:

                async def server() -> None:
                    await peer.answer(await serve_tools(peer), {"task": task("failed")})
                    result = await peer.expect("tasks/result")
                    await peer.send(
                        {
                            "jsonrpc": "2.0",
                            "id": result["id"],
                            "error": {"code": -32603, "message": "disk on fire"},
                        }
                    )

                nursery.start_soon(server)
                with pytest.raises(RequestError) as caught:
                    await conn.call_tool("research")
            nursery.cancel_scope.cancel()
    assert (caught.value.code, caught.value.error_message) == (-32603, "disk on fire")


@pytest.mark.parametrize(
    ("tool", "task_arg", "as_task"),
    [
        ("maybe", None, False),
        ("maybe", True, True),
        ("research", False, False),
        ("never", None, False),
        ("plain", None, False),
    ],
)
async def test_which_calls_are_tasks(tool: str, task_arg: bool | None, as_task: bool) -> None:
    conn, peer = await r4_peer()
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(peer.handshake, R4, TASK_CAPS)
            async with conn:

                async def server() -> None:
                    # task=False needs no tool list: the call is direct whatever it says.
                    call = await (
                        peer.expect("tools/call") if task_arg is False else serve_tools(peer)
                    )
                    assert ("task" in call["params"]) is as_task
                    if as_task:
                        await peer.answer(call, {"task": task("completed")})
                        await peer.answer(await peer.expect("tasks/result"), RESULT)
                    else:
                        await peer.answer(call, RESULT)

                nursery.start_soon(server)
                got = await conn.call_tool(tool, task=task_arg, validate_output=False)
            nursery.cancel_scope.cancel()
    assert got.text == "done"


@pytest.mark.parametrize("tool", ["never", "plain"])
async def test_asking_for_a_task_the_tool_forbids_sends_nothing(tool: str) -> None:
    conn, peer = await r4_peer()
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(peer.handshake, R4, TASK_CAPS)
            async with conn:

                async def server() -> None:
                    await peer.answer(await peer.expect("tools/list"), TOOLS)
                    # The next line the host writes is the ping: no tools/call before it.
                    await peer.answer(await peer.expect("ping"), {})

                nursery.start_soon(server)
                with pytest.raises(TaskError):
                    await conn.call_tool(tool, task=True)
                with pytest.raises(TaskError):
                    await conn.start_task(tool)
                await conn.ping()
            nursery.cancel_scope.cancel()


async def test_without_the_servers_task_capability_the_call_is_direct() -> None:
    with trio.fail_after(10):
        async with connected(R4) as (conn, peer, nursery):  # capabilities: tools only
            with pytest.raises(TaskError):
                await conn.call_tool("research", task=True)  # nothing sent: next is the call

            async def server() -> None:
                call = await peer.expect("tools/call")  # no tools/list read first
                assert "task" not in call["params"]
                await peer.answer(call, RESULT)
                await peer.answer(await peer.expect("tools/list"), TOOLS)

            nursery.start_soon(server)
            got = await conn.call_tool("research")
    assert got.structured_content == {"n": 7}


async def test_the_explicit_calls(autojump_clock: trio.abc.Clock) -> None:
    conn, peer = await r4_peer()
    statuses: list[tuple[str, str | None]] = []
    seen: list[Json] = []
    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(peer.handshake, R4, TASK_CAPS)
            async with conn:

                async def server() -> None:
                    await peer.answer(await peer.expect("tools/list"), TOOLS)
                    call = await peer.expect("tools/call")
                    seen.append(call)
                    await peer.answer(call, {"task": task(ttl=5000)})
                    # watch_task: the first get, then one per interval until it ends.
                    await peer.answer(await peer.expect("tasks/get"), task())
                    get = await peer.expect("tasks/get")
                    await peer.answer(get, task(statusMessage="half"))
                    await peer.answer(await peer.expect("tasks/get"), task("completed"))
                    await peer.answer(await peer.expect("tasks/result"), RESULT)
                    listed = await peer.expect("tasks/list")
                    seen.append(listed)
                    await peer.answer(listed, {"tasks": [task("completed")], "nextCursor": "c"})
                    listed = await peer.expect("tasks/list")
                    seen.append(listed)
                    await peer.answer(listed, {"tasks": [task("weird", taskId="t-2")]})
                    cancel = await peer.expect("tasks/cancel")
                    await peer.answer(cancel, task("cancelled", taskId="t-2"))

                nursery.start_soon(server)
                created = await conn.start_task("maybe", {"a": 1}, ttl=5000)
                assert isinstance(created, Task)
                assert (created.task_id, created.status, created.ttl) == ("t-1", "working", 5000)
                last = await conn.watch_task(
                    "t-1", on_status=lambda t: statuses.append((t.status, t.status_message))
                )
                assert last.terminal
                result = await conn.task_result("t-1", tool="research")
                assert result.structured_content == {"n": 7}
                listed_tasks = await conn.list_tasks()
                assert [(t.task_id, t.status, t.known_status) for t in listed_tasks] == [
                    ("t-1", "completed", True),
                    ("t-2", "weird", False),  # a status this host does not know: kept
                ]
                cancelled = await conn.cancel_task("t-2")
                assert cancelled is not None
                assert cancelled.status == "cancelled"
            nursery.cancel_scope.cancel()
    assert seen[0]["params"] == {"name": "maybe", "arguments": {"a": 1}, "task": {"ttl": 5000}}
    assert statuses == [("working", None), ("working", "half"), ("completed", None)]
    assert "cursor" not in (seen[1].get("params") or {})
    assert seen[2]["params"]["cursor"] == "c"


async def test_listing_tasks_is_bounded_like_every_list() -> None:
    conn, peer = await r4_peer(max_list_items=2)
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(peer.handshake, R4, TASK_CAPS)
            async with conn:

                async def server() -> None:
                    listed = await peer.expect("tasks/list")
                    await peer.answer(listed, {"tasks": [task(), task(), task()]})

                nursery.start_soon(server)
                with pytest.raises(LimitExceeded) as caught:
                    await conn.list_tasks()
            nursery.cancel_scope.cancel()
    assert caught.value.limit == "max_list_items"


async def test_an_unknown_status_is_followed_until_it_ends(autojump_clock: trio.abc.Clock) -> None:
    conn, peer = await r4_peer()
    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(peer.handshake, R4, TASK_CAPS)
            async with conn:

                async def server() -> None:
                    await peer.answer(await serve_tools(peer), {"task": task("thinking")})
                    await peer.answer(await peer.expect("tasks/get"), task("thinking"))
                    await peer.answer(await peer.expect("tasks/get"), task("completed"))
                    await peer.answer(await peer.expect("tasks/result"), RESULT)

                nursery.start_soon(server)
                got = await conn.call_tool("research")
            nursery.cancel_scope.cancel()
    assert got.text == "done"


# -- 2026-07-28: the extension -----------------------------------------------------------

EXT = "io.modelcontextprotocol/tasks"
EXT_CAPS = {"tools": {}, "extensions": {EXT: {}}}


def ext_task(status: str = "working", **more: Any) -> Json:
    return {
        "resultType": "complete",
        "taskId": "e-1",
        "status": status,
        "createdAt": "2026-07-28T10:00:00Z",
        "lastUpdatedAt": "2026-07-28T10:00:00Z",
        "ttlMs": 60000,
        "pollIntervalMs": 3000,
    } | more


async def ext_call(answers: list[Json], **call: Any) -> tuple[Any, list[tuple[float, Json]]]:
    """Call tool "slow" on a 2026-07-28 server that makes a task and answers each
    tasks/get with the next of ``answers``; return what the call returned or raised."""
    conn, peer = memory_connection(versions=[R5])
    log: list[tuple[float, Json]] = []
    outcome: Any = None
    with trio.fail_after(120):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(peer.discover, None, EXT_CAPS)
            async with conn:

                async def server() -> None:
                    request = await peer.expect("tools/call")
                    log.append((trio.current_time(), request))
                    await peer.answer(request, ext_task() | {"resultType": "task"})
                    for answer in answers:
                        get = await peer.expect("tasks/get")
                        log.append((trio.current_time(), get))
                        await peer.answer(get, answer)

                nursery.start_soon(server)
                try:
                    outcome = await conn.call_tool("slow", **call)
                except Exception as exc:
                    outcome = exc
            nursery.cancel_scope.cancel()
    return outcome, log


async def test_the_extension_is_named_in_each_request_and_its_task_polled_to_the_inline_result(
    autojump_clock: trio.abc.Clock,
) -> None:
    done = ext_task("completed", result={"content": [{"type": "text", "text": "ok"}]})
    got, log = await ext_call([ext_task(), done], validate_output=False)
    assert isinstance(got, CallToolResult)
    assert got.text == "ok"
    call = log[0][1]
    capabilities = call["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"]
    assert capabilities["extensions"] == {EXT: {}}
    assert "task" not in call["params"]  # the server decides, the client never asks
    assert log[1][1]["params"]["taskId"] == "e-1"
    assert [round(b[0] - a[0], 6) for a, b in itertools.pairwise(log)] == [3, 3]


async def test_a_failed_extension_task_raises_its_error(autojump_clock: trio.abc.Clock) -> None:
    failed = ext_task("failed", error={"code": -32603, "message": "rate limited"})
    got, _ = await ext_call([failed])
    assert isinstance(got, RequestError)
    assert got.code == -32603


async def test_a_cancelled_extension_task_is_a_task_error(autojump_clock: trio.abc.Clock) -> None:
    got, _ = await ext_call([ext_task("cancelled")])
    assert isinstance(got, TaskError)
    assert got.task_id == "e-1"


async def test_an_extension_tasks_input_is_answered_once_by_the_hook_with_tasks_update(
    autojump_clock: trio.abc.Clock,
) -> None:
    asked: list[tuple[str, Any]] = []

    async def elicit(params: ElicitParams, context: HookContext) -> ElicitResult:
        asked.append((params.message, context.request_id))
        return ElicitResult(action="accept", content={"name": "Luca"})

    form = {"mode": "form", "message": "name?", "requestedSchema": {"type": "object"}}
    asks = {"name": {"method": "elicitation/create", "params": form}}
    conn, peer = memory_connection(versions=[R5], elicitation=elicit)
    updates: list[Json] = []
    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(peer.discover, None, EXT_CAPS)
            async with conn:

                async def server() -> None:
                    call = await peer.expect("tools/call")
                    await peer.answer(call, ext_task() | {"resultType": "task"})
                    waiting = ext_task("input_required", inputRequests=asks)
                    await peer.answer(await peer.expect("tasks/get"), waiting)
                    update = await peer.expect("tasks/update")
                    updates.append(update)
                    await peer.answer(update, {"resultType": "complete"})
                    # Not yet taken in: the same request again, which is not asked twice.
                    await peer.answer(await peer.expect("tasks/get"), waiting)
                    done = ext_task(
                        "completed", result={"content": [{"type": "text", "text": "Hi Luca"}]}
                    )
                    await peer.answer(await peer.expect("tasks/get"), done)

                nursery.start_soon(server)
                got = await conn.call_tool("hello", validate_output=False)
            nursery.cancel_scope.cancel()
    assert got.text == "Hi Luca"
    assert asked == [("name?", "name")]  # the key is the request id the hook sees
    assert updates[0]["params"]["taskId"] == "e-1"
    assert updates[0]["params"]["inputResponses"] == {
        "name": {"action": "accept", "content": {"name": "Luca"}}
    }


async def test_an_extension_task_asking_what_no_hook_answers_is_cancelled(
    autojump_clock: trio.abc.Clock,
) -> None:
    asks = {"name": {"method": "elicitation/create", "params": {"message": "name?"}}}
    conn, peer = memory_connection(versions=[R5])  # no elicitation hook
    cancels: list[Json] = []
    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(peer.discover, None, EXT_CAPS)
            async with conn:

                async def server() -> None:
                    call = await peer.expect("tools/call")
                    await peer.answer(call, ext_task() | {"resultType": "task"})
                    waiting = ext_task("input_required", inputRequests=asks)
                    await peer.answer(await peer.expect("tasks/get"), waiting)
                    cancel = await peer.expect("tasks/cancel")
                    cancels.append(cancel)
                    await peer.answer(cancel, {"resultType": "complete"})

                nursery.start_soon(server)
                with pytest.raises(TaskError) as caught:
                    await conn.call_tool("hello")
                with trio.fail_after(10):
                    while not cancels:
                        await trio.sleep(0.01)
            nursery.cancel_scope.cancel()
    assert caught.value.task is not None
    assert caught.value.task.input_requests == asks
    assert cancels[0]["params"]["taskId"] == "e-1"


async def test_a_completed_extension_task_without_its_result_is_a_protocol_error(
    autojump_clock: trio.abc.Clock,
) -> None:
    got, _ = await ext_call([ext_task("completed")])
    assert isinstance(got, ResultDecodeError)


async def test_an_unreadable_task_state_fails_the_call_and_cancels_the_task(
    autojump_clock: trio.abc.Clock,
) -> None:
    conn, peer = await r4_peer()
    cancels: list[Json] = []
    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(peer.handshake, R4, TASK_CAPS)
            async with conn:

                async def server() -> None:
                    await peer.answer(await serve_tools(peer), {"task": task()})
                    await peer.answer(await peer.expect("tasks/get"), {"taskId": "t-1"})
                    cancel = await peer.expect("tasks/cancel")
                    cancels.append(cancel)
                    await peer.answer(cancel, task("cancelled"))

                nursery.start_soon(server)
                with pytest.raises(ResultDecodeError):
                    await conn.call_tool("research")
                with trio.fail_after(10):
                    while not cancels:
                        await trio.sleep(0.01)
            nursery.cancel_scope.cancel()
    assert cancels[0]["params"] == {"taskId": "t-1"}


async def test_progress_under_a_finished_tasks_token_reaches_no_one(
    autojump_clock: trio.abc.Clock,
) -> None:
    conn, peer = await r4_peer()
    seen: list[float] = []
    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(peer.handshake, R4, TASK_CAPS)
            async with conn:

                async def server() -> None:
                    call = await serve_tools(peer)
                    token = call["params"]["_meta"]["progressToken"]
                    await peer.answer(call, {"task": task("completed")})
                    await peer.answer(await peer.expect("tasks/result"), RESULT)
                    for stray in (token, "mcpl_host/999", 12345):
                        await peer.send(
                            {
                                "jsonrpc": "2.0",
                                "method": "notifications/progress",
                                "params": {"progressToken": stray, "progress": 9},
                            }
                        )
                    await peer.answer(await peer.expect("ping"), {})

                nursery.start_soon(server)
                await conn.call_tool("research", on_progress=lambda p, t, m: seen.append(p))
                await conn.ping()  # the server wrote its strays before answering this
            nursery.cancel_scope.cancel()
    assert seen == []
    assert conn._progress_listeners == {}


async def test_on_the_extension_the_explicit_calls_follow_its_shapes(
    autojump_clock: trio.abc.Clock,
) -> None:
    conn, peer = memory_connection(versions=[R5])
    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(peer.discover, None, EXT_CAPS)
            async with conn:

                async def server() -> None:
                    await peer.answer(
                        await peer.expect("tools/call"), RESULT | {"resultType": "complete"}
                    )
                    await peer.answer(await peer.expect("tools/list"), {"tools": []})
                    call = await peer.expect("tools/call")
                    assert "task" not in call["params"]
                    await peer.answer(call, ext_task() | {"resultType": "task"})
                    await peer.answer(await peer.expect("tasks/cancel"), {"resultType": "complete"})
                    done = ext_task("completed", result=RESULT)
                    await peer.answer(await peer.expect("tasks/get"), done)

                nursery.start_soon(server)
                direct = await conn.start_task("quick")
                assert isinstance(direct, CallToolResult)
                assert direct.text == "done"
                created = await conn.start_task("slow", ttl=5)  # no ttl on the extension
                assert isinstance(created, Task)
                assert (created.ttl, created.poll_interval) == (60000, 3000)
                with pytest.raises(TaskError):
                    await conn.list_tasks()  # the extension has no tasks/list: nothing sent
                assert await conn.cancel_task("e-1") is None
                result = await conn.task_result("e-1")
                assert result.text == "done"
            nursery.cancel_scope.cancel()


async def test_task_calls_on_a_revision_without_tasks_send_nothing() -> None:
    with trio.fail_after(10):
        async with connected("2025-06-18") as (conn, peer, nursery):
            for call in (conn.get_task("x"), conn.cancel_task("x"), conn.task_result("x")):
                with pytest.raises(TaskError):
                    await call
            with pytest.raises(TaskError):
                await conn.call_tool("research", task=True)

            async def server() -> None:
                await peer.answer(await peer.expect("ping"), {})

            nursery.start_soon(server)
            await conn.ping()


async def test_task_result_on_the_extension_answers_the_tasks_input(
    autojump_clock: trio.abc.Clock,
) -> None:
    async def elicit(params: ElicitParams, context: HookContext) -> ElicitResult:
        return ElicitResult(action="decline")

    asks = {
        "k1": {"method": "elicitation/create", "params": {"message": "?", "requestedSchema": {}}}
    }
    conn, peer = memory_connection(versions=[R5], elicitation=elicit)
    updates: list[Json] = []
    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(peer.discover, None, EXT_CAPS)
            async with conn:

                async def server() -> None:
                    waiting = ext_task("input_required", inputRequests=asks)
                    await peer.answer(await peer.expect("tasks/get"), waiting)
                    update = await peer.expect("tasks/update")
                    updates.append(update["params"]["inputResponses"])
                    await peer.answer(update, {"resultType": "complete"})
                    await peer.answer(
                        await peer.expect("tasks/get"), ext_task("completed", result=RESULT)
                    )

                nursery.start_soon(server)
                result = await conn.task_result("e-1")
            nursery.cancel_scope.cancel()
    assert result.text == "done"
    assert updates == [{"k1": {"action": "decline"}}]
