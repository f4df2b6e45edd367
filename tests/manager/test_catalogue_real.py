"""The catalogue end to end, with real servers over stdio: the bundled demo and
@modelcontextprotocol/server-everything in one manager, and filters from a config
file."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import pytest
import trio

from mcpl_host import (
    CallToolResult,
    ConfigurationError,
    Event,
    GetPromptResult,
    ListChanged,
    OutputSchemaError,
    ReadResourceResult,
    StdioTarget,
    TextContent,
    aio,
    sync,
)
from mcpl_host.manager import ConnectionManager, UnknownPrompt, UnknownResource, UnknownTool

from ..interop.servers import everything, sdk_server

DEMO = StdioTarget.of([sys.executable, "-m", "mcpl_host.demo"])
FEATURES = "demo://resource/static/document/features.md"


async def test_the_demo_and_server_everything_as_one_catalogue() -> None:
    with trio.fail_after(30):
        async with ConnectionManager({"demo": DEMO, "everything": everything()}) as manager:
            await manager.wait_ready()
            # server-everything adds a tool after the handshake and says so with
            # tools/list_changed: a later listing shows it, with no call of ours between.
            while "everything__simulate-research-query" not in (await manager.list_tools()).names():
                await trio.sleep(0.02)
            catalogue = await manager.catalogue()
            for listing in (
                catalogue.tools,
                catalogue.resources,
                catalogue.resource_templates,
                catalogue.prompts,
            ):
                assert listing.errors == {}
            tools = catalogue.tools.names()
            assert tools[:2] == ["demo__echo", "demo__add"]
            assert {"everything__echo", "everything__get-sum"} <= set(tools)
            assert catalogue.resources.names()[0] == "demo__demo://readme"
            assert f"everything__{FEATURES}" in catalogue.resources.names()
            assert catalogue.resource_templates.names() == [
                "demo__demo://echo/{text}",
                "everything__demo://resource/dynamic/text/{resourceId}",
                "everything__demo://resource/dynamic/blob/{resourceId}",
            ]
            assert catalogue.prompts.names() == [
                "demo__greet",
                "everything__simple-prompt",
                "everything__args-prompt",
                "everything__completable-prompt",
                "everything__resource-prompt",
            ]
            echo = catalogue.tools.get("everything__echo")
            assert echo is not None
            assert (echo.server, echo.tool.name, echo.tool.title) == (
                "everything",
                "echo",
                "Echo Tool",
            )

            added = await manager.call_tool("demo__add", {"a": 2, "b": 40})
            assert isinstance(added, CallToolResult)
            assert added.structured_content == {"sum": 42}  # checked against its schema
            echoed = await manager.call_tool("everything__echo", {"message": "hi"})
            assert echoed.text == "Echo: hi"

            weather = await manager.get_prompt(
                "everything__args-prompt", {"city": "Austin", "state": "TX"}
            )
            assert isinstance(weather, GetPromptResult)
            assert weather.messages[0].content == TextContent(text="What's weather in Austin, TX?")
            greeting = await manager.get_prompt("demo__greet", {"name": "Ada"})
            assert greeting.messages[0].content == TextContent(text="Please greet Ada.")

            features = await manager.read_resource(f"everything__{FEATURES}")
            assert isinstance(features, ReadResourceResult)
            assert features.contents[0].uri == FEATURES
            # A template's expansion, read on its server.
            text2 = await manager.read_resource(
                "demo://resource/dynamic/text/2", server="everything"
            )
            assert (text2.contents[0].text or "").startswith("Resource 2: This is a plaintext")
            hi = await manager.read_resource("demo://echo/hi", server="demo")
            assert hi.contents[0].text == "hi"

            # The demo's wrong_shape breaks its outputSchema: the caller gets the
            # Connection's OutputSchemaError, with the result; or, unchecked, the result.
            with pytest.raises(OutputSchemaError) as broken:
                await manager.call_tool("demo__wrong_shape")
            assert broken.value.server == "demo"
            assert isinstance(broken.value.result, CallToolResult)
            unchecked = await manager.call_tool("demo__wrong_shape", validate_output=False)
            assert unchecked.structured_content == broken.value.result.structured_content


def _config(tmp_path: Path, **keys: object) -> Path:
    demo = {"command": sys.executable, "args": ["-m", "mcpl_host.demo"]}
    file = tmp_path / "servers.json"
    file.write_text(
        json.dumps(
            {
                "mcpServers": {
                    "demo": {**demo, **keys},
                    "typo": {**demo, "includeTools": "echo"},  # not an array
                }
            }
        )
    )
    return file


async def test_filters_from_a_config_file(tmp_path: Path) -> None:
    config = _config(
        tmp_path,
        includeTools=["add", "echo", "s*"],
        excludeTools=["sleep"],
        includeResources=["demo://echo/*"],
        excludePrompts=["*"],
    )
    with trio.fail_after(30):
        async with ConnectionManager(config) as manager:
            await manager.wait_ready()
            status = manager.status()["typo"]
            assert status.state == "failed"
            assert isinstance(status.error, ConfigurationError)
            assert "includeTools must be an array of strings" in status.error.message

            catalogue = await manager.catalogue()
            assert catalogue.tools.names() == ["demo__echo", "demo__add"]
            assert catalogue.resources.names() == []
            assert catalogue.resource_templates.names() == ["demo__demo://echo/{text}"]
            assert catalogue.prompts.names() == []
            assert (await manager.call_tool("demo__echo", {"text": "x"})).text == "x"
            with pytest.raises(UnknownTool):
                await manager.call_tool("demo__sleep", {"seconds": 0})
            with pytest.raises(UnknownPrompt):
                await manager.get_prompt("demo__greet", {"name": "x"})
            with pytest.raises(UnknownResource):
                await manager.read_resource("demo://readme", server="demo")
            assert (await manager.read_resource("demo://echo/ok", server="demo")).contents
            # The connection is the unfiltered way.
            raw = await manager.connection("demo").list_tools()
            assert "sleep" in [tool.name for tool in raw]


def test_the_catalogue_from_the_asyncio_and_sync_faces() -> None:
    # From asyncio: the demo, server-everything, and a server that never answers
    # initialize, which holds up neither the start nor the others.
    hung = StdioTarget.of([sys.executable, "-c", "import sys; sys.stdin.read()"])

    async def from_asyncio() -> tuple[list[str], str, str]:
        servers = {"demo": DEMO, "everything": everything(), "hung": hung}
        async with aio.ConnectionManager(servers) as manager:
            await manager.wait_ready("demo", "everything", timeout=20)
            catalogue = await manager.catalogue()
            assert "everything__echo" in catalogue.tools.names()
            assert list(catalogue.tools.errors) == ["hung"]
            assert manager.status()["hung"].state == "connecting"
            result = await manager.call_tool("demo__add", {"a": 1, "b": 2})
            assert isinstance(result, CallToolResult)
            # A connection the manager hands out is the asyncio face's too.
            echoed = await manager.connection("everything").call_tool("echo", {"message": "m"})
            return catalogue.prompts.names()[:1], result.text, echoed.text

    assert asyncio.run(asyncio.wait_for(from_asyncio(), 30)) == (
        ["demo__greet"],
        "3",
        "Echo: m",
    )
    with sync.ConnectionManager({"demo": DEMO}) as manager:
        manager.wait_ready()
        assert manager.list_resource_templates().names() == ["demo__demo://echo/{text}"]
        read = manager.read_resource("demo://echo/x", server="demo")
        assert isinstance(read, ReadResourceResult)
        assert read.contents[0].text == "x"
        with pytest.raises(UnknownPrompt):
            manager.get_prompt("demo__nope")


async def test_a_change_published_on_a_2026_07_28_subscription_reaches_the_catalogue() -> None:
    changed = trio.Event()

    def on_event(_server: str, event: Event) -> None:
        if event == ListChanged("tools"):
            changed.set()

    with trio.fail_after(30):
        async with ConnectionManager({"sdk": sdk_server()}, on_event=on_event) as manager:
            await manager.wait_ready()
            conn = manager.connection("sdk")
            assert conn.protocol_version == "2026-07-28"
            while conn.acknowledged_subscriptions is None:
                await trio.sleep(0.01)
            # The listen covers tool list changes: the list is kept until one comes.
            assert conn.acknowledged_subscriptions.tools_list_changed
            assert "sdk__extra_tool" not in (await manager.list_tools()).names()
            assert (await manager.call_tool("sdk__add_extra_tool")).text == "added extra_tool"
            await changed.wait()
            assert "sdk__extra_tool" in (await manager.list_tools()).names()
            assert (await manager.call_tool("sdk__extra_tool")).text == "extra"
