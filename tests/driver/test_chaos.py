"""Chaos, bounded: kill -9 of a stdio server with 20 requests in flight, several times."""

from __future__ import annotations

import trio

from mcpl_host.testing.chaos import run_chaos


async def test_kill_9_cycles_lose_nothing_and_leave_nothing() -> None:
    with trio.fail_after(60):
        report = await run_chaos(cycles=6, in_flight=20, request_timeout=5.0)
    assert report.cycles == 6
    assert report.requests == 120
    assert report.hung == 0
    assert report.lost == 0
    assert report.answered + report.failed_typed == 120
    # Every kill landed on requests in flight: at least the one the server was busy with
    # failed as outcome unknown in each cycle.
    assert report.errors.get("ConnectionClosed", 0) >= 6
    assert set(report.errors) <= {"ConnectionClosed", "RequestTimeout"}
    assert report.zombies == 0
    assert report.fd_growth <= 0
