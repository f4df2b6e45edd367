"""The catalogue over scripted servers (memory mode, autojump clock): every kind named
by one rule, collisions per kind, capabilities, list_changed, filters and what reaches
the wire, calls by name, and bounded memory under a server that changes its list
forever."""

from __future__ import annotations

import gc
import tracemalloc
from typing import Any

import pytest
import trio
from structlog.testing import capture_logs

from mcpl_host import (
    CallToolResult,
    ConfigurationError,
    GetPromptResult,
    ListChanged,
    ReadResourceResult,
    TextContent,
    VersionError,
)
from mcpl_host.events import Event
from mcpl_host.manager import (
    CatalogueFilter,
    ConnectionManager,
    ServerUnavailable,
    UnknownName,
    UnknownPrompt,
    UnknownResource,
    UnknownTool,
)
from mcpl_host.testing import Script, serve
from mcpl_host.transports.memory import memory_transport_pair

from ..driver.peer import Peer
from .helpers import POLICY, speaking_an_old_revision, text, tool, wait_for

ALL = {"tools": {}, "resources": {}, "prompts": {}}


def resource(uri: str) -> dict[str, Any]:
    return {"uri": uri, "name": uri.rsplit("/", 1)[-1]}


def prompt(name: str) -> dict[str, Any]:
    return {"name": name}


def contents(uri: str, value: str) -> dict[str, Any]:
    return {"contents": [{"uri": uri, "text": value}]}


def messages(value: str) -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": {"type": "text", "text": value}}]}


class ListChanges:
    """on_event: a trio.Event set at each server's next ListChanged."""

    def __init__(self) -> None:
        self.seen = trio.Event()

    def __call__(self, _server: str, event: Event) -> None:
        if isinstance(event, ListChanged):
            self.seen.set()

    async def wait(self) -> None:
        await self.seen.wait()
        self.seen = trio.Event()


