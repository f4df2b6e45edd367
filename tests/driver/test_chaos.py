"""Chaos, bounded: kill -9 of a stdio server with 20 requests in flight, several times."""

from __future__ import annotations

import trio

from mcpl_host import Reconnect
from mcpl_host.testing.chaos import run_chaos, run_mcpl_race, run_quick_deaths


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


async def test_a_server_that_dies_right_after_initialize_is_backed_off_then_failed() -> None:
    # Each connection dies within a few ms of its handshake: each counts as a failed
    # attempt, so the third ends the server (it used to be respawned at once, forever).
    policy = Reconnect(initial=0.05, multiplier=2.0, jitter=0.0, max_attempts=3, stable=2.0)
    with trio.fail_after(20):
        report = await run_quick_deaths(policy, watch=10)
    assert report.state == "failed"
    assert report.reason == "reconnect-failed"
    assert report.handshakes == 3
    assert report.seconds >= 0.05 + 0.1  # the waits before attempts 2 and 3
    assert report.zombies == 0


async def test_without_an_attempt_limit_the_respawns_follow_the_backoff() -> None:
    policy = Reconnect(initial=0.2, multiplier=2.0, jitter=0.0, stable=2.0)
    with trio.fail_after(20):
        report = await run_quick_deaths(policy, watch=2.0)
    # Handshakes at about 0, 0.2, 0.6, 1.4 s (then 3.0 s): four in two seconds, where an
    # unbounded respawn made dozens.
    assert report.state != "failed"
    assert 3 <= report.handshakes <= 4
    assert report.zombies == 0


async def test_mcpl_traffic_racing_each_new_grant_is_never_admitted_under_a_stale_one() -> None:
    with trio.fail_after(30):
        report = await run_mcpl_race(reconnects=100)
    assert report.reconnects == 100
    assert report.stale == 0
    assert report.unanswered == 0
    # Connections 3, 5, ..., 101 grant pushEvents once their receipt is in: their push
    # is held until then and admitted; the first connection's push meets the empty grant.
    assert report.admitted == 50
    assert report.denied == 50  # every connection that did not advertise pushEvents
