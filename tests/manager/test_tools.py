"""The catalogue's tools: names across servers, collisions, pagination, servers that
are down, and call_tool's routing (memory mode, autojump clock)."""

from __future__ import annotations

import pytest
import trio

from mcpl_host import CallToolResult, ProtocolError, RequestError, TextContent, VersionError
from mcpl_host.manager import ConnectionManager, ServerUnavailable, UnknownTool
from mcpl_host.testing import Script, serve

from .helpers import POLICY, speaking_an_old_revision, text, tool

TOOLS = {"tools": {}}


async def test_tools_of_every_server_under_unambiguous_names(
    autojump_clock: trio.abc.Clock,
) -> None:
    alpha = (
        Script()
        .handshake(capabilities=TOOLS)
        .expect("tools/list")
        .reply({"tools": [tool("echo"), tool("add")]})
        .expect("tools/call", {"name": "echo", "arguments": {"text": "from alpha"}})
        .reply(text("alpha says hi"))
        .expect_close()
    )
    beta = (  # two pages, and the same tool name as alpha's
        Script()
        .handshake(capabilities=TOOLS)
        .expect("tools/list")
        .reply({"tools": [tool("echo")], "nextCursor": "page-2"})
        .expect("tools/list", {"cursor": "page-2"})
        .reply({"tools": [tool("sum", annotations={"readOnlyHint": True})]})
        .expect("tools/call", {"name": "sum", "arguments": {"a": 1}})
        .reply_error(-32602, "b is missing")
        .expect_close()
    )
    # A tool name holding the separator: the first separator ends the server's name.
    x = (
        Script()
        .handshake(capabilities=TOOLS)
        .expect("tools/list")
        .reply({"tools": [tool("y__z")]})
        .expect("tools/call", {"name": "y__z"})
        .reply(text("y__z of x"))
        .expect_close()
    )
    with trio.fail_after(60):
        async with (
            serve(alpha) as a,
            serve(beta) as b,
            serve(x) as xs,
            serve(speaking_an_old_revision()) as old,
        ):
            servers = {
                "alpha": a.target,
                "beta": b.target,
                "old": old.target,
                "x": xs.target,
            }
            async with ConnectionManager(
                servers, reconnect=POLICY, versions=["2025-11-25"]
            ) as manager:
                await manager.wait_ready()
                listing = await manager.list_tools()
                assert listing.names() == [
                    "alpha__echo",
                    "alpha__add",
                    "beta__echo",
                    "beta__sum",
                    "x__y__z",
                ]
                assert [(e.server, e.tool.name) for e in listing.entries] == [
                    ("alpha", "echo"),
                    ("alpha", "add"),
                    ("beta", "echo"),
                    ("beta", "sum"),
                    ("x", "y__z"),
                ]
                summing = listing.entries[3].tool
                assert summing.annotations is not None
                assert summing.annotations.read_only_hint is True
                assert listing.get("beta__sum") == listing.entries[3]
                # The server that is down is reported, not raised.
                assert list(listing.errors) == ["old"]
                assert isinstance(listing.errors["old"], ServerUnavailable)
                assert isinstance(listing.errors["old"].__cause__, VersionError)

                result = await manager.call_tool("alpha__echo", {"text": "from alpha"})
                assert isinstance(result, CallToolResult)
                assert result.content == [TextContent(text="alpha says hi")]
                with pytest.raises(RequestError) as refused:
                    await manager.call_tool("beta__sum", {"a": 1})
                assert refused.value.code == -32602
                z = await manager.call_tool("x__y__z")
                assert z.content == [TextContent(text="y__z of x")]
            for server in (a, b, xs):
                await server.wait_done()
    first_page, second_page = b.record.requests("tools/list")
    assert "params" not in first_page
    assert second_page["params"] == {"cursor": "page-2"}
    # Each server saw only its own tool's original name.
    a.record.assert_sent("tools/call", {"name": "echo", "arguments": {"text": "from alpha"}})


async def test_an_unknown_name_is_looked_up_once_more_then_refused(
    autojump_clock: trio.abc.Clock,
) -> None:
    script = (
        Script()
        .handshake(capabilities=TOOLS)
        .expect("tools/list")
        .reply({"tools": [tool("echo")]})
        .expect("tools/list")  # call_tool's fresh look, before giving up
        .reply({"tools": [tool("echo")]})
        .expect("tools/list")  # a tool that appeared since the last listing
        .reply({"tools": [tool("echo"), tool("new")]})
        .expect("tools/call", {"name": "new", "arguments": {}})
        .reply(text("new"))
        .expect_close()
    )
    with trio.fail_after(60):
        async with serve(script) as server:
            async with ConnectionManager({"s": server.target}) as manager:
                await manager.wait_ready()
                assert (await manager.list_tools()).names() == ["s__echo"]
                with pytest.raises(UnknownTool) as unknown:
                    await manager.call_tool("s__nope", {})
                assert unknown.value.name == "s__nope"
                new = await manager.call_tool("s__new", {})
                assert new.content == [TextContent(text="new")]
            await server.wait_done()


async def test_pagination_never_loops_and_keeps_what_it_read(
    autojump_clock: trio.abc.Clock,
) -> None:
    looping = (
        Script()
        .handshake(capabilities=TOOLS)
        .expect("tools/list")
        .reply({"tools": [tool("one")], "nextCursor": "again"})
        .expect("tools/list", {"cursor": "again"})
        .reply({"tools": [tool("two"), tool("one"), {"no": "name"}], "nextCursor": "again"})
        .expect_close()
    )
    broken = (
        Script()
        .handshake(capabilities=TOOLS)
        .expect("tools/list")
        .reply({"items": []})
        .expect_close()
    )
    erroring = (
        Script()
        .handshake(capabilities=TOOLS)
        .expect("tools/list")
        .reply_error(-32601, "no tools")
        .expect_close()
    )
    with trio.fail_after(60):
        async with serve(looping) as loop, serve(broken) as bad, serve(erroring) as err:
            servers = {"loop": loop.target, "bad": bad.target, "err": err.target}
            async with ConnectionManager(servers) as manager:
                await manager.wait_ready()
                listing = await manager.list_tools()
            for server in (loop, bad, err):
                await server.wait_done()
    # Both pages were read, the repeated cursor was not followed, and a list that would
    # loop gives no tools at all rather than a partial list.
    assert listing.names() == []
    assert len(loop.record.requests("tools/list")) == 2
    assert isinstance(listing.errors["loop"], ProtocolError)
    assert "repeats the cursor" in str(listing.errors["loop"])
    assert isinstance(listing.errors["bad"], ProtocolError)
    assert isinstance(listing.errors["err"], RequestError)
    assert list(listing.errors) == ["loop", "bad", "err"]