async def test_every_kind_by_one_rule(autojump_clock: trio.abc.Clock) -> None:  # noqa: PLR0915
    # Server "a"'s prompt "b__c" is "a__b__c"; server "b"'s prompt "c" is "b__c". A
    # server named "a__b" would make "a__b__c" ambiguous: it is refused, alone.
    a = (
        Script()
        .handshake(capabilities=ALL)
        .expect_all("tools/list", "resources/list", "resources/templates/list", "prompts/list")
        .reply({"tools": [tool("b__c")]}, to="tools/list")
        .reply({"resources": [resource("file:///x.txt")]}, to="resources/list")
        .reply(
            {"resourceTemplates": [{"uriTemplate": "file:///{path}", "name": "files"}]},
            to="resources/templates/list",
        )
        .reply({"prompts": [prompt("b__c"), prompt("hello")]}, to="prompts/list")
        .expect("prompts/get", {"name": "b__c", "arguments": {"who": "me"}})
        .reply(messages("a's b__c"))
        .expect("resources/read", {"uri": "file:///x.txt"})
        .reply(contents("file:///x.txt", "x"))
        .expect("resources/read", {"uri": "file:///y/z.txt"})  # a template's expansion
        .reply(contents("file:///y/z.txt", "z"))
        .expect("tools/call", {"name": "b__c"})
        .reply(text("a's tool"))
        # The misses below: each reads its own list once more, past the cache.
        .expect("prompts/list")
        .reply({"prompts": [prompt("b__c"), prompt("hello")]})
        .expect("resources/list")
        .reply({"resources": [resource("file:///x.txt")]})
        .expect_close()
    )
    b = (
        Script()
        .handshake(capabilities={"prompts": {}})  # no tools, no resources: no error either
        .expect("prompts/list")
        .reply({"prompts": [prompt("c")]})
        .expect("prompts/get", {"name": "c"})
        .reply(messages("b's c"))
        .expect_close()
    )
    with trio.fail_after(60):
        async with (
            serve(a) as sa,
            serve(b) as sb,
            serve(speaking_an_old_revision()) as old,
        ):
            servers = {
                "a": sa.target,
                "b": sb.target,
                "old": old.target,
                "a__b": "tcp://127.0.0.1:9",  # never tried
            }
            async with ConnectionManager(
                servers, reconnect=POLICY, versions=["2025-11-25"]
            ) as manager:
                await manager.wait_ready()
                refused = manager.status()["a__b"]
                assert (refused.state, refused.retrying) == ("failed", False)
                assert isinstance(refused.error, ConfigurationError)
                assert "separator" in refused.error.message
                catalogue = await manager.catalogue()
                assert catalogue.tools.names() == ["a__b__c"]
                assert catalogue.resources.names() == ["a__file:///x.txt"]
                assert catalogue.resource_templates.names() == ["a__file:///{path}"]
                assert catalogue.prompts.names() == ["a__b__c", "a__hello", "b__c"]
                for listing in (
                    catalogue.tools,
                    catalogue.resources,
                    catalogue.resource_templates,
                    catalogue.prompts,
                ):
                    # b lacks tools and resources: nothing from it, and no error.
                    assert list(listing.errors) == ["old", "a__b"]
                    assert isinstance(listing.errors["old"], ServerUnavailable)
                    assert isinstance(listing.errors["old"].__cause__, VersionError)
                entry = catalogue.prompts.get("b__c")
                assert entry is not None
                assert (entry.server, entry.prompt.name) == ("b", "c")
                template = catalogue.resource_templates.entries[0].template
                assert template.uri_template == "file:///{path}"

                got = await manager.get_prompt("a__b__c", {"who": "me"})
                assert isinstance(got, GetPromptResult)
                assert got.messages[0].content == TextContent(text="a's b__c")
                other = await manager.get_prompt("b__c")
                assert other.messages[0].content == TextContent(text="b's c")
                read = await manager.read_resource("a__file:///x.txt")
                assert isinstance(read, ReadResourceResult)
                assert read.contents[0].text == "x"
                expanded = await manager.read_resource("file:///y/z.txt", server="a")
                assert expanded.contents[0].text == "z"
                called = await manager.call_tool("a__b__c")
                assert isinstance(called, CallToolResult)
                assert called.text == "a's tool"

                # Unknown names, each of its kind; a server that is down is said to be.
                with pytest.raises(UnknownPrompt) as unknown:
                    await manager.get_prompt("a__nothing")
                assert (unknown.value.kind, unknown.value.name) == ("prompt", "a__nothing")
                with pytest.raises(UnknownResource):
                    await manager.read_resource("a__file:///{path}")  # a template's name
                with pytest.raises(UnknownTool):
                    await manager.call_tool("nobody__echo")
                with pytest.raises(UnknownTool):
                    await manager.call_tool("b__c")  # b declares no tools: nothing sent
                with pytest.raises(ServerUnavailable) as down:
                    await manager.call_tool("old__echo")
                assert down.value.state == "failed"
            for server in (sa, sb):
                await server.wait_done()
    assert issubclass(UnknownTool, UnknownName)
    assert issubclass(UnknownPrompt, UnknownName)
    assert issubclass(UnknownResource, UnknownName)
    # Each miss re-read its own server's list once (a's prompts and resources), nothing
    # else: b's tools were never asked for.
    assert len(sa.record.requests("prompts/list")) == 2
    assert len(sa.record.requests("resources/list")) == 2
    assert sb.record.requests("tools/list") == []


async def test_after_list_changed_the_next_listing_is_new_and_an_old_name_unknown(
    autojump_clock: trio.abc.Clock,
) -> None:
    script = (
        Script()
        .handshake(capabilities={"tools": {"listChanged": True}})
        .expect("tools/list")
        .reply({"tools": [tool("old")]})
        .expect("tools/call", {"name": "old"})
        .reply(text("old"))
        .expect("tools/call", {"name": "old"})  # routed from the kept listing: no re-read
        .reply(text("old again"))
        .notify("notifications/tools/list_changed")
        .expect("tools/list")  # the first call after the change reads the list again, once
        .reply({"tools": [tool("new")]})
        .expect("tools/call", {"name": "new"})
        .reply(text("new"))
        .expect_close()
    )
    changes = ListChanges()
    with trio.fail_after(60):
        async with serve(script) as server:
            async with ConnectionManager({"s": server.target}, on_event=changes) as manager:
                await manager.wait_ready()
                assert (await manager.list_tools()).names() == ["s__old"]
                assert (await manager.call_tool("s__old")).text == "old"
                assert (await manager.call_tool("s__old")).text == "old again"
                await changes.wait()  # the embedder's signal: ListChanged(kind="tools")
                with pytest.raises(UnknownTool):
                    await manager.call_tool("s__old")
                assert (await manager.list_tools()).names() == ["s__new"]  # from the cache
                assert (await manager.call_tool("s__new")).text == "new"
            await server.wait_done()
    assert len(server.record.requests("tools/list")) == 2


