"""Interop on 2026-07-28 with the official Python SDK's server (mcp==2.3.0, stdio and
Streamable HTTP): the host's subscriptions/listen is acknowledged by a real server, and a
tool list change it publishes reaches the embedder as ListChanged, with the cached list
dropped; over HTTP, re-issuing the listen closes the old one's response stream."""

from __future__ import annotations

import contextlib

import pytest
import trio

from mcpl_host import Connection, Event, HttpTarget, ListChanged

from .servers import sdk_server, sdk_server_http


@pytest.mark.parametrize("http", [False, True], ids=["stdio", "http"])
async def test_a_list_change_arrives_on_the_listen(http: bool) -> None:
    events: list[Event] = []
    with contextlib.ExitStack() as stack, trio.fail_after(30):
        target = HttpTarget(stack.enter_context(sdk_server_http())) if http else sdk_server()
        async with Connection(target, name="sdk", on_event=events.append) as conn:
            assert conn.protocol_version == "2026-07-28"
            while conn.acknowledged_subscriptions is None:
                await trio.sleep(0.01)
            assert conn.acknowledged_subscriptions.tools_list_changed
            before = [tool.name for tool in await conn.list_tools()]
            assert "extra_tool" not in before
            await conn.call_tool("add_extra_tool")
            while ListChanged("tools") not in events:
                await trio.sleep(0.01)
            after = [tool.name for tool in await conn.list_tools()]
            assert after == [*before, "extra_tool"]
            # A subscription re-issues the listen; the old one is cancelled (over HTTP
            # its stream closed) and the new one acknowledged by the server.
            assert await conn.subscribe_resource("resource://static/greeting") is True
            acknowledged = conn.acknowledged_subscriptions
            assert acknowledged is not None
            assert acknowledged.resources == ("resource://static/greeting",)
    # Exactly one: the session's own notification (on the call's stream, naming no
    # subscription) is dropped; the listen's is delivered.
    assert [e for e in events if isinstance(e, ListChanged)] == [ListChanged("tools")]
