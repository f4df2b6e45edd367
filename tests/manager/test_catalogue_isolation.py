"""Review of issue 22's catalogue: one server's trouble must not reach calls by name to
the others, and a reconnecting server keeps its names for calls (docs/manager.md,
"Keeping current")."""

from __future__ import annotations

import pytest
import trio

from mcpl_host import McplHostError, RequestError
from mcpl_host.manager import ConnectionManager, UnknownName
from mcpl_host.testing import Script, serve

from .helpers import POLICY, text, tool, wait_for
from .test_catalogue import ListChanges


async def test_a_server_hanging_its_tools_list_does_not_hold_up_calls_to_another(
    autojump_clock: trio.abc.Clock,
) -> None:
    # "slow" answers its first tools/list, then says its list changed and never answers
    # the next one. A call by name to "good"'s tool must not wait for "slow".
    good = (
        Script(timeout=600)
        .handshake(capabilities={"tools": {}})
        .expect("tools/list")
        .reply({"tools": [tool("echo")]})
        .expect("tools/call", {"name": "echo"})
        .reply(text("good"))
        .expect_close()
    )
    slow = (
        Script()
        .handshake(capabilities={"tools": {"listChanged": True}})
        .expect("tools/list")
        .reply({"tools": [tool("other")]})
        .notify("notifications/tools/list_changed")
        .ignore_unplanned()
        .wait(600)
    )
    changes = ListChanges()
    with trio.fail_after(900):
        async with (
            serve(good) as g,
            serve(slow) as s,
            ConnectionManager({"good": g.target, "slow": s.target}, on_event=changes) as manager,
        ):
            await manager.wait_ready()
            assert (await manager.list_tools()).names() == ["good__echo", "slow__other"]
            await changes.wait()
            began = trio.current_time()
            result = await manager.call_tool("good__echo")
            waited = trio.current_time() - began
            assert result.text == "good"
            # Bug: the call rebuilt the whole tools listing first and waited for
            # slow's tools/list until the request timeout (60 s).
            assert waited < 1.0, f"a call to good waited {waited:.0f} s for slow"


async def test_a_listing_made_while_a_server_reconnects_keeps_its_names_for_calls(
    autojump_clock: trio.abc.Clock,
) -> None:
    # As test_catalogue's reconnect test, but someone lists (a UI refreshing, another
    # task) while the server reconnects: a call by its name must still wait for the new
    # transport, as docs/manager.md says ("a server that is reconnecting keeps its names
    # meanwhile: a call by one waits for the new transport").
    script = (
        Script()
        .handshake(capabilities={"tools": {}})
        .expect("tools/list")
        .reply({"tools": [tool("echo")]})
        .drop()
        .refuse_connections(1)  # the first attempt fails: a second of backoff to call in
        .handshake(capabilities={"tools": {}})
        .expect("tools/call", {"name": "echo"})
        .reply(text("after the reconnect"))
        .expect("tools/list")
        .reply({"tools": [tool("echo")]})
        .expect_close()
    )
    with trio.fail_after(60):
        async with serve(script) as server:
            async with ConnectionManager({"s": server.target}, reconnect=POLICY) as manager:
                await manager.wait_ready()
                assert (await manager.list_tools()).names() == ["s__echo"]
                await wait_for(manager, "s", "reconnecting", failures=1)
                assert (await manager.list_tools()).names() == []  # skipped meanwhile
                # Bug: raises ServerUnavailable("the server is reconnecting").
                result = await manager.call_tool("s__echo")
                assert result.text == "after the reconnect"
            await server.wait_done()


async def test_a_name_whose_servers_list_cannot_be_read_is_not_called_unknown(
    autojump_clock: trio.abc.Clock,
) -> None:
    # After list_changed the server fails tools/list (an error answer): the catalogue
    # cannot know whether s__echo still exists. UnknownTool says "no such tool" (an
    # agent drops it from its model's tools); the caller must get the read's error.
    script = (
        Script()
        .handshake(capabilities={"tools": {"listChanged": True}})
        .expect("tools/list")
        .reply({"tools": [tool("echo")]})
        .notify("notifications/tools/list_changed")
        .expect("tools/list")
        .reply_error(-32603, "the index is rebuilding")
        .expect_close()
    )
    changes = ListChanges()
    with trio.fail_after(60):
        async with serve(script) as server:
            async with ConnectionManager({"s": server.target}, on_event=changes) as manager:
                await manager.wait_ready()
                assert (await manager.list_tools()).names() == ["s__echo"]
                await changes.wait()
                with pytest.raises(McplHostError) as raised:
                    await manager.call_tool("s__echo")
                assert not isinstance(raised.value, UnknownName), repr(raised.value)
                assert isinstance(raised.value, RequestError)
                assert (raised.value.code, raised.value.error_message) == (
                    -32603,
                    "the index is rebuilding",
                )
            await server.wait_done()


async def test_a_call_waiting_for_another_callers_rebuild_keeps_its_own_timeout(
    autojump_clock: trio.abc.Clock,
) -> None:
    # docs/manager.md: a call's timeout "bounds each page of" the listing it needs. A
    # call with timeout=1 that finds another call rebuilding the listing (with the
    # default 60 s per page) must not wait 60 s behind it.
    script = (
        Script(timeout=600)
        .handshake(capabilities={"tools": {"listChanged": True}})
        .expect("tools/list")
        .reply({"tools": [tool("a"), tool("b")]})
        .notify("notifications/tools/list_changed")
        .ignore_unplanned()  # the next tools/list is never answered
        .wait(600)
    )
    changes = ListChanges()
    with trio.fail_after(900):
        async with (
            serve(script) as server,
            ConnectionManager({"s": server.target}, on_event=changes) as manager,
        ):
            await manager.wait_ready()
            assert (await manager.list_tools()).names() == ["s__a", "s__b"]
            await changes.wait()
            ended: dict[str, float] = {}

            async def call(name: str, timeout: float | None) -> None:
                began = trio.current_time()
                with pytest.raises(McplHostError):
                    await manager.call_tool(name, timeout=timeout)
                ended[name] = trio.current_time() - began

            async with trio.open_nursery() as nursery:
                nursery.start_soon(call, "s__a", None)
                await trio.sleep(0.1)
                nursery.start_soon(call, "s__b", 1.0)
            # Bug: s__b waited ~60 s for the lock s__a held while reading.
            assert ended["s__b"] < 5.0, ended