async def test_filters_from_the_api_and_nothing_excluded_reaches_the_wire(
    autojump_clock: trio.abc.Clock,
) -> None:
    script = (
        Script()
        .handshake(capabilities=ALL)
        .expect_all("tools/list", "resources/list", "resources/templates/list", "prompts/list")
        .reply(
            {"tools": [tool("echo"), tool("echo_secret"), tool("drop_table"), tool("edit")]},
            to="tools/list",
        )
        .reply(
            {"resources": [resource("file:///pub/a"), resource("file:///etc/passwd")]},
            to="resources/list",
        )
        .reply(
            {
                "resourceTemplates": [
                    {"uriTemplate": "file:///pub/{name}", "name": "pub"},
                    {"uriTemplate": "file:///home/{name}", "name": "home"},
                ]
            },
            to="resources/templates/list",
        )
        .reply({"prompts": [prompt("greet")]}, to="prompts/list")
        .expect("tools/call", {"name": "echo"})
        .reply(text("echoed"))
        .expect("resources/read", {"uri": "file:///pub/b"})
        .reply(contents("file:///pub/b", "b"))
        .expect_close()
    )
    only = CatalogueFilter(
        include_tools=["e*"],
        exclude_tools=["*secret*"],
        include_resources=["file:///pub/*"],
        exclude_prompts=["*"],
    )
    with trio.fail_after(60):
        async with serve(script) as server:
            async with ConnectionManager({"s": server.target}, filters={"s": only}) as manager:
                await manager.wait_ready()
                catalogue = await manager.catalogue()
                assert catalogue.tools.names() == ["s__echo", "s__edit"]  # exclude wins
                assert catalogue.resources.names() == ["s__file:///pub/a"]
                assert catalogue.resource_templates.names() == ["s__file:///pub/{name}"]
                assert catalogue.prompts.names() == []
                assert catalogue.prompts.errors == {}
                assert (await manager.call_tool("s__echo")).text == "echoed"
                sent = len(server.record.lines())

                with pytest.raises(UnknownTool):
                    await manager.call_tool("s__echo_secret", {"x": 1})
                with pytest.raises(UnknownTool):
                    await manager.call_tool("s__drop_table")
                with pytest.raises(UnknownPrompt):
                    await manager.get_prompt("s__greet")
                with pytest.raises(UnknownResource) as refused:
                    await manager.read_resource("file:///etc/passwd", server="s")
                assert refused.value.server == "s"
                with pytest.raises(UnknownResource):
                    await manager.read_resource("file:///home/me", server="s")
                # Not a byte was written for any of them: no call, no fresh listing.
                assert len(server.record.lines()) == sent
                readable = await manager.read_resource("file:///pub/b", server="s")
                assert readable.contents[0].text == "b"
                # The connection stays the raw, unfiltered way.
                assert len(await manager.connection("s").list_tools()) == 4
            await server.wait_done()
    assert [r["params"] for r in server.record.requests("tools/call")] == [{"name": "echo"}]


def test_what_the_filters_refuse() -> None:
    with pytest.raises(ConfigurationError, match="'nobody'"):
        ConnectionManager({"s": "tcp://127.0.0.1:1"}, filters={"nobody": CatalogueFilter()})
    with pytest.raises(TypeError, match="CatalogueFilter"):
        ConnectionManager({"s": "tcp://127.0.0.1:1"}, filters={"s": ["echo"]})  # type: ignore[dict-item]
    with pytest.raises(TypeError, match="include_tools"):
        CatalogueFilter(include_tools="echo")
    # No include list means all; an empty one none; exclude wins.
    assert CatalogueFilter().admits("tools", "anything")
    assert not CatalogueFilter(include_prompts=[]).admits("prompts", "greet")
    both = CatalogueFilter(include_tools=["*"], exclude_tools=["rm*"])
    assert both.admits("tools", "ls")
    assert not both.admits("tools", "rm_rf")
    assert CatalogueFilter(include_resources=["file:*"]).admits("resource_templates", "file:///{p}")


