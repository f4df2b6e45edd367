"""Server notifications: log messages through structlog, events, cache invalidation."""

from __future__ import annotations

import pytest
import trio
from structlog.testing import capture_logs

from mcpl_host import (
    Connection,
    Event,
    ListChanged,
    Reconnect,
    Reconnected,
    ServerLog,
    ServerNotification,
)

from ..driver.conftest import connected
from ..driver.peer import PeerSupply


async def _until(events: list[Event], kind: type, count: int = 1) -> None:
    while len([e for e in events if isinstance(e, kind)]) < count:
        await trio.sleep(0.001)


@pytest.mark.parametrize(
    ("mcp_level", "python_level"),
    [
        ("debug", "debug"),
        ("info", "info"),
        ("notice", "info"),
        ("warning", "warning"),
        ("error", "error"),
        ("critical", "critical"),
        ("alert", "critical"),
        ("emergency", "critical"),
        ("chatty", "info"),  # not one of MCP's levels: kept, at info
    ],
)
async def test_server_log_messages_go_to_structlog_at_the_mapped_level(
    mcp_level: str, python_level: str
) -> None:
    events: list[Event] = []
    with capture_logs() as logs, trio.fail_after(5):
        async with connected(name="files", on_event=events.append) as (_conn, peer, _n):
            await peer.send(
                {
                    "jsonrpc": "2.0",
                    "method": "notifications/message",
                    "params": {"level": mcp_level, "logger": "db", "data": {"rows": 3}},
                }
            )
            await _until(events, ServerLog)
    [entry] = [e for e in logs if e["event"] == "server log"]
    assert entry["log_level"] == python_level
    assert entry["server"] == "files"
    assert entry["server_logger"] == "db"
    assert entry["mcp_level"] == mcp_level
    assert entry["data"] == '{"rows":3}'
    assert ServerLog(mcp_level, "db", {"rows": 3}) in events


async def test_a_server_log_line_cannot_forge_lines_or_leak_secrets() -> None:
    events: list[Event] = []
    with capture_logs() as logs, trio.fail_after(5):
        async with connected(secrets=("hunter2hunter2",), on_event=events.append) as (
            _c,
            peer,
            _n,
        ):
            await peer.send(
                {
                    "jsonrpc": "2.0",
                    "method": "notifications/message",
                    "params": {
                        "level": "error",
                        "data": "x\nFAKE line hunter2hunter2 " + "y" * 500,
                    },
                }
            )
            await _until(events, ServerLog)
    [entry] = [e for e in logs if e["event"] == "server log"]
    assert "\n" not in entry["data"]
    assert entry["data"].startswith('"x\\nFAKE line ***')
    assert "hunter2hunter2" not in entry["data"]
    assert entry["data"].endswith("…[cut]")
    assert len(entry["data"]) < 300


async def test_malformed_notifications_are_dropped_and_others_passed_on() -> None:
    events: list[Event] = []
    with capture_logs() as logs, trio.fail_after(5):
        async with connected(on_event=events.append) as (_conn, peer, _n):
            await peer.send({"jsonrpc": "2.0", "method": "notifications/message", "params": {}})
            await peer.send(
                {"jsonrpc": "2.0", "method": "notifications/resources/updated", "params": [1]}
            )
            await peer.send(
                {"jsonrpc": "2.0", "method": "notifications/custom", "params": {"a": 1}}
            )
            await _until(events, ServerNotification)
    assert [e.method for e in events if isinstance(e, ServerNotification)] == [
        "notifications/custom"
    ]
    ignored = [e for e in logs if e["event"] == "notification ignored"]
    assert [e["method"] for e in ignored] == [
        "notifications/message",
        "notifications/resources/updated",
    ]
    assert not any(isinstance(e, ServerLog) for e in events)


async def test_resource_list_change_drops_resources_and_templates() -> None:
    events: list[Event] = []
    with trio.fail_after(5):
        async with connected(on_event=events.append) as (conn, peer, nursery):
            served: list[str] = []

            async def server() -> None:
                while True:
                    try:
                        request = await peer.recv()
                    except EOFError:
                        return
                    served.append(request["method"])
                    key = (
                        "resources"
                        if request["method"] == "resources/list"
                        else "resourceTemplates"
                    )
                    await peer.answer(request, {key: []})

            nursery.start_soon(server)
            await conn.list_resources()
            await conn.list_resource_templates()
            await peer.send({"jsonrpc": "2.0", "method": "notifications/resources/list_changed"})
            await _until(events, ListChanged)
            await conn.list_resources()
            await conn.list_resource_templates()
    assert served == ["resources/list", "resources/templates/list"] * 2
    assert [e for e in events if isinstance(e, ListChanged)] == [ListChanged("resources")]


async def test_a_reconnect_drops_the_cached_lists(autojump_clock: trio.abc.Clock) -> None:
    supply = PeerSupply()
    events: list[Event] = []
    lists_read = 0

    async def serve_lists(index: int) -> None:
        nonlocal lists_read
        peer = await supply.handshaken(index)
        while True:
            try:
                request = await peer.recv()
            except (EOFError, trio.ClosedResourceError):
                return
            lists_read += 1
            await peer.answer(request, {"tools": [{"name": f"from-{index}"}]})

    with trio.fail_after(30):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(supply.handshake_next)
            conn = Connection(supply.factory, reconnect=Reconnect(), on_event=events.append)
            async with conn:
                nursery.start_soon(serve_lists, 0)
                assert [t.name for t in await conn.list_tools()] == ["from-0"]
                nursery.start_soon(supply.handshake_next)
                await supply.peers[0].stream.aclose()  # the server goes away
                await _until(events, Reconnected)
                nursery.start_soon(serve_lists, 1)
                assert [t.name for t in await conn.list_tools()] == ["from-1"]
            nursery.cancel_scope.cancel()
    assert lists_read == 2
