"""``on_wire``: every line each server's connection reads and writes, with its name."""

from __future__ import annotations

import json

import trio

from mcpl_host.manager import ConnectionManager
from mcpl_host.testing import Script, serve

from .helpers import POLICY


async def test_on_wire_sees_each_servers_lines_with_its_name(
    autojump_clock: trio.abc.Clock,
) -> None:
    lines: list[tuple[str, str, dict[str, object]]] = []

    def on_wire(server: str, direction: str, line: bytes) -> None:
        lines.append((server, direction, json.loads(line)))

    with trio.fail_after(60):
        async with (
            serve(Script().handshake().expect_close()) as first,
            serve(Script().handshake().expect_close()) as second,
        ):
            servers = {"a": first.target, "b": second.target}
            async with ConnectionManager(servers, reconnect=POLICY, on_wire=on_wire) as manager:
                await manager.wait_ready()
    for name in ("a", "b"):
        mine = [(d, m) for s, d, m in lines if s == name]
        assert ("out", "initialize") in [(d, m.get("method")) for d, m in mine]
        assert any(d == "in" and "result" in m for d, m in mine)
        assert ("out", "notifications/initialized") in [(d, m.get("method")) for d, m in mine]