async def test_a_server_changing_its_list_forever_costs_no_memory_per_call(
    autojump_clock: trio.abc.Clock,
) -> None:
    rounds, tools_per_list = 80, 30
    script = Script().handshake(capabilities={"tools": {"listChanged": True}})
    for n in range(rounds):
        # A new list of new names each time, and list_changed after every call.
        script.expect("tools/list").reply(
            {"tools": [tool(f"t{n}_{i}" + "x" * 40) for i in range(tools_per_list)]}
        )
        script.expect("tools/call").reply(text(str(n)))
        script.notify("notifications/tools/list_changed")
    script.expect_close()
    changes = ListChanges()
    sizes: list[int] = []
    with trio.fail_after(120):
        async with serve(script) as server:
            async with ConnectionManager({"s": server.target}, on_event=changes) as manager:
                await manager.wait_ready()
                tracemalloc.start()
                try:
                    for n in range(rounds):
                        result = await manager.call_tool(f"s__t{n}_0" + "x" * 40)
                        assert result.text == str(n)
                        await changes.wait()
                        if n in (20, rounds - 1):
                            gc.collect()
                            snapshot = tracemalloc.take_snapshot().filter_traces(
                                [tracemalloc.Filter(True, "*mcpl_host/manager/*")]
                            )
                            sizes.append(sum(s.size for s in snapshot.statistics("filename")))
                finally:
                    tracemalloc.stop()
            await server.wait_done()
    # One list's worth is kept (30 entries), whatever the number of calls: one entry
    # kept per round would be 60 x 30 of them, over 100 KB.
    assert sizes[1] - sizes[0] < 2_000, sizes


async def test_a_call_by_name_while_its_server_reconnects_waits_for_the_new_transport(
    autojump_clock: trio.abc.Clock,
) -> None:
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
        .expect("tools/list")  # the new transport dropped the list: read to check the result
        .reply({"tools": [tool("echo")]})
        .expect_close()
    )
    with trio.fail_after(60):
        async with serve(script) as server:
            async with ConnectionManager({"s": server.target}, reconnect=POLICY) as manager:
                await manager.wait_ready()
                assert (await manager.list_tools()).names() == ["s__echo"]
                await wait_for(manager, "s", "reconnecting", failures=1)
                result = await manager.call_tool("s__echo")
                assert result.text == "after the reconnect"
                # While it reconnects a listing skips it; once back, it is listed again.
                assert (await manager.list_tools()).names() == ["s__echo"]
            await server.wait_done()


RED = "a://y\x1b[31m"


async def test_a_key_listed_twice_is_kept_once_with_a_warning(
    autojump_clock: trio.abc.Clock,
) -> None:
    script = (
        Script()
        .handshake(capabilities={"resources": {}})
        .expect("resources/list")
        .reply({"resources": [resource("a://x"), resource(RED), resource(RED)]})
        .expect("resources/templates/list")
        .reply_error(-32601, "no templates")
        .expect_close()
    )
    with trio.fail_after(60):
        async with serve(script) as server:
            async with ConnectionManager({"s": server.target}) as manager:
                await manager.wait_ready()
                with capture_logs() as logs:
                    resources = await manager.list_resources()
                    templates = await manager.list_resource_templates()
            await server.wait_done()
    assert resources.names() == ["s__a://x", f"s__{RED}"]
    assert resources.errors == {}
    # -32601 for templates: a server with resources but no templates, not an error.
    assert (templates.names(), templates.errors) == ([], {})
    (warning,) = [e for e in logs if e["event"] == "catalogue item left out"]
    assert "\x1b" not in warning["key"]  # the server's text, escaped
    assert warning["key"].startswith("a://y")
    assert warning["reason"] == "listed twice"


