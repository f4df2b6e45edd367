"""The per-server run in process, where the wire cannot be made to misbehave for real."""

from __future__ import annotations

import time

import pytest
import trio

from mcpl_host import TcpTarget, transports
from mcpl_host.cli.run import Settings, run_server
from mcpl_host.cli.targets import Planned


async def test_a_transport_that_never_opens_is_a_timeout(
    monkeypatch: pytest.MonkeyPatch, autojump_clock: trio.abc.Clock
) -> None:
    async def silent_address(target: TcpTarget) -> None:
        await trio.sleep_forever()  # a TCP connect to an address that drops the SYN

    monkeypatch.setattr(transports, "open_tcp", silent_address)
    planned = Planned("silent", "tcp://192.0.2.1:9", TcpTarget("192.0.2.1", 9))
    settings = Settings(versions=None, timeout=5.0, started=time.perf_counter())
    with trio.fail_after(60):
        report = await run_server(planned, settings, None)
    assert report["ok"] is False
    assert report["error"]["kind"] == "timeout"
    assert report["error"]["reason"] == "connect-timeout"
    assert trio.current_time() == pytest.approx(5.0, abs=0.01)  # --timeout bounds opening
