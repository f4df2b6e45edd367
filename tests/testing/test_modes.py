"""One script, three ways to run it: in memory, as stdio subprocesses, on a TCP socket.

Each test runs the same script in every mode and makes the same assertions; only what
the modes cannot make alike (how an abrupt end looks to the host) differs, and says so.
Real processes and sockets run in real time: no autojump clock here.
"""

from __future__ import annotations

import pytest
import trio
from structlog.testing import capture_logs

from mcpl_host import (
    Connection,
    ConnectionClosed,
    ListChanged,
    RequestError,
    ServerNotification,
    TransportError,
)
from mcpl_host.events import Disconnected, Event
from mcpl_host.testing import MODES, Mode, Script, ScriptFailed, serve


def representative() -> Script:
    return (
        Script(timeout=5)
        .handshake(server_info={"name": "scripted", "version": "1"}, instructions="be brief")
        .expect("tools/list")
        .reply({"tools": [{"name": "echo", "inputSchema": {"type": "object"}}]})
        .send_request("ping", id=None)
        .expect_answer()
        .notify("notifications/tools/list_changed")
        .expect("tools/call", {"name": "echo", "arguments": {"text": "hi"}})
        .reply_error(-32602, "echo is broken", {"why": "testing"})
        .drop()
        .refuse_connections(1)
        .handshake(version="2025-03-26")
        .serve_forever()
    )


async def _until(events: list[Event], kind: type) -> None:
    while not any(isinstance(event, kind) for event in events):
        await trio.sleep(0.005)


@pytest.mark.parametrize("mode", MODES)
async def test_the_same_script_in_every_mode(mode: Mode) -> None:
    events: list[Event] = []
    with trio.fail_after(20):
        async with serve(representative(), mode) as server:
            async with Connection(server.target, on_event=events.append) as conn:
                assert conn.server_info == {"name": "scripted", "version": "1"}
                assert conn.instructions == "be brief"
                tools = await conn.request("tools/list")
                assert [tool["name"] for tool in tools["tools"]] == ["echo"]
                with pytest.raises(RequestError) as info:
                    await conn.request("tools/call", {"name": "echo", "arguments": {"text": "hi"}})
                assert (info.value.code, info.value.data) == (-32602, {"why": "testing"})
                await _until(events, Disconnected)  # the script dropped the connection
            assert Disconnected(1, "eof") in events
            with pytest.raises(TransportError):  # refused, each mode in its own way
                async with Connection(server.target):
                    pytest.fail("connected")
            async with Connection(server.target) as conn:
                assert conn.protocol_version == "2025-03-26"
                assert await conn.request("tools/list") == {"tools": []}
            await server.wait_done()
    assert [e for e in events if isinstance(e, (ServerNotification, ListChanged))] == [
        ListChanged("tools")
    ]
    record = server.record
    assert (record.connections, record.refused) == (2, 1)
    assert record.answers() == [{"jsonrpc": "2.0", "id": None, "result": {}}]
    assert b'{"jsonrpc":"2.0","id":null,"result":{}}' in record.lines(connection=1)
    record.assert_sent("tools/call", {"name": "echo", "arguments": {"text": "hi"}}, connection=1)
    record.assert_not_sent("tools/call", connection=2)
    # A memory target is the embedder's own factory: no era is remembered for it, so
    # the second connection is asked server/discover again; the others open with what
    # worked the first time.
    asked_again = ["server/discover"] if mode == "memory" else []
    assert [m.get("method") for m in record.messages(connection=2)] == [
        *asked_again,
        "initialize",
        "notifications/initialized",
        "tools/list",
    ]
    list_id = 3 if mode == "memory" else 2
    assert record.lines(connection=2)[-1] == b'{"jsonrpc":"2.0","id":%d,"method":"tools/list"}' % (
        list_id
    )


# How an abrupt end looks to the host: a socket reset and a broken memory stream fail
# its read; a killed process's pipe simply ends.
CRASH_SEEN_AS = {"memory": "read-failed", "tcp": "read-failed", "stdio": "eof"}


@pytest.mark.parametrize("mode", MODES)
async def test_crash_fails_the_pending_request(mode: Mode) -> None:
    events: list[Event] = []
    script = Script(timeout=5).handshake().expect("tools/list").crash()
    with trio.fail_after(20), capture_logs() as logs:
        async with serve(script, mode) as server:
            async with Connection(server.target, on_event=events.append) as conn:
                with pytest.raises(ConnectionClosed) as info:
                    await conn.request("tools/list")
                assert info.value.outcome_unknown
            await server.wait_done()
    assert Disconnected(1, CRASH_SEEN_AS[mode]) in events
    if mode == "stdio":
        closed = [log for log in logs if log["event"] == "stdio server closed"]
        assert closed[0]["returncode"] == -9  # it killed itself with SIGKILL


@pytest.mark.parametrize("mode", MODES)
async def test_a_failure_surfaces_in_every_mode(mode: Mode) -> None:
    # tools/list is left unanswered, so that the host sees the failed server go.
    script = Script(timeout=0.5).handshake().ignore_unplanned().expect("tools/call").reply({})
    with trio.fail_after(10):
        async with serve(script, mode) as server, Connection(server.target) as conn:
            with pytest.raises(ConnectionClosed):  # the failed server went away
                await conn.request("tools/list")
            with pytest.raises(ScriptFailed) as info:
                await server.wait_done()
    assert str(info.value) == (
        "scripted server, step 3 expect('tools/call') on connection 1: no matching message "
        "came within 0.5 s; the host sent instead: request 'tools/list' (id 3)"
    )


@pytest.mark.parametrize("mode", MODES)
async def test_wait_done_when_the_host_never_comes(mode: Mode) -> None:
    with trio.fail_after(10):
        async with serve(Script(timeout=0.2).notify("x"), mode) as server:
            with pytest.raises(ScriptFailed) as info:
                await server.wait_done()
    assert str(info.value).startswith("scripted server, step 1 notify('x'): the host ")
    assert "within 0.2 s" in str(info.value)
