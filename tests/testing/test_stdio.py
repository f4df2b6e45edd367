"""What only the stdio mode has: processes, exit statuses, files, a process killed
from outside."""

from __future__ import annotations

import os
import signal
from pathlib import Path
from typing import Any

import msgspec
import pytest
import trio
from structlog.testing import capture_logs

from mcpl_host import Connection, TransportError
from mcpl_host.testing import Script, ScriptFailed, StdioServer, serve
from mcpl_host.testing.stdio_server import main


def _journal(path: Path) -> list[dict[str, Any]]:
    return [msgspec.json.decode(line) for line in path.read_bytes().splitlines()]


async def _pid_once_at(journal: Path, step: int) -> int:
    """The pid of the process that has reached ``step`` (0-based)."""
    while not any(e == {"e": "at", "step": step} for e in _journal(journal)):
        await trio.sleep(0.005)
    return max(int(e["pid"]) for e in _journal(journal) if e["e"] == "connected")


async def test_a_process_killed_from_outside_is_reported(tmp_path: Path) -> None:
    script = Script(timeout=30).handshake().expect("tools/call")
    with trio.fail_after(10):
        async with serve(script, "stdio", workdir=tmp_path) as server, Connection(server.target):
            os.kill(await _pid_once_at(tmp_path / "record.jsonl", 1), signal.SIGKILL)
            with pytest.raises(ScriptFailed) as info:
                await server.wait_done()
    assert info.value.step_number == 2
    assert info.value.connection == 1
    assert "ended before finishing; killed from outside?" in str(info.value)


async def test_exit_statuses(tmp_path: Path) -> None:
    script = Script(timeout=5).refuse_connections(1).handshake().expect_close()
    with trio.fail_after(10), capture_logs() as logs:
        async with serve(script, "stdio") as server:
            with pytest.raises(TransportError):
                async with Connection(server.target):
                    pytest.fail("connected")
            async with Connection(server.target):
                pass
            await server.wait_done()
    statuses = [log["returncode"] for log in logs if log["event"] == "stdio server closed"]
    assert statuses == [1, 0]  # refused, then a clean end


async def test_a_temporary_directory_goes_but_the_record_stays() -> None:
    server = StdioServer(Script(timeout=5).handshake().expect_close())
    with trio.fail_after(10):
        async with server:
            target = server.target
            assert not isinstance(target, type(None))
            directory = Path(target.argv[-1]).parent  # type: ignore[union-attr]
            async with Connection(server.target):
                pass
            await server.wait_done()
    assert not directory.exists()
    assert server.record.connections == 1
    assert len(server.record.lines()) == 3  # server/discover, initialize, initialized


def test_usage() -> None:
    assert main([]) == 2
