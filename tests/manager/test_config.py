"""A manager built from an mcpServers file, with real stdio servers: the bundled demo,
a missing program, a disabled entry and one the host cannot reach yet."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
import trio
from structlog.testing import capture_logs

from mcpl_host import ConfigurationError, SpawnError, TransportError
from mcpl_host.events import Event
from mcpl_host.manager import ConnectionManager, ServerUnavailable
from mcpl_host.transports.stdio import StdioTransport

from .helpers import StatusLog, wait_for


def _write_config(path: Path) -> Path:
    config = {
        "mcpServers": {
            "demo": {"command": sys.executable, "args": ["-m", "mcpl_host.demo"]},
            "missing": {"command": str(path.parent / "no-such-program")},
            "off": {"command": sys.executable, "args": ["-m", "mcpl_host.demo"], "disabled": True},
            "remote": {"url": "http://127.0.0.1:1/mcp"},  # nothing listens there
        }
    }
    file = path / "servers.json"
    file.write_text(json.dumps(config))
    return file


async def test_a_config_file_with_good_missing_disabled_and_unreachable_servers(
    tmp_path: Path,
) -> None:
    events: list[tuple[str, Event]] = []
    log = StatusLog()
    with trio.fail_after(20):
        async with ConnectionManager(
            _write_config(tmp_path),
            on_event=lambda name, event: events.append((name, event)),
            on_status=log,
            request_timeout=10,
        ) as manager:
            # The remote one is retried for ever: waiting for it would end at a deadline.
            status = await manager.wait_ready("demo", "missing", "off")
            assert list(status) == ["demo", "missing", "off"]
            assert status["demo"].state == "ready"
            assert status["demo"].server_info["name"] == "mcpl-host-demo"
            assert status["missing"].state == "failed"  # ENOENT: permanent, not retried
            assert not status["missing"].retrying
            assert isinstance(status["missing"].error, SpawnError)
            assert status["off"].state == "disabled"
            remote = await wait_for(manager, "remote", "failed")
            assert remote.retrying  # refused: retried, as any transport
            assert remote.retry_at is not None
            assert isinstance(remote.error, TransportError)
            assert list(manager.status()) == ["demo", "missing", "off", "remote"]

            listing = await manager.list_tools()
            assert {"demo__echo", "demo__add"} <= set(listing.names())
            assert {entry.server for entry in listing.entries} == {"demo"}
            assert list(listing.errors) == ["missing", "off", "remote"]
            assert all(isinstance(e, ServerUnavailable) for e in listing.errors.values())
            result = await manager.call_tool("demo__add", {"a": 2, "b": 40})
            assert result.structured_content == {"sum": 42}
            transport = manager.connection("demo").transport
            assert isinstance(transport, StdioTransport)
            pid = transport.process.pid
    assert manager.status()["demo"].state == "closed"
    assert {name for name, _ in events} == {"demo"}  # the disabled one never started
    assert log.states("off") == ["disabled"]
    with pytest.raises(ProcessLookupError):  # the demo server was stopped and reaped
        os.kill(pid, 0)


def test_a_bad_config_file_is_the_constructors_error(tmp_path: Path) -> None:
    file = tmp_path / "bad.json"
    file.write_text('{"mcpServers": ["x"]}')
    with pytest.raises(ConfigurationError, match=r"bad\.json"):
        ConnectionManager(file)
    with pytest.raises(ConfigurationError, match="cannot read"):
        ConnectionManager(str(tmp_path / "absent.json"))


def test_a_config_files_warnings_are_logged_once(tmp_path: Path) -> None:
    file = tmp_path / "mcp.json"
    file.write_text('{"servers": {"x": {"type": "stdio", "command": "x", "frobnicate": 1}}}')
    with capture_logs() as logs:
        ConnectionManager(file)
    warned = [entry for entry in logs if entry["event"] == "config file warning"]
    assert [entry["warning"] for entry in warned] == [
        f"{file}: key 'servers.x.frobnicate' is not one mcpl-host knows: ignored"
    ]
    assert warned[0]["log_level"] == "warning"


async def test_what_a_config_variable_gave_is_masked_in_the_servers_logs(tmp_path: Path) -> None:
    # The value reaches the server through ${file:...} in its args, and comes back on
    # its stderr: the manager's log of that line masks it, as mcpl-host's does.
    secret = tmp_path / "token.txt"
    secret.write_text("file-secret-8c1e5a")
    script = "import sys; sys.stderr.write('got ' + sys.argv[1] + chr(10)); sys.stderr.flush()"
    file = tmp_path / "mcp.json"
    entry = {"command": sys.executable, "args": ["-c", script, f"${{file:{secret}}}"]}
    file.write_text(json.dumps({"mcpServers": {"leaky": entry}}))
    with capture_logs() as logs, trio.fail_after(20):
        manager = ConnectionManager(file, initialize_timeout=5)
        async with trio.open_nursery() as nursery:
            await nursery.start(manager.run)
            await wait_for(manager, "leaky", "failed")  # it wrote its line and exited
            await manager.aclose()
    lines = [str(e.get("line")) for e in logs if e["event"] == "server stderr"]
    assert lines
    assert all("file-secret-8c1e5a" not in line for line in lines)
    assert any("got " in line for line in lines)
    assert "file-secret-8c1e5a" not in repr(logs)
