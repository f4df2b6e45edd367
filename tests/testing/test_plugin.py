"""The pytest plugin: registered by the installed package, its fixtures usable as is."""

from __future__ import annotations

from pathlib import Path

import msgspec
import pytest
import trio

from mcpl_host import Connection
from mcpl_host.testing import Script
from mcpl_host.testing.plugin import ServerFactory


def test_registered_through_the_entry_point(pytestconfig: pytest.Config) -> None:
    plugin = pytestconfig.pluginmanager.get_plugin("mcpl_host")
    assert plugin is not None
    assert plugin.__name__ == "mcpl_host.testing.plugin"


def test_mcp_script_is_fresh(mcp_script: Script) -> None:
    assert len(mcp_script) == 0
    assert mcp_script.timeout == 10


async def test_fixtures_under_the_autojump_clock(
    mcp_script: Script, scripted_server: ServerFactory, autojump_clock: trio.abc.Clock
) -> None:
    mcp_script.handshake().wait(600).expect("tools/list").reply({"tools": []})
    with trio.fail_after(700):
        async with scripted_server(mcp_script) as server, Connection(server.target) as conn:
            assert await conn.request("tools/list", timeout=900) == {"tools": []}
            assert trio.current_time() >= 600  # the wait passed, in virtual time
            await server.wait_done()
    server.record.assert_sent("tools/list")


async def test_stdio_files_go_in_tmp_path(
    mcp_script: Script, scripted_server: ServerFactory, tmp_path: Path
) -> None:
    mcp_script.handshake().expect_close()
    with trio.fail_after(10):
        async with scripted_server(mcp_script, mode="stdio") as server:
            async with Connection(server.target):
                pass
            await server.wait_done()
    directory = tmp_path / "scripted-server-1"
    assert msgspec.json.decode((directory / "script.json").read_bytes()) == msgspec.json.decode(
        mcp_script.to_json()
    )
    journal = (directory / "record.jsonl").read_text().splitlines()
    assert [msgspec.json.decode(line)["e"] for line in journal] == [
        "started",
        "at",
        "connected",
        "line",  # server/discover, refused by the handshake step
        "line",
        "line",
        "at",
        "done",
        "ended",
    ]
    assert server.record.connections == 1  # still readable after the runner exited