async def test_a_list_read_under_way_when_it_changed_is_not_indexed_as_the_new_one(
    autojump_clock: trio.abc.Clock,
) -> None:
    # Call A's tools/list is under way when the server says the list changed; a listing
    # B then reads the new list (kept: the connection's list version becomes v) before
    # A's answer comes. A's answer is not kept by the cache (its generation is old), but
    # the manager indexes it under the connection's version of now, v: B's list is what
    # the cache holds, A's stale index is taken for it, and a tool the server removed
    # is still found, and called, by name.
    transport, stream = memory_transport_pair()
    peer = Peer(stream)

    async def opener() -> Any:
        return transport

    changes = ListChanges()
    calls: list[str] = []

    async def answer_call(request: dict[str, Any]) -> None:
        assert request["method"] == "tools/call", request
        calls.append(request["params"]["name"])
        await peer.answer(request, text("ok"))

    async def serve_the_rest() -> None:
        while True:
            request = await peer.recv()
            if request.get("method") == "tools/list":
                await peer.answer(request, {"tools": [tool("new")]})
            elif request.get("method") == "tools/call":
                await answer_call(request)

    with trio.fail_after(60):
        async with ConnectionManager({"s": opener}, on_event=changes) as manager:
            await peer.handshake()
            await manager.wait_ready()
            async with trio.open_nursery() as nursery:
                nursery.start_soon(manager.call_tool, "s__old")  # A
                first = await peer.expect("tools/list")
                await peer.send({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
                await changes.wait()
                nursery.start_soon(manager.list_tools)  # B
                second = await peer.expect("tools/list")
                await peer.answer(second, {"tools": [tool("new")]})
                await trio.sleep(1)  # B's listing done, its list kept
                await peer.answer(first, {"tools": [tool("old"), tool("new")]})
                await answer_call(await peer.recv())  # A's call, by the list it read
            listing = await manager.list_tools()
            assert [entry.name for entry in listing.entries] == ["s__new"]
            async with trio.open_nursery() as nursery:
                nursery.start_soon(serve_the_rest)
                # The cached list is B's, without "old": the name is unknown.
                with pytest.raises(UnknownTool):
                    await manager.call_tool("s__old")
                assert calls == ["old"], "a tool no longer listed was called by name"
                nursery.cancel_scope.cancel()


async def test_calls_by_name_on_a_stateless_server_do_not_list_before_each_call(
    autojump_clock: trio.abc.Clock,
) -> None:
    # docs/manager.md: a call by name looks its key up "through its connection's cache,
    # so no request per call". A 2026-07-28 list without ttlMs (and no listen covering
    # it) is never reused by the cache, so every call by name lists the tools again
    # first (every page of them): two requests per call, where the last listing (the
    # one the name came from) would do until the list is known to have changed.
    transport, stream = memory_transport_pair()
    peer = Peer(stream)

    async def opener() -> Any:
        return transport

    methods: list[str] = []

    async def serve_tools() -> None:
        await peer.discover()
        while True:
            try:
                request = await peer.recv()
            except EOFError:  # the manager closed
                return
            methods.append(request.get("method", ""))
            if request.get("method") == "tools/list":
                await peer.answer(request, {"resultType": "complete", "tools": [tool("echo")]})
            elif request.get("method") == "tools/call":
                await peer.answer(request, {"resultType": "complete", **text("ok")})

    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(serve_tools)
            async with ConnectionManager({"s": opener}) as manager:
                await manager.wait_ready()
                for _ in range(3):
                    await manager.call_tool("s__echo")
                    await trio.sleep(1)
            nursery.cancel_scope.cancel()
    assert methods.count("tools/call") == 3
    assert methods.count("tools/list") == 1, methods


async def test_concurrent_calls_by_name_share_one_reading_of_the_list(
    autojump_clock: trio.abc.Clock,
) -> None:
    # After a list_changed (or at start), each of N calls by name that arrive together
    # reads the whole list on its own: N tools/list (every page each, N lists held at
    # once), where one reading per server and kind would serve them all (it would hold
    # up only calls to that same server).
    transport, stream = memory_transport_pair()
    peer = Peer(stream)

    async def opener() -> Any:
        return transport

    methods: list[str] = []

    async def serve_tools() -> None:
        await peer.handshake()
        while True:
            try:
                request = await peer.recv()
            except EOFError:  # the manager closed
                return
            methods.append(request.get("method", ""))
            if request.get("method") == "tools/list":
                await trio.sleep(1)  # a list of many pages takes a while
                await peer.answer(request, {"tools": [tool("echo")]})
            elif request.get("method") == "tools/call":
                await peer.answer(request, text("ok"))

    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(serve_tools)
            async with ConnectionManager({"s": opener}) as manager:
                await manager.wait_ready()
                async with trio.open_nursery() as calls:
                    for _ in range(10):
                        calls.start_soon(manager.call_tool, "s__echo")
            nursery.cancel_scope.cancel()
    assert methods.count("tools/call") == 10
    assert methods.count("tools/list") == 1, methods
